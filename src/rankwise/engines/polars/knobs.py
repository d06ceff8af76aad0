"""The knobs as Polars expressions, shared by the long-form plan (``_polars_backend``) and the
list-positions plan (``_polars_positions``) and rankwise.expr: discount, gain, ERR's stopping chance,
the user universe and the empty-list values."""

from __future__ import annotations

import math

import polars as pl

from rankwise.inputs.normalize import REL
from rankwise.conventions.knobs import Convention


def discount(log_base: float):
    ln_base = math.log(log_base)
    return lambda position: (position + 1.0).log() / ln_base


def err_floor(g_max: float) -> pl.Expr:
    """2^-g_max (exponent at least -1000): the least 1 - R can be (sql/per_user.sql's judged.err_floor)."""
    return pl.lit(2.0).pow(-pl.min_horizontal(pl.lit(float(g_max)), pl.lit(1000.0)))


def err_stop(grade: pl.Expr, g_max: float) -> pl.Expr:
    """ERR's R = (2^g - 1) / 2^g_max written as 2^(g - g_max) - 2^-g_max, a grade above g_max counting as
    g_max, no exponent below -1000: nothing overflows or underflows (sql/per_user.sql's judged.err_r)."""
    top = pl.lit(float(g_max))
    return pl.lit(2.0).pow(pl.max_horizontal(pl.min_horizontal(grade, top) - top, pl.lit(-1000.0))) - err_floor(g_max)


def err_log_complement(stop: pl.Expr, g_max: float) -> pl.Expr:
    """ln(1 - R), 1 - R held at its least value 2^-g_max where rounding made it 0."""
    return pl.max_horizontal(1.0 - stop, err_floor(g_max)).log()


def gain(conv: Convention) -> pl.Expr:
    """Gain of a label: its level's gain in gain_levels, else 0 at relevance 0, else binary is_rel, linear relevance,
    or exp2 2^relevance - 1 (sql/per_user.sql's earning.gain)."""
    if conv.gain == "binary":
        rule = pl.col("is_rel").cast(pl.Float64)
    elif conv.gain == "linear":
        rule = pl.col(REL).cast(pl.Float64)
    else:
        rule = pl.lit(2.0).pow(pl.col(REL)) - 1.0
    out = pl.when(pl.col(REL) <= 0).then(0.0).otherwise(rule)
    for level, value in reversed(conv.gain_levels):
        out = pl.when(pl.col(REL) == level).then(pl.lit(value)).otherwise(out)
    return out


def in_universe(users: str) -> pl.Expr:
    return {
        "union": pl.lit(True),
        "labels": pl.col("in_truth") == 1,
        "predictions": pl.col("in_recs") == 1,
        "intersection": (pl.col("in_recs") == 1) & (pl.col("in_truth") == 1),
    }[users]


def empty_value(conv: Convention):
    """Wrap a metric: users with no relevant label / no recommendations get the convention's value."""
    constant = {"zero": pl.lit(0.0), "one": pl.lit(1.0)}
    no_labels = constant.get(conv.empty_labels, pl.lit(None, dtype=pl.Float64))
    no_preds = constant.get(conv.empty_predictions, pl.lit(None, dtype=pl.Float64))
    return lambda value: (
        pl.when(pl.col("n_rel") == 0).then(no_labels).when(pl.col("n_recs") == 0).then(no_preds).otherwise(value)
    )


def rprec_cut(n_rel, conv: Convention, multiplier: float | None = None):
    """rprec_mult's cutoff c = floor(m n_rel + 0.9) (trec_eval's Rprec_mult; sql: running.mult_hits), m the
    convention's rprec_multiplier unless ``multiplier`` is given."""
    multiplier = conv.rprec_multiplier if multiplier is None else multiplier
    return (multiplier * n_rel + 0.9).floor()


IPT11_LEVELS = tuple(i / 10 for i in range(11))  # trec_eval's 11pt_avg levels 0.0, 0.1, ..., 1.0


def iprec_count(n_rel, conv: Convention, level: float | None = None):
    """iprec_at_recall's level as a count of relevant items: floor(l n_rel + 0.5) (trec_eval 10.0's lround)
    or floor(l n_rel + 0.9) (trec_eval 9) by iprec_recall_count (sql: running.iprec_max)."""
    level = conv.iprec_recall_level if level is None else level
    return (level * n_rel + (0.5 if conv.iprec_recall_count == "round" else 0.9)).floor()
