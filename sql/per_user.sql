-- rankwise: per-user ranking metrics, one row per (user, k), every metric and every k in one query.
--
-- Inputs (tables or views):
--   recommendations(user_id, rank, item_id)       rank = position 1..n; a row with a NULL item_id
--                                                 marks a user whose list is empty
--   ground_truth(user_id, item_id, relevance)     one row per judged item; a NULL item_id marks a
--                                                 user with no labels (its relevance is ignored)
--   cutoffs(k)                                    one row per cutoff
-- Parameters (the Convention knobs, see rankwise.conventions; their defaults: Convention()):
--   $users                 'union' | 'labels' | 'predictions' | 'intersection' (a user with an
--                          empty list is in that input)
--   $unjudged              'keep' | 'drop' (leave out users without a single judged item)
--   $empty_labels          'nan' | 'zero' | 'one' | 'error'   (error is raised by the caller)
--   $empty_predictions     'zero' | 'nan' | 'one' | 'error'
--   $precision_denominator 'k' | 'min_k_len' | 'min_k_nrel' | 'min_k_candidates'
--   $ap_denominator        'n_hits' | 'n_rel' | 'min_k_nrel' | 'k' | 'min_k_len'
--   $gain                  'binary' | 'linear' | 'exp2'
--   $log_base              > 1 (2.718281828459045 = natural log)
--   $ideal                 'predictions_topk' | 'labels' | 'k_ones' (k slots of gain 1, k <= 10000)
--   $zero_ideal            'zero' | 'nan'
--   $relevance_threshold   relevant = relevance > 0 AND relevance >= threshold
--   $rr_cutoff             1 = RR counts a first hit within k only, 0 = anywhere in the list
--   $rbp_persistence       RBP's persistence p, 0 < p < 1
--   $err_max_grade         ERR's largest grade g_max; 0 = the largest relevance in ground_truth
--   $rprec_multiplier      rprec_mult's m: precision after c = floor(m n_rel + 0.9) items (trec_eval's Rprec_mult)
--   $iprec_recall_level    iprec_at_recall's recall level l, as r = a count of relevant items
--   $iprec_recall_count    'round' (r = round(l n_rel), trec_eval 10.0) | 'truncate_plus_0.9' (floor(l n_rel + 0.9),
--                          trec_eval 9 and pytrec_eval)
--   $beta                  F-beta's beta
-- Stage switches (not knobs: which statistics to compute; 1 = all, as rankwise.sql renders it by default):
--   $pool_statistics       1 = the judged-aware stages (pool_labels .. pooled_at_k: bpref, infAP, unj, ...)
--   $gain_statistics       1 = every judged row and the labels' ideal at each rank (G, binG, ndcg_rel, Rndcg,
--                          rbp_resid); 0 leaves those metrics' columns meaningless, the others unchanged
--   $rndcg_statistics      1 = Rndcg's sum over the ideal's R levels (rndcg_points .. rndcg; needs $gain_statistics)
-- Ground truth: a row with relevance > 0 and >= $relevance_threshold is relevant; one with relevance >= 0 that
--   is not, judged non-relevant; one with relevance < 0 (negative_relevance = 'unjudged': trec_eval's -1) is
--   pooled but not judged (never relevant, no gain); an item without a row is not judged.
-- Output: user_id, k, n_recs, n_rel and one column per metric of rankwise.metrics.declarations (precision, recall,
--   fbeta, map, ...). NULL = undefined under the convention (excluded from means).
-- The stages up to `stats` compute the per-(user, k) statistics (hits@k = relevant items in the top k,
-- n_rel = relevant labels, and the running sums each metric reads); the stages after it, each
-- metric's formula over them, are generated from the metric declarations (see the marker below).
WITH
labels AS (
    SELECT g.user_id, g.item_id,
           CASE WHEN g.item_id IS NOT NULL AND g.relevance > 0 AND g.relevance >= $relevance_threshold
                THEN 1 ELSE 0 END AS is_rel,
           -- judged non-relevant: a relevance >= 0 that is not relevant (a negative one is pooled, not judged)
           CASE WHEN g.item_id IS NOT NULL AND g.relevance >= 0
                     AND NOT (g.relevance > 0 AND g.relevance >= $relevance_threshold)
                THEN 1 ELSE 0 END AS is_nonrel
    FROM ground_truth AS g
),
-- the labels that can earn: a relevance of 0 is never relevant and has gain 0 under every gain rule (1/0, r,
-- 2^r - 1), so those labels are left out (a smaller build side of the largest join) unless $gain_level_<i> gives
-- level 0 a gain or the gain statistics are computed (rbp_resid tells judged from unjudged items); a negative
-- relevance (pooled, not judged) never earns. ground_truth is read again rather than through `labels` so that an
-- engine can push the filter into its scan.
earning AS (
    SELECT g.user_id, g.item_id, CAST(g.relevance AS DOUBLE) AS grade,
           CASE WHEN g.relevance > 0 AND g.relevance >= $relevance_threshold THEN 1 ELSE 0 END AS is_rel,
           CASE WHEN g.relevance = $gain_level_1 THEN $gain_value_1 WHEN g.relevance = $gain_level_2 THEN $gain_value_2
                WHEN g.relevance = $gain_level_3 THEN $gain_value_3 WHEN g.relevance = $gain_level_4 THEN $gain_value_4
                WHEN g.relevance = $gain_level_5 THEN $gain_value_5 WHEN g.relevance = $gain_level_6 THEN $gain_value_6
                WHEN g.relevance = $gain_level_7 THEN $gain_value_7 WHEN g.relevance = $gain_level_8 THEN $gain_value_8
                WHEN g.relevance <= 0 THEN 0.0
                WHEN $gain = 'binary' THEN (CASE WHEN g.relevance >= $relevance_threshold THEN 1.0 ELSE 0.0 END)
                WHEN $gain = 'linear' THEN CAST(g.relevance AS DOUBLE)
                ELSE POWER(2.0, CAST(g.relevance AS DOUBLE)) - 1.0 END AS gain
    FROM ground_truth AS g
    WHERE g.item_id IS NOT NULL AND g.relevance >= 0
      AND (g.relevance > 0 OR $gain_statistics = 1
           OR g.relevance IN ($gain_level_1, $gain_level_2, $gain_level_3, $gain_level_4, $gain_level_5,
                              $gain_level_6, $gain_level_7, $gain_level_8))
),
-- the labels of positive gain in the ideal order (gain descending) with their running sums: the ideal DCG, trec_eval's
-- G cost (each gain, at least 1) and total gain; a position ends a run of equal gains (an R level of Rndcg) when
-- the next gain differs or it is the last. n_pos = labels of positive gain
ideal_labels AS (
    SELECT e.user_id, e.gain,
           CAST(ROW_NUMBER() OVER (PARTITION BY e.user_id ORDER BY e.gain DESC) AS BIGINT) AS pos,
           LEAD(e.gain) OVER (PARTITION BY e.user_id ORDER BY e.gain DESC) AS next_gain,
           CAST(COUNT(*) OVER (PARTITION BY e.user_id) AS BIGINT) AS n_pos
    FROM earning AS e
    WHERE e.gain > 0
),
ideal_running AS (
    SELECT i.user_id, i.pos, i.n_pos,
           CASE WHEN i.next_gain IS NULL OR i.next_gain <> i.gain THEN 1 ELSE 0 END AS is_bound,
           CAST(CASE WHEN i.pos = i.n_pos THEN 9223372036854775807 ELSE i.pos + 1 END AS BIGINT) AS next_pos,
           SUM(i.gain / (LN(i.pos + 1.0) / LN($log_base)))
               OVER (PARTITION BY i.user_id ORDER BY i.pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS idcg,
           SUM(GREATEST(i.gain, 1.0))
               OVER (PARTITION BY i.user_id ORDER BY i.pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cost,
           SUM(i.gain)
               OVER (PARTITION BY i.user_id ORDER BY i.pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS gain_total
    FROM ideal_labels AS i
),
-- per user: n_pos, the whole ideal DCG, the total gain, the number of R levels
ideal_user AS (
    SELECT i.user_id, 1 AS matched, MAX(i.n_pos) AS n_pos,
           MAX(CASE WHEN i.pos = i.n_pos THEN i.idcg END) AS idcg_all,
           MAX(CASE WHEN i.pos = i.n_pos THEN i.gain_total END) AS gain_total,
           SUM(i.is_bound) AS n_bounds
    FROM ideal_running AS i
    WHERE $gain_statistics = 1
    GROUP BY i.user_id
),
-- ERR's largest grade: $err_max_grade, or the largest relevance in the ground truth
err_scale AS (
    SELECT CASE WHEN $err_max_grade > 0 THEN CAST($err_max_grade AS DOUBLE)
                ELSE MAX(CASE WHEN g.item_id IS NOT NULL THEN CAST(g.relevance AS DOUBLE) END) END AS g_max
    FROM ground_truth AS g
),
label_stats AS (
    SELECT l.user_id, 1 AS in_truth, CAST(COUNT(l.item_id) AS BIGINT) AS n_judged,
           CAST(SUM(l.is_rel) AS BIGINT) AS n_rel, CAST(SUM(l.is_nonrel) AS BIGINT) AS n_nonrel
    FROM labels AS l
    GROUP BY l.user_id
),
-- n_recs = the largest rank of a row with an item: ranks are positions 1..n, so it is the list length
-- even when only some of a list's rows are given (sql/list_rows.sql hands over the rows that can earn
-- and the last one); an empty list's marker row (NULL item, whatever its rank) counts 0
rec_stats AS (
    SELECT r.user_id, 1 AS in_recs,
           CAST(COALESCE(MAX(CASE WHEN r.item_id IS NOT NULL THEN r.rank END), 0) AS BIGINT) AS n_recs
    FROM recommendations AS r
    GROUP BY r.user_id
),
all_users AS (
    SELECT CASE WHEN COALESCE(rs.in_recs, 0) = 1 THEN rs.user_id ELSE ls.user_id END AS user_id,
           COALESCE(rs.in_recs, 0) AS in_recs,
           COALESCE(ls.in_truth, 0) AS in_truth,
           CAST(COALESCE(ls.n_judged, 0) AS BIGINT) AS n_judged,
           CAST(COALESCE(rs.n_recs, 0) AS BIGINT) AS n_recs,
           CAST(COALESCE(ls.n_rel, 0) AS BIGINT) AS n_rel,
           CAST(COALESCE(ls.n_nonrel, 0) AS BIGINT) AS n_nonrel
    FROM rec_stats AS rs
    FULL OUTER JOIN label_stats AS ls ON rs.user_id = ls.user_id
),
universe AS (
    SELECT a.user_id, a.n_recs, a.n_rel, a.n_nonrel
    FROM all_users AS a
    WHERE (CASE WHEN $users = 'union' THEN 1
                WHEN $users = 'labels' THEN a.in_truth
                WHEN $users = 'predictions' THEN a.in_recs
                ELSE a.in_recs * a.in_truth END) = 1
      AND ($unjudged = 'keep' OR a.n_judged > 0)
),
-- a recommendation below the largest k earns nothing, unless RR looks for the first hit anywhere
-- ($rr_cutoff = 0). (min_k_candidates counts hits in the whole list, but only where the list is
-- shorter than k, and then no row is below k.) An engine can push this bound into its scan: at
-- k = 10 of 100-long lists, a tenth of the rows reach the join.
reach AS (
    SELECT CASE WHEN $rr_cutoff = 0 THEN 2147483647 ELSE MAX(c.k) END AS max_rank
    FROM cutoffs AS c
),
-- recommended items with an earning label: the only rows where any metric gains anything.
-- judged_pos counts them in rank order; following_rank is the rank of the user's next one (LEAD gives
-- NULL after the last row, ClickHouse 0: either way the comparison fails and the bound is open)
judged AS (
    SELECT r.user_id, CAST(r.rank AS BIGINT) AS rank, e.is_rel, e.gain, u.n_rel,
           -- ERR's chance that the user stops here, R = (2^g - 1) / 2^g_max = 2^(g - g_max) - 2^-g_max (a grade
           -- above g_max counts as g_max), written so that no power overflows or underflows (exponents >= -1000:
           -- PostgreSQL raises on both); err_floor = 2^-g_max, the least 1 - R can be
           POWER(2.0, GREATEST(LEAST(e.grade, s.g_max) - s.g_max, -1000.0)) - POWER(2.0, -LEAST(s.g_max, 1000.0)) AS err_r,
           POWER(2.0, -LEAST(s.g_max, 1000.0)) AS err_floor,
           SUM(e.is_rel) OVER (PARTITION BY r.user_id ORDER BY r.rank
                               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS hits_so_far,
           ROW_NUMBER() OVER (PARTITION BY r.user_id ORDER BY r.rank) AS judged_pos,
           CASE WHEN $iprec_recall_count = 'round' THEN 0.5 ELSE 0.9 END AS iprec_half,
           LEAD(r.rank) OVER (PARTITION BY r.user_id ORDER BY r.rank) AS following_rank,
           -- G and ndcg_rel: the gain so far, and the labels' ideal at this rank (the ideal DCG and G's cost: past
           -- the n_pos labels of positive gain, the cost grows by 1 a rank)
           SUM(e.gain) OVER (PARTITION BY r.user_id ORDER BY r.rank
                             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS gain_so_far,
           COALESCE(i.idcg, 0.0) AS ideal_at,
           COALESCE(i.cost, 0.0) + CAST(r.rank - LEAST(r.rank, COALESCE(iu.n_pos, 0)) AS DOUBLE) AS cost_at
    FROM recommendations AS r
    JOIN reach AS h ON r.rank <= h.max_rank
    JOIN earning AS e ON e.user_id = r.user_id AND e.item_id = r.item_id
    JOIN universe AS u ON u.user_id = r.user_id
    CROSS JOIN err_scale AS s
    LEFT JOIN ideal_user AS iu ON iu.user_id = r.user_id
    LEFT JOIN ideal_running AS i ON $gain_statistics = 1 AND i.user_id = r.user_id AND i.pos = LEAST(r.rank, iu.n_pos)
),
-- what does not depend on k is computed once per user
user_hits AS (
    SELECT j.user_id, 1 AS matched, MIN(CASE WHEN j.is_rel = 1 THEN j.rank END) AS first_hit,
           CAST(SUM(j.is_rel) AS BIGINT) AS hits_all
    FROM judged AS j
    GROUP BY j.user_id
),
users AS (
    SELECT u.user_id, u.n_recs, u.n_rel,
           CASE WHEN COALESCE(h.matched, 0) = 1 THEN COALESCE(h.first_hit, 0) ELSE 0 END AS first_hit,
           CASE WHEN COALESCE(h.matched, 0) = 1 THEN h.hits_all ELSE 0 END AS hits_all
    FROM universe AS u
    LEFT JOIN user_hits AS h ON h.user_id = u.user_id
),
-- the sums over a user's judged rows, running in rank order (a grouped SUM adds in thread order,
-- which moves the last bit between runs); a row holds the sums at every k from its rank up to
-- just before the next judged rank
running AS (
    SELECT j.user_id, j.rank, j.judged_pos, j.hits_so_far, j.gain, j.ideal_at,
           CAST(CASE WHEN j.following_rank > j.rank THEN j.following_rank ELSE 9223372036854775807 END AS BIGINT) AS next_rank,
           SUM(CASE WHEN j.is_rel = 1 THEN CAST(j.hits_so_far AS DOUBLE) / j.rank ELSE 0.0 END)
               OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS precision_sum,
           SUM(CASE WHEN j.is_rel = 1 THEN j.hits_so_far ELSE 0 END)
               OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS hits_sum,
           SUM(CASE WHEN j.is_rel = 1 AND j.rank <= j.n_rel THEN 1 ELSE 0 END)
               OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS r_hits,
           SUM(j.gain / (LN(j.rank + 1.0) / LN($log_base)))
               OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS dcg,
           SUM(CASE WHEN j.is_rel = 1 THEN POWER($rbp_persistence, j.rank - 1) ELSE 0.0 END)
               OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS rbp_sum,
           -- rprec_mult's and iprec_at_recall's statistics at the convention's value, and iprec_max at trec_eval's
           -- 11 levels 0.0, 0.1, ..., 1.0 (ipt0 .. ipt10: ipt11_avg, summed in running_err)
           -- >>> param running (generated from rankwise.metrics.formulas.PARAM_STATISTICS by python -m rankwise.generate.sql: do not edit)
           MAX(CASE WHEN j.is_rel = 1 AND j.hits_so_far >= FLOOR($iprec_recall_level * j.n_rel + j.iprec_half) THEN CAST(j.hits_so_far AS DOUBLE) / j.rank END) OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS iprec_max,
           SUM(CASE WHEN j.is_rel = 1 AND j.rank <= FLOOR($rprec_multiplier * j.n_rel + 0.9) THEN 1 ELSE 0 END) OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS mult_hits,
           MAX(CASE WHEN j.is_rel = 1 AND j.hits_so_far >= FLOOR(CAST(0.0 AS DOUBLE) * j.n_rel + j.iprec_half) THEN CAST(j.hits_so_far AS DOUBLE) / j.rank END) OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ipt0,
           MAX(CASE WHEN j.is_rel = 1 AND j.hits_so_far >= FLOOR(CAST(0.1 AS DOUBLE) * j.n_rel + j.iprec_half) THEN CAST(j.hits_so_far AS DOUBLE) / j.rank END) OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ipt1,
           MAX(CASE WHEN j.is_rel = 1 AND j.hits_so_far >= FLOOR(CAST(0.2 AS DOUBLE) * j.n_rel + j.iprec_half) THEN CAST(j.hits_so_far AS DOUBLE) / j.rank END) OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ipt2,
           MAX(CASE WHEN j.is_rel = 1 AND j.hits_so_far >= FLOOR(CAST(0.3 AS DOUBLE) * j.n_rel + j.iprec_half) THEN CAST(j.hits_so_far AS DOUBLE) / j.rank END) OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ipt3,
           MAX(CASE WHEN j.is_rel = 1 AND j.hits_so_far >= FLOOR(CAST(0.4 AS DOUBLE) * j.n_rel + j.iprec_half) THEN CAST(j.hits_so_far AS DOUBLE) / j.rank END) OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ipt4,
           MAX(CASE WHEN j.is_rel = 1 AND j.hits_so_far >= FLOOR(CAST(0.5 AS DOUBLE) * j.n_rel + j.iprec_half) THEN CAST(j.hits_so_far AS DOUBLE) / j.rank END) OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ipt5,
           MAX(CASE WHEN j.is_rel = 1 AND j.hits_so_far >= FLOOR(CAST(0.6 AS DOUBLE) * j.n_rel + j.iprec_half) THEN CAST(j.hits_so_far AS DOUBLE) / j.rank END) OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ipt6,
           MAX(CASE WHEN j.is_rel = 1 AND j.hits_so_far >= FLOOR(CAST(0.7 AS DOUBLE) * j.n_rel + j.iprec_half) THEN CAST(j.hits_so_far AS DOUBLE) / j.rank END) OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ipt7,
           MAX(CASE WHEN j.is_rel = 1 AND j.hits_so_far >= FLOOR(CAST(0.8 AS DOUBLE) * j.n_rel + j.iprec_half) THEN CAST(j.hits_so_far AS DOUBLE) / j.rank END) OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ipt8,
           MAX(CASE WHEN j.is_rel = 1 AND j.hits_so_far >= FLOOR(CAST(0.9 AS DOUBLE) * j.n_rel + j.iprec_half) THEN CAST(j.hits_so_far AS DOUBLE) / j.rank END) OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ipt9,
           MAX(CASE WHEN j.is_rel = 1 AND j.hits_so_far >= FLOOR(CAST(1.0 AS DOUBLE) * j.n_rel + j.iprec_half) THEN CAST(j.hits_so_far AS DOUBLE) / j.rank END) OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ipt10,
           -- <<< param running
           -- binG: 1 / log2(2 + items above that are not relevant) at each relevant item
           SUM(CASE WHEN j.is_rel = 1 THEN 1.0 / (LN(2.0 + (j.rank - j.hits_so_far)) / LN(2.0)) ELSE 0.0 END)
               OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS bing_sum,
           -- G: gain / log2(2 + ideal cost so far - gain so far) at each item of nonzero gain
           -- (with $gain_statistics = 0 the labels' ideal is not looked up: cost_at and ideal_at are then 0, and an
           -- engine that raises on LN(0) or x / 0, as PostgreSQL, must not reach these terms; nor with gains near
           -- the float limit, where 2 + cost - gain rounds to 0: trec_eval's term is then gain / -inf = -0)
           SUM(CASE WHEN $gain_statistics = 1 AND j.gain <> 0 AND 2.0 + j.cost_at - j.gain_so_far > 0
                    THEN j.gain / (LN(2.0 + j.cost_at - j.gain_so_far) / LN(2.0))
                    ELSE 0.0 END)
               OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS g_sum,
           SUM(CASE WHEN j.gain > 0 THEN 1 ELSE 0 END)
               OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS pos_ret,
           -- rbp_resid: the RBP weight of the judged items (the unjudged ones' is the rest)
           SUM(POWER($rbp_persistence, j.rank - 1))
               OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS judged_rbp,
           j.err_r, j.err_floor,
           SUM(LN(GREATEST(1.0 - j.err_r, j.err_floor)))
               OVER (PARTITION BY j.user_id ORDER BY j.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS err_logs
    FROM judged AS j
),
-- ERR's sum: each judged row's R / rank, times the chance the user got there (the product of 1 - R
-- above it: exp of the logs so far less this row's)
running_err AS (
    SELECT r.*,
           SUM(r.err_r / r.rank * EXP(r.err_logs - LN(GREATEST(1.0 - r.err_r, r.err_floor))))
               OVER (PARTITION BY r.user_id ORDER BY r.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS err_sum,
           -- ndcg_rel: DCG so far / the ideal DCG at this rank, at each item of positive gain
           SUM(CASE WHEN $gain_statistics = 1 AND r.gain > 0 THEN r.dcg / r.ideal_at ELSE 0.0 END)
               OVER (PARTITION BY r.user_id ORDER BY r.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ndcg_rel_sum,
           COALESCE(r.ipt0, 0.0) + COALESCE(r.ipt1, 0.0) + COALESCE(r.ipt2, 0.0) + COALESCE(r.ipt3, 0.0) + COALESCE(r.ipt4, 0.0) + COALESCE(r.ipt5, 0.0) + COALESCE(r.ipt6, 0.0) + COALESCE(r.ipt7, 0.0) + COALESCE(r.ipt8, 0.0) + COALESCE(r.ipt9, 0.0) + COALESCE(r.ipt10, 0.0) AS ipt11_sum
    FROM running AS r
),
-- at each k, the sums of the last judged row at or above k
at_k AS (
    SELECT r.user_id, CAST(c.k AS BIGINT) AS k, 1 AS matched, r.judged_pos,
           CAST(r.hits_so_far AS BIGINT) AS hits, r.precision_sum, CAST(r.hits_sum AS BIGINT) AS hits_sum,
           CAST(r.r_hits AS BIGINT) AS r_hits, r.dcg, r.rbp_sum, r.err_sum, CAST(r.mult_hits AS BIGINT) AS mult_hits,
           r.iprec_max, r.ipt11_sum, r.bing_sum, r.g_sum, CAST(r.pos_ret AS BIGINT) AS pos_ret, r.judged_rbp,
           r.ndcg_rel_sum
    FROM running_err AS r
    JOIN cutoffs AS c ON r.rank <= c.k AND c.k < r.next_rank
),
-- Rndcg: at each R level m (the last position of a run of equal positive gains in the ideal order) the DCG of
-- the top min(m, k, list length) over the ideal DCG at m; the DCG there is the running dcg of the last judged
-- row at or above that position (none: 0). Summed in m order, trec_eval's.
rndcg_points AS (
    SELECT i.user_id, CAST(c.k AS BIGINT) AS k, i.pos, i.idcg,
           LEAST(CAST(i.pos AS BIGINT), CAST(c.k AS BIGINT), u.n_recs) AS at_pos
    FROM ideal_running AS i
    JOIN universe AS u ON u.user_id = i.user_id
    CROSS JOIN cutoffs AS c
    WHERE i.is_bound = 1 AND $rndcg_statistics = 1
),
-- (the judged row found by an inner join first: older ClickHouse servers take no inequality in a LEFT JOIN's ON)
rndcg_found AS (
    SELECT p.user_id, p.k, p.pos, 1 AS matched, r.dcg
    FROM rndcg_points AS p
    JOIN running AS r ON r.user_id = p.user_id AND r.rank <= p.at_pos AND p.at_pos < r.next_rank
),
rndcg_terms AS (
    SELECT p.user_id, p.k, p.pos,
           SUM(CASE WHEN COALESCE(f.matched, 0) = 1 THEN f.dcg ELSE 0.0 END / p.idcg)
               OVER (PARTITION BY p.user_id, p.k ORDER BY p.pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
               AS rndcg_sum,
           ROW_NUMBER() OVER (PARTITION BY p.user_id, p.k ORDER BY p.pos DESC) AS from_last
    FROM rndcg_points AS p
    LEFT JOIN rndcg_found AS f ON f.user_id = p.user_id AND f.k = p.k AND f.pos = p.pos
),
rndcg AS (
    SELECT t.user_id, t.k, 1 AS matched, t.rndcg_sum
    FROM rndcg_terms AS t
    WHERE t.from_last = 1
),
-- the judged-aware statistics (bpref, infAP, num_nonrel_judged_ret, unj), as trec_eval's form_res_rels.c sorts
-- a ranked item: kind 1 relevant, 0 judged non-relevant (relevance >= 0, not relevant), -1 pooled but not
-- judged (relevance < 0, under negative_relevance = 'unjudged'); an item without a label row is not in the
-- pool. The running counts are BIGINT (ClickHouse sums into UInt64, which LEAST with n_rel refuses). Every recommended item within the largest k that has a label row, whatever its relevance (the
-- `judged` rows above are only those that can earn), with the running counts of each kind in rank order
pool_labels AS (
    SELECT g.user_id, g.item_id,
           CASE WHEN g.relevance > 0 AND g.relevance >= $relevance_threshold THEN 1
                WHEN g.relevance >= 0 THEN 0 ELSE -1 END AS kind
    FROM ground_truth AS g
    WHERE g.item_id IS NOT NULL AND $pool_statistics = 1
),
pooled AS (
    SELECT r.user_id, CAST(r.rank AS BIGINT) AS rank, u.n_rel, u.n_nonrel, p.kind,
           CAST(SUM(CASE WHEN p.kind = 1 THEN 1 ELSE 0 END)
                    OVER (PARTITION BY r.user_id ORDER BY r.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT)
               AS rel_so_far,
           CAST(SUM(CASE WHEN p.kind = 0 THEN 1 ELSE 0 END)
                    OVER (PARTITION BY r.user_id ORDER BY r.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT)
               AS nonrel_so_far,
           CAST(SUM(CASE WHEN p.kind = -1 THEN 1 ELSE 0 END)
                    OVER (PARTITION BY r.user_id ORDER BY r.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT)
               AS pooled_so_far,
           LEAD(r.rank) OVER (PARTITION BY r.user_id ORDER BY r.rank) AS following_rank
    FROM recommendations AS r
    JOIN (SELECT MAX(c.k) AS max_k FROM cutoffs AS c) AS h ON r.rank <= h.max_k
    JOIN pool_labels AS p ON p.user_id = r.user_id AND p.item_id = r.item_id
    JOIN universe AS u ON u.user_id = r.user_id
),
-- the sums bpref and infAP add at each relevant item, in rank order (m_bpref.c, m_infap.c; j = rank - 1 items
-- above it, of them rel_so_far - 1 relevant, nonrel_so_far judged non-relevant, pooled_so_far pooled):
--   bpref: 1 - min(nonrel_so_far, n_rel) / min(n_nonrel, n_rel), 1 when no judged non-relevant item is above
--   infAP: 1 at rank 1, else 1 / rank + (j / rank) ((rel_so_far - 1 + nonrel_so_far + pooled_so_far) / j)
--          ((rel_so_far - 1 + 0.00001) / (rel_so_far - 1 + nonrel_so_far + 0.00002))   (INFAP_EPSILON 0.00001)
pooled_running AS (
    SELECT p.user_id, p.rank,
           CAST(CASE WHEN p.following_rank > p.rank THEN p.following_rank ELSE 9223372036854775807 END AS BIGINT) AS next_rank,
           CAST(p.nonrel_so_far AS BIGINT) AS nonrel_ret, CAST(p.pooled_so_far AS BIGINT) AS pooled_ret,
           SUM(CASE WHEN p.kind = 1
                    THEN (CASE WHEN p.nonrel_so_far > 0
                               THEN 1.0 - CAST(LEAST(p.nonrel_so_far, p.n_rel) AS DOUBLE) / CAST(LEAST(p.n_nonrel, p.n_rel) AS DOUBLE)
                               ELSE 1.0 END)
                    ELSE 0.0 END)
               OVER (PARTITION BY p.user_id ORDER BY p.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS bpref_sum,
           SUM(CASE WHEN p.kind = 1
                    THEN (CASE WHEN p.rank = 1 THEN 1.0
                               ELSE 1.0 / CAST(p.rank AS DOUBLE)
                                    + CAST(p.rank - 1 AS DOUBLE) / CAST(p.rank AS DOUBLE)
                                      * (CAST(p.rel_so_far - 1 + p.nonrel_so_far + p.pooled_so_far AS DOUBLE) / CAST(p.rank - 1 AS DOUBLE))
                                      * ((CAST(p.rel_so_far - 1 AS DOUBLE) + CAST(0.00001 AS DOUBLE))
                                         / (CAST(p.rel_so_far - 1 + p.nonrel_so_far AS DOUBLE) + CAST(0.00002 AS DOUBLE))) END)
                    ELSE 0.0 END)
               OVER (PARTITION BY p.user_id ORDER BY p.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS infap_sum
    FROM pooled AS p
),
pooled_at_k AS (
    SELECT p.user_id, CAST(c.k AS BIGINT) AS k, 1 AS matched, p.nonrel_ret, p.pooled_ret, p.bpref_sum, p.infap_sum
    FROM pooled_running AS p
    JOIN cutoffs AS c ON p.rank <= c.k AND c.k < p.next_rank
),
-- ideal DCG from the top k ($ideal = 'predictions_topk'): each k's judged rows in the ideal order
-- (gain descending; rows of equal gain are interchangeable, so no tie-break is needed), their positive gains
-- summed running in that order and read at the k's last position (= judged_pos of at_k)
top_k_ideal AS (
    SELECT j.user_id, CAST(c.k AS BIGINT) AS k, j.gain,
           ROW_NUMBER() OVER (PARTITION BY j.user_id, c.k ORDER BY j.gain DESC) AS ideal_pos
    FROM judged AS j
    JOIN cutoffs AS c ON j.rank <= c.k
    WHERE $ideal = 'predictions_topk'
),
idcg_top AS (
    SELECT t.user_id, t.k, t.ideal_pos, 1 AS matched,
           SUM(CASE WHEN t.gain > 0 THEN t.gain / (LN(t.ideal_pos + 1.0) / LN($log_base)) ELSE 0.0 END)
               OVER (PARTITION BY t.user_id, t.k ORDER BY t.ideal_pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS idcg
    FROM top_k_ideal AS t
),
-- ideal DCG from the labels ($ideal = 'labels'): the running sums over the labels sorted by gain, read at
-- min(k, number of labels of positive gain)
idcg_labels AS (
    SELECT i.user_id, CAST(c.k AS BIGINT) AS k, 1 AS matched, i.idcg
    FROM ideal_running AS i
    JOIN cutoffs AS c ON i.pos <= c.k AND c.k < i.next_pos
    WHERE $ideal = 'labels'
),
-- positions 1..10000 without generate_series (not portable): four cross-joined digits
digits AS (
    SELECT 0 AS d UNION ALL SELECT 1 AS d UNION ALL SELECT 2 AS d UNION ALL SELECT 3 AS d
    UNION ALL SELECT 4 AS d UNION ALL SELECT 5 AS d UNION ALL SELECT 6 AS d UNION ALL SELECT 7 AS d
    UNION ALL SELECT 8 AS d UNION ALL SELECT 9 AS d
),
slots AS (
    SELECT CAST(d1.d + 10 * d2.d + 100 * d3.d + 1000 * d4.d + 1 AS BIGINT) AS pos
    FROM digits AS d1 CROSS JOIN digits AS d2 CROSS JOIN digits AS d3 CROSS JOIN digits AS d4
    WHERE $ideal = 'k_ones'
),
slots_running AS (
    SELECT s.pos, SUM(1.0 / (LN(s.pos + 1.0) / LN($log_base)))
                      OVER (ORDER BY s.pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS idcg
    FROM slots AS s
),
idcg_ones AS (
    SELECT CAST(c.k AS BIGINT) AS k, s.idcg
    FROM cutoffs AS c
    JOIN slots_running AS s ON s.pos = c.k
),
stats AS (
    SELECT u.user_id, CAST(c.k AS BIGINT) AS k, u.n_recs, u.n_rel,
           CAST(CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.hits ELSE 0 END AS DOUBLE) AS hits,
           CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.precision_sum ELSE 0.0 END AS precision_sum,
           CAST(CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.hits_sum ELSE 0 END AS DOUBLE) AS hits_sum,
           CAST(CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.r_hits ELSE 0 END AS DOUBLE) AS r_hits,
           CASE WHEN $rr_cutoff = 1 AND u.first_hit > c.k THEN 0 ELSE u.first_hit END AS first_hit,
           -- recommended or relevant items: the rows a per-item table (Evidently) holds for the user
           u.n_recs + u.n_rel - u.hits_all AS n_candidates,
           CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.dcg ELSE 0.0 END AS dcg,
           CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.rbp_sum ELSE 0.0 END AS rbp_sum,
           CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.err_sum ELSE 0.0 END AS err_sum,
           -- >>> param at k (generated from rankwise.metrics.formulas.PARAM_STATISTICS by python -m rankwise.generate.sql: do not edit)
           CASE WHEN COALESCE(a.matched, 0) = 1 THEN COALESCE(a.iprec_max, 0.0) ELSE 0.0 END AS iprec_max,
           CAST(CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.mult_hits ELSE 0 END AS DOUBLE) AS mult_hits,
           -- <<< param at k
           CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.ipt11_sum ELSE 0.0 END AS ipt11_sum,
           CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.bing_sum ELSE 0.0 END AS bing_sum,
           CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.g_sum ELSE 0.0 END AS g_sum,
           CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.ndcg_rel_sum ELSE 0.0 END AS ndcg_rel_sum,
           CAST(CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.pos_ret ELSE 0 END AS DOUBLE) AS pos_ret,
           CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.judged_rbp ELSE 0.0 END AS judged_rbp,
           CAST(CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.judged_pos ELSE 0 END AS DOUBLE) AS judged_ret,
           CASE WHEN COALESCE(rn.matched, 0) = 1 THEN rn.rndcg_sum ELSE 0.0 END AS rndcg_sum,
           CAST(CASE WHEN COALESCE(iu.matched, 0) = 1 THEN iu.n_pos ELSE 0 END AS BIGINT) AS n_pos,
           CASE WHEN COALESCE(iu.matched, 0) = 1 THEN iu.idcg_all ELSE 0.0 END AS idcg_all,
           CASE WHEN COALESCE(iu.matched, 0) = 1 THEN iu.gain_total ELSE 0.0 END AS gain_total,
           CAST(CASE WHEN COALESCE(iu.matched, 0) = 1 THEN iu.n_bounds ELSE 0 END AS DOUBLE) AS n_bounds,
           CAST(CASE WHEN COALESCE(pk.matched, 0) = 1 THEN pk.nonrel_ret ELSE 0 END AS DOUBLE) AS nonrel_ret,
           CAST(CASE WHEN COALESCE(pk.matched, 0) = 1 THEN pk.pooled_ret ELSE 0 END AS DOUBLE) AS pooled_ret,
           CASE WHEN COALESCE(pk.matched, 0) = 1 THEN pk.bpref_sum ELSE 0.0 END AS bpref_sum,
           CASE WHEN COALESCE(pk.matched, 0) = 1 THEN pk.infap_sum ELSE 0.0 END AS infap_sum,
           CASE WHEN $ideal = 'labels' THEN (CASE WHEN COALESCE(il.matched, 0) = 1 THEN il.idcg ELSE 0.0 END)
                WHEN $ideal = 'k_ones' THEN io.idcg
                ELSE (CASE WHEN COALESCE(it.matched, 0) = 1 THEN it.idcg ELSE 0.0 END) END AS idcg
    FROM users AS u
    CROSS JOIN cutoffs AS c
    LEFT JOIN at_k AS a ON a.user_id = u.user_id AND a.k = c.k
    LEFT JOIN idcg_top AS it ON it.user_id = u.user_id AND it.k = c.k AND it.ideal_pos = a.judged_pos
    LEFT JOIN idcg_labels AS il ON il.user_id = u.user_id AND il.k = c.k
    LEFT JOIN idcg_ones AS io ON io.k = c.k
    LEFT JOIN rndcg AS rn ON rn.user_id = u.user_id AND rn.k = c.k
    LEFT JOIN ideal_user AS iu ON iu.user_id = u.user_id
    LEFT JOIN pooled_at_k AS pk ON pk.user_id = u.user_id AND pk.k = c.k
),
-- >>> generated from the metric declarations (rankwise.metrics.declarations) by python -m rankwise.generate.sql: do not edit
-- the terms several metrics share (rankwise.metrics.formulas.TERMS)
denominators AS (
    SELECT s.*,
           CAST(CASE WHEN $precision_denominator = 'k' THEN s.k
                     WHEN $precision_denominator = 'min_k_len' THEN LEAST(s.k, s.n_recs)
                     WHEN $precision_denominator = 'min_k_candidates' THEN LEAST(s.k, s.n_candidates)
                     ELSE LEAST(s.k, s.n_rel) END AS DOUBLE) AS p_den,
           CAST(CASE WHEN $ap_denominator = 'n_hits' THEN CAST(s.hits AS BIGINT)
                     WHEN $ap_denominator = 'n_rel' THEN s.n_rel
                     WHEN $ap_denominator = 'min_k_nrel' THEN LEAST(s.k, s.n_rel)
                     WHEN $ap_denominator = 'k' THEN s.k
                     ELSE LEAST(s.k, s.n_recs) END AS DOUBLE) AS ap_den,
           CASE WHEN LEAST(s.k, s.n_recs) > s.n_pos + 1 AND s.idcg_all > 0 THEN 1.0 ELSE 0.0 END AS rndcg_tail
    FROM stats AS s
),
-- each metric's value where the user has labels and recommendations (rankwise.metrics.declarations)
defined AS (
    SELECT d.user_id, d.k, d.n_recs, d.n_rel,
           d.hits / NULLIF(d.p_den, 0.0) AS precision,
           d.hits / NULLIF(CAST(d.n_rel AS DOUBLE), 0.0) AS recall,
           CASE WHEN d.ap_den > 0 THEN d.precision_sum / d.ap_den ELSE 0.0 END AS map,
           CASE WHEN d.ap_den > 0 THEN d.hits_sum / NULLIF(CAST(d.n_rel AS DOUBLE), 0.0) / d.ap_den
                ELSE 0.0 END AS mar,
           CASE WHEN d.first_hit > 0 THEN 1.0 / d.first_hit ELSE 0.0 END AS mrr,
           d.dcg AS dcg,
           CASE WHEN d.idcg > 0 THEN d.dcg / d.idcg * (d.idcg / d.idcg)
                WHEN $zero_ideal = 'zero' THEN 0.0
                ELSE CAST(NULL AS DOUBLE) END AS ndcg,
           CASE WHEN d.hits > 0 THEN 1.0 ELSE 0.0 END AS hit_rate,
           d.r_hits / NULLIF(CAST(LEAST(d.k, d.n_rel) AS DOUBLE), 0.0) AS r_precision,
           (1.0 - $rbp_persistence) * d.rbp_sum AS rbp,
           d.err_sum AS err,
           CAST(LEAST(d.k, d.n_recs) AS DOUBLE) AS num_ret,
           CAST(d.n_rel AS DOUBLE) AS num_rel,
           d.hits AS num_rel_ret,
           CASE WHEN LEAST(d.k, d.n_recs) > 0 THEN d.hits / CAST(LEAST(d.k, d.n_recs) AS DOUBLE) ELSE 0.0 END AS set_p,
           d.hits / NULLIF(CAST(d.n_rel AS DOUBLE), 0.0) AS set_recall,
           d.hits / NULLIF(CAST(LEAST(d.k, d.n_recs, d.n_rel) AS DOUBLE), 0.0) AS set_relative_p,
           d.hits * d.hits / NULLIF(CAST(LEAST(d.k, d.n_recs) AS DOUBLE) * CAST(d.n_rel AS DOUBLE), 0.0) AS set_map,
           CASE WHEN d.hits > 0 THEN 2.0 * d.hits / CAST(LEAST(d.k, d.n_recs) + d.n_rel AS DOUBLE) ELSE 0.0 END AS set_f,
           d.hits / NULLIF(CAST(LEAST(d.k, d.n_rel) AS DOUBLE), 0.0) AS relative_p,
           CASE WHEN FLOOR($rprec_multiplier * d.n_rel + 0.9) > 0 THEN d.mult_hits / FLOOR($rprec_multiplier * d.n_rel + 0.9)
                ELSE 0.0 END AS rprec_mult,
           d.iprec_max AS iprec_at_recall,
           d.ipt11_sum * (1.0 / 11.0) AS ipt11_avg,
           $utility_relevant_retrieved * d.hits + $utility_nonrelevant_retrieved * (LEAST(d.k, d.n_recs) - d.hits) + $utility_relevant_missed * (d.n_rel - d.hits) + $utility_nonrelevant_missed * ($collection_size + d.hits - LEAST(d.k, d.n_recs) - d.n_rel) AS utility,
           d.bing_sum / NULLIF(CAST(d.n_rel AS DOUBLE), 0.0) AS bin_g,
           CASE WHEN d.gain_total > 0 THEN d.g_sum / d.gain_total ELSE 0.0 END AS g,
           CASE WHEN d.n_pos > 0 AND d.ndcg_rel_sum + (d.n_pos - d.pos_ret) * d.dcg / NULLIF(d.idcg_all, 0.0) > 0 THEN (d.ndcg_rel_sum + (d.n_pos - d.pos_ret) * d.dcg / NULLIF(d.idcg_all, 0.0)) / d.n_pos
                ELSE 0.0 END AS ndcg_rel,
           CASE WHEN d.n_bounds + d.rndcg_tail > 0 THEN (d.rndcg_sum + CASE WHEN d.rndcg_tail > 0 THEN d.dcg / NULLIF(d.idcg_all, 0.0)
                ELSE 0.0 END) / (d.n_bounds + d.rndcg_tail)
                ELSE 0.0 END AS rndcg,
           CASE WHEN d.judged_ret < LEAST(d.k, d.n_recs) THEN 1.0 - (1.0 - $rbp_persistence) * d.judged_rbp
                ELSE 0.0 END AS rbp_resid,
           CASE WHEN d.ap_den > 0 THEN d.precision_sum / d.ap_den ELSE 0.0 END AS gm_map,
           d.nonrel_ret AS num_nonrel_judged_ret,
           d.bpref_sum / NULLIF(CAST(d.n_rel AS DOUBLE), 0.0) AS bpref,
           d.infap_sum / NULLIF(CAST(d.n_rel AS DOUBLE), 0.0) AS infap,
           (LEAST(d.k, d.n_recs) - d.hits - d.nonrel_ret) / CAST(d.k AS DOUBLE) AS unj,
           (d.hits + d.nonrel_ret + d.pooled_ret) / NULLIF(CAST(LEAST(d.k, d.n_recs) AS DOUBLE), 0.0) AS judged,
           d.bpref_sum / NULLIF(CAST(d.n_rel AS DOUBLE), 0.0) AS gm_bpref
    FROM denominators AS d
),
defined_2 AS (
    SELECT d.*,
           CASE WHEN d.precision + d.recall > 0 THEN (1.0 + $beta * $beta) * d.precision * d.recall / ($beta * $beta * d.precision + d.recall)
                ELSE 0.0 END AS fbeta
    FROM defined AS d
),
-- the values a user without labels or without recommendations gets, for every metric
empty_values AS (
    SELECT CASE WHEN $empty_labels = 'zero' THEN 0.0 WHEN $empty_labels = 'one' THEN 1.0
                ELSE CAST(NULL AS DOUBLE) END AS no_labels,
           CASE WHEN $empty_predictions = 'zero' THEN 0.0 WHEN $empty_predictions = 'one' THEN 1.0
                ELSE CAST(NULL AS DOUBLE) END AS no_predictions
)
SELECT f.user_id, f.k, f.n_recs, f.n_rel,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.precision END AS precision,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.recall END AS recall,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.fbeta END AS fbeta,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.map END AS map,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.mar END AS mar,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.mrr END AS mrr,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.dcg END AS dcg,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.ndcg END AS ndcg,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.hit_rate END AS hit_rate,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.r_precision END AS r_precision,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.rbp END AS rbp,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.err END AS err,
       f.num_ret AS num_ret,
       f.num_rel AS num_rel,
       f.num_rel_ret AS num_rel_ret,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.set_p END AS set_p,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.set_recall END AS set_recall,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.set_relative_p END AS set_relative_p,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.set_map END AS set_map,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.set_f END AS set_f,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.relative_p END AS relative_p,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.rprec_mult END AS rprec_mult,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.iprec_at_recall END AS iprec_at_recall,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.ipt11_avg END AS ipt11_avg,
       f.utility AS utility,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.bin_g END AS bin_g,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.g END AS g,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.ndcg_rel END AS ndcg_rel,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.rndcg END AS rndcg,
       f.rbp_resid AS rbp_resid,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.gm_map END AS gm_map,
       f.num_nonrel_judged_ret AS num_nonrel_judged_ret,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.bpref END AS bpref,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.infap END AS infap,
       f.unj AS unj,
       f.judged AS judged,
       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions ELSE f.gm_bpref END AS gm_bpref
FROM defined_2 AS f
CROSS JOIN empty_values AS e
