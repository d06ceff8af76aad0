-- rankwise: a parameter family's values beside the convention's, every value in one pass: iprec_at_recall at
-- several recall levels, rprec_mult at several multipliers (MetricRequest.params), each value one column p<i>,
-- from the same per-user statistics as per_user.sql's running.iprec_max and running.mult_hits.
--
-- Inputs (tables or views):
--   recommendations(user_id, rank, item_id), ground_truth(user_id, item_id, relevance), cutoffs(k): as per_user.sql
--   evaluated(user_id, k, n_recs, n_rel)      per_user.sql's rows: the users evaluated, at every k
-- Parameters: $relevance_threshold, $iprec_recall_count, $empty_labels, $empty_predictions (as per_user.sql), and
--   per value i, $value_<i>: the recall level l or the multiplier m.
-- Template: a line after `--@ <metric>` is written once per value i of that metric (params order), with
--   {i} and $value_{i} for i; the other lines as they are (rankwise.engines.duckdb.param_sql). The template
--   lines are generated (python -m rankwise.generate.sql), as per_user.sql's at the convention's value, from
--   one declaration: rankwise.metrics.formulas.PARAM_STATISTICS and the metrics' declared formulas.
-- Output: user_id, k, p<i> per value i, one row per evaluated (user, k) (NULL = undefined), where, with
--   j = 1, 2, ... the user's relevant recommended items at ranks <= k in rank order:
--   iprec_at_recall = the largest j / rank_j over j >= floor(l n_rel + 0.5) ('round'; + 0.9:
--                     'truncate_plus_0.9'), 0 when there is none
--   rprec_mult      = (those at rank <= c) / c, c = floor(m n_rel + 0.9) (0 when c = 0)
--   and a user without relevant labels / recommendations has the empty rules' value, as every metric.
WITH
users AS (
    SELECT e.user_id, e.n_rel
    FROM evaluated AS e
    WHERE e.k = (SELECT MIN(c.k) FROM cutoffs AS c)
),
-- the relevant recommended items within the largest k, numbered in rank order (per_user.sql's hits_so_far
-- at a relevant row)
hits AS (
    SELECT r.user_id, CAST(r.rank AS BIGINT) AS rank, u.n_rel,
           ROW_NUMBER() OVER (PARTITION BY r.user_id ORDER BY r.rank) AS hits_so_far,
           CASE WHEN $iprec_recall_count = 'round' THEN 0.5 ELSE 0.9 END AS iprec_half
    FROM recommendations AS r
    JOIN ground_truth AS g ON g.user_id = r.user_id AND g.item_id = r.item_id
    JOIN users AS u ON u.user_id = r.user_id
    WHERE g.item_id IS NOT NULL AND g.relevance > 0 AND g.relevance >= $relevance_threshold
      AND r.rank <= (SELECT MAX(c.k) FROM cutoffs AS c)
),
-- each value's statistic, running in rank order: a row holds it at every k from its rank up to just
-- before the next hit's
running AS (
    SELECT h.user_id, h.rank,
           CAST(COALESCE(LEAD(h.rank) OVER (PARTITION BY h.user_id ORDER BY h.rank), 9223372036854775807) AS BIGINT)
               AS next_rank
           -- >>> param running (generated from rankwise.metrics.formulas.PARAM_STATISTICS by python -m rankwise.generate.sql: do not edit)
           --@ iprec_at_recall
           , MAX(CASE WHEN h.hits_so_far >= FLOOR($value_{i} * h.n_rel + h.iprec_half) THEN CAST(h.hits_so_far AS DOUBLE) / h.rank END) OVER (PARTITION BY h.user_id ORDER BY h.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS s{i}
           --@ rprec_mult
           , SUM(CASE WHEN h.rank <= FLOOR($value_{i} * h.n_rel + 0.9) THEN 1 ELSE 0 END) OVER (PARTITION BY h.user_id ORDER BY h.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS s{i}
           -- <<< param running
    FROM hits AS h
),
at_k AS (
    SELECT r.*, CAST(c.k AS BIGINT) AS k, 1 AS matched
    FROM running AS r
    JOIN cutoffs AS c ON r.rank <= c.k AND c.k < r.next_rank
),
empty_values AS (
    SELECT CASE WHEN $empty_labels = 'zero' THEN 0.0 WHEN $empty_labels = 'one' THEN 1.0
                ELSE CAST(NULL AS DOUBLE) END AS no_labels,
           CASE WHEN $empty_predictions = 'zero' THEN 0.0 WHEN $empty_predictions = 'one' THEN 1.0
                ELSE CAST(NULL AS DOUBLE) END AS no_predictions
)
SELECT e.user_id, e.k
       -- >>> param values (generated from the metric declarations and rankwise.metrics.formulas.PARAM_STATISTICS by python -m rankwise.generate.sql: do not edit)
       --@ iprec_at_recall
       , CASE WHEN e.n_rel = 0 THEN v.no_labels WHEN e.n_recs = 0 THEN v.no_predictions ELSE CASE WHEN COALESCE(a.matched, 0) = 1 THEN COALESCE(a.s{i}, 0.0) ELSE 0.0 END END AS p{i}
       --@ rprec_mult
       , CASE WHEN e.n_rel = 0 THEN v.no_labels WHEN e.n_recs = 0 THEN v.no_predictions ELSE CASE WHEN FLOOR($value_{i} * e.n_rel + 0.9) > 0 THEN CAST(CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.s{i} ELSE 0 END AS DOUBLE) / FLOOR($value_{i} * e.n_rel + 0.9) ELSE 0.0 END END AS p{i}
       -- <<< param values
FROM evaluated AS e
CROSS JOIN empty_values AS v
LEFT JOIN at_k AS a ON a.user_id = e.user_id AND a.k = e.k
