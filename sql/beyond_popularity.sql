-- rankwise: beyond-accuracy stage (issue 10): each train item's popularity, computed once per run
-- and read by sql/beyond_user.sql, beyond_catalog.sql and beyond_items.sql as `train_popularity`.
--
-- Input: train(user_id, item_id), one row per interaction (user and item never NULL).
-- Output: item_id, pop_users (distinct train users of the item), pop_rows (its train rows).
-- pop_users is the largest dense rank of the users within the item: a window instead of
-- COUNT(DISTINCT), which took DuckDB 9.7 s per 12M rows against 1.7 s for the window.
SELECT d.item_id, CAST(MAX(d.user_rank) AS BIGINT) AS pop_users, CAST(COUNT(*) AS BIGINT) AS pop_rows
FROM (
    SELECT t.item_id, DENSE_RANK() OVER (PARTITION BY t.item_id ORDER BY t.user_id) AS user_rank
    FROM train AS t
) AS d
GROUP BY d.item_id
