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
-- Parameters: $by_score, $ties, $duplicates (the input rules of rankwise._inputs); $max_rank (the
--             largest rank that can earn: MAX(k), or 2147483647 when RR looks at the whole list);
--             $relevance_threshold, $gain, $ideal (as in per_user.sql); $top_only 1 to sort only the
--             rows with a rank column value <= $max_rank (with ranks, not scores, and a finite
--             $max_rank; the whole list still goes into the checks and n_recs).
-- Output: user_id, in_recs, in_truth, n_judged, n_recs, n_rel (as per_user.sql's all_users);
--   earned: the user's recommended items within $max_rank that have an earning label (relevance > 0),
--     in rank order, as (pos, is_rel, gain); ideal_gains: the earning labels' gains, descending
--     (only when $ideal = 'labels'); suspect: 1 when one of sql/checks.sql's rules may fail for the
--     user (a NULL key, rank or score; a rank below 1; a NaN or infinite score; a repeated item or
--     rank; a bad relevance; a repeated label; a label with a NULL item). The caller runs
--     sql/checks.sql itself when any user is suspect, so that a failed check reports the same rows
--     as on every other path. complete: 0 when $top_only left out a row that ranks within
--     $max_rank (the rank values skip a number, or first_shift closed up a repeated item): the caller
--     groups again with $top_only = 0. With distinct ranks from 1 (else a check fails), the rows whose
--     rank value is <= $max_rank are the first places exactly when there are MIN(n, $max_rank) of them.
-- Ranks: the list sorted by (position, item), or by (score descending, item by $ties); with
-- $duplicates = 'first_shift' an item keeps its first place and the ranks close up (array_distinct
-- keeps first occurrences): the renumbering of rankwise._inputs and render's input views.
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
recs AS (
    SELECT x.user_id, x.bad_row, x.n_rows, x.all_items, x.all_positions,
           CASE WHEN $by_score = 1 AND $ties = 'item_desc' THEN sort_array(x.rows_, false)
                ELSE sort_array(x.rows_, true) END AS sorted
    FROM rec_rows AS x
),
label_rows AS (
    SELECT g.user_id, collect_list(named_struct('item_id', g.item_id, 'relevance', g.relevance)) AS rows_
    FROM ground_truth AS g
    GROUP BY g.user_id
),
labels AS (
    SELECT g.user_id, g.rows_,
           filter(g.rows_, l -> l.item_id IS NOT NULL) AS judged,
           filter(g.rows_, l -> l.item_id IS NOT NULL AND l.relevance > 0) AS earning
    FROM label_rows AS g
),
gains AS (
    SELECT g.*, g.earning.item_id AS earning_items,
           transform(g.earning, l -> CASE WHEN $gain = 'binary'
                                          THEN (CASE WHEN l.relevance >= $relevance_threshold THEN 1.0D ELSE 0.0D END)
                                          WHEN $gain = 'linear' THEN l.relevance
                                          ELSE POWER(2.0D, l.relevance) - 1.0D END) AS earning_gains
    FROM labels AS g
),
both_ AS (
    SELECT COALESCE(r.user_id, g.user_id) AS user_id,
           CASE WHEN r.sorted IS NULL THEN 0 ELSE 1 END AS in_recs,
           CASE WHEN g.rows_ IS NULL THEN 0 ELSE 1 END AS in_truth,
           CASE WHEN exists(g.rows_, l -> l.item_id IS NULL) THEN 1 ELSE 0 END AS null_label,
           r.bad_row, COALESCE(CASE WHEN $duplicates = 'first_shift' THEN array_distinct(r.sorted.item_id)
                                    ELSE r.sorted.item_id END, array()) AS items,
           COALESCE(CASE WHEN $top_only = 1 THEN r.all_items ELSE r.sorted.item_id END, array()) AS list_items,
           CASE WHEN $top_only = 1 THEN r.all_positions ELSE r.sorted.position END AS positions,
           COALESCE(r.n_rows, 0) AS n_items, size(r.sorted) AS n_top,
           COALESCE(g.judged, array()) AS judged, COALESCE(g.earning, array()) AS earning,
           COALESCE(g.earning_items, array()) AS earning_items, COALESCE(g.earning_gains, array()) AS earning_gains
    FROM recs AS r
    FULL OUTER JOIN gains AS g ON r.user_id = g.user_id
),
found AS (
    -- the place of each of the first $max_rank items among the earning labels (0: none)
    SELECT b.*,
           transform(slice(b.items, 1, $max_rank),
                     (x, i) -> named_struct('pos', i + 1, 'at', array_position(b.earning_items, x)))
               AS places
    FROM both_ AS b
)
SELECT f.user_id, f.in_recs, f.in_truth,
       CAST(size(f.judged) AS BIGINT) AS n_judged,
       CAST(CASE WHEN $duplicates <> 'first_shift' THEN f.n_items
                 WHEN $top_only = 1 THEN size(array_distinct(f.list_items))
                 ELSE size(f.items) END AS BIGINT) AS n_recs,
       CAST(size(filter(f.earning, l -> l.relevance >= $relevance_threshold)) AS BIGINT) AS n_rel,
       transform(filter(f.places, p -> p.at > 0),
                 p -> named_struct('pos', p.pos,
                                   'is_rel', CASE WHEN f.earning[p.at - 1].relevance >= $relevance_threshold THEN 1 ELSE 0 END,
                                   'gain', f.earning_gains[p.at - 1])) AS earned,
       CASE WHEN $ideal = 'labels' THEN sort_array(f.earning_gains, false)
            ELSE CAST(array() AS ARRAY<DOUBLE>) END AS ideal_gains,
       CASE WHEN f.user_id IS NULL OR f.bad_row = 1 OR f.null_label = 1
                 OR ($duplicates = 'error' AND size(array_distinct(f.list_items)) <> f.n_items)
                 OR ($by_score = 0 AND size(array_distinct(f.positions)) <> f.n_items)
                 OR exists(f.judged, l -> l.relevance IS NULL OR NOT (l.relevance BETWEEN 0.0D AND 1.7976931348623157e308D))
                 OR size(array_distinct(f.judged.item_id)) <> size(f.judged)
            THEN 1 ELSE 0 END AS suspect,
       -- 0 when the rows within $max_rank are not the list's first places (a gap in the ranks, or
       -- first_shift closing up a repeated item): the caller then groups again with $top_only = 0
       CASE WHEN $top_only = 0 OR f.in_recs = 0
                 OR (f.n_top = LEAST(f.n_items, $max_rank) AND size(f.items) = f.n_top)
            THEN 1 ELSE 0 END AS complete
FROM found AS f
