-- rankwise 0.1.0: per-user ranking metrics and their summary, dialect clickhouse.
-- Rendered by sqlglot from the shipped sql/per_user.sql and sql/summary.sql.
DROP VIEW IF EXISTS rankwise_recommendations;

CREATE VIEW rankwise_recommendations AS
SELECT
  r.user_id,
  CAST(ROW_NUMBER() OVER (PARTITION BY r.user_id ORDER BY r.pos) AS Nullable(Int64)) AS rank,
  r.item_id
FROM (
  SELECT
    src.user AS user_id,
    CAST(ROW_NUMBER() OVER (PARTITION BY src.user ORDER BY src.rank, src.item) AS Nullable(Int64)) AS pos,
    src.item AS item_id
  FROM analytics.recs AS src
) AS r;

DROP VIEW IF EXISTS rankwise_ground_truth;

CREATE VIEW rankwise_ground_truth AS
SELECT
  src.user AS user_id,
  src.item AS item_id,
  CAST(src.relevance AS Nullable(Float64)) AS relevance
FROM analytics.truth AS src;

DROP VIEW IF EXISTS rankwise_cutoffs;

CREATE VIEW rankwise_cutoffs AS
SELECT
  CAST(5 AS Nullable(Int64)) AS k
UNION ALL
SELECT
  CAST(10 AS Nullable(Int64)) AS k;

DROP TABLE IF EXISTS rankwise_per_user;

CREATE TABLE rankwise_per_user
ENGINE=MergeTree
ORDER BY () AS
SELECT
  p.user_id,
  p.k,
  p.n_recs,
  p.n_rel,
  p.precision,
  p.recall,
  p.fbeta,
  p.map,
  p.mar,
  p.mrr,
  p.dcg,
  p.ndcg,
  p.hit_rate,
  p.r_precision
