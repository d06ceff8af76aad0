"""``Result.write``: the per-user and summary frames, with run metadata, to files or warehouse tables.

Targets (``mode="append"`` adds a run to what is there, ``"replace"`` starts over):
- ``postgresql://user@host:port/db`` (or ``postgres://``): tables ``<prefix>per_user`` and
  ``<prefix>summary``; ``prefix`` may name a schema ("analytics.rankwise_"). Needs psycopg.
- ``runs.duckdb`` / ``runs.db``: the same two tables in a DuckDB database file.
- ``runs.parquet`` / ``runs.csv`` / ``runs.jsonl`` (``.ndjson``): two files,
  ``runs_per_user.<ext>`` and ``runs_summary.<ext>``.

Schema (stable: it does not depend on the metrics, the k values or the convention knobs):

    per_user: run_id, run_at, rankwise_version, convention, convention_knobs, inputs_fingerprint,
              user_id, metric, k, value
    summary:  run_id, run_at, rankwise_version, convention, convention_knobs, inputs_fingerprint,
              metric, k, value, n_users

run_id text (one per write), run_at UTC timestamp (microseconds), convention the preset name or
"custom", convention_knobs every knob as JSON (sorted keys), inputs_fingerprint a SHA-256 of the
canonical input tables (the same data gives the same fingerprint, whatever its container or column
names), user_id as text, metric as in the API ("precision", "f1", ...), value NULL when undefined
(the API's NaN; NULL keeps SQL means right). Appending to a table or file with other columns or
types raises :class:`WriteSchemaError`.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from .conventions import PRESETS
from .errors import MissingDependencyError, ParameterError, RankwiseError

METADATA = {
    "run_id": pl.String, "run_at": pl.Datetime("us", "UTC"), "rankwise_version": pl.String,
    "convention": pl.String, "convention_knobs": pl.String, "inputs_fingerprint": pl.String,
}
PER_USER_SCHEMA = {**METADATA, "user_id": pl.String, "metric": pl.String, "k": pl.Int64, "value": pl.Float64}
SUMMARY_SCHEMA = {**METADATA, "metric": pl.String, "k": pl.Int64, "value": pl.Float64, "n_users": pl.Int64}
_SQL_TYPES = {  # polars dtype -> (PostgreSQL DDL, information_schema name; DuckDB DDL/name)
    pl.String: ("TEXT", "text", "VARCHAR"), pl.Int64: ("BIGINT", "bigint", "BIGINT"),
    pl.Float64: ("DOUBLE PRECISION", "double precision", "DOUBLE"),
    pl.Datetime: ("TIMESTAMPTZ", "timestamp with time zone", "TIMESTAMP WITH TIME ZONE"),
}
_FILE_SUFFIXES = (".parquet", ".csv", ".jsonl", ".ndjson")


class WriteSchemaError(RankwiseError):
    """The existing table or file has other columns or types than rankwise writes."""


def fingerprint(prepared) -> str | None:
    """SHA-256 of the canonical input tables, rows sorted (order of the input does not matter)."""
    if prepared is None:
        return None
    digest = hashlib.sha256(b"rankwise-inputs-v1\n")
    for frame in (prepared.recommendations, prepared.ground_truth):
        ordered = frame.sort(frame.columns, nulls_last=False)
        digest.update(",".join(f"{c}:{d}" for c, d in ordered.schema.items()).encode() + b"\n")
        digest.update(ordered.write_csv(float_scientific=True, float_precision=17).encode())
    return digest.hexdigest()


def frames(result, run_at: datetime | None = None, run_id: str | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The two frames as written: long per-user rows and summary rows, metadata on every row."""
    from . import __version__

    if not isinstance(result.per_user, pl.DataFrame):
        raise ParameterError(
            "per_user is not a Polars DataFrame (evaluate(..., collect=False) keeps it in Spark).",
            hint="Write it with Spark (result.per_user.write...), or evaluate with collect=True.")
    knobs = result.convention.knobs()
    name = next((n for n, c in PRESETS.items() if c == result.convention), "custom")
    meta = {
        "run_id": run_id or uuid.uuid4().hex,
        "run_at": (run_at or datetime.now(timezone.utc)).astimezone(timezone.utc),
        "rankwise_version": __version__,
        "convention": name,
        "convention_knobs": json.dumps({k: _jsonable(v) for k, v in knobs.items()}, sort_keys=True),
        "inputs_fingerprint": fingerprint(getattr(result, "prepared", None)),
    }
    user_col = result.per_user.columns[0]
    long = result.per_user.unpivot(index=user_col, variable_name="column", value_name="value")
    split = pl.col("column").str.splitn("@", 2)
    per_user = long.select(
        pl.col(user_col).cast(pl.String).alias("user_id"),
        split.struct.field("field_0").alias("metric"),
        split.struct.field("field_1").cast(pl.Int64).alias("k"),
        pl.col("value").cast(pl.Float64).fill_nan(None),
    )
    summary = result.summary.select("metric", pl.col("k").cast(pl.Int64),
                                    pl.col("value").cast(pl.Float64).fill_nan(None), pl.col("n_users").cast(pl.Int64))
    return _with_meta(per_user, meta, PER_USER_SCHEMA), _with_meta(summary, meta, SUMMARY_SCHEMA)


