-- rankwise: beyond-accuracy per-user metrics (issue 10), one row per (user, k).
--
-- Inputs (tables or views):
--   recommendations(user_id, rank, item_id, score)  rank = position 1..n per user (so a user with
--                                                    items has one at rank 1, inside every cutoff);
--                                                    a NULL item_id marks a user whose list is empty
--   train(user_id, item_id)                          training interactions, one row each
--   train_popularity, cutoff_buckets, rank_buckets,  the stages sql/beyond_popularity.sql,
--   exposure                                         beyond_cutoffs.sql, beyond_ranks.sql and
--                                                    beyond_exposure.sql, computed once per run
--   items(item_id)                                   the catalog (may be empty: then the train items)
--   item_features(item_id, feature, value)           long feature vectors (may be empty: ild NULL)
--   ground_truth(user_id, item_id, relevance)        relevance for serendipity (may be empty: 0)
--   cutoffs(k)
-- Parameters (Convention knobs, documented in rankwise.conventions and docs/beyond_accuracy.md):
--   $popularity, $arp_popularity, $serendipity_popularity   'users' | 'rows'
--   $cold_items 'as_one' | 'drop' | 'zero_novelty'     $list_denominator 'n_u' | 'k'
--   $novelty_normalize 'none' | 'log_users'            $info_log_base > 1
--   $long_tail 'head_share' | 'tail_items'             $long_tail_ratio > 0
--   $catalog 'items' | 'train' | 'recommended'         $ild_denominator 'pairs' | 'n_u'
--   $ild_short 'nan' | 'zero'                          $relevance_threshold
-- Output: user_id, k, n_items, novelty, arp, long_tail_share, ild, serendipity (NULL = undefined).
-- Formulas (L_u = items with rank <= k, pop(i) from train, U_T = distinct train users or rows):
--   novelty = mean over L_u of -log_b(max(pop(i), 1) / U_T)     arp = mean over L_u of pop(i)
--   long_tail_share = share of L_u in the tail
--   ild = sum over pairs of (1 - cos) / pairs, with sum_{i<j} cos = (|sum_i unit(f_i)|^2 - m) / 2 (the sum
--         of 1 - cos kept in [0, 2 pairs]: float rounding put parallel items at -4e-16)
--   serendipity = mean over L_u of max((N+1-rank)/N - (N+1-poprank(i))/N, 0) * rel(u, i), N = |C|
-- Each list row is read once: summed in its rank bucket (rank_buckets), a cutoff adds up the buckets
-- up to it. The float terms (novelty, serendipity, ild) are summed exactly, in units of 1e-18
-- (DECIMAL(38, 0) of term * 1e18: the same sum in any order, so a user's value does not depend on
-- which thread added which row; the rounding to 1e-18 is far below a double's last bit at these
-- magnitudes). Scale 0, not DECIMAL(38, 18): DuckDB converts a scale-18 decimal to DOUBLE exactly
-- but slowly (0.5 s per 2M sums), a scale-0 one at integer speed. Item values come from one row per
-- recommended item (`warm` = has train rows), so every join of list rows is an inner join and no
-- joined column is tested for NULL.
WITH
totals AS (
    SELECT CASE WHEN $popularity = 'users' THEN CAST(COUNT(DISTINCT t.user_id) AS DOUBLE)
                ELSE CAST(COUNT(*) AS DOUBLE) END AS total
    FROM train AS t
),
popularity AS (
    SELECT p.item_id,
           CAST(CASE WHEN $popularity = 'users' THEN p.pop_users ELSE p.pop_rows END AS DOUBLE) AS pop,
           CAST(CASE WHEN $arp_popularity = 'users' THEN p.pop_users ELSE p.pop_rows END AS DOUBLE) AS apop,
           CAST(CASE WHEN $serendipity_popularity = 'users' THEN p.pop_users ELSE p.pop_rows END AS DOUBLE) AS spop
    FROM train_popularity AS p
),
-- the long tail: outside the short head (most popular first, ties by id, until the head holds
-- $long_tail_ratio of sum pop), or the least popular share of train items / pop <= ratio; one sort,
-- in the order the rule reads (pop descending for the head, ascending for the tail items)
tail_order AS (
    SELECT p.item_id, p.pop,
           SUM(p.pop) OVER (ORDER BY CASE WHEN $long_tail = 'head_share' THEN -p.pop ELSE p.pop END, p.item_id
                            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - p.pop AS pop_before,
           ROW_NUMBER() OVER (ORDER BY CASE WHEN $long_tail = 'head_share' THEN -p.pop ELSE p.pop END,
                                       p.item_id) AS position,
           SUM(p.pop) OVER () AS pop_sum,
           COUNT(*) OVER () AS n_train_items
    FROM popularity AS p
),
-- serendipity's popularity rank: 1 + the number of distinct popularity values above the item's
pop_ranks AS (
    SELECT v.spop, CAST(DENSE_RANK() OVER (ORDER BY v.spop DESC) AS DOUBLE) AS poprank
    FROM (SELECT DISTINCT p.spop FROM popularity AS p) AS v
),
item_stats AS (
    SELECT h.item_id, 1 AS warm, h.pop, p.apop, r.poprank,
           CASE WHEN $long_tail = 'head_share'
                THEN (CASE WHEN h.pop_before >= $long_tail_ratio * h.pop_sum THEN 1 ELSE 0 END)
                WHEN $long_tail_ratio > 1 THEN (CASE WHEN h.pop <= $long_tail_ratio THEN 1 ELSE 0 END)
                ELSE (CASE WHEN CAST(h.position AS DOUBLE)
                                <= GREATEST(FLOOR($long_tail_ratio * CAST(h.n_train_items AS DOUBLE)), 1.0)
                           THEN 1 ELSE 0 END) END AS is_tail
    FROM tail_order AS h
    JOIN popularity AS p ON p.item_id = h.item_id
    JOIN pop_ranks AS r ON r.spop = p.spop
),
-- one row per recommended item; a cold item (no train row) has warm = 0
item_values AS (
    SELECT ri.item_id, COALESCE(s.warm, 0) AS warm, COALESCE(s.pop, 0.0) AS pop, COALESCE(s.apop, 0.0) AS apop,
           COALESCE(s.poprank, 0.0) AS poprank,
           CASE WHEN COALESCE(s.warm, 0) = 1 THEN s.is_tail
                WHEN $long_tail = 'head_share' THEN 1 ELSE 0 END AS is_tail
    FROM (SELECT DISTINCT e.item_id FROM exposure AS e) AS ri
    LEFT JOIN item_stats AS s ON s.item_id = ri.item_id
),
terms AS (
    SELECT v.item_id, v.warm, v.poprank,
           CASE WHEN $cold_items = 'drop' AND v.warm = 0 THEN 0 ELSE 1 END AS counted,
           CAST(CASE WHEN $cold_items = 'drop' AND v.warm = 0 THEN CAST(NULL AS DOUBLE)
                     WHEN $cold_items = 'zero_novelty' AND v.warm = 0 THEN 0.0
                     ELSE -LN(GREATEST(v.pop, 1.0) / GREATEST(t.total, 1.0))
                          / (CASE WHEN $novelty_normalize = 'log_users' AND t.total > 1 THEN LN(t.total)
                                  WHEN $novelty_normalize = 'log_users' THEN 1.0
                                  ELSE LN($info_log_base) END) END * 1e18 AS DECIMAL(38, 0)) AS info,
           CASE WHEN $cold_items = 'drop' AND v.warm = 0 THEN CAST(NULL AS DOUBLE) ELSE v.apop END AS apop,
           CAST(v.is_tail AS DOUBLE) AS tail
    FROM item_values AS v
    CROSS JOIN totals AS t
),
buckets AS (
    SELECT r.user_id, rb.ix, CAST(COUNT(*) AS BIGINT) AS n_items, CAST(SUM(m.counted) AS BIGINT) AS n_counted,
           SUM(m.info) AS info_sum, SUM(m.apop) AS apop_sum, SUM(m.tail) AS tail_sum
    FROM recommendations AS r
    JOIN rank_buckets AS rb ON rb.rank = r.rank
    JOIN terms AS m ON m.item_id = r.item_id
    GROUP BY r.user_id, rb.ix
),
sums AS (
    SELECT b.user_id, ct.k, CAST(SUM(b.n_items) AS BIGINT) AS n_items, CAST(SUM(b.n_counted) AS BIGINT) AS n_counted,
           COALESCE(SUM(b.info_sum), CAST(0 AS DECIMAL(38, 0))) AS info_sum, COALESCE(SUM(b.apop_sum), 0.0) AS apop_sum,
           SUM(b.tail_sum) AS tail_sum
    FROM buckets AS b
    JOIN cutoff_buckets AS ct ON b.ix <= ct.ix
    GROUP BY b.user_id, ct.k
),
n_items_given AS (
    SELECT COUNT(*) AS n FROM items
),
catalog AS (
    SELECT CAST(c.k AS BIGINT) AS k, i.item_id
    FROM items AS i CROSS JOIN cutoffs AS c CROSS JOIN n_items_given AS g
    WHERE $catalog = 'items' AND g.n > 0
    UNION ALL
    SELECT CAST(c.k AS BIGINT) AS k, tp.item_id
    FROM train_popularity AS tp CROSS JOIN cutoffs AS c CROSS JOIN n_items_given AS g
    WHERE $catalog = 'train' OR ($catalog = 'items' AND g.n = 0)
    UNION ALL
    SELECT e.k, e.item_id
    FROM exposure AS e
    WHERE $catalog = 'recommended'
),
catalog_size AS (
    SELECT ct.k, CAST(COUNT(*) AS DOUBLE) AS n FROM catalog AS ct GROUP BY ct.k
),
relevant AS (
    SELECT DISTINCT g.user_id, g.item_id, 1.0 AS rel
    FROM ground_truth AS g
    WHERE g.item_id IS NOT NULL AND g.relevance > 0 AND g.relevance >= $relevance_threshold
),
-- serendipity: only the list rows with a relevant label count (the term is 0 elsewhere)
seren AS (
    SELECT r.user_id, CAST(c.k AS BIGINT) AS k,
           SUM(CAST(GREATEST((cs.n + 1.0 - CAST(r.rank AS DOUBLE)) / cs.n
                             - (CASE WHEN m.warm = 1 THEN (cs.n + 1.0 - m.poprank) / cs.n ELSE 0.0 END),
                             0.0)
                    * g.rel * 1e18 AS DECIMAL(38, 0))) AS seren_sum
    FROM recommendations AS r
    JOIN relevant AS g ON g.user_id = r.user_id AND g.item_id = r.item_id
    JOIN cutoffs AS c ON r.rank <= c.k
    JOIN terms AS m ON m.item_id = r.item_id
    JOIN catalog_size AS cs ON cs.k = c.k
    GROUP BY r.user_id, c.k
),
-- ild without pairs: unit vectors, their sum per list, its squared norm. Each vector is first divided
-- by its largest |value| (x in [-1, 1]), so that its squared norm can neither overflow (values near
-- 1e160) nor underflow to 0 (near 1e-160); a zero vector has no largest value and no direction. (The
-- divisors are NULL rather than 0: an engine may compute the projection before the WHERE, and BigQuery
-- and Spark in ANSI mode raise on a division by zero; where sq > 0 the value is the same.) The squared
-- norm is an exact sum too (units of 1e-18: x^2 <= 1 and the largest term is 1, so the rounding is below the
-- double's last bit; x / sqrt(sq 1e-18) 1e18 = x 1e27 / sqrt(sq)): a float window sum adds an item's rows
-- in the threads' order when they are scattered.
unit AS (
    SELECT v.item_id, v.feature, CAST(v.x * 1e27 / NULLIF(SQRT(CAST(v.sq AS DOUBLE)), 0.0) AS DECIMAL(38, 0)) AS u
    FROM (SELECT s.item_id, s.feature, s.x,
                 SUM(CAST(s.x * s.x * 1e18 AS DECIMAL(38, 0))) OVER (PARTITION BY s.item_id) AS sq
          FROM (SELECT f.item_id, f.feature,
                       f.value / NULLIF(MAX(ABS(f.value)) OVER (PARTITION BY f.item_id), 0.0) AS x
                FROM item_features AS f) AS s) AS v
    WHERE v.sq > 0
),
unit_items AS (
    SELECT DISTINCT un.item_id FROM unit AS un
),
ild_m AS (
    SELECT r.user_id, CAST(c.k AS BIGINT) AS k, CAST(COUNT(*) AS DOUBLE) AS m
    FROM recommendations AS r
    JOIN unit_items AS ui ON ui.item_id = r.item_id
    JOIN cutoffs AS c ON r.rank <= c.k
    GROUP BY r.user_id, c.k
),
ild_s AS (
    SELECT r.user_id, CAST(c.k AS BIGINT) AS k, un.feature, SUM(un.u) AS s
    FROM recommendations AS r
    JOIN unit AS un ON un.item_id = r.item_id
    JOIN cutoffs AS c ON r.rank <= c.k
    GROUP BY r.user_id, c.k, un.feature
),
ild_q AS (
    SELECT x.user_id, x.k, SUM(CAST((CAST(x.s AS DOUBLE) / 1e18) * (CAST(x.s AS DOUBLE) / 1e18) * 1e18
                                    AS DECIMAL(38, 0))) AS q
    FROM ild_s AS x
    GROUP BY x.user_id, x.k
),
n_features AS (
    SELECT COUNT(*) AS n FROM item_features
),
-- the users with items (each has rank 1, so a row at every k) and the users with an empty list
lists AS (
    SELECT s.user_id, CAST(s.k AS BIGINT) AS k, s.n_items, s.n_counted, s.info_sum, s.apop_sum, s.tail_sum
    FROM sums AS s
    UNION ALL
    SELECT r.user_id, CAST(c.k AS BIGINT) AS k, CAST(0 AS BIGINT) AS n_items, CAST(0 AS BIGINT) AS n_counted,
           CAST(0 AS DECIMAL(38, 0)) AS info_sum, 0.0 AS apop_sum, 0.0 AS tail_sum
    FROM recommendations AS r
    CROSS JOIN cutoffs AS c
    WHERE r.item_id IS NULL
),
per_user AS (
    SELECT l.user_id, l.k, l.n_items, l.n_counted, CAST(l.info_sum AS DOUBLE) / 1e18 AS info_sum, l.apop_sum,
           l.tail_sum, CAST(COALESCE(sr.seren_sum, 0) AS DOUBLE) / 1e18 AS seren_sum,
           COALESCE(im.m, 0.0) AS m, CAST(COALESCE(iq.q, 0) AS DOUBLE) / 1e18 AS q, nf.n AS n_features
    FROM lists AS l
    CROSS JOIN n_features AS nf
    LEFT JOIN seren AS sr ON sr.user_id = l.user_id AND sr.k = l.k
    LEFT JOIN ild_m AS im ON im.user_id = l.user_id AND im.k = l.k
    LEFT JOIN ild_q AS iq ON iq.user_id = l.user_id AND iq.k = l.k
),
-- >>> generated from the metric declarations (rankwise.metrics.declarations) by python -m rankwise.generate.sql: do not edit
-- the terms several metrics share (rankwise.metrics.formulas.BEYOND_TERMS)
denominators AS (
    SELECT p.*, t.total,
           CASE WHEN $list_denominator = 'k' THEN CAST(p.k AS DOUBLE)
                ELSE NULLIF(CAST(p.n_items AS DOUBLE), 0.0) END AS den_all,
           CASE WHEN $list_denominator = 'k' THEN CAST(p.k AS DOUBLE)
                ELSE NULLIF(CAST(p.n_counted AS DOUBLE), 0.0) END AS den_counted,
           p.m * (p.m - 1.0) / 2.0 AS pairs
    FROM per_user AS p
    CROSS JOIN totals AS t
)
SELECT d.user_id, d.k, d.n_items,
       CASE WHEN $novelty_normalize = 'log_users' AND d.total <= 1 THEN CAST(NULL AS DOUBLE)
            ELSE d.info_sum / d.den_counted END AS novelty,
       d.apop_sum / d.den_counted AS arp,
       d.tail_sum / d.den_all AS long_tail_share,
       CASE WHEN d.n_features = 0 THEN CAST(NULL AS DOUBLE)
            WHEN d.m < 2 THEN (CASE WHEN $ild_short = 'zero' THEN 0.0 ELSE CAST(NULL AS DOUBLE) END)
            ELSE LEAST(GREATEST(d.pairs - (d.q - d.m) / 2.0, 0.0), 2.0 * d.pairs) / (CASE WHEN $ild_denominator = 'pairs' THEN d.pairs ELSE d.m END) END AS ild,
       d.seren_sum / d.den_all AS serendipity
FROM denominators AS d
