"""DuckDB engine: the shipped ``sql/per_user.sql`` and ``sql/summary.sql`` with bound parameters, in
one connection (see rankwise.engines.protocol for the protocol).

The per-user rows land in a temporary table sorted by (k, user_id); the summary, the user counts
and the empty-rule examples read that table in the same session, and only then are the rows
fetched as a Polars frame. A large input (Prepared.user_ranges) is evaluated one range of users at a
time instead, each range's rows fetched, and the summary, counts and examples read the frame of them
all: per_user.sql's stages that DuckDB holds in memory without spilling then hold one range's rows
(1M users x 100, the defaults: peak RSS 3.6 -> 1.3 GB). The summary runs on one thread over the
sorted rows, so its sums are bit-identical run after run (DuckDB's parallel AVG adds in whatever
order the threads finish).
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from contextlib import ExitStack, contextmanager

import duckdb
import polars as pl

from rankwise import _duckdb_connect
from rankwise.conventions import Convention
from rankwise.engines.beyond import NO_CATALOG
from rankwise.engines import protocol
from rankwise.engines.protocol import COUNTS, COUNTS_SQL, Capabilities, Engine, Output, end_to_end, error_rules, examples_sql
from rankwise.errors import RankwiseError
from rankwise.inputs.normalize import ITEM, USER, FileSource, Prepared
from rankwise.inputs.side import FEATURE, VALUE, SideInputs
from rankwise.metrics.beyond import STAGES, USER_COLUMNS
from rankwise.metrics.declarations import USER_LEVEL, MetricRequest, computed_columns
from rankwise.sqlgen import files as _sql_files


class DuckDBEngine(Engine):
    name = "duckdb"
    capabilities = Capabilities(memory_limit=True, reads_files=True, params=True)

    def run(self, prep: Prepared, request: MetricRequest, conv: Convention, *,
            memory_limit: int | None = None, collect: bool = True) -> Output:
        """``memory_limit`` caps DuckDB's memory; joins, aggregates and windows spill to a temporary
        directory beyond it (removed afterwards)."""
        with _session(memory_limit) as con:
            return _run(con, prep, request, conv)

    def beyond(self, recs, truth, names, side, ks, conv: Convention, *, source, empty, want_catalog,
               memory_limit):
        """sql/beyond_*.sql over the registered inputs (:func:`register`) in one connection."""
        with _session(memory_limit) as con:
            register(con, recs, side, ks, truth, source, empty)
            if set(names) & set(USER_COLUMNS):
                users = beyond_query(con, "beyond_user", conv).sort("k", USER)
            else:  # catalog metrics only: the rows beyond_user.sql gives, without its values (no one reads them)
                users = con.sql(_USER_ROWS).pl().sort("k", USER)
            catalog = beyond_query(con, "beyond_catalog", conv).sort("metric", "k") if want_catalog else NO_CATALOG
            items = beyond_query(con, "beyond_items", conv).sort("k", ITEM)
        return users, catalog, items


_SHARED: dict = {}  # {"pid": the process that opened it, "db": the connection} (see _session)
_SHARED_LOCK = threading.Lock()


@contextmanager
def _session(memory_limit: int | None):
    """One connection; under ``memory_limit`` (bytes) DuckDB spills to a temporary directory, removed
    after the connection closes. Running out of memory is a RankwiseError.

    Without ``memory_limit``, a session is a fresh cursor on one in-memory database kept for the process
    (opening a database costs 12-20 ms, a cursor 0.02 ms): its temporary tables and registered frames
    are the cursor's own and go when it closes. One session at a time uses it (a second thread, or a
    memory limit, opens its own database as before), so the global settings a session changes
    (threads, disabled_optimizers) are put back before the next one; after an error the database is
    dropped, so nothing a failed session left behind is seen again."""
    with ExitStack() as stack:
        shared = memory_limit is None and _SHARED_LOCK.acquire(blocking=False)
        if shared:
            stack.callback(_SHARED_LOCK.release)  # runs last: after the cursor closed
            if _SHARED.get("pid") != os.getpid():  # none yet, or inherited through fork: not usable here
                _SHARED.update(pid=os.getpid(), db=_duckdb_connect.connect())
            con = stack.enter_context(_SHARED["db"].cursor())
        spill = None if memory_limit is None else stack.enter_context(
            tempfile.TemporaryDirectory(prefix="rankwise-duckdb-"))
        if not shared:
            con = stack.enter_context(_duckdb_connect.connect())
        if memory_limit is not None:
            con.execute("SET memory_limit = ?", [f"{memory_limit}B"])
            con.execute("SET temp_directory = ?", [spill])
        try:
            yield con
            if shared:
                con.execute("RESET disabled_optimizers")  # set by register(); global in DuckDB
        except BaseException as error:
            if shared:
                _SHARED.clear()  # (the database closes when its last cursor does)
            if not isinstance(error, duckdb.OutOfMemoryException):
                raise
            raise RankwiseError(
                f"DuckDB ran out of memory: {str(error).splitlines()[0]}",
                hint="Raise memory_limit, or free memory; DuckDB spills joins and sorts to disk, "
                     "but some operators need their working set in memory.") from error

def _inputs(con: duckdb.DuckDBPyConnection, prep: Prepared, low=None, high=None) -> None:
    """The inputs per_user.sql reads, as ``recommendations`` and ``ground_truth``: of the users from ``low``
    (inclusive) to ``high`` (exclusive; None: unbounded)."""
    part = prep.of_users(low, high)
    for name in ("ground_truth", "recommendations"):
        if name == "recommendations" and prep.rec_lists is not None:
            # list form: DuckDB finds the rows that can earn on the lists (sql/list_rows.sql) instead
            # of reading every row (1M users x 100: 100M rows)
            con.register("rec_lists", part.rec_lists)
            con.execute(f"CREATE OR REPLACE TEMP TABLE recommendations AS {_sql_files.read('list_rows')}")
        elif select(prep.sources.get(name)):
            # the validated Parquet file, read by DuckDB itself (same renames and casts as the Polars
            # scan): no copy of a 100M-row table through Polars, and DuckDB can spill it; a range of users
            # reads the row groups that can hold them
            bounds = [f"user_id {op} {_literal(v)}" for op, v in ((">=", low), ("<", high)) if v is not None]
            where = f" WHERE {' AND '.join(bounds)}" if bounds else ""
            con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM ({select(prep.sources[name])}){where}")
        else:
            con.register(name, getattr(part, name))


def _literal(value) -> str:
    """A user id (an integer or a string) as a DuckDB literal."""
    return str(int(value)) if isinstance(value, int) else "'" + str(value).replace("'", "''") + "'"


def _run(con: duckdb.DuckDBPyConnection, prep: Prepared, request: MetricRequest, conv: Convention) -> Output:
    con.register("cutoffs", pl.DataFrame({"k": list(request.ks)}, schema={"k": pl.Int64}))
    # per_user.sql and summary.sql with only the metrics computed (their generated stages restricted: DuckDB
    # binds, plans and stores no other metric; the summary, counts and examples read no other column)
    computed = computed_columns(request)
    kept = [m for m in USER_LEVEL if m in computed]
    ranges = protocol.user_ranges(prep, request.ks, conv)
    if len(ranges) > 1 and conv.err_max_grade == 0 and "err" in computed:
        # ERR's g_max is the largest relevance of every label, not of a range's: bound as the knob (the same number)
        g_max = prep.largest_relevance()
        conv = conv if g_max is None or g_max <= 0 else conv.replace(err_max_grade=g_max)
    sql = _sql_files.restricted("per_user", frozenset(kept))
    rows_sql = (f"SELECT rows.user_id, rows.k, rows.n_recs, rows.n_rel{''.join(f', rows.{m}' for m in kept)} "
                f"FROM ({sql}) AS rows ORDER BY rows.k, rows.user_id")
    parameters = _sql_files.bind(sql, conv, request.beta, computed=computed)
    if len(ranges) == 1:
        _inputs(con, prep)
        con.execute(f"CREATE TEMP TABLE per_user AS {rows_sql}", parameters)
        ranged = None
    else:  # one range of users at a time, fetched; the summary, counts and examples then read the frame
        parts = []
        for low, high in ranges:
            _inputs(con, prep, low, high)
            parts.append(con.sql(rows_sql, params=parameters).pl())
        ranged = end_to_end(parts, len(request.ks))
        con.register("per_user", ranged)
    if request.params:
        if ranged is not None:
            _inputs(con, prep)  # param_families.sql: every user's rows, beside the per-user frame
        _param_rows(con, request, conv)
    threads = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    con.execute("SET threads = 1")  # one thread over the sorted rows: the same sums every run
    summary_sql = _sql_files.restricted("summary", frozenset(kept))
    summary = con.sql(summary_sql, params=_sql_files.bind(summary_sql, conv, request.beta, f_name="fbeta")).pl()
    if request.params:
        summary = pl.concat([summary, _param_summary(con, request)], how="vertical_relaxed")
    counts = dict(zip(COUNTS, con.execute(COUNTS_SQL.format(per_user="per_user")).fetchall()[0], strict=True))
    # the caller's user type back (DuckDB returns a categorical as text, a UTC time zone as Etc/UTC)
    typed = pl.col(USER).cast(prep.user_dtype)
    examples = {knob: con.sql(examples_sql("per_user", condition)).pl().with_columns(typed)
                for knob, condition, _, _ in error_rules(conv)}
    con.execute(f"SET threads = {int(threads)}")
    rows = (con.sql("SELECT * FROM per_user").pl() if ranged is None else ranged).with_columns(typed)
    if request.params:
        rows = rows.hstack(_param_columns(con, request, rows))
    return Output(rows, summary, counts, examples)


# -- a parameter family's values beside the convention's (MetricRequest.params) ----------------------


def param_sql(request: MetricRequest) -> str:
    """sql/param_families.sql for ``request.params``: each line after ``--@ <metric>`` written once per
    value i of that metric, with {i} (its column p<i>, statistic s<i>, parameter $value_<i>)."""
    out, metric = [], None
    for line in _sql_files.read("param_families").splitlines():
        if line.strip().startswith("--@"):
            metric = line.strip()[3:].strip()
            continue
        if metric is None:
            out.append(line)
        else:
            out += [line.replace("{i}", str(i)) for i, p in enumerate(request.params) if p.metric == metric]
        metric = None
    return "\n".join(out)


def _param_rows(con, request: MetricRequest, conv: Convention) -> None:
    """The values of ``request.params`` (param_sql) over the registered inputs and the per-user rows, into
    ``param_rows`` (user_id, k, p<i>) in the order of ``per_user``."""
    con.execute("CREATE TEMP VIEW evaluated AS SELECT p.user_id, p.k, p.n_recs, p.n_rel FROM per_user AS p")
    sql = param_sql(request)
    values = {f"value_{i}": float(p.value) for i, p in enumerate(request.params)}
    knobs = _sql_files.bind("\n".join(f"${n}" for n in _sql_files.parameters(sql) if n not in values), conv)
    con.execute(f"CREATE TEMP TABLE param_rows AS SELECT * FROM ({sql}) AS f ORDER BY f.k, f.user_id",
                knobs | values)


def _param_summary(con, request: MetricRequest) -> pl.DataFrame:
    """The summary rows of ``param_rows`` as summary.sql's of a mean (on the caller's one thread)."""
    parts = ", ".join(f"AVG(f.p{i}) AS value_{i}, COUNT(f.p{i}) AS n_users_{i}, STDDEV_SAMP(f.p{i}) AS sd_{i}"
                      for i in range(len(request.params)))
    per_k = con.sql(f"SELECT f.k, {parts} FROM param_rows AS f GROUP BY f.k").pl()
    return pl.concat([per_k.select(pl.lit(p.column).alias("metric"), "k", pl.col(f"value_{i}").alias("value"),
                                   pl.col(f"n_users_{i}").alias("n_users"), pl.col(f"sd_{i}").alias("sd"))
                      for i, p in enumerate(request.params)])


def _param_columns(con, request: MetricRequest, rows: pl.DataFrame) -> pl.DataFrame:
    """Each param's values as a column beside ``rows`` (per_user, in its order)."""
    values = con.sql("SELECT * FROM param_rows").pl()
    if values.height != rows.height:
        raise RuntimeError("rankwise: the parameter rows do not line up with the per-user rows")  # a bug
    return values.select(pl.col(f"p{i}").alias(p.column) for i, p in enumerate(request.params))


