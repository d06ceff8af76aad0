"""The engine protocol: what the Polars, DuckDB, Spark and PostgreSQL engines each do, written down once.

An engine gets the canonical inputs (:class:`rankwise.inputs.normalize.Prepared`), one request and one
convention, and in ONE session (one lazy plan, one DuckDB connection, one Spark session) computes

- the per-user rows: one per (user, k) with ``user_id, k, n_recs, n_rel`` and one column per
  user-level metric in ``metrics.computed_columns(request)`` (NULL = undefined under the convention;
  the other metrics' columns may be absent or NULL), sorted by (k, user_id),
  as a Polars frame, or left in the engine when the caller does not collect and the engine
  ``keeps_results``;
- the summary over them (``sql/summary.sql`` or its Polars twin): ``metric, k, value, n_users, sd``
  (registry names; the mean over users with a defined value, their number and the sample standard
  deviation; F-beta by ``f_aggregation``, sd NULL for an F of means). Bit-identical run after run:
  the rows are summed in (k, user_id) order;
- the user counts that ``Result.excluded`` reports (:data:`COUNTS`), and, when the convention makes
  an empty input an error, the first few offending users.

Everything after that (the wide frame, the summary's order and names, ``excluded``, the error for
``empty_*="error"``, non-finite values) is done once for every engine by :mod:`rankwise.engines.shape`.
Engines never import :mod:`rankwise.api`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from rankwise.inputs.normalize import Prepared
from rankwise.conventions import Convention
from rankwise.metrics.declarations import MetricRequest

# Counts every engine returns, over the evaluated users (one row of the per-user table per user):
COUNTS = {
    "users": "users evaluated",
    "no_labels": "users with no relevant label (n_rel = 0)",
    "no_predictions": "users with relevant labels and no recommendation (n_rel > 0, n_recs = 0)",
    "zero_ideal": "users with labels and recommendations whose NDCG is undefined at some k",
    "longest": "the longest recommendation list (the largest n_recs; 0 without users)",
}
# An empty-input rule that can be 'error', and the users it applies to (SQL and Polars, one place)
EMPTY_RULES = (
    ("empty_labels", "n_rel = 0", pl.col("n_rel") == 0, "have no relevant label"),
    ("empty_predictions", "n_rel > 0 AND n_recs = 0", (pl.col("n_rel") > 0) & (pl.col("n_recs") == 0),
     "have no recommendation"),
)
EXAMPLES = 5  # offending users shown in an error
# an engine may evaluate users in ranges of about this many recommended rows within reach (:func:`user_ranges`) and
# join the ranges' frames end to end (:func:`end_to_end`): each range's joins and sorts hold a fraction of the
# input's (1M users x 100, the defaults, 5M against 10M rows a range: Polars 1.16-1.27 against 1.26-1.34 GB, DuckDB
# 1.27-1.30 against 1.38-1.49 GB, 0.7 s slower)
ROWS_PER_RANGE = 5_000_000


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do beyond the protocol; the API asks these, never which engine it is."""

    memory_limit: bool = False  # honours evaluate(memory_limit=...)
    keeps_results: bool = False  # evaluate(collect=False) leaves per_user in the engine
    native_frames: bool = False  # checks and normalises its own DataFrames (no trip through the driver)
    native_tables: bool = False  # takes table names / SELECT queries and evaluates them where they live
    reads_files: bool = False  # scans a recommendations file itself (Prepared.sources), not the Polars frame
    # computes a request's parameter values (MetricRequest.params) in the same run: a column and summary rows
    # per value, named Param.column (else evaluate() runs each value on its own, on the same prepared inputs)
    params: bool = False
    # the metrics it computes, by registry name (accuracy and beyond accuracy); None: every declared metric.
    # Every engine today computes every metric under every knob (inputs are normalised before it runs; what a
    # SQL engine cannot do on tables where they live is declared per dialect in rankwise.sqlgen.core.GAPS)
    metrics: frozenset[str] | None = None

    def computes(self, name: str) -> bool:
        """Whether the engine computes the metric ``name`` (a registry name, e.g. 'fbeta' for f1)."""
        return self.metrics is None or name in self.metrics


@dataclass(frozen=True)
class Output:
    """What one engine run returns (see the module docstring)."""

    per_user: Any  # pl.DataFrame, or the engine's own frame when not collected
    summary: pl.DataFrame
    counts: dict[str, int]
    empty_examples: dict[str, pl.DataFrame]  # knob -> first offending users, for rules set to 'error'


