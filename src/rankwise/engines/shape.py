"""Result shaping, once for every engine: what an engine's :class:`~rankwise.engines.protocol.Output` becomes.

- ``long``: the per-(user, k) rows under the caller's user column, the requested metrics under
  their public names (``f2`` for F-beta with beta 2), NaN where undefined;
- ``wide``: one row per user, one column per ``metric@k``;
- ``summary``: metric, k, value, n_users, ci_low, ci_high in request order;
- ``excluded``: every user a mean leaves out, with a stable ``code`` and a readable ``reason``;
- the errors: ``empty_*="error"`` (UndefinedValueError) and non-finite values (NumericOverflowError).

With several runs every frame gets a leading ``run`` column (:func:`stack`).
"""

from __future__ import annotations

from itertools import accumulate

import polars as pl

from rankwise.engines.protocol import Output, error_rules
from rankwise.inputs.normalize import USER, Prepared
from rankwise.conventions import Convention
from rankwise.errors import NumericOverflowError, ParameterError, UndefinedValueError
from rankwise.metrics.declarations import MetricRequest, internal_name

KEYS = ("k", "n_recs", "n_rel")
RUN = "run"


def check_user_column(user_col: str, metric_names) -> None:
    """The caller's user column names a column of every per-user frame, beside KEYS, RUN, the metric
    columns and ``metric@k``: a name among those would collide (a ParameterError, before any work)."""
    taken = {*KEYS, RUN, *metric_names}
    if user_col in taken or "@" in user_col:
        raise ParameterError(
            f"user_col={user_col!r} would collide with a column of the per-user frames "
            f"({', '.join(KEYS)}, {RUN}, the metric names and metric@k).",
            hint="Rename that column of the inputs (e.g. to 'user') and pass user_col='user'.")
EXCLUDED_SCHEMA = {"code": pl.String, "reason": pl.String, "n_users": pl.Int64}


def check(output: Output, conv: Convention, user_col: str) -> None:
    """Raise UndefinedValueError for users an 'error' empty rule applies to."""
    for knob, _, _, what in error_rules(conv):
        count = output.counts["no_labels" if knob == "empty_labels" else "no_predictions"]
        if count:
            raise UndefinedValueError(
                f"{count} users {what}, and the convention says {knob}='error'.",
                rows=output.empty_examples[knob].rename({USER: user_col}),
                hint=f"Filter those users out, or choose a value: convention.replace({knob}='nan').",
            )


def long(per_user: pl.DataFrame, request: MetricRequest, user_col: str) -> pl.DataFrame:
    """The engine's per-user rows (sorted by k, user) with public names: user, k, n_recs, n_rel, metrics."""
    return per_user.select(
        pl.col(USER).alias(user_col), pl.col(*KEYS).cast(pl.Int64),
        *[pl.col(internal_name(n)).cast(pl.Float64).fill_null(float("nan")).alias(n) for n in request.names],
    )


def metric_columns(frame: pl.DataFrame, user_col: str) -> list[str]:
    return [c for c in frame.columns if c not in (RUN, user_col, *KEYS)]


def wide(long_frame: pl.DataFrame, user_col: str, ks) -> pl.DataFrame:
    """(user, k) rows -> one row per user, one column per metric@k (per run when there is a run column);
    no rows: the same columns, one per metric and each of ``ks``.

    Every evaluated user has exactly one row per k and ``long`` is sorted by (k, user), so each k's
    slice lines up row for row: the slices' columns side by side instead of a pivot, without a copy
    (1M users x six k: 0.2 s and 0.3 GB less than the copies of a pivot or a select).
    """
    metrics = metric_columns(long_frame, user_col)
    if not long_frame.height:
        keys = [RUN] if RUN in long_frame.columns else []
        return pl.DataFrame(schema={**{c: long_frame.schema[c] for c in [*keys, user_col]},
                                    **{f"{m}@{k}": long_frame.schema[m] for m in metrics for k in ks}})
    if RUN in long_frame.columns:
        return stack({run: wide(part.drop(RUN), user_col, ks) for run, part in _slices(long_frame, RUN).items()})
    parts = _slices(long_frame, "k")
    users = next(iter(parts.values())).get_column(user_col)
    if any(not part.get_column(user_col).equals(users) for part in parts.values()):
        raise RuntimeError("rankwise: the engine did not return one row per user and k")  # a bug, not bad input
    # the columns in their final order as they are: a select or pivot would copy them (the slices' chunks differ)
    return pl.DataFrame([users, *[part.get_column(m).alias(f"{m}@{k}") for m in metrics for k, part in parts.items()]])


def _slices(frame: pl.DataFrame, column: str) -> dict:
    """{value: the frame's rows of that value} for a ``column`` whose equal values are one run of rows each
    (the engines' per-user rows: by run, then k): zero-copy slices, where partition_by would gather."""
    runs = frame.select(pl.col(column).rle()).unnest(column)  # (len, value)
    lengths, values = runs.get_column("len").to_list(), runs.get_column("value").to_list()
    if len(set(values)) < len(values):
        raise RuntimeError(f"rankwise: the engine's per-user rows are not grouped by {column}")  # a bug, not bad input
    return {value: frame.slice(start, n) for start, n, value in zip(accumulate([0, *lengths[:-1]]), lengths, values)}


