"""``rankwise.evaluate``: validate, normalise once, run one engine, shape the result frames."""

from __future__ import annotations

import contextlib
import dataclasses
import numbers
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import polars as pl

from rankwise import _progress
from rankwise.conventions import PRESETS, Convention, resolve
from rankwise.engines import ENGINES, able, require_metrics
from rankwise.engines import beyond as _beyond
from rankwise.engines import engine as _engine
from rankwise.engines import level_means as _level_means
from rankwise.engines import shape as _shape
from rankwise.engines.protocol import Engine
from rankwise.errors import CutoffWarning, ParameterError, naming_run, warn
from rankwise.inference import segments as _segments
from rankwise.inputs.normalize import Columns, Prepared, input_key, local, prepare, prepare_truth
from rankwise.inputs.side import prepare_side_inputs
from rankwise.metrics import beyond as _beyond_spec
from rankwise.metrics.declarations import (K_MAX, METRICS, USER_LEVEL, MetricRequest, check_cutoffs,
                                           internal_name, parse_request, require_defined)
from rankwise.result import Result, within_range

BACKENDS = tuple(ENGINES)  # each engine is imported on first use (Spark's and PostgreSQL's drivers are extras)


def evaluate(
    recommendations,
    ground_truth,
    k=None,
    metrics=None,
    *,
    measures=None,
    backend: str = "polars",
    convention: str | Convention = "default",
    user_col: str = "user",
    item_col: str = "item",
    rank_col: str | None = "rank",
    score_col: str = "score",
    relevance_col: str = "relevance",
    collect: bool = True,
    memory_limit: str | int | None = None,
    confidence: float = 0.95,
    train=None,
    items=None,
    item_features=None,
    segments=None,
) -> Result:
    """Evaluate ranked recommendations against ground truth.

    Parameters
    ----------
    recommendations : long table (user, item, rank or score) or list form (user, list of items in
        rank order); a Polars DataFrame/LazyFrame, pandas DataFrame, PyArrow Table, DuckDB relation,
        or a Parquet/CSV path. With scores, rank = position by score descending, ties by the
        convention's ``ties`` rule. Several runs: a dict {run name: recommendations}; the truth is
        validated once and every run is scored on its own users by the same convention (a user
        missing from one run gets that run's ``empty_predictions`` value, as in a single run).
    ground_truth : long table (user, item, optional relevance, default 1) or list form.
    user_col, item_col, rank_col, score_col, relevance_col : the input's column names. Ranks come
        from ``rank_col`` when the table has it, else from ``score_col``; ``rank_col=None`` ranks by
        the scores even where a rank column exists. ``min_score`` reads ``score_col`` either way.
    k : int or list of int (default 10); every k is computed in the same pass.
    metrics : names from ``rankwise.METRICS`` (and ``f<beta>``); None = ``rankwise.DEFAULT_METRICS`` (precision,
        recall, f1, map, mar, mrr, dcg, ndcg, hit_rate, r_precision, rbp, err); "all" = every metric.
    measures : instead of ``metrics`` and ``k``: measure names as trec_eval and ir_measures write them
        ("P_10", "ndcg_cut_10", "map", "recip_rank", "nDCG@10", "P(rel=2)@5", "AP", "RBP(p=0.9)"; the
        table: docs/measures.md). Each is a metric at a cutoff or over the whole list (trec_eval's
        ``map``, ``ndcg``, ``recip_rank``, ``Rprec``: computed at k = 2**31 - 1, where every list is
        whole) and implies knob values; a convention with other values is a ParameterError naming the
        preset or knob to use (``convention="trec_eval"`` has trec_eval's). ``Result.per_measure`` and
        ``Result.measure_summary`` name each value by the name asked (and aggregate it as its library
        does: trec_eval's counts are sums, gm_map a geometric mean); per_user, long and summary hold
        the metrics behind them, as for ``metrics=``. A parameter family's values (iprec_at_recall_0.00
        ... _1.00, Rprec_mult_0.20 ... _2.00, IPrec@0.5) are computed in the same call from the same
        per-user statistics: the value of the convention's knob is the metric's column, any other a
        column (and summary metric) of its own, ``iprec_at_recall(iprec_recall_level=0.5)``.
    backend : "polars" (lazy expressions), "duckdb" (the shipped SQL), "spark" (the shipped SQL
        rendered for Spark, run by spark.sql; needs the rankwise[spark] extra; Spark DataFrames are
        checked and evaluated in Spark), or "postgres" / a postgresql:// URI / a psycopg connection
        (the SQL run inside PostgreSQL; table names or SELECT queries as inputs stay there).
    convention : a preset name (see ``rankwise.PRESETS``) or a ``Convention``.
    collect : False keeps ``per_user`` in the engine, for outputs too large to collect: a Spark
        DataFrame (backend="spark"), or a table of the first non-temporary schema of the search path
        (backend="postgres": a ``PostgresTable`` whose ``name`` is ready for SQL; drop it when done);
        summary and excluded are still Polars frames.
    memory_limit : cap on the engine's working memory, e.g. "2GB", "512MiB", "1.5 GB" (KB/MB/GB/TB
        are powers of 1000, KiB/MiB/GiB/TiB of 1024) or a number of bytes, from 16 MiB to 1 PiB, for
        inputs larger than memory. DuckDB: ``SET memory_limit`` (spills to a temporary directory); Polars:
        runs the plan on the streaming engine (which has no hard cap; the input checks always
        stream). Results are identical to an uncapped run. Not for backend="spark" (size the
        Spark session instead).
    confidence : level of the t intervals ``summary.ci_low`` / ``ci_high`` (default 0.95).
    train, items, item_features : inputs of the beyond-accuracy metrics (``rankwise.BEYOND_METRICS``,
        asked for by name in ``metrics``): train interactions (user, item), the catalog (a table with
        an item column or a sequence of ids; empty: a ParameterError), item features long (item,
        feature[, value]) or (item, embedding). Per-user ones (novelty, arp, long_tail_share, ild,
        serendipity) are columns of ``per_user`` (with accuracy metrics, for the same users: a user
        without recommendations has an empty list; undefined values are counted in ``excluded``, code
        undefined_<metric>); catalog ones (item_coverage, gini, exposure_entropy, personalization,
        score_entropy: from the recommendations' score column) are summary rows only;
        ``Result.per_item`` holds each item's exposure and popularity (``write`` stores it too).
        ``ground_truth`` may be None when only metrics that do not read it are asked for.
    segments : a table (user, segment), a table of the user column and one other column (user,
        country), a table and its segment column ``(table, "country")``, or the name of a ground-truth
        column: ``Result.segments`` holds every per-user mean per segment with its t interval, its
        ``segment`` column the values and ``segment_by`` the grouping's name ("country"); users in no
        segment are counted in ``excluded`` (code no_segment); ``Result.compare(by_segment=True)``
        tests within segments.

    Examples
    --------
    >>> import polars as pl, rankwise
    >>> recs = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rank": [1, 2, 1]})
    >>> truth = pl.DataFrame({"user": [1, 2], "item": [11, 12]})
    >>> rankwise.evaluate(recs, truth, k=2, metrics=["precision", "mrr"]).per_user
    shape: (2, 3)
    ┌──────┬─────────────┬───────┐
    │ user ┆ precision@2 ┆ mrr@2 │
    │ ---  ┆ ---         ┆ ---   │
    │ i64  ┆ f64         ┆ f64   │
    ╞══════╪═════════════╪═══════╡
    │ 1    ┆ 0.5         ┆ 0.5   │
    │ 2    ┆ 0.0         ┆ 0.0   │
    └──────┴─────────────┴───────┘
    """
    conv = resolve(convention)
    asked, params, means = (), (), ()
    if measures is not None:
        metrics, k, asked, params, means = _measures(measures, metrics, k, conv)
    elif k is None:
        k = 10
    only_params = measures is not None and not metrics  # every measure asked is a Param: no metric of its own
    request, beyond = _plan([params[0].metric] if only_params else metrics, k, conv, ground_truth is not None,
                            lambda: prepare_side_inputs(train, items, item_features, item_col=item_col,
                                                        user_col=user_col))
    request = dataclasses.replace(request, names=() if only_params else request.names, params=params, means=means)
    check_cutoffs(conv, request.ks, request.names)
    engine = _engine(backend)
    _require_metrics(engine, request, beyond)
    memory_limit = memory_bytes(memory_limit, engine)
    if not (isinstance(confidence, numbers.Real) and 0 < confidence < 1):
        raise ParameterError(f"confidence must be a number between 0 and 1, got {confidence!r}.",
                             hint="Pass e.g. confidence=0.95 for 95 % intervals.")
    if not collect and not engine.capabilities.keeps_results:
        keeping = able("keeps_results")
        raise ParameterError(f"collect=False needs an engine that keeps results ({', '.join(keeping)}), not "
                             f"{backend!r}.", hint=f"Pass backend={' or '.join(map(repr, keeping))}, or collect=True.")
    columns = Columns(user_col, item_col, rank_col, score_col, relevance_col)
    _shape.check_user_column(user_col, [*METRICS, *USER_LEVEL, *_beyond_spec.METRICS])
    runs = _runs(recommendations)
    if not collect and len(runs) > 1:  # before any engine work
        raise ParameterError("collect=False takes one run.", hint="Evaluate the runs one by one.")
    if not collect and params:
        raise ParameterError(f"collect=False takes one value of a parameter family ({params[0].column} asks "
                             f"{params[0].knob}={params[0].value!r} beside the convention's).",
                             hint="Evaluate each value in its own call, with convention.replace(<knob>=<value>).")
    if not collect and segments is not None:
        raise ParameterError("segments= needs the per-user rows collected.", hint="Evaluate with collect=True.")
    if beyond is not None:
        if not collect:
            raise ParameterError("Beyond-accuracy metrics need collect=True (their values join the per-user rows).",
                                 hint="Evaluate with collect=True, or render the script: rankwise.sql(metrics=[...]).")
        if ground_truth is None:
            if any(engine.is_native(r) for r in runs.values()):
                raise _beyond_in_place(engine)  # (the truth built from the recommendations would read a file)
            ground_truth = _no_truth(next(iter(runs.values())), columns)
    native = {}
    for name, recs in runs.items():
        with naming_run(name):
            # Spark DataFrames stay in Spark, table names / queries in the database (checked there)
            native[name] = engine.native_inputs(recs, ground_truth, columns, conv)
    truth = local(ground_truth) if sum(n is not None for n in native.values()) < len(runs) else None
    if truth is not None and (len(runs) > 1 or None not in runs):
        truth = prepare_truth(truth, columns)  # once for every run
    prepared, scores = {}, beyond is not None and beyond.reads_scores
    for name, recs in runs.items():
        with naming_run(name):
            prepared[name] = native.get(name) or prepare(local(recs), truth, columns, conv, scores=scores)
    if scores:  # the scores ride along with the canonical rows
        prepared = {name: _beyond.with_scores(prep, local(runs[name]), columns) for name, prep in prepared.items()}
    segment_of = None if segments is None else _segments.read(segments, ground_truth, user_col)  # (table, name)
    result = run_prepared(prepared, request, conv, engine, user_col=user_col, collect=collect,
                          memory_limit=memory_limit, confidence=confidence, beyond=beyond)
    if None in runs and _is_path(recommendations):  # one run read from a file: named after it in write()
        result = dataclasses.replace(result, run_name=Path(os.path.abspath(recommendations)).stem or "run")
    if asked:
        result = dataclasses.replace(result, measures=asked)
    return result if segment_of is None else _with_segments(result, *segment_of)


