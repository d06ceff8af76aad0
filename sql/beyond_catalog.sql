-- rankwise: beyond-accuracy catalog metrics (issue 10), one row per (metric, k).
--
-- Inputs: recommendations(user_id, rank, item_id, score), items(item_id) (may be empty: then C = the
-- train items), cutoffs(k), and the stages train_popularity (sql/beyond_popularity.sql) and exposure
-- (sql/beyond_exposure.sql). See sql/beyond_user.sql.
-- Parameters: $catalog 'items' | 'train' | 'recommended'; $catalog_outside 'ignore' | 'count';
--   $catalog_padding 0 | 1; $coverage_scale 'ratio' | 'count' | 'percent';
--   $gini 'catalog' | 'catalog_n1' | 'recommended_n1' | 'catalog_n1_complement';
--   $info_log_base > 1; $entropy_normalize 'none' | 'distinct'; $personalization_lists 'actual' | 'full'
-- Output: metric, k, value, n_users (users with at least one item at rank <= k); NULL = undefined.
-- The sums over items are exact (integers, or c ln c in units of 1e-18): the same in any order, so
-- the values do not depend on which thread added which item.
-- Written by hand: the per-k statistics (per_k). Generated below the marker, from the declarations
-- (rankwise.metrics.declarations.BEYOND, by python -m rankwise.generate.sql): each metric's value over them.
--   item_coverage     covered / (|C| + padding), covered = |union L_u ∩ C| (or |union L_u|)
--   gini              sum_j (2j - N - 1) c_(j) / (D sum c), c ascending, over C ∪ recommended
--   exposure_entropy  -sum p log_b p, p = c / sum c, computed as (ln C - sum c ln c / C) / ln b
--   personalization   1 - (sum c^2 - sum n_u) / (k U (U - 1))      (linear time: exposure counts)
--   score_entropy     Shannon entropy (nats) of the softmax of the pooled top-k scores: ln Z - sum e^d d / Z
WITH
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
all_items AS (
    SELECT COALESCE(e.k, ct.k) AS k, COALESCE(e.exposure, 0) AS exposure,
           CASE WHEN ct.item_id IS NULL THEN 0 ELSE 1 END AS in_c
    FROM exposure AS e
    FULL OUTER JOIN catalog AS ct ON ct.k = e.k AND ct.item_id = e.item_id
),
item_stats AS (
    SELECT a.k,
           CAST(SUM(a.in_c) AS DOUBLE) AS n_c,
           CAST(SUM(CASE WHEN a.exposure > 0 AND a.in_c = 1 THEN 1 ELSE 0 END) AS DOUBLE) AS covered_in,
           CAST(SUM(CASE WHEN a.exposure > 0 THEN 1 ELSE 0 END) AS DOUBLE) AS n_exposed,
           CAST(COUNT(*) AS DOUBLE) AS n_all,
           CAST(SUM(a.exposure) AS DOUBLE) AS c_sum,
           CAST(SUM(CAST(a.exposure AS BIGINT) * CAST(a.exposure AS BIGINT)) AS DOUBLE) AS c2_sum,
           CAST(SUM(CAST(CAST(a.exposure AS DOUBLE) * LN(GREATEST(CAST(a.exposure AS DOUBLE), 1.0)) * 1e18
                         AS DECIMAL(38, 0))) AS DOUBLE) / 1e18 AS clogc
    FROM all_items AS a
    GROUP BY a.k
),
-- Gini's sum over the exposed items in ascending order: sum_r r c_(r) (equal c: any order, same sum)
ranked AS (
    SELECT e.k, CAST(e.exposure AS BIGINT) AS c,
           CAST(ROW_NUMBER() OVER (PARTITION BY e.k ORDER BY e.exposure) AS BIGINT) AS r
    FROM exposure AS e
),
gini_sums AS (
    SELECT rk.k, CAST(SUM(rk.r * rk.c) AS DOUBLE) AS rc_sum FROM ranked AS rk GROUP BY rk.k
),
-- a user with items has one at rank 1, inside every cutoff: U = those users; sum n_u = sum c
list_stats AS (
    SELECT CAST(c.k AS BIGINT) AS k, CAST(u.n AS DOUBLE) AS n_users
    FROM (SELECT COUNT(*) AS n FROM recommendations AS r WHERE r.rank = 1 AND r.item_id IS NOT NULL) AS u
    CROSS JOIN cutoffs AS c
),
-- d = score - max(score), from the halves (exact: halving a double is) so that scores up to 2e308 apart
-- do not overflow, and at least -2000: EXP(d) is 0 below -745 either way, and d * EXP(d) stays 0
scored AS (
    SELECT c.k, GREATEST(CAST(r.score AS DOUBLE) * 0.5 - MAX(CAST(r.score AS DOUBLE) * 0.5) OVER (PARTITION BY c.k),
                         -1000.0) * 2.0 AS d
    FROM recommendations AS r
    JOIN cutoffs AS c ON r.rank <= c.k
    WHERE r.item_id IS NOT NULL AND r.score IS NOT NULL
),
-- e = EXP(d), 0 where a double's EXP is 0 (d <= -1075 ln 2): PostgreSQL raises underflow there. The sums
-- Z = sum e and sum e d = -sum (-e d) run over terms of one sign, and are exact per binary exponent, so
-- that they do not depend on which thread added which row and keep a tiny sum's relative precision
-- (an entropy of 600 e^-600 stays one): a term x > 0 with b = floor(log2 x) (up to 1 off: LN's
-- rounding) is x 2^(60 - b), an integer below 2^62, in two exact scalings (no power beyond 2^600);
-- each exponent's integers are summed exactly, and the exponents' totals added in order of b.
score_terms AS (
    SELECT s.k, 'z' AS part, s.e AS x
    FROM (SELECT x.k, x.d, CASE WHEN x.d <= -745.1332191019412 THEN 0.0 ELSE EXP(x.d) END AS e
          FROM scored AS x) AS s
    WHERE s.e > 0
    UNION ALL
    SELECT s.k, 'zd' AS part, -(s.e * s.d) AS x
    FROM (SELECT x.k, x.d, CASE WHEN x.d <= -745.1332191019412 THEN 0.0 ELSE EXP(x.d) END AS e
          FROM scored AS x) AS s
    WHERE s.e > 0 AND s.d < 0
),
-- (the integer y cast as its two 30-bit halves: PostgreSQL casts a double to NUMERIC through 15 digits)
score_units AS (
    SELECT h.k, h.part, h.b,
           SUM(CAST(h.hi AS DECIMAL(38, 0))) * 1073741824 + SUM(CAST(h.y - h.hi * 1073741824.0 AS DECIMAL(38, 0)))
               AS units
    FROM (SELECT t.k, t.part, t.b, t.y, FLOOR(t.y / 1073741824.0) AS hi
          FROM (SELECT v.k, v.part, v.b, v.x * POWER(2.0, 60 - v.b - 600) * POWER(2.0, 600) AS y
                FROM (SELECT u.k, u.part, u.x, FLOOR(LN(u.x) / LN(2.0)) AS b FROM score_terms AS u) AS v) AS t) AS h
    GROUP BY h.k, h.part, h.b
),
score_running AS (
    SELECT v.k, v.part,
           SUM(CAST(v.units AS DOUBLE) * POWER(2.0, v.b - 60 + 600) * POWER(2.0, -600))
               OVER (PARTITION BY v.k, v.part ORDER BY v.b ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS total,
           ROW_NUMBER() OVER (PARTITION BY v.k, v.part ORDER BY v.b DESC) AS from_top
    FROM score_units AS v
),
score_stats AS (
    SELECT r.k, MAX(CASE WHEN r.part = 'z' THEN r.total END) AS score_z,
           0.0 - COALESCE(MAX(CASE WHEN r.part = 'zd' THEN r.total END), 0.0) AS score_zd
    FROM score_running AS r
    WHERE r.from_top = 1
    GROUP BY r.k
),
-- the per-k statistics the declared formulas read (rankwise.metrics.formulas.BEYOND_CATALOG_STATISTICS)
per_k AS (
    SELECT CAST(c.k AS BIGINT) AS k,
           COALESCE(i.n_c, 0.0) AS n_c, COALESCE(i.covered_in, 0.0) AS covered_in,
           COALESCE(i.n_exposed, 0.0) AS n_exposed, COALESCE(i.n_all, 0.0) AS n_all,
           COALESCE(i.c_sum, 0.0) AS c_sum, COALESCE(i.c2_sum, 0.0) AS c2_sum, COALESCE(i.clogc, 0.0) AS clogc,
           COALESCE(g.rc_sum, 0.0) AS rc_sum, COALESCE(l.n_users, 0.0) AS n_users,
           s.score_z, s.score_zd
    FROM cutoffs AS c
    LEFT JOIN item_stats AS i ON i.k = c.k
    LEFT JOIN gini_sums AS g ON g.k = c.k
    LEFT JOIN list_stats AS l ON l.k = c.k
    LEFT JOIN score_stats AS s ON s.k = c.k
),
-- >>> generated from the metric declarations (rankwise.metrics.declarations) by python -m rankwise.generate.sql: do not edit
-- the terms the catalog metrics share (rankwise.metrics.formulas.BEYOND_CATALOG_TERMS)
catalog_terms AS (
    SELECT t.*,
           t.n_c + $catalog_padding AS catalog_size,
           CASE WHEN $catalog_outside = 'ignore' THEN t.covered_in
                ELSE t.n_exposed END AS covered,
           CASE WHEN $gini = 'recommended_n1' THEN t.n_exposed
                ELSE t.n_all + $catalog_padding END AS n_gini
    FROM per_k AS t
),
catalog_terms_2 AS (
    SELECT t.*,
           CASE WHEN $gini = 'catalog' THEN t.n_gini
                ELSE t.n_gini - 1.0 END AS gini_den,
           2.0 * ((t.n_gini - t.n_exposed) * t.c_sum + t.rc_sum) - (t.n_gini + 1.0) * t.c_sum AS gini_num
    FROM catalog_terms AS t
),
-- each metric's value (rankwise.metrics.declarations.BEYOND)
results AS (
    SELECT v.k, v.n_users,
           CASE WHEN $coverage_scale = 'count' THEN v.covered
                WHEN $coverage_scale = 'ratio' THEN v.covered / NULLIF(v.catalog_size, 0.0)
                ELSE 100.0 * v.covered / NULLIF(v.catalog_size, 0.0) END AS item_coverage,
           CASE WHEN v.gini_den > 0 AND v.c_sum > 0 THEN (CASE WHEN $gini = 'catalog_n1_complement' THEN 1.0 - v.gini_num / (v.gini_den * v.c_sum) ELSE v.gini_num / (v.gini_den * v.c_sum) END) END AS gini,
           CASE WHEN v.c_sum > 0 THEN (LN(v.c_sum) - v.clogc / v.c_sum) / LN($info_log_base) / (CASE WHEN $entropy_normalize = 'distinct' THEN v.n_exposed ELSE 1.0 END) END AS exposure_entropy,
           CASE WHEN v.n_users >= 2 THEN 1.0 - (v.c2_sum - (CASE WHEN $personalization_lists = 'full' THEN v.n_users * v.k ELSE v.c_sum END)) / (v.k * v.n_users * (v.n_users - 1.0)) END AS personalization,
           LN(v.score_z) - v.score_zd / v.score_z AS score_entropy
    FROM catalog_terms_2 AS v
)
SELECT 'item_coverage' AS metric, x.k, x.item_coverage AS value, CAST(x.n_users AS BIGINT) AS n_users FROM results AS x
UNION ALL SELECT 'gini' AS metric, x.k, x.gini AS value, CAST(x.n_users AS BIGINT) AS n_users FROM results AS x
UNION ALL SELECT 'exposure_entropy' AS metric, x.k, x.exposure_entropy AS value, CAST(x.n_users AS BIGINT) AS n_users FROM results AS x
UNION ALL SELECT 'personalization' AS metric, x.k, x.personalization AS value, CAST(x.n_users AS BIGINT) AS n_users FROM results AS x
UNION ALL SELECT 'score_entropy' AS metric, x.k, x.score_entropy AS value, CAST(x.n_users AS BIGINT) AS n_users FROM results AS x
