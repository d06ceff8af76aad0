"""See a Result: one self-contained HTML report, Altair charts (PNG/SVG export), notebook tables.

Needs the ``rankwise[report]`` extra (altair, vl-convert-python). Why Altair: it is declarative
(a chart is a Vega-Lite JSON spec, so the page holds small specs, not drawing code), takes the
aggregated Polars frames directly, and vl-convert ships the Vega/Vega-Lite/vega-embed JavaScript as
one bundle to inline (the page needs no network) and renders the same specs to PNG/SVG without a
browser. Every plotted frame is an aggregate computed by Polars (binned counts, Lorenz points), so a
report's size does not grow with the number of users.
"""

from __future__ import annotations

import html
import json
import math
import os
import tempfile
from datetime import datetime, timezone
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl

from rankwise.errors import MissingDependencyError, ParameterError, WriteError

BINS = 20  # histogram bins per (metric, k)
MAX_POINTS = 200  # points per Lorenz curve
ONE_RUN = "result"  # the run label of a single-run Result in charts
_KEYS = ("run", "k", "n_recs", "n_rel")
_INSTALL = "pip install 'rankwise[report]'"


def _altair():
    try:
        import altair
    except ImportError as error:
        raise MissingDependencyError("Reports and plots need altair, which is not installed.", hint=_INSTALL) from error
    return altair


def _vl_convert():
    try:
        import vl_convert
    except ImportError as error:
        raise MissingDependencyError("Reports and image export need vl-convert-python, which is not installed.",
                                     hint=_INSTALL) from error
    return vl_convert


# ---------------------------------------------------------------- aggregates (Polars, no plotting)

def _long(result) -> pl.DataFrame:
    """result.long with a ``run`` column (ONE_RUN for a single run)."""
    long = result.long
    if not isinstance(long, pl.DataFrame):
        raise ParameterError("A report needs the per-user rows in Polars; this Result kept them in the engine "
                             "(collect=False).",
                             hint="Evaluate with collect=True (the default) to report on it.")
    return long if "run" in long.columns else long.with_columns(run=pl.lit(ONE_RUN)).select("run", pl.exclude("run"))


def _with_run(frame: pl.DataFrame) -> pl.DataFrame:
    return frame if "run" in frame.columns else frame.with_columns(run=pl.lit(ONE_RUN)).select("run", pl.exclude("run"))


def metric_columns(result) -> list[str]:
    """The per-user metric columns of ``result.long`` (everything but run, user, k, n_recs, n_rel)."""
    return [c for c in result.long.columns if c not in (*_KEYS, result.user_col)]


def histogram(long: pl.DataFrame, metrics: list[str], *, bins: int = BINS, symmetric: bool = False) -> pl.DataFrame:
    """Binned per-user values: run, metric, k, bin_start, bin_end, users, share.

    Per (metric, k), ``bins`` equal bins over [min, max] of the defined values of every run (the
    same edges for every run): the edges and counts of ``numpy.histogram(values, bins, range=(min,
    max))``, a value on an edge in the bin it starts, the last bin closed (symmetric: over [-m, m],
    m = max |value|, so that 0 is an edge when bins is even). NaN (undefined) values are
    left out; share = users / defined users of that (run, metric, k). All bins, empty ones too."""
    if bins < 1:
        raise ParameterError(f"bins must be at least 1, got {bins!r}.", hint="Pass e.g. bins=20.")
    empty = pl.DataFrame(schema={"run": pl.String, "metric": pl.String, "k": pl.Int64, "bin_start": pl.Float64,
                                 "bin_end": pl.Float64, "users": pl.UInt32, "share": pl.Float64})
    if not metrics:
        return empty
    def defined(m):  # NaN (undefined) as null, which min/max/drop_nulls skip
        return pl.col(m).cast(pl.Float64).fill_nan(None)

    ranges = (long.lazy().select("k", *[defined(m) for m in metrics]).group_by("k")
              .agg(*[pl.col(m).min().alias(f"lo\0{m}") for m in metrics],
                   *[pl.col(m).max().alias(f"hi\0{m}") for m in metrics]))
    edges = pl.concat([ranges.select("k", metric=pl.lit(m), lo=pl.col(f"lo\0{m}"), hi=pl.col(f"hi\0{m}"))
                       for m in metrics]).drop_nulls("lo")
    if symmetric:
        edges = edges.with_columns(hi=pl.max_horizontal(pl.col("lo").abs(), pl.col("hi").abs()))
        edges = edges.with_columns(lo=-pl.col("hi"))
    # the edges numpy.histogram(values, bins, range=(lo, hi)) uses (lo, lo + 1 when every value is lo),
    # and its bins: the float guess floor((v - lo) / width), then one step down (v under the bin's
    # start) or up (v on or over its end; not past the last bin, which is closed), on the exact edges
    spans = {(m, k): np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
             for m, k, lo, hi in edges.select("metric", "k", "lo", "hi").collect().iter_rows()}
    if not spans:  # no defined value at all
        return empty
    grid = pl.DataFrame([(m, k, i, float(e[i]), float(e[i + 1]), float(e[0]), float(e[-1] - e[0]) / bins)
                         for (m, k), e in spans.items() for i in range(bins)], orient="row",
                        schema={"metric": pl.String, "k": pl.Int64, "bin": pl.Int64, "bin_start": pl.Float64,
                                "bin_end": pl.Float64, "lo": pl.Float64, "width": pl.Float64})
    v, guess = pl.col("v"), pl.col("bin")
    counts = []
    for m in metrics:  # one scan per metric, joined to its (small) table of edges
        edges_m = grid.lazy().filter(pl.col("metric") == m)
        counts.append(long.lazy().select("run", "k", defined(m).alias("v")).drop_nulls("v")
                      .join(edges_m.filter(pl.col("bin") == 0).select("k", "lo", "width"), on="k")
                      .with_columns(bin=((v - pl.col("lo")) / pl.col("width")).floor().cast(pl.Int64).clip(0, bins - 1))
                      .join(edges_m.select("k", "bin", "bin_start", "bin_end"), on=["k", "bin"])
                      .group_by("run", "k", bin=pl.when(v < pl.col("bin_start")).then(guess - 1)
                                .when((v >= pl.col("bin_end")) & (guess < bins - 1)).then(guess + 1).otherwise(guess))
                      .agg(users=pl.len()).with_columns(metric=pl.lit(m)))
    grid = grid.lazy().drop("lo", "width")
    runs = long.lazy().select(pl.col("run").unique(maintain_order=True))
    grid = (runs.join(grid, how="cross")
            .join(pl.concat(counts), on=["run", "metric", "k", "bin"], how="left")
            .with_columns(pl.col("users").fill_null(0))
            .filter(pl.col("users").sum().over("run", "metric", "k") > 0)
            .with_columns(share=pl.col("users") / pl.col("users").sum().over("run", "metric", "k")))
    order = {m: i for i, m in enumerate(metrics)}
    out = grid.select("run", "metric", "k", "bin_start", "bin_end", "users", "share").collect()
    return out.sort(pl.col("metric").replace_strict(order), "run", "k", "bin_start", maintain_order=True)