FROM (
  WITH labels AS (
    SELECT
      g.user_id AS user_id,
      g.item_id AS item_id,
      CASE
        WHEN g.relevance > 0 AND g.relevance >= CAST(0.0 AS Nullable(Float64))
        THEN 1
        ELSE 0
      END AS is_rel
    FROM rankwise_ground_truth AS g
  ), earning AS (
    SELECT
      g.user_id AS user_id,
      g.item_id AS item_id,
      CASE WHEN g.relevance >= CAST(0.0 AS Nullable(Float64)) THEN 1 ELSE 0 END AS is_rel,
      CASE
        WHEN 'exp2' = 'binary'
        THEN (
          CASE
            WHEN g.relevance >= CAST(0.0 AS Nullable(Float64))
            THEN CAST(1.0 AS Nullable(Float64))
            ELSE CAST(0.0 AS Nullable(Float64))
          END
        )
        WHEN 'exp2' = 'linear'
        THEN CAST(g.relevance AS Nullable(Float64))
        ELSE POWER(CAST(2.0 AS Nullable(Float64)), CAST(g.relevance AS Nullable(Float64))) - CAST(1.0 AS Nullable(Float64))
      END AS gain
    FROM rankwise_ground_truth AS g
    WHERE
      g.relevance > 0
  ), label_stats AS (
    SELECT
      l.user_id AS user_id,
      1 AS in_truth,
      CAST(COUNT(l.item_id) AS Nullable(Int64)) AS n_judged,
      CAST(SUM(l.is_rel) AS Nullable(Int64)) AS n_rel
    FROM labels AS l
    GROUP BY
      l.user_id
  ), rec_stats AS (
    SELECT
      r.user_id AS user_id,
      1 AS in_recs,
      CAST(COUNT(r.item_id) AS Nullable(Int64)) AS n_recs
    FROM rankwise_recommendations AS r
    GROUP BY
      r.user_id
  ), all_users AS (
    SELECT
      CASE WHEN COALESCE(rs.in_recs, 0) = 1 THEN rs.user_id ELSE ls.user_id END AS user_id,
      COALESCE(rs.in_recs, 0) AS in_recs,
      COALESCE(ls.in_truth, 0) AS in_truth,
      CAST(COALESCE(ls.n_judged, 0) AS Nullable(Int64)) AS n_judged,
      CAST(COALESCE(rs.n_recs, 0) AS Nullable(Int64)) AS n_recs,
      CAST(COALESCE(ls.n_rel, 0) AS Nullable(Int64)) AS n_rel
    FROM rec_stats AS rs
    FULL OUTER JOIN label_stats AS ls
      ON rs.user_id = ls.user_id
  ), universe AS (
    SELECT
      a.user_id AS user_id,
      a.n_recs AS n_recs,
      a.n_rel AS n_rel
    FROM all_users AS a
    WHERE
      (
        CASE
          WHEN 'union' = 'union'
          THEN 1
          WHEN 'union' = 'labels'
          THEN a.in_truth
          WHEN 'union' = 'predictions'
          THEN a.in_recs
          ELSE a.in_recs * a.in_truth
        END
      ) = 1
      AND (
        'keep' = 'keep' OR a.n_judged > 0
      )
  ), reach AS (
    SELECT
      CASE WHEN 1 = 0 THEN 2147483647 ELSE MAX(c.k) END AS max_rank
    FROM rankwise_cutoffs AS c
  ), judged AS (
    SELECT
      r.user_id AS user_id,
      CAST(r.rank AS Nullable(Int64)) AS rank,
      e.is_rel AS is_rel,
      e.gain AS gain,
      u.n_rel AS n_rel,
      SUM(e.is_rel) OVER (
        PARTITION BY r.user_id
        ORDER BY r.rank
        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
      ) AS hits_so_far
    FROM rankwise_recommendations AS r
    CROSS JOIN reach AS h
    JOIN earning AS e
      ON e.user_id = r.user_id AND e.item_id = r.item_id
    JOIN universe AS u
      ON u.user_id = r.user_id
    WHERE
      r.rank <= h.max_rank
  ), user_hits AS (
    SELECT
      j.user_id AS user_id,
      1 AS matched,
      MIN(CASE WHEN j.is_rel = 1 THEN j.rank END) AS first_hit,
      CAST(SUM(j.is_rel) AS Nullable(Int64)) AS hits_all
    FROM judged AS j
    GROUP BY
      j.user_id
  ), users AS (
    SELECT
      u.user_id AS user_id,
      u.n_recs AS n_recs,
      u.n_rel AS n_rel,
      CASE WHEN COALESCE(h.matched, 0) = 1 THEN COALESCE(h.first_hit, 0) ELSE 0 END AS first_hit,
      CASE WHEN COALESCE(h.matched, 0) = 1 THEN h.hits_all ELSE 0 END AS hits_all
    FROM universe AS u
    LEFT JOIN user_hits AS h
      ON h.user_id = u.user_id
  ), judged_at_k AS (
    SELECT
      j.user_id AS user_id,
      CAST(c.k AS Nullable(Int64)) AS k,
      j.rank AS rank,
      j.is_rel AS is_rel,
      j.gain AS gain,
      j.n_rel AS n_rel,
      j.hits_so_far AS hits_so_far,
      ROW_NUMBER() OVER (PARTITION BY j.user_id, c.k ORDER BY j.gain DESC) AS ideal_pos
    FROM judged AS j
    CROSS JOIN rankwise_cutoffs AS c
    WHERE
      j.rank <= c.k
  ), at_k AS (
    SELECT
      a.user_id AS user_id,
      a.k AS k,
      1 AS matched,
      CAST(SUM(a.is_rel) AS Nullable(Int64)) AS hits,
      SUM(
        CASE
          WHEN a.is_rel = 1
          THEN CAST(a.hits_so_far AS Nullable(Float64)) / a.rank
          ELSE CAST(0.0 AS Nullable(Float64))
        END
      ) AS precision_sum,
      CAST(SUM(CASE WHEN a.is_rel = 1 THEN a.hits_so_far ELSE 0 END) AS Nullable(Int64)) AS hits_sum,
      CAST(SUM(CASE WHEN a.is_rel = 1 AND a.rank <= a.n_rel THEN 1 ELSE 0 END) AS Nullable(Int64)) AS r_hits,
      SUM(
        a.gain / (
          LN(a.rank + CAST(1.0 AS Nullable(Float64))) / LN(CAST(2.718281828459045 AS Nullable(Float64)))
        )
      ) AS dcg,
      SUM(
        a.gain / (
          LN(a.ideal_pos + CAST(1.0 AS Nullable(Float64))) / LN(CAST(2.718281828459045 AS Nullable(Float64)))
        )
      ) AS idcg_top
    FROM judged_at_k AS a
    GROUP BY
      a.user_id,
      a.k
  ), ideal_labels AS (
    SELECT
      e.user_id AS user_id,
      e.gain AS gain,
      ROW_NUMBER() OVER (PARTITION BY e.user_id ORDER BY e.gain DESC) AS pos
    FROM earning AS e
    JOIN universe AS u
      ON u.user_id = e.user_id
    WHERE
      'predictions_topk' = 'labels'
  ), idcg_labels AS (
    SELECT
      i.user_id AS user_id,
      CAST(c.k AS Nullable(Int64)) AS k,
      1 AS matched,
      SUM(
        i.gain / (
          LN(i.pos + CAST(1.0 AS Nullable(Float64))) / LN(CAST(2.718281828459045 AS Nullable(Float64)))
        )
      ) AS idcg
    FROM ideal_labels AS i
    CROSS JOIN rankwise_cutoffs AS c
    WHERE
      i.pos <= c.k
    GROUP BY
      i.user_id,
      c.k
  ), digits AS (
    SELECT
      0 AS d
    UNION ALL
    SELECT
      1 AS d
    UNION ALL
    SELECT
      2 AS d
    UNION ALL
    SELECT
      3 AS d
    UNION ALL
    SELECT
      4 AS d
    UNION ALL
    SELECT
      5 AS d
    UNION ALL
    SELECT
      6 AS d
    UNION ALL
    SELECT
      7 AS d
    UNION ALL
    SELECT
      8 AS d
    UNION ALL
    SELECT
      9 AS d
  ), slots AS (
    SELECT
      CAST(d1.d + 10 * d2.d + 100 * d3.d + 1000 * d4.d + 1 AS Nullable(Int64)) AS pos
    FROM digits AS d1
    CROSS JOIN digits AS d2
    CROSS JOIN digits AS d3
    CROSS JOIN digits AS d4
  ), idcg_ones AS (
    SELECT
      CAST(c.k AS Nullable(Int64)) AS k,
      SUM(
        CAST(1.0 AS Nullable(Float64)) / (
          LN(s.pos + CAST(1.0 AS Nullable(Float64))) / LN(CAST(2.718281828459045 AS Nullable(Float64)))
        )
      ) AS idcg
    FROM rankwise_cutoffs AS c
    CROSS JOIN slots AS s
    WHERE
      s.pos <= c.k
    GROUP BY
      c.k
  ), stats AS (
    SELECT
      u.user_id AS user_id,
      CAST(c.k AS Nullable(Int64)) AS k,
      u.n_recs AS n_recs,
      u.n_rel AS n_rel,
      CAST(CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.hits ELSE 0 END AS Nullable(Float64)) AS hits,
      CASE
        WHEN COALESCE(a.matched, 0) = 1
        THEN a.precision_sum
        ELSE CAST(0.0 AS Nullable(Float64))
      END AS precision_sum,
      CAST(CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.hits_sum ELSE 0 END AS Nullable(Float64)) AS hits_sum,
      CAST(CASE WHEN COALESCE(a.matched, 0) = 1 THEN a.r_hits ELSE 0 END AS Nullable(Float64)) AS r_hits,
      CASE WHEN 1 = 1 AND u.first_hit > c.k THEN 0 ELSE u.first_hit END AS first_hit,
      u.n_recs + u.n_rel - u.hits_all AS n_candidates,
      CASE
        WHEN COALESCE(a.matched, 0) = 1
        THEN a.dcg
        ELSE CAST(0.0 AS Nullable(Float64))
      END AS dcg,
      CASE
        WHEN 'predictions_topk' = 'labels'
        THEN (
          CASE
            WHEN COALESCE(il.matched, 0) = 1
            THEN il.idcg
            ELSE CAST(0.0 AS Nullable(Float64))
          END
        )
        WHEN 'predictions_topk' = 'k_ones'
        THEN io.idcg
        ELSE (
          CASE
            WHEN COALESCE(a.matched, 0) = 1
            THEN a.idcg_top
            ELSE CAST(0.0 AS Nullable(Float64))
          END
        )
      END AS idcg
    FROM users AS u
    CROSS JOIN rankwise_cutoffs AS c
    LEFT JOIN at_k AS a
      ON a.user_id = u.user_id AND a.k = c.k
    LEFT JOIN idcg_labels AS il
      ON il.user_id = u.user_id AND il.k = c.k
    LEFT JOIN idcg_ones AS io
      ON io.k = c.k
  ), denominators AS (
    SELECT
      s.*,
      CAST(CASE
        WHEN 'k' = 'k'
        THEN s.k
        WHEN 'k' = 'min_k_len'
        THEN LEAST(s.k, s.n_recs)
        WHEN 'k' = 'min_k_candidates'
        THEN LEAST(s.k, s.n_candidates)
        ELSE LEAST(s.k, s.n_rel)
      END AS Nullable(Float64)) AS p_den,
      CAST(CASE
        WHEN 'n_hits' = 'n_hits'
        THEN CAST(s.hits AS Nullable(Int64))
        WHEN 'n_hits' = 'n_rel'
        THEN s.n_rel
        WHEN 'n_hits' = 'min_k_nrel'
        THEN LEAST(s.k, s.n_rel)
        WHEN 'n_hits' = 'k'
        THEN s.k
        ELSE LEAST(s.k, s.n_recs)
      END AS Nullable(Float64)) AS ap_den
    FROM stats AS s
  ), defined AS (
    SELECT
      d.user_id AS user_id,
      d.k AS k,
      d.n_recs AS n_recs,
      d.n_rel AS n_rel,
      d.hits / nullIf(d.p_den, CAST(0.0 AS Nullable(Float64))) AS precision,
      d.hits / nullIf(CAST(d.n_rel AS Nullable(Float64)), CAST(0.0 AS Nullable(Float64))) AS recall,
      CASE
        WHEN d.ap_den > 0
        THEN d.precision_sum / d.ap_den
        ELSE CAST(0.0 AS Nullable(Float64))
      END AS map,
      CASE
        WHEN d.ap_den > 0
        THEN d.hits_sum / nullIf(CAST(d.n_rel AS Nullable(Float64)), CAST(0.0 AS Nullable(Float64))) / d.ap_den
        ELSE CAST(0.0 AS Nullable(Float64))
      END AS mar,
      CASE
        WHEN d.first_hit > 0
        THEN CAST(1.0 AS Nullable(Float64)) / d.first_hit
        ELSE CAST(0.0 AS Nullable(Float64))
      END AS mrr,
      d.dcg AS dcg,
      CASE
        WHEN d.idcg > 0
        THEN d.dcg / d.idcg
        WHEN 'zero' = 'zero'
        THEN CAST(0.0 AS Nullable(Float64))
        ELSE CAST(NULL AS Nullable(Float64))
      END AS ndcg,
      CASE
        WHEN d.hits > 0
        THEN CAST(1.0 AS Nullable(Float64))
        ELSE CAST(0.0 AS Nullable(Float64))
      END AS hit_rate,
      d.r_hits / nullIf(CAST(LEAST(d.k, d.n_rel) AS Nullable(Float64)), CAST(0.0 AS Nullable(Float64))) AS r_precision
    FROM denominators AS d
  ), with_f AS (
    SELECT
      m.*,
      CASE
        WHEN m.precision + m.recall > 0
        THEN (
          CAST(1.0 AS Nullable(Float64)) + CAST(1.0 AS Nullable(Float64)) * CAST(1.0 AS Nullable(Float64))
        ) * m.precision * m.recall / (
          CAST(1.0 AS Nullable(Float64)) * CAST(1.0 AS Nullable(Float64)) * m.precision + m.recall
        )
        ELSE CAST(0.0 AS Nullable(Float64))
      END AS fbeta
    FROM defined AS m
  ), empty_values AS (
    SELECT
      CASE
        WHEN 'nan' = 'zero'
        THEN CAST(0.0 AS Nullable(Float64))
        WHEN 'nan' = 'one'
        THEN CAST(1.0 AS Nullable(Float64))
        ELSE CAST(NULL AS Nullable(Float64))
      END AS no_labels,
      CASE
        WHEN 'zero' = 'zero'
        THEN CAST(0.0 AS Nullable(Float64))
        WHEN 'zero' = 'one'
        THEN CAST(1.0 AS Nullable(Float64))
        ELSE CAST(NULL AS Nullable(Float64))
      END AS no_predictions
  )
  SELECT
    f.user_id AS user_id,
    f.k AS k,
    f.n_recs AS n_recs,
    f.n_rel AS n_rel,
    CASE
      WHEN f.n_rel = 0
      THEN e.no_labels
      WHEN f.n_recs = 0
      THEN e.no_predictions
      ELSE f.precision
    END AS precision,
    CASE
      WHEN f.n_rel = 0
      THEN e.no_labels
      WHEN f.n_recs = 0
      THEN e.no_predictions
      ELSE f.recall
    END AS recall,
    CASE
      WHEN f.n_rel = 0
      THEN e.no_labels
      WHEN f.n_recs = 0
      THEN e.no_predictions
      ELSE f.fbeta
    END AS fbeta,
    CASE
      WHEN f.n_rel = 0
      THEN e.no_labels
      WHEN f.n_recs = 0
      THEN e.no_predictions
      ELSE f.map
    END AS map,
    CASE
      WHEN f.n_rel = 0
      THEN e.no_labels
      WHEN f.n_recs = 0
      THEN e.no_predictions
      ELSE f.mar
    END AS mar,
    CASE
      WHEN f.n_rel = 0
      THEN e.no_labels
      WHEN f.n_recs = 0
      THEN e.no_predictions
      ELSE f.mrr
    END AS mrr,
    CASE
      WHEN f.n_rel = 0
      THEN e.no_labels
      WHEN f.n_recs = 0
      THEN e.no_predictions
      ELSE f.dcg
    END AS dcg,
    CASE
      WHEN f.n_rel = 0
      THEN e.no_labels
      WHEN f.n_recs = 0
      THEN e.no_predictions
      ELSE f.ndcg
    END AS ndcg,
    CASE
      WHEN f.n_rel = 0
      THEN e.no_labels
      WHEN f.n_recs = 0
      THEN e.no_predictions
      ELSE f.hit_rate
    END AS hit_rate,
    CASE
      WHEN f.n_rel = 0
      THEN e.no_labels
      WHEN f.n_recs = 0
      THEN e.no_predictions
      ELSE f.r_precision
    END AS r_precision
  FROM with_f AS f
  CROSS JOIN empty_values AS e
) AS p;

