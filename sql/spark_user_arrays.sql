-- rankwise on Spark: one row per user with what the metrics need from the user's list and labels,
-- built in one grouping of each input by user (as Spark MLlib's ranking metrics read them), instead
-- of joining the rows and checking them with GROUP BY (user, item). Spark SQL only (arrays and
-- lambda functions); sql/spark_user_stats.sql reads the result.
--
-- Input: recommendations_input (user_id, item_id, position, score): the caller's rows (position =
--        the rank column, NULL when ranking by score; score NULL when ranking by rank), or the
--        canonical rows with their ranks as positions; a row with a NULL item marks an empty list;
--        ground_truth (user_id, item_id, relevance): the canonical labels (a NULL item marks a user
--        with no labels).
-- Parameters: $by_score, $ties, $duplicates (the input rules of rankwise.inputs.normalize); $max_rank (the
--             largest rank that can earn: MAX(k), or 2147483647 when RR looks at the whole list);
--             $relevance_threshold, $gain, $gain_level_<i>, $gain_value_<i>, $err_max_grade (as in per_user.sql); $top_only 1 to sort only the
--             rows with a rank column value <= $max_rank (with ranks, not scores, and a finite
--             $max_rank; the whole list still goes into the checks and n_recs).
-- Output: user_id, in_recs, in_truth, n_judged, n_recs, n_rel, n_nonrel (as per_user.sql's all_users);
--   pooled: the user's recommended items within $max_rank that have a label row (any relevance), in rank order, as
--     (pos, kind: 1 relevant, 0 judged non-relevant, -1 pooled but not judged; per_user.sql's pool_labels);
--   earned: the user's recommended items within $max_rank that have a judged label (relevance >= 0: rbp_resid
--     tells judged from unjudged), in rank order, as (pos, is_rel, gain, err: ERR's R); ideal_gains: the labels'
--     positive gains, descending; suspect: 1 when one of sql/checks.sql's rules may fail for the
--     user (a NULL key, rank or score; a rank below 1; a NaN or infinite score; a repeated item or
--     rank; a bad relevance; a repeated label; a label with a NULL item). The caller runs
--     sql/checks.sql itself when any user is suspect, so that a failed check reports the same rows
--     as on every other path. complete: 0 when $top_only left out a row that ranks within
--     $max_rank (the rank values skip a number, or first_shift closed up a repeated item): the caller
--     groups again with $top_only = 0. With distinct ranks from 1 (else a check fails), the rows whose
--     rank value is <= $max_rank are the first places exactly when there are MIN(n, $max_rank) of them.
-- Ranks: the list sorted by (position, item), or by (score descending, item by $ties); with
-- $duplicates = 'first_shift' an item keeps its first place and the ranks close up (array_distinct
-- keeps first occurrences): the renumbering of rankwise.inputs.normalize and render's input views.
WITH
rec_rows AS (
    -- the row-level rules of sql/checks.sql, decided while grouping (no pass over the arrays)
    SELECT r.user_id,
           collect_list(named_struct('position', r.position,
                                     'score', CASE WHEN $ties = 'item_desc' THEN r.score ELSE -r.score END,
                                     'item_id', r.item_id))
               FILTER (WHERE r.item_id IS NOT NULL AND ($top_only = 0 OR r.position <= $max_rank)) AS rows_,
           -- with $top_only, the whole list's items and positions, for the checks and n_recs only
           collect_list(r.item_id) FILTER (WHERE $top_only = 1 AND r.item_id IS NOT NULL) AS all_items,
           collect_list(r.position) FILTER (WHERE $top_only = 1 AND r.item_id IS NOT NULL) AS all_positions,
           COUNT(r.item_id) AS n_rows,
           MAX(CASE WHEN r.item_id IS NULL
                         OR ($by_score = 0 AND (r.position IS NULL OR r.position < 1))
                         OR ($by_score = 1 AND (r.score IS NULL OR NOT (r.score BETWEEN -1.7976931348623157e308D
                                                                              AND 1.7976931348623157e308D)))
                    THEN 1 ELSE 0 END) AS bad_row
    FROM recommendations_input AS r
    GROUP BY r.user_id
),
sorted_recs AS (
    SELECT x.user_id, x.bad_row, x.n_rows,
           CASE WHEN $by_score = 1 AND $ties = 'item_desc' THEN sort_array(x.rows_, false)
                ELSE sort_array(x.rows_, true) END AS sorted,
           x.all_items, x.all_positions
    FROM rec_rows AS x
),
rec_lists AS (
    SELECT s.user_id, s.bad_row, s.n_rows, s.sorted,
           CASE WHEN $duplicates = 'first_shift' THEN array_distinct(s.sorted.item_id) ELSE s.sorted.item_id END
               AS items,
           CASE WHEN $top_only = 1 THEN s.all_items ELSE s.sorted.item_id END AS list_items,
           CASE WHEN $top_only = 1 THEN s.all_positions ELSE s.sorted.position END AS positions
    FROM sorted_recs AS s
),
recs AS (
    -- everything the join needs from a list, computed before it: the whole-list arrays stay here
    SELECT l.user_id, l.n_rows AS n_items,
           CASE WHEN $duplicates <> 'first_shift' THEN l.n_rows
                WHEN $top_only = 1 THEN size(array_distinct(l.list_items))
                ELSE size(l.items) END AS n_recs,
           slice(l.items, 1, $max_rank) AS top_items,
           CASE WHEN l.user_id IS NULL OR l.bad_row = 1
                     OR ($duplicates = 'error' AND size(array_distinct(l.list_items)) <> l.n_rows)
                     OR ($by_score = 0 AND size(array_distinct(l.positions)) <> l.n_rows)
                THEN 1 ELSE 0 END AS suspect,
           -- 0 when the rows within $max_rank are not the list's first places (a gap in the ranks, or
           -- first_shift closing up a repeated item): the caller then groups again with $top_only = 0
           CASE WHEN $top_only = 0
                     OR (size(l.sorted) = LEAST(l.n_rows, $max_rank) AND size(l.items) = size(l.sorted))
                THEN 1 ELSE 0 END AS complete
    FROM rec_lists AS l
),
label_rows AS (
    SELECT g.user_id, collect_list(named_struct('item_id', g.item_id, 'relevance', g.relevance)) AS rows_
    FROM ground_truth AS g
    GROUP BY g.user_id
),
label_lists AS (
    SELECT g.user_id, g.rows_,
           filter(g.rows_, l -> l.item_id IS NOT NULL) AS judged,
           filter(g.rows_, l -> l.item_id IS NOT NULL AND l.relevance >= 0) AS earning
    FROM label_rows AS g
),
-- ERR's largest grade: $err_max_grade, or the largest relevance in the ground truth (per_user.sql's err_scale)
err_scale AS (
    SELECT CASE WHEN $err_max_grade > 0 THEN CAST($err_max_grade AS DOUBLE)
                ELSE MAX(CASE WHEN g.item_id IS NOT NULL THEN CAST(g.relevance AS DOUBLE) END) END AS g_max
    FROM ground_truth AS g
),
labels AS (
    -- everything the join needs from the labels, computed before it
    SELECT g.user_id,
           size(g.judged) AS n_judged,
           size(filter(g.earning, l -> l.relevance > 0 AND l.relevance >= $relevance_threshold)) AS n_rel,
           size(filter(g.judged, l -> l.relevance >= 0 AND NOT (l.relevance > 0 AND l.relevance >= $relevance_threshold)))
               AS n_nonrel,
           -- every label's kind (per_user.sql's pool_labels): 1 relevant, 0 judged non-relevant, -1 pooled (relevance < 0)
           g.judged.item_id AS judged_items,
           transform(g.judged, l -> CASE WHEN l.relevance > 0 AND l.relevance >= $relevance_threshold THEN 1
                                         WHEN l.relevance >= 0 THEN 0 ELSE -1 END) AS judged_kinds,
           g.earning.item_id AS earning_items,
           transform(g.earning, l -> CASE WHEN l.relevance > 0 AND l.relevance >= $relevance_threshold THEN 1 ELSE 0 END)
               AS earning_is_rel,
           transform(g.earning, l -> CASE WHEN l.relevance = $gain_level_1 THEN $gain_value_1
                                          WHEN l.relevance = $gain_level_2 THEN $gain_value_2
                                          WHEN l.relevance = $gain_level_3 THEN $gain_value_3
                                          WHEN l.relevance = $gain_level_4 THEN $gain_value_4
                                          WHEN l.relevance = $gain_level_5 THEN $gain_value_5
                                          WHEN l.relevance = $gain_level_6 THEN $gain_value_6
                                          WHEN l.relevance = $gain_level_7 THEN $gain_value_7
                                          WHEN l.relevance = $gain_level_8 THEN $gain_value_8
                                          WHEN l.relevance <= 0 THEN 0.0D
                                          WHEN $gain = 'binary'
                                          THEN (CASE WHEN l.relevance >= $relevance_threshold THEN 1.0D ELSE 0.0D END)
                                          WHEN $gain = 'linear' THEN CAST(l.relevance AS DOUBLE)
                                          ELSE POWER(2.0D, l.relevance) - 1.0D END) AS earning_gains,
           transform(g.earning, l -> POWER(2.0D, GREATEST(LEAST(CAST(l.relevance AS DOUBLE), s.g_max) - s.g_max, -1000.0D))
                                     - POWER(2.0D, -LEAST(s.g_max, 1000.0D))) AS earning_err,
           POWER(2.0D, -LEAST(s.g_max, 1000.0D)) AS err_floor,
           CASE WHEN g.user_id IS NULL OR exists(g.rows_, l -> l.item_id IS NULL)
                     OR exists(g.judged, l -> l.relevance IS NULL
                                              OR NOT (l.relevance BETWEEN 0.0D AND 1.7976931348623157e308D))
                     OR size(array_distinct(g.judged.item_id)) <> size(g.judged)
                THEN 1 ELSE 0 END AS suspect
    FROM label_lists AS g
    CROSS JOIN err_scale AS s
),
found AS (
    -- the place of each of the first $max_rank items among the earning labels (0: none)
    SELECT COALESCE(r.user_id, g.user_id) AS user_id,
           CASE WHEN r.n_items IS NULL THEN 0 ELSE 1 END AS in_recs,
           CASE WHEN g.n_judged IS NULL THEN 0 ELSE 1 END AS in_truth,
           COALESCE(g.n_judged, 0) AS n_judged, COALESCE(r.n_recs, 0) AS n_recs, COALESCE(g.n_rel, 0) AS n_rel,
           COALESCE(g.n_nonrel, 0) AS n_nonrel, COALESCE(g.judged_kinds, CAST(array() AS ARRAY<INT>)) AS judged_kinds,
           COALESCE(g.earning_is_rel, array()) AS earning_is_rel,
           COALESCE(g.earning_gains, array()) AS earning_gains,
           COALESCE(g.earning_err, CAST(array() AS ARRAY<DOUBLE>)) AS earning_err, COALESCE(g.err_floor, 1.0D) AS err_floor,
           transform(COALESCE(r.top_items, array()),
                     (x, i) -> named_struct('pos', i + 1, 'at', COALESCE(array_position(g.earning_items, x), 0)))
               AS places,
           -- the place of each of the first $max_rank items among all the labels (0: none), for the pooled rows
           transform(COALESCE(r.top_items, array()),
                     (x, i) -> named_struct('pos', i + 1, 'at', COALESCE(array_position(g.judged_items, x), 0)))
               AS pool_places,
           GREATEST(COALESCE(r.suspect, 0), COALESCE(g.suspect, 0)) AS suspect,
           COALESCE(r.complete, 1) AS complete
    FROM recs AS r
    FULL OUTER JOIN labels AS g ON r.user_id = g.user_id
)
SELECT f.user_id, f.in_recs, f.in_truth,
       CAST(f.n_judged AS BIGINT) AS n_judged,
       CAST(f.n_recs AS BIGINT) AS n_recs,
       CAST(f.n_rel AS BIGINT) AS n_rel,
       CAST(f.n_nonrel AS BIGINT) AS n_nonrel,
       transform(filter(f.places, p -> p.at > 0),
                 p -> named_struct('pos', p.pos,
                                   'is_rel', f.earning_is_rel[p.at - 1],
                                   'gain', f.earning_gains[p.at - 1],
                                   'err', f.earning_err[p.at - 1],
                                   'err_log', LN(GREATEST(1.0D - f.earning_err[p.at - 1], f.err_floor)))) AS earned,
       transform(filter(f.pool_places, p -> p.at > 0),
                 p -> named_struct('pos', p.pos, 'kind', f.judged_kinds[p.at - 1])) AS pooled,
       sort_array(filter(f.earning_gains, g -> g > 0), false) AS ideal_gains,
       f.suspect, f.complete
FROM found AS f
