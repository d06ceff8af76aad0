-- rankwise: per-user metrics as DuckDB macros over list columns (one row per user).
--
--   SELECT user_id, rankwise_ndcg(items, relevant, 10) FROM t
--
-- recs: the recommended items in rank order; truth: the relevant items (binary relevance: every
-- label has relevance 1). rankwise_dcg_graded / rankwise_ndcg_graded take a relevance list parallel
-- to truth. Load with rankwise.expr.install_duckdb(con), or run this file: TEMP macros, for the connection only
-- (nothing is written to the database file).
-- Knobs are named parameters with the default convention's values (rankwise.conventions), e.g.
--   rankwise_map(items, relevant, 10, ap_denominator := 'n_rel', empty_labels := 'nan').
-- Row rules, as rankwise.expr: a NULL list = empty; both NULL = NaN (no such user); NaN = undefined;
-- a row evaluate() would reject (a repeated item under duplicates := 'error', a repeated or NULL
-- label, a NULL item) is NaN; duplicates := 'first_shift' keeps each item's first occurrence.
-- Positions are 1-based; a hit position p earns 1 / log_b(p + 1). A knob value the convention does not
-- allow, or k NULL or < 1, is an error naming it.

-- TRUE, or an error naming the knob, the value given and the values allowed (rankwise.conventions;
-- empty_labels / empty_predictions 'error' is refused, as in rankwise.expr: a macro cannot raise per row)
CREATE OR REPLACE TEMP MACRO rankwise__knob(name, value, allowed) AS
    CASE WHEN list_contains(allowed, value) THEN true
         ELSE error(format('rankwise: {} := {} is not allowed; allowed values: {}', name,
                           coalesce('''' || CAST(value AS VARCHAR) || '''', 'NULL'), CAST(allowed AS VARCHAR))) END;

-- TRUE when ok, else an error naming the number and the rule (a NULL value or rule fails)
CREATE OR REPLACE TEMP MACRO rankwise__number(name, value, ok, rule) AS
    CASE WHEN ok AND isfinite(value) THEN true
         ELSE error(format('rankwise: {} := {} is not allowed: it must be {}', name,
                           coalesce(CAST(value AS VARCHAR), 'NULL'), rule)) END;

-- k: an integer 1 <= k <= 2^31 - 1, as evaluate() and rankwise.expr require
CREATE OR REPLACE TEMP MACRO rankwise__k(k) AS
    rankwise__number('k', k, k >= 1 AND k <= 2147483647 AND k = floor(k), 'an integer >= 1');

-- the checks of the knobs every accuracy macro takes
CREATE OR REPLACE TEMP MACRO rankwise__rows(k, empty_labels, empty_predictions, duplicates) AS
    rankwise__k(k)
    AND rankwise__knob('empty_labels', empty_labels, ['nan', 'zero', 'one'])
    AND rankwise__knob('empty_predictions', empty_predictions, ['zero', 'nan', 'one'])
    AND rankwise__knob('duplicates', duplicates, ['error', 'first_shift']);

-- the recommendations after the duplicates rule
CREATE OR REPLACE TEMP MACRO rankwise__recs(recs, duplicates) AS
    CASE WHEN duplicates = 'first_shift'
         THEN list_filter(coalesce(recs, []), lambda x, i: list_position(coalesce(recs, []), x) = i)
         ELSE coalesce(recs, []) END;

-- positions 1..min(k, n) whose item is relevant, ascending
CREATE OR REPLACE TEMP MACRO rankwise__hits(r, truth, k) AS
    list_filter(range(1, CAST(least(k, len(r)) AS BIGINT) + 1), lambda p: list_contains(coalesce(truth, []), r[p]));

-- sum_{i <= n} 1 / log_b(i + 1): the DCG of n slots of gain 1
CREATE OR REPLACE TEMP MACRO rankwise__ones(n, log_base) AS
    coalesce(list_sum(list_transform(range(1, CAST(n AS BIGINT) + 1), lambda i: 1.0 / (ln(i + 1.0) / ln(log_base)))), 0.0);

-- the empty / invalid rules around a metric's value (n_rel = number of relevant labels)
CREATE OR REPLACE TEMP MACRO rankwise__finish(recs, truth, n_rel, value, empty_labels, empty_predictions, duplicates) AS
    CASE WHEN recs IS NULL AND truth IS NULL THEN 'NaN'::DOUBLE
         WHEN len(list_distinct(coalesce(truth, []))) <> len(coalesce(truth, []))
           OR len(list_filter(coalesce(recs, []), lambda x: x IS NULL)) > 0
           OR (duplicates = 'error' AND len(list_distinct(coalesce(recs, []))) <> len(coalesce(recs, [])))
         THEN 'NaN'::DOUBLE
         WHEN n_rel = 0 THEN (CASE empty_labels WHEN 'zero' THEN 0.0 WHEN 'one' THEN 1.0 ELSE 'NaN'::DOUBLE END)
         WHEN len(coalesce(recs, [])) = 0
         THEN (CASE empty_predictions WHEN 'zero' THEN 0.0 WHEN 'one' THEN 1.0 ELSE 'NaN'::DOUBLE END)
         ELSE coalesce(CAST(value AS DOUBLE), 'NaN'::DOUBLE) END;

-- Precision@k = hits@k / den   (precision_denominator: k | min_k_len | min_k_nrel | min_k_candidates)
CREATE OR REPLACE TEMP MACRO rankwise_precision(recs, truth, k, precision_denominator := 'k', empty_labels := 'zero',
                                           empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('precision_denominator', precision_denominator,
                         ['k', 'min_k_len', 'min_k_nrel', 'min_k_candidates']) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        len(rankwise__hits(rankwise__recs(recs, duplicates), truth, k)) / nullif(CAST(
            CASE precision_denominator WHEN 'k' THEN k
                 WHEN 'min_k_len' THEN least(k, len(rankwise__recs(recs, duplicates)))
                 WHEN 'min_k_nrel' THEN least(k, len(coalesce(truth, [])))
                 ELSE least(k, len(rankwise__recs(recs, duplicates)) + len(coalesce(truth, []))
                          - len(rankwise__hits(rankwise__recs(recs, duplicates), truth, 2147483647))) END
            AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- Recall@k = hits@k / n_rel
CREATE OR REPLACE TEMP MACRO rankwise_recall(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                        duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        len(rankwise__hits(rankwise__recs(recs, duplicates), truth, k)) / nullif(len(coalesce(truth, [])), 0),
        empty_labels, empty_predictions, duplicates) END;

-- F-beta@k = (1 + b^2) P R / (b^2 P + R), 0 when P = R = 0
CREATE OR REPLACE TEMP MACRO rankwise__f(p, r, beta) AS
    CASE WHEN p + r > 0 THEN (1.0 + beta * beta) * p * r / (beta * beta * p + r) ELSE 0.0 END;

CREATE OR REPLACE TEMP MACRO rankwise_fbeta(recs, truth, k, beta := 1.0, precision_denominator := 'k',
                                       empty_labels := 'zero', empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('beta', beta, beta > 0, 'a finite number > 0')
      AND rankwise__knob('precision_denominator', precision_denominator,
                         ['k', 'min_k_len', 'min_k_nrel', 'min_k_candidates']) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        rankwise__f(rankwise_precision(recs, truth, k, precision_denominator := precision_denominator,
                                       duplicates := duplicates),
                    rankwise_recall(recs, truth, k, duplicates := duplicates), beta),
        empty_labels, empty_predictions, duplicates) END;

CREATE OR REPLACE TEMP MACRO rankwise_f1(recs, truth, k, precision_denominator := 'k', empty_labels := 'zero',
                                    empty_predictions := 'zero', duplicates := 'error') AS
    rankwise_fbeta(recs, truth, k, beta := 1.0, precision_denominator := precision_denominator,
                   empty_labels := empty_labels, empty_predictions := empty_predictions, duplicates := duplicates);

-- the AP/AR denominator (ap_denominator: n_hits | n_rel | min_k_nrel | k | min_k_len)
CREATE OR REPLACE TEMP MACRO rankwise__ap_den(r, truth, k, ap_denominator) AS
    CAST(CASE ap_denominator WHEN 'n_hits' THEN len(rankwise__hits(r, truth, k))
              WHEN 'n_rel' THEN len(coalesce(truth, []))
              WHEN 'min_k_nrel' THEN least(k, len(coalesce(truth, [])))
              WHEN 'k' THEN k
              ELSE least(k, len(r)) END AS DOUBLE);

-- AP@k = sum over hit positions p of hits@p / p, / den: the j-th hit at position p adds j / p
CREATE OR REPLACE TEMP MACRO rankwise_map(recs, truth, k, ap_denominator := 'min_k_nrel', empty_labels := 'zero',
                                     empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('ap_denominator', ap_denominator, ['n_hits', 'n_rel', 'min_k_nrel', 'k', 'min_k_len']) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        CASE WHEN rankwise__ap_den(rankwise__recs(recs, duplicates), truth, k, ap_denominator) > 0
             THEN coalesce(list_sum(list_transform(rankwise__hits(rankwise__recs(recs, duplicates), truth, k),
                                                   lambda p, j: CAST(j AS DOUBLE) / p)), 0.0)
                  / rankwise__ap_den(rankwise__recs(recs, duplicates), truth, k, ap_denominator)
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- AR@k = sum over hit positions p of hits@p / n_rel, / den (sum of j over the hits = h(h + 1) / 2)
CREATE OR REPLACE TEMP MACRO rankwise_mar(recs, truth, k, ap_denominator := 'min_k_nrel', empty_labels := 'zero',
                                     empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('ap_denominator', ap_denominator, ['n_hits', 'n_rel', 'min_k_nrel', 'k', 'min_k_len']) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        CASE WHEN rankwise__ap_den(rankwise__recs(recs, duplicates), truth, k, ap_denominator) > 0
             THEN CAST(len(rankwise__hits(rankwise__recs(recs, duplicates), truth, k))
                       * (len(rankwise__hits(rankwise__recs(recs, duplicates), truth, k)) + 1) / 2 AS DOUBLE)
                  / nullif(len(coalesce(truth, [])), 0)
                  / rankwise__ap_den(rankwise__recs(recs, duplicates), truth, k, ap_denominator)
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- RR@k = 1 / the first hit position (within k when rr_cutoff, else anywhere), 0 without one
CREATE OR REPLACE TEMP MACRO rankwise_mrr(recs, truth, k, rr_cutoff := true, empty_labels := 'zero',
                                     empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('rr_cutoff', rr_cutoff, [true, false]) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        coalesce(1.0 / rankwise__hits(rankwise__recs(recs, duplicates), truth,
                                      CASE WHEN rr_cutoff THEN k ELSE 2147483647 END)[1], 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- DCG@k = sum over hit positions p of 1 / log_b(p + 1) (relevance 1: every gain rule gives 1)
CREATE OR REPLACE TEMP MACRO rankwise_dcg(recs, truth, k, log_base := 2.0, empty_labels := 'zero',
                                     empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('log_base', log_base, log_base > 1, 'a finite number > 1') THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        coalesce(list_sum(list_transform(rankwise__hits(rankwise__recs(recs, duplicates), truth, k),
                                         lambda p: 1.0 / (ln(p + 1.0) / ln(log_base)))), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- dcg / idcg; when idcg = 0: 0 (zero_ideal 'zero') or NaN
CREATE OR REPLACE TEMP MACRO rankwise__ratio(dcg, idcg, zero_ideal) AS
    CASE WHEN idcg > 0 THEN dcg / idcg WHEN zero_ideal = 'zero' THEN 0.0 ELSE 'NaN'::DOUBLE END;

-- NDCG@k = DCG@k / IDCG@k; IDCG = ones over hits@k (predictions_topk), min(k, n_rel) (labels) or k (k_ones)
CREATE OR REPLACE TEMP MACRO rankwise_ndcg(recs, truth, k, log_base := 2.0, ideal := 'labels',
                                      zero_ideal := 'zero', empty_labels := 'zero', empty_predictions := 'zero',
                                      duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('log_base', log_base, log_base > 1, 'a finite number > 1')
      AND rankwise__knob('ideal', ideal, ['predictions_topk', 'labels', 'k_ones'])
      AND rankwise__knob('zero_ideal', zero_ideal, ['zero', 'nan'])
      AND rankwise__number('k', k, ideal <> 'k_ones' OR k <= 10000, 'at most 10000 with ideal := ''k_ones''') THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        rankwise__ratio(rankwise_dcg(recs, truth, k, log_base := log_base, duplicates := duplicates),
            rankwise__ones(CASE ideal
                WHEN 'predictions_topk' THEN len(rankwise__hits(rankwise__recs(recs, duplicates), truth, k))
                WHEN 'labels' THEN least(k, len(coalesce(truth, [])))
                ELSE k END, log_base), zero_ideal),
        empty_labels, empty_predictions, duplicates) END;

-- Hit rate@k = 1 if any of the top k is relevant
CREATE OR REPLACE TEMP MACRO rankwise_hit_rate(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                          duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        CASE WHEN len(rankwise__hits(rankwise__recs(recs, duplicates), truth, k)) > 0 THEN 1.0 ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- R-precision@k = hits within the top m / m, m = min(k, n_rel)
CREATE OR REPLACE TEMP MACRO rankwise_r_precision(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                             duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        len(rankwise__hits(rankwise__recs(recs, duplicates), truth, least(k, len(coalesce(truth, [])))))
            / nullif(CAST(least(k, len(coalesce(truth, []))) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- RBP@k = (1 - p) sum over hit positions i of p^(i - 1), p = rbp_persistence (0 < p < 1)
CREATE OR REPLACE TEMP MACRO rankwise_rbp(recs, truth, k, rbp_persistence := 0.8, empty_labels := 'zero',
                                     empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('rbp_persistence', rbp_persistence, rbp_persistence > 0 AND rbp_persistence < 1,
                           'a number strictly between 0 and 1') THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        (1.0 - CAST(rbp_persistence AS DOUBLE)) * coalesce(list_sum(list_transform(
            rankwise__hits(rankwise__recs(recs, duplicates), truth, k),
            lambda p: pow(CAST(rbp_persistence AS DOUBLE), p - 1.0))), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- ERR@k = sum_i R_i / i prod_{j < i} (1 - R_j) over the first k positions, R the list of R_i
CREATE OR REPLACE TEMP MACRO rankwise__err_of(rs) AS
    coalesce(list_sum(list_transform(rs, lambda x, i: x / i * exp(coalesce(list_sum(list_transform(
        list_slice(rs, 1, i - 1), lambda y: ln(greatest(1.0 - y, 1e-300)))), 0.0)))), 0.0);

-- ERR@k with every label grade 1 (g_max 1: R = 1/2 at a hit), Chapelle et al. 2009
CREATE OR REPLACE TEMP MACRO rankwise_err(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                     duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        rankwise__err_of(list_transform(list_slice(rankwise__recs(recs, duplicates), 1, k),
                                        lambda x: CASE WHEN list_contains(coalesce(truth, []), x) THEN 0.5 ELSE 0.0 END)),
        empty_labels, empty_predictions, duplicates) END;

-- trec_eval's whole-set measures over the top k (trec_eval -M k). ret = min(k, list length), hits = hits@k,
-- n_rel = relevant labels. The counts and utility are defined for every row (no empty rule): only an
-- invalid row or no user at all is NaN
CREATE OR REPLACE TEMP MACRO rankwise__count(recs, truth, value, duplicates) AS
    CASE WHEN recs IS NULL AND truth IS NULL THEN 'NaN'::DOUBLE
         WHEN len(list_distinct(coalesce(truth, []))) <> len(coalesce(truth, []))
           OR len(list_filter(coalesce(recs, []), lambda x: x IS NULL)) > 0
           OR (duplicates = 'error' AND len(list_distinct(coalesce(recs, []))) <> len(coalesce(recs, [])))
         THEN 'NaN'::DOUBLE
         ELSE coalesce(CAST(value AS DOUBLE), 'NaN'::DOUBLE) END;

CREATE OR REPLACE TEMP MACRO rankwise__ret(recs, k, duplicates) AS
    CAST(least(k, len(rankwise__recs(recs, duplicates))) AS DOUBLE);

CREATE OR REPLACE TEMP MACRO rankwise__n_hits(recs, truth, k, duplicates) AS
    CAST(len(rankwise__hits(rankwise__recs(recs, duplicates), truth, k)) AS DOUBLE);

-- num_ret@k = ret (trec_eval's num_ret)
CREATE OR REPLACE TEMP MACRO rankwise_num_ret(recs, truth, k, duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates) THEN
    rankwise__count(recs, truth, rankwise__ret(recs, k, duplicates), duplicates) END;

-- num_rel@k = n_rel (trec_eval's num_rel)
CREATE OR REPLACE TEMP MACRO rankwise_num_rel(recs, truth, k, duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates) THEN
    rankwise__count(recs, truth, CAST(len(coalesce(truth, [])) AS DOUBLE), duplicates) END;

-- num_rel_ret@k = hits@k (trec_eval's num_rel_ret)
CREATE OR REPLACE TEMP MACRO rankwise_num_rel_ret(recs, truth, k, duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates) THEN
    rankwise__count(recs, truth, rankwise__n_hits(recs, truth, k, duplicates), duplicates) END;

-- utility@k = a hits + b (ret - hits) + c (n_rel - hits) + d (N + hits - ret - n_rel) (trec_eval's utility)
CREATE OR REPLACE TEMP MACRO rankwise_utility(recs, truth, k, utility_relevant_retrieved := 1.0,
                                         utility_nonrelevant_retrieved := -1.0, utility_relevant_missed := 0.0,
                                         utility_nonrelevant_missed := 0.0, collection_size := 0.0,
                                         duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates)
      AND rankwise__number('utility_relevant_retrieved', utility_relevant_retrieved, true, 'a finite number')
      AND rankwise__number('utility_nonrelevant_retrieved', utility_nonrelevant_retrieved, true, 'a finite number')
      AND rankwise__number('utility_relevant_missed', utility_relevant_missed, true, 'a finite number')
      AND rankwise__number('utility_nonrelevant_missed', utility_nonrelevant_missed, true, 'a finite number')
      AND rankwise__number('collection_size', collection_size, collection_size >= 0, 'a finite number >= 0') THEN
    rankwise__count(recs, truth,
        utility_relevant_retrieved * rankwise__n_hits(recs, truth, k, duplicates)
        + utility_nonrelevant_retrieved * (rankwise__ret(recs, k, duplicates) - rankwise__n_hits(recs, truth, k, duplicates))
        + utility_relevant_missed * (len(coalesce(truth, [])) - rankwise__n_hits(recs, truth, k, duplicates))
        + utility_nonrelevant_missed * (collection_size + rankwise__n_hits(recs, truth, k, duplicates)
                                        - rankwise__ret(recs, k, duplicates) - len(coalesce(truth, []))),
        duplicates) END;

-- set_p@k = hits / ret (trec_eval's set_P)
CREATE OR REPLACE TEMP MACRO rankwise_set_p(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                               duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        CASE WHEN rankwise__ret(recs, k, duplicates) > 0
             THEN rankwise__n_hits(recs, truth, k, duplicates) / rankwise__ret(recs, k, duplicates) ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- set_recall@k = hits / n_rel (trec_eval's set_recall; recall@k)
CREATE OR REPLACE TEMP MACRO rankwise_set_recall(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                            duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        rankwise__n_hits(recs, truth, k, duplicates) / nullif(CAST(len(coalesce(truth, [])) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- set_relative_p@k = hits / min(ret, n_rel) (trec_eval's set_relative_P)
CREATE OR REPLACE TEMP MACRO rankwise_set_relative_p(recs, truth, k, empty_labels := 'zero',
                                                        empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        rankwise__n_hits(recs, truth, k, duplicates)
            / nullif(least(rankwise__ret(recs, k, duplicates), len(coalesce(truth, []))), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- set_map@k = hits^2 / (ret n_rel) (trec_eval's set_map)
CREATE OR REPLACE TEMP MACRO rankwise_set_map(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                         duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        rankwise__n_hits(recs, truth, k, duplicates) * rankwise__n_hits(recs, truth, k, duplicates)
            / nullif(rankwise__ret(recs, k, duplicates) * CAST(len(coalesce(truth, [])) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- set_f@k = 2 hits / (ret + n_rel), 0 without a hit (trec_eval's set_F, weight 1)
CREATE OR REPLACE TEMP MACRO rankwise_set_f(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                       duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        CASE WHEN rankwise__n_hits(recs, truth, k, duplicates) > 0
             THEN 2.0 * rankwise__n_hits(recs, truth, k, duplicates)
                  / (rankwise__ret(recs, k, duplicates) + len(coalesce(truth, []))) ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- relative_p@k = hits / min(k, n_rel) (trec_eval's relative_P)
CREATE OR REPLACE TEMP MACRO rankwise_relative_p(recs, truth, k, empty_labels := 'zero',
                                                    empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        rankwise__n_hits(recs, truth, k, duplicates) / nullif(CAST(least(k, len(coalesce(truth, []))) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- rprec_mult@k = hits within the top min(k, c) / c, c = floor(m n_rel + 0.9) (trec_eval's Rprec_mult_<m>)
CREATE OR REPLACE TEMP MACRO rankwise_rprec_mult(recs, truth, k, rprec_multiplier := 1.0, empty_labels := 'zero',
                                            empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('rprec_multiplier', rprec_multiplier, rprec_multiplier > 0, 'a finite number > 0') THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        CASE WHEN floor(rprec_multiplier * len(coalesce(truth, [])) + 0.9) > 0
             THEN len(list_filter(rankwise__hits(rankwise__recs(recs, duplicates), truth, k),
                                  lambda p: p <= floor(rprec_multiplier * len(coalesce(truth, [])) + 0.9)))
                  / floor(rprec_multiplier * len(coalesce(truth, [])) + 0.9)
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- iprec_at_recall@k = max over the j-th hits within k, j >= r, of j / p_j; r = round(l n_rel) ('round', trec_eval
-- 10.0) or floor(l n_rel + 0.9) ('truncate_plus_0.9', trec_eval 9); 0 with fewer than r hits
CREATE OR REPLACE TEMP MACRO rankwise_iprec_at_recall(recs, truth, k, iprec_recall_level := 0.0,
                                                 iprec_recall_count := 'round', empty_labels := 'zero',
                                                 empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('iprec_recall_level', iprec_recall_level, iprec_recall_level >= 0 AND iprec_recall_level <= 1,
                           'a finite number between 0 and 1')
      AND rankwise__knob('iprec_recall_count', iprec_recall_count, ['round', 'truncate_plus_0.9']) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        coalesce(list_max(list_filter(
            list_transform(rankwise__hits(rankwise__recs(recs, duplicates), truth, k), lambda p, j: CAST(j AS DOUBLE) / p),
            lambda x, j: j >= floor(iprec_recall_level * len(coalesce(truth, []))
                                    + CASE WHEN iprec_recall_count = 'round' THEN 0.5 ELSE 0.9 END))), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- ipt11_avg@k = the mean of rankwise_iprec_at_recall at the levels 0.0, 0.1, ..., 1.0 (trec_eval's 11pt_avg)
CREATE OR REPLACE TEMP MACRO rankwise_ipt11_avg(recs, truth, k, iprec_recall_count := 'round', empty_labels := 'zero',
                                           empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('iprec_recall_count', iprec_recall_count, ['round', 'truncate_plus_0.9']) THEN
    rankwise__finish(recs, truth, len(coalesce(truth, [])),
        list_sum(list_transform(range(0, 11), lambda l: coalesce(list_max(list_filter(
            list_transform(rankwise__hits(rankwise__recs(recs, duplicates), truth, k), lambda p, j: CAST(j AS DOUBLE) / p),
            lambda x, j: j >= floor(CAST(l AS DOUBLE) / 10.0 * len(coalesce(truth, []))
                                    + CASE WHEN iprec_recall_count = 'round' THEN 0.5 ELSE 0.9 END))), 0.0))) / 11.0,
        empty_labels, empty_predictions, duplicates) END;

-- gm_map@k: per row AP@k as rankwise_map (the geometric mean is over rows: exp(avg(ln(greatest(x, 0.00001)))))
CREATE OR REPLACE TEMP MACRO rankwise_gm_map(recs, truth, k, ap_denominator := 'min_k_nrel', empty_labels := 'zero',
                                        empty_predictions := 'zero', duplicates := 'error') AS
    rankwise_map(recs, truth, k, ap_denominator := ap_denominator, empty_labels := empty_labels,
                 empty_predictions := empty_predictions, duplicates := duplicates);

-- graded relevance: rel is a list parallel to truth; a label is relevant when rel > 0 and rel >= threshold;
-- gain(r) = 1 if relevant else 0 (binary) | r (linear) | 2^r - 1 (exp2); labels with r = 0 earn nothing
CREATE OR REPLACE TEMP MACRO rankwise__gain(r, gain, relevance_threshold) AS
    CASE WHEN r IS NULL OR r <= 0 THEN 0.0
         WHEN gain = 'binary' THEN (CASE WHEN r >= relevance_threshold THEN 1.0 ELSE 0.0 END)
         WHEN gain = 'linear' THEN CAST(r AS DOUBLE)
         ELSE pow(2.0, CAST(r AS DOUBLE)) - 1.0 END;

-- a graded DCG or ideal DCG: an error naming the metric and the row's relevance when it is not finite (under
-- gain 'exp2' a relevance above 1023 overflows 2^relevance - 1), as evaluate() raises NumericOverflowError
CREATE OR REPLACE TEMP MACRO rankwise__finite(value, metric, rel, gain) AS
    CASE WHEN value IS NULL OR isfinite(value) THEN value
         ELSE error(format('rankwise: {} overflowed: a DCG too large for a double (the row''s relevance: {}). {}',
                           metric, CAST(rel AS VARCHAR),
                           CASE WHEN gain = 'exp2' THEN 'gain := ''exp2'' gives 2^relevance - 1, which overflows above '
                                    || 'relevance 1023: use gain := ''linear'', or rescale the relevance.'
                                ELSE 'Rescale the relevance values to a smaller range.' END)) END;

CREATE OR REPLACE TEMP MACRO rankwise__n_rel_graded(rel, relevance_threshold) AS
    len(list_filter(coalesce(rel, []), lambda r: r > 0 AND r >= relevance_threshold));

-- a graded row is invalid (NaN) when rel is not one finite number >= 0 per label
CREATE OR REPLACE TEMP MACRO rankwise__bad_rel(truth, rel) AS
    len(coalesce(rel, [])) <> len(coalesce(truth, []))
    OR len(list_filter(coalesce(rel, []), lambda r: r IS NULL OR isnan(r) OR isinf(r) OR r < 0)) > 0;

CREATE OR REPLACE TEMP MACRO rankwise__dcg_graded(r, truth, rel, k, gain, log_base, relevance_threshold) AS
    coalesce(list_sum(list_transform(range(1, CAST(least(k, len(r)) AS BIGINT) + 1),
        lambda p: rankwise__gain(coalesce(rel, [])[list_position(coalesce(truth, []), r[p])], gain, relevance_threshold)
             / (ln(p + 1.0) / ln(log_base)))), 0.0);

-- DCG@k with graded relevance
CREATE OR REPLACE TEMP MACRO rankwise_dcg_graded(recs, truth, rel, k, gain := 'linear', log_base := 2.0,
                                            relevance_threshold := 0.0, empty_labels := 'zero',
                                            empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('gain', gain, ['binary', 'linear', 'exp2'])
      AND rankwise__number('log_base', log_base, log_base > 1, 'a finite number > 1')
      AND rankwise__number('relevance_threshold', relevance_threshold, relevance_threshold >= 0, 'a finite number >= 0') THEN
    CASE WHEN rankwise__bad_rel(truth, rel) THEN 'NaN'::DOUBLE ELSE
    rankwise__finish(recs, truth, rankwise__n_rel_graded(rel, relevance_threshold),
        rankwise__finite(rankwise__dcg_graded(rankwise__recs(recs, duplicates), truth, rel, k, gain, log_base,
                                              relevance_threshold), 'rankwise_dcg_graded', rel, gain),
        empty_labels, empty_predictions, duplicates) END END;

-- NDCG@k with graded relevance; the ideal: the top-k recommended gains sorted (predictions_topk), all the
-- labels' gains sorted and cut at k (labels), or k gains of 1 (k_ones)
CREATE OR REPLACE TEMP MACRO rankwise_ndcg_graded(recs, truth, rel, k, gain := 'linear', log_base := 2.0,
                                             ideal := 'labels', zero_ideal := 'zero',
                                             relevance_threshold := 0.0, empty_labels := 'zero',
                                             empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('gain', gain, ['binary', 'linear', 'exp2'])
      AND rankwise__number('log_base', log_base, log_base > 1, 'a finite number > 1')
      AND rankwise__knob('ideal', ideal, ['predictions_topk', 'labels', 'k_ones'])
      AND rankwise__knob('zero_ideal', zero_ideal, ['zero', 'nan'])
      AND rankwise__number('k', k, ideal <> 'k_ones' OR k <= 10000, 'at most 10000 with ideal := ''k_ones''')
      AND rankwise__number('relevance_threshold', relevance_threshold, relevance_threshold >= 0, 'a finite number >= 0') THEN
    CASE WHEN rankwise__bad_rel(truth, rel) THEN 'NaN'::DOUBLE ELSE
    rankwise__finish(recs, truth, rankwise__n_rel_graded(rel, relevance_threshold),
        rankwise__ratio(
            rankwise__finite(rankwise__dcg_graded(rankwise__recs(recs, duplicates), truth, rel, k, gain, log_base,
                                                  relevance_threshold), 'rankwise_ndcg_graded', rel, gain),
            rankwise__finite(CASE WHEN ideal = 'k_ones' THEN rankwise__ones(k, log_base)
                 ELSE coalesce(list_sum(list_transform(
                     list_slice(list_reverse_sort(
                         CASE WHEN ideal = 'labels'
                              THEN list_transform(coalesce(rel, []), lambda x: rankwise__gain(x, gain, relevance_threshold))
                              ELSE list_transform(list_slice(rankwise__recs(recs, duplicates), 1, k),
                                       lambda x: rankwise__gain(coalesce(rel, [])[list_position(coalesce(truth, []), x)],
                                                           gain, relevance_threshold)) END), 1, k),
                     lambda g, i: g / (ln(i + 1.0) / ln(log_base)))), 0.0) END, 'rankwise_ndcg_graded', rel, gain),
            zero_ideal),
        empty_labels, empty_predictions, duplicates) END END;

-- ERR@k graded: R = (2^g - 1) / 2^g_max, g the label's relevance (rel parallel to truth; 0 without a label),
-- a grade above g_max counting as g_max. g_max must be given: a macro sees one row (evaluate() takes the
-- largest relevance of the whole ground truth)
CREATE OR REPLACE TEMP MACRO rankwise_err_graded(recs, truth, rel, k, err_max_grade := 0.0, empty_labels := 'zero',
                                            empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('err_max_grade', err_max_grade, err_max_grade > 0,
                           'the top grade of the scale, > 0 (a macro sees one row, not the whole ground truth)') THEN
    CASE WHEN rankwise__bad_rel(truth, rel) THEN 'NaN'::DOUBLE ELSE
    rankwise__finish(recs, truth, rankwise__n_rel_graded(rel, 0.0),
        rankwise__err_of(list_transform(list_slice(rankwise__recs(recs, duplicates), 1, k), lambda x:
            CASE WHEN coalesce(coalesce(rel, [])[list_position(coalesce(truth, []), x)], 0) > 0
                 THEN pow(2.0, greatest(least(CAST(coalesce(rel, [])[list_position(coalesce(truth, []), x)] AS DOUBLE),
                                              CAST(err_max_grade AS DOUBLE)) - CAST(err_max_grade AS DOUBLE), -1000.0))
                      - pow(2.0, -least(CAST(err_max_grade AS DOUBLE), 1000.0))
                 ELSE 0.0 END)),
        empty_labels, empty_predictions, duplicates) END END;

-- Beyond accuracy on one row, as rankwise.expr.novelty / arp: popularity = each recommended item's
-- train popularity, a list parallel to the recommendations (NULL or 0: a cold item); n_users = U_T.
--   SELECT rankwise_novelty(pop, 10, 5000), rankwise_arp(pop, 10) FROM t
-- the items of the first k that count (cold_items = 'drop' leaves cold ones out)
CREATE OR REPLACE TEMP MACRO rankwise__counted(top, cold_items) AS
    len(list_filter(top, lambda p: NOT (cold_items = 'drop' AND coalesce(p, 0) = 0)));

-- total / the list denominator: k, or the items counted; NaN for a NULL list, a zero denominator or a
-- popularity that is no count (negative, NaN or infinite: a row evaluate() would reject)
CREATE OR REPLACE TEMP MACRO rankwise__pop_mean(top, total, k, cold_items, list_denominator) AS
    CASE WHEN top IS NULL THEN 'NaN'::DOUBLE
         WHEN NOT coalesce(list_bool_and(list_transform(top, lambda p:
                  p IS NULL OR (isfinite(CAST(p AS DOUBLE)) AND p >= 0))), true) THEN 'NaN'::DOUBLE
         WHEN (CASE WHEN list_denominator = 'k' THEN k ELSE rankwise__counted(top, cold_items) END) = 0
         THEN 'NaN'::DOUBLE
         ELSE total / (CASE WHEN list_denominator = 'k' THEN k ELSE rankwise__counted(top, cold_items) END) END;

CREATE OR REPLACE TEMP MACRO rankwise_arp(popularity, k, cold_items := 'as_one', list_denominator := 'n_u') AS
    CASE WHEN rankwise__k(k)
      AND rankwise__knob('cold_items', cold_items, ['as_one', 'drop', 'zero_novelty'])
      AND rankwise__knob('list_denominator', list_denominator, ['n_u', 'k']) THEN
    rankwise__pop_mean(popularity[1:k],
        coalesce(list_sum(list_transform(popularity[1:k], lambda p:
            CASE WHEN cold_items = 'drop' AND coalesce(p, 0) = 0 THEN 0.0 ELSE CAST(coalesce(p, 0) AS DOUBLE) END)), 0.0),
        k, cold_items, list_denominator) END;

CREATE OR REPLACE TEMP MACRO rankwise_novelty(popularity, k, n_users, cold_items := 'as_one', list_denominator := 'n_u',
                                         novelty_normalize := 'none', info_log_base := 2.0) AS
    CASE WHEN rankwise__k(k)
      AND rankwise__knob('cold_items', cold_items, ['as_one', 'drop', 'zero_novelty'])
      AND rankwise__knob('list_denominator', list_denominator, ['n_u', 'k'])
      AND rankwise__knob('novelty_normalize', novelty_normalize, ['none', 'log_users'])
      AND rankwise__number('info_log_base', info_log_base, info_log_base > 1, 'a finite number > 1') THEN
    CASE WHEN novelty_normalize = 'log_users' AND n_users <= 1 THEN 'NaN'::DOUBLE
         ELSE rankwise__pop_mean(popularity[1:k],
             coalesce(list_sum(list_transform(popularity[1:k], lambda p:
                 CASE WHEN coalesce(p, 0) = 0 AND cold_items IN ('drop', 'zero_novelty') THEN 0.0
                      ELSE -ln(CAST(greatest(coalesce(p, 0), 1) AS DOUBLE) / greatest(n_users, 1))
                           / (CASE WHEN novelty_normalize = 'log_users' THEN ln(n_users) ELSE ln(info_log_base) END)
                 END)), 0.0),
             k, cold_items, list_denominator) END END;

-- ILD on one row, as rankwise.expr.ild: embeddings = each recommended item's feature vector, a list
-- parallel to the recommendations (NULL: no features). m = the first k vectors that are neither NULL
-- nor zero; sum over pairs of 1 - cos = m(m-1)/2 - (|sum of unit vectors|^2 - m) / 2, divided by the
-- pairs or (ild_denominator = 'n_u', Evidently) by m; m < 2: NaN or (ild_short = 'zero') 0. A row
-- evaluate() would reject (vectors of different lengths, a NULL or non-finite component) is NaN.
--   SELECT rankwise_ild(vectors, 10) FROM t
-- (each vector over its largest |component| first, so that its squared norm neither overflows nor underflows)
CREATE OR REPLACE TEMP MACRO rankwise__units(vectors) AS
    list_transform(
        list_transform(list_filter(vectors, lambda v: v IS NOT NULL AND coalesce(list_max(list_transform(v, lambda x: abs(x))), 0) > 0),
                       lambda v: list_transform(v, lambda x: x / list_max(list_transform(v, lambda y: abs(y))))),
        lambda v: list_transform(v, lambda x: x / sqrt(list_sum(list_transform(v, lambda y: y * y)))));

CREATE OR REPLACE TEMP MACRO rankwise__ild_valid(vectors) AS
    vectors IS NOT NULL
    AND len(list_distinct(list_transform(list_filter(vectors, lambda v: v IS NOT NULL), lambda v: len(v)))) <= 1
    AND coalesce(list_bool_and(list_transform(list_filter(vectors, lambda v: v IS NOT NULL), lambda v:
            list_bool_and(list_transform(v, lambda x: x IS NOT NULL AND isfinite(x))))), true);

CREATE OR REPLACE TEMP MACRO rankwise__ild_of(units, ild_denominator, ild_short) AS
    CASE WHEN len(units) < 2 THEN (CASE WHEN ild_short = 'zero' THEN 0.0 ELSE 'NaN'::DOUBLE END)
         ELSE least(greatest(len(units) * (len(units) - 1) / 2.0
               - (list_sum(list_transform(list_reduce(units, lambda a, b: list_transform(a, lambda x, j: x + b[j])),
                                          lambda s: s * s)) - len(units)) / 2.0, 0.0), len(units) * (len(units) - 1.0))
              / (CASE WHEN ild_denominator = 'n_u' THEN len(units) ELSE len(units) * (len(units) - 1) / 2.0 END)
    END;

CREATE OR REPLACE TEMP MACRO rankwise_ild(embeddings, k, ild_denominator := 'pairs', ild_short := 'nan') AS
    CASE WHEN rankwise__k(k)
      AND rankwise__knob('ild_denominator', ild_denominator, ['pairs', 'n_u'])
      AND rankwise__knob('ild_short', ild_short, ['nan', 'zero']) THEN
    CASE WHEN NOT rankwise__ild_valid(list_transform(embeddings[1:k], lambda v: CAST(v AS DOUBLE[])))
         THEN 'NaN'::DOUBLE
         ELSE rankwise__ild_of(rankwise__units(list_transform(embeddings[1:k], lambda v: CAST(v AS DOUBLE[]))),
                               ild_denominator, ild_short) END END;