def differences(long: pl.DataFrame, pairs: list[tuple[str, str]], ks: list[int], metrics: list[str], user_col: str,
                *, bins: int = BINS) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-user d = value in run b - value in run a, for each pair (a, b) and k, over the users with both
    values defined: ``Result.compare``'s d, so the mean of d is its ``diff`` (mean_b - mean_a).

    Returns (counts: a, b, metric, k, users, b_better, same, a_better, diff, lo, hi) and the histogram
    of d over the users whose value changed (a, b, metric, k, bin_start, bin_end, users, better: the
    run better in that bin); an even number of equal bins over [lo, hi] = [-m, m], m = max |d| at that
    (metric, k) over every pair, so no bin mixes the two sides and 0 is an edge. Empty bins are left
    out. "same" = |d| <= 1e-12 (float noise)."""
    def one(run):
        return long.lazy().filter((pl.col("run") == run) & pl.col("k").is_in(list(ks))).select(user_col, "k", *metrics)

    wide = pl.concat([
        one(a).join(one(b), on=[user_col, "k"], suffix="__b").select(
            pair=pl.lit(i), k=pl.col("k").cast(pl.Int64),
            **{m: (pl.col(f"{m}__b").cast(pl.Float64) - pl.col(m).cast(pl.Float64)).fill_nan(None) for m in metrics})
        for i, (a, b) in enumerate(pairs)])
    d = wide.unpivot(index=["pair", "k"], on=metrics, variable_name="metric", value_name="d").drop_nulls("d")
    counts = d.group_by("pair", "metric", "k").agg(
        users=pl.len(), b_better=(pl.col("d") > 1e-12).sum(), same=(pl.col("d").abs() <= 1e-12).sum(),
        a_better=(pl.col("d") < -1e-12).sum(), diff=pl.col("d").mean())
    # the changed users' d, one column per metric (what histogram() bins), the pair as its "run"
    changed = wide.with_columns(run=pl.col("pair").cast(pl.String),
                                **{m: pl.when(pl.col(m).abs() > 1e-12).then(pl.col(m)) for m in metrics})
    counts, changed = pl.collect_all([counts, changed])
    present = [m for m in metrics if changed[m].drop_nulls().len()]
    hist = histogram(changed, present, bins=bins + bins % 2, symmetric=True).with_columns(
        pair=pl.col("run").cast(pl.Int64))
    span = hist.group_by("metric", "k").agg(lo=pl.col("bin_start").min(), hi=pl.col("bin_end").max())
    names = pl.DataFrame({"pair": range(len(pairs)), "a": [a for a, _ in pairs], "b": [b for _, b in pairs]},
                         schema={"pair": pl.Int64, "a": pl.String, "b": pl.String})
    order = {m: i for i, m in enumerate(metrics)}
    counts = (counts.join(names, on="pair").join(span, on=["metric", "k"], how="left")
              .sort(pl.col("metric").replace_strict(order), "pair", "k")
              .select("a", "b", "metric", "k", "users", "b_better", "same", "a_better", "diff", "lo", "hi"))
    hist = (hist.filter(pl.col("users") > 0).join(names, on="pair")
            .with_columns(better=pl.when((pl.col("bin_start") + pl.col("bin_end")) / 2 > 0).then(pl.col("b"))
                          .otherwise(pl.col("a")))
            .sort(pl.col("metric").replace_strict(order), "pair", "k", "bin_start")
            .select("a", "b", "metric", "k", "bin_start", "bin_end", "users", "better"))
    return counts, hist


def lorenz(per_item: pl.DataFrame, k: int | None = None, *,
           max_points: int = MAX_POINTS) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Lorenz curve of exposure per run (at k when per_item has a k column).

    Items sorted by exposure ascending; point i = (i/n, exposure of the i least exposed / total).
    Gini = 1 - 2 * (area under the curve, trapezoids over every item) = 0 for equal exposure,
    (n-1)/n when one item takes all. Returns (points: run, item_share, exposure_share, at most
    max_points + 1 per run, the first and last kept; gini: run, items, gini)."""
    frame = _with_run(per_item)
    if k is not None and "k" in frame.columns:
        frame = frame.filter(pl.col("k") == k)
    curve = (frame.lazy().select("run", pl.col("exposure").cast(pl.Float64))
             .sort("run", "exposure", maintain_order=True)
             .with_columns(n=pl.len().over("run"), i=pl.int_range(1, pl.len() + 1).over("run"),
                           exposure_share=pl.col("exposure").cum_sum().over("run")
                           / pl.col("exposure").sum().over("run"))
             .with_columns(item_share=pl.col("i") / pl.col("n")))
    gini = (curve.group_by("run", maintain_order=True)
            .agg(items=pl.len(), area=((pl.col("exposure_share") + pl.col("exposure_share").shift(1, fill_value=0.0))
                                       / (2 * pl.col("n"))).sum())
            .select("run", "items", gini=1 - 2 * pl.col("area")))
    step = (pl.col("n") + max_points - 1) // max_points  # ceil(n / max_points)
    points = (curve.filter(((pl.col("i") % step) == 0) | (pl.col("i") == pl.col("n")))
              .select("run", "item_share", "exposure_share"))
    origin = frame.lazy().select(pl.col("run").unique(maintain_order=True)).with_columns(
        item_share=pl.lit(0.0), exposure_share=pl.lit(0.0))
    points, gini = pl.collect_all([pl.concat([origin, points]), gini])
    return points, gini


