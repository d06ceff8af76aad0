-- rankwise: summary of the per-user metrics, one row per (metric, k).
-- Generated from the metric declarations (rankwise.metrics.declarations) by python -m rankwise.generate.sql: do not edit.
--
-- Inputs: per_user, the output of per_user.sql (user_id, k, n_recs, n_rel, precision, ...); cutoffs(k):
--         a row per cutoff also when no user was evaluated (value NULL, n_users 0).
-- Parameters: the knobs of a metric's `of_means` rule ($f_aggregation 'per_user' | 'of_means': the
--             mean of per-user F or F of mean P and mean R), $beta (F-beta's beta), $f_name (the
--             F-beta row's metric name: 'f1', 'f2', 'f0.5').
-- Output: metric, k, value (mean over users whose value is defined; a count's sum, trec_eval's
--         geometric mean for gm_*), n_users (users in that value), sd (their sample standard
--         deviation, for confidence intervals; NULL for an F of means, a sum or a geometric mean).
-- AVG, SUM, COUNT and STDDEV_SAMP skip NULLs: a user whose value is undefined is left out of that value.
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
           AVG(p.r_precision) AS r_precision_mean, COUNT(p.r_precision) AS r_precision_n, STDDEV_SAMP(p.r_precision) AS r_precision_sd,
           AVG(p.rbp) AS rbp_mean, COUNT(p.rbp) AS rbp_n, STDDEV_SAMP(p.rbp) AS rbp_sd,
           AVG(p.err) AS err_mean, COUNT(p.err) AS err_n, STDDEV_SAMP(p.err) AS err_sd,
           SUM(p.num_ret) AS num_ret_sum, COUNT(p.num_ret) AS num_ret_n,
           SUM(p.num_rel) AS num_rel_sum, COUNT(p.num_rel) AS num_rel_n,
           SUM(p.num_rel_ret) AS num_rel_ret_sum, COUNT(p.num_rel_ret) AS num_rel_ret_n,
           AVG(p.set_p) AS set_p_mean, COUNT(p.set_p) AS set_p_n, STDDEV_SAMP(p.set_p) AS set_p_sd,
           AVG(p.set_recall) AS set_recall_mean, COUNT(p.set_recall) AS set_recall_n, STDDEV_SAMP(p.set_recall) AS set_recall_sd,
           AVG(p.set_relative_p) AS set_relative_p_mean, COUNT(p.set_relative_p) AS set_relative_p_n, STDDEV_SAMP(p.set_relative_p) AS set_relative_p_sd,
           AVG(p.set_map) AS set_map_mean, COUNT(p.set_map) AS set_map_n, STDDEV_SAMP(p.set_map) AS set_map_sd,
           AVG(p.set_f) AS set_f_mean, COUNT(p.set_f) AS set_f_n, STDDEV_SAMP(p.set_f) AS set_f_sd,
           AVG(p.relative_p) AS relative_p_mean, COUNT(p.relative_p) AS relative_p_n, STDDEV_SAMP(p.relative_p) AS relative_p_sd,
           AVG(p.rprec_mult) AS rprec_mult_mean, COUNT(p.rprec_mult) AS rprec_mult_n, STDDEV_SAMP(p.rprec_mult) AS rprec_mult_sd,
           AVG(p.iprec_at_recall) AS iprec_at_recall_mean, COUNT(p.iprec_at_recall) AS iprec_at_recall_n, STDDEV_SAMP(p.iprec_at_recall) AS iprec_at_recall_sd,
           AVG(p.ipt11_avg) AS ipt11_avg_mean, COUNT(p.ipt11_avg) AS ipt11_avg_n, STDDEV_SAMP(p.ipt11_avg) AS ipt11_avg_sd,
           AVG(p.utility) AS utility_mean, COUNT(p.utility) AS utility_n, STDDEV_SAMP(p.utility) AS utility_sd,
           AVG(p.bin_g) AS bin_g_mean, COUNT(p.bin_g) AS bin_g_n, STDDEV_SAMP(p.bin_g) AS bin_g_sd,
           AVG(p.g) AS g_mean, COUNT(p.g) AS g_n, STDDEV_SAMP(p.g) AS g_sd,
           AVG(p.ndcg_rel) AS ndcg_rel_mean, COUNT(p.ndcg_rel) AS ndcg_rel_n, STDDEV_SAMP(p.ndcg_rel) AS ndcg_rel_sd,
           AVG(p.rndcg) AS rndcg_mean, COUNT(p.rndcg) AS rndcg_n, STDDEV_SAMP(p.rndcg) AS rndcg_sd,
           AVG(p.rbp_resid) AS rbp_resid_mean, COUNT(p.rbp_resid) AS rbp_resid_n, STDDEV_SAMP(p.rbp_resid) AS rbp_resid_sd,
           EXP(AVG(CASE WHEN p.gm_map IS NOT NULL THEN LN(GREATEST(p.gm_map, 0.00001)) END)) AS gm_map_geometric_mean, COUNT(p.gm_map) AS gm_map_n,
           SUM(p.num_nonrel_judged_ret) AS num_nonrel_judged_ret_sum, COUNT(p.num_nonrel_judged_ret) AS num_nonrel_judged_ret_n,
           AVG(p.bpref) AS bpref_mean, COUNT(p.bpref) AS bpref_n, STDDEV_SAMP(p.bpref) AS bpref_sd,
           AVG(p.infap) AS infap_mean, COUNT(p.infap) AS infap_n, STDDEV_SAMP(p.infap) AS infap_sd,
           AVG(p.unj) AS unj_mean, COUNT(p.unj) AS unj_n, STDDEV_SAMP(p.unj) AS unj_sd,
           AVG(p.judged) AS judged_mean, COUNT(p.judged) AS judged_n, STDDEV_SAMP(p.judged) AS judged_sd,
           EXP(AVG(CASE WHEN p.gm_bpref IS NOT NULL THEN LN(GREATEST(p.gm_bpref, 0.00001)) END)) AS gm_bpref_geometric_mean, COUNT(p.gm_bpref) AS gm_bpref_n
    FROM per_user AS p
    GROUP BY p.k
)
SELECT 'precision' AS metric, c.k, s.precision_mean AS value, COALESCE(s.precision_n, 0) AS n_users, s.precision_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'recall' AS metric, c.k, s.recall_mean AS value, COALESCE(s.recall_n, 0) AS n_users, s.recall_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT $f_name AS metric, c.k,
       CASE WHEN $f_aggregation <> 'of_means' THEN s.fbeta_mean
            WHEN COALESCE(s.fbeta_n, 0) = 0 THEN CAST(NULL AS DOUBLE)
            ELSE CASE WHEN s.precision_mean + s.recall_mean > 0 THEN (1.0 + $beta * $beta) * s.precision_mean * s.recall_mean / ($beta * $beta * s.precision_mean + s.recall_mean) ELSE 0.0 END END AS value,
       COALESCE(s.fbeta_n, 0) AS n_users,
       CASE WHEN $f_aggregation <> 'of_means' THEN s.fbeta_sd END AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'map' AS metric, c.k, s.map_mean AS value, COALESCE(s.map_n, 0) AS n_users, s.map_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'mar' AS metric, c.k, s.mar_mean AS value, COALESCE(s.mar_n, 0) AS n_users, s.mar_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'mrr' AS metric, c.k, s.mrr_mean AS value, COALESCE(s.mrr_n, 0) AS n_users, s.mrr_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'dcg' AS metric, c.k, s.dcg_mean AS value, COALESCE(s.dcg_n, 0) AS n_users, s.dcg_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'ndcg' AS metric, c.k, s.ndcg_mean AS value, COALESCE(s.ndcg_n, 0) AS n_users, s.ndcg_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'hit_rate' AS metric, c.k, s.hit_rate_mean AS value, COALESCE(s.hit_rate_n, 0) AS n_users, s.hit_rate_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'r_precision' AS metric, c.k, s.r_precision_mean AS value, COALESCE(s.r_precision_n, 0) AS n_users, s.r_precision_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'rbp' AS metric, c.k, s.rbp_mean AS value, COALESCE(s.rbp_n, 0) AS n_users, s.rbp_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'err' AS metric, c.k, s.err_mean AS value, COALESCE(s.err_n, 0) AS n_users, s.err_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'num_ret' AS metric, c.k, s.num_ret_sum AS value, COALESCE(s.num_ret_n, 0) AS n_users, CAST(NULL AS DOUBLE) AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'num_rel' AS metric, c.k, s.num_rel_sum AS value, COALESCE(s.num_rel_n, 0) AS n_users, CAST(NULL AS DOUBLE) AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'num_rel_ret' AS metric, c.k, s.num_rel_ret_sum AS value, COALESCE(s.num_rel_ret_n, 0) AS n_users, CAST(NULL AS DOUBLE) AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'set_p' AS metric, c.k, s.set_p_mean AS value, COALESCE(s.set_p_n, 0) AS n_users, s.set_p_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'set_recall' AS metric, c.k, s.set_recall_mean AS value, COALESCE(s.set_recall_n, 0) AS n_users, s.set_recall_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'set_relative_p' AS metric, c.k, s.set_relative_p_mean AS value, COALESCE(s.set_relative_p_n, 0) AS n_users, s.set_relative_p_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'set_map' AS metric, c.k, s.set_map_mean AS value, COALESCE(s.set_map_n, 0) AS n_users, s.set_map_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'set_f' AS metric, c.k, s.set_f_mean AS value, COALESCE(s.set_f_n, 0) AS n_users, s.set_f_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'relative_p' AS metric, c.k, s.relative_p_mean AS value, COALESCE(s.relative_p_n, 0) AS n_users, s.relative_p_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'rprec_mult' AS metric, c.k, s.rprec_mult_mean AS value, COALESCE(s.rprec_mult_n, 0) AS n_users, s.rprec_mult_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'iprec_at_recall' AS metric, c.k, s.iprec_at_recall_mean AS value, COALESCE(s.iprec_at_recall_n, 0) AS n_users, s.iprec_at_recall_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'ipt11_avg' AS metric, c.k, s.ipt11_avg_mean AS value, COALESCE(s.ipt11_avg_n, 0) AS n_users, s.ipt11_avg_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'utility' AS metric, c.k, s.utility_mean AS value, COALESCE(s.utility_n, 0) AS n_users, s.utility_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'bin_g' AS metric, c.k, s.bin_g_mean AS value, COALESCE(s.bin_g_n, 0) AS n_users, s.bin_g_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'g' AS metric, c.k, s.g_mean AS value, COALESCE(s.g_n, 0) AS n_users, s.g_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'ndcg_rel' AS metric, c.k, s.ndcg_rel_mean AS value, COALESCE(s.ndcg_rel_n, 0) AS n_users, s.ndcg_rel_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'rndcg' AS metric, c.k, s.rndcg_mean AS value, COALESCE(s.rndcg_n, 0) AS n_users, s.rndcg_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'rbp_resid' AS metric, c.k, s.rbp_resid_mean AS value, COALESCE(s.rbp_resid_n, 0) AS n_users, s.rbp_resid_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'gm_map' AS metric, c.k, s.gm_map_geometric_mean AS value, COALESCE(s.gm_map_n, 0) AS n_users, CAST(NULL AS DOUBLE) AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'num_nonrel_judged_ret' AS metric, c.k, s.num_nonrel_judged_ret_sum AS value, COALESCE(s.num_nonrel_judged_ret_n, 0) AS n_users, CAST(NULL AS DOUBLE) AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'bpref' AS metric, c.k, s.bpref_mean AS value, COALESCE(s.bpref_n, 0) AS n_users, s.bpref_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'infap' AS metric, c.k, s.infap_mean AS value, COALESCE(s.infap_n, 0) AS n_users, s.infap_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'unj' AS metric, c.k, s.unj_mean AS value, COALESCE(s.unj_n, 0) AS n_users, s.unj_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'judged' AS metric, c.k, s.judged_mean AS value, COALESCE(s.judged_n, 0) AS n_users, s.judged_sd AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
UNION ALL
SELECT 'gm_bpref' AS metric, c.k, s.gm_bpref_geometric_mean AS value, COALESCE(s.gm_bpref_n, 0) AS n_users, CAST(NULL AS DOUBLE) AS sd
FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k
