"""The metric catalogue: one declaration per metric, and the parsing of user requests.

Each accuracy metric's per-user value is declared once, as a SQL expression over the per-(user, k)
statistics (``Metric.sql``); every engine, rankwise.expr, the shipped SQL's metric stages and
docs/metrics.md come from it (rankwise.metrics.formulas). Users with no relevant label or no recommendation
get the values ``empty_labels`` and ``empty_predictions`` say, for every metric; ``nan`` leaves the
user out of the mean. The beyond-accuracy metrics (``BEYOND``) declare theirs likewise, over the per-user
or per-k statistics that rankwise.engines.beyond computes.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache, lru_cache

import polars as pl

from rankwise.errors import ParameterError, did_you_mean

@dataclass(frozen=True)
class Metric:
    """One metric, declared once. The public metric list, the presets' metric sets, which knobs move
    which metric, the docs page, the Polars engine's expressions and the oracle's list all derive from
    these declarations; tests check the shipped SQL (``per_user.sql`` columns, ``summary.sql``
    branches) against them.

    name: the per-user column and the summary's metric (F-beta is requested as f1, f2, f0.5, ...).
    level: "user" (a per-user value, summarised by its mean over users with a defined value) or
        "catalog" (one value per k for the whole run, e.g. coverage).
    needs: the inputs it reads.
    knobs: the convention knobs that move it, beyond those that move every metric (EVERY_METRIC).
    sql: its per-user value, written once as a SQL expression over the per-(user, k) statistics of
        ``sql/per_user.sql`` (``hits``, ``n_rel``, ``dcg``, ...), the shared terms
        (``rankwise.metrics.formulas.TERMS``), other metrics' values and the knobs as ``$name``. The shipped
        SQL's metric stages are generated from it, and :meth:`build` turns it into Polars
        (``rankwise.metrics.formulas``). NULL = undefined. A beyond-accuracy metric's is over the statistics of
        ``sql/beyond_user.sql`` or ``sql/beyond_catalog.sql`` (``formulas.BEYOND_STATISTICS``,
        ``BEYOND_CATALOG_STATISTICS``) and their terms.
    bounds: (low, high), the range of every per-user value, so of their mean (None: open on that
        side), or a function of the convention giving it; intervals of the mean are clipped to it
        (:func:`value_range`). A catalog-level metric has one value, no interval: no bounds.
    """

    name: str
    title: str
    formula: str
    sql: str | None
    knobs: tuple[str, ...] = ()
    level: str = "user"
    needs: tuple[str, ...] = ("recommendations", "ground_truth")
    aggregate: str = "mean over users with a defined value"
    bounds: tuple | Callable | None = (0.0, 1.0)
    # (knob, value): under it the summary is this formula over the other metrics' means (an F of means),
    # not the mean of the per-user values; summary.sql's branch and the Polars summary follow it
    of_means: tuple[str, str] | None = None
    # True: the empty_labels / empty_predictions rules apply (the usual case); False: the formula is the value of
    # every evaluated user, with no label or no recommendation too (a count such as num_rel, as trec_eval prints it)
    empty_rules: bool = True
    # how the summary aggregates the per-user values: "mean" (over the users with a defined value), "sum" (trec_eval's
    # 'all' line of a count) or "geometric_mean" (trec_eval's gm_*: exp of the mean of ln(max(value, GEOMETRIC_FLOOR)))
    summary: str = "mean"

    @property
    def public_name(self) -> str:
        return "f1" if self.name == "fbeta" else self.name

    def build(self, conv, beta: float = 1.0, col=pl.col) -> pl.Expr:
        """The Polars expression of :attr:`sql` under ``conv`` (and F-beta's ``beta``), reading each
        statistic as ``col(name)``: a column of the plan by default (built once per metric, convention and beta),
        any expression for rankwise.expr."""
        if col is pl.col:
            return _built(self, conv, float(beta))
        return self._translated(conv, beta, col)

    def _translated(self, conv, beta: float, col) -> pl.Expr:
        from rankwise.metrics import formulas as _formulas

        params = {**conv.sql_parameters(), "beta": float(beta)}
        return _formulas.to_polars(self.sql, params, col, names={**_USER_FORMULAS, **_formulas.BEYOND_TERMS,
                                                                 **_formulas.BEYOND_CATALOG_TERMS})


@lru_cache(maxsize=4096)
def _built(metric: Metric, conv, beta: float) -> pl.Expr:
    """Metric.build over the plan's columns (an expression is immutable: every evaluate of a convention reuses it)."""
    return metric._translated(conv, beta, pl.col)


from rankwise.metrics.formulas import GEOMETRIC_FLOOR  # noqa: E402,F401  (trec_eval's MIN_GEO_MEAN)
_AP = "CASE WHEN ap_den > 0 THEN precision_sum / ap_den ELSE 0.0 END"  # AP@k: map's and gm_map's per-user value
def _negative_gains(conv) -> bool:
    """A level given a negative gain (gain_levels): the gain measures' values have no bound."""
    return any(gain < 0 for _, gain in conv.gain_levels)


_BPREF = "bpref_sum / NULLIF(CAST(n_rel AS DOUBLE), 0.0)"  # bpref's and gm_bpref's per-user value
_COUNT = dict(bounds=None, empty_rules=False, summary="sum", aggregate="sum over users (trec_eval's 'all' line)")

REGISTRY: tuple[Metric, ...] = (
    Metric("precision", "Precision@k", "hits@k / den, den by `precision_denominator`",
           "hits / NULLIF(p_den, 0.0)", ("precision_denominator",)),
    Metric("recall", "Recall@k", "hits@k / n_rel", "hits / NULLIF(CAST(n_rel AS DOUBLE), 0.0)"),
    Metric("fbeta", "F-beta@k (`f1`, `f2`, `f0.5`, ...)",
           "(1 + b^2) P R / (b^2 P + R), 0 when P = R = 0; the mean is per user or F of the means",
           "CASE WHEN precision + recall > 0 THEN (1.0 + $beta * $beta) * precision * recall "
           "/ ($beta * $beta * precision + recall) ELSE 0.0 END", ("precision_denominator", "f_aggregation"),
           aggregate="mean over users, or F of mean precision and mean recall (f_aggregation)",
           of_means=("f_aggregation", "of_means")),
    Metric("map", "MAP@k (per user: AP@k)",
           "sum over hit positions i <= k of hits@i / i, divided by `ap_denominator`",
           _AP, ("ap_denominator",)),
    Metric("mar", "MAR@k (per user: AR@k, the mean recall at each hit)",
           "sum over hit positions i <= k of hits@i / n_rel, divided by `ap_denominator`",
           "CASE WHEN ap_den > 0 THEN hits_sum / NULLIF(CAST(n_rel AS DOUBLE), 0.0) / ap_den ELSE 0.0 END",
           ("ap_denominator",)),
    Metric("mrr", "MRR@k (per user: RR@k)",
           "1 / position of the first relevant item (within k if `rr_cutoff`), else 0",
           "CASE WHEN first_hit > 0 THEN 1.0 / first_hit ELSE 0.0 END", ("rr_cutoff",)),
    Metric("dcg", "DCG@k", "sum_{i <= k} gain(rel_i) / log_b(i + 1)", "dcg", ("gain", "gain_levels", "log_base"),
           bounds=(0.0, None)),
    # k slots of gain 1 are not an upper bound of graded gains (relevance 3 under exp2 earns 7 per slot)
    Metric("ndcg", "NDCG@k", "DCG@k / IDCG@k, the ideal by `ideal`; IDCG = 0 gives `zero_ideal`",
           # idcg / idcg is exactly 1, or NaN when the ideal overflowed (2^r - 1 = inf under exp2): then the
           # value is NaN, which evaluate() raises as a NumericOverflowError, not dcg / inf = 0
           "CASE WHEN idcg > 0 THEN dcg / idcg * (idcg / idcg) WHEN $zero_ideal = 'zero' THEN 0.0 "
           "ELSE CAST(NULL AS DOUBLE) END",
           ("gain", "gain_levels", "log_base", "ideal", "zero_ideal"),
           bounds=lambda conv: (None, None) if _negative_gains(conv) else
           (0.0, None) if conv.ideal == "k_ones" and (conv.gain != "binary" or conv.gain_levels) else (0.0, 1.0)),
    Metric("hit_rate", "Hit rate@k", "1 if any of the top k is relevant, else 0",
           "CASE WHEN hits > 0 THEN 1.0 ELSE 0.0 END"),
    Metric("r_precision", "R-precision@k", "hits within the top m / m, m = min(k, n_rel)",
           "r_hits / NULLIF(CAST(LEAST(k, n_rel) AS DOUBLE), 0.0)"),
    Metric("rbp", "RBP@k (rank-biased precision, Moffat and Zobel 2008)",
           "(1 - p) sum_{i <= k, rel_i} p^(i - 1), p = `rbp_persistence` (trec_eval's rbp over the top k)",
           "(1.0 - $rbp_persistence) * rbp_sum", ("rbp_persistence",)),
    Metric("err", "ERR@k (expected reciprocal rank, Chapelle et al. 2009)",
           "sum_{r <= k} R_r / r prod_{i < r} (1 - R_i), R = (2^g - 1) / 2^g_max, g_max by `err_max_grade`",
           "err_sum", ("err_max_grade",)),
    # trec_eval's measures over the whole retrieved set, at k: over the top k (trec_eval -M k), so num_ret@k =
    # min(k, list length); at a k >= every list's length they are trec_eval's values
    Metric("num_ret", "Retrieved@k (trec_eval's num_ret)",
           "min(k, list length): the items ranked within the top k; summed over users",
           "CAST(LEAST(k, n_recs) AS DOUBLE)", **_COUNT),
    Metric("num_rel", "Relevant labels (trec_eval's num_rel)", "n_rel, the same at every k; summed over users",
           "CAST(n_rel AS DOUBLE)", **_COUNT),
    Metric("num_rel_ret", "Relevant retrieved@k (trec_eval's num_rel_ret)", "hits@k; summed over users",
           "hits", **_COUNT),
    Metric("set_p", "Set precision@k (trec_eval's set_P over the top k)",
           "hits@k / min(k, list length): precision over the items retrieved, not k",
           "CASE WHEN LEAST(k, n_recs) > 0 THEN hits / CAST(LEAST(k, n_recs) AS DOUBLE) ELSE 0.0 END"),
    Metric("set_recall", "Set recall@k (trec_eval's set_recall over the top k: recall@k)", "hits@k / n_rel",
           "hits / NULLIF(CAST(n_rel AS DOUBLE), 0.0)"),
    Metric("set_relative_p", "Set relative precision@k (trec_eval's set_relative_P over the top k)",
           "hits@k / min(k, list length, n_rel)",
           "hits / NULLIF(CAST(LEAST(k, n_recs, n_rel) AS DOUBLE), 0.0)"),
    Metric("set_map", "Set MAP@k (trec_eval's set_map over the top k: set precision x recall)",
           "hits@k^2 / (min(k, list length) n_rel)",
           "hits * hits / NULLIF(CAST(LEAST(k, n_recs) AS DOUBLE) * CAST(n_rel AS DOUBLE), 0.0)"),
    Metric("set_f", "Set F@k (trec_eval's set_F over the top k, its default weight 1)",
           "2 P R / (P + R), P = set precision@k, R = recall@k; 0 without a hit",
           "CASE WHEN hits > 0 THEN 2.0 * hits / CAST(LEAST(k, n_recs) + n_rel AS DOUBLE) ELSE 0.0 END"),
    Metric("relative_p", "Relative precision@k (trec_eval's relative_P_k)",
           "hits@k / min(k, n_rel): precision up to k = n_rel, recall beyond",
           "hits / NULLIF(CAST(LEAST(k, n_rel) AS DOUBLE), 0.0)"),
    Metric("rprec_mult", "R-precision at m R@k (trec_eval's Rprec_mult_<m> over the top k)",
           "hits within the top min(k, c) / c, c = floor(m n_rel + 0.9), m = `rprec_multiplier` (0 when c = 0)",
           "CASE WHEN FLOOR($rprec_multiplier * n_rel + 0.9) > 0 "
           "THEN mult_hits / FLOOR($rprec_multiplier * n_rel + 0.9) ELSE 0.0 END", ("rprec_multiplier",)),
    Metric("iprec_at_recall", "Interpolated precision at a recall level@k (trec_eval's iprec_at_recall_<l>)",
           "max over the j-th hits within k, j >= r, of j / rank_j; r = round(l n_rel) by `iprec_recall_count`, "
           "l = `iprec_recall_level`; 0 when fewer than r hits (at r = 0: any hit)",
           "iprec_max", ("iprec_recall_level", "iprec_recall_count")),
    Metric("ipt11_avg", "11-point interpolated average precision@k (trec_eval's 11pt_avg)",
           "the mean of iprec_at_recall@k at the levels 0.0, 0.1, ..., 1.0 (each as a count by `iprec_recall_count`; "
           "times 1/11: Polars divides by a constant as a product, so every engine multiplies)",
           "ipt11_sum * (1.0 / 11.0)", ("iprec_recall_count",)),
    Metric("utility", "Utility@k (trec_eval's utility over the top k)",
           "a hits + b (retrieved - hits) + c (n_rel - hits) + d (N + hits - retrieved - n_rel), retrieved = "
           "min(k, list length), a, b, c, d = `utility_relevant_retrieved`, `utility_nonrelevant_retrieved`, "
           "`utility_relevant_missed`, `utility_nonrelevant_missed`, N = `collection_size`",
           "$utility_relevant_retrieved * hits + $utility_nonrelevant_retrieved * (LEAST(k, n_recs) - hits) "
           "+ $utility_relevant_missed * (n_rel - hits) "
           "+ $utility_nonrelevant_missed * ($collection_size + hits - LEAST(k, n_recs) - n_rel)",
           ("utility_relevant_retrieved", "utility_nonrelevant_retrieved", "utility_relevant_missed",
            "utility_nonrelevant_missed", "collection_size"),
           bounds=None, empty_rules=False),
    # trec_eval's experimental gain measures over the labels' ideal (gains sorted descending, those > 0; trec_eval's
    # m_G.c, m_binG.c, m_ndcg_rel.c, m_Rndcg.c) and RBP's residual (m_rbp_resid.c); N = min(k, list length)
    Metric("bin_g", "Binary G@k (trec_eval's binG)",
           "sum over relevant items i <= k of 1 / log2(2 + non-relevant items above i), over n_rel",
           "bing_sum / NULLIF(CAST(n_rel AS DOUBLE), 0.0)"),
    Metric("g", "G@k (trec_eval's normalized gain G)",
           "sum over items i <= k of nonzero gain of g_i / log2(2 + C_i - S_i), over the total gain of the labels; "
           "S_i = the gains of items 1..i, C_i = the ideal's gains at 1..i each at least 1 (1 past the labels of "
           "positive gain); 0 without a positive gain",
           "CASE WHEN gain_total > 0 THEN g_sum / gain_total ELSE 0.0 END", ("gain", "gain_levels"),
           bounds=lambda conv: (None, None) if _negative_gains(conv) else (0.0, 1.0)),
    Metric("ndcg_rel", "NDCG averaged over relevant items@k (trec_eval's ndcg_rel)",
           "over the P labels of positive gain: at each retrieved one (rank i <= k) DCG@i / IDCG@min(i, P), each "
           "other one DCG@N / IDCG@P; their sum over P (0 when not positive); the ideal from the labels",
           "CASE WHEN n_pos > 0 AND ndcg_rel_sum + (n_pos - pos_ret) * dcg / NULLIF(idcg_all, 0.0) > 0 "
           "THEN (ndcg_rel_sum + (n_pos - pos_ret) * dcg / NULLIF(idcg_all, 0.0)) / n_pos ELSE 0.0 END",
           ("gain", "gain_levels", "log_base"),
           bounds=lambda conv: (None, None) if _negative_gains(conv) else (0.0, 1.0)),
    Metric("rndcg", "NDCG at the R levels@k (trec_eval's Rndcg)",
           "the mean of DCG@min(m, N) / IDCG@m over the ends m of the runs of equal positive gain in the ideal order, "
           "and DCG@N / IDCG@P when N > P + 1 (P = labels of positive gain); 0 without such a point",
           "CASE WHEN n_bounds + rndcg_tail > 0 THEN (rndcg_sum + CASE WHEN rndcg_tail > 0 THEN dcg / NULLIF(idcg_all, 0.0) "
           "ELSE 0.0 END) / (n_bounds + rndcg_tail) ELSE 0.0 END",
           ("gain", "gain_levels", "log_base"),
           bounds=lambda conv: (None, None) if _negative_gains(conv) else (0.0, 1.0)),
    Metric("rbp_resid", "RBP residual@k (trec_eval's rbp_resid)",
           "p^N + (1 - p) sum over unjudged items i <= k (no ground-truth row) of p^(i - 1), written 1 - (1 - p) sum "
           "over judged items i <= k of p^(i - 1); 0 when every item is judged; p = `rbp_persistence`",
           "CASE WHEN judged_ret < LEAST(k, n_recs) THEN 1.0 - (1.0 - $rbp_persistence) * judged_rbp ELSE 0.0 END",
           ("rbp_persistence", "negative_relevance"), empty_rules=False,  # no relevance read: trec_eval's value without a relevant label too
           aggregate="mean over every evaluated user (no empty-input rule: 0 without a list, 1 without labels)"),
    Metric("gm_map", "GM-MAP@k (trec_eval's gm_map: the geometric mean of AP@k)",
           "per user AP@k (as map); the summary is exp(mean ln max(AP@k, 0.00001)), trec_eval's floor",
           _AP, ("ap_denominator",), summary="geometric_mean",
           aggregate="geometric mean over users with a defined value, each at least 0.00001 (trec_eval's floor)"),
    # trec_eval's judged-aware measures (m_bpref.c, m_infap.c, m_num_nonrel_judged_ret.c, m_unjudged.c) over the
    # top k: a label row with relevance >= 0 is judged (relevant, or judged non-relevant), one with relevance < 0
    # is pooled but not judged (negative_relevance='unjudged'), an item without a row is not judged
    Metric("num_nonrel_judged_ret", "Judged non-relevant retrieved@k (trec_eval's num_nonrel_judged_ret)",
           "the judged non-relevant items (relevance >= 0, not relevant) in the top k; summed over users",
           "nonrel_ret", ("negative_relevance",), **_COUNT),
    Metric("bpref", "bpref@k (Buckley and Voorhees 2004; trec_eval's bpref over the top k)",
           "(1 / R) sum over the relevant items r in the top k of 1 - min(n_r, R) / min(N, R) (1 when n_r = 0), "
           "n_r = judged non-relevant items above r, R = n_rel, N = the user's judged non-relevant labels",
           _BPREF, ("negative_relevance",)),
    Metric("infap", "infAP@k (Yilmaz and Aslam 2006; trec_eval's infAP over the top k)",
           "(1 / R) sum over the relevant items in the top k at rank i = j + 1 of 1 if i = 1, else 1/i + (j/i) "
           "((r + n + p) / j) ((r + e) / (r + n + 2e)): r, n, p = the relevant, judged non-relevant and pooled "
           "(relevance < 0) items above it, e = 0.00001 (trec_eval's INFAP_EPSILON)",
           "infap_sum / NULLIF(CAST(n_rel AS DOUBLE), 0.0)", ("negative_relevance",)),
    Metric("unj", "Unjudged@k (trec_eval's unj_k; not 1 - Judged@k, which counts a pooled item as judged)",
           "the items in the top k without a judgement (no label row, or relevance < 0) / k (a list shorter than k "
           "is filled with judged items, as trec_eval)",
           "(LEAST(k, n_recs) - hits - nonrel_ret) / CAST(k AS DOUBLE)", ("negative_relevance",),
           empty_rules=False),
    Metric("judged", "Judged@k (ir_measures' Judged@k)",
           "the items in the top k with a label row (any relevance, a negative one too) / min(k, list length); "
           "undefined for an empty list",
           "(hits + nonrel_ret + pooled_ret) / NULLIF(CAST(LEAST(k, n_recs) AS DOUBLE), 0.0)", ("negative_relevance",),
           empty_rules=False),
    Metric("gm_bpref", "GM-bpref@k (trec_eval's gm_bpref: the geometric mean of bpref@k)",
           "per user bpref@k (as bpref); the summary is exp(mean ln max(bpref@k, 0.00001)), trec_eval's floor",
           _BPREF, ("negative_relevance",), summary="geometric_mean",
           aggregate="geometric mean over users with a defined value, each at least 0.00001 (trec_eval's floor)"),
)
# a formula reads another metric by its name (F-beta: precision and recall, before the empty rules)
_USER_FORMULAS = {m.name: m.sql for m in REGISTRY if m.sql is not None}

# Beyond accuracy. A per-user one declares its value (sql) over the per-(user, k) sums of sql/beyond_user.sql
# (rankwise.metrics.formulas.BEYOND_STATISTICS: n_items, info_sum, ...) and the terms BEYOND_TERMS; its final
# SELECT there and the Polars engine's last step come from it. A catalog one (one value per k) declares its
# value over the per-k statistics of sql/beyond_catalog.sql (BEYOND_CATALOG_STATISTICS: n_c, c_sum, ...) and
# the terms BEYOND_CATALOG_TERMS; the end of that file and the Polars engine's catalog values come from it. Notation:
# L_u = u's items with rank <= k, n_u = |L_u|, pop(i) = train popularity, U_T = train users (rows
# under popularity='rows'),
# c(i) = exposure (users whose L_u holds i), C = the catalog.
_TRAIN, _FEATURES = ("recommendations", "train"), ("recommendations", "item_features")
_LISTS = "mean over users with n_u > 0; every user under list_denominator='k'"
BEYOND: tuple[Metric, ...] = (
    Metric("novelty", "Novelty@k", "mean over L_u of -log_b(max(pop(i), 1) / U_T), U_T = train users (train rows "
           "under popularity='rows')",
           "CASE WHEN $novelty_normalize = 'log_users' AND total <= 1 THEN CAST(NULL AS DOUBLE) "
           "ELSE info_sum / den_counted END",
           ("popularity", "cold_items", "list_denominator", "novelty_normalize", "info_log_base"), needs=_TRAIN,
           aggregate=_LISTS, bounds=lambda conv: (0.0, 1.0) if conv.novelty_normalize == "log_users" else (0.0, None)),
    Metric("arp", "ARP@k (average recommendation popularity)", "mean over L_u of pop(i), a cold item 0",
           "apop_sum / den_counted",
           ("arp_popularity", "cold_items", "list_denominator"), needs=_TRAIN, aggregate=_LISTS, bounds=(0.0, None)),
    Metric("long_tail_share", "Long-tail share@k", "share of L_u outside the short head (the most popular train "
           "items holding `long_tail_ratio` of the interactions)", "tail_sum / den_all",
           ("popularity", "long_tail", "long_tail_ratio", "list_denominator"), needs=_TRAIN,
           aggregate=_LISTS),
    Metric("ild", "ILD@k (intra-list diversity)", "sum over pairs {i, j} of L_u of 1 - cos(f_i, f_j) / pairs, "
           "from |sum of unit vectors|^2",
           "CASE WHEN n_features = 0 THEN CAST(NULL AS DOUBLE) "
           "WHEN m < 2 THEN (CASE WHEN $ild_short = 'zero' THEN 0.0 ELSE CAST(NULL AS DOUBLE) END) "
           "ELSE LEAST(GREATEST(pairs - (q - m) / 2.0, 0.0), 2.0 * pairs) "
           "/ (CASE WHEN $ild_denominator = 'pairs' THEN pairs ELSE m END) END",
           ("ild_denominator", "ild_short"), needs=_FEATURES,
           aggregate="mean over users with 2 or more items with features; every user under ild_short='zero'",
           bounds=(0.0, 2.0)),  # 1 - cos lies in [0, 2]
    Metric("serendipity", "Serendipity@k", "mean over L_u of max(p_rank - p_pop, 0) * rel", "seren_sum / den_all",
           ("serendipity", "serendipity_popularity", "catalog", "list_denominator", "relevance_threshold"), needs=("recommendations", "ground_truth", "train"),
           aggregate=_LISTS, bounds=(0.0, None)),  # rel: the graded relevance
    Metric("item_coverage", "Item coverage@k", "|(union of L_u) ∩ C| / |C|",
           "CASE WHEN $coverage_scale = 'count' THEN covered "
           "WHEN $coverage_scale = 'ratio' THEN covered / NULLIF(catalog_size, 0.0) "
           "ELSE 100.0 * covered / NULLIF(catalog_size, 0.0) END",
           ("catalog", "catalog_outside", "catalog_padding", "coverage_scale"), level="catalog",
           needs=("recommendations",), aggregate="one value per k"),
    Metric("gini", "Gini index of exposure@k", "sum_j (2j - N - 1) c_(j) / (D sum c), c ascending",
           "CASE WHEN gini_den > 0 AND c_sum > 0 THEN (CASE WHEN $gini = 'catalog_n1_complement' "
           "THEN 1.0 - gini_num / (gini_den * c_sum) ELSE gini_num / (gini_den * c_sum) END) END",
           ("catalog", "catalog_padding", "gini"), level="catalog", needs=("recommendations",),
           aggregate="one value per k"),
    # -sum p ln p = ln C - sum c ln c / C, C = sum c
    Metric("exposure_entropy", "Exposure entropy@k", "-sum_i p_i log_b p_i, p_i = c(i) / sum c",
           "CASE WHEN c_sum > 0 THEN (LN(c_sum) - clogc / c_sum) / LN($info_log_base) "
           "/ (CASE WHEN $entropy_normalize = 'distinct' THEN n_exposed ELSE 1.0 END) END",
           ("info_log_base", "entropy_normalize"), level="catalog", needs=("recommendations",),
           aggregate="one value per k"),
    # sum_u n_u = sum c (each list item is one exposure)
    Metric("personalization", "Personalization@k", "1 - (sum_i c(i)^2 - sum_u n_u) / (k U_R (U_R - 1))",
           "CASE WHEN n_users >= 2 THEN 1.0 - (c2_sum - (CASE WHEN $personalization_lists = 'full' "
           "THEN n_users * k ELSE c_sum END)) / (k * n_users * (n_users - 1.0)) END",
           ("personalization_lists",), level="catalog", needs=("recommendations",), aggregate="one value per k"),
    # the softmax's entropy: ln Z - sum e^d d / Z, Z = sum e^d
    Metric("score_entropy", "Score entropy@k (Evidently ScoreDistribution)",
           "entropy (nats) of the softmax of all users' top-k scores pooled", "LN(score_z) - score_zd / score_z", (),
           level="catalog", needs=("recommendations", "scores"), aggregate="one value per k"),
)
# the input rules move every beyond-accuracy metric too (they decide L_u)
BEYOND_EVERY = ("duplicates", "ties", "min_score")

BY_NAME = {m.name: m for m in REGISTRY}
_EVERY = BY_NAME | {m.name: m for m in BEYOND}
USER_LEVEL = tuple(m.name for m in REGISTRY if m.level == "user")  # the per-user columns, in order
METRICS = tuple(m.public_name for m in REGISTRY)  # what evaluate(metrics=...) accepts (and f<beta>)
# what metrics=None computes: the ranking metrics recommender and search teams report; metrics="all" adds
# trec_eval's families (counts, set measures, utility, interpolated precision, ...). A preset whose library
# has none of these computes all it has.
DEFAULT_METRICS = ("precision", "recall", "f1", "map", "mar", "mrr", "dcg", "ndcg", "hit_rate", "r_precision", "rbp",
                   "err")
_F_BETA = re.compile(r"f(\d+(?:\.\d+)?)\Z", re.ASCII)

# Knobs that can change every metric; each metric adds its own (Metric.knobs). The docs page and
# explain() read KNOBS_BY_METRIC.
EVERY_METRIC = ("users", "unjudged", "empty_labels", "empty_predictions", "relevance_threshold", "duplicates",
                "ties", "min_score")
KNOBS_BY_METRIC = {m.name: EVERY_METRIC + m.knobs for m in REGISTRY} | {m.name: BEYOND_EVERY + m.knobs for m in BEYOND}


@dataclass(frozen=True)
class MetricRequest:
    """The metrics and cutoffs one evaluation computes."""

    names: tuple[str, ...]  # user-facing names in request order, e.g. ("precision", "f2")
    ks: tuple[int, ...]
    beta: float  # F-beta's beta (1.0 when no F metric is requested)
    # a parameter family's values other than the convention's (Rprec_mult_0.20, iprec_at_recall_0.50 beside
    # rprec_multiplier=1.0, iprec_recall_level=0.0): each one more per-user column and summary row, Param.column
    params: tuple[Param, ...] = ()
    # trec_eval's 11pt_avg at given recall levels (11pt_avg_0.25,0.5,0.75): each one more per-user column and
    # summary row, LevelMean.column, from the iprec_at_recall Params of its levels (in ``params``) after the engine
    means: tuple[LevelMean, ...] = ()

    def column(self, name: str, k: int) -> str:
        return f"{name}@{k}"

    @property
    def outputs(self) -> tuple[str, ...]:
        """The per-user columns and summary rows the request yields: the metrics, each Param.column, then each
        LevelMean.column."""
        return (*self.names, *(p.column for p in self.params), *(m.column for m in self.means))


# the metrics whose knob is a parameter one evaluation can take several values of (metric -> knob); a
# value is a dimension like k: computed from the same per-user statistics, one column per value
PARAM_KNOBS = {"iprec_at_recall": "iprec_recall_level", "rprec_mult": "rprec_multiplier"}


@dataclass(frozen=True)
class Param:
    """Metric ``metric`` with its parameter knob (PARAM_KNOBS) at ``value`` instead of the convention's."""

    metric: str
    value: float

    @property
    def knob(self) -> str:
        return PARAM_KNOBS[self.metric]

    @property
    def column(self) -> str:
        """Its per-user column and summary metric: ``iprec_at_recall(iprec_recall_level=0.5)``."""
        return f"{self.metric}({self.knob}={self.value!r})"


_PARAM_COLUMN = re.compile(r"(\w+)\(\w+=([0-9.e+-]+)\)\Z")  # Param.column, read back


@dataclass(frozen=True)
class LevelMean:
    """trec_eval's ``11pt_avg`` at the recall levels l_1, ..., l_n as given (``-m 11pt_avg.0.25,0.5,0.75``,
    m_11pt_avg.c), per user and k, from iprec_at_recall at each level (its Params, computed in the same pass):

        value = (t_n + t_(n-1) + ... + t_1) / n      added from t_n down to t_1, then divided, as trec_eval does

    With the levels in ascending order (duplicates allowed) t_i = iprec_at_recall at l_i. Otherwise trec_eval's
    walk (the levels from the last one back, matched as its ranks pass the r_i-th relevant item, r_i = l_i n_rel
    rounded by ``iprec_recall_count``) gives: t_i = 0 while every level from l_n back to l_i has r_i > R (R = the
    relevant items retrieved within k); then t_i = iprec_at_recall at l_i while each level met since has
    1 <= r_i <= r of the one before it (R for the first); from the first that has not, t_i = iprec_at_recall at 0
    (trec_eval's precision left over when its walk ends), for it and every level before it."""

    levels: tuple[float, ...]

    @property
    def ascending(self) -> bool:
        return all(a <= b for a, b in zip(self.levels, self.levels[1:]))

    @property
    def params(self) -> tuple[Param, ...]:
        """The iprec_at_recall values it reads, once each: its levels, and 0 when they are not in ascending order."""
        levels = self.levels if self.ascending else (*self.levels, 0.0)
        return tuple(Param("iprec_at_recall", v) for v in dict.fromkeys(levels))

    @property
    def column(self) -> str:
        """Its per-user column and summary metric: ``ipt11_avg(iprec_recall_levels=0.25,0.5,0.75)``."""
        return f"ipt11_avg(iprec_recall_levels={','.join(map(repr, self.levels))})"


K_ONES_MAX = 10_000  # the shipped SQL enumerates ideal slots 1..10000 (sql/per_user.sql, "slots")


def check_cutoffs(conv, ks, names) -> None:
    """Rules that tie the cutoffs to a convention, the same for every engine and the rendered SQL:
    ideal='k_ones' caps k for the metrics the ideal moves (ndcg), asked for in ``names``."""
    if conv.ideal == "k_ones" and max(ks) > K_ONES_MAX and any(
            "ideal" in KNOBS_BY_METRIC.get(internal_name(name), ()) for name in names):
        raise ParameterError(
            f"ideal='k_ones' supports k <= {K_ONES_MAX} for ndcg, got k={max(ks)}.",
            hint="Use a smaller k, ask for ndcg at smaller k in a second call, or ideal='labels' (the ideal "
                 "ranking from the user's own labels).")


def value_range(name: str, conv) -> tuple[float | None, float | None]:
    """(low, high): where every per-user value of metric ``name`` (public name: f2 is F-beta) lies under
    ``conv``, so its mean and the interval of that mean; None on an open side. (None, None) for a name
    outside the registry or a catalog-level metric."""
    metric = _EVERY.get(internal_name(name))
    param = _PARAM_COLUMN.fullmatch(name) if metric is None else None
    if metric is None and name.startswith("ipt11_avg(iprec_recall_levels="):  # a LevelMean.column
        metric = _EVERY["ipt11_avg"]
    elif param and param[1] in PARAM_KNOBS:  # a Param.column: its metric with the knob at the value
        metric, conv = _EVERY[param[1]], conv.replace(**{PARAM_KNOBS[param[1]]: float(param[2])})
    bounds = None if metric is None or metric.level == "catalog" else metric.bounds
    bounds = bounds(conv) if callable(bounds) else bounds
    return (None, None) if bounds is None else bounds


def computed_columns(request: MetricRequest) -> set[str]:
    """The per-user metric columns an engine computes for ``request`` (the others it may leave NULL):
    the metrics asked for, the metrics their formulas read (an F of means reads precision and recall),
    and ndcg, whose NULLs the counts of users left out by zero_ideal read."""
    from rankwise.metrics.formulas import reads

    asked = {internal_name(n) for n in request.names} & set(USER_LEVEL)
    read = {r for n in asked for r in reads(BY_NAME[n].sql)} & set(USER_LEVEL)
    return asked | read | {"ndcg"}


# sql/per_user.sql's optional stages ($pool_statistics, $gain_statistics, $rndcg_statistics) and the statistics each
# adds: a stage runs (1) only when a computed metric reads one of its statistics; the Polars plans follow the same sets
OPTIONAL_STATISTICS = {
    # trec_eval's judged-aware statistics (bpref, infAP, num_nonrel_judged_ret, unj, judged)
    "pool_statistics": frozenset({"nonrel_ret", "pooled_ret", "bpref_sum", "infap_sum"}),
    # every judged row and the labels' ideal at each rank (trec_eval's G, binG, ndcg_rel, Rndcg, rbp_resid)
    "gain_statistics": frozenset({"bing_sum", "g_sum", "ndcg_rel_sum", "pos_ret", "judged_rbp", "judged_ret",
                                  "n_pos", "idcg_all", "gain_total", "n_bounds"}),
    # Rndcg's sum over the R levels of the labels' ideal, on the gain stage (each level at each k: at 1M users x 100,
    # six k, 16M points; 14 of G's 36 s on Polars when it ran for every gain metric)
    "rndcg_statistics": frozenset({"rndcg_sum"}),
}


@cache
def readers(statistics: frozenset) -> frozenset[str]:
    """The metrics whose declaration reads one of ``statistics`` (worked out once per set: every evaluate asks)."""
    from rankwise.metrics.formulas import reads

    return frozenset(m.name for m in REGISTRY if m.sql is not None and statistics & reads(m.sql))


def stage_switches(computed=None) -> dict[str, int]:
    """``{stage: 0 | 1}`` for each of OPTIONAL_STATISTICS' stages: 1 when ``computed`` (per-user metric columns,
    None = every metric) holds a metric that reads the stage's statistics."""
    return {stage: int(computed is None or bool(readers(stats) & set(computed)))
            for stage, stats in OPTIONAL_STATISTICS.items()}


def internal_name(name: str) -> str:
    """The per-user column a metric lives in: every F-beta is "fbeta"."""
    return "fbeta" if _F_BETA.fullmatch(name) else name


def require_defined(conv, names) -> None:
    """The beyond-accuracy ``names`` must be metrics of ``conv``'s library (parse_request checks the
    accuracy ones): evaluate() and the rendered script refuse the others alike."""
    lacking = [n for n in names if conv.metrics is not None and n not in conv.metrics]
    if lacking:
        raise not_defined(conv.name, lacking[0], conv.metrics)


def not_defined(convention_name: str, name: str, supported) -> ParameterError:
    """The error for a metric (accuracy or beyond accuracy) a preset's library does not define."""
    has = ", ".join("f1 (any f<beta>)" if m == "fbeta" else m for m in supported)  # public names
    return ParameterError(
        f"The {convention_name!r} convention has no metric {name!r}: the library it reproduces does not define one.",
        hint=f"It has: {has}. For another definition, derive a convention: "
             f"rankwise.PRESETS[{convention_name!r}].replace(...) keeps its knobs and lifts the limit with metrics=None.")


def parse_request(metrics, k, supported: tuple[str, ...] | None = None, convention_name: str = "") -> MetricRequest:
    """Validate ``metrics`` (None = the DEFAULT_METRICS the convention supports, "all" = every metric it
    supports) and ``k`` (positive ints)."""
    ks = _parse_k(k)
    if metrics is None or asks_all(metrics):
        names = [m for m in METRICS if supported is None or internal_name(m) in supported]
        if metrics is None and any(m in DEFAULT_METRICS for m in names):
            names = [m for m in names if m in DEFAULT_METRICS]
    else:
        names = _as_list(metrics, "metrics")
    seen, betas = [], []
    for name in names:
        if not isinstance(name, str):
            raise ParameterError(f"Metric names are strings, got {name!r}.")
        name = name.strip().lower()
        match = _F_BETA.fullmatch(name)
        if match:
            beta = float(match.group(1))
            if beta <= 0:
                raise ParameterError(f"F-beta needs beta > 0, got {name!r}.", hint="For example f1, f2 or f0.5.")
            betas.append(beta)
        elif name not in METRICS:
            base, _, cutoff = name.partition("@")
            known = base in METRICS or _F_BETA.fullmatch(base) or base in (m.name for m in BEYOND)
            raise ParameterError(
                f"Unknown metric {name!r}.",
                hint=f"Cutoffs go in k=, not in the name: metrics=[{base!r}], k={cutoff}." if cutoff.isdigit() and known else
                did_you_mean(name, [*METRICS, *(m.name for m in BEYOND)]) + f"Known metrics: {', '.join(METRICS)} "
                f"(and f<beta> such as f2 or f0.5); beyond accuracy: {', '.join(m.name for m in BEYOND)}.",
            )
        if supported is not None and internal_name(name) not in supported:
            raise not_defined(convention_name, name, supported)
        if name not in seen:
            seen.append(name)
    if not seen:
        raise ParameterError("metrics is empty: nothing to compute.",
                             hint="Name at least one metric, e.g. metrics=['ndcg'], or leave metrics out for the usual set.")
    spellings = [n for n in seen if _F_BETA.fullmatch(n)]
    if len(spellings) > len(set(betas)) == 1:  # f1 and f1.0: one per-user column, one summary row
        raise ParameterError(
            f"{' and '.join(map(repr, spellings))} are the same metric (F-beta, beta = {betas[0]:g}).",
            hint=f"Name it once, e.g. metrics=[{spellings[0]!r}, ...].")
    if len(set(betas)) > 1:
        raise ParameterError(
            f"One F-beta per evaluation, got {', '.join(n for n in seen if _F_BETA.fullmatch(n))}.",
            hint="Call evaluate() once per beta.",
        )
    return MetricRequest(tuple(seen), ks, betas[0] if betas else 1.0)


K_MAX = 2**31 - 1  # the largest cutoff: an INTEGER in every SQL dialect (larger k was a raw error)


def _is_integer(value) -> bool:
    """Any integer (Python or NumPy: numbers.Integral) but a boolean (NumPy's bool_ is not Integral)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def asks_all(metrics) -> bool:
    """metrics="all" (or ["all"], as the CLI's --metrics all gives it)."""
    one = metrics if isinstance(metrics, str) else metrics[0] if isinstance(metrics, (list, tuple)) and \
        len(metrics) == 1 else None
    return isinstance(one, str) and one.strip().lower() == "all"


def _parse_k(k) -> tuple[int, ...]:
    """k: a positive integer (Python or NumPy) or a list/array of them, each 1 <= k <= K_MAX."""
    try:
        values = list(k) if isinstance(k, Iterable) and not isinstance(k, (str, bytes)) else [k]
    except TypeError:  # a 0-d NumPy array
        values = [k]
    bad = [v for v in values if not _is_integer(v) or not 1 <= v <= K_MAX]
    if bad or not values:
        raise ParameterError(
            f"k must be a positive integer up to {K_MAX} or a list of them, got {k!r}.",
            hint="For example k=10 or k=[1, 5, 10].",
        )
    return tuple(sorted({int(v) for v in values}))


def _as_list(value, what) -> list:
    if isinstance(value, (str, bytes)) or _is_integer(value):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise ParameterError(f"{what} must be a value or a list, got {value!r}.",
                             hint="Pass a single value or a list of values.") from None
