"""Per-user metrics as Polars expressions over list columns, for use in your own queries.

One row = one user: ``recs`` is a list column of recommended items in rank order, ``truth`` a list
column of the user's labelled items, ``relevance`` an optional list column parallel to ``truth``
(default: every label has relevance 1). Each function returns a ``pl.Expr`` (named ``"<metric>@<k>"``)
that equals ``rankwise.evaluate(...).per_user`` for that user under the same convention, so it
composes with anything: ``df.group_by("country").agg(expr.ndcg("recs", "truth", k=10).fill_nan(None).mean())``,
lazy or streaming.

Row rules (the convention's knobs, applied per row; NaN = undefined: ``.fill_nan(None)`` before a
``.mean()`` leaves it out, as evaluate() does; Polars' mean skips nulls, not NaN):

* A null list means the user is absent from that input (a left join leaves one); an empty list means
  present with no items. ``users`` picks the rows that are scored (``union``: present in either
  input, ``labels``, ``predictions``, ``intersection``); other rows are NaN. ``unjudged='drop'``
  makes rows without a single label NaN.
* ``empty_labels`` / ``empty_predictions``: the value of a row with no relevant label / no
  recommendation (``'error'`` cannot be raised from inside an expression and is refused).
* A row that ``evaluate`` would reject (a repeated item in ``recs``
  under ``duplicates='error'``, a repeated label, a null item, a relevance list of another length or
  with a null, NaN or infinite value, or a negative one under ``negative_relevance='error'``) is NaN.
  ``check_lists`` raises the typed error. Under ``negative_relevance='unjudged'`` a negative relevance
  is trec_eval's pooled-but-unjudged label, as in ``evaluate``: never relevant, no gain, not judged.
* The judged-aware measures (bpref, infap, num_nonrel_judged_ret, unj, judged, gm_bpref) read the
  ``relevance`` list: a label >= 0 that is not relevant is judged non-relevant, a negative one pooled
  but unjudged, an item without a label unjudged (without ``relevance`` every label has relevance 1).
* A DCG or ideal DCG too large for a double (``gain='exp2'``, a relevance above 1023) is no value:
  ``dcg`` / ``ndcg`` raise ``NumericOverflowError`` when the query runs, as ``evaluate`` does.
* ``recs``, ``truth`` and ``relevance`` name three different columns (evaluate's rule), else a
  ``ParameterError``.
  ``duplicates='first_shift'`` keeps each item's first occurrence.
* Items match as in ``evaluate``: list or array columns, text ids (String, Categorical, Enum) as
  text, integers of any width; items of different kinds (text vs integer, integer vs float) are a
  ``DtypeMismatchError`` when the query is planned.
* ``ties`` only orders scores (lists are already ranked) and ``f_aggregation`` only changes the
  summary, so neither changes a row. ``min_score`` needs scores and is refused.

>>> import polars as pl
>>> from rankwise import expr
>>> df = pl.DataFrame({"country": ["fr", "fr", "de"],
...                    "recs": [[1, 2, 3], [4, 5, 6], [7, 8, 9]],
...                    "truth": [[2], [9], [7, 9]]})
>>> df.select(expr.precision("recs", "truth", k=2), expr.mrr("recs", "truth", k=3))
shape: (3, 2)
┌─────────────┬───────┐
│ precision@2 ┆ mrr@3 │
│ ---         ┆ ---   │
│ f64         ┆ f64   │
╞═════════════╪═══════╡
│ 0.5         ┆ 0.5   │
│ 0.0         ┆ 0.0   │
│ 0.5         ┆ 1.0   │
└─────────────┴───────┘
>>> (df.lazy().group_by("country").agg(expr.hit_rate("recs", "truth", k=1).fill_nan(None).mean())
...    .sort("country").collect())
shape: (2, 2)
┌─────────┬────────────┐
│ country ┆ hit_rate@1 │
│ ---     ┆ ---        │
│ str     ┆ f64        │
╞═════════╪════════════╡
│ de      ┆ 1.0        │
│ fr      ┆ 0.0        │
└─────────┴────────────┘
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import polars as pl

from rankwise.metrics import declarations as _metrics
from rankwise.inputs.normalize import check_roles, common_integer, id_kind
from rankwise.conventions import Convention, resolve
from rankwise.engines.polars import knobs
from rankwise.engines.polars.positions import INFAP_EPSILON  # trec_eval.h
from rankwise.errors import (
    LeftOutWarning,
    warn,
    DtypeMismatchError,
    DuplicateItemError,
    InvalidRelevanceError,
    MissingColumnError,
    NullValueError,
    NumericOverflowError,
    ParameterError,
)

__all__ = ["precision", "recall", "fbeta", "f1", "map", "ap", "mar", "ar", "mrr", "rr", "dcg", "ndcg", "rbp", "err",
           "num_ret", "num_rel", "num_rel_ret", "set_p", "set_recall", "set_relative_p", "set_map", "set_f",
           "relative_p", "utility", "gm_map", "rprec_mult", "iprec_at_recall", "ipt11_avg",
           "num_nonrel_judged_ret", "bpref", "gm_bpref", "infap", "unj", "judged", "g", "bin_g", "ndcg_rel", "rndcg",
           "rbp_resid", "hit_rate", "r_precision", "novelty", "arp", "ild", "metrics", "check_lists", "install_duckdb"]

NAN = float("nan")
Column = str | pl.Expr
_E = pl.element()
# each element's first index in its list (a sort by value then index; runs share their first index)
_ORDER = pl.int_range(pl.len()).sort_by([_E, pl.int_range(pl.len())])
_SORTED = _E.gather(_ORDER)
_RUN_START = pl.when(_SORTED.shift(1).is_null() | (_SORTED != _SORTED.shift(1))).then(pl.int_range(pl.len()))
_FIRST_INDEX = _ORDER.gather(_RUN_START.forward_fill()).gather(_ORDER.arg_sort())


# -- the public functions, one per metric -------------------------------------------------------


def precision(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
              convention: str | Convention = "default") -> pl.Expr:
    """Precision@k = hits@k / den, den by ``precision_denominator``.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(precision("r", "t", k=2)).item()
    0.5
    """
    return _Rows(recs, truth, relevance, convention).metric("precision", k)


def recall(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
           convention: str | Convention = "default") -> pl.Expr:
    """Recall@k = hits@k / n_rel.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(recall("r", "t", k=2)).item()
    0.5
    """
    return _Rows(recs, truth, relevance, convention).metric("recall", k)


def fbeta(recs: Column, truth: Column, *, k: int, beta: float = 1.0, relevance: Column | None = None,
          convention: str | Convention = "default") -> pl.Expr:
    """F-beta@k = (1 + b^2) P R / (b^2 P + R), 0 when P = R = 0 (the per-user F).

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3, 4]], "t": [[1]]}).select(fbeta("r", "t", k=4, beta=2.0)).item()
    0.625
    """
    return _Rows(recs, truth, relevance, convention).metric("fbeta", k, _check_beta(beta))


def f1(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
       convention: str | Convention = "default") -> pl.Expr:
    """F1@k: ``fbeta`` with beta = 1 (named ``f1@k``).

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2]], "t": [[1, 3]]}).select(f1("r", "t", k=2)).item()
    0.5
    """
    return fbeta(recs, truth, k=k, beta=1.0, relevance=relevance, convention=convention).alias(f"f1@{k}")


def map(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,  # noqa: A001 (the metric's name)
        convention: str | Convention = "default") -> pl.Expr:
    """AP@k = sum over hit positions i <= k of hits@i / i, divided by ``ap_denominator``.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(map("r", "t", k=3)).item()
    0.8333333333333333
    """
    return _Rows(recs, truth, relevance, convention).metric("map", k)


def mar(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
        convention: str | Convention = "default") -> pl.Expr:
    """AR@k = sum over hit positions i <= k of hits@i / n_rel, divided by ``ap_denominator``.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(mar("r", "t", k=3)).item()
    0.75
    """
    return _Rows(recs, truth, relevance, convention).metric("mar", k)


def mrr(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
        convention: str | Convention = "default") -> pl.Expr:
    """RR@k = 1 / position of the first relevant item (within k if ``rr_cutoff``), 0 without one.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[3]]}).select(mrr("r", "t", k=3)).item()
    0.3333333333333333
    """
    return _Rows(recs, truth, relevance, convention).metric("mrr", k)


def dcg(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
        convention: str | Convention = "default") -> pl.Expr:
    """DCG@k = sum_{i <= k} gain(rel_i) / log_b(i + 1), gain and b by ``gain`` and ``log_base``.

    >>> import polars as pl
    >>> from rankwise import Convention
    >>> df = pl.DataFrame({"r": [[1, 2]], "t": [[2, 1]], "rel": [[3.0, 1.0]]})
    >>> linear_log2 = Convention(gain="linear", log_base=2)
    >>> round(df.select(dcg("r", "t", k=2, relevance="rel", convention=linear_log2)).item(), 6)
    2.892789
    """
    return _Rows(recs, truth, relevance, convention).metric("dcg", k)


def ndcg(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
         convention: str | Convention = "default") -> pl.Expr:
    """NDCG@k = DCG@k / IDCG@k, the ideal by ``ideal``; IDCG = 0 gives ``zero_ideal``.

    >>> import polars as pl
    >>> df = pl.DataFrame({"r": [[1, 2]], "t": [[2, 1]], "rel": [[3.0, 1.0]]})
    >>> round(df.select(ndcg("r", "t", k=2, relevance="rel", convention="trec_eval")).item(), 6)
    0.796708
    """
    return _Rows(recs, truth, relevance, convention).metric("ndcg", k)


def hit_rate(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
             convention: str | Convention = "default") -> pl.Expr:
    """1 if any of the top k is relevant, else 0.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[3]]}).select(hit_rate("r", "t", k=2)).item()
    0.0
    """
    return _Rows(recs, truth, relevance, convention).metric("hit_rate", k)


def r_precision(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
                convention: str | Convention = "default") -> pl.Expr:
    """hits within the top m / m, m = min(k, n_rel).

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[2, 3]]}).select(r_precision("r", "t", k=10)).item()
    0.5
    """
    return _Rows(recs, truth, relevance, convention).metric("r_precision", k)


ap, ar, rr = map, mar, mrr


# -- popularity metrics: the side data as a list column parallel to recs ------------------------


def rbp(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
        convention: str | Convention = "default") -> pl.Expr:
    """RBP@k = (1 - p) sum over hit positions i <= k of p^(i - 1), p = ``rbp_persistence``.

    >>> import polars as pl
    >>> round(pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(rbp("r", "t", k=3)).item(), 12)
    0.328
    """
    return _Rows(recs, truth, relevance, convention).metric("rbp", k)


def err(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
        convention: str | Convention = "default") -> pl.Expr:
    """ERR@k = sum_{r <= k} R_r / r prod_{i < r} (1 - R_i), R = (2^g - 1) / 2^g_max (Chapelle et al. 2009).

    Without ``relevance`` every label is grade 1 (g_max 1: R = 1/2 per hit). With it, g_max is the
    convention's ``err_max_grade``, which must then be set (a ParameterError otherwise): an expression
    sees one row or group at a time, where evaluate() takes the largest relevance of the ground truth.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(err("r", "t", k=3)).item()
    0.5833333333333334
    """
    return _Rows(recs, truth, relevance, convention).metric("err", k)


# -- trec_eval's whole-set measures over the top k (trec_eval -M k) ---------------------------------


def _trec_set(name: str, doc: str):
    def metric(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
               convention: str | Convention = "default") -> pl.Expr:
        return _Rows(recs, truth, relevance, convention).metric(name, k)

    metric.__name__ = metric.__qualname__ = name
    metric.__doc__ = doc
    return metric


num_ret = _trec_set("num_ret", """num_ret@k = min(k, list length), trec_eval's num_ret (every row: no empty rule).

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(num_ret("r", "t", k=5)).item()
    3.0
    """)
num_rel = _trec_set("num_rel", """num_rel = the relevant labels, trec_eval's num_rel (every row: no empty rule).

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(num_rel("r", "t", k=1)).item()
    2.0
    """)
num_rel_ret = _trec_set("num_rel_ret", """num_rel_ret@k = hits@k, trec_eval's num_rel_ret (every row: no empty rule).

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(num_rel_ret("r", "t", k=2)).item()
    1.0
    """)
set_p = _trec_set("set_p", """set_p@k = hits@k / min(k, list length), trec_eval's set_P.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(set_p("r", "t", k=5)).item()
    0.6666666666666666
    """)
set_recall = _trec_set("set_recall", """set_recall@k = hits@k / n_rel (recall@k), trec_eval's set_recall.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 4]]}).select(set_recall("r", "t", k=5)).item()
    0.5
    """)
set_relative_p = _trec_set("set_relative_p", """set_relative_p@k = hits@k / min(k, list
    length, n_rel), trec_eval's set_relative_P.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(set_relative_p("r", "t", k=5)).item()
    1.0
    """)
set_map = _trec_set("set_map", """set_map@k = hits@k^2 / (min(k, list length) n_rel), trec_eval's set_map.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 4]]}).select(set_map("r", "t", k=5)).item()
    0.16666666666666666
    """)
set_f = _trec_set("set_f", """set_f@k = 2 P R / (P + R) of set precision and recall@k, trec_eval's set_F (weight 1).

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 4]]}).select(set_f("r", "t", k=5)).item()
    0.4
    """)
relative_p = _trec_set("relative_p", """relative_p@k = hits@k / min(k, n_rel), trec_eval's
    relative_P_k.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(relative_p("r", "t", k=3)).item()
    1.0
    """)
utility = _trec_set("utility", """utility@k = a hits + b (ret - hits) + c (n_rel - hits) + d (N + hits - ret - n_rel),
    ret = min(k, list length), the coefficients and N by the convention's utility_* knobs and collection_size
    (trec_eval's 1, -1, 0, 0 and 0); every row: no empty rule.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(utility("r", "t", k=5)).item()
    1.0
    """)
rprec_mult = _trec_set("rprec_mult", """rprec_mult@k = hits within the top min(k, c) / c, c = floor(m n_rel + 0.9), m the
    convention's rprec_multiplier (trec_eval's Rprec_mult_<m>).

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3, 4]], "t": [[1, 3]]}).select(rprec_mult("r", "t", k=4)).item()
    0.5
    """)
iprec_at_recall = _trec_set("iprec_at_recall", """iprec_at_recall@k = the largest j / rank_j over the j-th hits within k,
    j >= r = round(l n_rel), l the convention's iprec_recall_level; 0 with fewer than r hits (trec_eval's
    iprec_at_recall_<l>).

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3, 4]], "t": [[2, 3]]}).select(iprec_at_recall("r", "t", k=4)).item()
    0.6666666666666666
    """)
ipt11_avg = _trec_set("ipt11_avg", """ipt11_avg@k = the mean of iprec_at_recall@k at the levels 0.0, 0.1, ..., 1.0
    (trec_eval's 11pt_avg).

    >>> import polars as pl
    >>> round(pl.DataFrame({"r": [[1, 2, 3, 4]], "t": [[2, 3]]}).select(ipt11_avg("r", "t", k=4)).item(), 6)
    0.666667
    """)
gm_map = _trec_set("gm_map", """gm_map@k per row: AP@k as map (the geometric mean is the aggregate over rows:
    trec_eval's exp(mean ln max(AP, 0.00001))).

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[2]]}).select(gm_map("r", "t", k=3)).item()
    0.5
    """)


# trec_eval's judged-aware measures (m_bpref.c, m_infap.c, m_num_nonrel_judged_ret.c, m_unjudged.c) over the top k:
# a label with relevance >= 0 is judged (relevant, or judged non-relevant), a negative one (negative_relevance=
# 'unjudged') pooled but not judged, an item without a label not judged
num_nonrel_judged_ret = _trec_set("num_nonrel_judged_ret", """num_nonrel_judged_ret@k = the judged non-relevant
    items (a label with relevance >= 0, not relevant) in the top k, trec_eval's num_nonrel_judged_ret (every
    row: no empty rule).

    >>> import polars as pl
    >>> df = pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 2, 3]], "rel": [[0.0, 1.0, -1.0]]})
    >>> df.select(num_nonrel_judged_ret("r", "t", k=3, relevance="rel", convention="trec_eval")).item()
    1.0
    """)
bpref = _trec_set("bpref", """bpref@k = (1 / R) sum over the relevant items r in the top k of
    1 - min(n_r, R) / min(N, R) (1 when n_r = 0); n_r = judged non-relevant items above r, R = the relevant
    labels, N = the judged non-relevant labels (Buckley and Voorhees 2004; trec_eval's bpref).

    >>> import polars as pl  # item 1 judged non-relevant above item 2: 1 - 1/1; item 3 above none: 1
    >>> df = pl.DataFrame({"r": [[3, 1, 2]], "t": [[1, 2, 3]], "rel": [[0.0, 1.0, 2.0]]})
    >>> df.select(bpref("r", "t", k=3, relevance="rel", convention="trec_eval")).item()
    0.5
    """)
gm_bpref = _trec_set("gm_bpref", """gm_bpref@k per row: bpref@k (the geometric mean is the aggregate over rows).

    >>> import polars as pl
    >>> df = pl.DataFrame({"r": [[3, 1, 2]], "t": [[1, 2, 3]], "rel": [[0.0, 1.0, 2.0]]})
    >>> df.select(gm_bpref("r", "t", k=3, relevance="rel", convention="trec_eval")).item()
    0.5
    """)
infap = _trec_set("infap", """infap@k = (1 / R) sum over the relevant items in the top k at rank i = j + 1 of 1 if
    i = 1, else 1/i + (j/i) ((r + n + p) / j) ((r + e) / (r + n + 2e)); r, n, p = the relevant, judged
    non-relevant and pooled (negative relevance) items above it, e = 0.00001 (Yilmaz and Aslam 2006;
    trec_eval's infAP).

    >>> import polars as pl  # rank 1 relevant: 1; rank 3 (r = 1, n = 0, p = 1): 1/3 + (2/3)(2/2)(1) = 1
    >>> df = pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 2, 3]], "rel": [[1.0, -1.0, 1.0]]})
    >>> round(df.select(infap("r", "t", k=3, relevance="rel", convention="trec_eval")).item(), 4)  # e: just below
    1.0
    """)
unj = _trec_set("unj", """unj@k = the items in the top k without a judgement (no label, or a negative relevance)
    / k, trec_eval's unj_k (every row: no empty rule).

    >>> import polars as pl
    >>> df = pl.DataFrame({"r": [[1, 2, 3, 4]], "t": [[1, 2]], "rel": [[0.0, -1.0]]})
    >>> df.select(unj("r", "t", k=4, relevance="rel", convention="trec_eval")).item()
    0.75
    """)
judged = _trec_set("judged", """judged@k = the items in the top k with a label (any relevance, a negative one too) /
    min(k, list length), ir_measures' Judged@k; NaN for an empty list (every row: no empty rule).

    >>> import polars as pl
    >>> from rankwise import Convention
    >>> df = pl.DataFrame({"r": [[1, 2, 3, 4]], "t": [[1, 2]], "rel": [[0.0, -1.0]]})
    >>> df.select(judged("r", "t", k=4, relevance="rel", convention=Convention(negative_relevance="unjudged"))).item()
    0.5
    """)
# trec_eval's gain measures (m_G.c, m_binG.c, m_ndcg_rel.c, m_Rndcg.c) over the labels' ideal (the positive gains
# sorted descending) and RBP's residual (m_rbp_resid.c)
g = _trec_set("g", """g@k = sum over items i <= k of nonzero gain of g_i / log2(2 + C_i - S_i), over the labels'
    total gain; S_i = the gains of items 1..i, C_i = the ideal's gains at 1..i each at least 1 (1 past the
    labels of positive gain); trec_eval's G.

    >>> import polars as pl  # g = 1 / log2(2 + 1 - 1), over the total gain 1
    >>> pl.DataFrame({"r": [[1, 2]], "t": [[1]]}).select(g("r", "t", k=2, convention="trec_eval")).item()
    1.0
    """)
bin_g = _trec_set("bin_g", """bin_g@k = sum over the relevant items i <= k of 1 / log2(2 + non-relevant items above
    i), over n_rel; trec_eval's binG.

    >>> import polars as pl  # 1 / log2(3), over 1
    >>> round(pl.DataFrame({"r": [[2, 1]], "t": [[1]]}).select(bin_g("r", "t", k=2, convention="trec_eval")).item(), 6)
    0.63093
    """)
ndcg_rel = _trec_set("ndcg_rel", """ndcg_rel@k = over the P labels of positive gain: at each one retrieved (rank
    i <= k) DCG@i / IDCG@min(i, P), each other one DCG@N / IDCG@P (N = min(k, list length)); their sum over P;
    trec_eval's ndcg_rel.

    >>> import polars as pl  # the one label at rank 1: DCG@1 / IDCG@1
    >>> pl.DataFrame({"r": [[1, 2]], "t": [[1]]}).select(ndcg_rel("r", "t", k=2, convention="trec_eval")).item()
    1.0
    """)
rndcg = _trec_set("rndcg", """rndcg@k = the mean of DCG@min(m, N) / IDCG@m over the ends m of the runs of equal
    positive gain in the ideal order, and DCG@N / IDCG@P when N > P + 1; trec_eval's Rndcg.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2]], "t": [[1]]}).select(rndcg("r", "t", k=2, convention="trec_eval")).item()
    1.0
    """)
rbp_resid = _trec_set("rbp_resid", """rbp_resid@k = p^N + (1 - p) sum over the unjudged items i <= k (no label, or a
    negative relevance) of p^(i - 1), 0 when every item is judged; p = ``rbp_persistence``, N = min(k, list
    length); trec_eval's rbp_resid (every row: no empty rule).

    >>> import polars as pl  # p = 0.9: 0.9^2 + 0.1 * 0.9 (item 2 unjudged)
    >>> round(pl.DataFrame({"r": [[1, 2]], "t": [[1]]}).select(rbp_resid("r", "t", k=2, convention="trec_eval")
    ...                                                       ).item(), 12)
    0.9
    """)


def _defining(convention: str | Convention, name: str) -> Convention:
    """The convention, which must define ``name`` (as evaluate refuses a metric a preset's library lacks)."""
    conv = resolve(convention)
    if conv.metrics is not None and name not in conv.metrics:
        raise _metrics.not_defined(conv.name, name, conv.metrics)
    return conv


def novelty(popularity: Column, *, k: int, n_users: int | float | pl.Expr,
            convention: str | Convention = "default") -> pl.Expr:
    """Novelty@k = mean over the first k items of -log_b(max(pop_i, 1) / U_T).

    ``popularity``: a list column parallel to the recommendations, each item's train popularity
    (distinct users or rows: computed by you, so the ``popularity`` knob is yours to apply); null or 0
    for a cold item. ``n_users``: U_T, the train users (the train rows if ``popularity`` is rows: as
    evaluate does under popularity='rows'). Knobs: ``cold_items`` ('as_one':
    max(pop, 1); 'drop': left out of the mean; 'zero_novelty': the item adds 0), ``list_denominator``
    ('n_u': the items counted; 'k'), ``novelty_normalize`` ('log_users': divide by ln U_T instead of
    ln b), ``info_log_base`` b. A null list (user absent), no item to average over, or a popularity
    that is no count (negative, NaN, infinite) is NaN; U_T < 1 is read as 1, as the engines do.

    >>> import polars as pl
    >>> df = pl.DataFrame({"pop": [[4, 1, None]]})  # U_T = 8: -log2(4/8) = 1, -log2(1/8) = 3, cold: 3
    >>> round(df.select(novelty("pop", k=3, n_users=8)).item(), 12)
    2.333333333333
    """
    conv = _defining(convention, "novelty")
    pop, k = _popularity_head(popularity, k), _check_k(k)
    if not isinstance(n_users, pl.Expr) and not (isinstance(n_users, numbers.Real) and not isinstance(n_users, bool)
                                                 and math.isfinite(n_users) and n_users >= 0):
        raise ParameterError(f"n_users={n_users!r} must be a finite number >= 0 (U_T, the train users) or an "
                             "expression.", hint="e.g. n_users=train['user'].n_unique().")
    total = (n_users if isinstance(n_users, pl.Expr) else pl.lit(float(n_users))).cast(pl.Float64)
    log_den = total.log() if conv.novelty_normalize == "log_users" else pl.lit(math.log(conv.info_log_base))
    # sum of -ln(max(pop, 1) / U_T) = n ln U_T - sum ln max(pop, 1) over the items with a term
    # (the lists are read without U_T: a list.eval cannot see another column)
    with_term = ~_cold(_E) if conv.cold_items in ("drop", "zero_novelty") else pl.lit(True)
    n_terms = pop.list.eval(with_term.cast(pl.Float64)).list.sum()
    ln_pop = pop.list.eval(pl.when(with_term).then(pl.max_horizontal(_E.fill_null(0), pl.lit(1.0)).log())
                           .otherwise(0.0)).list.sum()
    # ln max(U_T, 1), as the engines' GREATEST(U_T, 1): without train users every item counts as one user
    value = _popularity_mean(pop, (n_terms * total.clip(lower_bound=1.0).log() - ln_pop) / log_den, conv, k)
    if conv.novelty_normalize == "log_users":
        value = pl.when(total > 1).then(value).otherwise(pl.lit(NAN))
    return value.alias(f"novelty@{k}")


def arp(popularity: Column, *, k: int, convention: str | Convention = "default") -> pl.Expr:
    """ARP@k = mean over the first k items of pop_i (a cold item: 0, or left out with
    ``cold_items='drop'``); ``popularity`` and the denominator as in :func:`novelty`.

    >>> import polars as pl
    >>> pl.DataFrame({"pop": [[4, 1, None]]}).select(arp("pop", k=3)).item()
    1.6666666666666667
    """
    conv = _defining(convention, "arp")
    pop, k = _popularity_head(popularity, k), _check_k(k)
    counted = ~_cold(_E) if conv.cold_items == "drop" else pl.lit(True)
    total = pop.list.eval(pl.when(counted).then(_E.fill_null(0.0)).otherwise(0.0)).list.sum()
    return _popularity_mean(pop, total, conv, k).alias(f"arp@{k}")


def ild(embeddings: Column, *, k: int, convention: str | Convention = "default") -> pl.Expr:
    """ILD@k = sum over unordered pairs {i, j} of the first k items of (1 - cos(f_i, f_j)) / pairs,
    from the sum of unit vectors: sum_{i<j} cos = (|sum_i f_i/|f_i||^2 - m) / 2.

    ``embeddings``: a list column parallel to the recommendations, each item's feature vector (a list
    or array of numbers; null for an item without features). m = the first k items whose vector is
    not null and not zero. Knobs: ``ild_denominator`` ('pairs': m(m-1)/2; 'n_u': m, Evidently),
    ``ild_short`` (m < 2: 'nan' or 'zero'). A row ``evaluate`` would reject (vectors of different
    lengths, a null, NaN or infinite component) or a null list is NaN.

    >>> import polars as pl
    >>> df = pl.DataFrame({"f": [[[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]]]})  # cos: 0, 1/sqrt 2, 1/sqrt 2
    >>> round(df.select(ild("f", k=3)).item(), 12)  # (1 + 2 (1 - 1/sqrt 2)) / 3
    0.528595479209
    """
    conv = _defining(convention, "ild")
    k = _check_k(k)
    vectors = _number_lists(_as_expr(embeddings, "embeddings"), "embeddings", depth=2).list.head(k)
    # each vector over its largest |component| first: its squared norm can neither overflow nor underflow
    peak = _E.list.eval(_E.abs()).list.max()
    has_direction = _E.is_not_null() & (peak > 0)
    scaled = vectors.list.eval(_E.filter(has_direction) / peak.filter(has_direction))
    norm = _E.list.eval(_E * _E).list.sum().sqrt()
    units = scaled.list.eval(_E / norm)
    # q = |S|^2, S_d = sum over the n unit vectors of component d: the flat components gathered
    # dimension-major, prefix-summed, read at each dimension's end (a list.eval has no group-by)
    flat, n = _E.explode(), pl.len()
    d = flat.len() // n
    t = pl.int_range(flat.len())
    prefix = flat.gather((t % n) * d + t // n).cum_sum().gather(pl.int_range(1, d + 1) * n - 1)
    q = units.list.eval((prefix - prefix.shift(1, fill_value=0.0)).pow(2).sum()).list.first()
    m = units.list.len().cast(pl.Float64)
    pairs = m * (m - 1) / 2
    dist = (pairs - (q - m) / 2).clip(0.0, 2 * pairs)  # sum over pairs of 1 - cos (in [0, 2] each: rounding)
    value = dist / (pairs if conv.ild_denominator == "pairs" else m)
    short = pl.lit(0.0) if conv.ild_short == "zero" else pl.lit(NAN)
    lengths = vectors.list.eval(_E.list.len()).list.drop_nulls()
    # every component of every vector a finite number (a null vector is an item without features)
    finite = vectors.list.eval(_E.list.eval(_E.is_finite().fill_null(False)).list.all().fill_null(True)).list.all()
    valid = vectors.is_not_null() & (lengths.list.n_unique() <= 1) & finite
    return (pl.when(~valid).then(pl.lit(NAN)).when(m < 2).then(short).otherwise(value)).alias(f"ild@{k}")


def _popularity_head(popularity: Column, k) -> pl.Expr:
    return _number_lists(_as_expr(popularity, "popularity"), "popularity", depth=1).list.head(_check_k(k))


def _number_lists(column: pl.Expr, what: str, depth: int) -> pl.Expr:
    """A list (depth 1: popularity counts) or a list of lists (depth 2: vectors) of numbers, as
    List(Float64) or List(List(Float64)); any other type a DtypeMismatchError naming the column, when
    the query is planned."""
    def build(inputs):
        ((col, dtype),) = inputs
        inner = dtype
        for _ in range(depth):
            inner = inner.inner if isinstance(inner, (pl.List, pl.Array)) else None
            if inner is None:
                break
        if inner is None or not (inner.is_numeric() or inner == pl.Null):
            name = col.meta.output_name(raise_if_undetermined=False) or what
            shape = "a list of numbers per row" if depth == 1 else "a list of vectors (lists of numbers) per row"
            spelled = "pl.List(" * depth + "pl.Float64" + ")" * depth
            raise DtypeMismatchError(f"{what} {name!r} must be {shape}, got {dtype}.",
                                     hint=f"Cast it, e.g. pl.col({name!r}).cast({spelled}).")
        target = pl.Float64
        for _ in range(depth):
            target = pl.List(target)
        return col.cast(target)
    return pl.pipe_with_dtype([column], build)


def _cold(pop: pl.Expr) -> pl.Expr:
    return pop.is_null() | (pop == 0)


def _popularity_mean(pop: pl.Expr, total: pl.Expr, conv: Convention, k: int) -> pl.Expr:
    """``total`` (a sum over the counted items) / the list denominator (NaN when it is 0 or the list null)."""
    counted = ~_cold(_E) if conv.cold_items == "drop" else pl.lit(True)
    den = pl.lit(float(k)) if conv.list_denominator == "k" else pop.list.eval(counted.cast(pl.Float64)).list.sum()
    # a count is a finite number >= 0: a row with another value is NaN (a row evaluate would reject)
    counts = pop.list.eval((_E.is_null() | (_E.is_finite() & (_E >= 0))).fill_null(False)).list.all()
    return pl.when(pop.is_not_null() & counts & (den > 0)).then(total / den).otherwise(pl.lit(NAN))


def metrics(recs: Column, truth: Column, *, k: int | Iterable[int], metrics: Iterable[str] | None = None,
            relevance: Column | None = None, convention: str | Convention = "default",
            beta: float | None = None) -> list[pl.Expr]:
    """Several metrics at several cutoffs, named ``"<metric>@<k>"`` (``f2@10`` for F-beta 2), the
    columns ``evaluate(...).per_user`` has (``metrics=None``: rankwise.DEFAULT_METRICS, ``"all"``: every
    per-user metric). Polars computes the parts they share once. ``beta``
    names the F of ``metrics=None`` (``f2``); an F named in ``metrics`` fixes its beta, and a
    different ``beta`` is a ParameterError.

    >>> import polars as pl
    >>> df = pl.DataFrame({"r": [[1, 2, 3]], "t": [[2]]})
    >>> df.select(metrics("r", "t", k=[1, 3], metrics=["precision", "mrr"])).row(0)
    (0.0, 0.3333333333333333, 0.0, 0.5)
    """
    conv = resolve(convention)
    beyond = [m for m in ([metrics] if isinstance(metrics, str) else metrics or [])
              if isinstance(m, str) and m.strip().lower() in ("novelty", "arp", "ild")]
    if beyond:
        raise ParameterError(f"metrics() takes accuracy metrics; {beyond} read popularity or embeddings, not labels.",
                             hint="Use expr.novelty / expr.arp / expr.ild on a list of each item's popularity or "
                                  "vector, or evaluate(..., train=...) for every beyond-accuracy metric.")
    request = _metrics.parse_request(metrics, k, conv.metrics, conv.name)
    if (metrics is None or _metrics.asks_all(metrics)) and relevance is not None and conv.err_max_grade == 0 \
            and "err" in request.names:
        # ERR's top grade cannot come from one row: metrics=None leaves it out, saying so
        warn("expr.metrics() left out err: with a relevance list ERR needs the top grade of the scale "
             "(convention=Convention(err_max_grade=...)); evaluate() takes it from the whole ground truth.",
             LeftOutWarning)
        request = _metrics.MetricRequest(tuple(n for n in request.names if n != "err"), request.ks, request.beta)
    if beta is not None:  # names the F of metrics=None; an F named in metrics fixes its own beta
        beta = _check_beta(beta)
        named = [n for n in request.names if _metrics.internal_name(n) == "fbeta"]
        if metrics is not None and named and request.beta != beta:
            raise ParameterError(f"metrics names {named[0]!r} (beta = {request.beta:g}) but beta={beta:g}.",
                                 hint=f"Name the F you want, e.g. metrics=['f{beta:g}'], and leave beta out.")
        names = tuple(f"f{beta:g}" if n in named else n for n in request.names)
        request = _metrics.MetricRequest(names, request.ks, beta)
    _metrics.check_cutoffs(conv, request.ks, request.names)
    rows = _Rows(recs, truth, relevance, conv)
    return [rows.metric(_metrics.internal_name(name), kk, request.beta).alias(request.column(name, kk))
            for name in request.names for kk in request.ks]


# -- the row model --------------------------------------------------------------------------------


def _as_expr(value, what: str) -> pl.Expr:
    if isinstance(value, str):
        return pl.col(value)
    if isinstance(value, pl.Expr):
        return value
    raise ParameterError(f"{what} must be a column name or a Polars expression of list type, got {value!r}.",
                         hint=f'For example {what}="items" or {what}=pl.col("items").')


def _column_name(value) -> str | None:
    """The column a recs / truth / relevance argument names: a name, or a bare pl.col(name)."""
    if isinstance(value, str):
        return value
    if isinstance(value, pl.Expr) and value.meta.is_column():
        return value.meta.output_name()
    return None


def _check_roles(recs, truth, relevance) -> None:
    """recs, truth and relevance each read their own column (evaluate()'s rule, _inputs.check_roles)."""
    named = {"recs": _column_name(recs), "truth": _column_name(truth), "relevance": _column_name(relevance)}
    check_roles({role: name for role, name in named.items() if name is not None})


def _item_type(recs: tuple[str, pl.DataType], truth: tuple[str, pl.DataType], rows=None) -> pl.DataType:
    """The one item type of two (name, list or array dtype) columns, by evaluate's id-kind rule
    (``_inputs.id_kind``): text ids (String, Categorical, Enum) are String, integers one width;
    ids of different kinds never match: a DtypeMismatchError."""
    inner = []
    for role, (name, dtype) in (("recs", recs), ("truth", truth)):
        if not isinstance(dtype, (pl.List, pl.Array)):
            raise DtypeMismatchError(f"{role} {name!r} must be a list column of items, got {dtype}.", rows=rows,
                                     hint="Give one list of items per row, e.g. with group_by(...).agg(...).")
        if dtype.inner == pl.Boolean or isinstance(dtype.inner, (pl.List, pl.Array, pl.Struct)):
            raise DtypeMismatchError(f"{role} {name!r} holds {dtype.inner} items; items are ids: integers or text.",
                                     rows=rows, hint=f"Cast the items, e.g. pl.col({name!r}).cast(pl.List(pl.String)).")
        inner.append(dtype.inner)
    a, b = inner
    if a == b or pl.Null in (a, b):
        return b if a == pl.Null else a
    kind = id_kind(a)
    if kind != id_kind(b):
        raise DtypeMismatchError(
            f"recs {recs[0]!r} holds {a} items but truth {truth[0]!r} holds {b} items: ids of different kinds "
            "never match (evaluate() refuses them too).", rows=rows,
            hint=f"Cast both to the same type, e.g. pl.col({recs[0]!r}).cast(pl.List(pl.String)).")
    if kind == "text":
        return pl.String
    if pl.UInt64 in (a, b) and (a.is_signed_integer() or b.is_signed_integer()):
        return pl.Int128  # UInt64 ids past 2^63 fit no Int64 (evaluate() checks the values; an expression cannot)
    return common_integer(a, b)


def _as_list(column: pl.Expr, dtype: pl.DataType, inner: pl.DataType) -> pl.Expr:
    """A list or array column as a List(inner)."""
    column = column.arr.to_list() if isinstance(dtype, pl.Array) else column
    return column if dtype.inner == inner and isinstance(dtype, pl.List) else column.cast(pl.List(inner))


def _item_lists(recs: pl.Expr, truth: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """recs and truth as List columns of one item type (:func:`_item_type`), decided when the
    query is planned (the dtypes are known then)."""
    def side(i):
        def build(inputs):
            (r, rd), (t, td) = inputs
            inner = _item_type((r.meta.output_name(raise_if_undetermined=False) or "recs", rd),
                               (t.meta.output_name(raise_if_undetermined=False) or "truth", td))
            return _as_list(*inputs[i], inner)
        return build
    return pl.pipe_with_dtype([recs, truth], side(0)), pl.pipe_with_dtype([recs, truth], side(1))


def _relevance_list(relevance: pl.Expr) -> pl.Expr:
    """A numeric list or array column as List(Float64); other types an InvalidRelevanceError."""
    def build(inputs):
        ((column, dtype),) = inputs
        inner = getattr(dtype, "inner", None)
        if inner is None or not (inner.is_numeric() or inner in (pl.Boolean, pl.Null)):
            name = column.meta.output_name(raise_if_undetermined=False) or "relevance"
            raise InvalidRelevanceError(f"relevance {name!r} must be a list of numbers, got {dtype}.",
                                        hint="Relevance is a number >= 0 per label, e.g. pl.List(pl.Float64).")
        return _as_list(column, dtype, pl.Float64)
    return pl.pipe_with_dtype([relevance], build)


def _check_beta(beta) -> float:
    if not (isinstance(beta, (int, float)) and not isinstance(beta, bool) and math.isfinite(beta) and beta > 0):
        raise ParameterError(f"F-beta needs a finite beta > 0, got {beta!r}.", hint="For example beta=1.0 (F1) or 2.0.")
    return float(beta)


def _check_k(k) -> int:
    (value,) = _metrics._parse_k(k) if _metrics._is_integer(k) else (None,)
    if value is None:
        raise ParameterError(f"k must be one positive integer here, got {k!r}.",
                             hint="Call the function once per cutoff, or use rankwise.expr.metrics(k=[...]).")
    return value


def _per_row(conv: Convention) -> Convention:
    """Refuse the knobs a single row cannot honour."""
    refused = {
        "empty_labels": (conv.empty_labels == "error",
                         "an expression cannot raise per row: use 'nan' and check for NaN, or evaluate()."),
        "empty_predictions": (conv.empty_predictions == "error",
                              "an expression cannot raise per row: use 'nan' and check for NaN, or evaluate()."),
        "min_score": (conv.min_score is not None,
                      "lists carry no scores: drop the items below the threshold from the list first, "
                      "e.g. with list.filter, and use convention.replace(min_score=None)."),
    }
    for knob, (bad, hint) in refused.items():
        if bad:
            raise ParameterError(
                f"rankwise.expr cannot apply {knob}={getattr(conv, knob)!r} (convention {conv.name!r}) to one row.",
                hint=hint)
    return conv


# k up to this: the statistics that need the hits' positions (AP, RR, DCG) are sums over k position
# fields (cost linear in k); above it, list.eval passes over the first k items (cost linear in the
# lists' lengths). Measured at 200k rows and k = 100: about equal on lists of 20 items, the
# positional form faster on lists of 100. See _Rows._statistics.
POSITIONAL_MAX_K = 100


def _discount(i: int, base: float) -> float:
    """1 / log_b(i + 1) for the 1-based position i (the same arithmetic as sql/per_user.sql)."""
    return 1.0 / (math.log(i + 1.0) / math.log(base))


# the statistics of trec_eval's judged-aware and gain measures: _Rows._judged_statistics
_JUDGED = frozenset().union(*_metrics.OPTIONAL_STATISTICS.values())
# the statistics a gain can make too large for a double (gain='exp2'): their metrics' values are checked
_GAIN_SUMS = frozenset({"dcg", "idcg", "g_sum", "gain_total", "ndcg_rel_sum", "idcg_all", "rndcg_sum"})


def _packed(scalars: list[pl.Expr], lists: list[pl.Expr], body) -> pl.Expr:
    """body(scalars, lists, positions) aggregated per row, over lists of one length n and numbers of the row:
    a list.agg sees its own list only, so they travel as one list [s_1, ..., s_a, l_1 ..., l_2 ..., ...], read
    back as _E.get(i) and slices of n; positions = 1.0, ..., n."""
    a, b = len(scalars), len(lists)
    n = (pl.len() - a) // b
    packed = pl.concat_list([*(s.cast(pl.Float64) for s in scalars), *(x.cast(pl.List(pl.Float64)) for x in lists)])
    return packed.list.agg(body([_E.get(i) for i in range(a)], [_E.slice(a + j * n, n) for j in range(b)],
                                pl.int_range(1, n + 1).cast(pl.Float64)))


def _padded(values: pl.Expr, like: pl.Expr) -> pl.Expr:
    """values followed by zeros, cut to the length of the list ``like``."""
    return pl.concat_list([values, like.list.eval(pl.repeat(0.0, pl.len()))]).list.head(like.list.len())


class _Rows:
    """The building blocks of every metric for one (recs, truth, relevance, convention).

    A metric's expression is one chain of ``struct.with_fields`` stages over the row's lists (the
    lists and the row's validity; the per-position flags; the statistics its formula reads; its
    value), so each piece is computed once per expression. Polars shares nothing between
    expressions here: ``DataFrame.select`` runs without common subexpression elimination, and a
    lazy query's leaves out expressions over list elements. So metrics() at n metrics costs about n
    times one; its stages are still built once per k.

    The statistics (:meth:`_statistics`, the same values as sql/per_user.sql's):

    * hits, hits_sum (1 + 2 + ... + hits), r_hits, n_candidates and a 0/1 ideal count items, by set
      differences of the lists (a valid row repeats no item; a row that does is NaN);
    * precision_sum, first_hit and dcg need the hits' positions: for k <= POSITIONAL_MAX_K,
      position by position as the Polars engine's list-form path (``_polars_positions``): h<j> =
      is the item at position j a relevant label (``list.get`` + ``list.contains``), each sum a
      horizontal sum over the k positions in position order; for a larger k, ``list.eval`` passes
      over the first k items (nothing k long is built: a k of 10**7 is fine).

    tests/test_expr.py compares both to evaluate, the oracle and each other.
    """

    def __init__(self, recs, truth, relevance, convention):
        self.conv = _per_row(resolve(convention))
        if self.conv.gain_levels:
            raise ParameterError(f"rankwise.expr does not take gain_levels yet (got {self.conv.gain_levels!r}).",
                                 hint="Use rankwise.evaluate(...) for gains per relevance level, or a convention "
                                      "with gain_levels=().")
        _check_roles(recs, truth, relevance)
        self.names = {"recs": _column_name(recs) or "recs (an expression)",
                      "truth": _column_name(truth) or "truth (an expression)",
                      "rel": _column_name(relevance) or "relevance (an expression)"}
        self.raw_recs, self.raw_truth = _item_lists(_as_expr(recs, "recs"), _as_expr(truth, "truth"))
        self.rel = None if relevance is None else _relevance_list(_as_expr(relevance, "relevance"))
        self._derive()
        self._lists: pl.Expr | None = None
        self._stages: dict[tuple, pl.Expr] = {}

    def _derive(self) -> None:
        """recs (null: empty; first_shift: de-duplicated), the relevant labels and their counts,
        from raw_recs, raw_truth and rel."""
        self.recs = self.raw_recs.fill_null(pl.lit([]))
        if self.conv.duplicates == "first_shift":
            self.recs = self.recs.list.unique(maintain_order=True)
        self.truth = self.raw_truth
        thr = self.conv.relevance_threshold
        if self.rel is None:
            # every label has relevance 1: all relevant unless the threshold is above 1
            self.relevant = self.truth if 1.0 >= thr else self.truth.list.head(0)
        else:
            keep = self.rel.list.eval(((pl.element() > 0) & (pl.element() >= thr)).arg_true())
            self.relevant = self.truth.list.gather(keep)
        self.relevant = self.relevant.fill_null(pl.lit([]))
        self.n_recs = self.recs.list.len()
        self.n_rel = self.relevant.list.len()

    # -- per position of the first k (k None: the whole list), as lists --
    def _after(self, labels: pl.Expr, k: int | None) -> pl.Expr:
        """labels followed by the first k recommendations, the one list the row's work runs on."""
        return pl.concat_list([labels, self.recs if k is None else self.recs.list.head(k)])

    def flags(self, k: int | None) -> pl.Expr:
        """Is the item at each position relevant (a Boolean list)."""
        if self.rel is None:  # a recommendation that repeats a relevant label
            return self._after(self.relevant, k).list.eval(_E.is_first_distinct().not_()).list.slice(self.n_rel)
        thr = self.conv.relevance_threshold
        return self._label_relevance(k).list.eval(((_E > 0) & (_E >= thr)).fill_null(False))

    def _earns_as_flags(self) -> bool:
        """Is the gain at each position the relevance flag (binary gain, or every label relevance 1
        and relevant)."""
        return self.conv.gain == "binary" or (self.rel is None and 1.0 >= self.conv.relevance_threshold)

    def gains(self, k: int) -> pl.Expr:
        """The gain at each position (0 for an item without a label that earns)."""
        if self._earns_as_flags():
            return self.flags(k).cast(pl.List(pl.Float64))  # relevance 1 earns 2^1 - 1 = 1 under every gain
        if self.rel is None:  # relevance 1 below the threshold: not relevant, but a label earns 1
            truth = self.truth.fill_null(pl.lit([]))
            return self._after(truth, k).list.eval(_E.is_first_distinct().not_()).list.slice(
                truth.list.len()).cast(pl.List(pl.Float64))
        return self._label_relevance(k).list.eval(self._gain_of(_E).fill_null(0.0))

    def _label_relevance(self, k: int | None) -> pl.Expr:
        """The relevance of each position's label (null without one): each item's first index in
        labels + list, gathered from the relevance list (an index past the labels gives null)."""
        truth = self.truth.fill_null(pl.lit([]))
        first = self._after(truth, k).list.eval(_FIRST_INDEX).list.slice(truth.list.len())
        return self.rel.fill_null(pl.lit([])).list.gather(first, null_on_oob=True)

    def _gain_of(self, r: pl.Expr) -> pl.Expr:
        """The gain of relevance r: 0 at r <= 0 (a negative one is a pooled label), else by ``gain`` (knobs.gain)."""
        thr = self.conv.relevance_threshold
        rule = {"binary": ((r > 0) & (r >= thr)).cast(pl.Float64), "linear": r,
                "exp2": pl.lit(2.0).pow(r) - 1.0}[self.conv.gain]
        return pl.when(r <= 0).then(0.0).otherwise(rule)

    def _discounted(self, gains: pl.Expr) -> pl.Expr:
        """sum_i gains_i / log_b(i + 1) over a gain list (1-based i; sql/per_user.sql's arithmetic)."""
        ln_base = math.log(self.conv.log_base)
        return gains.list.agg((_E / (pl.int_range(2, pl.len() + 2).cast(pl.Float64).log() / ln_base)).sum())

    def _ideal_labels(self, k: int) -> pl.Expr:
        """IDCG@k of the labels sorted by gain (ideal='labels' with a relevance list)."""
        return self._discounted(self.rel.list.eval(self._gain_of(_E)).list.sort(descending=True).list.head(k))

    def _first_hit_anywhere(self) -> pl.Expr:
        """The position of the first hit in the whole list, 0 without one (rr_cutoff=False)."""
        return self.flags(None).list.agg(_E.arg_true().first() + 1).fill_null(0).cast(pl.Int64)

    def _n_candidates(self) -> pl.Expr:
        """The items recommended or relevant: the recommendations and the relevant labels not among them."""
        return self.n_recs + self.relevant.list.set_difference(self.recs).list.len()

    def scored(self) -> pl.Expr:
        """The row is in the convention's users and is a valid input (else the metric is NaN)."""
        in_recs, in_truth = self.raw_recs.is_not_null(), self.raw_truth.is_not_null()
        rule = {"union": in_recs | in_truth, "labels": in_truth, "predictions": in_recs,
                "intersection": in_recs & in_truth}[self.conv.users]
        if self.conv.unjudged == "drop":
            rule = rule & (self.raw_truth.list.len().fill_null(0) > 0)
        truth = self.raw_truth.fill_null(pl.lit([]))
        valid = truth.list.n_unique() == truth.list.len()  # a repeated label (or two nulls)
        valid = valid & (truth.list.agg(_E.null_count()) == 0)
        recs = self.raw_recs.fill_null(pl.lit([]))
        valid = valid & (recs.list.agg(_E.null_count()) == 0)
        if self.conv.duplicates == "error":
            valid = valid & (recs.list.n_unique() == recs.list.len())
        if self.rel is not None:
            rel = self.rel.fill_null(pl.lit([]))
            valid = valid & (rel.list.len() == truth.list.len()) & (rel.list.agg(_E.null_count()) == 0)
            valid = valid & rel.list.sum().is_finite()
            if self.conv.negative_relevance == "error":  # 'unjudged': trec_eval's pooled label, as in evaluate
                valid = valid & (rel.list.min().fill_null(0.0) >= 0)
        return rule & valid

    # -- a metric's expression: struct stages --
    def _on_fields(self, **names: str) -> _Rows:
        """This row model over the fields of a struct stage (pl.field) instead of the columns."""
        inner = object.__new__(_Rows)
        inner.__dict__.update(self.__dict__)
        for attr, name in names.items():
            setattr(inner, attr, pl.field(name))
        return inner

    def _lists_stage(self) -> tuple[pl.Expr, _Rows]:
        """The struct of the row's lists: recs, truth, rel as given, r (the recommendations the
        metrics read), relevant, n_recs, n_rel and scored (the row's validity), and the row model
        over these fields."""
        rel = {} if self.rel is None else {"rel": "rel"}
        if self._lists is None:
            raw = {"recs": self.raw_recs, "truth": self.raw_truth} | ({} if self.rel is None else {"rel": self.rel})
            on_raw = self._on_fields(raw_recs="recs", raw_truth="truth", **rel)
            on_raw._derive()
            self._lists = pl.struct(**raw).struct.with_fields(
                r=on_raw.recs, relevant=on_raw.relevant, scored=on_raw.scored()).struct.with_fields(
                n_recs=pl.field("r").list.len(), n_rel=pl.field("relevant").list.len())
        return self._lists, self._on_fields(raw_recs="recs", raw_truth="truth", truth="truth", recs="r",
                                            relevant="relevant", n_recs="n_recs", n_rel="n_rel", **rel)

    def _positions_stage(self, k: int, flags: bool, gains: bool) -> pl.Expr:
        """The lists stage with, per position j < k, h<j> (the item at position j is a relevant
        label; if ``flags``) and g<j> (its gain; if ``gains``, when the gain is not the flag).
        Built once per (k, flags, gains): the metrics of one metrics() call share it."""
        key = (k, flags, gains)
        if key not in self._stages:
            stage, rows = self._lists_stage()
            F = pl.field
            items = [F("r").list.get(j, null_on_oob=True) for j in range(k)]
            if flags:
                stage = stage.struct.with_fields(**{
                    f"h{j}": F("relevant").list.contains(item).fill_null(False) for j, item in enumerate(items)})
            if gains and self.rel is None:  # relevance 1 below the threshold: not relevant, but a label earns 1
                stage = stage.struct.with_fields(**{
                    f"g{j}": F("truth").fill_null(pl.lit([])).list.contains(item).fill_null(False).cast(pl.Float64)
                    for j, item in enumerate(items)})
            elif gains:  # the gain of each position's label, from the relevance of the first k labels
                stage = stage.struct.with_fields(label_rel=rows._label_relevance(k))
                stage = stage.struct.with_fields(**{
                    f"g{j}": self._gain_of(F("label_rel").list.get(j, null_on_oob=True)).fill_null(0.0)
                    for j in range(k)})
            self._stages[key] = stage
        return self._stages[key]

    def _statistics(self, k: int, needed: set[str]) -> pl.Expr:
        """The lists stage with the statistics in ``needed`` as fields.

        The hits and the statistics that only count them (hits_sum = 1 + 2 + ... + hits, r_hits, a
        0/1 ideal) come from set operations on the lists (a valid row repeats no item, and a row
        that does is NaN). The statistics that need the hits' positions (precision_sum, first_hit,
        dcg) are sums over positions 1..k in position order (k <= POSITIONAL_MAX_K: h<j> fields, as
        the list-form path's running sums, _polars_positions) or list.eval passes over the first k
        items (a larger k: the work then follows the lists' lengths, not k)."""
        stage, rows = self._lists_stage()
        conv, F = self.conv, pl.field
        flags_gain = self._earns_as_flags()  # the gain at each position is the relevance flag
        zero_one = conv.gain == "binary" or self.rel is None  # every gain 0 or 1
        topk = "idcg" in needed and conv.ideal == "predictions_topk"
        uses_flags = ("precision_sum" in needed or "rbp_sum" in needed or "mult_hits" in needed or "iprec_max" in needed or "ipt11_sum" in needed or ("first_hit" in needed and conv.rr_cutoff)
                      or (flags_gain and "dcg" in needed))
        uses_gains = not flags_gain and ("dcg" in needed or (topk and not zero_one))
        positional = k <= POSITIONAL_MAX_K
        if not positional and topk:  # the ideal: the gain list sorted
            uses_flags, uses_gains = uses_flags or flags_gain, uses_gains or not flags_gain
        if positional:
            stage = self._positions_stage(k, uses_flags, uses_gains)
            h = [F(f"h{j}") for j in range(k)]
            ints = [x.cast(pl.Int64) for x in h]
            gain = [x.cast(pl.Float64) for x in h] if flags_gain else [F(f"g{j}") for j in range(k)]
        else:
            lists = {"flags": rows.flags(k)} if uses_flags else {}
            if uses_gains:
                lists["gains"] = rows.gains(k)
            stage = stage.struct.with_fields(**lists) if lists else stage

        # partial sums some statistics share: the hits (n_hits), the positions whose label earns
        # (n_earn), and (positional) the hits of each block of about sqrt(k) positions, b<m>: the
        # running hits at a position are then a few terms
        partial: dict[str, pl.Expr] = {}
        if needed & {"hits", "hits_sum"} or (topk and flags_gain):
            if uses_flags:
                partial["n_hits"] = pl.sum_horizontal(ints) if positional else F("flags").list.sum()
            else:  # the relevant labels less those not among the first k
                partial["n_hits"] = F("n_rel") - F("relevant").list.set_difference(F("r").list.head(k)).list.len()
        if topk and zero_one and not flags_gain:  # relevance 1 below the threshold: the labels earn
            truth = F("truth").fill_null(pl.lit([]))
            partial["n_earn"] = truth.list.len() - truth.list.set_difference(F("r").list.head(k)).list.len()
        size = math.isqrt(k - 1) + 1
        if positional and needed & {"precision_sum", "iprec_max", "ipt11_sum"}:
            partial.update({f"b{m}": pl.sum_horizontal(ints[m * size:(m + 1) * size]) for m in range(k // size)})
        if partial:
            stage = stage.struct.with_fields(**partial)

        def running(j: int) -> pl.Expr:  # the hits within the first j + 1 positions
            m = (j + 1) // size
            return pl.sum_horizontal([F(f"b{i}") for i in range(m)] + ints[m * size:j + 1])

        def ideal_ones(n: pl.Expr) -> pl.Expr:  # sum_{i <= min(n, k)} 1 / log_b(i + 1)
            return pl.sum_horizontal([pl.when(n > j).then(pl.lit(_discount(j + 1, conv.log_base))).otherwise(0.0)
                                      for j in range(k)])

        def idcg() -> pl.Expr:
            if conv.ideal == "k_ones":
                return pl.lit(sum(_discount(i, conv.log_base) for i in range(1, k + 1)))
            if topk:
                if not positional:  # the gain list sorted
                    gains = F("flags").cast(pl.List(pl.Float64)) if flags_gain else F("gains")
                    return rows._discounted(gains.list.sort(descending=True))
                if zero_one:  # the earning ones first
                    return ideal_ones(F("n_hits" if flags_gain else "n_earn"))
                gains = F("label_rel").list.eval(self._gain_of(_E).fill_null(0.0))
                return rows._discounted(gains.list.sort(descending=True))
            if self.rel is None:  # ideal='labels', every label relevance 1
                earn = conv.gain != "binary" or 1.0 >= conv.relevance_threshold
                if not earn:
                    return pl.lit(0.0)
                if not positional:  # the discounts of the first min(k, labels) positions
                    return rows._discounted(F("truth").fill_null(pl.lit([])).list.head(k).list.eval(pl.lit(1.0)))
                return ideal_ones(F("truth").list.len().fill_null(0))
            return rows._ideal_labels(k)

        def precision_sum() -> pl.Expr:  # sum over the hit positions j of (hits within the first j) / j
            if not positional:
                hit = _E.cast(pl.Float64)
                return F("flags").list.agg((hit.cum_sum() * hit / pl.int_range(1, pl.len() + 1)).sum())
            return pl.sum_horizontal([pl.when(h[j]).then(running(j).cast(pl.Float64) / (j + 1)).otherwise(0.0)
                                      for j in range(k)])

        def mult_hits() -> pl.Expr:  # the hits within the first c = floor(m n_rel + 0.9) positions (rprec_mult)
            cut = knobs.rprec_cut(F("n_rel"), conv)
            if not positional:
                return F("flags").list.head(pl.min_horizontal(pl.lit(k, dtype=pl.Int64), cut.cast(pl.Int64))
                                            ).list.sum().cast(pl.Float64)
            return pl.sum_horizontal([(h[j] & (cut >= j + 1)).cast(pl.Float64) for j in range(k)])

        def ipt11_sum() -> pl.Expr:  # iprec_max at the levels 0.0, 0.1, ..., 1.0, summed (ipt11_avg)
            return pl.sum_horizontal([iprec_max(level) for level in knobs.IPT11_LEVELS])

        def iprec_max(level: float | None = None) -> pl.Expr:  # the largest j / rank_j over the j-th hits, j >= r
            count = knobs.iprec_count(F("n_rel"), conv, level)
            if not positional:
                hit = _E.cast(pl.Float64)
                at_hits = F("flags").list.eval((hit.cum_sum() / pl.int_range(1, pl.len() + 1)).filter(_E))
                return at_hits.list.slice(pl.max_horizontal(count - 1, 0).cast(pl.Int64)).list.max().fill_null(0.0)
            return pl.max_horizontal([pl.when(h[j] & (running(j) >= count)).then(running(j).cast(pl.Float64) / (j + 1))
                                      for j in range(k)]).fill_null(0.0)

        def first_hit() -> pl.Expr:  # within k (rr_cutoff) or anywhere in the list
            if not conv.rr_cutoff:
                return rows._first_hit_anywhere()
            if not positional:
                return F("flags").list.agg(_E.arg_true().first() + 1).fill_null(0).cast(pl.Int64)
            return pl.coalesce([pl.when(h[j]).then(pl.lit(j + 1, dtype=pl.Int64)) for j in range(k)]
                               + [pl.lit(0, dtype=pl.Int64)])

        def err_sum() -> pl.Expr:  # sum_j R_j / j prod_{i<j} (1 - R_i) over the first k positions
            if self.rel is None:  # every label is grade 1 (and so is g_max, unless the convention gives one)
                truth = F("truth").fill_null(pl.lit([]))
                grades = rows._after(truth, k).list.eval(_E.is_first_distinct().not_()).list.slice(
                    truth.list.len()).cast(pl.List(pl.Float64))
                g_max = float(conv.err_max_grade or 1.0)
            else:
                grades = rows._label_relevance(k).cast(pl.List(pl.Float64))
                g_max = float(conv.err_max_grade)  # set: metric() refuses 0 with a relevance list
            r = pl.when(_E > 0).then(knobs.err_stop(_E, g_max)).otherwise(0.0).fill_null(0.0)
            logs = knobs.err_log_complement(r, g_max)
            reached = (logs.cum_sum() - logs).exp()  # the product of 1 - R above each position
            position = pl.int_range(1, pl.len() + 1).cast(pl.Float64)
            return grades.list.eval((r / position * reached).sum()).list.first()

        def rbp_sum() -> pl.Expr:  # sum over the hit positions j of p^(j - 1)
            p = conv.rbp_persistence
            if not positional:
                weight = pl.lit(p).pow(pl.int_range(0, pl.len()).cast(pl.Float64))
                return F("flags").list.agg(pl.when(_E).then(weight).otherwise(0.0).sum())
            return pl.sum_horizontal([pl.when(h[j]).then(math.pow(p, j)).otherwise(0.0) for j in range(k)])

        def dcg() -> pl.Expr:
            if not positional:
                return rows._discounted(F("flags").cast(pl.List(pl.Float64)) if flags_gain else F("gains"))
            ln_base = math.log(conv.log_base)
            return pl.sum_horizontal([gain[j] / (math.log(j + 2.0) / ln_base) for j in range(k)])

        hits = F("n_hits")
        build = {
            "k": lambda: pl.lit(k, dtype=pl.Int64),
            "n_candidates": rows._n_candidates,
            "hits": lambda: hits.cast(pl.Float64),
            "hits_sum": lambda: (hits.cast(pl.Int64) * (hits.cast(pl.Int64) + 1) // 2).cast(pl.Float64),
            "r_hits": lambda: (F("n_rel") - F("relevant").list.set_difference(
                F("r").list.head(pl.min_horizontal(k, F("n_rel")))).list.len()).cast(pl.Float64) + 0.0,
            "precision_sum": precision_sum, "first_hit": first_hit, "dcg": dcg, "idcg": idcg,
            "rbp_sum": rbp_sum, "err_sum": err_sum, "mult_hits": mult_hits, "iprec_max": iprec_max, "ipt11_sum": ipt11_sum,
        }
        if needed & _JUDGED:  # each position's label relevance, and the labels' positive gains, once per stage
            stage = stage.struct.with_fields(lrel=rows._position_relevance(k))
            optional = _metrics.OPTIONAL_STATISTICS
            if needed & (optional["gain_statistics"] | optional["rndcg_statistics"]):
                stage = stage.struct.with_fields(ideal=rows._positive_gains())
            build.update(rows._judged_statistics())
        fields = {name: build[name]() for name in sorted(needed) if name not in ("n_recs", "n_rel")}
        return stage.struct.with_fields(**fields) if fields else stage

    def _position_relevance(self, k: int) -> pl.Expr:
        """The relevance of the label of each of the first k items, null without one (relevance 1 for every
        label without a relevance list)."""
        if self.rel is not None:
            return self._label_relevance(k)
        truth = self.truth.fill_null(pl.lit([]))
        labelled = self._after(truth, k).list.eval(_E.is_first_distinct().not_()).list.slice(truth.list.len())
        return labelled.list.eval(pl.when(_E).then(pl.lit(1.0)))

    def _positive_gains(self) -> pl.Expr:
        """The labels' ideal: their positive gains sorted descending (sql/per_user.sql's ideal_labels)."""
        if self.rel is None:  # every label relevance 1: gain 1, or 0 under binary gain below the threshold
            truth = self.truth.fill_null(pl.lit([]))
            earns = self.conv.gain != "binary" or 1.0 >= self.conv.relevance_threshold
            return truth.list.eval(pl.lit(1.0)) if earns else truth.list.head(0).cast(pl.List(pl.Float64))
        gains = self.rel.fill_null(pl.lit([])).list.eval(self._gain_of(_E))
        return gains.list.eval(_E.filter(_E > 0)).list.sort(descending=True)

    def _judged_statistics(self) -> dict:
        """Builders of trec_eval's judged-aware and gain statistics (declarations.OPTIONAL_STATISTICS) over the
        stage's fields lrel (each of the first k items' label relevance, null: no label) and ideal (the labels'
        positive gains, descending): the same sums, in the same order, as the Polars engine's long plan
        (engines/polars: _pooled_at_k, running, _rndcg); list.agg passes over the first k items, whatever k.

        Per position i: a label with relevance > 0 and >= the threshold is relevant, another one >= 0 judged
        non-relevant, a negative one pooled but not judged (negative_relevance='unjudged'); gain g_i (0 for
        an item without a label that earns), the ideal's gain I_i (0 past the labels of positive gain)."""
        conv, F = self.conv, pl.field
        thr, ln2, ln_base = conv.relevance_threshold, math.log(2.0), math.log(conv.log_base)
        lrel, ideal = F("lrel"), F("ideal")
        relevant = (_E > 0) & (_E >= thr)

        def flags(rule: pl.Expr) -> pl.Expr:  # 1.0 / 0.0 per position
            return lrel.list.eval(rule.fill_null(False).cast(pl.Float64))

        rel_f, nonrel_f, pool_f, judged_f = flags(relevant), flags((_E >= 0) & ~relevant), flags(_E < 0), flags(_E >= 0)
        gains = lrel.list.eval(self._gain_of(_E).fill_null(0.0))
        position = pl.int_range(1, pl.len() + 1).cast(pl.Float64)

        def n_nonrel() -> pl.Expr:  # the judged non-relevant labels (bpref's N)
            if self.rel is None:  # relevance 1 below the threshold: every label judged non-relevant
                return F("truth").list.len().fill_null(0) - F("n_rel")
            return F("rel").fill_null(pl.lit([])).list.eval(((_E >= 0) & ~relevant).cast(pl.Float64)).list.sum()

        def bpref_sum() -> pl.Expr:  # 1 - min(n, R) / min(N, R) at each relevant item, n judged non-relevant above
            def body(scalars, lists, i):
                (n_rel, n_judged_nonrel), (rel, nonrel) = scalars, lists
                above = nonrel.cum_sum()
                term = pl.when(above > 0).then(1.0 - pl.min_horizontal(above, n_rel)
                                               / pl.min_horizontal(n_judged_nonrel, n_rel)).otherwise(1.0)
                return pl.when(rel == 1).then(term).otherwise(0.0).sum()
            return _packed([F("n_rel"), n_nonrel()], [rel_f, nonrel_f], body)

        def infap_sum() -> pl.Expr:  # at each relevant item at rank i: 1 if i = 1, else trec_eval's estimate
            def body(scalars, lists, i):
                rel, nonrel, pooled = lists
                r, n, p = rel.cum_sum() - 1.0, nonrel.cum_sum(), pooled.cum_sum()
                j = i - 1.0
                term = pl.when(i == 1).then(1.0).otherwise(
                    1.0 / i + j / i * ((r + n + p) / j) * ((r + INFAP_EPSILON) / ((r + n) + 2 * INFAP_EPSILON)))
                return pl.when(rel == 1).then(term).otherwise(0.0).sum()
            return _packed([], [rel_f, nonrel_f, pool_f], body)

        def bing_sum() -> pl.Expr:  # 1 / log2(2 + the non-relevant items above) at each relevant item
            return rel_f.list.agg(pl.when(_E == 1).then(1.0 / ((2.0 + (position - _E.cum_sum())).log() / ln2))
                                  .otherwise(0.0).sum())

        def g_sum() -> pl.Expr:  # g_i / log2(2 + C_i - S_i) at each item of nonzero gain
            def body(scalars, lists, i):
                gain, ideal_gain = lists
                cost = pl.max_horizontal(ideal_gain, pl.lit(1.0)).cum_sum()
                return pl.when(gain != 0).then(gain / ((2.0 + cost - gain.cum_sum()).log() / ln2)).otherwise(0.0).sum()
            return _packed([], [gains, _padded(ideal, gains)], body)

        def ndcg_rel_sum() -> pl.Expr:  # DCG@i / IDCG@min(i, P) at each item of positive gain
            def body(scalars, lists, i):
                gain, ideal_gain = lists
                discount = (i + 1.0).log() / ln_base
                dcg, idcg = (gain / discount).cum_sum(), (ideal_gain / discount).cum_sum()
                return pl.when(gain > 0).then(dcg / idcg).otherwise(0.0).sum()
            return _packed([], [gains, _padded(ideal, gains)], body)

        def rndcg_sum() -> pl.Expr:  # DCG@min(m, N) / IDCG@m at each end m of a run of equal gain in the ideal
            def body(scalars, lists, i):
                ideal_gain, gain = lists
                discount = (i + 1.0).log() / ln_base
                end = ideal_gain.ne_missing(ideal_gain.shift(-1))
                return pl.when(end).then((gain / discount).cum_sum() / (ideal_gain / discount).cum_sum()) \
                    .otherwise(0.0).sum()
            return _packed([], [ideal, _padded(gains, ideal)], body)

        p = conv.rbp_persistence
        return {
            "nonrel_ret": lambda: nonrel_f.list.sum(), "pooled_ret": lambda: pool_f.list.sum(),
            "bpref_sum": bpref_sum, "infap_sum": infap_sum, "bing_sum": bing_sum, "g_sum": g_sum,
            "ndcg_rel_sum": ndcg_rel_sum, "rndcg_sum": rndcg_sum,
            "pos_ret": lambda: gains.list.eval((_E > 0).cast(pl.Float64)).list.sum(),
            "judged_ret": lambda: judged_f.list.sum(),
            "judged_rbp": lambda: judged_f.list.agg(
                pl.when(_E == 1).then(pl.lit(p).pow(position - 1.0)).otherwise(0.0).sum()),
            "n_pos": lambda: ideal.list.len(), "gain_total": lambda: ideal.list.sum(),
            "idcg_all": lambda: self._discounted(ideal),
            "n_bounds": lambda: ideal.list.eval(_E.ne_missing(_E.shift(-1)).cast(pl.Float64)).list.sum(),
        }

    def metric(self, name: str, k: int, beta: float = 1.0) -> pl.Expr:
        k = _check_k(k)
        conv = _defining(self.conv, name)
        if name not in _metrics.BY_NAME:
            raise ParameterError(f"Unknown metric {name!r}.", hint=f"Known: {', '.join(_metrics.USER_LEVEL)}.")
        _metrics.check_cutoffs(conv, (k,), (name,))
        if name == "err" and self.rel is not None and conv.err_max_grade == 0:
            raise ParameterError(
                "ERR with a relevance list needs the top grade of the scale: an expression sees one row (or "
                "group) at a time, where evaluate() takes the largest relevance of the whole ground truth.",
                hint="Set it on the convention, e.g. convention=Convention(err_max_grade=3).")
        build = _metrics.BY_NAME[name].build
        needed = set(build(conv, beta, pl.col).meta.root_names())  # the statistics the formula reads
        formula = build(conv, beta, pl.field)  # read as fields of the stage
        const = {"zero": pl.lit(0.0), "one": pl.lit(1.0), "nan": pl.lit(NAN)}
        F = pl.field
        raw = F("raw")  # the formula's value (null: undefined)
        if _metrics.BY_NAME[name].empty_rules:
            decides = F("scored") & (F("n_rel") > 0) & (F("n_recs") > 0)  # the rows the formula gives a value
            value = (pl.when(~F("scored")).then(pl.lit(NAN))
                     .when(F("n_rel") == 0).then(const[conv.empty_labels])
                     .when(F("n_recs") == 0).then(const[conv.empty_predictions])
                     .otherwise(raw.fill_null(NAN)))
        else:  # a count: every scored row's value is its formula
            decides = F("scored")
            value = pl.when(~F("scored")).then(pl.lit(NAN)).otherwise(raw.fill_null(NAN))
        stage = self._statistics(k, needed).struct.with_fields(raw=formula.cast(pl.Float64)).struct.with_fields(
            value=value.cast(pl.Float64))
        # a gain can overflow a sum (relevance 1 earns at most 1): a value the formula gives that is not finite
        # (2^2000 - 1 under exp2) raises, as evaluate() does
        if not needed & _GAIN_SUMS or self.rel is None or conv.gain == "binary":
            return stage.struct.field("value").alias(f"{name}@{k}")
        overflowed = decides & raw.is_not_null() & ~raw.is_finite()
        report = pl.struct(recs=F("recs"), truth=F("truth"), rel=F("rel"), value=F("value"), overflowed=overflowed)
        return stage.struct.with_fields(report=report).struct.field("report").map_batches(
            _overflow_check(f"{name}@{k}", conv, self.names), return_dtype=pl.Float64,
            is_elementwise=True).alias(f"{name}@{k}")


def _overflow_check(metric: str, conv: Convention, names: dict):
    """The value of each row of a (recs, truth, rel, value, overflowed) struct column; a
    NumericOverflowError showing the rows when one overflowed (run when the query runs)."""
    def check(report: pl.Series) -> pl.Series:
        from rankwise.engines.shape import overflow_hint

        rows = report.struct.unnest()
        bad = rows.filter(pl.col("overflowed"))
        if bad.height:
            raise NumericOverflowError(
                f"{metric}: {bad.height} row(s) have a non-finite DCG or ideal DCG (a number too large for a "
                "double: it became inf or NaN).",
                rows=bad.select(pl.col(field).alias(names[field]) for field in ("recs", "truth", "rel")).head(5),
                hint=overflow_hint(conv, per_user=True))
        return rows["value"]
    return check


# -- checks and DuckDB --------------------------------------------------------------------------


def check_lists(frame, recs: str, truth: str, relevance: str | None = None,
                convention: str | Convention = "default") -> None:
    """Raise the typed error ``evaluate`` would raise for rows the expressions score NaN: a null
    item, a repeated item (``duplicates='error'``) or label, a bad relevance list.

    >>> import polars as pl
    >>> check_lists(pl.DataFrame({"r": [[1, 1]], "t": [[1]]}), "r", "t")
    Traceback (most recent call last):
    ...
    rankwise.errors.DuplicateItemError: r: 1 lists repeat an item.
    Offending rows (first few):
    ...
    """
    conv = resolve(convention)
    _check_roles(recs, truth, relevance)
    lf = frame.lazy() if hasattr(frame, "lazy") else pl.LazyFrame(frame)
    cols = [recs, truth] + ([relevance] if relevance else [])
    schema = lf.collect_schema()
    missing = [c for c in cols if c not in schema]
    if missing:
        raise MissingColumnError(f"check_lists: missing column(s) {missing}; found {list(schema)}.",
                                 hint="Pass the names of the recs, truth (and relevance) list columns.")
    df = lf.select(cols).with_row_index("row").collect()
    df = df.with_columns(pl.col(c).arr.to_list() for c in cols if isinstance(df.schema[c], pl.Array))
    _item_type((recs, df.schema[recs]), (truth, df.schema[truth]), rows=df.head(3))
    rel_type = getattr(df.schema[relevance], "inner", None) if relevance else pl.Float64
    if rel_type is None or not (rel_type.is_numeric() or rel_type in (pl.Boolean, pl.Null)):
        raise InvalidRelevanceError(f"{relevance}: must be a list of numbers, got {df.schema[relevance]}.",
                                    rows=df.head(3),
                                    hint="Relevance is a number >= 0 per label, e.g. pl.List(pl.Float64).")

    def fail(error, column, mask, problem, hint):
        bad = df.filter(mask)
        if bad.height:
            raise error(f"{column}: {bad.height} lists {problem}.", rows=bad.head(5), hint=hint)

    for column in (recs, truth):
        c = pl.col(column)
        fail(NullValueError, column, c.list.drop_nulls().list.len() != c.list.len(), "hold a null item",
             f"Drop nulls from the lists: pl.col({column!r}).list.drop_nulls().")
    if conv.duplicates == "error":
        fail(DuplicateItemError, recs, pl.col(recs).list.n_unique() != pl.col(recs).list.len(), "repeat an item",
             "De-duplicate the lists, or choose Convention(duplicates='first_shift') to keep each item's "
             "first occurrence.")
    fail(DuplicateItemError, truth, pl.col(truth).list.n_unique() != pl.col(truth).list.len(), "repeat a label",
         "Keep one label per item, e.g. the maximum relevance.")
    if relevance:
        r, t = pl.col(relevance).cast(pl.List(pl.Float64)), pl.col(truth)
        fail(InvalidRelevanceError, relevance, r.list.len().fill_null(0) != t.list.len().fill_null(0),
             f"differ in length from {truth!r} (a null list has none)",
             "Give one relevance per label, in the same order.")
        fail(InvalidRelevanceError, relevance,
             (r.list.drop_nulls().list.len() != r.list.len()) | ~r.list.sum().is_finite(),
             "hold a null, NaN or infinite relevance", "Relevance must be a finite number.")
        if conv.negative_relevance == "error":
            fail(InvalidRelevanceError, relevance, r.list.min() < 0, "hold a negative relevance",
                 "Relevance must be a number >= 0 (0 = judged not relevant). A negative level is trec_eval's "
                 "pooled-but-unjudged label: convention=Convention(negative_relevance='unjudged') reads it so "
                 "(the trec_eval preset does).")


def install_duckdb(con) -> None:
    """Create the ``rankwise_<metric>`` macros (``sql/macros.sql``) in a DuckDB connection, as
    temporary macros: nothing is written to its database file (a read-only connection works).

    >>> import duckdb
    >>> con = duckdb.connect()
    >>> install_duckdb(con)
    >>> con.execute("SELECT rankwise_precision([1, 2, 3], [1, 3], 2)").fetchone()[0]
    0.5
    """
    from rankwise.sqlgen import files as _sql_files

    con.execute(_sql_files.read("macros"))
