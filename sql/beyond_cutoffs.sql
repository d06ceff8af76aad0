-- rankwise: beyond-accuracy stage (issue 10): each cutoff's number, read by sql/beyond_ranks.sql,
-- beyond_exposure.sql and beyond_user.sql as `cutoff_buckets`.
--
-- Inputs: cutoffs(k). Output: k, ix = 1 for the smallest cutoff, 2 for the next, ...: rank bucket ix
-- holds the ranks in (previous cutoff, k], and cutoff number j adds up the buckets 1..j.
SELECT c.k, COUNT(*) AS ix
FROM cutoffs AS c
JOIN cutoffs AS c2 ON c2.k <= c.k
GROUP BY c.k
