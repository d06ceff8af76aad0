-- rankwise: beyond-accuracy per-user metrics (issue 10), one row per (user, k).
--
-- Inputs (tables or views):
--   recommendations(user_id, rank, item_id, score)  rank = position 1..n; a NULL item_id marks a
--                                                    user whose list is empty (score unused here)
--   train(user_id, item_id)                          training interactions, one row each
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
--   ild = sum over pairs of (1 - cos) / pairs, with sum_{i<j} cos = (|sum_i unit(f_i)|^2 - m) / 2
--   serendipity = mean over L_u of max((N+1-rank)/N - (N+1-poprank(i))/N, 0) * rel(u, i), N = |C|
WITH
pop AS (
    SELECT t.item_id, CAST(COUNT(DISTINCT t.user_id) AS BIGINT) AS pop_users, CAST(COUNT(*) AS BIGINT) AS pop_rows
    FROM train AS t
    GROUP BY t.item_id
),
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
    FROM pop AS p
),
-- the long tail: outside the short head (most popular first, ties by id, until the head holds
-- $long_tail_ratio of sum pop), or the least popular share of train items / pop <= ratio
head_order AS (
    SELECT p.item_id, p.pop, p.spop,
           SUM(p.pop) OVER (ORDER BY p.pop DESC, p.item_id ASC
                            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - p.pop AS pop_before,
           ROW_NUMBER() OVER (ORDER BY p.pop ASC, p.item_id ASC) AS asc_pos,
           SUM(p.pop) OVER () AS pop_sum,
           COUNT(*) OVER () AS n_train_items,
           DENSE_RANK() OVER (ORDER BY p.spop DESC) AS poprank
    FROM popularity AS p
),
item_stats AS (
    SELECT h.item_id, h.pop, p.apop, CAST(h.poprank AS DOUBLE) AS poprank,
           CASE WHEN $long_tail = 'head_share'
                THEN (CASE WHEN h.pop_before >= $long_tail_ratio * h.pop_sum THEN 1 ELSE 0 END)
                WHEN $long_tail_ratio > 1 THEN (CASE WHEN h.pop <= $long_tail_ratio THEN 1 ELSE 0 END)
                ELSE (CASE WHEN CAST(h.asc_pos AS DOUBLE)
                                <= GREATEST(FLOOR($long_tail_ratio * CAST(h.n_train_items AS DOUBLE)), 1.0)
                           THEN 1 ELSE 0 END) END AS is_tail
    FROM head_order AS h
    JOIN popularity AS p ON p.item_id = h.item_id
),
top AS (
    SELECT r.user_id, CAST(c.k AS BIGINT) AS k, r.item_id, CAST(r.rank AS DOUBLE) AS rank
    FROM recommendations AS r
    JOIN cutoffs AS c ON r.rank <= c.k
    WHERE r.item_id IS NOT NULL
),
n_items_given AS (
    SELECT COUNT(*) AS n FROM items
),
catalog AS (
    SELECT CAST(c.k AS BIGINT) AS k, i.item_id
    FROM items AS i CROSS JOIN cutoffs AS c CROSS JOIN n_items_given AS g
    WHERE $catalog = 'items' AND g.n > 0
    UNION ALL
    SELECT CAST(c.k AS BIGINT) AS k, t.item_id
    FROM (SELECT DISTINCT tr.item_id FROM train AS tr) AS t CROSS JOIN cutoffs AS c CROSS JOIN n_items_given AS g
    WHERE $catalog = 'train' OR ($catalog = 'items' AND g.n = 0)
    UNION ALL
    SELECT DISTINCT tp.k, tp.item_id
    FROM top AS tp
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
terms AS (
    SELECT tp.user_id, tp.k,
           CASE WHEN $cold_items = 'drop' AND s.item_id IS NULL THEN 0 ELSE 1 END AS counted,
           CASE WHEN $cold_items = 'drop' AND s.item_id IS NULL THEN CAST(NULL AS DOUBLE)
                WHEN $cold_items = 'zero_novelty' AND s.item_id IS NULL THEN 0.0
                ELSE -LN(GREATEST(COALESCE(s.pop, 0.0), 1.0) / t.total)
                     / (CASE WHEN $novelty_normalize = 'log_users' THEN NULLIF(LN(t.total), 0.0)
                             ELSE LN($info_log_base) END) END AS info,
           CASE WHEN $cold_items = 'drop' AND s.item_id IS NULL THEN CAST(NULL AS DOUBLE)
                ELSE COALESCE(s.apop, 0.0) END AS apop,
           CAST(COALESCE(s.is_tail, CASE WHEN $long_tail = 'head_share' THEN 1 ELSE 0 END) AS DOUBLE) AS tail,
           GREATEST((cs.n + 1.0 - tp.rank) / cs.n - COALESCE((cs.n + 1.0 - s.poprank) / cs.n, 0.0), 0.0)
               * COALESCE(g.rel, 0.0) AS seren
    FROM top AS tp
    CROSS JOIN totals AS t
    LEFT JOIN item_stats AS s ON s.item_id = tp.item_id
    LEFT JOIN catalog_size AS cs ON cs.k = tp.k
    LEFT JOIN relevant AS g ON g.user_id = tp.user_id AND g.item_id = tp.item_id
),
sums AS (
    SELECT m.user_id, m.k, CAST(COUNT(*) AS BIGINT) AS n_items, CAST(SUM(m.counted) AS BIGINT) AS n_counted,
           COALESCE(SUM(m.info), 0.0) AS info_sum, COALESCE(SUM(m.apop), 0.0) AS apop_sum,
           SUM(m.tail) AS tail_sum, SUM(m.seren) AS seren_sum
    FROM terms AS m
    GROUP BY m.user_id, m.k
),
-- ild without pairs: unit vectors, their sum per list, its squared norm
unit AS (
    SELECT v.item_id, v.feature, v.value / SQRT(v.sq) AS u
    FROM (SELECT f.item_id, f.feature, f.value,
                 SUM(f.value * f.value) OVER (PARTITION BY f.item_id) AS sq
          FROM item_features AS f) AS v
    WHERE v.sq > 0
),
unit_items AS (
    SELECT DISTINCT un.item_id FROM unit AS un
),
ild_m AS (
    SELECT tp.user_id, tp.k, CAST(COUNT(*) AS DOUBLE) AS m
    FROM top AS tp JOIN unit_items AS ui ON ui.item_id = tp.item_id
    GROUP BY tp.user_id, tp.k
),
ild_s AS (
    SELECT tp.user_id, tp.k, un.feature, SUM(un.u) AS s
    FROM top AS tp JOIN unit AS un ON un.item_id = tp.item_id
    GROUP BY tp.user_id, tp.k, un.feature
),
ild_q AS (
    SELECT x.user_id, x.k, SUM(x.s * x.s) AS q FROM ild_s AS x GROUP BY x.user_id, x.k
),
n_features AS (
    SELECT COUNT(*) AS n FROM item_features
),
users AS (
    SELECT DISTINCT r.user_id FROM recommendations AS r
),
per_user AS (
    SELECT u.user_id, CAST(c.k AS BIGINT) AS k,
           COALESCE(s.n_items, 0) AS n_items, COALESCE(s.n_counted, 0) AS n_counted,
           COALESCE(s.info_sum, 0.0) AS info_sum, COALESCE(s.apop_sum, 0.0) AS apop_sum,
           COALESCE(s.tail_sum, 0.0) AS tail_sum, COALESCE(s.seren_sum, 0.0) AS seren_sum,
           COALESCE(im.m, 0.0) AS m, COALESCE(iq.q, 0.0) AS q, nf.n AS n_features
    FROM users AS u
    CROSS JOIN cutoffs AS c
    CROSS JOIN n_features AS nf
    LEFT JOIN sums AS s ON s.user_id = u.user_id AND s.k = c.k
    LEFT JOIN ild_m AS im ON im.user_id = u.user_id AND im.k = c.k
    LEFT JOIN ild_q AS iq ON iq.user_id = u.user_id AND iq.k = c.k
),
denominators AS (
    SELECT p.*,
           CASE WHEN $list_denominator = 'k' THEN CAST(p.k AS DOUBLE)
                ELSE NULLIF(CAST(p.n_items AS DOUBLE), 0.0) END AS den_all,
           CASE WHEN $list_denominator = 'k' THEN CAST(p.k AS DOUBLE)
                ELSE NULLIF(CAST(p.n_counted AS DOUBLE), 0.0) END AS den_counted,
           p.m * (p.m - 1.0) / 2.0 AS pairs
    FROM per_user AS p
)
SELECT d.user_id, d.k, d.n_items,
       CASE WHEN $novelty_normalize = 'log_users' AND t.total <= 1 THEN CAST(NULL AS DOUBLE)
            ELSE d.info_sum / d.den_counted END AS novelty,
       d.apop_sum / d.den_counted AS arp,
       d.tail_sum / d.den_all AS long_tail_share,
       CASE WHEN d.n_features = 0 THEN CAST(NULL AS DOUBLE)
            WHEN d.m < 2 THEN (CASE WHEN $ild_short = 'zero' THEN 0.0 ELSE CAST(NULL AS DOUBLE) END)
            ELSE (d.pairs - (d.q - d.m) / 2.0)
                 / (CASE WHEN $ild_denominator = 'pairs' THEN d.pairs ELSE d.m END) END AS ild,
       d.seren_sum / d.den_all AS serendipity
FROM denominators AS d
CROSS JOIN totals AS t
