-- rankwise: the exact input checks, one row per failed check (no rows: the inputs are valid).
--
-- Input: recommendations_input (user_id, item_id, position, score): the caller's rows as they are,
--        position = the rank column as DOUBLE (NULL when ranking by score; a fractional rank must
--        reach the check, not be rounded to an integer on the way), score = the score column as
--        DOUBLE (NULL when ranking by rank); ground_truth_input (user_id, item_id, relevance).
-- Parameters: $by_score 1 when ranks come from scores, else 0; $duplicates 'error' | 'first_shift';
--             $null_item_marks_empty 1 when a row with a NULL item (and NULL rank or score) stands
--             for a user with an empty list (or no labels), as in the rendered scripts (a table
--             cannot hold an empty list), valid only as that user's one row; 0 when a NULL item is
--             an error, as in evaluate().
-- Output: code, problem, n_rows (offending rows), example_user, example_item (the smallest, as text).
-- The same rules as evaluate() (rankwise._inputs), which raises the same codes as typed errors.
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
recommendation_rows AS (
    SELECT SUM(f.null_row) AS null_rows,
           MIN(CASE WHEN f.null_row = 1 THEN CAST(f.user_id AS VARCHAR) END) AS null_user,
           MIN(CASE WHEN f.null_row = 1 THEN CAST(f.item_id AS VARCHAR) END) AS null_item,
           SUM(f.rank_row) AS rank_rows,
           MIN(CASE WHEN f.rank_row = 1 THEN CAST(f.user_id AS VARCHAR) END) AS rank_user,
           MIN(CASE WHEN f.rank_row = 1 THEN CAST(f.item_id AS VARCHAR) END) AS rank_item,
           SUM(f.score_row) AS score_rows,
           MIN(CASE WHEN f.score_row = 1 THEN CAST(f.user_id AS VARCHAR) END) AS score_user,
           MIN(CASE WHEN f.score_row = 1 THEN CAST(f.item_id AS VARCHAR) END) AS score_item
    FROM recommendation_flags AS f
),
label_flags AS (
    SELECT g.user_id, g.item_id,
           CASE WHEN g.user_id IS NULL OR (g.item_id IS NULL AND $null_item_marks_empty = 0)
                THEN 1 ELSE 0 END AS null_row,
           CASE WHEN g.item_id IS NOT NULL
                     AND (g.relevance IS NULL OR g.relevance < 0
                          OR NOT (g.relevance BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308))
                THEN 1 ELSE 0 END AS relevance_row
    FROM ground_truth_input AS g
),
label_rows AS (
    SELECT SUM(f.null_row) AS null_rows,
           MIN(CASE WHEN f.null_row = 1 THEN CAST(f.user_id AS VARCHAR) END) AS null_user,
           MIN(CASE WHEN f.null_row = 1 THEN CAST(f.item_id AS VARCHAR) END) AS null_item,
           SUM(f.relevance_row) AS relevance_rows,
           MIN(CASE WHEN f.relevance_row = 1 THEN CAST(f.user_id AS VARCHAR) END) AS relevance_user,
           MIN(CASE WHEN f.relevance_row = 1 THEN CAST(f.item_id AS VARCHAR) END) AS relevance_item
    FROM label_flags AS f
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
checks AS (
    SELECT 'null_value' AS code, 'recommendations: NULL user, item, rank or score' AS problem,
           s.null_rows AS n_rows, s.null_user AS example_user, s.null_item AS example_item
    FROM recommendation_rows AS s
    UNION ALL
    SELECT 'null_value', 'recommendations: a NULL item next to other rows of its user (an empty list is one row)',
           SUM(m.n_null), MIN(CAST(m.user_id AS VARCHAR)), NULL
    FROM lone_marker_recommendations AS m
    UNION ALL
    SELECT 'invalid_rank', 'recommendations: rank below 1 or not an integer', s.rank_rows, s.rank_user, s.rank_item
    FROM recommendation_rows AS s
    UNION ALL
    SELECT 'duplicate_rank', 'recommendations: a rank repeated in one user''s list', SUM(d.n),
           MIN(CAST(d.user_id AS VARCHAR)), MIN(CAST(d.item_id AS VARCHAR))
    FROM repeated_ranks AS d
    UNION ALL
    SELECT 'invalid_score', 'recommendations: NaN or infinite score', s.score_rows, s.score_user, s.score_item
    FROM recommendation_rows AS s
    UNION ALL
    SELECT 'duplicate_item', 'recommendations: an item repeated in one user''s list', SUM(d.n),
           MIN(CAST(d.user_id AS VARCHAR)), MIN(CAST(d.item_id AS VARCHAR))
    FROM repeated_items AS d
    UNION ALL
    SELECT 'null_value', 'ground truth: NULL user or item', l.null_rows, l.null_user, l.null_item
    FROM label_rows AS l
    UNION ALL
    SELECT 'null_value', 'ground truth: a NULL item next to other rows of its user (no labels is one row)',
           SUM(m.n_null), MIN(CAST(m.user_id AS VARCHAR)), NULL
    FROM lone_marker_labels AS m
    UNION ALL
    SELECT 'duplicate_item', 'ground truth: an item labelled twice for one user', SUM(d.n),
           MIN(CAST(d.user_id AS VARCHAR)), MIN(CAST(d.item_id AS VARCHAR))
    FROM repeated_labels AS d
    UNION ALL
    SELECT 'invalid_relevance', 'ground truth: NULL, NaN, infinite or negative relevance', l.relevance_rows,
           l.relevance_user, l.relevance_item
    FROM label_rows AS l
)
SELECT c.code, c.problem, CAST(c.n_rows AS BIGINT) AS n_rows, c.example_user, c.example_item
FROM checks AS c
WHERE c.n_rows > 0
