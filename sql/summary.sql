-- rankwise: summary of the per-user metrics, one row per (metric, k).
--
-- Input: per_user, the output of per_user.sql (user_id, k, n_recs, n_rel, precision, ...).
-- Parameters: $f_aggregation 'per_user' (mean of per-user F) | 'of_means' (F of mean P and mean R),
--             $beta (F-beta's beta), $f_name (the F-beta row's metric name: 'f1', 'f2', 'f0.5').
-- Output: metric, k, value (mean over users whose value is defined), n_users (users in that mean),
--         sd (their sample standard deviation, for confidence intervals; NULL for an F of means).
-- AVG, COUNT and STDDEV_SAMP skip NULLs: a user whose value is undefined is left out of that mean.
WITH
-- one pass over the per-user rows; the selects below reshape its few rows
per_k AS (
    SELECT p.k,
           AVG(p.precision) AS precision_mean, COUNT(p.precision) AS precision_n, STDDEV_SAMP(p.precision) AS precision_sd,
           AVG(p.recall) AS recall_mean, COUNT(p.recall) AS recall_n, STDDEV_SAMP(p.recall) AS recall_sd,
           AVG(p.fbeta) AS fbeta_mean, COUNT(p.fbeta) AS fbeta_n, STDDEV_SAMP(p.fbeta) AS fbeta_sd,
           AVG(p.map) AS map_mean, COUNT(p.map) AS map_n, STDDEV_SAMP(p.map) AS map_sd,
           AVG(p.mar) AS mar_mean, COUNT(p.mar) AS mar_n, STDDEV_SAMP(p.mar) AS mar_sd,
           AVG(p.mrr) AS mrr_mean, COUNT(p.mrr) AS mrr_n, STDDEV_SAMP(p.mrr) AS mrr_sd,
           AVG(p.dcg) AS dcg_mean, COUNT(p.dcg) AS dcg_n, STDDEV_SAMP(p.dcg) AS dcg_sd,
           AVG(p.ndcg) AS ndcg_mean, COUNT(p.ndcg) AS ndcg_n, STDDEV_SAMP(p.ndcg) AS ndcg_sd,
           AVG(p.hit_rate) AS hit_rate_mean, COUNT(p.hit_rate) AS hit_rate_n, STDDEV_SAMP(p.hit_rate) AS hit_rate_sd,
           AVG(p.r_precision) AS r_precision_mean, COUNT(p.r_precision) AS r_precision_n, STDDEV_SAMP(p.r_precision) AS r_precision_sd
    FROM per_user AS p
    GROUP BY p.k
)
SELECT 'precision' AS metric, s.k, s.precision_mean AS value, s.precision_n AS n_users, s.precision_sd AS sd FROM per_k AS s
UNION ALL
SELECT 'recall' AS metric, s.k, s.recall_mean AS value, s.recall_n AS n_users, s.recall_sd AS sd FROM per_k AS s
UNION ALL
SELECT $f_name AS metric, s.k,
       CASE WHEN $f_aggregation = 'per_user' THEN s.fbeta_mean
            WHEN s.fbeta_n = 0 THEN CAST(NULL AS DOUBLE)
            WHEN s.precision_mean + s.recall_mean > 0
            THEN (1.0 + $beta * $beta) * s.precision_mean * s.recall_mean / ($beta * $beta * s.precision_mean + s.recall_mean)
            ELSE 0.0 END AS value,
       s.fbeta_n AS n_users,
       CASE WHEN $f_aggregation = 'per_user' THEN s.fbeta_sd END AS sd
FROM per_k AS s
UNION ALL
SELECT 'map' AS metric, s.k, s.map_mean AS value, s.map_n AS n_users, s.map_sd AS sd FROM per_k AS s
UNION ALL
SELECT 'mar' AS metric, s.k, s.mar_mean AS value, s.mar_n AS n_users, s.mar_sd AS sd FROM per_k AS s
UNION ALL
SELECT 'mrr' AS metric, s.k, s.mrr_mean AS value, s.mrr_n AS n_users, s.mrr_sd AS sd FROM per_k AS s
UNION ALL
SELECT 'dcg' AS metric, s.k, s.dcg_mean AS value, s.dcg_n AS n_users, s.dcg_sd AS sd FROM per_k AS s
UNION ALL
SELECT 'ndcg' AS metric, s.k, s.ndcg_mean AS value, s.ndcg_n AS n_users, s.ndcg_sd AS sd FROM per_k AS s
UNION ALL
SELECT 'hit_rate' AS metric, s.k, s.hit_rate_mean AS value, s.hit_rate_n AS n_users, s.hit_rate_sd AS sd FROM per_k AS s
UNION ALL
SELECT 'r_precision' AS metric, s.k, s.r_precision_mean AS value, s.r_precision_n AS n_users, s.r_precision_sd AS sd FROM per_k AS s
