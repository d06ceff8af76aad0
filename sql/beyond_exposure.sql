-- rankwise: beyond-accuracy stage (issue 10): each recommended item's exposure at every cutoff,
-- computed once per run and read by sql/beyond_user.sql, beyond_catalog.sql and beyond_items.sql
-- as `exposure`.
--
-- Inputs: recommendations(user_id, rank, item_id, score) with rank = position 1..n per user (a NULL
-- item_id marks an empty list), the stages cutoff_buckets and rank_buckets (sql/beyond_cutoffs.sql,
-- beyond_ranks.sql).
-- Output: k, item_id, exposure = c(i), the users whose top k holds the item (exposure > 0 only):
-- counted per rank bucket, then summed over the buckets of each cutoff.
WITH
buckets AS (
    SELECT rb.ix, r.item_id, CAST(COUNT(*) AS BIGINT) AS n
    FROM recommendations AS r
    JOIN rank_buckets AS rb ON rb.rank = r.rank
    WHERE r.item_id IS NOT NULL
    GROUP BY rb.ix, r.item_id
)
SELECT ct.k, b.item_id, CAST(SUM(b.n) AS BIGINT) AS exposure
FROM buckets AS b
JOIN cutoff_buckets AS ct ON b.ix <= ct.ix
GROUP BY ct.k, b.item_id
