-- rankwise: the exact input checks, one row per failed check (no rows: the inputs are valid).
--
-- Input: recommendations_input (user_id, item_id, position, score): the caller's rows as they are,
--        position = the rank column as DOUBLE (NULL when ranking by score; a fractional rank must
--        reach the check, not be rounded to an integer on the way), score = the score column as
--        DOUBLE (NULL when ranking by rank); ground_truth_input (user_id, item_id, relevance).
-- Parameters: $by_score 1 when ranks come from scores, else 0; $duplicates 'error' | 'first_shift';
--             $negative_relevance 'error' (a relevance below 0 fails) | 'unjudged' (trec_eval's pooled label);
--             $null_item_marks_empty 1 when a row with a NULL item (and NULL rank or score) stands
--             for a user with an empty list (or no labels), as in the rendered scripts (a table
--             cannot hold an empty list), valid only as that user's one row; 0 when a NULL item is
--             an error, as in evaluate().
-- Output: code, problem, n_rows (offending rows), example_user, example_item: one offending row's
--         user and item as text (NULL for a NULL), both from the same row.
-- The same rules as evaluate() (rankwise.inputs.normalize), which raises the same codes as typed errors.
-- A value outside [-max double, max double] is NaN or infinite on every engine: NaN compares
-- greater than every number in DuckDB, PostgreSQL and Spark, and false with everything elsewhere.
WITH
-- every row-level rule decided once per row, then counted in one pass over each input (an engine
-- that inlines CTEs reads each input once for all of them)
recommendation_flags AS (
    SELECT r.user_id, r.item_id,
           CASE WHEN r.user_id IS NULL OR (r.item_id IS NULL AND $null_item_marks_empty = 0)
                     OR (r.item_id IS NOT NULL AND (($by_score = 0 AND r.position IS NULL)
                                                    OR ($by_score = 1 AND r.score IS NULL)))
                THEN 1 ELSE 0 END AS null_row,
           -- a rank is a whole number from 1 (NaN and infinity fail the BETWEEN); FLOOR, not a cast to
           -- BIGINT, which fails on NaN in DuckDB and PostgreSQL before the check could report it
           CASE WHEN $by_score = 0 AND (NOT (r.position BETWEEN 1 AND 1.7976931348623157e308)
                                        OR r.position <> FLOOR(r.position))
                THEN 1 ELSE 0 END AS rank_row,
           CASE WHEN $by_score = 1 AND r.score IS NOT NULL
                     AND NOT (r.score BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308)
                THEN 1 ELSE 0 END AS score_row
    FROM recommendations_input AS r
),
-- The example of a check is the offending row with the smallest key, a row's key being the MD5 (32 hex
-- characters) of its user and item: key || 'v' || the user's text ('n' for NULL) is the smallest for
-- the same row as key || 'v' || the item's text, so that user and item come from one row (the smallest
-- user and the smallest item would come from two). Built for offending rows only.
recommendation_texts AS (
    SELECT f.null_row, f.rank_row, f.score_row,
           CASE WHEN f.null_row + f.rank_row + f.score_row > 0 THEN CAST(f.user_id AS VARCHAR) END AS u,
           CASE WHEN f.null_row + f.rank_row + f.score_row > 0 THEN CAST(f.item_id AS VARCHAR) END AS i
    FROM recommendation_flags AS f
),
recommendation_keys AS (
    SELECT x.null_row, x.rank_row, x.score_row, x.u, x.i,
           MD5(COALESCE(CAST(LENGTH(x.u) AS VARCHAR) || ':' || x.u, 'n') || COALESCE('v' || x.i, 'n')) AS row_key
    FROM recommendation_texts AS x
),
recommendation_examples AS (
    SELECT x.null_row, x.rank_row, x.score_row,
           x.row_key || COALESCE('v' || x.u, 'n') AS example_user, x.row_key || COALESCE('v' || x.i, 'n') AS example_item
    FROM recommendation_keys AS x
),
recommendation_rows AS (
    SELECT SUM(f.null_row) AS null_rows,
           MIN(CASE WHEN f.null_row = 1 THEN f.example_user END) AS null_user,
           MIN(CASE WHEN f.null_row = 1 THEN f.example_item END) AS null_item,
           SUM(f.rank_row) AS rank_rows,
           MIN(CASE WHEN f.rank_row = 1 THEN f.example_user END) AS rank_user,
           MIN(CASE WHEN f.rank_row = 1 THEN f.example_item END) AS rank_item,
           SUM(f.score_row) AS score_rows,
           MIN(CASE WHEN f.score_row = 1 THEN f.example_user END) AS score_user,
           MIN(CASE WHEN f.score_row = 1 THEN f.example_item END) AS score_item
    FROM recommendation_examples AS f
),
label_flags AS (
    SELECT g.user_id, g.item_id,
           CASE WHEN g.user_id IS NULL OR (g.item_id IS NULL AND $null_item_marks_empty = 0)
                THEN 1 ELSE 0 END AS null_row,
           CASE WHEN g.item_id IS NOT NULL
                     AND (g.relevance IS NULL OR (g.relevance < 0 AND $negative_relevance = 'error')
                          OR NOT (g.relevance BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308))
                THEN 1 ELSE 0 END AS relevance_row
    FROM ground_truth_input AS g
),
label_texts AS (
    SELECT f.null_row, f.relevance_row,
           CASE WHEN f.null_row + f.relevance_row > 0 THEN CAST(f.user_id AS VARCHAR) END AS u,
           CASE WHEN f.null_row + f.relevance_row > 0 THEN CAST(f.item_id AS VARCHAR) END AS i
    FROM label_flags AS f
),
label_keys AS (
    SELECT x.null_row, x.relevance_row, x.u, x.i,
           MD5(COALESCE(CAST(LENGTH(x.u) AS VARCHAR) || ':' || x.u, 'n') || COALESCE('v' || x.i, 'n')) AS row_key
    FROM label_texts AS x
),
label_examples AS (
    SELECT x.null_row, x.relevance_row,
           x.row_key || COALESCE('v' || x.u, 'n') AS example_user, x.row_key || COALESCE('v' || x.i, 'n') AS example_item
    FROM label_keys AS x
),
label_rows AS (
    SELECT SUM(f.null_row) AS null_rows,
           MIN(CASE WHEN f.null_row = 1 THEN f.example_user END) AS null_user,
           MIN(CASE WHEN f.null_row = 1 THEN f.example_item END) AS null_item,
           SUM(f.relevance_row) AS relevance_rows,
           MIN(CASE WHEN f.relevance_row = 1 THEN f.example_user END) AS relevance_user,
           MIN(CASE WHEN f.relevance_row = 1 THEN f.example_item END) AS relevance_item
    FROM label_examples AS f
),
repeated_items AS (
    SELECT r.user_id, r.item_id, COUNT(*) AS n
    FROM recommendations_input AS r
    WHERE r.user_id IS NOT NULL AND r.item_id IS NOT NULL AND $duplicates = 'error'
    GROUP BY r.user_id, r.item_id
    HAVING COUNT(*) > 1
),
repeated_ranks AS (
    SELECT r.user_id, r.position, COUNT(*) AS n, MIN(CAST(r.item_id AS VARCHAR)) AS item_id
    FROM recommendations_input AS r
    WHERE $by_score = 0 AND r.user_id IS NOT NULL AND r.position IS NOT NULL
    GROUP BY r.user_id, r.position
    HAVING COUNT(*) > 1
),
-- a NULL item marks an empty list (or no labels) only as its user's one row: next to items it would
-- take a rank and shift the items after it; next to labels it would be dropped unseen
lone_marker_recommendations AS (
    SELECT r.user_id, SUM(CASE WHEN r.item_id IS NULL THEN 1 ELSE 0 END) AS n_null
    FROM recommendations_input AS r
    WHERE $null_item_marks_empty = 1 AND r.user_id IS NOT NULL
    GROUP BY r.user_id
    HAVING SUM(CASE WHEN r.item_id IS NULL THEN 1 ELSE 0 END) > 0 AND COUNT(*) > 1
),
lone_marker_labels AS (
    SELECT g.user_id, SUM(CASE WHEN g.item_id IS NULL THEN 1 ELSE 0 END) AS n_null
    FROM ground_truth_input AS g
    WHERE $null_item_marks_empty = 1 AND g.user_id IS NOT NULL
    GROUP BY g.user_id
    HAVING SUM(CASE WHEN g.item_id IS NULL THEN 1 ELSE 0 END) > 0 AND COUNT(*) > 1
),
repeated_labels AS (
    SELECT g.user_id, g.item_id, COUNT(*) AS n
    FROM ground_truth_input AS g
    WHERE g.user_id IS NOT NULL AND g.item_id IS NOT NULL
    GROUP BY g.user_id, g.item_id
    HAVING COUNT(*) > 1
),
-- the offending groups of the checks below, as text, keyed like the rows above
repeated_texts AS (
    SELECT 'lone_recommendations' AS part, CAST(m.user_id AS VARCHAR) AS u, CAST(NULL AS VARCHAR) AS i, m.n_null AS n
    FROM lone_marker_recommendations AS m
    UNION ALL
    SELECT 'ranks', CAST(d.user_id AS VARCHAR), d.item_id, d.n FROM repeated_ranks AS d
    UNION ALL
    SELECT 'items', CAST(d.user_id AS VARCHAR), CAST(d.item_id AS VARCHAR), d.n FROM repeated_items AS d
    UNION ALL
    SELECT 'lone_labels', CAST(m.user_id AS VARCHAR), CAST(NULL AS VARCHAR), m.n_null FROM lone_marker_labels AS m
    UNION ALL
    SELECT 'labels', CAST(d.user_id AS VARCHAR), CAST(d.item_id AS VARCHAR), d.n FROM repeated_labels AS d
),
repeated_keys AS (
    SELECT x.part, x.u, x.i, x.n,
           MD5(COALESCE(CAST(LENGTH(x.u) AS VARCHAR) || ':' || x.u, 'n') || COALESCE('v' || x.i, 'n')) AS row_key
    FROM repeated_texts AS x
),
repeated AS (
    SELECT x.part, SUM(x.n) AS n_rows, MIN(x.row_key || COALESCE('v' || x.u, 'n')) AS example_user,
           MIN(x.row_key || COALESCE('v' || x.i, 'n')) AS example_item
    FROM repeated_keys AS x
    GROUP BY x.part
),
checks AS (
    SELECT 'null_value' AS code, 'recommendations: NULL user, item, rank or score' AS problem,
           s.null_rows AS n_rows, s.null_user AS example_user, s.null_item AS example_item
    FROM recommendation_rows AS s
    UNION ALL
    SELECT 'null_value', 'recommendations: a NULL item next to other rows of its user (an empty list is one row)',
           d.n_rows, d.example_user, d.example_item
    FROM repeated AS d WHERE d.part = 'lone_recommendations'
    UNION ALL
    SELECT 'invalid_rank', 'recommendations: rank below 1 or not an integer', s.rank_rows, s.rank_user, s.rank_item
    FROM recommendation_rows AS s
    UNION ALL
    SELECT 'duplicate_rank', 'recommendations: a rank repeated in one user''s list', d.n_rows, d.example_user,
           d.example_item
    FROM repeated AS d WHERE d.part = 'ranks'
    UNION ALL
    SELECT 'invalid_score', 'recommendations: NaN or infinite score', s.score_rows, s.score_user, s.score_item
    FROM recommendation_rows AS s
    UNION ALL
    SELECT 'duplicate_item', 'recommendations: an item repeated in one user''s list', d.n_rows, d.example_user,
           d.example_item
    FROM repeated AS d WHERE d.part = 'items'
    UNION ALL
    SELECT 'null_value', 'ground truth: NULL user or item', l.null_rows, l.null_user, l.null_item
    FROM label_rows AS l
    UNION ALL
    SELECT 'null_value', 'ground truth: a NULL item next to other rows of its user (no labels is one row)',
           d.n_rows, d.example_user, d.example_item
    FROM repeated AS d WHERE d.part = 'lone_labels'
    UNION ALL
    SELECT 'duplicate_item', 'ground truth: an item labelled twice for one user', d.n_rows, d.example_user,
           d.example_item
    FROM repeated AS d WHERE d.part = 'labels'
    UNION ALL
    SELECT 'invalid_relevance', 'ground truth: NULL, NaN, infinite or negative relevance', l.relevance_rows,
           l.relevance_user, l.relevance_item
    FROM label_rows AS l
)
SELECT c.code, c.problem, CAST(c.n_rows AS BIGINT) AS n_rows,
       CASE WHEN SUBSTRING(c.example_user, 33, 1) = 'v' THEN SUBSTRING(c.example_user, 34) END AS example_user,
       CASE WHEN SUBSTRING(c.example_item, 33, 1) = 'v' THEN SUBSTRING(c.example_item, 34) END AS example_item
FROM checks AS c
WHERE c.n_rows > 0
