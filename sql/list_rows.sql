-- rankwise: list-form recommendations -> the recommendation rows sql/per_user.sql needs (DuckDB).
--
-- Inputs: rec_lists(user_id, item_id)               item_id: a list in rank order, no item repeated
--         ground_truth(user_id, item_id, relevance)
-- Output: recommendations(user_id, rank, item_id) holding, instead of every list row,
--   - each list row whose item has a label row, whatever its relevance (the rows a metric gains from, and the
--     judged non-relevant and pooled ones bpref, infAP, num_nonrel_judged_ret, unj and judged count), found by
--     looking each label up in its user's list (rank = its position there);
--   - the last row of each list (per_user.sql takes n_recs as the largest rank);
--   - one row of NULLs for an empty list (the user is present with no items).
-- Every value per_user.sql computes is the same as over all the rows: its other rows earn nothing.
WITH labels AS (
    SELECT g.user_id, list(g.item_id) AS items
    FROM ground_truth AS g
    WHERE g.item_id IS NOT NULL
    GROUP BY g.user_id
),
-- each user's list is read once, for all their labels (a join per label copied the list 12 times)
found AS (
    SELECT l.user_id, UNNEST(list_transform(b.items, lambda x: list_position(l.item_id, x))) AS rank,
           UNNEST(b.items) AS item_id
    FROM rec_lists AS l
    JOIN labels AS b ON b.user_id = l.user_id
)
SELECT f.user_id, CAST(f.rank AS BIGINT) AS rank, f.item_id
FROM found AS f
WHERE f.rank IS NOT NULL
UNION
SELECT l.user_id, CAST(len(l.item_id) AS BIGINT) AS rank, l.item_id[len(l.item_id)] AS item_id
FROM rec_lists AS l
WHERE len(l.item_id) > 0
UNION ALL
SELECT l.user_id, CAST(NULL AS BIGINT) AS rank, NULL AS item_id
FROM rec_lists AS l
WHERE len(l.item_id) = 0
