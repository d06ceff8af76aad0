"""``rankwise.evaluate``: validate, normalise once, run one engine, shape the two result frames."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from . import _duckdb_backend, _polars_backend, _spark_backend
from ._inputs import USER, Columns, Prepared, prepare
from .conventions import Convention, resolve
from .errors import ParameterError, UndefinedValueError
from .metrics import MetricRequest, internal_name, parse_request

# spark: pyspark is imported on first use only (rankwise[spark] extra)
BACKENDS = {"polars": _polars_backend, "duckdb": _duckdb_backend, "spark": _spark_backend}


@dataclass(frozen=True)
class Result:
    """What :func:`evaluate` returns.

    per_user: one row per evaluated user; the user column under its input name, then one Float64
        column per metric and k ("ndcg@10"), NaN where the convention leaves the value undefined.
    summary: metric, k, value (mean over users with a defined value), n_users (users in that mean).
    excluded: reason, n_users: every user that some mean leaves out, and why.
    convention: the Convention used.
    """

    per_user: pl.DataFrame
    summary: pl.DataFrame
    excluded: pl.DataFrame
    convention: Convention
    prepared: Prepared | None = field(default=None, repr=False, compare=False)  # for write()'s fingerprint

    def __repr__(self) -> str:
        return f"rankwise.Result\n{self.summary}\nexcluded:\n{self.excluded}"

    def write(self, target, *, mode: str = "append", prefix: str = "rankwise_") -> dict:
        """Write per_user (long) and summary with run metadata to a postgresql:// URI, a .duckdb file
        or .parquet/.csv/.jsonl files; the schema is documented in ``rankwise._write``."""
        from ._write import write

        return write(self, target, mode=mode, prefix=prefix)


def evaluate(
    recommendations,
    ground_truth,
    k=10,
    metrics=None,
    *,
    backend: str = "polars",
    convention: str | Convention = "default",
    user_col: str = "user",
    item_col: str = "item",
    rank_col: str = "rank",
    score_col: str = "score",
    relevance_col: str = "relevance",
    collect: bool = True,
    memory_limit: str | int | None = None,
) -> Result:
    """Evaluate ranked recommendations against ground truth.

    Parameters
    ----------
    recommendations : long table (user, item, rank or score) or list form (user, list of items in
        rank order); a Polars DataFrame/LazyFrame, pandas DataFrame, PyArrow Table, DuckDB relation,
        or a Parquet/CSV path. With scores, rank = position by score descending, ties by the
        convention's ``ties`` rule.
    ground_truth : long table (user, item, optional relevance, default 1) or list form.
    k : int or list of int; every k is computed in the same pass.
    metrics : names from ``rankwise.METRICS`` (and ``f<beta>``); None = all.
    backend : "polars" (lazy expressions), "duckdb" (the shipped SQL) or "spark" (the shipped SQL
        rendered for Spark, run by spark.sql; needs the rankwise[spark] extra).
    convention : a preset name (see ``rankwise.PRESETS``) or a ``Convention``.
    collect : False keeps ``per_user`` as a Spark DataFrame (backend="spark" only), for outputs too
        large to collect; summary and excluded are still Polars frames.
    memory_limit : cap on the engine's working memory, e.g. "2GB" or a number of bytes, for inputs
        larger than memory. DuckDB: ``SET memory_limit`` (spills to a temporary directory); Polars:
        runs the plan on the streaming engine (which has no hard cap; the input checks always
        stream). Results are identical to an uncapped run. Not for backend="spark" (size the
        Spark session instead).

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
    request = parse_request(metrics, k, conv.metrics, conv.name)
    engine = _engine(backend)
    columns = Columns(user_col, item_col, rank_col, score_col, relevance_col)
    recommendations, ground_truth = _from_spark(recommendations), _from_spark(ground_truth)
    prep = prepare(recommendations, ground_truth, columns, conv)
    if not collect:
        if backend != "spark":
            raise ParameterError("collect=False needs backend='spark'.", hint="Pass backend='spark', or collect=True.")
        return _spark_backend.evaluate_uncollected(prep, request, conv, user_col)
    long = _per_user(engine, prep, request.ks, conv, request.beta, memory_limit)
    _raise_on_error_values(long, conv, user_col)
    summary = engine.summary(long, conv, request.beta)
    return Result(
        per_user=_wide(long, request, user_col),
        summary=_tidy_summary(summary, request),
        excluded=_excluded(prep, long, conv),
        convention=conv,
        prepared=prep,
    )


def _engine(backend: str):
    if backend not in BACKENDS:
        raise ParameterError(f"Unknown backend {backend!r}.", hint=f"Use one of: {', '.join(BACKENDS)}.")
    return BACKENDS[backend]