# -- a validated Parquet file scanned by DuckDB ----------------------------------------------------

_TYPES = {pl.Int8: "TINYINT", pl.Int16: "SMALLINT", pl.Int32: "INTEGER", pl.Int64: "BIGINT",
          pl.UInt8: "UTINYINT", pl.UInt16: "USMALLINT", pl.UInt32: "UINTEGER", pl.UInt64: "UBIGINT",
          pl.Float32: "FLOAT", pl.Float64: "DOUBLE", pl.String: "VARCHAR"}
_GLOB = re.compile(r"([*?\[])")


def select(source: FileSource | None) -> str | None:
    """The DuckDB SELECT of a :class:`FileSource` (None: no source, or a type with no plain DuckDB
    equivalent: the engine then reads the Polars frame)."""
    if source is None or any(dtype not in _TYPES for _, _, dtype in source.columns):
        return None
    parts = [f"CAST(1.0 AS {_TYPES[dtype]}) AS {name}" if column is None else
             f'CAST("{column.replace(chr(34), chr(34) * 2)}" AS {_TYPES[dtype]}) AS {name}'
             for name, column, dtype in source.columns]
    # DuckDB expands glob characters in every path: bracket them so that the path is read literally
    literal = _GLOB.sub(r"[\1]", source.path).replace("'", "''")
    return f"SELECT {', '.join(parts)} FROM read_parquet('{literal}', hive_partitioning = false)"


