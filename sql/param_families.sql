-- rankwise: a parameter family's values beside the convention's, every value in one pass. A value is a
-- dimension like k: each is a row of `params` as each cutoff is a row of `cutoffs` (iprec_at_recall at the
-- recall levels 0.0, 0.1, ..., 1.0 and rprec_mult at the multipliers 0.2, 0.4, ..., 2.0: 21 rows), computed
-- from the same per-user statistics as per_user.sql's running.iprec_max and running.mult_hits.
--
-- Inputs (tables or views):
--   recommendations(user_id, rank, item_id), ground_truth(user_id, item_id, relevance), cutoffs(k): as per_user.sql
--   evaluated(user_id, k, n_recs, n_rel)      per_user.sql's rows: the users evaluated, at every k
--   params(param_id, metric, value)           metric 'iprec_at_recall' (value: a recall level l) or 'rprec_mult'
--                                             (value: a multiplier m)
-- Parameters: $relevance_threshold, $iprec_recall_count, $empty_labels, $empty_predictions (as per_user.sql)
-- Output: param_id, k, user_id, value: one row per evaluated (user, k) and param (NULL = undefined), where,
--   with j = 1, 2, ... the relevant recommended items at ranks <= k in rank order:
--   iprec_at_recall = the largest j / rank_j over j >= floor(l n_rel + 0.5) ('round'; 0.9: 'truncate_plus_0.9'),
--                     0 when there is none
--   rprec_mult      = (the items at rank <= c) / c, c = floor(m n_rel + 0.9) (0 when c = 0)
--   and a user without relevant labels / recommendations gets the empty rules' value, as every metric.
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
           ROW_NUMBER() OVER (PARTITION BY r.user_id ORDER BY r.rank) AS hits_so_far
    FROM recommendations AS r
    JOIN ground_truth AS g ON g.user_id = r.user_id AND g.item_id = r.item_id
    JOIN users AS u ON u.user_id = r.user_id
    WHERE g.item_id IS NOT NULL AND g.relevance > 0 AND g.relevance >= $relevance_threshold
      AND r.rank <= (SELECT MAX(c.k) FROM cutoffs AS c)
),
-- per param, each hit's part: its precision when it counts for the recall level, 1 when within the cut
param_hits AS (
    SELECT h.user_id, h.rank, p.param_id,
           CASE WHEN p.metric = 'iprec_at_recall'
                     AND h.hits_so_far >= FLOOR(p.value * h.n_rel
                                                + (CASE WHEN $iprec_recall_count = 'round' THEN 0.5 ELSE 0.9 END))
                THEN CAST(h.hits_so_far AS DOUBLE) / h.rank END AS precision_at,
           CASE WHEN p.metric = 'rprec_mult' AND h.rank <= FLOOR(p.value * h.n_rel + 0.9) THEN 1 ELSE 0 END AS in_cut
    FROM hits AS h
    CROSS JOIN params AS p
),
-- running in rank order: a row holds the values at every k from its rank up to just before the next hit's
running AS (
    SELECT ph.user_id, ph.param_id, ph.rank,
           CAST(COALESCE(LEAD(ph.rank) OVER (PARTITION BY ph.user_id, ph.param_id ORDER BY ph.rank),
                         9223372036854775807) AS BIGINT) AS next_rank,
           MAX(ph.precision_at) OVER (PARTITION BY ph.user_id, ph.param_id ORDER BY ph.rank
                                      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS iprec_max,
           SUM(ph.in_cut) OVER (PARTITION BY ph.user_id, ph.param_id ORDER BY ph.rank
                                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS mult_hits
    FROM param_hits AS ph
),
at_k AS (
    SELECT r.user_id, r.param_id, CAST(c.k AS BIGINT) AS k, 1 AS matched, r.iprec_max, r.mult_hits
    FROM running AS r
    JOIN cutoffs AS c ON r.rank <= c.k AND c.k < r.next_rank
),
empty_values AS (
    SELECT CASE WHEN $empty_labels = 'zero' THEN 0.0 WHEN $empty_labels = 'one' THEN 1.0
                ELSE CAST(NULL AS DOUBLE) END AS no_labels,
           CASE WHEN $empty_predictions = 'zero' THEN 0.0 WHEN $empty_predictions = 'one' THEN 1.0
                ELSE CAST(NULL AS DOUBLE) END AS no_predictions
)
SELECT p.param_id, e.k, e.user_id,
       CASE WHEN e.n_rel = 0 THEN v.no_labels
            WHEN e.n_recs = 0 THEN v.no_predictions
            WHEN p.metric = 'iprec_at_recall'
                 THEN (CASE WHEN COALESCE(a.matched, 0) = 1 THEN COALESCE(a.iprec_max, 0.0) ELSE 0.0 END)
            WHEN FLOOR(p.value * e.n_rel + 0.9) > 0
                 THEN CAST(CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.mult_hits ELSE 0 END AS DOUBLE)
                      / FLOOR(p.value * e.n_rel + 0.9)
            ELSE 0.0 END AS value
FROM evaluated AS e
CROSS JOIN params AS p
CROSS JOIN empty_values AS v
LEFT JOIN at_k AS a ON a.user_id = e.user_id AND a.k = e.k AND a.param_id = p.param_id
