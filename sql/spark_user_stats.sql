-- rankwise on Spark: per_user.sql's `stats` rows (one per evaluated user and k) from the per-user
-- arrays of sql/spark_user_arrays.sql, with Spark's lambda functions instead of joins and windows.
-- The rest of per_user.sql (denominators, metrics, empty-input values) then runs on these rows
-- unchanged (rankwise.engines.spark splices it), so every metric rule stays in per_user.sql.
--
-- Input: user_arrays (the output of sql/spark_user_arrays.sql), cutoffs (k).
-- Parameters: $users, $unjudged, $rr_cutoff, $ideal, $log_base, $rbp_persistence, $rprec_multiplier,
--   $iprec_recall_level, $iprec_recall_count (as in per_user.sql).
-- Output: per_user.sql's `stats` columns. With `earned` in rank order, the j-th relevant row has
-- hits_so_far = j, so at k (the relevant rows within k being hit_rows):
--   hits = |hit_rows|, precision_sum = sum_j j / pos_j, hits_sum = sum_j j,
--   r_hits = |{j: pos_j <= n_rel}|, dcg = sum over earned rows within k of gain / log_b(pos + 1),
--   rbp_sum = sum_j p^(pos_j - 1), err_sum = sum over earned rows within k of R / pos times the
--   product of 1 - R above it,
--   idcg = the same over their gains sorted descending at positions 1, 2, ... ($ideal
--   'predictions_topk'), over the labels' gains ('labels'), or over k gains of 1 ('k_ones').
WITH
universe AS (
    SELECT a.*
    FROM user_arrays AS a
    WHERE (CASE WHEN $users = 'union' THEN 1
                WHEN $users = 'labels' THEN a.in_truth
                WHEN $users = 'predictions' THEN a.in_recs
                ELSE a.in_recs * a.in_truth END) = 1
      AND ($unjudged = 'keep' OR a.n_judged > 0)
),
idcg_ones AS (
    SELECT CAST(c.k AS BIGINT) AS k,
           CASE WHEN $ideal = 'k_ones'
                THEN aggregate(sequence(1, CAST(LEAST(c.k, 10000) AS INT)), 0.0D,
                               (acc, p) -> acc + 1.0D / (LN(p + 1.0D) / LN($log_base))) END AS idcg
    FROM cutoffs AS c
),
at_k AS (
    SELECT u.user_id, CAST(c.k AS BIGINT) AS k, u.n_recs, u.n_rel, u.ideal_gains,
           size(u.ideal_gains) AS n_pos,
           -- the R levels of Rndcg: the positions m (1-based) ending a run of equal gains in the ideal order
           filter(transform(u.ideal_gains, (g, i) -> CASE WHEN i = size(u.ideal_gains) - 1
                                                          OR g <> u.ideal_gains[LEAST(i + 1, size(u.ideal_gains) - 1)]
                                                          THEN i + 1 END), m -> m IS NOT NULL) AS bounds,
           filter(u.earned, e -> e.pos <= c.k) AS within,
           filter(u.earned, e -> e.is_rel = 1 AND e.pos <= c.k) AS hit_rows,
           filter(u.pooled, e -> e.pos <= c.k) AS pool_rows, u.n_nonrel,
           COALESCE(array_min(transform(filter(u.earned, e -> e.is_rel = 1), e -> e.pos)), 0) AS first_hit,
           size(filter(u.earned, e -> e.is_rel = 1)) AS hits_all
    FROM universe AS u
    CROSS JOIN cutoffs AS c
)
SELECT a.user_id, a.k, a.n_recs, a.n_rel,
       CAST(size(a.hit_rows) AS DOUBLE) AS hits,
       aggregate(transform(a.hit_rows, (e, j) -> CAST(j + 1 AS DOUBLE) / e.pos), 0.0D, (acc, x) -> acc + x)
           AS precision_sum,
       CAST(aggregate(transform(a.hit_rows, (e, j) -> CAST(j + 1 AS BIGINT)), CAST(0 AS BIGINT), (acc, x) -> acc + x)
            AS DOUBLE) AS hits_sum,
       CAST(size(filter(a.hit_rows, e -> e.pos <= a.n_rel)) AS DOUBLE) AS r_hits,
       CASE WHEN $rr_cutoff = 1 AND a.first_hit > a.k THEN 0 ELSE a.first_hit END AS first_hit,
       a.n_recs + a.n_rel - a.hits_all AS n_candidates,
       aggregate(a.within, 0.0D, (acc, e) -> acc + e.gain / (LN(e.pos + 1.0D) / LN($log_base))) AS dcg,
       aggregate(a.hit_rows, 0.0D, (acc, e) -> acc + POWER($rbp_persistence, e.pos - 1)) AS rbp_sum,
       -- ERR: in rank order, each row's R / pos times exp of the logs of 1 - R above it
       aggregate(a.within, named_struct('logs', 0.0D, 'sum', 0.0D),
                 (acc, e) -> named_struct('logs', acc.logs + e.err_log,
                                          'sum', acc.sum + e.err / e.pos * EXP(acc.logs)),
                 acc -> acc.sum) AS err_sum,
       CAST(size(filter(a.hit_rows, e -> e.pos <= FLOOR($rprec_multiplier * a.n_rel + 0.9))) AS DOUBLE) AS mult_hits,
       -- binG: 1 / log2(2 + items above that are not relevant) at each relevant item
       aggregate(transform(a.hit_rows, (e, j) -> 1.0D / (LN(2.0D + (e.pos - (j + 1))) / LN(2.0D))), 0.0D,
                 (acc, x) -> acc + x) AS bing_sum,
       -- G: in rank order, gain / log2(2 + the ideal's cost at the rank - the gain so far) (cost: the ideal gains
       -- each at least 1, then 1 a rank past the n_pos labels of positive gain)
       aggregate(a.within, named_struct('gains', 0.0D, 'sum', 0.0D),
                 (acc, e) -> named_struct('gains', acc.gains + e.gain,
                                          'sum', acc.sum + CASE WHEN e.gain <> 0 THEN e.gain / (LN(2.0D
                                              + (aggregate(slice(a.ideal_gains, 1, LEAST(e.pos, a.n_pos)), 0.0D,
                                                           (c, g) -> c + GREATEST(g, 1.0D))
                                                 + CAST(e.pos - LEAST(e.pos, a.n_pos) AS DOUBLE))
                                              - (acc.gains + e.gain)) / LN(2.0D)) ELSE 0.0D END),
                 acc -> acc.sum) AS g_sum,
       -- ndcg_rel: in rank order, DCG so far / the ideal DCG at min(rank, n_pos), at each item of positive gain
       aggregate(a.within, named_struct('dcg', 0.0D, 'sum', 0.0D),
                 (acc, e) -> named_struct('dcg', acc.dcg + e.gain / (LN(e.pos + 1.0D) / LN($log_base)),
                                          'sum', acc.sum + CASE WHEN e.gain > 0
                                              THEN (acc.dcg + e.gain / (LN(e.pos + 1.0D) / LN($log_base)))
                                                   / aggregate(transform(slice(a.ideal_gains, 1, LEAST(e.pos, a.n_pos)),
                                                                         (g, i) -> g / (LN((i + 1) + 1.0D) / LN($log_base))),
                                                               0.0D, (c, x) -> c + x)
                                              ELSE 0.0D END),
                 acc -> acc.sum) AS ndcg_rel_sum,
       CAST(size(filter(a.within, e -> e.gain > 0)) AS DOUBLE) AS pos_ret,
       -- rbp_resid: the RBP weight of the judged items
       aggregate(a.within, 0.0D, (acc, e) -> acc + POWER($rbp_persistence, e.pos - 1)) AS judged_rbp,
       CAST(size(a.within) AS DOUBLE) AS judged_ret,
       -- Rndcg: at each R level m, DCG of the top min(m, k, n_recs) over the ideal DCG at m, summed in m order
       aggregate(a.bounds, 0.0D, (acc, m) -> acc
           + aggregate(filter(a.within, e -> e.pos <= LEAST(m, a.k, a.n_recs)), 0.0D,
                       (c, e) -> c + e.gain / (LN(e.pos + 1.0D) / LN($log_base)))
           / aggregate(transform(slice(a.ideal_gains, 1, m), (g, i) -> g / (LN((i + 1) + 1.0D) / LN($log_base))),
                       0.0D, (c, x) -> c + x)) AS rndcg_sum,
       CAST(a.n_pos AS BIGINT) AS n_pos,
       aggregate(transform(a.ideal_gains, (g, i) -> g / (LN((i + 1) + 1.0D) / LN($log_base))), 0.0D,
                 (acc, x) -> acc + x) AS idcg_all,
       aggregate(a.ideal_gains, 0.0D, (acc, g) -> acc + g) AS gain_total,
       CAST(size(a.bounds) AS DOUBLE) AS n_bounds,
       COALESCE(array_max(filter(transform(a.hit_rows, (e, j) -> CASE WHEN j + 1 >= FLOOR($iprec_recall_level * a.n_rel
                                     + (CASE WHEN $iprec_recall_count = 'round' THEN 0.5D ELSE 0.9D END))
                                     THEN CAST(j + 1 AS DOUBLE) / e.pos END), x -> x IS NOT NULL)), 0.0D) AS iprec_max,
       -- ipt11_avg: the same at the levels 0.0, 0.1, ..., 1.0, summed (trec_eval's 11pt_avg)
       aggregate(sequence(0, 10), 0.0D, (acc, l) -> acc + COALESCE(array_max(filter(transform(a.hit_rows,
                 (e, j) -> CASE WHEN j + 1 >= FLOOR(CAST(l AS DOUBLE) / 10.0D * a.n_rel
                                                    + (CASE WHEN $iprec_recall_count = 'round' THEN 0.5D ELSE 0.9D END))
                                THEN CAST(j + 1 AS DOUBLE) / e.pos END), x -> x IS NOT NULL)), 0.0D)) AS ipt11_sum,
       -- the judged-aware statistics over the labelled items within k, in rank order (per_user.sql's pooled_running):
       -- acc.rel, acc.nonrel, acc.pooled count the kinds above the row
       CAST(size(filter(a.pool_rows, e -> e.kind = 0)) AS DOUBLE) AS nonrel_ret,
       CAST(size(filter(a.pool_rows, e -> e.kind = -1)) AS DOUBLE) AS pooled_ret,
       aggregate(a.pool_rows, named_struct('nonrel', CAST(0 AS BIGINT), 'sum', 0.0D),
                 (acc, e) -> named_struct('nonrel', acc.nonrel + CASE WHEN e.kind = 0 THEN 1 ELSE 0 END,
                                          'sum', acc.sum + CASE WHEN e.kind = 1
                                                     THEN (CASE WHEN acc.nonrel > 0
                                                                THEN 1.0D - CAST(LEAST(acc.nonrel, a.n_rel) AS DOUBLE)
                                                                            / CAST(LEAST(a.n_nonrel, a.n_rel) AS DOUBLE)
                                                                ELSE 1.0D END)
                                                     ELSE 0.0D END),
                 acc -> acc.sum) AS bpref_sum,
       aggregate(a.pool_rows, named_struct('rel', CAST(0 AS BIGINT), 'nonrel', CAST(0 AS BIGINT),
                                           'pooled', CAST(0 AS BIGINT), 'sum', 0.0D),
                 (acc, e) -> named_struct(
                     'rel', acc.rel + CASE WHEN e.kind = 1 THEN 1 ELSE 0 END,
                     'nonrel', acc.nonrel + CASE WHEN e.kind = 0 THEN 1 ELSE 0 END,
                     'pooled', acc.pooled + CASE WHEN e.kind = -1 THEN 1 ELSE 0 END,
                     'sum', acc.sum + CASE WHEN e.kind = 1
                                THEN (CASE WHEN e.pos = 1 THEN 1.0D
                                           ELSE 1.0D / CAST(e.pos AS DOUBLE)
                                                + CAST(e.pos - 1 AS DOUBLE) / CAST(e.pos AS DOUBLE)
                                                  * (CAST(acc.rel + acc.nonrel + acc.pooled AS DOUBLE) / CAST(e.pos - 1 AS DOUBLE))
                                                  * ((CAST(acc.rel AS DOUBLE) + 0.00001D)
                                                     / (CAST(acc.rel + acc.nonrel AS DOUBLE) + 0.00002D)) END)
                                ELSE 0.0D END),
                 acc -> acc.sum) AS infap_sum,
       CASE WHEN $ideal = 'labels'
            THEN aggregate(transform(a.ideal_gains, (g, i) -> CASE WHEN i < a.k THEN g / (LN((i + 1) + 1.0D) / LN($log_base))
                                                                   ELSE 0.0D END),
                           0.0D, (acc, x) -> acc + x)
            WHEN $ideal = 'k_ones' THEN o.idcg
            ELSE aggregate(transform(sort_array(filter(transform(a.within, e -> e.gain), g -> g > 0), false),
                                     (g, i) -> g / (LN((i + 1) + 1.0D) / LN($log_base))),
                           0.0D, (acc, x) -> acc + x) END AS idcg
FROM at_k AS a
JOIN idcg_ones AS o ON o.k = a.k
