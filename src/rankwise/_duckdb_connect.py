"""Every DuckDB connection rankwise opens, in one place: extension auto-install and auto-load off.

DuckDB otherwise downloads and loads native code when a query or a file needs an extension it
knows (a SQLite file opened as a database fetches ``sqlite_scanner``). rankwise needs none beyond
those built into the wheel (parquet, json, icu), so it never fetches or loads one by itself.
"""

from __future__ import annotations

SETTINGS = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


def connect(database: str = ":memory:"):
    """A DuckDB connection to ``database`` (in memory by default) with :data:`SETTINGS`."""
    import duckdb

    return duckdb.connect(database, config=dict(SETTINGS))
