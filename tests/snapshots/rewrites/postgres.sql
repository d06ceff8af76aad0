WITH judged AS (
  SELECT
    r.user_id,
    CAST(r.rank AS BIGINT) AS rank,
    CAST(1.0 AS DOUBLE PRECISION) / 3 AS third,
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
  CAST(LN(j.rank + CAST(1.0 AS DOUBLE PRECISION)) AS DOUBLE PRECISION) / LN(CAST(2.0 AS DOUBLE PRECISION)) AS discount,
  POWER(CAST(2.0 AS DOUBLE PRECISION), CAST(g.relevance AS DOUBLE PRECISION)) - CAST(1.0 AS DOUBLE PRECISION) AS gain,
  NULLIF(CAST(LEAST(j.rank, 3) AS DOUBLE PRECISION), CAST(0.0 AS DOUBLE PRECISION)) AS den,
  CASE WHEN 'linear' = 'binary' THEN 1 ELSE 0 END AS flag,
  COALESCE(j.pos, 0) AS pos,
  STDDEV_SAMP(j.third) OVER () AS sd,
  CAST(NULL AS DOUBLE PRECISION) AS nothing,
  MIN(CAST(g.item_id AS TEXT)) OVER () AS example,
  'it''s' AS quoted
FROM judged AS j
FULL OUTER JOIN rankwise_ground_truth AS g
  ON g.user_id = j.user_id
  AND g.relevance BETWEEN -CAST(1.5e308 AS DOUBLE PRECISION) AND CAST(1.5e308 AS DOUBLE PRECISION)
UNION ALL
SELECT
  1,
  CAST(1.0 AS DOUBLE PRECISION),
  CAST(1.0 AS DOUBLE PRECISION),
  CAST(1.0 AS DOUBLE PRECISION),
  1,
  1,
  CAST(1.0 AS DOUBLE PRECISION),
  CAST(1.0 AS DOUBLE PRECISION),
  'x',
  'y';

DROP VIEW IF EXISTS pg_temp.rankwise_recommendations_input;

CREATE TEMPORARY VIEW rankwise_recommendations_input AS
SELECT
  src.user AS user_id,
  src.item AS item_id,
  CAST(src.rank AS DOUBLE PRECISION) AS position,
  CAST(NULL AS DOUBLE PRECISION) AS score
FROM analytics.recs AS src;

CREATE TEMPORARY VIEW rankwise_cutoffs AS
SELECT
  CAST(5 AS BIGINT) AS k
UNION ALL
SELECT
  CAST(10 AS BIGINT) AS k;

CREATE TABLE rankwise_per_user;

SELECT
  CAST('rankwise: ' || c.problem || ' (' || CAST(c.n_rows AS VARCHAR) || ' rows; e.g. user ' || COALESCE(c.example_user, 'NULL') || ', item ' || COALESCE(c.example_item, 'NULL') || '; input check failed; tables: recommendations = analytics.recs, ground truth = analytics.truth; the rules are evaluate()''s, see the README).' AS INT) AS failed_check
FROM (
  SELECT 1 AS probe
) AS c;
