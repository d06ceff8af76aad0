"""DuckDB engine: the shipped ``sql/per_user.sql`` and ``sql/summary.sql`` with bound parameters, in
one connection (see rankwise.engines.protocol for the protocol).

The per-user rows land in a temporary table sorted by (k, user_id); the summary, the user counts
and the empty-rule examples read that table in the same session, and only then are the rows
fetched as a Polars frame. The summary runs on one thread over the sorted table, so its sums are
bit-identical run after run (DuckDB's parallel AVG adds in whatever order the threads finish).
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack

import duckdb
import polars as pl

from rankwise import _duckdb_connect

from rankwise.sqlgen import files as _sql_files
from rankwise.engines.protocol import COUNTS, COUNTS_SQL, Capabilities, Output, error_rules, examples_sql
from rankwise.inputs.normalize import USER, Prepared
from rankwise.conventions import Convention
from rankwise.errors import RankwiseError
from rankwise.metrics.declarations import USER_LEVEL, MetricRequest, computed_columns


class DuckDBEngine:
    name = "duckdb"
    capabilities = Capabilities(memory_limit=True)

    def run(self, prep: Prepared, request: MetricRequest, conv: Convention, *,
            memory_limit: int | None = None, collect: bool = True) -> Output:
        """``memory_limit`` caps DuckDB's memory; joins, aggregates and windows spill to a temporary
        directory beyond it (removed afterwards)."""
        with ExitStack() as stack:
            con = stack.enter_context(_duckdb_connect.connect())
            if memory_limit is not None:
                spill = stack.enter_context(tempfile.TemporaryDirectory(prefix="rankwise-duckdb-"))
                con.execute("SET memory_limit = ?", [f"{memory_limit}B"])
                con.execute("SET temp_directory = ?", [spill])
            try:
                return _run(con, prep, request, conv)
            except duckdb.OutOfMemoryException as error:
                raise RankwiseError(
                    f"DuckDB ran out of memory: {str(error).splitlines()[0]}",
                    hint="Raise memory_limit, or free memory; DuckDB spills joins and sorts to disk, "
                         "but some operators need their working set in memory.") from error


def _run(con: duckdb.DuckDBPyConnection, prep: Prepared, request: MetricRequest, conv: Convention) -> Output:
    for name in ("ground_truth", "recommendations"):
        if name == "recommendations" and prep.rec_lists is not None:
            # list form: DuckDB finds the rows that can earn on the lists (sql/list_rows.sql) instead
            # of reading every row (1M users x 100: 100M rows)
            con.register("rec_lists", prep.rec_lists)
            con.execute(f"CREATE OR REPLACE TEMP TABLE recommendations AS {_sql_files.read('list_rows')}")
        elif name in prep.sources:
            # the validated Parquet file, read by DuckDB itself (same renames and casts as the Polars
            # scan): no copy of a 100M-row table through Polars, and DuckDB can spill it
            con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {prep.sources[name]}")
        else:
            con.register(name, getattr(prep, name))
    con.register("cutoffs", pl.DataFrame({"k": list(request.ks)}, schema={"k": pl.Int64}))
    sql = _sql_files.read("per_user")
    # the metrics not computed are NULL: DuckDB then leaves out the statistics only they read
    computed = computed_columns(request)
    columns = ", ".join(f"rows.{m}" if m in computed else f"CAST(NULL AS DOUBLE) AS {m}" for m in USER_LEVEL)
    con.execute(f"CREATE TEMP TABLE per_user AS SELECT rows.user_id, rows.k, rows.n_recs, rows.n_rel, {columns} "
                f"FROM ({sql}) AS rows ORDER BY rows.k, rows.user_id", _sql_files.bind(sql, conv, request.beta))
    threads = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    con.execute("SET threads = 1")  # one thread over the sorted rows: the same sums every run
    summary_sql = _sql_files.read("summary")
    summary = con.sql(summary_sql, params=_sql_files.bind(summary_sql, conv, request.beta, f_name="fbeta")).pl()
    counts = dict(zip(COUNTS, con.execute(COUNTS_SQL.format(per_user="per_user")).fetchall()[0], strict=True))
    # the caller's user type back (DuckDB returns a categorical as text, a UTC time zone as Etc/UTC)
    typed = pl.col(USER).cast(prep.user_dtype)
    examples = {knob: con.sql(examples_sql("per_user", condition)).pl().with_columns(typed)
                for knob, condition, _, _ in error_rules(conv)}
    con.execute(f"SET threads = {int(threads)}")
    return Output(con.sql("SELECT * FROM per_user").pl().with_columns(typed), summary, counts, examples)