def _require_metrics(engine: Engine, request: MetricRequest, beyond) -> None:
    """The engine declares every metric asked for (``Capabilities.metrics``), before any input is read."""
    require_metrics(engine, [internal_name(n) for n in request.names] + list(beyond.names if beyond else ()))


def _measures(measures, metrics, k, conv: Convention) -> tuple[list[str], list[int], tuple, tuple, tuple]:
    """(metrics, ks, the parsed measures, the parameter values beside the convention's, the LevelMeans) of a
    ``measures=`` argument, checked against ``conv``: iprec_at_recall_0.10 and _0.20 in one call are two Params
    (names.params), computed in the same pass as the metrics; 11pt_avg_0.1,0.2 is a LevelMean of those two."""
    from rankwise.metrics import names as _names

    if metrics is not None or k is not None:
        raise ParameterError("measures= names the metric and its cutoff: it replaces metrics= and k=.",
                             hint="Pass measures=['P_10', 'ndcg_cut_10', 'map'] alone, or metrics= with k=.")
    given = [measures] if isinstance(measures, str) else list(measures) if not isinstance(measures, bytes) else []
    if not given:
        raise ParameterError("measures is empty: nothing to compute.", hint="Name at least one, e.g. measures=['P_10'].")
    parsed = tuple({m.name: m for m in map(_names.parse, given)}.values())  # a name asked twice: once
    _names.check(parsed, conv, PRESETS)
    parsed, params, means = _names.params(parsed, conv)
    # a metric only a Param reads (iprec_at_recall_0.50 alone) is not computed at the convention's value too
    metrics = list(dict.fromkeys(m.metric for m in parsed if m.output is None))
    return metrics, sorted({m.cutoff for m in parsed}), parsed, params, means


