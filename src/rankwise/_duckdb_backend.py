"""DuckDB backend: runs the shipped ``sql/per_user.sql`` and ``sql/summary.sql`` with bound parameters."""

from __future__ import annotations

import duckdb
import polars as pl

from . import _sql_files
from ._inputs import Prepared
from .conventions import Convention


def per_user(prep: Prepared, ks: tuple[int, ...], conv: Convention, beta: float,
             connection: duckdb.DuckDBPyConnection | None = None) -> pl.DataFrame:
    """Long per-user frame, the same columns as the Polars backend."""
    con = connection or duckdb.connect()
    con.register("recommendations", prep.recommendations)
    con.register("ground_truth", prep.ground_truth)
    con.register("cutoffs", pl.DataFrame({"k": list(ks)}, schema={"k": pl.Int64}))
    sql = _sql_files.read("per_user")
    return con.sql(sql, params=_sql_files.bind(sql, conv, beta)).pl()


def summary(per_user_long: pl.DataFrame, conv: Convention, beta: float,
            connection: duckdb.DuckDBPyConnection | None = None) -> pl.DataFrame:
    con = connection or duckdb.connect()
    con.register("per_user", per_user_long)
    sql = _sql_files.read("summary")
    return con.sql(sql, params=_sql_files.bind(sql, conv, beta)).pl()
