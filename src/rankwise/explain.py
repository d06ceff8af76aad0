"""Side by side: the same data under several conventions, and why two conventions disagree."""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass

import polars as pl

from rankwise.engines import beyond as _beyond
from rankwise.metrics.beyond import METRICS as BEYOND_NAMES
from rankwise.api import Evaluator, _split_beyond
from rankwise.conventions import Convention, resolve
from rankwise.errors import (DtypeMismatchError, InputFileError, MissingDependencyError, ParameterError, RankwiseError,
                     UndefinedValueError)
from rankwise.metrics.declarations import KNOBS_BY_METRIC, METRICS, MetricRequest, internal_name, not_defined, parse_request


def compare_conventions(recommendations, ground_truth, k=10, presets=None, metrics=None, *,
                        return_skipped=False, **options):
    """One row per (metric, k), one value column per convention (null where its library lacks the metric).

    ``presets`` are preset names or Conventions (default: every preset); ``options`` go to evaluate().
    With the default presets, a preset that cannot apply to these inputs (it raises a rankwise error,
    e.g. ``surprise`` needs scores for its min_score and the input has ranks) is left out of the table
    and reported: ``return_skipped=True`` returns ``(table, skipped)``, skipped = {preset: reason};
    otherwise a warning names them. A preset named in ``presets`` that cannot apply raises, and so
    does an input that no preset can read or that a metric needs under every convention (novelty
    without train). A metric no chosen preset has keeps its rows, null. Beyond-accuracy metrics are
    evaluated apart from the accuracy ones, over the recommendations' users (as :func:`explain` and
    the libraries do).
    """
    from rankwise.conventions import PRESETS

    explicit = bool(presets)
    conventions = [resolve(p) for p in (presets or list(PRESETS))]
    names = [conv.name for conv in conventions]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:  # each names a column of the table
        raise ParameterError(
            f"presets: several conventions are named {', '.join(map(repr, repeated))}.",
            hint="Name each: Convention(name='linear gain', gain='linear'), or derive it with "
                 "PRESETS['default'].replace(gain='linear'), which names the change.")
    request = _request(metrics, k)
    rows, skipped, first_error = None, {}, None
    evaluate = Evaluator(recommendations, ground_truth, **options)
    if set(request.names) & set(BEYOND_NAMES):
        # train / items / item_features, and the inputs a metric needs under every convention (novelty:
        # train), do not depend on the preset: their errors raise here, not as presets left out
        _beyond.check_inputs([m for m in request.names if m in BEYOND_NAMES], evaluate.side(), None,
                             evaluate.has_truth)
    for conv in conventions:
        wanted = [m for m in request.names if defines(conv, m)]
        column = pl.DataFrame(schema={"metric": pl.String, "k": pl.Int64, conv.name: pl.Float64})
        # the beyond-accuracy metrics on their own: over the recommendations' users, as explain() and the
        # libraries compute them (in one call with accuracy metrics they would take the accuracy users)
        parts = [part for part in _split_beyond(wanted) if part]
        if parts:
            try:
                summary = pl.concat([evaluate(conv, list(request.ks), part).summary for part in parts])
            except (InputFileError, MissingDependencyError, DtypeMismatchError):
                raise  # the file, the engine or the id types, not the preset
            except RankwiseError as error:
                if explicit:
                    raise
                skipped[conv.name], first_error = error.problem, first_error or error
                continue
            column = summary.select("metric", "k", pl.col("value").alias(conv.name))
        rows = column if rows is None else rows.join(column, on=["metric", "k"], how="full", coalesce=True)
    if rows is None:  # no preset applies: the inputs or options are wrong, not a preset
        raise first_error
    # every (metric, k) asked for has its row, null where no chosen preset's library has the metric
    asked = pl.DataFrame({"metric": [m for m in request.names for _ in request.ks],
                          "k": [k for _ in request.names for k in request.ks]},
                         schema={"metric": pl.String, "k": pl.Int64})
    rows = asked.join(rows, on=["metric", "k"], how="left")
    order = {m: i for i, m in enumerate(request.names)}
    table = rows.sort(pl.col("metric").replace_strict(order, return_dtype=pl.Int64), "k")
    if return_skipped:
        return table, skipped
    if skipped:
        warnings.warn("compare_conventions skipped presets that cannot apply to these inputs: "
                      + "; ".join(f"{name}: {reason}" for name, reason in skipped.items()), stacklevel=2)
    return table


def _request(metrics, k) -> MetricRequest:
    """Accuracy and beyond-accuracy metrics (``rankwise.BEYOND_METRICS``) at the cutoffs ``k``."""
    accuracy, beyond = _split_beyond(metrics)
    request = parse_request(accuracy if accuracy != [] else ["hit_rate"], k)
    return MetricRequest((*(request.names if accuracy != [] else ()), *beyond), request.ks, request.beta)


def defines(conv: Convention, name: str) -> bool:
    """Whether ``conv``'s library has the metric: its ``Convention.metrics`` (accuracy and beyond-accuracy
    names; None = every metric), which a convention derived with ``replace()`` keeps."""
    return conv.metrics is None or internal_name(name) in conv.metrics