def _with_segments(result: Result, segment_of: pl.DataFrame, segment_by: str) -> Result:
    """The result with its per-segment summary (the grouping named ``segment_by``) and the users in no
    segment counted."""
    segment_of = _segments.aligned(segment_of, result.long.schema[result.user_col], result.user_col)
    names = result._metric_names(None)
    table = within_range(_segments.summary(result.long, segment_of, result.user_col, names, result.confidence,
                                            segment_by), result.convention)
    runs = result.runs or (None,)
    counts = []
    for run in runs:
        rows = result.long if run is None else result.long.filter(pl.col("run") == run)
        counts.append(((run,) if run is not None else ()) + (
            "no_segment", "in no segment (segments=)", _segments.unsegmented(rows, segment_of, result.user_col)))
    schema = ({"run": pl.String} if result.runs else {}) | _shape.EXCLUDED_SCHEMA
    excluded = pl.concat([result.excluded, pl.DataFrame(counts, schema=schema, orient="row")])
    return dataclasses.replace(result, excluded=excluded, segments=table, segment_of=segment_of)


def run_prepared(prepared: dict, request: MetricRequest, conv: Convention, engine: Engine, *, user_col: str,
                 collect: bool = True, memory_limit: int | None = None, confidence: float = 0.95,
                 beyond: BeyondPlan | None = None) -> Result:
    """Every run's prepared inputs through the engine, then the result shaped ({None: prep} = one run).
    ``beyond``: a :class:`BeyondPlan` when beyond-accuracy metrics are asked for."""
    shaped, longest = {}, {}
    for name, prep in _progress.progress(prepared.items(), desc="runs", enabled=None if len(prepared) > 1 else False):
        with naming_run(name):
            shaped[name], longest[name] = _run_one(prep, request, conv, engine, user_col, collect, memory_limit,
                                                   confidence, beyond)
    _warn_cutoffs([k for k in request.ks if k != K_MAX], longest)  # K_MAX: measures= over the whole list
    request = _flat(request)
    if beyond is not None:
        request = MetricRequest((*([] if beyond.only else request.names), *beyond.names), request.ks, request.beta)
    if None in shaped:
        long, summary, excluded, per_item = shaped[None]
    else:
        long, summary, excluded = (_shape.stack({name: parts[i] for name, parts in shaped.items()}) for i in range(3))
        per_item = None if beyond is None else _shape.stack_plans({name: parts[3] for name, parts in shaped.items()})
    return Result(long, within_range(summary, conv), excluded, conv, request, user_col, prepared, confidence,
                  item_rows=per_item, engine=engine)


