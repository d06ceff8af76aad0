WITH judged AS (
  SELECT
    r.user_id AS user_id,
    CAST(r.rank AS Nullable(Int64)) AS rank,
    CAST(1.0 AS Nullable(Float64)) / 3 AS third,
    0 AS zero,
    ROW_NUMBER() OVER (PARTITION BY r.user_id ORDER BY r.rank) AS pos,
    SUM(1) OVER (
      PARTITION BY r.user_id
      ORDER BY r.rank
      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS so_far
  FROM rankwise_recommendations AS r
  CROSS JOIN rankwise_cutoffs AS c
  WHERE
    r.rank <= c.k
)
SELECT
  j.user_id AS user_id,
  LN(j.rank + CAST(1.0 AS Nullable(Float64))) / LN(CAST(2.0 AS Nullable(Float64))) AS discount,
  POWER(CAST(2.0 AS Nullable(Float64)), CAST(g.relevance AS Nullable(Float64))) - CAST(1.0 AS Nullable(Float64)) AS gain,
  nullIf(CAST(LEAST(j.rank, 3) AS Nullable(Float64)), CAST(0.0 AS Nullable(Float64))) AS den,
  CASE WHEN 'linear' = 'binary' THEN 1 ELSE 0 END AS flag,
  COALESCE(j.pos, 0) AS pos,
  STDDEV_SAMP(j.third) OVER () AS sd,
  CAST(NULL AS Nullable(Float64)) AS nothing,
  MIN(CAST(g.item_id AS Nullable(String))) OVER () AS example,
  'it''s' AS quoted
FROM judged AS j
FULL OUTER JOIN rankwise_ground_truth AS g
  ON g.user_id = j.user_id
  AND g.relevance BETWEEN -CAST(1.5e308 AS Nullable(Float64)) AND CAST(1.5e308 AS Nullable(Float64))
UNION ALL
SELECT
  1,
  CAST(1.0 AS Nullable(Float64)),
  CAST(1.0 AS Nullable(Float64)),
  CAST(1.0 AS Nullable(Float64)),
  1,
  1,
  CAST(1.0 AS Nullable(Float64)),
  CAST(1.0 AS Nullable(Float64)),
  'x',
  'y';

DROP VIEW IF EXISTS rankwise_recommendations_input;

CREATE VIEW rankwise_recommendations_input AS
SELECT
  src.user AS user_id,
  src.item AS item_id,
  CAST(src.rank AS Nullable(Float64)) AS position,
  CAST(NULL AS Nullable(Float64)) AS score
FROM analytics.recs AS src;

CREATE VIEW rankwise_cutoffs AS
SELECT
  CAST(5 AS Nullable(Int64)) AS k
UNION ALL
SELECT
  CAST(10 AS Nullable(Int64)) AS k;

CREATE TABLE rankwise_per_user
ENGINE=MergeTree
ORDER BY ();

SELECT
  toInt32(
    assumeNotNull(
      CONCAT(
        'rankwise: ',
        c.problem,
        ' (',
        CAST(c.n_rows AS Nullable(String)),
        ' rows; e.g. user ',
        COALESCE(c.example_user, 'NULL'),
        ', item ',
        COALESCE(c.example_item, 'NULL'),
        '; input check failed; tables: recommendations = analytics.recs, ground truth = analytics.truth; the rules are evaluate()''s, see the README).'
      )
    )
  ) AS failed_check
FROM (
  SELECT 1 AS probe
) AS c;
