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
--
-- Written by hand: the checks, the row rules and the list-form statistics (rankwise__stat_<name>, the
-- per-(user, k) statistics of sql/per_user.sql computed from one row's lists). Each metric's macro, below
-- the marker at the end, is generated from its declaration (rankwise.metrics.declarations: its formula
-- over the statistics) by python -m rankwise.generate.sql.

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

-- a row evaluate() would reject: a repeated or NULL label, a NULL item, a repeated item under duplicates 'error'
CREATE OR REPLACE TEMP MACRO rankwise__invalid(recs, truth, duplicates) AS
    len(list_distinct(coalesce(truth, []))) <> len(coalesce(truth, []))
    OR len(list_filter(coalesce(recs, []), lambda x: x IS NULL)) > 0
    OR (duplicates = 'error' AND len(list_distinct(coalesce(recs, []))) <> len(coalesce(recs, [])));

-- the empty / invalid rules around a metric's value (n_rel = number of relevant labels)
CREATE OR REPLACE TEMP MACRO rankwise__finish(recs, truth, n_rel, value, empty_labels, empty_predictions, duplicates) AS
    CASE WHEN recs IS NULL AND truth IS NULL THEN 'NaN'::DOUBLE
         WHEN rankwise__invalid(recs, truth, duplicates) THEN 'NaN'::DOUBLE
         WHEN n_rel = 0 THEN (CASE empty_labels WHEN 'zero' THEN 0.0 WHEN 'one' THEN 1.0 ELSE 'NaN'::DOUBLE END)
         WHEN len(coalesce(recs, [])) = 0
         THEN (CASE empty_predictions WHEN 'zero' THEN 0.0 WHEN 'one' THEN 1.0 ELSE 'NaN'::DOUBLE END)
         ELSE coalesce(CAST(value AS DOUBLE), 'NaN'::DOUBLE) END;

-- the same for trec_eval's counts and utility, defined for every row (no empty rule): only an invalid row
-- or no user at all is NaN
CREATE OR REPLACE TEMP MACRO rankwise__count(recs, truth, value, duplicates) AS
    CASE WHEN recs IS NULL AND truth IS NULL THEN 'NaN'::DOUBLE
         WHEN rankwise__invalid(recs, truth, duplicates) THEN 'NaN'::DOUBLE
         ELSE coalesce(CAST(value AS DOUBLE), 'NaN'::DOUBLE) END;

-- ERR = sum_i R_i / i prod_{j < i} (1 - R_j) over the first k positions, rs the list of R_i
CREATE OR REPLACE TEMP MACRO rankwise__err_of(rs) AS
    coalesce(list_sum(list_transform(rs, lambda x, i: x / i * exp(coalesce(list_sum(list_transform(
        list_slice(rs, 1, i - 1), lambda y: ln(greatest(1.0 - y, 1e-300)))), 0.0)))), 0.0);

-- graded relevance: rel is a list parallel to truth; a label is relevant when rel > 0 and rel >= threshold;
-- gain(r) = 1 if relevant else 0 (binary) | r (linear) | 2^r - 1 (exp2); labels with r = 0 earn nothing
CREATE OR REPLACE TEMP MACRO rankwise__gain(r, gain, relevance_threshold) AS
    CASE WHEN r IS NULL OR r <= 0 THEN 0.0
         WHEN gain = 'binary' THEN (CASE WHEN r >= relevance_threshold THEN 1.0 ELSE 0.0 END)
         WHEN gain = 'linear' THEN CAST(r AS DOUBLE)
         ELSE pow(2.0, CAST(r AS DOUBLE)) - 1.0 END;

-- a graded DCG or ideal DCG: an error naming the macro and the row's relevance when it is not finite (under
-- gain 'exp2' a relevance above 1023 overflows 2^relevance - 1), as evaluate() raises NumericOverflowError
CREATE OR REPLACE TEMP MACRO rankwise__finite(value, metric, rel, gain) AS
    CASE WHEN value IS NULL OR isfinite(value) THEN value
         ELSE error(format('rankwise: {} overflowed: a DCG too large for a double (the row''s relevance: {}). {}',
                           metric, CAST(rel AS VARCHAR),
                           CASE WHEN gain = 'exp2' THEN 'gain := ''exp2'' gives 2^relevance - 1, which overflows above '
                                    || 'relevance 1023: use gain := ''linear'', or rescale the relevance.'
                                ELSE 'Rescale the relevance values to a smaller range.' END)) END;