def _warn_cutoffs(ks, longest: dict) -> None:
    """One CutoffWarning for the cutoffs above every list of a run (``longest``: {run: its longest list,
    None when not counted}): there every list is whole, and a k-denominator only shrinks the metric."""
    if not ks:
        return
    above = {run: (n, [k for k in ks if k > n]) for run, n in longest.items() if n and n < max(ks)}
    if not above:
        return
    where = "; ".join(f"k = {', '.join(map(str, cutoffs))}{'' if run is None else f' in run {run!r}'} (the longest "
                      f"list has {n} item{'s' if n > 1 else ''})" for run, (n, cutoffs) in above.items())
    warn(f"k is above every recommendation list's length: {where}. At such k every list is whole: the hits stop "
         "growing, and a metric that divides by k (precision with precision_denominator='k') only shrinks. "
         "Ask for k up to the longest list, or check that the lists were not cut short.", CutoffWarning)


def _run_one(prep, request: MetricRequest, conv: Convention, engine: Engine, user_col: str, collect: bool,
             memory_limit, confidence: float, beyond: BeyondPlan | None) -> tuple:
    """One run through the engine: ((long rows, summary, excluded, per_item or None), the longest list
    or None when only beyond-accuracy metrics are asked for)."""
    if beyond is not None and beyond.only:  # only beyond-accuracy metrics: no accuracy engine run
        return _beyond_only(prep, beyond, request, conv, engine, user_col, confidence, memory_limit), None
    if request.params and not engine.capabilities.params:
        out = _params_one_by_one(prep, request, conv, engine, memory_limit)
    else:
        out = engine.run(prep, request, conv, memory_limit=memory_limit, collect=collect)
    if request.means:  # (collect=False takes no Param: refused above)
        out = _level_means.add(out, request, conv)
    request = _flat(request)
    try:
        _shape.check(out, conv, user_col)
        if collect:
            _shape.raise_on_non_finite(out.per_user, out.summary, request, conv, user_col)
            rows = _shape.long(out.per_user, request, user_col)
        else:
            # per-user rows left in the engine: a Spark frame under the public names of _shape.long; a
            # PostgreSQL table as the engine wrote it (documented)
            rows = engine.kept_rows(out.per_user, request, user_col)
        parts = (rows, _shape.summary(out.summary, request, confidence),
                 _shape.excluded(prep, out.counts, conv), None)
    except BaseException:
        if not collect:  # left in the engine: the caller would never see it (the first error is the one raised)
            with contextlib.suppress(Exception):
                engine.discard(out.per_user)
        raise
    if beyond is not None:
        parts = _with_beyond(parts, prep, beyond, request, conv, engine, user_col, confidence, memory_limit)
    return parts, out.counts["longest"]