@dataclass(frozen=True)
class Explanation:
    """Why ``metric@k`` differs between conventions a and b.

    table: one row per knob on which a and b differ and that can move the metric (the registry's
    knobs for it; ``note`` names the other differing knobs): its two values, ``effect`` (its Shapley share of
    value_b - value_a: the knob's effect averaged over every order of switching the knobs one at a
    time from a to b; the effects add up to the difference exactly), ``share`` (effect / difference)
    and ``alone`` (the change from a when only that knob switches). When some mix of the knobs leaves
    no user with a defined value (its mean is NaN), the split is undefined: the effects are NaN and
    ``note`` names the mixes.
    """

    metric: str
    k: int
    a: str
    b: str
    value_a: float
    value_b: float
    table: pl.DataFrame
    note: str = ""

    def __str__(self) -> str:
        diff = self.value_b - self.value_a
        lines = [f"{self.metric}@{self.k}: {self.a} = {self.value_a:.6f}, {self.b} = {self.value_b:.6f}, "
                 f"difference {diff:+.6f}", ""]
        width = max([len("knob"), *(len(x) for x in self.table["knob"])])
        lines.append(f"{'knob':<{width}}  {self.a[:18]:>18}  {self.b[:18]:>18}  {'effect':>10}  {'share':>7}  {'alone':>10}")
        for row in self.table.iter_rows(named=True):
            share = "" if row["share"] is None or math.isnan(row["share"]) else f"{row['share'] + 0.0:.0%}"
            lines.append(f"{row['knob']:<{width}}  {row['a']:>18}  {row['b']:>18}  {row['effect']:>+10.6f}  "
                         f"{share:>7}  {row['alone']:>+10.6f}")
        return "\n".join(lines + ([f"\n{self.note}"] if self.note else []))


def explain(recommendations, ground_truth, a="default", b="ranx", metric="map", k=10, **options) -> Explanation:
    """Name each knob on which conventions ``a`` and ``b`` differ and how much of the gap in
    ``metric@k`` it accounts for (exact Shapley attribution over the knobs that can move the metric)."""
    conv_a, conv_b = resolve(a), resolve(b)
    request = _request([metric], k)
    if len(request.ks) != 1:
        raise ParameterError("explain() takes one k.", hint="For example k=10.")
    name, k = request.names[0], request.ks[0]
    for conv in (conv_a, conv_b):
        if not defines(conv, name):  # as evaluate() and compare_conventions treat it
            raise not_defined(conv.name, name, conv.metrics)
    differing = conv_a.diff(conv_b)
    movers = [knob for knob in differing if knob in KNOBS_BY_METRIC[internal_name(name)]]
    if len(movers) > 10:
        raise ParameterError(f"{len(movers)} differing knobs is too many to attribute exactly.")

    cache: dict[frozenset, float] = {}
    raised: list[frozenset] = []  # mixes where an 'error' rule of one convention meets the other's users
    evaluate = Evaluator(recommendations, ground_truth, **options)

    def value(switched: frozenset) -> float:
        if switched not in cache:
            conv = Convention(**{**conv_a.knobs(), **{kn: conv_b.knobs()[kn] for kn in switched}})
            try:
                cache[switched] = evaluate(conv, k, [name]).summary["value"].item()
            except UndefinedValueError:
                if not switched or switched == frozenset(movers):  # a or b itself: the caller's error
                    raise
                cache[switched] = math.nan
                raised.append(switched)
        return cache[switched]

    def shapley(knob: str) -> float:
        others, n, total = [m for m in movers if m != knob], len(movers), 0.0
        for size in range(len(others) + 1):
            weight = math.factorial(size) * math.factorial(n - size - 1) / math.factorial(n)
            for subset in itertools.combinations(others, size):
                s = frozenset(subset)
                total += weight * (value(s | {knob}) - value(s))
        return total

    base, full = value(frozenset()), value(frozenset(movers))
    diff = full - base
    rows = []
    for knob in movers:  # a knob that cannot move the metric is named in the note, not given a 0 row
        va, vb = differing[knob]
        effect = _clean(shapley(knob), diff)
        alone = _clean(value(frozenset({knob})) - base, diff)
        share = effect / diff if diff else float("nan")
        rows.append((knob, repr(va), repr(vb), effect, share, alone))
    table = pl.DataFrame(rows, schema={"knob": pl.String, "a": pl.String, "b": pl.String, "effect": pl.Float64,
                                       "share": pl.Float64, "alone": pl.Float64}, orient="row")
    table = table.sort(pl.col("effect").abs(), descending=True)
    undefined = [f"{', '.join(sorted(mix))} switched to {conv_b.name}'s value{'s' if len(mix) > 1 else ''}"
                 + (" (an 'error' rule raises there)" if mix in raised else "")
                 if mix else f"{conv_a.name}'s own values (no knob switched)"
                 for mix, v in cache.items() if math.isnan(v)]
    still = [knob for knob in differing if knob not in movers]
    notes = [f"Undefined split: no user has a defined {name}@{k} with {'; '.join(undefined[:3])}"
             f"{' ...' if len(undefined) > 3 else ''} ({len(undefined)} of the {len(cache)} mixes), so the effects are NaN."
             ] if undefined else []
    if still:
        notes.append(f"Also differ, but cannot move {name}: {', '.join(still)}.")
    note = " ".join(notes)
    # the library values themselves (the presets may restrict metrics; the knobs say the same)
    return Explanation(name, k, conv_a.name, conv_b.name, base, full, table, note)


def _clean(effect: float, scale: float) -> float:
    """Rounding noise (a knob that cannot move the value on this data) reads as exactly 0."""
    return 0.0 if abs(effect) <= 1e-12 * max(1.0, abs(scale)) else effect


__all__ = ["compare_conventions", "explain", "Explanation", "METRICS"]