-- a graded row is invalid (NaN) when rel is not one finite number per label, or holds a negative one under
-- negative_relevance 'error' ('unjudged': trec_eval's pooled-but-unjudged label, as evaluate() reads it)
CREATE OR REPLACE TEMP MACRO rankwise__bad_rel(truth, rel, negative_relevance) AS
    len(coalesce(rel, [])) <> len(coalesce(truth, []))
    OR len(list_filter(coalesce(rel, []), lambda r: r IS NULL OR isnan(r) OR isinf(r)
                                                    OR (r < 0 AND negative_relevance = 'error'))) > 0;

-- relevance 1 per label: a binary macro reads a graded statistic over it (with every label relevant)
CREATE OR REPLACE TEMP MACRO rankwise__ones_like(truth) AS
    list_transform(coalesce(truth, []), lambda x: 1.0);

-- The statistics of one row (sql/per_user.sql's per-(user, k) statistics, rankwise.metrics.formulas.STATISTICS)
-- from its lists: rankwise__stat_<name>, and rankwise__stat_<name>_graded where a relevance list changes it.
-- A metric's generated macro passes each its own arguments of the same names (macro: the metric macro's
-- name, for an error message); k is the macro's k.
CREATE OR REPLACE TEMP MACRO rankwise__stat_n_recs(recs, duplicates) AS
    len(rankwise__recs(recs, duplicates));

-- the relevant labels
CREATE OR REPLACE TEMP MACRO rankwise__stat_n_rel(truth) AS
    len(coalesce(truth, []));

CREATE OR REPLACE TEMP MACRO rankwise__stat_n_rel_graded(rel, relevance_threshold) AS
    len(list_filter(coalesce(rel, []), lambda r: r > 0 AND r >= relevance_threshold));

-- hits@k
CREATE OR REPLACE TEMP MACRO rankwise__stat_hits(recs, truth, k, duplicates) AS
    CAST(len(rankwise__hits(rankwise__recs(recs, duplicates), truth, k)) AS DOUBLE);

-- sum over the hit positions p of hits@p / p: the j-th hit at position p adds j / p
CREATE OR REPLACE TEMP MACRO rankwise__stat_precision_sum(recs, truth, k, duplicates) AS
    coalesce(list_sum(list_transform(rankwise__hits(rankwise__recs(recs, duplicates), truth, k),
                                     lambda p, j: CAST(j AS DOUBLE) / p)), 0.0);

-- sum over the hits of their number j: h (h + 1) / 2
CREATE OR REPLACE TEMP MACRO rankwise__stat_hits_sum(recs, truth, k, duplicates) AS
    CAST(len(rankwise__hits(rankwise__recs(recs, duplicates), truth, k))
         * (len(rankwise__hits(rankwise__recs(recs, duplicates), truth, k)) + 1) / 2 AS DOUBLE);

-- hits within the top min(k, n_rel)
CREATE OR REPLACE TEMP MACRO rankwise__stat_r_hits(recs, truth, k, duplicates) AS
    len(rankwise__hits(rankwise__recs(recs, duplicates), truth, least(k, len(coalesce(truth, [])))));

-- the first hit position within k (rr_cutoff) or anywhere in the list; 0 without one
CREATE OR REPLACE TEMP MACRO rankwise__stat_first_hit(recs, truth, k, rr_cutoff, duplicates) AS
    coalesce(rankwise__hits(rankwise__recs(recs, duplicates), truth, CASE WHEN rr_cutoff THEN k ELSE 2147483647 END)[1], 0);

-- the items recommended or relevant: n_recs + n_rel - the hits anywhere in the list
CREATE OR REPLACE TEMP MACRO rankwise__stat_n_candidates(recs, truth, duplicates) AS
    len(rankwise__recs(recs, duplicates)) + len(coalesce(truth, []))
    - len(rankwise__hits(rankwise__recs(recs, duplicates), truth, 2147483647));

-- DCG@k = sum over hit positions p of 1 / log_b(p + 1) (relevance 1: every gain rule gives 1)
CREATE OR REPLACE TEMP MACRO rankwise__stat_dcg(recs, truth, k, log_base, duplicates) AS
    coalesce(list_sum(list_transform(rankwise__hits(rankwise__recs(recs, duplicates), truth, k),
                                     lambda p: 1.0 / (ln(p + 1.0) / ln(log_base)))), 0.0);

-- DCG@k of the gains of the labels (rel parallel to truth)
CREATE OR REPLACE TEMP MACRO rankwise__stat_dcg_graded(recs, truth, rel, k, gain, log_base, relevance_threshold, duplicates,
                                                       macro) AS
    rankwise__finite(coalesce(list_sum(list_transform(
        range(1, CAST(least(k, len(rankwise__recs(recs, duplicates))) AS BIGINT) + 1),
        lambda p: rankwise__gain(coalesce(rel, [])[list_position(coalesce(truth, []), rankwise__recs(recs, duplicates)[p])],
                                 gain, relevance_threshold) / (ln(p + 1.0) / ln(log_base)))), 0.0), macro, rel, gain);

-- IDCG@k: ones over hits@k (predictions_topk), over min(k, n_rel) (labels) or over k (k_ones)
CREATE OR REPLACE TEMP MACRO rankwise__stat_idcg(recs, truth, k, log_base, ideal, duplicates) AS
    rankwise__ones(CASE ideal
                   WHEN 'predictions_topk' THEN len(rankwise__hits(rankwise__recs(recs, duplicates), truth, k))
                   WHEN 'labels' THEN least(k, len(coalesce(truth, [])))
                   ELSE k END, log_base);

-- graded: the top-k recommended gains sorted (predictions_topk), all the labels' gains sorted and cut at k
-- (labels), or k gains of 1 (k_ones)
CREATE OR REPLACE TEMP MACRO rankwise__stat_idcg_graded(recs, truth, rel, k, gain, log_base, ideal, relevance_threshold,
                                                        duplicates, macro) AS
    rankwise__finite(CASE WHEN ideal = 'k_ones' THEN rankwise__ones(k, log_base)
         ELSE coalesce(list_sum(list_transform(
             list_slice(list_reverse_sort(
                 CASE WHEN ideal = 'labels'
                      THEN list_transform(coalesce(rel, []), lambda x: rankwise__gain(x, gain, relevance_threshold))
                      ELSE list_transform(list_slice(rankwise__recs(recs, duplicates), 1, k),
                               lambda x: rankwise__gain(coalesce(rel, [])[list_position(coalesce(truth, []), x)],
                                                        gain, relevance_threshold)) END), 1, k),
             lambda g, i: g / (ln(i + 1.0) / ln(log_base)))), 0.0) END, macro, rel, gain);

-- sum over hit positions i of p^(i - 1), p = rbp_persistence
CREATE OR REPLACE TEMP MACRO rankwise__stat_rbp_sum(recs, truth, k, rbp_persistence, duplicates) AS
    coalesce(list_sum(list_transform(rankwise__hits(rankwise__recs(recs, duplicates), truth, k),
                                     lambda p: pow(CAST(rbp_persistence AS DOUBLE), p - 1.0))), 0.0);

-- ERR@k with every label grade 1 (g_max 1: R = 1/2 at a hit), Chapelle et al. 2009
CREATE OR REPLACE TEMP MACRO rankwise__stat_err_sum(recs, truth, k, duplicates) AS
    rankwise__err_of(list_transform(list_slice(rankwise__recs(recs, duplicates), 1, k),
                                    lambda x: CASE WHEN list_contains(coalesce(truth, []), x) THEN 0.5 ELSE 0.0 END));

-- graded: R = (2^g - 1) / 2^g_max, g the label's relevance (0 without a label), a grade above g_max
-- counting as g_max
CREATE OR REPLACE TEMP MACRO rankwise__stat_err_sum_graded(recs, truth, rel, k, err_max_grade, duplicates) AS
    rankwise__err_of(list_transform(list_slice(rankwise__recs(recs, duplicates), 1, k), lambda x:
        CASE WHEN coalesce(coalesce(rel, [])[list_position(coalesce(truth, []), x)], 0) > 0
             THEN pow(2.0, greatest(least(CAST(coalesce(rel, [])[list_position(coalesce(truth, []), x)] AS DOUBLE),
                                          CAST(err_max_grade AS DOUBLE)) - CAST(err_max_grade AS DOUBLE), -1000.0))
                  - pow(2.0, -least(CAST(err_max_grade AS DOUBLE), 1000.0))
             ELSE 0.0 END));

-- hits within the top min(k, c), c = floor(m n_rel + 0.9), m = rprec_multiplier
CREATE OR REPLACE TEMP MACRO rankwise__stat_mult_hits(recs, truth, k, rprec_multiplier, duplicates) AS
    len(list_filter(rankwise__hits(rankwise__recs(recs, duplicates), truth, k),
                    lambda p: p <= floor(CAST(rprec_multiplier AS DOUBLE) * len(coalesce(truth, [])) + 0.9)));

-- the largest j / p_j over the j-th hits within k, j >= r; r = round(l n_rel) ('round', trec_eval 10.0) or
-- floor(l n_rel + 0.9) ('truncate_plus_0.9', trec_eval 9), l = iprec_recall_level; 0 with fewer than r hits
CREATE OR REPLACE TEMP MACRO rankwise__stat_iprec_max(recs, truth, k, iprec_recall_level, iprec_recall_count, duplicates) AS
    coalesce(list_max(list_filter(
        list_transform(rankwise__hits(rankwise__recs(recs, duplicates), truth, k), lambda p, j: CAST(j AS DOUBLE) / p),
        lambda x, j: j >= floor(iprec_recall_level * len(coalesce(truth, []))
                                + CASE WHEN iprec_recall_count = 'round' THEN 0.5 ELSE 0.9 END))), 0.0);

-- iprec_max at the levels 0.0, 0.1, ..., 1.0, summed (trec_eval's 11pt_avg)
CREATE OR REPLACE TEMP MACRO rankwise__stat_ipt11_sum(recs, truth, k, iprec_recall_count, duplicates) AS
    list_sum(list_transform(range(0, 11), lambda l: coalesce(list_max(list_filter(
        list_transform(rankwise__hits(rankwise__recs(recs, duplicates), truth, k), lambda p, j: CAST(j AS DOUBLE) / p),
        lambda x, j: j >= floor(CAST(l AS DOUBLE) / 10.0 * len(coalesce(truth, []))
                                + CASE WHEN iprec_recall_count = 'round' THEN 0.5 ELSE 0.9 END))), 0.0)));

-- trec_eval's judged-aware and gain statistics (sql/per_user.sql's pool and gain stages; rankwise.expr's
-- _Rows._judged_statistics), over the label relevance of each of the first k items (NULL: no label). An item is
-- of kind 1 (relevant: relevance > 0 and >= the threshold), 0 (judged non-relevant: another relevance >= 0),
-- -1 (pooled, not judged: a negative relevance) or NULL (no label: not judged).
CREATE OR REPLACE TEMP MACRO rankwise__lrel(recs, truth, rel, k, duplicates) AS
    list_transform(list_slice(rankwise__recs(recs, duplicates), 1, k),
                   lambda x: coalesce(rel, [])[list_position(coalesce(truth, []), x)]);

CREATE OR REPLACE TEMP MACRO rankwise__kinds(recs, truth, rel, k, relevance_threshold, duplicates) AS
    list_transform(rankwise__lrel(recs, truth, rel, k, duplicates), lambda r:
        CASE WHEN r > 0 AND r >= relevance_threshold THEN 1 WHEN r >= 0 THEN 0 WHEN r < 0 THEN -1 END);

-- the items of a kind among positions 1..i - 1 of a kinds list
CREATE OR REPLACE TEMP MACRO rankwise__before(kinds, i, kind) AS
    len(list_filter(list_slice(kinds, 1, i - 1), lambda y: y = kind));

-- the gain of each of the first k items (0 without a label that earns), and the labels' ideal: their positive
-- gains, descending
CREATE OR REPLACE TEMP MACRO rankwise__gains(recs, truth, rel, k, gain, relevance_threshold, duplicates) AS
    list_transform(rankwise__lrel(recs, truth, rel, k, duplicates), lambda r: rankwise__gain(r, gain, relevance_threshold));

CREATE OR REPLACE TEMP MACRO rankwise__ideal(rel, gain, relevance_threshold) AS
    list_reverse_sort(list_filter(list_transform(coalesce(rel, []), lambda r: rankwise__gain(r, gain, relevance_threshold)),
                                  lambda g: g > 0));

-- sum_i gains_i / log_b(i + 1)
CREATE OR REPLACE TEMP MACRO rankwise__dcg_of(gains, log_base) AS
    coalesce(list_sum(list_transform(gains, lambda x, j: x / (ln(j + 1.0) / ln(log_base)))), 0.0);

-- hits@k: the relevant items among the first k
CREATE OR REPLACE TEMP MACRO rankwise__stat_hits_graded(recs, truth, rel, k, relevance_threshold, duplicates) AS
    CAST(len(list_filter(rankwise__kinds(recs, truth, rel, k, relevance_threshold, duplicates), lambda x: x = 1))
         AS DOUBLE);

-- the judged non-relevant items / the pooled items among the first k
CREATE OR REPLACE TEMP MACRO rankwise__stat_nonrel_ret_graded(recs, truth, rel, k, relevance_threshold, duplicates) AS
    CAST(len(list_filter(rankwise__kinds(recs, truth, rel, k, relevance_threshold, duplicates), lambda x: x = 0))
         AS DOUBLE);

CREATE OR REPLACE TEMP MACRO rankwise__stat_pooled_ret_graded(recs, truth, rel, k, relevance_threshold, duplicates) AS
    CAST(len(list_filter(rankwise__kinds(recs, truth, rel, k, relevance_threshold, duplicates), lambda x: x = -1))
         AS DOUBLE);

-- bpref: at each relevant item 1 - min(n, R) / min(N, R) (1 when n = 0), n = judged non-relevant items above it,
-- R = relevant labels, N = judged non-relevant labels (m_bpref.c)
CREATE OR REPLACE TEMP MACRO rankwise__bpref_of(kinds, n_rel, n_nonrel) AS
    coalesce(list_sum(list_transform(kinds, lambda x, i: CASE WHEN x = 1 THEN
        (CASE WHEN rankwise__before(kinds, i, 0) > 0
              THEN 1.0 - CAST(least(rankwise__before(kinds, i, 0), n_rel) AS DOUBLE) / CAST(least(n_nonrel, n_rel) AS DOUBLE)
              ELSE 1.0 END) ELSE 0.0 END)), 0.0);

CREATE OR REPLACE TEMP MACRO rankwise__stat_bpref_sum_graded(recs, truth, rel, k, relevance_threshold, duplicates) AS
    rankwise__bpref_of(rankwise__kinds(recs, truth, rel, k, relevance_threshold, duplicates),
                       len(list_filter(coalesce(rel, []), lambda r: r > 0 AND r >= relevance_threshold)),
                       len(list_filter(coalesce(rel, []), lambda r: r >= 0 AND NOT (r > 0 AND r >= relevance_threshold))));

-- infAP: at each relevant item at rank i, 1 if i = 1, else 1/i + ((i - 1)/i) ((r + n + p) / (i - 1))
-- ((r + 0.00001) / (r + n + 0.00002)), r, n, p = the relevant, judged non-relevant and pooled items above it
-- (m_infap.c)
CREATE OR REPLACE TEMP MACRO rankwise__infap_of(kinds) AS
    coalesce(list_sum(list_transform(kinds, lambda x, i: CASE WHEN x <> 1 OR x IS NULL THEN 0.0 WHEN i = 1 THEN 1.0
        ELSE 1.0 / CAST(i AS DOUBLE) + CAST(i - 1 AS DOUBLE) / CAST(i AS DOUBLE)
             * (CAST(rankwise__before(kinds, i, 1) + rankwise__before(kinds, i, 0) + rankwise__before(kinds, i, -1) AS DOUBLE)
                / CAST(i - 1 AS DOUBLE))
             * ((CAST(rankwise__before(kinds, i, 1) AS DOUBLE) + CAST(0.00001 AS DOUBLE))
                / (CAST(rankwise__before(kinds, i, 1) + rankwise__before(kinds, i, 0) AS DOUBLE) + CAST(0.00002 AS DOUBLE)))
        END)), 0.0);

CREATE OR REPLACE TEMP MACRO rankwise__stat_infap_sum_graded(recs, truth, rel, k, relevance_threshold, duplicates) AS
    rankwise__infap_of(rankwise__kinds(recs, truth, rel, k, relevance_threshold, duplicates));

-- binG: at each relevant item at rank i, 1 / log2(2 + the non-relevant items within 1..i) (m_binG.c)
CREATE OR REPLACE TEMP MACRO rankwise__bing_of(kinds) AS
    coalesce(list_sum(list_transform(kinds, lambda x, i: CASE WHEN x = 1
        THEN 1.0 / (ln(2.0 + CAST(i - rankwise__before(kinds, i + 1, 1) AS DOUBLE)) / ln(2.0)) ELSE 0.0 END)), 0.0);

CREATE OR REPLACE TEMP MACRO rankwise__stat_bing_sum_graded(recs, truth, rel, k, relevance_threshold, duplicates) AS
    rankwise__bing_of(rankwise__kinds(recs, truth, rel, k, relevance_threshold, duplicates));

-- G: at each item of nonzero gain g_i / log2(2 + C_i - S_i), S_i = the gains of items 1..i, C_i = the ideal's
-- gains at 1..i each at least 1, and 1 per position past the ideal (m_G.c)
CREATE OR REPLACE TEMP MACRO rankwise__g_of(gains, ideal) AS
    coalesce(list_sum(list_transform(gains, lambda x, i: CASE WHEN x <> 0
        THEN x / (ln(2.0 + (coalesce(list_sum(list_transform(list_slice(ideal, 1, i), lambda c: greatest(c, 1.0))), 0.0)
                           + CAST(greatest(i - len(ideal), 0) AS DOUBLE)) - list_sum(list_slice(gains, 1, i))) / ln(2.0))
        ELSE 0.0 END)), 0.0);

CREATE OR REPLACE TEMP MACRO rankwise__stat_g_sum_graded(recs, truth, rel, k, gain, relevance_threshold, duplicates) AS
    rankwise__g_of(rankwise__gains(recs, truth, rel, k, gain, relevance_threshold, duplicates),
                   rankwise__ideal(rel, gain, relevance_threshold));

-- ndcg_rel: at each item of positive gain at rank i, DCG@i / IDCG@min(i, P) (m_ndcg_rel.c)
CREATE OR REPLACE TEMP MACRO rankwise__ndcg_rel_of(gains, ideal, log_base) AS
    coalesce(list_sum(list_transform(gains, lambda x, i: CASE WHEN x > 0
        THEN rankwise__dcg_of(list_slice(gains, 1, i), log_base) / rankwise__dcg_of(list_slice(ideal, 1, i), log_base)
        ELSE 0.0 END)), 0.0);

CREATE OR REPLACE TEMP MACRO rankwise__stat_ndcg_rel_sum_graded(recs, truth, rel, k, gain, log_base, relevance_threshold,
                                                                duplicates) AS
    rankwise__ndcg_rel_of(rankwise__gains(recs, truth, rel, k, gain, relevance_threshold, duplicates),
                          rankwise__ideal(rel, gain, relevance_threshold), log_base);

-- Rndcg: at each end m of a run of equal gain in the ideal, DCG@min(m, N) / IDCG@m (m_Rndcg.c)
CREATE OR REPLACE TEMP MACRO rankwise__rndcg_of(gains, ideal, log_base) AS
    coalesce(list_sum(list_transform(ideal, lambda x, m: CASE WHEN m = len(ideal) OR x <> ideal[m + 1]
        THEN rankwise__dcg_of(list_slice(gains, 1, m), log_base) / rankwise__dcg_of(list_slice(ideal, 1, m), log_base)
        ELSE 0.0 END)), 0.0);

CREATE OR REPLACE TEMP MACRO rankwise__stat_rndcg_sum_graded(recs, truth, rel, k, gain, log_base, relevance_threshold,
                                                             duplicates) AS
    rankwise__rndcg_of(rankwise__gains(recs, truth, rel, k, gain, relevance_threshold, duplicates),
                       rankwise__ideal(rel, gain, relevance_threshold), log_base);

-- the items of positive gain, and the judged items (a label >= 0) among the first k; the judged items'
-- p^(i - 1) summed (rbp_resid, m_rbp_resid.c)
CREATE OR REPLACE TEMP MACRO rankwise__stat_pos_ret_graded(recs, truth, rel, k, gain, relevance_threshold, duplicates) AS
    CAST(len(list_filter(rankwise__gains(recs, truth, rel, k, gain, relevance_threshold, duplicates), lambda g: g > 0))
         AS DOUBLE);

CREATE OR REPLACE TEMP MACRO rankwise__stat_judged_ret_graded(recs, truth, rel, k, duplicates) AS
    CAST(len(list_filter(rankwise__lrel(recs, truth, rel, k, duplicates), lambda r: r >= 0)) AS DOUBLE);

CREATE OR REPLACE TEMP MACRO rankwise__stat_judged_rbp_graded(recs, truth, rel, k, rbp_persistence, duplicates) AS
    coalesce(list_sum(list_transform(rankwise__lrel(recs, truth, rel, k, duplicates), lambda r, i:
        CASE WHEN r >= 0 THEN pow(CAST(rbp_persistence AS DOUBLE), i - 1.0) ELSE 0.0 END)), 0.0);

-- the labels' ideal: its length P, total gain, DCG, and the number of runs of equal gain
CREATE OR REPLACE TEMP MACRO rankwise__stat_n_pos_graded(rel, gain, relevance_threshold) AS
    len(rankwise__ideal(rel, gain, relevance_threshold));

CREATE OR REPLACE TEMP MACRO rankwise__stat_gain_total_graded(rel, gain, relevance_threshold) AS
    coalesce(list_sum(rankwise__ideal(rel, gain, relevance_threshold)), 0.0);

CREATE OR REPLACE TEMP MACRO rankwise__stat_idcg_all_graded(rel, gain, log_base, relevance_threshold) AS
    rankwise__dcg_of(rankwise__ideal(rel, gain, relevance_threshold), log_base);

CREATE OR REPLACE TEMP MACRO rankwise__runs_of(ideal) AS
    CAST(len(list_filter(ideal, lambda x, m: m = len(ideal) OR x <> ideal[m + 1])) AS DOUBLE);

CREATE OR REPLACE TEMP MACRO rankwise__stat_n_bounds_graded(rel, gain, relevance_threshold) AS
    rankwise__runs_of(rankwise__ideal(rel, gain, relevance_threshold));

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

-- >>> generated from the metric declarations (rankwise.metrics.declarations) by python -m rankwise.generate.sql: do not edit
-- the term p_den (rankwise.metrics.formulas.TERMS), read by other formulas
CREATE OR REPLACE TEMP MACRO rankwise__term_p_den(recs, truth, k, precision_denominator, duplicates) AS
    CAST(CASE WHEN precision_denominator = 'k' THEN k
              WHEN precision_denominator = 'min_k_len' THEN LEAST(k, rankwise__stat_n_recs(recs, duplicates))
              WHEN precision_denominator = 'min_k_candidates' THEN LEAST(k, rankwise__stat_n_candidates(recs, truth, duplicates))
              ELSE LEAST(k, rankwise__stat_n_rel(truth)) END AS DOUBLE);

-- the value of precision (rankwise.metrics.declarations), read by other formulas
CREATE OR REPLACE TEMP MACRO rankwise__value_precision(recs, truth, k, duplicates, precision_denominator) AS
    rankwise__stat_hits(recs, truth, k, duplicates) / NULLIF(rankwise__term_p_den(recs, truth, k, precision_denominator, duplicates), 0.0);

-- the value of recall (rankwise.metrics.declarations), read by other formulas
CREATE OR REPLACE TEMP MACRO rankwise__value_recall(recs, truth, k, duplicates) AS
    rankwise__stat_hits(recs, truth, k, duplicates) / NULLIF(CAST(rankwise__stat_n_rel(truth) AS DOUBLE), 0.0);

-- the term ap_den (rankwise.metrics.formulas.TERMS), read by other formulas
CREATE OR REPLACE TEMP MACRO rankwise__term_ap_den(recs, truth, k, ap_denominator, duplicates) AS
    CAST(CASE WHEN ap_denominator = 'n_hits' THEN CAST(rankwise__stat_hits(recs, truth, k, duplicates) AS BIGINT)
              WHEN ap_denominator = 'n_rel' THEN rankwise__stat_n_rel(truth)
              WHEN ap_denominator = 'min_k_nrel' THEN LEAST(k, rankwise__stat_n_rel(truth))
              WHEN ap_denominator = 'k' THEN k
              ELSE LEAST(k, rankwise__stat_n_recs(recs, duplicates)) END AS DOUBLE);

-- the term rndcg_tail (rankwise.metrics.formulas.TERMS), read by other formulas
CREATE OR REPLACE TEMP MACRO rankwise__term_rndcg_tail(recs, truth, k, log_base, duplicates) AS
    CASE WHEN LEAST(k, rankwise__stat_n_recs(recs, duplicates)) > rankwise__stat_n_pos_graded(rankwise__ones_like(truth), 'binary', 0.0) + 1 AND rankwise__stat_idcg_all_graded(rankwise__ones_like(truth), 'binary', log_base, 0.0) > 0 THEN 1.0
         ELSE 0.0 END;

-- the term rndcg_tail (rankwise.metrics.formulas.TERMS), read by other formulas
CREATE OR REPLACE TEMP MACRO rankwise__term_rndcg_tail_graded(recs, rel, k, gain, log_base, relevance_threshold, duplicates) AS
    CASE WHEN LEAST(k, rankwise__stat_n_recs(recs, duplicates)) > rankwise__stat_n_pos_graded(rel, gain, relevance_threshold) + 1 AND rankwise__stat_idcg_all_graded(rel, gain, log_base, relevance_threshold) > 0 THEN 1.0
         ELSE 0.0 END;

-- Precision@k: hits@k / den, den by `precision_denominator`
CREATE OR REPLACE TEMP MACRO rankwise_precision(recs, truth, k, precision_denominator := 'k', empty_labels := 'zero',
                                                empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('precision_denominator', precision_denominator, ['k', 'min_k_len', 'min_k_nrel', 'min_k_candidates']) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_hits(recs, truth, k, duplicates) / NULLIF(rankwise__term_p_den(recs, truth, k, precision_denominator, duplicates), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- Recall@k: hits@k / n_rel
CREATE OR REPLACE TEMP MACRO rankwise_recall(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                             duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_hits(recs, truth, k, duplicates) / NULLIF(CAST(rankwise__stat_n_rel(truth) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- F-beta@k (`f1`, `f2`, `f0.5`, ...): (1 + b^2) P R / (b^2 P + R), 0 when P = R = 0; the mean is per user or F of the
-- means
CREATE OR REPLACE TEMP MACRO rankwise_fbeta(recs, truth, k, beta := 1.0, precision_denominator := 'k',
                                            empty_labels := 'zero', empty_predictions := 'zero',
                                            duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('beta', beta, beta > 0, 'a finite number > 0')
      AND rankwise__knob('precision_denominator', precision_denominator, ['k', 'min_k_len', 'min_k_nrel', 'min_k_candidates']) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        CASE WHEN rankwise__value_precision(recs, truth, k, duplicates, precision_denominator) + rankwise__value_recall(recs, truth, k, duplicates) > 0 THEN (1.0 + CAST(beta AS DOUBLE) * CAST(beta AS DOUBLE)) * rankwise__value_precision(recs, truth, k, duplicates, precision_denominator) * rankwise__value_recall(recs, truth, k, duplicates) / (CAST(beta AS DOUBLE) * CAST(beta AS DOUBLE) * rankwise__value_precision(recs, truth, k, duplicates, precision_denominator) + rankwise__value_recall(recs, truth, k, duplicates))
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- F-beta@k (`f1`, `f2`, `f0.5`, ...): (1 + b^2) P R / (b^2 P + R), 0 when P = R = 0; the mean is per user or F of the
-- means (beta = 1.0)
CREATE OR REPLACE TEMP MACRO rankwise_f1(recs, truth, k, precision_denominator := 'k', empty_labels := 'zero',
                                         empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('precision_denominator', precision_denominator, ['k', 'min_k_len', 'min_k_nrel', 'min_k_candidates']) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        CASE WHEN rankwise__value_precision(recs, truth, k, duplicates, precision_denominator) + rankwise__value_recall(recs, truth, k, duplicates) > 0 THEN (1.0 + 1.0 * 1.0) * rankwise__value_precision(recs, truth, k, duplicates, precision_denominator) * rankwise__value_recall(recs, truth, k, duplicates) / (1.0 * 1.0 * rankwise__value_precision(recs, truth, k, duplicates, precision_denominator) + rankwise__value_recall(recs, truth, k, duplicates))
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- MAP@k (per user: AP@k): sum over hit positions i <= k of hits@i / i, divided by `ap_denominator`
CREATE OR REPLACE TEMP MACRO rankwise_map(recs, truth, k, ap_denominator := 'min_k_nrel', empty_labels := 'zero',
                                          empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('ap_denominator', ap_denominator, ['n_hits', 'n_rel', 'min_k_nrel', 'k', 'min_k_len']) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        CASE WHEN rankwise__term_ap_den(recs, truth, k, ap_denominator, duplicates) > 0 THEN rankwise__stat_precision_sum(recs, truth, k, duplicates) / rankwise__term_ap_den(recs, truth, k, ap_denominator, duplicates)
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- MAR@k (per user: AR@k, the mean recall at each hit): sum over hit positions i <= k of hits@i / n_rel, divided by
-- `ap_denominator`
CREATE OR REPLACE TEMP MACRO rankwise_mar(recs, truth, k, ap_denominator := 'min_k_nrel', empty_labels := 'zero',
                                          empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('ap_denominator', ap_denominator, ['n_hits', 'n_rel', 'min_k_nrel', 'k', 'min_k_len']) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        CASE WHEN rankwise__term_ap_den(recs, truth, k, ap_denominator, duplicates) > 0 THEN rankwise__stat_hits_sum(recs, truth, k, duplicates) / NULLIF(CAST(rankwise__stat_n_rel(truth) AS DOUBLE), 0.0) / rankwise__term_ap_den(recs, truth, k, ap_denominator, duplicates)
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- MRR@k (per user: RR@k): 1 / position of the first relevant item (within k if `rr_cutoff`), else 0
CREATE OR REPLACE TEMP MACRO rankwise_mrr(recs, truth, k, rr_cutoff := true, empty_labels := 'zero',
                                          empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('rr_cutoff', rr_cutoff, [true, false]) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        CASE WHEN rankwise__stat_first_hit(recs, truth, k, rr_cutoff, duplicates) > 0 THEN 1.0 / rankwise__stat_first_hit(recs, truth, k, rr_cutoff, duplicates)
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- DCG@k: sum_{i <= k} gain(rel_i) / log_b(i + 1)
CREATE OR REPLACE TEMP MACRO rankwise_dcg(recs, truth, k, log_base := 2.0, empty_labels := 'zero',
                                          empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('log_base', log_base, log_base > 1, 'a finite number > 1') THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_dcg(recs, truth, k, log_base, duplicates),
        empty_labels, empty_predictions, duplicates) END;

-- NDCG@k: DCG@k / IDCG@k, the ideal by `ideal`; IDCG = 0 gives `zero_ideal`
CREATE OR REPLACE TEMP MACRO rankwise_ndcg(recs, truth, k, log_base := 2.0, ideal := 'labels', zero_ideal := 'zero',
                                           empty_labels := 'zero', empty_predictions := 'zero',
                                           duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('log_base', log_base, log_base > 1, 'a finite number > 1')
      AND rankwise__knob('ideal', ideal, ['predictions_topk', 'labels', 'k_ones'])
      AND rankwise__knob('zero_ideal', zero_ideal, ['zero', 'nan'])
      AND rankwise__number('k', k, ideal <> 'k_ones' OR k <= 10000, 'at most 10000 with ideal := ''k_ones''') THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        CASE WHEN rankwise__stat_idcg(recs, truth, k, log_base, ideal, duplicates) > 0 THEN rankwise__stat_dcg(recs, truth, k, log_base, duplicates) / rankwise__stat_idcg(recs, truth, k, log_base, ideal, duplicates) * (rankwise__stat_idcg(recs, truth, k, log_base, ideal, duplicates) / rankwise__stat_idcg(recs, truth, k, log_base, ideal, duplicates))
             WHEN zero_ideal = 'zero' THEN 0.0
             ELSE CAST(NULL AS DOUBLE) END,
        empty_labels, empty_predictions, duplicates) END;

-- Hit rate@k: 1 if any of the top k is relevant, else 0
CREATE OR REPLACE TEMP MACRO rankwise_hit_rate(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                               duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        CASE WHEN rankwise__stat_hits(recs, truth, k, duplicates) > 0 THEN 1.0
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- R-precision@k: hits within the top m / m, m = min(k, n_rel)
CREATE OR REPLACE TEMP MACRO rankwise_r_precision(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                                  duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_r_hits(recs, truth, k, duplicates) / NULLIF(CAST(LEAST(k, rankwise__stat_n_rel(truth)) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- RBP@k (rank-biased precision, Moffat and Zobel 2008): (1 - p) sum_{i <= k, rel_i} p^(i - 1), p = `rbp_persistence`
-- (trec_eval's rbp over the top k)
CREATE OR REPLACE TEMP MACRO rankwise_rbp(recs, truth, k, rbp_persistence := 0.8, empty_labels := 'zero',
                                          empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('rbp_persistence', rbp_persistence, rbp_persistence > 0 AND rbp_persistence < 1,
                           'a number strictly between 0 and 1') THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        (1.0 - CAST(rbp_persistence AS DOUBLE)) * rankwise__stat_rbp_sum(recs, truth, k, rbp_persistence, duplicates),
        empty_labels, empty_predictions, duplicates) END;

-- ERR@k (expected reciprocal rank, Chapelle et al. 2009): sum_{r <= k} R_r / r prod_{i < r} (1 - R_i), R = (2^g - 1) /
-- 2^g_max, g_max by `err_max_grade`
CREATE OR REPLACE TEMP MACRO rankwise_err(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                          duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_err_sum(recs, truth, k, duplicates),
        empty_labels, empty_predictions, duplicates) END;

-- Retrieved@k (trec_eval's num_ret): min(k, list length): the items ranked within the top k; summed over users
CREATE OR REPLACE TEMP MACRO rankwise_num_ret(recs, truth, k, duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates) THEN
    rankwise__count(recs, truth,
        CAST(LEAST(k, rankwise__stat_n_recs(recs, duplicates)) AS DOUBLE),
        duplicates) END;

-- Relevant labels (trec_eval's num_rel): n_rel, the same at every k; summed over users
CREATE OR REPLACE TEMP MACRO rankwise_num_rel(recs, truth, k, duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates) THEN
    rankwise__count(recs, truth,
        CAST(rankwise__stat_n_rel(truth) AS DOUBLE),
        duplicates) END;

-- Relevant retrieved@k (trec_eval's num_rel_ret): hits@k; summed over users
CREATE OR REPLACE TEMP MACRO rankwise_num_rel_ret(recs, truth, k, duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates) THEN
    rankwise__count(recs, truth,
        rankwise__stat_hits(recs, truth, k, duplicates),
        duplicates) END;

-- Set precision@k (trec_eval's set_P over the top k): hits@k / min(k, list length): precision over the items retrieved,
-- not k
CREATE OR REPLACE TEMP MACRO rankwise_set_p(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                            duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        CASE WHEN LEAST(k, rankwise__stat_n_recs(recs, duplicates)) > 0 THEN rankwise__stat_hits(recs, truth, k, duplicates) / CAST(LEAST(k, rankwise__stat_n_recs(recs, duplicates)) AS DOUBLE)
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- Set recall@k (trec_eval's set_recall over the top k: recall@k): hits@k / n_rel
CREATE OR REPLACE TEMP MACRO rankwise_set_recall(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                                 duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_hits(recs, truth, k, duplicates) / NULLIF(CAST(rankwise__stat_n_rel(truth) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- Set relative precision@k (trec_eval's set_relative_P over the top k): hits@k / min(k, list length, n_rel)
CREATE OR REPLACE TEMP MACRO rankwise_set_relative_p(recs, truth, k, empty_labels := 'zero',
                                                     empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_hits(recs, truth, k, duplicates) / NULLIF(CAST(LEAST(k, rankwise__stat_n_recs(recs, duplicates), rankwise__stat_n_rel(truth)) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- Set MAP@k (trec_eval's set_map over the top k: set precision x recall): hits@k^2 / (min(k, list length) n_rel)
CREATE OR REPLACE TEMP MACRO rankwise_set_map(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                              duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_hits(recs, truth, k, duplicates) * rankwise__stat_hits(recs, truth, k, duplicates) / NULLIF(CAST(LEAST(k, rankwise__stat_n_recs(recs, duplicates)) AS DOUBLE) * CAST(rankwise__stat_n_rel(truth) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- Set F@k (trec_eval's set_F over the top k, its default weight 1): 2 P R / (P + R), P = set precision@k, R = recall@k;
-- 0 without a hit
CREATE OR REPLACE TEMP MACRO rankwise_set_f(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                            duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        CASE WHEN rankwise__stat_hits(recs, truth, k, duplicates) > 0 THEN 2.0 * rankwise__stat_hits(recs, truth, k, duplicates) / CAST(LEAST(k, rankwise__stat_n_recs(recs, duplicates)) + rankwise__stat_n_rel(truth) AS DOUBLE)
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- Relative precision@k (trec_eval's relative_P_k): hits@k / min(k, n_rel): precision up to k = n_rel, recall beyond
CREATE OR REPLACE TEMP MACRO rankwise_relative_p(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                                 duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_hits(recs, truth, k, duplicates) / NULLIF(CAST(LEAST(k, rankwise__stat_n_rel(truth)) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- R-precision at m R@k (trec_eval's Rprec_mult_<m> over the top k): hits within the top min(k, c) / c, c = floor(m
-- n_rel + 0.9), m = `rprec_multiplier` (0 when c = 0)
CREATE OR REPLACE TEMP MACRO rankwise_rprec_mult(recs, truth, k, rprec_multiplier := 1.0, empty_labels := 'zero',
                                                 empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('rprec_multiplier', rprec_multiplier, rprec_multiplier > 0, 'a finite number > 0') THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        CASE WHEN FLOOR(CAST(rprec_multiplier AS DOUBLE) * rankwise__stat_n_rel(truth) + 0.9) > 0 THEN rankwise__stat_mult_hits(recs, truth, k, rprec_multiplier, duplicates) / FLOOR(CAST(rprec_multiplier AS DOUBLE) * rankwise__stat_n_rel(truth) + 0.9)
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- Interpolated precision at a recall level@k (trec_eval's iprec_at_recall_<l>): max over the j-th hits within k, j >=
-- r, of j / rank_j; r = round(l n_rel) by `iprec_recall_count`, l = `iprec_recall_level`; 0 when fewer than r hits (at
-- r = 0: any hit)
CREATE OR REPLACE TEMP MACRO rankwise_iprec_at_recall(recs, truth, k, iprec_recall_level := 0.0,
                                                      iprec_recall_count := 'round', empty_labels := 'zero',
                                                      empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('iprec_recall_level', iprec_recall_level, iprec_recall_level >= 0 AND iprec_recall_level <= 1,
                           'a finite number between 0 and 1')
      AND rankwise__knob('iprec_recall_count', iprec_recall_count, ['round', 'truncate_plus_0.9']) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_iprec_max(recs, truth, k, iprec_recall_level, iprec_recall_count, duplicates),
        empty_labels, empty_predictions, duplicates) END;

-- 11-point interpolated average precision@k (trec_eval's 11pt_avg): the mean of iprec_at_recall@k at the levels 0.0,
-- 0.1, ..., 1.0 (each as a count by `iprec_recall_count`; times 1/11: Polars divides by a constant as a product, so
-- every engine multiplies)
CREATE OR REPLACE TEMP MACRO rankwise_ipt11_avg(recs, truth, k, iprec_recall_count := 'round', empty_labels := 'zero',
                                                empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('iprec_recall_count', iprec_recall_count, ['round', 'truncate_plus_0.9']) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_ipt11_sum(recs, truth, k, iprec_recall_count, duplicates) * (1.0 / 11.0),
        empty_labels, empty_predictions, duplicates) END;

-- Utility@k (trec_eval's utility over the top k): a hits + b (retrieved - hits) + c (n_rel - hits) + d (N + hits -
-- retrieved - n_rel), retrieved = min(k, list length), a, b, c, d = `utility_relevant_retrieved`,
-- `utility_nonrelevant_retrieved`, `utility_relevant_missed`, `utility_nonrelevant_missed`, N = `collection_size`
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
        CAST(utility_relevant_retrieved AS DOUBLE) * rankwise__stat_hits(recs, truth, k, duplicates) + CAST(utility_nonrelevant_retrieved AS DOUBLE) * (LEAST(k, rankwise__stat_n_recs(recs, duplicates)) - rankwise__stat_hits(recs, truth, k, duplicates)) + CAST(utility_relevant_missed AS DOUBLE) * (rankwise__stat_n_rel(truth) - rankwise__stat_hits(recs, truth, k, duplicates)) + CAST(utility_nonrelevant_missed AS DOUBLE) * (CAST(collection_size AS DOUBLE) + rankwise__stat_hits(recs, truth, k, duplicates) - LEAST(k, rankwise__stat_n_recs(recs, duplicates)) - rankwise__stat_n_rel(truth)),
        duplicates) END;

-- Binary G@k (trec_eval's binG): sum over relevant items i <= k of 1 / log2(2 + non-relevant items above i), over n_rel
CREATE OR REPLACE TEMP MACRO rankwise_bin_g(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                            duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_bing_sum_graded(recs, truth, rankwise__ones_like(truth), k, 0.0, duplicates) / NULLIF(CAST(rankwise__stat_n_rel(truth) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- G@k (trec_eval's normalized gain G): sum over items i <= k of nonzero gain of g_i / log2(2 + C_i - S_i), over the
-- total gain of the labels; S_i = the gains of items 1..i, C_i = the ideal's gains at 1..i each at least 1 (1 past the
-- labels of positive gain); 0 without a positive gain
CREATE OR REPLACE TEMP MACRO rankwise_g(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                        duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        CASE WHEN rankwise__stat_gain_total_graded(rankwise__ones_like(truth), 'binary', 0.0) > 0 THEN rankwise__stat_g_sum_graded(recs, truth, rankwise__ones_like(truth), k, 'binary', 0.0, duplicates) / rankwise__stat_gain_total_graded(rankwise__ones_like(truth), 'binary', 0.0)
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- NDCG averaged over relevant items@k (trec_eval's ndcg_rel): over the P labels of positive gain: at each retrieved one
-- (rank i <= k) DCG@i / IDCG@min(i, P), each other one DCG@N / IDCG@P; their sum over P (0 when not positive); the
-- ideal from the labels
CREATE OR REPLACE TEMP MACRO rankwise_ndcg_rel(recs, truth, k, log_base := 2.0, empty_labels := 'zero',
                                               empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('log_base', log_base, log_base > 1, 'a finite number > 1') THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        CASE WHEN rankwise__stat_n_pos_graded(rankwise__ones_like(truth), 'binary', 0.0) > 0 AND rankwise__stat_ndcg_rel_sum_graded(recs, truth, rankwise__ones_like(truth), k, 'binary', log_base, 0.0, duplicates) + (rankwise__stat_n_pos_graded(rankwise__ones_like(truth), 'binary', 0.0) - rankwise__stat_pos_ret_graded(recs, truth, rankwise__ones_like(truth), k, 'binary', 0.0, duplicates)) * rankwise__stat_dcg(recs, truth, k, log_base, duplicates) / NULLIF(rankwise__stat_idcg_all_graded(rankwise__ones_like(truth), 'binary', log_base, 0.0), 0.0) > 0 THEN (rankwise__stat_ndcg_rel_sum_graded(recs, truth, rankwise__ones_like(truth), k, 'binary', log_base, 0.0, duplicates) + (rankwise__stat_n_pos_graded(rankwise__ones_like(truth), 'binary', 0.0) - rankwise__stat_pos_ret_graded(recs, truth, rankwise__ones_like(truth), k, 'binary', 0.0, duplicates)) * rankwise__stat_dcg(recs, truth, k, log_base, duplicates) / NULLIF(rankwise__stat_idcg_all_graded(rankwise__ones_like(truth), 'binary', log_base, 0.0), 0.0)) / rankwise__stat_n_pos_graded(rankwise__ones_like(truth), 'binary', 0.0)
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- NDCG at the R levels@k (trec_eval's Rndcg): the mean of DCG@min(m, N) / IDCG@m over the ends m of the runs of equal
-- positive gain in the ideal order, and DCG@N / IDCG@P when N > P + 1 (P = labels of positive gain); 0 without such a
-- point
CREATE OR REPLACE TEMP MACRO rankwise_rndcg(recs, truth, k, log_base := 2.0, empty_labels := 'zero',
                                            empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('log_base', log_base, log_base > 1, 'a finite number > 1') THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        CASE WHEN rankwise__stat_n_bounds_graded(rankwise__ones_like(truth), 'binary', 0.0) + rankwise__term_rndcg_tail(recs, truth, k, log_base, duplicates) > 0 THEN (rankwise__stat_rndcg_sum_graded(recs, truth, rankwise__ones_like(truth), k, 'binary', log_base, 0.0, duplicates) + CASE WHEN rankwise__term_rndcg_tail(recs, truth, k, log_base, duplicates) > 0 THEN rankwise__stat_dcg(recs, truth, k, log_base, duplicates) / NULLIF(rankwise__stat_idcg_all_graded(rankwise__ones_like(truth), 'binary', log_base, 0.0), 0.0) ELSE 0.0 END) / (rankwise__stat_n_bounds_graded(rankwise__ones_like(truth), 'binary', 0.0) + rankwise__term_rndcg_tail(recs, truth, k, log_base, duplicates))
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- RBP residual@k (trec_eval's rbp_resid): p^N + (1 - p) sum over unjudged items i <= k (no ground-truth row) of p^(i -
-- 1), written 1 - (1 - p) sum over judged items i <= k of p^(i - 1); 0 when every item is judged; p = `rbp_persistence`
CREATE OR REPLACE TEMP MACRO rankwise_rbp_resid(recs, truth, k, rbp_persistence := 0.8, duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates)
      AND rankwise__number('rbp_persistence', rbp_persistence, rbp_persistence > 0 AND rbp_persistence < 1,
                           'a number strictly between 0 and 1') THEN
    rankwise__count(recs, truth,
        CASE WHEN rankwise__stat_judged_ret_graded(recs, truth, rankwise__ones_like(truth), k, duplicates) < LEAST(k, rankwise__stat_n_recs(recs, duplicates)) THEN 1.0 - (1.0 - CAST(rbp_persistence AS DOUBLE)) * rankwise__stat_judged_rbp_graded(recs, truth, rankwise__ones_like(truth), k, rbp_persistence, duplicates)
             ELSE 0.0 END,
        duplicates) END;

-- GM-MAP@k (trec_eval's gm_map: the geometric mean of AP@k): per user AP@k (as map); the summary is exp(mean ln
-- max(AP@k, 0.00001)), trec_eval's floor
CREATE OR REPLACE TEMP MACRO rankwise_gm_map(recs, truth, k, ap_denominator := 'min_k_nrel', empty_labels := 'zero',
                                             empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('ap_denominator', ap_denominator, ['n_hits', 'n_rel', 'min_k_nrel', 'k', 'min_k_len']) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        CASE WHEN rankwise__term_ap_den(recs, truth, k, ap_denominator, duplicates) > 0 THEN rankwise__stat_precision_sum(recs, truth, k, duplicates) / rankwise__term_ap_den(recs, truth, k, ap_denominator, duplicates)
             ELSE 0.0 END,
        empty_labels, empty_predictions, duplicates) END;

-- Judged non-relevant retrieved@k (trec_eval's num_nonrel_judged_ret): the judged non-relevant items (relevance >= 0,
-- not relevant) in the top k; summed over users
CREATE OR REPLACE TEMP MACRO rankwise_num_nonrel_judged_ret(recs, truth, k, duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates) THEN
    rankwise__count(recs, truth,
        rankwise__stat_nonrel_ret_graded(recs, truth, rankwise__ones_like(truth), k, 0.0, duplicates),
        duplicates) END;

-- bpref@k (Buckley and Voorhees 2004; trec_eval's bpref over the top k): (1 / R) sum over the relevant items r in the
-- top k of 1 - min(n_r, R) / min(N, R) (1 when n_r = 0), n_r = judged non-relevant items above r, R = n_rel, N = the
-- user's judged non-relevant labels
CREATE OR REPLACE TEMP MACRO rankwise_bpref(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                            duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_bpref_sum_graded(recs, truth, rankwise__ones_like(truth), k, 0.0, duplicates) / NULLIF(CAST(rankwise__stat_n_rel(truth) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- infAP@k (Yilmaz and Aslam 2006; trec_eval's infAP over the top k): (1 / R) sum over the relevant items in the top k
-- at rank i = j + 1 of 1 if i = 1, else 1/i + (j/i) ((r + n + p) / j) ((r + e) / (r + n + 2e)): r, n, p = the relevant,
-- judged non-relevant and pooled (relevance < 0) items above it, e = 0.00001 (trec_eval's INFAP_EPSILON)
CREATE OR REPLACE TEMP MACRO rankwise_infap(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                            duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_infap_sum_graded(recs, truth, rankwise__ones_like(truth), k, 0.0, duplicates) / NULLIF(CAST(rankwise__stat_n_rel(truth) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- Unjudged@k (trec_eval's unj_k; not 1 - Judged@k, which counts a pooled item as judged): the items in the top k
-- without a judgement (no label row, or relevance < 0) / k (a list shorter than k is filled with judged items, as
-- trec_eval)
CREATE OR REPLACE TEMP MACRO rankwise_unj(recs, truth, k, duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates) THEN
    rankwise__count(recs, truth,
        (LEAST(k, rankwise__stat_n_recs(recs, duplicates)) - rankwise__stat_hits(recs, truth, k, duplicates) - rankwise__stat_nonrel_ret_graded(recs, truth, rankwise__ones_like(truth), k, 0.0, duplicates)) / CAST(k AS DOUBLE),
        duplicates) END;

-- Judged@k (ir_measures' Judged@k): the items in the top k with a label row (any relevance, a negative one too) /
-- min(k, list length); undefined for an empty list
CREATE OR REPLACE TEMP MACRO rankwise_judged(recs, truth, k, duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates) THEN
    rankwise__count(recs, truth,
        (rankwise__stat_hits(recs, truth, k, duplicates) + rankwise__stat_nonrel_ret_graded(recs, truth, rankwise__ones_like(truth), k, 0.0, duplicates) + rankwise__stat_pooled_ret_graded(recs, truth, rankwise__ones_like(truth), k, 0.0, duplicates)) / NULLIF(CAST(LEAST(k, rankwise__stat_n_recs(recs, duplicates)) AS DOUBLE), 0.0),
        duplicates) END;

-- GM-bpref@k (trec_eval's gm_bpref: the geometric mean of bpref@k): per user bpref@k (as bpref); the summary is
-- exp(mean ln max(bpref@k, 0.00001)), trec_eval's floor
CREATE OR REPLACE TEMP MACRO rankwise_gm_bpref(recs, truth, k, empty_labels := 'zero', empty_predictions := 'zero',
                                               duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates) THEN
    rankwise__finish(recs, truth, rankwise__stat_n_rel(truth),
        rankwise__stat_bpref_sum_graded(recs, truth, rankwise__ones_like(truth), k, 0.0, duplicates) / NULLIF(CAST(rankwise__stat_n_rel(truth) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END;

-- DCG@k: sum_{i <= k} gain(rel_i) / log_b(i + 1)
CREATE OR REPLACE TEMP MACRO rankwise_dcg_graded(recs, truth, rel, k, gain := 'linear', log_base := 2.0,
                                                 relevance_threshold := 0.0, negative_relevance := 'error',
                                                 empty_labels := 'zero', empty_predictions := 'zero',
                                                 duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('gain', gain, ['binary', 'linear', 'exp2'])
      AND rankwise__number('log_base', log_base, log_base > 1, 'a finite number > 1')
      AND rankwise__number('relevance_threshold', relevance_threshold, relevance_threshold >= 0,
                           'a finite number >= 0')
      AND rankwise__knob('negative_relevance', negative_relevance, ['error', 'unjudged']) THEN
    CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE
    rankwise__finish(recs, truth, rankwise__stat_n_rel_graded(rel, relevance_threshold),
        rankwise__finite(rankwise__stat_dcg_graded(recs, truth, rel, k, gain, log_base, relevance_threshold, duplicates, 'rankwise_dcg_graded'), 'rankwise_dcg_graded', rel, gain),
        empty_labels, empty_predictions, duplicates) END END;

-- NDCG@k: DCG@k / IDCG@k, the ideal by `ideal`; IDCG = 0 gives `zero_ideal`
CREATE OR REPLACE TEMP MACRO rankwise_ndcg_graded(recs, truth, rel, k, gain := 'linear', log_base := 2.0,
                                                  ideal := 'labels', zero_ideal := 'zero', relevance_threshold := 0.0,
                                                  negative_relevance := 'error', empty_labels := 'zero',
                                                  empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('gain', gain, ['binary', 'linear', 'exp2'])
      AND rankwise__number('log_base', log_base, log_base > 1, 'a finite number > 1')
      AND rankwise__knob('ideal', ideal, ['predictions_topk', 'labels', 'k_ones'])
      AND rankwise__knob('zero_ideal', zero_ideal, ['zero', 'nan'])
      AND rankwise__number('relevance_threshold', relevance_threshold, relevance_threshold >= 0,
                           'a finite number >= 0')
      AND rankwise__knob('negative_relevance', negative_relevance, ['error', 'unjudged'])
      AND rankwise__number('k', k, ideal <> 'k_ones' OR k <= 10000, 'at most 10000 with ideal := ''k_ones''') THEN
    CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE
    rankwise__finish(recs, truth, rankwise__stat_n_rel_graded(rel, relevance_threshold),
        rankwise__finite(CASE WHEN rankwise__stat_idcg_graded(recs, truth, rel, k, gain, log_base, ideal, relevance_threshold, duplicates, 'rankwise_ndcg_graded') > 0 THEN rankwise__stat_dcg_graded(recs, truth, rel, k, gain, log_base, relevance_threshold, duplicates, 'rankwise_ndcg_graded') / rankwise__stat_idcg_graded(recs, truth, rel, k, gain, log_base, ideal, relevance_threshold, duplicates, 'rankwise_ndcg_graded') * (rankwise__stat_idcg_graded(recs, truth, rel, k, gain, log_base, ideal, relevance_threshold, duplicates, 'rankwise_ndcg_graded') / rankwise__stat_idcg_graded(recs, truth, rel, k, gain, log_base, ideal, relevance_threshold, duplicates, 'rankwise_ndcg_graded'))
             WHEN zero_ideal = 'zero' THEN 0.0
             ELSE CAST(NULL AS DOUBLE) END, 'rankwise_ndcg_graded', rel, gain),
        empty_labels, empty_predictions, duplicates) END END;

-- ERR@k (expected reciprocal rank, Chapelle et al. 2009): sum_{r <= k} R_r / r prod_{i < r} (1 - R_i), R = (2^g - 1) /
-- 2^g_max, g_max by `err_max_grade`
CREATE OR REPLACE TEMP MACRO rankwise_err_graded(recs, truth, rel, k, err_max_grade := 0.0,
                                                 negative_relevance := 'error', empty_labels := 'zero',
                                                 empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('err_max_grade', err_max_grade, err_max_grade > 0,
                           'the top grade of the scale, > 0 (a macro sees one row, not the whole ground truth)')
      AND rankwise__knob('negative_relevance', negative_relevance, ['error', 'unjudged']) THEN
    CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE
    rankwise__finish(recs, truth, rankwise__stat_n_rel_graded(rel, 0.0),
        rankwise__stat_err_sum_graded(recs, truth, rel, k, err_max_grade, duplicates),
        empty_labels, empty_predictions, duplicates) END END;

-- Judged non-relevant retrieved@k (trec_eval's num_nonrel_judged_ret): the judged non-relevant items (relevance >= 0,
-- not relevant) in the top k; summed over users
CREATE OR REPLACE TEMP MACRO rankwise_num_nonrel_judged_ret_graded(recs, truth, rel, k, relevance_threshold := 0.0,
                                                                   negative_relevance := 'error',
                                                                   duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates)
      AND rankwise__number('relevance_threshold', relevance_threshold, relevance_threshold >= 0,
                           'a finite number >= 0')
      AND rankwise__knob('negative_relevance', negative_relevance, ['error', 'unjudged']) THEN
    CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE
    rankwise__count(recs, truth,
        rankwise__stat_nonrel_ret_graded(recs, truth, rel, k, relevance_threshold, duplicates),
        duplicates) END END;

-- bpref@k (Buckley and Voorhees 2004; trec_eval's bpref over the top k): (1 / R) sum over the relevant items r in the
-- top k of 1 - min(n_r, R) / min(N, R) (1 when n_r = 0), n_r = judged non-relevant items above r, R = n_rel, N = the
-- user's judged non-relevant labels
CREATE OR REPLACE TEMP MACRO rankwise_bpref_graded(recs, truth, rel, k, relevance_threshold := 0.0,
                                                   negative_relevance := 'error', empty_labels := 'zero',
                                                   empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('relevance_threshold', relevance_threshold, relevance_threshold >= 0,
                           'a finite number >= 0')
      AND rankwise__knob('negative_relevance', negative_relevance, ['error', 'unjudged']) THEN
    CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE
    rankwise__finish(recs, truth, rankwise__stat_n_rel_graded(rel, relevance_threshold),
        rankwise__stat_bpref_sum_graded(recs, truth, rel, k, relevance_threshold, duplicates) / NULLIF(CAST(rankwise__stat_n_rel_graded(rel, relevance_threshold) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END END;

-- infAP@k (Yilmaz and Aslam 2006; trec_eval's infAP over the top k): (1 / R) sum over the relevant items in the top k
-- at rank i = j + 1 of 1 if i = 1, else 1/i + (j/i) ((r + n + p) / j) ((r + e) / (r + n + 2e)): r, n, p = the relevant,
-- judged non-relevant and pooled (relevance < 0) items above it, e = 0.00001 (trec_eval's INFAP_EPSILON)
CREATE OR REPLACE TEMP MACRO rankwise_infap_graded(recs, truth, rel, k, relevance_threshold := 0.0,
                                                   negative_relevance := 'error', empty_labels := 'zero',
                                                   empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('relevance_threshold', relevance_threshold, relevance_threshold >= 0,
                           'a finite number >= 0')
      AND rankwise__knob('negative_relevance', negative_relevance, ['error', 'unjudged']) THEN
    CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE
    rankwise__finish(recs, truth, rankwise__stat_n_rel_graded(rel, relevance_threshold),
        rankwise__stat_infap_sum_graded(recs, truth, rel, k, relevance_threshold, duplicates) / NULLIF(CAST(rankwise__stat_n_rel_graded(rel, relevance_threshold) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END END;

-- Unjudged@k (trec_eval's unj_k; not 1 - Judged@k, which counts a pooled item as judged): the items in the top k
-- without a judgement (no label row, or relevance < 0) / k (a list shorter than k is filled with judged items, as
-- trec_eval)
CREATE OR REPLACE TEMP MACRO rankwise_unj_graded(recs, truth, rel, k, relevance_threshold := 0.0,
                                                 negative_relevance := 'error', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates)
      AND rankwise__number('relevance_threshold', relevance_threshold, relevance_threshold >= 0,
                           'a finite number >= 0')
      AND rankwise__knob('negative_relevance', negative_relevance, ['error', 'unjudged']) THEN
    CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE
    rankwise__count(recs, truth,
        (LEAST(k, rankwise__stat_n_recs(recs, duplicates)) - rankwise__stat_hits_graded(recs, truth, rel, k, relevance_threshold, duplicates) - rankwise__stat_nonrel_ret_graded(recs, truth, rel, k, relevance_threshold, duplicates)) / CAST(k AS DOUBLE),
        duplicates) END END;

-- Judged@k (ir_measures' Judged@k): the items in the top k with a label row (any relevance, a negative one too) /
-- min(k, list length); undefined for an empty list
CREATE OR REPLACE TEMP MACRO rankwise_judged_graded(recs, truth, rel, k, relevance_threshold := 0.0,
                                                    negative_relevance := 'error', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates)
      AND rankwise__number('relevance_threshold', relevance_threshold, relevance_threshold >= 0,
                           'a finite number >= 0')
      AND rankwise__knob('negative_relevance', negative_relevance, ['error', 'unjudged']) THEN
    CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE
    rankwise__count(recs, truth,
        (rankwise__stat_hits_graded(recs, truth, rel, k, relevance_threshold, duplicates) + rankwise__stat_nonrel_ret_graded(recs, truth, rel, k, relevance_threshold, duplicates) + rankwise__stat_pooled_ret_graded(recs, truth, rel, k, relevance_threshold, duplicates)) / NULLIF(CAST(LEAST(k, rankwise__stat_n_recs(recs, duplicates)) AS DOUBLE), 0.0),
        duplicates) END END;

-- GM-bpref@k (trec_eval's gm_bpref: the geometric mean of bpref@k): per user bpref@k (as bpref); the summary is
-- exp(mean ln max(bpref@k, 0.00001)), trec_eval's floor
CREATE OR REPLACE TEMP MACRO rankwise_gm_bpref_graded(recs, truth, rel, k, relevance_threshold := 0.0,
                                                      negative_relevance := 'error', empty_labels := 'zero',
                                                      empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('relevance_threshold', relevance_threshold, relevance_threshold >= 0,
                           'a finite number >= 0')
      AND rankwise__knob('negative_relevance', negative_relevance, ['error', 'unjudged']) THEN
    CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE
    rankwise__finish(recs, truth, rankwise__stat_n_rel_graded(rel, relevance_threshold),
        rankwise__stat_bpref_sum_graded(recs, truth, rel, k, relevance_threshold, duplicates) / NULLIF(CAST(rankwise__stat_n_rel_graded(rel, relevance_threshold) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END END;

-- Binary G@k (trec_eval's binG): sum over relevant items i <= k of 1 / log2(2 + non-relevant items above i), over n_rel
CREATE OR REPLACE TEMP MACRO rankwise_bin_g_graded(recs, truth, rel, k, relevance_threshold := 0.0,
                                                   negative_relevance := 'error', empty_labels := 'zero',
                                                   empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__number('relevance_threshold', relevance_threshold, relevance_threshold >= 0,
                           'a finite number >= 0')
      AND rankwise__knob('negative_relevance', negative_relevance, ['error', 'unjudged']) THEN
    CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE
    rankwise__finish(recs, truth, rankwise__stat_n_rel_graded(rel, relevance_threshold),
        rankwise__stat_bing_sum_graded(recs, truth, rel, k, relevance_threshold, duplicates) / NULLIF(CAST(rankwise__stat_n_rel_graded(rel, relevance_threshold) AS DOUBLE), 0.0),
        empty_labels, empty_predictions, duplicates) END END;

-- G@k (trec_eval's normalized gain G): sum over items i <= k of nonzero gain of g_i / log2(2 + C_i - S_i), over the
-- total gain of the labels; S_i = the gains of items 1..i, C_i = the ideal's gains at 1..i each at least 1 (1 past the
-- labels of positive gain); 0 without a positive gain
CREATE OR REPLACE TEMP MACRO rankwise_g_graded(recs, truth, rel, k, gain := 'linear', relevance_threshold := 0.0,
                                               negative_relevance := 'error', empty_labels := 'zero',
                                               empty_predictions := 'zero', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('gain', gain, ['binary', 'linear', 'exp2'])
      AND rankwise__number('relevance_threshold', relevance_threshold, relevance_threshold >= 0,
                           'a finite number >= 0')
      AND rankwise__knob('negative_relevance', negative_relevance, ['error', 'unjudged']) THEN
    CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE
    rankwise__finish(recs, truth, rankwise__stat_n_rel_graded(rel, relevance_threshold),
        rankwise__finite(CASE WHEN rankwise__stat_gain_total_graded(rel, gain, relevance_threshold) > 0 THEN rankwise__stat_g_sum_graded(recs, truth, rel, k, gain, relevance_threshold, duplicates) / rankwise__stat_gain_total_graded(rel, gain, relevance_threshold)
             ELSE 0.0 END, 'rankwise_g_graded', rel, gain),
        empty_labels, empty_predictions, duplicates) END END;

-- NDCG averaged over relevant items@k (trec_eval's ndcg_rel): over the P labels of positive gain: at each retrieved one
-- (rank i <= k) DCG@i / IDCG@min(i, P), each other one DCG@N / IDCG@P; their sum over P (0 when not positive); the
-- ideal from the labels
CREATE OR REPLACE TEMP MACRO rankwise_ndcg_rel_graded(recs, truth, rel, k, gain := 'linear', log_base := 2.0,
                                                      relevance_threshold := 0.0, negative_relevance := 'error',
                                                      empty_labels := 'zero', empty_predictions := 'zero',
                                                      duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('gain', gain, ['binary', 'linear', 'exp2'])
      AND rankwise__number('log_base', log_base, log_base > 1, 'a finite number > 1')
      AND rankwise__number('relevance_threshold', relevance_threshold, relevance_threshold >= 0,
                           'a finite number >= 0')
      AND rankwise__knob('negative_relevance', negative_relevance, ['error', 'unjudged']) THEN
    CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE
    rankwise__finish(recs, truth, rankwise__stat_n_rel_graded(rel, relevance_threshold),
        rankwise__finite(CASE WHEN rankwise__stat_n_pos_graded(rel, gain, relevance_threshold) > 0 AND rankwise__stat_ndcg_rel_sum_graded(recs, truth, rel, k, gain, log_base, relevance_threshold, duplicates) + (rankwise__stat_n_pos_graded(rel, gain, relevance_threshold) - rankwise__stat_pos_ret_graded(recs, truth, rel, k, gain, relevance_threshold, duplicates)) * rankwise__stat_dcg_graded(recs, truth, rel, k, gain, log_base, relevance_threshold, duplicates, 'rankwise_ndcg_rel_graded') / NULLIF(rankwise__stat_idcg_all_graded(rel, gain, log_base, relevance_threshold), 0.0) > 0 THEN (rankwise__stat_ndcg_rel_sum_graded(recs, truth, rel, k, gain, log_base, relevance_threshold, duplicates) + (rankwise__stat_n_pos_graded(rel, gain, relevance_threshold) - rankwise__stat_pos_ret_graded(recs, truth, rel, k, gain, relevance_threshold, duplicates)) * rankwise__stat_dcg_graded(recs, truth, rel, k, gain, log_base, relevance_threshold, duplicates, 'rankwise_ndcg_rel_graded') / NULLIF(rankwise__stat_idcg_all_graded(rel, gain, log_base, relevance_threshold), 0.0)) / rankwise__stat_n_pos_graded(rel, gain, relevance_threshold)
             ELSE 0.0 END, 'rankwise_ndcg_rel_graded', rel, gain),
        empty_labels, empty_predictions, duplicates) END END;

-- NDCG at the R levels@k (trec_eval's Rndcg): the mean of DCG@min(m, N) / IDCG@m over the ends m of the runs of equal
-- positive gain in the ideal order, and DCG@N / IDCG@P when N > P + 1 (P = labels of positive gain); 0 without such a
-- point
CREATE OR REPLACE TEMP MACRO rankwise_rndcg_graded(recs, truth, rel, k, gain := 'linear', log_base := 2.0,
                                                   relevance_threshold := 0.0, negative_relevance := 'error',
                                                   empty_labels := 'zero', empty_predictions := 'zero',
                                                   duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, empty_labels, empty_predictions, duplicates)
      AND rankwise__knob('gain', gain, ['binary', 'linear', 'exp2'])
      AND rankwise__number('log_base', log_base, log_base > 1, 'a finite number > 1')
      AND rankwise__number('relevance_threshold', relevance_threshold, relevance_threshold >= 0,
                           'a finite number >= 0')
      AND rankwise__knob('negative_relevance', negative_relevance, ['error', 'unjudged']) THEN
    CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE
    rankwise__finish(recs, truth, rankwise__stat_n_rel_graded(rel, relevance_threshold),
        rankwise__finite(CASE WHEN rankwise__stat_n_bounds_graded(rel, gain, relevance_threshold) + rankwise__term_rndcg_tail_graded(recs, rel, k, gain, log_base, relevance_threshold, duplicates) > 0 THEN (rankwise__stat_rndcg_sum_graded(recs, truth, rel, k, gain, log_base, relevance_threshold, duplicates) + CASE WHEN rankwise__term_rndcg_tail_graded(recs, rel, k, gain, log_base, relevance_threshold, duplicates) > 0 THEN rankwise__stat_dcg_graded(recs, truth, rel, k, gain, log_base, relevance_threshold, duplicates, 'rankwise_rndcg_graded') / NULLIF(rankwise__stat_idcg_all_graded(rel, gain, log_base, relevance_threshold), 0.0) ELSE 0.0 END) / (rankwise__stat_n_bounds_graded(rel, gain, relevance_threshold) + rankwise__term_rndcg_tail_graded(recs, rel, k, gain, log_base, relevance_threshold, duplicates))
             ELSE 0.0 END, 'rankwise_rndcg_graded', rel, gain),
        empty_labels, empty_predictions, duplicates) END END;

-- RBP residual@k (trec_eval's rbp_resid): p^N + (1 - p) sum over unjudged items i <= k (no ground-truth row) of p^(i -
-- 1), written 1 - (1 - p) sum over judged items i <= k of p^(i - 1); 0 when every item is judged; p = `rbp_persistence`
CREATE OR REPLACE TEMP MACRO rankwise_rbp_resid_graded(recs, truth, rel, k, rbp_persistence := 0.8,
                                                       negative_relevance := 'error', duplicates := 'error') AS
    CASE WHEN rankwise__rows(k, 'nan', 'nan', duplicates)
      AND rankwise__number('rbp_persistence', rbp_persistence, rbp_persistence > 0 AND rbp_persistence < 1,
                           'a number strictly between 0 and 1')
      AND rankwise__knob('negative_relevance', negative_relevance, ['error', 'unjudged']) THEN
    CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE
    rankwise__count(recs, truth,
        CASE WHEN rankwise__stat_judged_ret_graded(recs, truth, rel, k, duplicates) < LEAST(k, rankwise__stat_n_recs(recs, duplicates)) THEN 1.0 - (1.0 - CAST(rbp_persistence AS DOUBLE)) * rankwise__stat_judged_rbp_graded(recs, truth, rel, k, rbp_persistence, duplicates)
             ELSE 0.0 END,
        duplicates) END END;