SELECT
  s.metric AS metric,
  s.k,
  s.value,
  s.n_users
FROM (
  WITH per_k AS (
    SELECT
      p.k AS k,
      AVG(p.precision) AS precision_mean,
      COUNT(p.precision) AS precision_n,
      STDDEV_SAMP(p.precision) AS precision_sd,
      AVG(p.recall) AS recall_mean,
      COUNT(p.recall) AS recall_n,
      STDDEV_SAMP(p.recall) AS recall_sd,
      AVG(p.fbeta) AS fbeta_mean,
      COUNT(p.fbeta) AS fbeta_n,
      STDDEV_SAMP(p.fbeta) AS fbeta_sd,
      AVG(p.map) AS map_mean,
      COUNT(p.map) AS map_n,
      STDDEV_SAMP(p.map) AS map_sd,
      AVG(p.mar) AS mar_mean,
      COUNT(p.mar) AS mar_n,
      STDDEV_SAMP(p.mar) AS mar_sd,
      AVG(p.mrr) AS mrr_mean,
      COUNT(p.mrr) AS mrr_n,
      STDDEV_SAMP(p.mrr) AS mrr_sd,
      AVG(p.dcg) AS dcg_mean,
      COUNT(p.dcg) AS dcg_n,
      STDDEV_SAMP(p.dcg) AS dcg_sd,
      AVG(p.ndcg) AS ndcg_mean,
      COUNT(p.ndcg) AS ndcg_n,
      STDDEV_SAMP(p.ndcg) AS ndcg_sd,
      AVG(p.hit_rate) AS hit_rate_mean,
      COUNT(p.hit_rate) AS hit_rate_n,
      STDDEV_SAMP(p.hit_rate) AS hit_rate_sd,
      AVG(p.r_precision) AS r_precision_mean,
      COUNT(p.r_precision) AS r_precision_n,
      STDDEV_SAMP(p.r_precision) AS r_precision_sd
    FROM rankwise_per_user AS p
    GROUP BY
      p.k
  )
  SELECT
    'precision' AS metric,
    s.k AS k,
    s.precision_mean AS value,
    s.precision_n AS n_users,
    s.precision_sd AS sd
  FROM per_k AS s
  UNION ALL
  SELECT
    'recall' AS metric,
    s.k AS k,
    s.recall_mean AS value,
    s.recall_n AS n_users,
    s.recall_sd AS sd
  FROM per_k AS s
  UNION ALL
  SELECT
    'f1' AS metric,
    s.k AS k,
    CASE
      WHEN 'per_user' = 'per_user'
      THEN s.fbeta_mean
      WHEN s.fbeta_n = 0
      THEN CAST(NULL AS Nullable(Float64))
      WHEN s.precision_mean + s.recall_mean > 0
      THEN (
        CAST(1.0 AS Nullable(Float64)) + CAST(1.0 AS Nullable(Float64)) * CAST(1.0 AS Nullable(Float64))
      ) * s.precision_mean * s.recall_mean / (
        CAST(1.0 AS Nullable(Float64)) * CAST(1.0 AS Nullable(Float64)) * s.precision_mean + s.recall_mean
      )
      ELSE CAST(0.0 AS Nullable(Float64))
    END AS value,
    s.fbeta_n AS n_users,
    CASE WHEN 'per_user' = 'per_user' THEN s.fbeta_sd END AS sd
  FROM per_k AS s
  UNION ALL
  SELECT
    'map' AS metric,
    s.k AS k,
    s.map_mean AS value,
    s.map_n AS n_users,
    s.map_sd AS sd
  FROM per_k AS s
  UNION ALL
  SELECT
    'mar' AS metric,
    s.k AS k,
    s.mar_mean AS value,
    s.mar_n AS n_users,
    s.mar_sd AS sd
  FROM per_k AS s
  UNION ALL
  SELECT
    'mrr' AS metric,
    s.k AS k,
    s.mrr_mean AS value,
    s.mrr_n AS n_users,
    s.mrr_sd AS sd
  FROM per_k AS s
  UNION ALL
  SELECT
    'dcg' AS metric,
    s.k AS k,
    s.dcg_mean AS value,
    s.dcg_n AS n_users,
    s.dcg_sd AS sd
  FROM per_k AS s
  UNION ALL
  SELECT
    'ndcg' AS metric,
    s.k AS k,
    s.ndcg_mean AS value,
    s.ndcg_n AS n_users,
    s.ndcg_sd AS sd
  FROM per_k AS s
  UNION ALL
  SELECT
    'hit_rate' AS metric,
    s.k AS k,
    s.hit_rate_mean AS value,
    s.hit_rate_n AS n_users,
    s.hit_rate_sd AS sd
  FROM per_k AS s
  UNION ALL
  SELECT
    'r_precision' AS metric,
    s.k AS k,
    s.r_precision_mean AS value,
    s.r_precision_n AS n_users,
    s.r_precision_sd AS sd
  FROM per_k AS s
) AS s
ORDER BY
  CASE
    WHEN s.metric = 'precision'
    THEN 0
    WHEN s.metric = 'recall'
    THEN 1
    WHEN s.metric = 'f1'
    THEN 2
    WHEN s.metric = 'map'
    THEN 3
    WHEN s.metric = 'mar'
    THEN 4
    WHEN s.metric = 'mrr'
    THEN 5
    WHEN s.metric = 'dcg'
    THEN 6
    WHEN s.metric = 'ndcg'
    THEN 7
    WHEN s.metric = 'hit_rate'
    THEN 8
    WHEN s.metric = 'r_precision'
    THEN 9
  END,
  s.k;