# -- beyond accuracy: the shipped sql/beyond_*.sql ------------------------------------------------



def register(con, recs, side: SideInputs, ks, truth=None, source: FileSource | None = None,
             empty: pl.DataFrame | None = None) -> None:
    """Register the relations sql/beyond_*.sql read: recommendations(user_id, rank, item_id, score),
    train, items, item_features, ground_truth, cutoffs (missing side inputs become empty tables), then
    compute the :data:`STAGES` once. ``source``: the :class:`FileSource` of the canonical recommendations
    (``Prepared.sources``), scanned by DuckDB instead of ``recs``, with the empty-list rows ``empty``
    (user_id, rank, item_id) added."""
    source = select(source)
    if source is not None:  # a validated Parquet file, scanned by DuckDB itself
        top = int(max(ks))
        rows = f"SELECT s.user_id, s.rank, s.item_id FROM ({source}) AS s"
        longest = con.execute(f"SELECT MAX(s.rank) FROM ({source}) AS s").fetchall()[0][0]  # the file's statistics
        if longest is not None and longest > top:
            # rows past max(k): read the file once and keep only the top max(k) of each list. Without
            # them every query scans the file (1M lists x 100 at k = 100: 2.5 GB less memory, ~0.6 s
            # faster than copying all 100M rows into a table; at k = 10 the table is faster)
            con.execute(f"CREATE OR REPLACE TEMP TABLE recommendation_rows AS {rows} WHERE s.rank <= {top}")
            rows = "SELECT t.user_id, t.rank, t.item_id FROM recommendation_rows AS t"
        if empty is not None and empty.height:
            con.register("empty_lists", empty)
            rows += " UNION ALL SELECT e.user_id, e.rank, e.item_id FROM empty_lists AS e"
        # no score in a file's scan: a constant in a view, not a stored column of NULLs
        con.execute("CREATE OR REPLACE TEMP VIEW recommendations AS SELECT r.user_id, r.rank, r.item_id, "
                    f"CAST(NULL AS DOUBLE) AS score FROM ({rows}) AS r")
        schema = recs.collect_schema()  # the types the source casts to
        uid, iid = schema[USER], schema[ITEM]
    else:
        # only the top max(k) of a list counts; a user's empty-list row (null rank) stays
        top = pl.col("rank").is_null() | (pl.col("rank") <= max(ks))
        recs = recs.lazy().filter(top).collect()
        if "score" not in recs.columns:
            recs = recs.with_columns(pl.lit(None, pl.Float64).alias("score"))
        uid, iid = recs.schema[USER], recs.schema[ITEM]
        con.register("recommendations", recs.select(USER, "rank", ITEM, pl.col("score").cast(pl.Float64)))
    iid = pl.Int64 if iid == pl.Null else iid
    con.register("train", side.train if side.train is not None else pl.DataFrame(schema={USER: uid, ITEM: iid}))
    con.register("items", side.items if side.items is not None else pl.DataFrame(schema={ITEM: iid}))
    con.register("item_features", side.long_features if side.has_features else
                 pl.DataFrame(schema={ITEM: iid, FEATURE: pl.String, VALUE: pl.Float64}))
    truth = truth.lazy().collect() if isinstance(truth, pl.LazyFrame) else truth
    con.register("ground_truth", truth.select(USER, ITEM, "relevance") if truth is not None else
                 pl.DataFrame(schema={USER: uid, ITEM: iid, "relevance": pl.Float64}))
    con.register("cutoffs", pl.DataFrame({"k": list(ks)}, schema={"k": pl.Int64}))
    # DuckDB would pre-aggregate the item side of the per-user join and merge aggregate states per list
    # row: 3.6 s of CPU at 10M rows against about 1 s for plain sums
    con.execute("SET disabled_optimizers = 'partial_aggregate_pushdown'")
    for name, table in STAGES.items():
        # exposure: (bucket, item) keys in a range of up to 2^24 are counted in an array, not a hash table
        # (2-3x faster; slower for the per-user sums, so only here)
        con.execute(f"SET perfect_ht_threshold = {24 if name == 'beyond_exposure' else 12}")
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {_sql_files.read(name)}")
    con.execute("RESET perfect_ht_threshold")


# beyond_user.sql's (user_id, k) rows: every user of the recommendations (one with items has one at rank 1,
# one with an empty list a NULL item row) at every cutoff
_USER_ROWS = ("SELECT u.user_id, CAST(c.k AS BIGINT) AS k FROM (SELECT DISTINCT r.user_id FROM recommendations AS r) "
              "AS u CROSS JOIN cutoffs AS c")


def beyond_query(con, name: str, conv: Convention) -> pl.DataFrame:
    """A sql/beyond_*.sql query over the registered relations (see :func:`register`)."""
    sql = _sql_files.read(name)
    return con.sql(sql, params=_sql_files.bind(sql, conv)).pl()