def _per_user(engine, prep: Prepared, ks, conv: Convention, beta: float, memory_limit) -> pl.DataFrame:
    if memory_limit is None:
        return engine.per_user(prep, ks, conv, beta)
    if engine is _spark_backend:
        raise ParameterError("memory_limit applies to backend='polars' or 'duckdb'.",
                             hint="Size the Spark session (spark.driver.memory) instead.")
    if not isinstance(memory_limit, (int, str)) or isinstance(memory_limit, bool):
        raise ParameterError(f"memory_limit must be a size like '2GB' or a number of bytes, got {memory_limit!r}.",
                             hint="Pass memory_limit='2GB'.")
    return engine.per_user(prep, ks, conv, beta, memory_limit=memory_limit)


def _from_spark(data):
    """A Spark DataFrame input is collected to Polars (through Arrow); anything else passes."""
    return _spark_backend.to_polars(data) if _spark_backend.is_spark_dataframe(data) else data


def _wide(long: pl.DataFrame, request: MetricRequest, user_col: str) -> pl.DataFrame:
    """(user, k) rows -> one row per user, one column per metric@k.

    Every evaluated user has exactly one row per k, so each k's rows sorted by user line up row for
    row: six 1M-row sorts and a horizontal concat instead of sorting (user, k) pairs (half the time).
    """
    needed = list(dict.fromkeys(internal_name(name) for name in request.names))
    values = long.lazy().select(USER, "k", *[pl.col(n).cast(pl.Float64).fill_null(float("nan")) for n in needed])
    per_k = pl.collect_all([
        values.filter(pl.col("k") == k).sort(USER).select(
            pl.col(USER).alias(user_col), *[pl.col(internal_name(n)).alias(request.column(n, k)) for n in request.names])
        for k in request.ks
    ])
    users = per_k[0].get_column(user_col)
    if any(not frame.get_column(user_col).equals(users) for frame in per_k[1:]):
        raise RuntimeError("rankwise: the engine did not return one row per user and k")  # a bug, not bad input
    columns = [user_col] + [request.column(n, k) for n in request.names for k in request.ks]
    return pl.concat([per_k[0]] + [frame.drop(user_col) for frame in per_k[1:]], how="horizontal").select(columns)


def _tidy_summary(summary: pl.DataFrame, request: MetricRequest) -> pl.DataFrame:
    order = {internal_name(n): i for i, n in enumerate(request.names)}
    public = {internal_name(n): n for n in request.names}
    return (
        summary.filter(pl.col("metric").is_in(list(order)))
        .with_columns(
            pl.col("metric").replace_strict(order, return_dtype=pl.Int64).alias("_order"),
            pl.col("metric").replace_strict(public, return_dtype=pl.String),
            pl.col("k").cast(pl.Int64),
            pl.col("value").cast(pl.Float64).fill_null(float("nan")),
            pl.col("n_users").cast(pl.Int64),
        )
        .sort("_order", "k")
        .select("metric", "k", "value", "n_users")
    )


def _raise_on_error_values(long: pl.DataFrame, conv: Convention, user_col: str) -> None:
    checks = [
        ("empty_labels", pl.col("n_rel") == 0, "have no relevant label"),
        ("empty_predictions", (pl.col("n_rel") > 0) & (pl.col("n_recs") == 0), "have no recommendation"),
    ]
    for knob, condition, what in checks:
        if getattr(conv, knob) != "error":
            continue
        bad = long.filter(condition).select(USER, "n_recs", "n_rel").unique(maintain_order=True)
        if bad.height:
            raise UndefinedValueError(
                f"{bad.height} users {what}, and the convention says {knob}='error'.",
                rows=bad.head(5).rename({USER: user_col}),
                hint=f"Filter those users out, or choose a value: convention.replace({knob}='nan').",
            )


def _excluded(prep: Prepared, long: pl.DataFrame, conv: Convention) -> pl.DataFrame:
    """Count every user some mean leaves out: outside the universe, or undefined by an empty rule."""
    everyone = prep.n_users_either()
    # every evaluated user has one row per k: the rows of one k list each user once
    users = long.filter(pl.col("k") == pl.col("k").first()).select(USER, "n_recs", "n_rel")
    rows = [(f"in one input only, outside users={conv.users!r}", everyone - users.height)]
    if conv.empty_labels == "nan":
        rows.append(("no relevant label (empty_labels='nan')", users.filter(pl.col("n_rel") == 0).height))
    if conv.empty_predictions == "nan":
        rows.append((
            "labels but no recommendation (empty_predictions='nan')",
            users.filter((pl.col("n_rel") > 0) & (pl.col("n_recs") == 0)).height,
        ))
    if conv.zero_ideal == "nan":
        zero = long.filter(pl.col("n_rel") > 0, pl.col("n_recs") > 0, pl.col("ndcg").is_null())
        rows.append(("ndcg only: ideal DCG is 0 (zero_ideal='nan'), any k", zero.select(USER).n_unique()))
    return pl.DataFrame(rows, schema={"reason": pl.String, "n_users": pl.Int64}, orient="row")
