"""DuckDB backend: runs the shipped ``sql/per_user.sql`` and ``sql/summary.sql`` with bound parameters."""

from __future__ import annotations

import tempfile

import duckdb
import polars as pl

from . import _sql_files
from ._inputs import Prepared
from .conventions import Convention


def per_user(prep: Prepared, ks: tuple[int, ...], conv: Convention, beta: float,
             connection: duckdb.DuckDBPyConnection | None = None,
             memory_limit: str | int | None = None) -> pl.DataFrame:
    """Long per-user frame, the same columns as the Polars backend.

    ``memory_limit`` caps DuckDB's memory; joins, aggregates and windows spill to a temporary
    directory beyond it (removed afterwards).
    """
    con = connection or duckdb.connect()
    if memory_limit is None:
        return _per_user(con, prep, ks, conv, beta)
    with tempfile.TemporaryDirectory(prefix="rankwise-duckdb-") as spill:
        limit = f"{memory_limit}B" if isinstance(memory_limit, int) else memory_limit
        con.execute("SET memory_limit = ?", [limit])
        con.execute("SET temp_directory = ?", [spill])
        con.execute("SET preserve_insertion_order = false")  # lets operators stream and spill
        return _per_user(con, prep, ks, conv, beta)


def _per_user(con: duckdb.DuckDBPyConnection, prep: Prepared, ks, conv: Convention, beta: float) -> pl.DataFrame:
    for name in ("recommendations", "ground_truth"):
        if name in prep.sources:
            # the validated Parquet file, read by DuckDB itself (same renames and casts as the Polars
            # scan): no copy of a 100M-row table through Polars, and DuckDB can spill it
            con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {prep.sources[name]}")
        else:
            con.register(name, getattr(prep, name))
    con.register("cutoffs", pl.DataFrame({"k": list(ks)}, schema={"k": pl.Int64}))
    sql = _sql_files.read("per_user")
    return con.sql(sql, params=_sql_files.bind(sql, conv, beta)).pl()


def summary(per_user_long: pl.DataFrame, conv: Convention, beta: float,
            connection: duckdb.DuckDBPyConnection | None = None) -> pl.DataFrame:
    con = connection or duckdb.connect()
    con.register("per_user", per_user_long)
    sql = _sql_files.read("summary")
    return con.sql(sql, params=_sql_files.bind(sql, conv, beta)).pl()
