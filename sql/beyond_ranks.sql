-- rankwise: beyond-accuracy stage (issue 10): the cutoff bucket of each rank, read by
-- sql/beyond_exposure.sql and beyond_user.sql as `rank_buckets`.
--
-- Inputs: recommendations(user_id, rank, item_id, score), the stage cutoff_buckets (sql/beyond_cutoffs.sql).
-- Output: rank, ix: one row per rank <= max(k) in the recommendations; ix = 1 for the smallest k >=
-- rank, 2 for the next cutoff, ... A list row is counted once, in its bucket, and cutoff number j
-- adds up the buckets 1..j: one pass over the rows whatever the number of cutoffs (an equality join
-- on rank, which the engines plan better than a range join of every row).
SELECT d.rank, MIN(ct.ix) AS ix
FROM (SELECT DISTINCT r.rank FROM recommendations AS r WHERE r.item_id IS NOT NULL) AS d
JOIN cutoff_buckets AS ct ON d.rank <= ct.k
GROUP BY d.rank