def _flat(request: MetricRequest) -> MetricRequest:
    """After the engine: each parameter value's column is one more metric name (shaping, Result)."""
    return dataclasses.replace(request, names=request.outputs, params=(), means=()) if request.params else request


def _params_one_by_one(prep, request: MetricRequest, conv: Convention, engine: Engine, memory_limit):
    """An engine without ``Capabilities.params``: the metrics in one run, then each parameter value in a
    run of its metric alone under ``conv.replace(knob=value)``, on the same prepared inputs; the value's
    per-user column and summary rows added under its Param.column (rows in (k, user_id) order in each)."""
    out = engine.run(prep, dataclasses.replace(request, params=()), conv, memory_limit=memory_limit)
    per_user, summaries = out.per_user, [out.summary]
    for p in request.params:
        one = engine.run(prep, MetricRequest((p.metric,), request.ks, request.beta), conv.replace(**{p.knob: p.value}),
                         memory_limit=memory_limit)
        if not one.per_user.get_column("user_id").equals(per_user.get_column("user_id")):
            raise RuntimeError("rankwise: the engine's runs do not list the same users")  # a bug, not bad input
        per_user = per_user.with_columns(one.per_user.get_column(p.metric).alias(p.column))
        summaries.append(one.summary.filter(pl.col("metric") == p.metric).with_columns(metric=pl.lit(p.column)))
    return dataclasses.replace(out, per_user=per_user, summary=pl.concat(summaries, how="vertical_relaxed"))