def catalog_rows(result) -> pl.DataFrame | None:
    """Summary rows of catalog-level metrics (a metric with no per-user column: coverage, gini, ...)."""
    rows = result.summary.filter(~pl.col("metric").is_in(metric_columns(result)))
    return rows if rows.height else None


def comparison(result, options: dict | None = None) -> pl.DataFrame | None:
    """``result.compare(**options)`` when the Result has it, several runs and a per-user mean to test,
    else None."""
    compare = getattr(result, "compare", None)
    if not callable(compare) or len(result.runs) < 2 or not result._per_user_names():
        return None
    return compare(**(options or {}))


# ---------------------------------------------------------------- charts (Altair)

def _data(alt, frame: pl.DataFrame):
    """Inline values as CSV text, numbers parsed (NaN an empty field: null). Altair keeps a string
    as is, where it walks and schema-validates a list of row dicts row by row (k = 1..100 on the
    example: 16 of 30 s of a report), and the page is smaller."""
    frame = frame.with_columns(pl.col(pl.Float32, pl.Float64).fill_nan(None))
    numbers = {name: "number" for name, dtype in frame.schema.items() if dtype.is_numeric()}
    return alt.Data(values=frame.write_csv(), format=alt.DataFormat(type="csv", parse=numbers))


def _chosen_k(result, k) -> int:
    ks = list(result.request.ks)
    if k is None:
        return max(ks)
    if k not in ks:
        raise ParameterError(f"k={k!r} was not evaluated; this Result has k in {ks}.",
                             hint=f"Pass one of {ks}, or evaluate with that k.")
    return k


def _pairs(result, pair=None, compared: pl.DataFrame | None = None) -> list[tuple[str, str]]:
    """The pairs (a, b) to difference, as ``compare()`` orders them: its rows' (run_a, run_b) when
    given, else every pair a < b in run order; ``pair`` first (added when missing)."""
    runs = list(result.runs)
    if pair is not None and (len(pair) != 2 or any(run not in runs for run in pair) or pair[0] == pair[1]):
        raise ParameterError(f"pair={pair!r} must be two different runs of this Result, {runs}.",
                             hint=f"Pass e.g. pair=({runs[0]!r}, {runs[1]!r}).")
    if compared is not None and compared.height:
        pairs = list(dict.fromkeys(compared.select("run_a", "run_b").iter_rows()))
    else:
        pairs = [(a, b) for i, a in enumerate(runs) for b in runs[i + 1:]]
    if pair is not None:
        pairs = [tuple(pair), *(p for p in pairs if p != tuple(pair))]
    return pairs


# Okabe & Ito's colour-blind-safe palette (yellow late: faint on white); a run's colour is its place
# in the run order, the same on every chart and beside its name in the tables
PALETTE = ("#0072B2", "#E69F00", "#CC79A7", "#009E73", "#56B4E9", "#D55E00", "#000000", "#F0E442")
_SHAPES = ("circle", "square", "triangle-up", "diamond", "cross", "triangle-down", "triangle-left", "triangle-right")
_DASHES = ([1, 0], [6, 3], [2, 2], [8, 3, 2, 3], [4, 4], [1, 3], [10, 2], [3, 1])


def run_colours(runs) -> dict[str, str]:
    """{run: colour}: PALETTE in run order (cycled after eight runs)."""
    return {run: PALETTE[i % len(PALETTE)] for i, run in enumerate(runs)}


def _run_order(frame: pl.DataFrame, runs=None) -> list[str]:
    return list(runs) if runs else frame["run"].unique(maintain_order=True).to_list()


def _runs(alt, runs: list[str], *, field: str = "run", title: str | None = "run", shapes: bool = False,
          dashes: bool = False) -> tuple[dict, list]:
    """The run encodings (colour, and point shape / line dash) and tooltip; a single run's (its
    placeholder name, ONE_RUN, says nothing) has no legend and no run in the tooltip. One scale
    (domain = the runs in order) per channel, so a run looks the same on every chart."""
    one = runs == [ONE_RUN]
    legend = None if one else alt.Legend(title=title)
    out = {"color": alt.Color(f"{field}:N", scale=alt.Scale(domain=runs, range=list(run_colours(runs).values())),
                              legend=legend)}
    if shapes:
        out["shape"] = alt.Shape(f"{field}:N", scale=alt.Scale(domain=runs, range=[_SHAPES[i % 8] for i in
                                                                                    range(len(runs))]), legend=legend)
    if dashes:
        out["strokeDash"] = alt.StrokeDash(f"{field}:N", scale=alt.Scale(domain=runs, range=[
            _DASHES[i % 8] for i in range(len(runs))]), legend=legend)
    return out, ([] if one else [f"{field}:N"])


