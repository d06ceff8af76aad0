"""Per-user metric values as Polars expressions over the per-(user, k) statistics.

The statistics are the columns both engines compute per user and cutoff (``sql/per_user.sql``, stage
``stats``): hits, n_recs, n_rel, n_candidates, precision_sum, hits_sum, first_hit, dcg, idcg, r_hits,
k. Each builder takes the convention and returns the metric's value, null where it is undefined
(before the ``empty_labels`` / ``empty_predictions`` rules, which the engine applies to every metric).
``col(name)`` gives a statistic: a column of the engine's plan by default, any expression for
:mod:`rankwise.expr`, which computes the same statistics from list columns.
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


def precision(conv: Convention, col=pl.col) -> pl.Expr:
    """hits@k / den, den = k | min(k, n_recs) | min(k, n_rel) | min(k, |recommended or relevant|)."""
    den = {
        "k": col("k"),
        "min_k_len": _least(col("k"), col("n_recs")),
        "min_k_nrel": _least(col("k"), col("n_rel")),
        "min_k_candidates": _least(col("k"), col("n_candidates")),
    }[conv.precision_denominator]
    return _divide(col("hits"), den)


def recall(conv: Convention, col=pl.col) -> pl.Expr:
    """hits@k / n_rel."""
    return _divide(col("hits"), col("n_rel"))


def _ap_den(conv: Convention, col=pl.col) -> pl.Expr:
    return {
        "n_hits": col("hits"),
        "n_rel": col("n_rel"),
        "min_k_nrel": _least(col("k"), col("n_rel")),
        "k": col("k"),
        "min_k_len": _least(col("k"), col("n_recs")),
    }[conv.ap_denominator].cast(pl.Float64)


def average_precision(conv: Convention, col=pl.col) -> pl.Expr:
    """sum over hit positions i <= k of hits@i / i, divided by the AP denominator (0 when it is 0)."""
    den = _ap_den(conv, col)
    return pl.when(den > 0).then(col("precision_sum") / den).otherwise(0.0)


def average_recall(conv: Convention, col=pl.col) -> pl.Expr:
    """sum over hit positions i <= k of hits@i / n_rel, divided by the AP denominator."""
    den = _ap_den(conv, col)
    return pl.when(den > 0).then(_divide(col("hits_sum"), col("n_rel")) / den).otherwise(0.0)


def reciprocal_rank(conv: Convention, col=pl.col) -> pl.Expr:
    """1 / position of the first hit (within k when rr_cutoff), 0 without one."""
    return pl.when(col("first_hit") > 0).then(1.0 / col("first_hit")).otherwise(0.0)


def dcg(conv: Convention, col=pl.col) -> pl.Expr:
    """sum_{i<=k} gain_i / log_b(i + 1)."""
    return col("dcg")


def ndcg(conv: Convention, col=pl.col) -> pl.Expr:
    """DCG@k / IDCG@k; when IDCG = 0: 0 or undefined (zero_ideal)."""
    fallback = pl.lit(0.0) if conv.zero_ideal == "zero" else pl.lit(None, dtype=pl.Float64)
    return pl.when(col("idcg") > 0).then(col("dcg") / col("idcg")).otherwise(fallback)


def hit_rate(conv: Convention, col=pl.col) -> pl.Expr:
    """1 if any of the top k is relevant, else 0."""
    return pl.when(col("hits") > 0).then(1.0).otherwise(0.0)


def r_precision(conv: Convention, col=pl.col) -> pl.Expr:
    """hits within the top min(k, n_rel) / min(k, n_rel)."""
    return _divide(col("r_hits"), _least(col("k"), col("n_rel")))


def f_beta(conv: Convention, beta: float = 1.0, col=pl.col) -> pl.Expr:
    """F-beta of the user's precision and recall at k."""
    return fbeta(precision(conv, col), recall(conv, col), beta)


def fbeta(p: pl.Expr, r: pl.Expr, beta: float) -> pl.Expr:
    """(1 + b^2) P R / (b^2 P + R), 0 when P + R = 0, undefined when P or R is."""
    b2 = beta * beta
    undefined = pl.lit(None, dtype=pl.Float64)
    return pl.when(p.is_null() | r.is_null()).then(undefined).when(p + r > 0).then(
        (1.0 + b2) * p * r / (b2 * p + r)).otherwise(0.0)