def _beyond_in_place(engine) -> ParameterError:
    return ParameterError(f"Beyond-accuracy metrics on backend={engine.name!r} take DataFrames or files, not "
                          "Spark DataFrames or table names.",
                          hint="Pass the recommendations as a Polars/pandas DataFrame or a file, or render the "
                               f"script: rankwise.sql(metrics=[...], dialect={engine.name!r}, tables={{...}}).")


def _beyond_values(prep, beyond, request, conv, engine, user_col, confidence, memory_limit=None, evaluated=None):
    """(per-user rows, summary, excluded, per_item) of the beyond-accuracy metrics; ``evaluated``: the
    users of the per-user rows, summary and excluded (None: the recommendations' users)."""
    names, side = beyond.names, beyond.side
    if not hasattr(prep, "recs"):  # Spark DataFrames / PostgreSQL tables evaluated in place: not these yet
        raise _beyond_in_place(engine)
    users, catalog, items = _beyond.run(prep.recs, prep.ground_truth, names, side, request.ks, conv, engine,
                                        source=prep.sources.get("recommendations"), memory_limit=memory_limit,
                                        evaluated=evaluated)
    summary = _shape.summary(_beyond.summary_rows(users, catalog, names), MetricRequest(names, request.ks, 1.0),
                             confidence)
    excluded = pl.DataFrame(_beyond.excluded_rows(users, names), schema=_shape.EXCLUDED_SCHEMA, orient="row")
    items = items.rename({"item_id": "item"})
    return users.rename({"user_id": user_col}), summary, excluded, items


def _with_beyond(parts, prep, beyond, request, conv, engine, user_col, confidence, memory_limit=None):
    """The accuracy result of one run joined with its beyond-accuracy values (per user and k): one user
    set, the accuracy users of the convention (a user without recommendations has an empty list), so
    each per-user mean is over the per_user column and ``excluded`` counts every user it leaves out."""
    rows, summary, excluded, _ = parts
    evaluated = rows.filter(pl.col("k") == request.ks[0]).get_column(user_col)
    users, b_summary, b_excluded, items = _beyond_values(prep, beyond, request, conv, engine, user_col, confidence,
                                                         memory_limit, evaluated)
    names = beyond.names
    user_names = [n for n in names if n in users.columns]
    rows = rows.join(users.with_columns(pl.col(user_col).cast(rows.schema[user_col])), on=[user_col, "k"],
                     how="left", maintain_order="left").with_columns(pl.col(user_names).fill_null(float("nan")))
    return rows, pl.concat([summary, b_summary]), pl.concat([excluded, b_excluded]), items


def _beyond_only(prep, beyond, request, conv, engine, user_col, confidence, memory_limit=None):
    """A run with only beyond-accuracy metrics: its users are the recommendations' users (as every library
    computes these metrics: a property of the lists, whatever the ground truth)."""
    users, summary, excluded, items = _beyond_values(prep, beyond, request, conv, engine, user_col, confidence,
                                                     memory_limit)
    rows = users.sort("k", user_col).select(user_col, "k", pl.lit(None, pl.Int64).alias("n_recs"),
                                           pl.lit(None, pl.Int64).alias("n_rel"), pl.exclude(user_col, "k"))
    return rows, summary, excluded, items