def curves_chart(summary: pl.DataFrame, metrics: list[str], runs=None):
    """Mean vs k per metric (one panel each): per run a line (its own dash), points (its own shape)
    and the confidence interval as an error bar at each k. Several runs are drawn a little apart
    along k (the tooltip gives the true k), so that no run hides another."""
    alt = _altair()
    data = _with_run(summary).filter(pl.col("metric").is_in(metrics))
    order = _run_order(data, runs)
    ks = sorted(data["k"].unique().to_list())  # ticks at the evaluated k (overlapping labels are dropped)
    step = 0.012 * ((ks[-1] - ks[0]) if len(ks) > 1 else 1)
    data = data.with_columns(x=pl.col("k") + step * (pl.col("run").replace_strict(
        {run: i for i, run in enumerate(order)}, default=0, return_dtype=pl.Float64) - (len(order) - 1) / 2))
    enc, run = _runs(alt, order, shapes=True, dashes=True)
    tooltip = [*run, "metric:N", "k:Q", alt.Tooltip("value:Q", format=".4f"), alt.Tooltip("ci_low:Q", format=".4f"),
               alt.Tooltip("ci_high:Q", format=".4f"), "n_users:Q"]
    base = alt.Chart().encode(x=alt.X("x:Q", title="k", axis=alt.Axis(values=ks, format="d")),
                              color=enc["color"], tooltip=tooltip)
    bars = base.mark_rule(strokeWidth=1.5).encode(y="ci_low:Q", y2="ci_high:Q")
    line = base.mark_line(strokeWidth=1.5).encode(y=alt.Y("value:Q", title="mean"), strokeDash=enc["strokeDash"])
    points = base.mark_point(filled=True, size=40, opacity=1).encode(y="value:Q", shape=enc["shape"])
    return (alt.layer(bars, line, points, data=_data(alt, data)).properties(width=210, height=150)
            .facet(facet=alt.Facet("metric:N", sort=metrics, title=None), columns=4)
            .resolve_scale(y="independent")
            .properties(title="Mean vs k (bars: confidence interval; runs drawn a little apart along k)"))


def distribution_chart(hist: pl.DataFrame, metrics: list[str], ks: list[int], k: int, runs=None):
    """Share of users per value bin, per metric: one step line per run (its colour and dash; lines
    do not blend as overlaid bars do); a k selector (default k)."""
    alt = _altair()
    pick = alt.param(name="k_shown", value=k, bind=alt.binding_select(options=ks, name="k "))
    order = _run_order(hist, runs)
    enc, run = _runs(alt, order, dashes=True)
    # a step line holds each bin's share from its start to the next; a last point closes the last bin
    last = hist.filter(pl.col("bin_end") == pl.col("bin_end").max().over("run", "metric", "k"))
    steps = pl.concat([hist.with_columns(x=pl.col("bin_start")), last.with_columns(x=pl.col("bin_end"))])
    x = alt.X("x:Q", title="per-user value")
    line = alt.Chart().mark_line(interpolate="step-after", strokeWidth=1.5).encode(
        x=x, y=alt.Y("share:Q", title="share of users", axis=alt.Axis(format="%")), **enc)
    hover = alt.Chart().mark_rect(opacity=0).encode(  # the tooltip of each bin (invisible)
        x=alt.X("bin_start:Q"), x2="bin_end:Q", y="share:Q", y2=alt.datum(0),
        tooltip=[*run, "metric:N", "k:Q", alt.Tooltip("bin_start:Q", format=".4g"),
                 alt.Tooltip("bin_end:Q", format=".4g"), "users:Q", alt.Tooltip("share:Q", format=".1%")])
    return (alt.layer(hover, line, data=_data(alt, steps.sort("run", "metric", "k", "x", maintain_order=True)))
            .properties(width=210, height=150)
            .facet(facet=alt.Facet("metric:N", sort=metrics, title=None), columns=4)
            .add_params(pick).transform_filter("datum.k == k_shown")
            .resolve_scale(x="independent", y="independent")
            .properties(title=alt.TitleParams(  # the k shown, also in an exported image (no selector there)
                alt.expr("'Per-user values at k=' + k_shown + ' (users with a defined value)'"))))


def difference_chart(counts: pl.DataFrame, hist: pl.DataFrame, metrics: list[str], ks: list[int], k: int,
                     runs=None, pair: tuple[str, str] | None = None):
    """Per metric, the histogram of per-user d = b - a (``compare()``'s d) over the users that changed,
    each side in the colour of the run better there and named under the axis; a dashed rule at the mean
    of d over every paired user (``compare()``'s diff) and a grey one at 0. Selectors for the pair
    (default ``pair``, else the first) and k (default k)."""
    alt = _altair()
    label = pl.format("{} − {}", "b", "a")
    counts, hist = counts.with_columns(pair=label), hist.with_columns(pair=label)
    pairs = counts["pair"].unique(maintain_order=True).to_list()
    shown = f"{pair[1]} − {pair[0]}" if pair else pairs[0]
    pick_pair = alt.param(name="pair_shown", value=shown, bind=alt.binding_select(options=pairs, name="pair (b − a) "))
    pick_k = alt.param(name="k_shown", value=k, bind=alt.binding_select(options=ks, name="k "))
    order = runs or list(dict.fromkeys([*counts["a"], *counts["b"]]))
    counts = counts.with_columns(left=pl.format("← {} better", "a"), right=pl.format("{} better →", "b"))
    data = pl.concat([hist.with_columns(kind=pl.lit("bin")), counts.with_columns(kind=pl.lit("mean"))],
                     how="diagonal_relaxed")
    width, height = 210, 150
    x = alt.X("bin_start:Q", title=None)
    bars = alt.Chart().transform_filter("datum.kind == 'bin'").mark_rect(stroke="white", strokeWidth=0.5).encode(
        x=x, x2="bin_end:Q", y=alt.Y("users:Q", title="users"), y2=alt.datum(0),
        color=alt.Color("better:N", legend=None, scale=alt.Scale(domain=order, range=list(  # sides named below
            run_colours(order).values()))),
        tooltip=["pair:N", "metric:N", "k:Q", alt.Tooltip("bin_start:Q", format=".4g"),
                 alt.Tooltip("bin_end:Q", format=".4g"), "users:Q", "better:N"])
    means = alt.Chart().transform_filter("datum.kind == 'mean'")
    span = means.mark_rule(opacity=0).encode(x="lo:Q", x2="hi:Q", y=alt.datum(0))  # keeps 0 in the middle
    zero = means.mark_rule(color="#999999").encode(x=alt.datum(0))
    mean = means.mark_rule(color="black", strokeDash=[4, 2], strokeWidth=1.5).encode(
        x="diff:Q", tooltip=["pair:N", "metric:N", "k:Q", alt.Tooltip("diff:Q", format=".4f", title="diff (mean d)"),
                             alt.Tooltip("users:Q", title="paired users"), alt.Tooltip("b_better:Q", title="b better"),
                             "same:Q", alt.Tooltip("a_better:Q", title="a better")])
    left = means.mark_text(align="left", baseline="top", fontSize=11).encode(
        x=alt.value(0), y=alt.value(height + 22), text=alt.Text("left:N"))
    right = means.mark_text(align="right", baseline="top", fontSize=11).encode(
        x=alt.value(width), y=alt.value(height + 22), text=alt.Text("right:N"))
    present = [m for m in metrics if m in set(counts["metric"].to_list())]
    return (alt.layer(span, bars, zero, mean, left, right, data=_data(alt, data)).properties(width=width, height=height)
            .facet(facet=alt.Facet("metric:N", sort=present, title=None), columns=4)
            .add_params(pick_pair, pick_k).transform_filter("datum.pair == pair_shown && datum.k == k_shown")
            .resolve_scale(x="independent", y="independent")
            .properties(title=alt.TitleParams(alt.expr(
                "'Per-user difference ' + pair_shown + ' at k=' + k_shown + ': bars, the users whose value '"
                " + 'changed; dashed line, the mean over every paired user = compare()\\'s diff'"))))


