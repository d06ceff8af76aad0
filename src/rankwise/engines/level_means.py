"""trec_eval's ``11pt_avg`` at given recall levels (declarations.LevelMean) beside any engine's output: each
value's per-user column from the engine's iprec_at_recall Param columns of the same run, and its summary row.
One Polars computation for every engine, so a value is the same bits on each (its per-level columns are)."""

from __future__ import annotations

import dataclasses
from functools import reduce

import polars as pl

from rankwise.conventions import Convention
from rankwise.engines.polars import summary as polars_summary
from rankwise.engines.protocol import Output
from rankwise.metrics.declarations import LevelMean, MetricRequest, Param


def add(out: Output, request: MetricRequest, conv: Convention) -> Output:
    """``out`` with a per-user column and a summary row per k for each of ``request.means``."""
    rows = out.per_user
    for m in request.means:
        rows = rows.with_columns(_value(m, rows, conv).alias(m.column))
    # the Polars engine's summary (sql/summary.sql's twin) of those columns alone, over the rows sorted by
    # (k, user) in one chunk: the same additions whatever order and chunks the engine returned its rows in
    ordered = rows.select("k", "user_id", *(m.column for m in request.means)).sort("k", "user_id").rechunk()
    summary = pl.concat([out.summary, polars_summary(ordered, conv, request.beta, means=request.means)],
                        how="vertical_relaxed")
    return dataclasses.replace(out, per_user=rows, summary=summary)


def _value(m: LevelMean, rows: pl.DataFrame, conv: Convention) -> pl.Series:
    """LevelMean's formula over the iprec_at_recall columns of ``rows`` (t_i, added from t_n down, divided by n);
    a user without relevant labels or recommendations has the empty rules' value, which every level's column
    holds."""
    v = [pl.col(Param("iprec_at_recall", level).column) for level in m.levels]
    terms = v if m.ascending else _walked(m, v, conv)
    total = rows.select(reduce(lambda a, b: a + b, terms[::-1])).to_series()
    # a true division, Series by Series: Polars turns x / <constant> into x * (1 / constant), not sum / n's bits
    mean = total / pl.Series([float(len(terms))] * len(total))
    empty = (pl.col("n_rel") == 0) | (pl.col("n_recs") == 0)
    return rows.select(pl.when(empty).then(v[0]).otherwise(pl.lit(mean))).to_series()


def _walked(m: LevelMean, v: list[pl.Expr], conv: Convention) -> list[pl.Expr]:
    """t_i for levels not in ascending order (LevelMean's docstring), walking i = n .. 1 as m_11pt_avg.c does.
    With r_i = floor(l_i n_rel + half) and v_i = iprec_at_recall at l_i: r_i > R is r_i >= 1 and v_i = 0."""
    half = 0.5 if conv.iprec_recall_count == "round" else 0.9
    r = [(pl.lit(level) * pl.col("n_rel") + half).floor() for level in m.levels]
    zero = pl.col(Param("iprec_at_recall", 0.0).column)
    terms: list = [None] * len(v)
    skipping, matched = pl.lit(True), pl.lit(True)
    for i in reversed(range(len(v))):
        beyond = (r[i] >= 1) & (v[i] == 0)  # r_i > R
        ok = (r[i] >= 1) & (v[i] > 0) & (r[i] <= r[i + 1] if i + 1 < len(v) else pl.lit(True))
        skipping = skipping & beyond
        matched = matched & (skipping | ok)
        terms[i] = pl.when(skipping).then(pl.lit(0.0)).when(matched).then(v[i]).otherwise(zero)
    return terms
