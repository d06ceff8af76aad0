-- rankwise: the exact checks of the beyond-accuracy side inputs, one row per failed check (no rows:
-- the inputs are valid). The recommendations and the ground truth are checked by sql/checks.sql.
--
-- Inputs (tables or views; one not given is an empty view): train(user_id, item_id),
--        items(item_id), item_features(item_id, feature, value).
-- Output: code, problem, n_rows (offending rows), example_user, example_item (one offending row's, as
-- text), as sql/checks.sql. The same rules as evaluate() (rankwise.engines.beyond.prepare_side_inputs), which
-- raises them as typed errors. NaN and infinite values fail the BETWEEN as in sql/checks.sql.
WITH
-- a NULL train row's user and item from one row, keyed as in sql/checks.sql (the smallest MD5 of the
-- row's user and item, then 'v' || the value or 'n' for NULL)
train_texts AS (
    SELECT CASE WHEN t.user_id IS NULL OR t.item_id IS NULL THEN 1 ELSE 0 END AS null_row,
           CASE WHEN t.user_id IS NULL OR t.item_id IS NULL THEN CAST(t.user_id AS VARCHAR) END AS u,
           CASE WHEN t.user_id IS NULL OR t.item_id IS NULL THEN CAST(t.item_id AS VARCHAR) END AS i
    FROM train AS t
),
train_keys AS (
    SELECT x.null_row, x.u, x.i,
           CASE WHEN x.null_row = 1
                THEN MD5(COALESCE(CAST(LENGTH(x.u) AS VARCHAR) || ':' || x.u, 'n') || COALESCE('v' || x.i, 'n'))
                END AS row_key
    FROM train_texts AS x
),
train_rows AS (
    SELECT SUM(x.null_row) AS null_rows, MIN(x.row_key || COALESCE('v' || x.u, 'n')) AS example_user,
           MIN(x.row_key || COALESCE('v' || x.i, 'n')) AS example_item
    FROM train_keys AS x
),
item_rows AS (
    SELECT SUM(CASE WHEN i.item_id IS NULL THEN 1 ELSE 0 END) AS null_rows
    FROM items AS i
),
feature_rows AS (
    SELECT SUM(CASE WHEN f.item_id IS NULL OR f.feature IS NULL OR f.value IS NULL THEN 1 ELSE 0 END) AS null_rows,
           MIN(CASE WHEN f.feature IS NULL OR f.value IS NULL THEN CAST(f.item_id AS VARCHAR) END) AS null_item,
           SUM(CASE WHEN f.value IS NOT NULL
                         AND NOT (f.value BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308)
                    THEN 1 ELSE 0 END) AS value_rows,
           MIN(CASE WHEN f.value IS NOT NULL
                         AND NOT (f.value BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308)
                    THEN CAST(f.item_id AS VARCHAR) END) AS value_item
    FROM item_features AS f
),
repeated_features AS (
    SELECT f.item_id, f.feature, COUNT(*) AS n
    FROM item_features AS f
    WHERE f.item_id IS NOT NULL AND f.feature IS NOT NULL
    GROUP BY f.item_id, f.feature
    HAVING COUNT(*) > 1
),
checks AS (
    SELECT 'null_value' AS code, 'train: NULL user or item' AS problem, s.null_rows AS n_rows,
           CASE WHEN SUBSTRING(s.example_user, 33, 1) = 'v' THEN SUBSTRING(s.example_user, 34) END AS example_user,
           CASE WHEN SUBSTRING(s.example_item, 33, 1) = 'v' THEN SUBSTRING(s.example_item, 34) END AS example_item
    FROM train_rows AS s
    UNION ALL
    SELECT 'null_value', 'items: NULL item', s.null_rows, NULL, NULL
    FROM item_rows AS s
    UNION ALL
    SELECT 'null_value', 'item_features: NULL item, feature or value', s.null_rows, NULL, s.null_item
    FROM feature_rows AS s
    UNION ALL
    SELECT 'invalid_value', 'item_features: NaN or infinite value', s.value_rows, NULL, s.value_item
    FROM feature_rows AS s
    UNION ALL
    SELECT 'duplicate_item', 'item_features: a feature repeated for one item', SUM(d.n), NULL,
           MIN(CAST(d.item_id AS VARCHAR))
    FROM repeated_features AS d
)
SELECT c.code, c.problem, CAST(c.n_rows AS BIGINT) AS n_rows, c.example_user, c.example_item
FROM checks AS c
WHERE c.n_rows > 0
