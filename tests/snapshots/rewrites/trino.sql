WITH judged AS (
  SELECT
    r.user_id,
    CAST(r.rank AS BIGINT) AS rank,
    CAST(1.0 AS DOUBLE) / 3 AS third,
    0 AS zero,
    ROW_NUMBER() OVER (PARTITION BY r.user_id ORDER BY r.rank) AS pos,
    SUM(1) OVER (
      PARTITION BY r.user_id
      ORDER BY r.rank
      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS so_far
  FROM rankwise_recommendations AS r
  JOIN rankwise_cutoffs AS c
    ON r.rank <= c.k
)
SELECT
  j.user_id AS user_id,
  CAST(LN(j.rank + CAST(1.0 AS DOUBLE)) AS DOUBLE) / LN(CAST(2.0 AS DOUBLE)) AS discount,
  POWER(CAST(2.0 AS DOUBLE), CAST(g.relevance AS DOUBLE)) - CAST(1.0 AS DOUBLE) AS gain,
  NULLIF(CAST(LEAST(j.rank, 3) AS DOUBLE), CAST(0.0 AS DOUBLE)) AS den,
  CASE WHEN 'linear' = 'binary' THEN 1 ELSE 0 END AS flag,
  COALESCE(j.pos, 0) AS pos,
  STDDEV_SAMP(j.third) OVER () AS sd,
  CAST(NULL AS DOUBLE) AS nothing,
  MIN(CAST(g.item_id AS VARCHAR)) OVER () AS example,
  'it''s' AS quoted
FROM judged AS j
FULL OUTER JOIN rankwise_ground_truth AS g
  ON g.user_id = j.user_id
  AND g.relevance BETWEEN -CAST(1.5e308 AS DOUBLE) AND CAST(1.5e308 AS DOUBLE)
UNION ALL
SELECT
  1,
  CAST(1.0 AS DOUBLE),
  CAST(1.0 AS DOUBLE),
  CAST(1.0 AS DOUBLE),
  1,
  1,
  CAST(1.0 AS DOUBLE),
  CAST(1.0 AS DOUBLE),
  'x',
  'y';

DROP VIEW IF EXISTS rankwise_recommendations_input;

CREATE VIEW rankwise_recommendations_input AS
SELECT
  src.user AS user_id,
  src.item AS item_id,
  CAST(src.rank AS DOUBLE) AS position,
  CAST(NULL AS DOUBLE) AS score
FROM analytics.recs AS src;

CREATE VIEW rankwise_cutoffs AS
SELECT
  CAST(5 AS BIGINT) AS k
UNION ALL
SELECT
  CAST(10 AS BIGINT) AS k;

CREATE TABLE rankwise_per_user;

SELECT
  FAIL(
    CONCAT(
      CAST('rankwise: ' AS VARCHAR),
      CAST(c.problem AS VARCHAR),
      CAST(' (' AS VARCHAR),
      CAST(CAST(c.n_rows AS VARCHAR) AS VARCHAR),
      CAST(' rows; e.g. user ' AS VARCHAR),
      CAST(COALESCE(c.example_user, 'NULL') AS VARCHAR),
      CAST(', item ' AS VARCHAR),
      CAST(COALESCE(c.example_item, 'NULL') AS VARCHAR),
      CAST('; input check failed; tables: recommendations = analytics.recs, ground truth = analytics.truth; the rules are evaluate()''s, see the README).' AS VARCHAR)
    )
  ) AS failed_check
FROM (
  SELECT 1 AS probe
) AS c;