class Engine:
    """What every engine does; the defaults here are those of an engine that reads only the canonical
    frames and keeps nothing (Polars, DuckDB). The API calls only these."""

    name: str
    capabilities: Capabilities = Capabilities()

    @classmethod
    def claims(cls, backend: Any) -> bool:
        """Whether ``backend`` (anything but a registry name) is a target of this engine, bound by
        ``cls(backend)``: the PostgreSQL engine claims postgresql:// URIs and psycopg connections."""
        return False

    def run(self, prep: Prepared, request: MetricRequest, conv: Convention, *,
            memory_limit: int | None = None, collect: bool = True) -> Output:
        """Per-user rows, summary, counts and empty-rule examples in one session."""
        raise NotImplementedError

    def beyond(self, recs: pl.LazyFrame, truth, names, side, ks, conv: Convention, *,
               source: str | None, empty: pl.DataFrame | None, want_catalog: bool,
               memory_limit: int | None) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame | pl.LazyFrame]:
        """The beyond-accuracy tables of one run over the canonical recommendations (and ``truth`` for
        serendipity, the side inputs ``side``): (users: user_id, k, n_items, one column per user-level
        metric; catalog: metric, k, value, n_users; per_item: item_id, k, exposure, popularity, or a plan
        of them that Result.per_item collects when first read).
        ``source``: the recommendations file the engine may scan itself (``reads_files``); ``empty``:
        users with no list to add as empty lists; catalog rows only when ``want_catalog``.
        :func:`rankwise.engines.beyond.run` does what is common before and after."""
        raise NotImplementedError

    def native_inputs(self, recs: Any, truth: Any, columns, conv: Convention) -> Any:
        """The inputs as this engine takes them where they live (``native_frames``/``native_tables``),
        or None: they are read and checked in Python into the canonical frames."""
        return None

    def is_native(self, data: Any) -> bool:
        """Whether ``data`` is an input this engine evaluates in place (a Spark DataFrame, a table name)."""
        return False

    def kept_rows(self, kept: Any, request: MetricRequest, user_col: str) -> Any:
        """``run(collect=False)``'s per-user rows as the caller gets them (``keeps_results``)."""
        return kept

    def kept_wide(self, kept: Any, request: MetricRequest, user_col: str) -> Any:
        """Result.per_user of rows left in the engine: one row per user where the engine can pivot."""
        return kept

    def discard(self, kept: Any) -> None:
        """Engines that ``keeps_results``: drop what ``run(collect=False)`` left in the engine (its
        ``per_user``), when a later step of evaluate() fails and the caller never receives it."""


def error_rules(conv: Convention):
    """The EMPTY_RULES the convention sets to 'error'."""
    return [rule for rule in EMPTY_RULES if getattr(conv, rule[0]) == "error"]


# one grouping by user, not four COUNT(DISTINCT): Spark plans those as an Expand of every row
# four times and two more aggregations
COUNTS_SQL = """
SELECT CAST(COUNT(*) AS BIGINT) AS users,
       CAST(COALESCE(SUM(u.no_labels), 0) AS BIGINT) AS no_labels,
       CAST(COALESCE(SUM(u.no_predictions), 0) AS BIGINT) AS no_predictions,
       CAST(COALESCE(SUM(u.zero_ideal), 0) AS BIGINT) AS zero_ideal,
       CAST(COALESCE(MAX(u.n_recs), 0) AS BIGINT) AS longest
FROM (SELECT p.user_id, MAX(p.n_recs) AS n_recs,
             MAX(CASE WHEN p.n_rel = 0 THEN 1 ELSE 0 END) AS no_labels,
             MAX(CASE WHEN p.n_rel > 0 AND p.n_recs = 0 THEN 1 ELSE 0 END) AS no_predictions,
             MAX(CASE WHEN p.n_rel > 0 AND p.n_recs > 0 AND p.ndcg IS NULL THEN 1 ELSE 0 END) AS zero_ideal
      FROM {per_user} AS p
      WHERE p.user_id IS NOT NULL
      GROUP BY p.user_id) AS u
"""


def examples_sql(per_user: str, condition: str) -> str:
    return f"SELECT user_id, n_recs, n_rel FROM {per_user} WHERE k = (SELECT MIN(k) FROM {per_user}) " \
           f"AND {condition} ORDER BY user_id LIMIT {EXAMPLES}"


def polars_output(per_user: pl.DataFrame, summary: pl.DataFrame, conv: Convention) -> Output:
    """The Output of an engine that holds the per-user rows as a Polars frame."""
    return Output(per_user, summary, polars_counts(per_user), polars_examples(per_user, conv))


def polars_counts(long: pl.DataFrame) -> dict[str, int]:
    """COUNTS_SQL in Polars, for engines that hold the per-user rows as a Polars frame."""
    user = pl.col("user_id")
    # every user has a row at every k, and n_rel, n_recs do not depend on k: one k's rows count them
    first_k = pl.col("k") == pl.col("k").min()
    row = long.select(
        user.filter(first_k).n_unique().alias("users"),
        user.filter(first_k & (pl.col("n_rel") == 0)).n_unique().alias("no_labels"),
        user.filter(first_k & (pl.col("n_rel") > 0) & (pl.col("n_recs") == 0)).n_unique().alias("no_predictions"),
        user.filter((pl.col("n_rel") > 0) & (pl.col("n_recs") > 0) & pl.col("ndcg").is_null())
        .n_unique().alias("zero_ideal"),
        pl.col("n_recs").max().fill_null(0).alias("longest"),
    ).row(0, named=True)
    return {name: int(row[name]) for name in COUNTS}


def polars_examples(long: pl.DataFrame, conv: Convention) -> dict[str, pl.DataFrame]:
    first_k = long.filter(pl.col("k") == pl.col("k").min())
    return {knob: first_k.filter(condition).select("user_id", "n_recs", "n_rel").sort("user_id").head(EXAMPLES)
            for knob, _, condition, _ in error_rules(conv)}


def reach(ks, conv: Convention) -> int | None:
    """The last rank per_user reads: the largest k, or every rank (None) when RR looks for a first hit anywhere
    (rr_cutoff=False; sql: reach)."""
    return max(ks) if conv.rr_cutoff else None


def user_ranges(prep: Prepared, ks, conv: Convention) -> list[tuple[object, object]]:
    """The ranges of users an engine evaluates one at a time (Prepared.user_ranges), counting the rows it reads."""
    return prep.user_ranges(ROWS_PER_RANGE, reach(ks, conv))


def end_to_end(parts: list[pl.DataFrame], n_k: int) -> pl.DataFrame:
    """The per-user frames of consecutive user ranges (each in (k, user) order, ``n_k`` rows per user) as one frame
    in (k, user) order: each k's slice of every range in turn, without a copy."""
    if len(parts) == 1:
        return parts[0]
    per_k = [part.height // n_k for part in parts]
    return pl.concat([part.slice(i * n, n) for i in range(n_k) for part, n in zip(parts, per_k)], rechunk=False)
