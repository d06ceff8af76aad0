"""Per-user metric values as Polars expressions over the per-(user, k) statistics.

The statistics are the columns both engines compute per user and cutoff (``sql/per_user.sql``, stage
``stats``): hits, n_recs, n_rel, n_candidates, precision_sum, hits_sum, first_hit, dcg, idcg, r_hits,
k. Each builder takes the convention and returns the metric's value, null where it is undefined
(before the ``empty_labels`` / ``empty_predictions`` rules, which the engine applies to every metric).
The metric registry (:mod:`rankwise.metrics`) points at these; nothing else looks them up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from .conventions import Convention


def _least(a: pl.Expr, b: pl.Expr) -> pl.Expr:
    return pl.min_horizontal(a, b)


def _divide(num: pl.Expr, den: pl.Expr) -> pl.Expr:
    """num / den, null when den is 0 (SQL's NULLIF)."""
    den = den.cast(pl.Float64)
    return pl.when(den != 0).then(num / den)


def precision(conv: Convention) -> pl.Expr:
    """hits@k / den, den = k | min(k, n_recs) | min(k, n_rel) | min(k, |recommended or relevant|)."""
    den = {
        "k": pl.col("k"),
        "min_k_len": _least(pl.col("k"), pl.col("n_recs")),
        "min_k_nrel": _least(pl.col("k"), pl.col("n_rel")),
        "min_k_candidates": _least(pl.col("k"), pl.col("n_candidates")),
    }[conv.precision_denominator]
    return _divide(pl.col("hits"), den)


def recall(conv: Convention) -> pl.Expr:
    """hits@k / n_rel."""
    return _divide(pl.col("hits"), pl.col("n_rel"))


def _ap_den(conv: Convention) -> pl.Expr:
    return {
        "n_hits": pl.col("hits"),
        "n_rel": pl.col("n_rel"),
        "min_k_nrel": _least(pl.col("k"), pl.col("n_rel")),
        "k": pl.col("k"),
        "min_k_len": _least(pl.col("k"), pl.col("n_recs")),
    }[conv.ap_denominator].cast(pl.Float64)


def average_precision(conv: Convention) -> pl.Expr:
    """sum over hit positions i <= k of hits@i / i, divided by the AP denominator (0 when it is 0)."""
    den = _ap_den(conv)
    return pl.when(den > 0).then(pl.col("precision_sum") / den).otherwise(0.0)


def average_recall(conv: Convention) -> pl.Expr:
    """sum over hit positions i <= k of hits@i / n_rel, divided by the AP denominator."""
    den = _ap_den(conv)
    return pl.when(den > 0).then(_divide(pl.col("hits_sum"), pl.col("n_rel")) / den).otherwise(0.0)


def reciprocal_rank(conv: Convention) -> pl.Expr:
    """1 / position of the first hit (within k when rr_cutoff), 0 without one."""
    return pl.when(pl.col("first_hit") > 0).then(1.0 / pl.col("first_hit")).otherwise(0.0)


def dcg(conv: Convention) -> pl.Expr:
    """sum_{i<=k} gain_i / log_b(i + 1)."""
    return pl.col("dcg")


def ndcg(conv: Convention) -> pl.Expr:
    """DCG@k / IDCG@k; when IDCG = 0: 0 or undefined (zero_ideal)."""
    fallback = pl.lit(0.0) if conv.zero_ideal == "zero" else pl.lit(None, dtype=pl.Float64)
    return pl.when(pl.col("idcg") > 0).then(pl.col("dcg") / pl.col("idcg")).otherwise(fallback)


def hit_rate(conv: Convention) -> pl.Expr:
    """1 if any of the top k is relevant, else 0."""
    return pl.when(pl.col("hits") > 0).then(1.0).otherwise(0.0)


def r_precision(conv: Convention) -> pl.Expr:
    """hits within the top min(k, n_rel) / min(k, n_rel)."""
    return _divide(pl.col("r_hits"), _least(pl.col("k"), pl.col("n_rel")))


def f_beta(conv: Convention, beta: float = 1.0) -> pl.Expr:
    """F-beta of the user's precision and recall at k."""
    return fbeta(precision(conv), recall(conv), beta)


def fbeta(p: pl.Expr, r: pl.Expr, beta: float) -> pl.Expr:
    """(1 + b^2) P R / (b^2 P + R), 0 when P + R = 0, undefined when P or R is."""
    b2 = beta * beta
    undefined = pl.lit(None, dtype=pl.Float64)
    return pl.when(p.is_null() | r.is_null()).then(undefined).when(p + r > 0).then(
        (1.0 + b2) * p * r / (b2 * p + r)).otherwise(0.0)