def _plan(metrics, k, conv: Convention, has_truth: bool, side_inputs) -> tuple[MetricRequest, tuple | None]:
    """The accuracy request of ``metrics`` at ``k`` and its beyond-accuracy part, (names, side inputs,
    only beyond-accuracy metrics) or None. ``side_inputs()`` gives the validated train / items /
    features, called only when a beyond-accuracy metric is asked for. With only those, the request is
    a placeholder that keeps k (the accuracy engine is not run)."""
    metrics, beyond_names = _split_beyond(metrics)
    require_defined(conv, beyond_names)
    side = side_inputs() if beyond_names else None
    if beyond_names:
        _beyond.check_inputs(beyond_names, side, conv, has_truth=has_truth)
    only_beyond = metrics == [] and bool(beyond_names)
    if not has_truth and not only_beyond:
        raise ParameterError("ground_truth is None, but accuracy metrics need it.",
                             hint="Pass the ground truth, or ask only for metrics that do not read it "
                                  "(e.g. metrics=['novelty', 'item_coverage']).")
    request = parse_request(["hit_rate"] if only_beyond else metrics, k, None if only_beyond else conv.metrics,
                            conv.name)
    return request, BeyondPlan(tuple(beyond_names), side, only_beyond) if beyond_names else None


class BeyondPlan(NamedTuple):
    """The beyond-accuracy part of a request: the metric names, the validated side inputs, and whether
    they are the only metrics asked for."""

    names: tuple[str, ...]
    side: object
    only: bool

    @property
    def reads_scores(self) -> bool:
        """Whether a metric asked for reads the recommendations' scores (score_entropy)."""
        return "score_entropy" in self.names


def _split_beyond(metrics) -> tuple[list | None, list[str]]:
    """(accuracy metrics: None = all, [] = none; beyond-accuracy names) of a ``metrics`` argument."""
    if metrics is None or (isinstance(metrics, str) and metrics.strip().lower() == "all"):
        return metrics, []
    names = [metrics] if isinstance(metrics, (str, bytes)) else list(metrics)
    beyond = [n for n in names if isinstance(n, str) and n.strip().lower() in _beyond_spec.METRICS]
    return [n for n in names if n not in beyond], list(dict.fromkeys(n.strip().lower() for n in beyond))


def _no_truth(recommendations, columns: Columns) -> pl.DataFrame:
    """An empty ground truth with the recommendations' id types (beyond-accuracy metrics only)."""
    from rankwise.inputs.normalize import to_lazyframe

    schema = to_lazyframe(recommendations, "recommendations", columns).collect_schema()
    item = schema.get(columns.item, pl.Int64)
    item = item.inner if isinstance(item, pl.List) else item
    return pl.DataFrame(schema={columns.user: schema.get(columns.user, pl.Int64), columns.item: item,
                                columns.relevance: pl.Float64})


class Evaluator:
    """The same inputs under many conventions (compare_conventions, explain): the truth and the side
    inputs are validated once and the recommendations once per distinct input rule
    (``_inputs.input_key``). Beyond-accuracy metrics read ``train``, ``items``, ``item_features``."""

    def __init__(self, recommendations, ground_truth, *, backend: str = "polars", user_col: str = "user",
                 item_col: str = "item", rank_col: str | None = "rank", score_col: str = "score",
                 relevance_col: str = "relevance", memory_limit=None, confidence: float = 0.95,
                 train=None, items=None, item_features=None):
        if isinstance(recommendations, Mapping):  # evaluate() reads a dict as several runs
            raise ParameterError(
                f"compare_conventions and explain take one run's recommendations, got a dict of "
                f"{len(recommendations)} runs ({', '.join(map(repr, list(recommendations)[:3]))}"
                f"{', ...' if len(recommendations) > 3 else ''}).",
                hint="Pass one of them, e.g. recommendations['a'], or compare the runs under one convention with "
                     "evaluate({...}, ...).compare().")
        self.engine = _engine(backend)
        self.memory_limit = memory_bytes(memory_limit, self.engine)
        self.columns = Columns(user_col, item_col, rank_col, score_col, relevance_col)
        self.recommendations = local(recommendations)
        self.has_truth = ground_truth is not None
        truth = ground_truth if self.has_truth else _no_truth(self.recommendations, self.columns)
        self.truth = prepare_truth(local(truth), self.columns)
        self.side_args = dict(train=train, items=items, item_features=item_features)
        self._side = None
        self.confidence = confidence
        self._prepared: dict[tuple, Prepared] = {}

    def side(self):
        if self._side is None:
            self._side = prepare_side_inputs(**self.side_args, item_col=self.columns.item,
                                                     user_col=self.columns.user)
        return self._side

    def __call__(self, convention, k, metrics) -> Result:
        conv = resolve(convention)
        request, beyond = _plan(metrics, k, conv, self.has_truth, self.side)
        check_cutoffs(conv, request.ks, request.names)
        _require_metrics(self.engine, request, beyond)
        scores = beyond is not None and beyond.reads_scores
        key = (input_key(conv), scores)
        if key not in self._prepared:
            self._prepared[key] = prepare(self.recommendations, self.truth, self.columns, conv, scores=scores)
        prep = self._prepared[key]
        if scores:
            prep = _beyond.with_scores(prep, self.recommendations, self.columns)
        return run_prepared({None: prep}, request, conv, self.engine, user_col=self.columns.user,
                            memory_limit=self.memory_limit, confidence=self.confidence, beyond=beyond)