def lorenz_chart(points: pl.DataFrame, gini: pl.DataFrame, k: int | None = None, runs=None):
    """Lorenz curve of exposure per run (at k, in the title), with the equality diagonal; Gini in the legend."""
    alt = _altair()
    one = gini["run"].to_list() == [ONE_RUN]
    labels = gini.select("run", label=pl.format("curve Gini {}", pl.col("gini").round(3)) if one
                         else pl.format("{} (curve Gini {})", "run", pl.col("gini").round(3)))
    order = _run_order(gini, runs)
    colours = run_colours(order)
    labels = labels.sort(pl.col("run").replace_strict({r: i for i, r in enumerate(order)}, default=len(order)))
    data = points.join(labels, on="run", maintain_order="left")
    diagonal = alt.Chart(_data(alt, pl.DataFrame({"x": [0.0, 1.0]}))).mark_line(
        strokeDash=[4, 4], color="gray").encode(x="x:Q", y="x:Q")
    curve = alt.Chart(_data(alt, data)).mark_line().encode(
        x=alt.X("item_share:Q", title="share of items (least exposed first)", axis=alt.Axis(format="%")),
        y=alt.Y("exposure_share:Q", title="share of exposure", axis=alt.Axis(format="%")),
        color=alt.Color("label:N", title=None if one else "run", scale=alt.Scale(
            domain=labels["label"].to_list(), range=[colours.get(r, PALETTE[0]) for r in labels["run"]])),
        tooltip=[*([] if one else ["run:N"]), alt.Tooltip("item_share:Q", format=".1%"),
                 alt.Tooltip("exposure_share:Q", format=".1%")])
    title = "Exposure Lorenz curve" + ("" if k is None else f" at k={k}")
    return alt.layer(diagonal, curve).properties(width=320, height=260, title=title)


def plot(result, kind: str = "curves", *, k: int | None = None, metrics: list[str] | None = None,
         pair: tuple[str, str] | None = None, bins: int = BINS, max_points: int = MAX_POINTS):
    """An Altair chart of a Result: kind = "curves" (mean vs k), "distribution" (per-user histogram
    at k), "difference" (per-user b - a for every pair of runs, or ``pair``, at each k, as
    ``compare()`` computes it), "lorenz" (exposure, needs result.per_item). Show it in a notebook, or
    ``save(chart, "x.png" | "x.svg")`` (an image shows the selectors' defaults: k, and pair)."""
    kinds = ("curves", "distribution", "difference", "lorenz")
    if kind not in kinds:
        raise ParameterError(f"Unknown plot kind {kind!r}.", hint=f"Use one of: {', '.join(kinds)}.")
    names = metric_columns(result)
    if metrics is not None:
        unknown = [m for m in metrics if m not in names]
        if unknown:
            raise ParameterError(f"metrics {unknown} are not in this Result.", hint=f"Choose from {names}.")
        names = list(metrics)
    k = _chosen_k(result, k)
    runs, ks = list(result.runs) or None, list(result.request.ks)
    if kind == "curves":
        return curves_chart(result.summary, names, runs)
    if kind == "distribution":
        return distribution_chart(histogram(_long(result), names, bins=bins), names, ks, k, runs)
    if kind == "difference":
        if len(result.runs) < 2:
            raise ParameterError("kind='difference' needs a Result with several runs.",
                                 hint="Evaluate {'a': recs_a, 'b': recs_b} to compare two runs.")
        counts, hist = differences(_long(result), _pairs(result, pair), ks, names, result.user_col, bins=bins)
        return difference_chart(counts, hist, names, ks, k, runs, pair)
    per_item = getattr(result, "per_item", None)
    if not isinstance(per_item, pl.DataFrame):
        raise ParameterError("kind='lorenz' needs result.per_item (item exposure), which this Result lacks.",
                             hint="Evaluate with the beyond-accuracy metrics (a catalog) to get per_item.")
    return lorenz_chart(*lorenz(per_item, k, max_points=max_points), k if "k" in per_item.columns else None, runs)


def _vl_version(vlc) -> str | None:
    """The Vega-Lite version of altair's schema, when vl-convert has it (else its default)."""
    alt = _altair()
    version = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    return version if version in vlc.get_vegalite_versions() else None


