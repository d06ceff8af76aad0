-- rankwise: summary of the per-user metrics, one row per (metric, k).
--
-- Input: per_user, the output of per_user.sql (user_id, k, n_recs, n_rel, precision, ...).
-- Parameters: $f_aggregation 'per_user' (mean of per-user F) | 'of_means' (F of mean P and mean R),
--             $beta (F-beta's beta).
-- Output: metric, k, value (mean over users whose value is defined), n_users (users in that mean).
WITH
f_parts AS (
    SELECT p.k, AVG(p.fbeta) AS mean_f, AVG(p.precision) AS mean_p, AVG(p.recall) AS mean_r,
           COUNT(p.fbeta) AS n_f
    FROM per_user AS p
    GROUP BY p.k
)
SELECT 'precision' AS metric, p.k, AVG(p.precision) AS value, COUNT(p.precision) AS n_users FROM per_user AS p GROUP BY p.k
UNION ALL
SELECT 'recall' AS metric, p.k, AVG(p.recall) AS value, COUNT(p.recall) AS n_users FROM per_user AS p GROUP BY p.k
UNION ALL
SELECT 'fbeta' AS metric, f.k,
       CASE WHEN $f_aggregation = 'per_user' THEN f.mean_f
            WHEN f.n_f = 0 THEN CAST(NULL AS DOUBLE)
            WHEN f.mean_p + f.mean_r > 0
            THEN (1.0 + $beta * $beta) * f.mean_p * f.mean_r / ($beta * $beta * f.mean_p + f.mean_r)
            ELSE 0.0 END AS value,
       f.n_f AS n_users
FROM f_parts AS f
UNION ALL
SELECT 'map' AS metric, p.k, AVG(p.map) AS value, COUNT(p.map) AS n_users FROM per_user AS p GROUP BY p.k
UNION ALL
SELECT 'mar' AS metric, p.k, AVG(p.mar) AS value, COUNT(p.mar) AS n_users FROM per_user AS p GROUP BY p.k
UNION ALL
SELECT 'mrr' AS metric, p.k, AVG(p.mrr) AS value, COUNT(p.mrr) AS n_users FROM per_user AS p GROUP BY p.k
UNION ALL
SELECT 'dcg' AS metric, p.k, AVG(p.dcg) AS value, COUNT(p.dcg) AS n_users FROM per_user AS p GROUP BY p.k
UNION ALL
SELECT 'ndcg' AS metric, p.k, AVG(p.ndcg) AS value, COUNT(p.ndcg) AS n_users FROM per_user AS p GROUP BY p.k
UNION ALL
SELECT 'hit_rate' AS metric, p.k, AVG(p.hit_rate) AS value, COUNT(p.hit_rate) AS n_users FROM per_user AS p GROUP BY p.k
UNION ALL
SELECT 'r_precision' AS metric, p.k, AVG(p.r_precision) AS value, COUNT(p.r_precision) AS n_users FROM per_user AS p GROUP BY p.k