def _is_path(data) -> bool:
    """A path to a file or directory (not a table name or query for backend='postgres')."""
    return isinstance(data, os.PathLike) or (isinstance(data, str) and os.path.exists(data))


def _runs(recommendations) -> dict:
    """{None: recs} for one run; a dict {name: recs} (non-empty, string names) for several."""
    if not isinstance(recommendations, Mapping):
        return {None: recommendations}
    if not recommendations:
        raise ParameterError("No runs: the dict of recommendations is empty.",
                             hint="Pass {'name': recommendations, ...} with at least one run.")
    if all(isinstance(v, (list, tuple)) or type(v).__module__.split(".")[0] == "numpy" for v in recommendations.values()):
        raise ParameterError(
            "A dict of recommendations is several runs ({run name: recommendations}), but these values are "
            f"columns of values (keys {list(recommendations)[:5]}).",
            hint="Pass one table: pl.DataFrame({...}) (or pandas.DataFrame); for several runs, "
                 "{'popular': recs_a, 'als': recs_b}.")
    bad = [name for name in recommendations if not isinstance(name, str) or not name]
    if bad:
        raise ParameterError(f"Run names must be non-empty strings, got {bad[:5]!r}.",
                             hint="Name the runs, e.g. {'popular': recs_a, 'als': recs_b}.")
    return dict(recommendations)


_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*$", re.IGNORECASE)
MEMORY_LIMIT_RANGE = (16 * 2**20, 2**50)  # 16 MiB (DuckDB runs out below a few MiB) .. 1 PiB


def memory_bytes(memory_limit, engine: Engine) -> int | None:
    """evaluate()'s memory_limit as a number of bytes, validated once for every backend.

    A positive int of bytes, or a size: a number and a unit, KB/MB/GB/TB = 1000^n, KiB/MiB/GiB/TiB
    = 1024^n ("2GB", "512MiB", "1.5 GB"); between MEMORY_LIMIT_RANGE. None: no cap.
    """
    if memory_limit is None:
        return None
    if not engine.capabilities.memory_limit:
        raise ParameterError(f"memory_limit applies to backend={' or '.join(map(repr, able('memory_limit')))}, "
                             f"not {engine.name!r}.",
                             hint="Size the engine's session instead (Spark: spark.driver.memory).")
    size = None
    if isinstance(memory_limit, numbers.Integral) and not isinstance(memory_limit, bool):
        size = int(memory_limit)
    elif isinstance(memory_limit, str):
        match = _SIZE.match(memory_limit)
        if match and match.group(2).lower() in _UNITS:
            size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    low, high = MEMORY_LIMIT_RANGE
    if size is None or not low <= size <= high:
        raise ParameterError(
            f"memory_limit must be a size from 16MiB to 1PiB, like '2GB' or a number of bytes, got {memory_limit!r}.",
            hint="Pass e.g. memory_limit='2GB' (10^9 bytes), '512MiB' (2^29 bytes) or 4_000_000_000.")
    return size