def save(chart, path, *, scale: float = 2.0) -> Path:
    """Write an Altair chart as PNG or SVG (by suffix), rendered by vl-convert (no browser)."""
    vlc = _vl_convert()
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".png", ".svg"):
        raise ParameterError(f"cannot tell the image format of {str(path)!r} from its suffix.",
                             hint="Name the file .png or .svg.")
    spec, version = chart.to_dict(), _vl_version(vlc)
    data = (vlc.vegalite_to_png(spec, vl_version=version, scale=scale) if suffix == ".png"
            else vlc.vegalite_to_svg(spec, vl_version=version).encode())
    _write(path, data)
    return path


def _write(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as error:
        raise WriteError(f"cannot write {str(path)!r}: {error.strerror or error}.",
                         hint="Check that the directory exists and is writable.") from error


# ---------------------------------------------------------------- HTML

def _fmt(value, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        small_or_large = abs(value) >= 10 ** digits or (value and abs(value) < 1e-3)
        return f"{value:.{digits}g}" if small_or_large else f"{value:.{digits}f}"
    return html.escape(str(value))


def _table(frame: pl.DataFrame, *, cls: str = "", max_rows: int = 200) -> str:
    """A plain escaped HTML table of a frame (the first max_rows rows)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(v)}</td>" for v in row) + "</tr>"
                   for row in frame.head(max_rows).iter_rows())
    more = f"<p class='note'>first {max_rows} of {frame.height} rows</p>" if frame.height > max_rows else ""
    return f"<table class='{cls}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def _swatch(run: str, colours: dict) -> str:
    colour = colours.get(run)
    return (f"<span class='swatch' style='background:{colour}'></span>" if colour else "") + html.escape(str(run))


def _cell(row: dict | None) -> str:
    if row is None:
        return "<td></td>"
    lo, hi = row.get("ci_low"), row.get("ci_high")
    ci = "" if lo is None or hi is None or math.isnan(lo) or math.isnan(hi) else \
        f"<span class='ci'>[{_fmt(lo)}, {_fmt(hi)}]</span>"
    return f"<td>{_fmt(row['value'])} {ci}</td>"


def _users(counts: list) -> str:
    """One number when every count is the same, else one per count in column order."""
    return _fmt(counts[0]) if len(set(counts)) == 1 else " / ".join(_fmt(n) for n in counts)


def summary_grid(summary: pl.DataFrame, keys: tuple[str, ...] = (), runs=None) -> str:
    """The summary as a table, each cell the mean and its CI. Several runs: the runs side by side, a
    column each (its colour beside its name), a row per keys..., metric and k. One run: a row per
    keys..., metric, a column per k."""
    frame = _with_run(summary)
    order = _run_order(frame, runs)
    order = [run for run in order if run in set(frame["run"].to_list())]
    if len(order) < 2:
        return _grid_by_k(summary, keys)
    colours = run_colours(_run_order(frame, runs))
    head = "".join(f"<th class='key'>{html.escape(key)}</th>" for key in keys) + \
        "<th class='key'>metric</th><th class='key'>k</th>" + \
        "".join(f"<th>{_swatch(run, colours)}</th>" for run in order) + "<th>users</th>"
    rows, previous = [], None
    for (*key, metric, k), part in frame.group_by(*keys, "metric", "k", maintain_order=True):
        cells = {row["run"]: row for row in part.iter_rows(named=True)}
        first = (*key, metric) != previous  # the metric's name on its first row only
        previous = (*key, metric)
        counts = [cells[run]["n_users"] for run in order if run in cells] if "n_users" in part.columns else [None]
        rows.append(f"<tr class='{'first' if first else ''}'>"
                    + "".join(f"<td class='key'>{html.escape(str(v)) if first else ''}</td>" for v in key)
                    + f"<td class='key'>{html.escape(str(metric)) if first else ''}</td>"
                    + f"<td class='key'>{html.escape(str(k))}</td>"
                    + "".join(_cell(cells.get(run)) for run in order) + f"<td>{_users(counts)}</td></tr>")
    return f"<table class='summary runs'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _grid_by_k(summary: pl.DataFrame, keys: tuple[str, ...] = ()) -> str:
    """A row per [run,] keys..., metric, a column per k."""
    frame = _with_run(summary)
    ks = sorted(frame["k"].unique().to_list(), key=lambda k: (k is None, k))
    multi = "run" in summary.columns
    head = ("<th>run</th>" if multi else "") + "".join(f"<th>{html.escape(key)}</th>" for key in keys) + \
        "<th>metric</th>" + "".join(f"<th>@{html.escape(str(k))}</th>" for k in ks) + "<th>users</th>"
    rows = []
    for (run, *key, metric), part in frame.group_by("run", *keys, "metric", maintain_order=True):
        cells = {row["k"]: row for row in part.iter_rows(named=True)}
        counts = [cells[k]["n_users"] for k in ks if k in cells] if "n_users" in part.columns else [None]
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in ([run] if multi else []) + key)
                    + f"<td>{html.escape(str(metric))}</td>" + "".join(_cell(cells.get(k)) for k in ks)
                    + f"<td>{_users(counts)}</td></tr>")
    return f"<table class='summary'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _comparison_grid(table, colours: dict) -> str:
    """A ComparisonTable (``Result.table``'s, at one k) with the runs as columns: a row per metric, each cell
    the mean, its interval and the letters of the runs it is significantly better than."""
    frame = table.frame
    runs = frame["run"].unique(maintain_order=True).to_list()
    letters = dict(frame.select("run", "letter").unique("run", keep="first").iter_rows())
    head = "<th class='key'>metric</th>" + "".join(
        f"<th>{html.escape(letters.get(run) or '')} {_swatch(run, colours)}</th>" for run in runs)
    rows = []
    for (metric, k), part in frame.group_by("metric", "k", maintain_order=True):
        cells = {row["run"]: row for row in part.iter_rows(named=True)}
        tds = []
        for run in runs:
            row = cells.get(run)
            mark = f" <b class='letters'>{html.escape(row['better_than'])}</b>" if row and row["better_than"] else ""
            tds.append(_cell(row)[:-5] + mark + "</td>" if row else "<td></td>")
        rows.append(f"<tr><td class='key'>{html.escape(str(metric))}</td>{''.join(tds)}</tr>")
    return (f"<table class='compare runs'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<p class='note'>{html.escape(table.footnote)}</p>")


def html_table(result) -> str:
    """Compact HTML for notebooks (``Result._repr_html_``): the summary grid, then who was left out."""
    parts = ["<div class='rankwise'><style>.rankwise table{border-collapse:collapse;font-size:12px}"
             ".rankwise td,.rankwise th{padding:2px 8px;text-align:right}.rankwise .ci{color:#888;font-size:10px}"
             "</style>",
             f"<b>rankwise.Result</b> convention <code>{html.escape(result.convention.name)}</code>",
             summary_grid(result.summary)]
    excluded = result.excluded
    excluded = excluded.filter(pl.col("n_users") > 0) if "n_users" in excluded.columns else excluded
    if excluded.height:
        parts += ["<b>excluded from the means</b>", _table(excluded)]
    return "".join(parts) + "</div>"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1180px;color:#222;
padding:0 12px}
h1{font-size:22px}h3{font-size:14px;margin:16px 0 4px}
h2{font-size:17px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}
.wide{overflow-x:auto}table{border-collapse:collapse;font-size:13px;margin:6px 0}
td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th{background:#f6f6f6}td:first-child,th:first-child{text-align:left}.ci{color:#888;font-size:11px}
td.key,th.key{text-align:left}table.runs tr.first td{border-top:1px solid #ccc}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px}.letters{color:#333}
.note{color:#666;font-size:12px}.card{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;font-size:13px}
.card div:nth-child(odd){color:#666}code{font-size:12px}.chart{margin:8px 0}.sig{font-weight:bold}
"""


def _run_card(result, generated: str) -> str:
    from rankwise._version import __version__

    long = _long(result)  # one row per (run, user, k): the users of a run are its rows at one k
    users = long.filter(pl.col("k") == result.request.ks[0]).group_by("run", maintain_order=True).agg(users=pl.len())
    prints = {run or ONE_RUN: digest for run, digest in (getattr(result, "_fingerprints", None) or {}).items()}
    items = [("rankwise", __version__), ("generated", generated), ("convention", result.convention.name),
             ("metrics", ", ".join(result.request.names)), ("k", ", ".join(map(str, result.request.ks)))]
    for run, n in users.iter_rows():
        digest = prints.get(run)
        items.append((f"users evaluated ({run})" if len(users) > 1 else "users evaluated", f"{n:,}"))
        items.append((f"inputs SHA-256 ({run})" if len(users) > 1 else "inputs SHA-256",
                      f"<code>{digest}</code>" if digest else "– (inputs stayed in the engine)"))
    card = "".join(f"<div>{html.escape(k)}</div><div>{v if k.startswith('inputs') else html.escape(str(v))}</div>"
                   for k, v in items)
    knobs = pl.DataFrame({"knob": list(result.convention.knobs()),
                          "value": [repr(v) for v in result.convention.knobs().values()]})
    excluded = _table(result.excluded) if result.excluded.height else "<p class='note'>nobody</p>"
    return (f"<div class='card'>{card}</div><h3>Left out of the means</h3>{excluded}"
            f"<details><summary>convention knobs ({html.escape(result.convention.name)})</summary>"
            f"{_table(knobs)}</details>")


def _wide(table: str) -> str:
    """A table that scrolls sideways when wider than the page (its cells never wrap)."""
    return f"<div class='wide'>{table}</div>"


def _comparison_table(frame: pl.DataFrame) -> str:
    """The comparison frame with a significance mark (* where ``significant``)."""
    if "significant" in frame.columns:
        frame = frame.with_columns(pl.when(pl.col("significant")).then(pl.lit("*")).otherwise(pl.lit(""))
                                   .alias("significant"))
    return _table(frame, cls="compare").replace("<td>*</td>", "<td class='sig'>*</td>")


def build(result, path, *, k: int | None = None, title: str | None = None, pair: tuple[str, str] | None = None,
          bins: int = BINS, max_points: int = MAX_POINTS, compare: dict | None = None) -> Path:
    """Write one self-contained HTML report of ``result`` to ``path`` (every script inline; no network).

    Sections: run card, summary with CIs (with ``result.segments`` the means per segment too), metric
    vs k curves, per-user distributions at k (a selector switches k), with several runs the
    comparison (``result.compare()`` when present: the runs side by side at k) and the per-user
    difference ``compare()`` tests, for each of its pairs (every pair, or each run against
    ``compare={"baseline": ...}``) at each k (selectors; ``pair`` is shown first), with ``result.per_item`` the exposure Lorenz curve, and catalog-level
    summary rows (with no per-user metric only those, and a note). k defaults to the largest evaluated;
    ``compare`` holds the options of ``result.compare`` (test, correction, alpha, ...)."""
    _altair()  # a missing extra fails before any work
    vlc = _vl_convert()
    k = _chosen_k(result, k)
    long, names = _long(result), metric_columns(result)
    runs = list(result.runs) or None  # the run order: a run's colour on every chart and table
    colours = run_colours(runs or [])
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    title = title or "rankwise report"
    sections, charts = [("Run", _run_card(result, generated))], {}
    if names:
        sections.append(("Summary", f"<p class='note'>mean over users with a defined value, under the convention "
                         f"<code>{html.escape(result.convention.name)}</code>; [confidence interval]</p>" + _wide(summary_grid(result.summary.filter(pl.col("metric").is_in(names)), runs=runs))))
        if getattr(result, "segments", None) is not None:
            sections.append(("By segment", "<p class='note'>the same means per group of users (segments=); "
                             "[confidence interval]</p>" + _wide(summary_grid(result.segments, ("segment",), runs=runs))))
        charts = {"curves": curves_chart(result.summary, names, runs),
                  "distribution": distribution_chart(histogram(long, names, bins=bins), names,
                                                     list(result.request.ks), k, runs)}
        sections += [("Metric vs k", "<div class='chart' id='chart-curves'></div>"),
                     ("Per-user distributions", "<p class='note'>binned in the engine: each line is a run's share of users "
                      "per value bin; the k selector is under the chart</p><div class='chart' id='chart-distribution'></div>")]
    else:
        sections.append(("Summary", "<p class='note'>No per-user metric was evaluated: the catalog metrics under "
                         "Beyond accuracy have one value per run, so there are no per-user means, distributions "
                         "or tests.</p>"))
    if len(result.runs) >= 2 and names:
        body = ""
        compared = comparison(result, compare)
        pairs = _pairs(result, pair, compared)
        counts, hist = differences(long, pairs, list(result.request.ks), names, result.user_col, bins=bins)
        if compared is not None:
            from rankwise.inference.tables import from_pairs

            options = {name: value for name, value in (compare or {}).items() if name in ("test", "correction", "alpha")}
            table = from_pairs(result.summary.filter(pl.col("k") == k), compared.filter(pl.col("k") == k),
                                      result.runs, **{"test": "t", "correction": "holm", "alpha": 0.05, **options},
                                      confidence=getattr(result, "confidence", 0.95), note=result._no_letters_note())
            body += (f"<h3>Comparison at k={k}</h3>{_wide(_comparison_grid(table, colours))}<details><summary>"
                     f"every pair, metric and k (* = significant)</summary>{_wide(_comparison_table(compared))}"
                     "</details>")
        elif not result._per_user_names():
            body += f"<p class='note'>No tests: {html.escape(result._one_value_per_run())}.</p>"
        at_k = counts.filter(pl.col("k") == k).select(
            "metric", "a", "b", "users", "b_better", "same", "a_better", "diff")
        body += (f"<h3>Per user: b − a, as compare() computes it</h3><p class='note'>users whose value is higher "
                 "in b (b_better), equal, or higher in a; diff = the mean of b − a over the users both runs "
                 "scored. The chart's selectors switch the pair and k.</p>")
        if counts.height:
            charts["difference"] = difference_chart(counts, hist, names, list(result.request.ks), k, runs, pair)
            body += "<div class='chart' id='chart-difference'></div>"
        body += (f"<details><summary>the counts of every pair at k={k}</summary>"
                 f"{_wide(_table(at_k.rename({'a': 'run_a', 'b': 'run_b'})))}</details>")
        sections.append(("Runs compared", body))
    per_item = getattr(result, "per_item", None)
    catalog = catalog_rows(result)
    if isinstance(per_item, pl.DataFrame) or catalog is not None:
        body = ""
        if catalog is not None:
            body += "<h3>Catalog metrics</h3><p class='note'>one value per run and k</p>" + _wide(summary_grid(catalog, runs=runs))
        if isinstance(per_item, pl.DataFrame) and per_item.height:
            points, gini = lorenz(per_item, k, max_points=max_points)
            charts["lorenz"] = lorenz_chart(points, gini, k if "k" in per_item.columns else None, runs)
            gini = gini.drop("run") if gini["run"].to_list() == [ONE_RUN] else gini
            body += (f"<h3>Exposure at k={k}</h3><p>The curve's Gini is 1 − 2 × the area under it, over the "
                     "items listed per item; the summary's <code>gini</code> follows the convention's "
                     f"<code>gini</code> variant and catalog, so the two differ under some presets.</p>"
                     f"{_table(gini.rename({'gini': 'curve_gini'}))}<div class='chart' id='chart-lorenz'></div>")
        sections.append(("Beyond accuracy", body))
    specs = "".join(
        f"<script type='application/json' id='spec-{name}'>{_json(chart.to_dict())}</script>"
        for name, chart in charts.items())
    body = "".join(f"<h2>{html.escape(h)}</h2>{content}" for h, content in sections)
    page = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{_CSS}</style><script>{_bundle(vlc, _vl_version(vlc))}</script></head><body>"
            f"<h1>{html.escape(title)}</h1>{body}{specs}<script>{_EMBED}</script></body></html>")
    path = Path(path)
    _write(path, page.encode())
    return path


# Draw every chart; a failure goes to the console (the browser check fails on it). data-rendered
# marks a drawn chart for the check.
_EMBED = """
for (const el of document.querySelectorAll('.chart')) {
  const spec = JSON.parse(document.getElementById('spec-' + el.id.slice(6)).textContent);
  vegaEmbed(el, spec, {renderer: 'svg', actions: false})
    .then(() => el.setAttribute('data-rendered', '1'))
    .catch(err => console.error('chart ' + el.id + ': ' + err));
}
"""


def _json(spec: dict) -> str:
    """JSON safe inside <script>: every '<' escaped (\\u003c, the same string to JSON), so no '</script'
    ends the element and no '<!--<script' puts the HTML tokenizer in its double-escaped state."""
    return json.dumps(spec, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


@cache
def _bundle(vlc, version: str | None) -> str:
    """The Vega, Vega-Lite and vega-embed JavaScript as one inline script (vl-convert's bundle).

    vl-convert builds it anew on every call (~1.3 s, half of a report's time), so it is kept on disk,
    one file per vl-convert and Vega-Lite version, in $RANKWISE_CACHE_DIR, else
    $XDG_CACHE_HOME/rankwise or ~/.cache/rankwise (written atomically; a cache that cannot be read
    or written is skipped)."""
    from importlib.metadata import PackageNotFoundError, version as package_version

    try:
        key = f"vega-bundle-{package_version('vl-convert-python')}-{version or 'default'}.js"
    except PackageNotFoundError:
        key = None
    folder = Path(os.environ.get("RANKWISE_CACHE_DIR") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rankwise")
    if key:
        try:
            return (folder / key).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            pass
    bundle = vlc.javascript_bundle(vl_version=version).replace("</script", "<\\/script")
    if key:
        part = None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=folder, suffix=".part", delete=False) as out:
                part = out.name
                out.write(bundle)
            os.replace(part, folder / key)
        except OSError:
            if part:
                Path(part).unlink(missing_ok=True)
    return bundle