def summary(raw: pl.DataFrame, request: MetricRequest, confidence: float) -> pl.DataFrame:
    """The engine's summary rows for the requested metrics, public names, request order then k, with
    the t interval of each mean: value ± t(1 - (1 - confidence)/2, n - 1) · sd / √n (NaN when n < 2
    or the value is not a mean over users)."""
    from rankwise.inference.stats import t_interval

    order = {internal_name(n): i for i, n in enumerate(request.names)}
    public = {internal_name(n): n for n in request.names}
    # every requested (metric, k), also when no user was evaluated (NaN, n_users 0), so that every run of
    # a comparison has its rows
    wanted = pl.DataFrame({"metric": list(order)}).join(pl.DataFrame({"k": list(request.ks)}, schema={"k": pl.Int64}),
                                                        how="cross")
    raw = raw.with_columns(pl.col("k").cast(pl.Int64)).filter(pl.col("metric").is_in(list(order)))
    out = (
        wanted.join(raw, on=["metric", "k"], how="left")
        .with_columns(pl.col("n_users").fill_null(0))
        .with_columns(
            pl.col("metric").replace_strict(order, return_dtype=pl.Int64).alias("_order"),
            pl.col("metric").replace_strict(public, return_dtype=pl.String),
            pl.col("k").cast(pl.Int64),
            pl.col("value").cast(pl.Float64).fill_null(float("nan")),
            pl.col("n_users").cast(pl.Int64),
            pl.col("sd").cast(pl.Float64).fill_null(float("nan")),
        )
        .sort("_order", "k")
    )
    low, high = t_interval(out["value"].to_numpy(), out["sd"].to_numpy(), out["n_users"].to_numpy(), confidence)
    return out.with_columns(ci_low=pl.Series(low, dtype=pl.Float64), ci_high=pl.Series(high, dtype=pl.Float64)).select(
        "metric", "k", "value", "n_users", "ci_low", "ci_high")


def raise_on_non_finite(rows: pl.DataFrame, raw_summary: pl.DataFrame, request: MetricRequest, conv: Convention,
                        user_col: str) -> None:
    """A requested metric that is NaN or infinite (not null: undefined) is an overflow, never a result.

    E.g. gain='exp2' with relevance 2000: 2^2000 is inf as a double, DCG = inf, NDCG = inf/inf = NaN.
    Run on the engine's rows (NULL = undefined, so a NaN there is an overflow) and its summary.
    """
    names = list(dict.fromkeys(internal_name(n) for n in request.names))
    # a NaN or infinite value makes its metric's sum, so its mean and sd, NaN or infinite: when every
    # mean and sd of the summary is finite (or null), no row needs a look (a scan of users x k rows)
    if set(names) <= set(raw_summary["metric"]) and raw_summary.filter(
            ~pl.col("value").is_finite() | ~pl.col("sd").is_finite()).height == 0:
        return
    rows = rows.filter(pl.any_horizontal([pl.col(n).is_nan() | pl.col(n).is_infinite() for n in names]))
    means = raw_summary.filter(pl.col("metric").is_in(names) & (pl.col("value").is_nan() | pl.col("value").is_infinite()))
    if not rows.height and not means.height:
        return
    if rows.height:
        which = [n for n in names if rows.select((pl.col(n).is_nan() | pl.col(n).is_infinite()).any()).item()]
        problem = (f"{rows.select(USER).n_unique()} user(s) have a non-finite {', '.join(which)} "
                   "(a number too large for a double: it became inf or NaN).")
        shown = rows.sort(USER, "k").select(pl.col(USER).alias(user_col), "k", *which).head(5)
    else:
        problem = "A summary mean is not finite: the per-user values are too large to add up as doubles."
        shown = means.head(5)
    raise NumericOverflowError(problem, rows=shown, hint=overflow_hint(conv, per_user=bool(rows.height)))


def overflow_hint(conv: Convention, per_user: bool) -> str:
    if conv.gain == "exp2" and per_user:
        return ("gain='exp2' gives 2^relevance - 1, which overflows above relevance 1023: use "
                "convention.replace(gain='linear'), or rescale the relevance.")
    return "Rescale the relevance values to a smaller range."


def excluded(prep: Prepared, counts: dict[str, int], conv: Convention) -> pl.DataFrame:
    """Count every user some mean leaves out, one row per cause: outside the ``users`` rule, no judged
    item under unjudged='drop', or undefined by an empty rule; ``code`` is stable, ``reason`` readable."""
    everyone, universe = prep.user_counts(conv.users)
    rows = [("outside_users", f"in one input only, outside users={conv.users!r}", everyone - universe)]
    if conv.unjudged == "drop":
        rows.append(("unjudged", "no judged item (unjudged='drop')", universe - counts["users"]))
    if conv.empty_labels == "nan":
        rows.append(("no_labels", "no relevant label (empty_labels='nan')", counts["no_labels"]))
    if conv.empty_predictions == "nan":
        rows.append(("no_predictions", "labels but no recommendation (empty_predictions='nan')",
                     counts["no_predictions"]))
    if conv.zero_ideal == "nan":
        rows.append(("zero_ideal", "ndcg only: ideal DCG is 0 (zero_ideal='nan'), any k", counts["zero_ideal"]))
    return pl.DataFrame(rows, schema=EXCLUDED_SCHEMA, orient="row")


def stack_plans(frames: dict, column: str = RUN) -> pl.LazyFrame:
    """{run name: frame or plan} -> one plan with a leading ``run`` column (the names in the given order), for
    the tables a Result collects when first read (per_item)."""
    return pl.concat([frame.lazy().select(pl.lit(name, pl.String).alias(column), pl.all())
                      for name, frame in frames.items()])


def stack(frames: dict, column: str = RUN) -> pl.DataFrame:
    """{run name: frame} -> one frame with a leading ``run`` column (the names in the given order). The name
    column is set beside the frame's columns as they are: a select would copy columns chunked differently."""
    return pl.concat([pl.DataFrame([pl.repeat(name, frame.height, dtype=pl.String, eager=True).alias(column),
                                    *frame.get_columns()]) for name, frame in frames.items()])
