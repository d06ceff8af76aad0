-- rankwise: per-item exposure and popularity (issue 10), one row per (item, k) over C ∪ the
-- recommended items. Inputs (the stages train_popularity and exposure included) and catalog rule as
-- sql/beyond_catalog.sql.
-- Parameters: $catalog 'items' | 'train' | 'recommended'; $popularity 'users' | 'rows'.
-- Output: item_id, k, exposure (users whose top k holds the item), popularity (0 without train rows).
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
),
pop AS (
    SELECT tp.item_id, CASE WHEN $popularity = 'users' THEN tp.pop_users ELSE tp.pop_rows END AS popularity
    FROM train_popularity AS tp
)
SELECT COALESCE(e.item_id, ct.item_id) AS item_id, COALESCE(e.k, ct.k) AS k,
       COALESCE(e.exposure, 0) AS exposure, COALESCE(p.popularity, 0) AS popularity
FROM exposure AS e
FULL OUTER JOIN catalog AS ct ON ct.k = e.k AND ct.item_id = e.item_id
LEFT JOIN pop AS p ON p.item_id = COALESCE(e.item_id, ct.item_id)