def write(result, target, *, mode: str = "append", prefix: str = "rankwise_",
          run_at: datetime | None = None) -> dict:
    """Write ``result`` to ``target`` (see the module docstring); returns {frame: where it went}."""
    if mode not in ("append", "replace"):
        raise ParameterError(f"mode must be 'append' or 'replace', got {mode!r}.")
    per_user, summary = frames(result, run_at)
    target = str(target)
    if target.startswith(("postgresql://", "postgres://")):
        return _postgres(target, {f"{prefix}per_user": per_user, f"{prefix}summary": summary}, mode)
    path = Path(target)
    suffix = path.suffix.lower()
    if suffix in (".duckdb", ".db"):
        return _duckdb(path, {f"{prefix}per_user": per_user, f"{prefix}summary": summary}, mode)
    if suffix in _FILE_SUFFIXES:
        out = {}
        for what, frame in (("per_user", per_user), ("summary", summary)):
            file = path.with_name(f"{path.stem}_{what}{path.suffix}")
            _file(file, frame, mode)
            out[what] = str(file)
        return out
    raise ParameterError(
        f"Cannot tell where to write {target!r}.",
        hint="Use a postgresql:// URI, a .duckdb/.db file, or a .parquet/.csv/.jsonl path.")


# -- targets ----------------------------------------------------------------------------------------


def _file(path: Path, frame: pl.DataFrame, mode: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix.lower()
    exists = path.exists() and path.stat().st_size > 0 and mode == "append"
    if suffix == ".parquet":
        if exists:
            old = pl.read_parquet(path)
            _check(str(path), list(old.schema.items()), list(frame.schema.items()))
            frame = pl.concat([old, frame])
        frame.write_parquet(path)
    elif suffix == ".csv":
        if exists:
            with path.open() as handle:
                header = handle.readline().rstrip("\r\n").split(",")
            _check(str(path), header, frame.columns)
            with path.open("a") as handle:
                frame.write_csv(handle, include_header=False, float_precision=None)
        else:
            frame.write_csv(path)
    else:  # JSON lines
        if exists:
            with path.open() as handle:
                first = json.loads(handle.readline())
            _check(str(path), list(first), frame.columns)
            with path.open("a") as handle:
                frame.write_ndjson(handle)
        else:
            frame.write_ndjson(path)


def _duckdb(path: Path, tables: dict, mode: str) -> dict:
    import duckdb

    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    try:
        for table, frame in tables.items():
            expected = [(c, _sql_type(d)[2]) for c, d in frame.schema.items()]
            if mode == "replace":
                con.execute(f"DROP TABLE IF EXISTS {table}")
            existing = con.execute(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_name = ? ORDER BY ordinal_position", [table]).fetchall()
            if existing:
                _check(f"{path}:{table}", [tuple(r) for r in existing], expected)
            else:
                con.execute(f"CREATE TABLE {table} ({', '.join(f'{c} {t}' for c, t in expected)})")
            con.register("_rankwise_rows", frame)
            con.execute(f"INSERT INTO {table} SELECT * FROM _rankwise_rows")
            con.unregister("_rankwise_rows")
    finally:
        con.close()
    return {"per_user": f"{path}:{list(tables)[0]}", "summary": f"{path}:{list(tables)[1]}"}


def _postgres(uri: str, tables: dict, mode: str) -> dict:
    try:
        import psycopg
    except ImportError as error:
        raise MissingDependencyError("Writing to PostgreSQL needs psycopg.",
                                     hint='pip install "rankwise[engines]"  (or: pip install "psycopg[binary]>=3")') from error
    with psycopg.connect(uri, prepare_threshold=None) as con:  # one transaction: both tables or neither
        for table, frame in tables.items():
            schema, _, name = table.rpartition(".")
            expected = [(c, _sql_type(d)[1]) for c, d in frame.schema.items()]
            if mode == "replace":
                con.execute(f"DROP TABLE IF EXISTS {table}")
            existing = con.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s "
                "AND table_schema = COALESCE(NULLIF(%s, ''), current_schema()) ORDER BY ordinal_position",
                (name, schema)).fetchall()
            if existing:
                _check(f"{uri.split('@')[-1]} {table}", [tuple(r) for r in existing], expected)
            else:
                ddl = ", ".join(f"{c} {_sql_type(d)[0]}" for c, d in frame.schema.items())
                con.execute(f"CREATE TABLE {table} ({ddl})")
            with con.cursor().copy(f"COPY {table} ({', '.join(frame.columns)}) FROM STDIN") as copy:
                for row in frame.iter_rows():
                    copy.write_row(row)
    return {"per_user": f"{uri.split('@')[-1]} {list(tables)[0]}", "summary": f"{uri.split('@')[-1]} {list(tables)[1]}"}


# -- helpers -----------------------------------------------------------------------------------------


def _check(where: str, existing: list, expected: list) -> None:
    """Raise WriteSchemaError unless the existing columns (and types) are exactly the expected ones."""
    if [tuple(map(str, e)) if isinstance(e, tuple) else e for e in existing] == \
            [tuple(map(str, e)) if isinstance(e, tuple) else e for e in expected]:
        return
    raise WriteSchemaError(
        f"{where} exists with other columns than rankwise writes.\n"
        f"  existing: {_show(existing)}\n  expected: {_show(expected)}",
        hint="Write to a new table or file, or pass mode='replace' to start it over.")


def _show(columns: list) -> str:
    return ", ".join(" ".join(map(str, c)) if isinstance(c, tuple) else str(c) for c in columns)


def _sql_type(dtype):
    base = dtype.base_type() if hasattr(dtype, "base_type") else dtype
    return _SQL_TYPES[base]


def _with_meta(frame: pl.DataFrame, meta: dict, schema: dict) -> pl.DataFrame:
    return frame.with_columns(**{k: pl.lit(v, dtype=METADATA[k]) for k, v in meta.items()}) \
        .select(list(schema)).cast(schema)


def _jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value
