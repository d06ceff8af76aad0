"""``Result.write``: runs, per-user rows and summary, to files or warehouse tables, safely.

Targets (``mode="append"`` adds the run to what is there, ``"replace"`` starts over):
- ``postgresql://user@host:port/db`` (or ``postgres://``): tables ``<prefix>runs``,
  ``<prefix>per_user``, ``<prefix>summary``, ``<prefix>excluded`` (and ``<prefix>per_item``, see below); ``prefix`` may
  name a schema ("analytics.rankwise_", created if missing). Needs psycopg. One transaction: all the
  tables or none. An open psycopg ``Connection`` works too (the caller's: not closed; inside the
  caller's open transaction the write is a savepoint, committed when the caller commits).
- ``runs.duckdb`` / ``runs.db``: the same tables in a DuckDB file, one transaction; a file another
  process holds is retried for a few seconds, then :class:`WriteLockedError`.
- ``runs.parquet`` / ``runs.csv`` / ``runs.jsonl``: a dataset DIRECTORY of that name with one
  subdirectory per table and one immutable file per run (``run-<UTC time>-<run id>.parquet``), written
  in the hidden ``.rankwise-staging`` folder and renamed into place (atomic): concurrent writers and a
  killed writer lose nothing that was there, and a reader of a table folder never meets a partial file.
  A later write removes the staged files of writers that are gone (this host's processes no longer alive).
  Read one table with e.g. ``pl.scan_parquet("runs.parquet/per_user/*.parquet")``,
  ``read_parquet('runs.parquet/per_user/*.parquet')`` in DuckDB or ``spark.read.parquet(...)``.
  The runs file is written last: a run is complete when its row in ``runs`` exists. Append checks the
  columns of every file; replace removes only rankwise's files (by that name) and refuses to start while
  a file of someone else's is in a table folder (:class:`WriteSchemaError` when its columns differ).
- ``delta:path`` (or ``format="delta"``): one Delta Lake table per table under ``path``
  (``deltalake``, the ``delta`` extra): ACID appends that any Delta reader sees, runs last; a failed
  append deletes its rows again; replace appends the new run, then deletes the others' rows (runs
  first). A path with ``[ ] % ^ | \\`` (which deltalake misreads) is a :class:`ParameterError`.

``per_item`` and ``segments`` are written when the result has them (beyond-accuracy metrics:
``Result.per_item``; ``evaluate(segments=...)``: ``Result.segments``), with the same checks, staging and
transaction as the others; ``mode="replace"`` clears old ones too. In a database, replace empties the
tables (DELETE) and drops only one with rankwise's column names but other types; a table of one of
rankwise's names with other columns is someone else's: :class:`WriteSchemaError`.

Schema (stable: it does not depend on the metrics, the k values or the convention):

    runs:     run_id, run_name, run_at, rankwise_version, convention, convention_knobs,
              inputs_fingerprint, n_users, metrics, ks
    per_user: run_id, run_name, user_id, metric, k, value
    summary:  run_id, run_name, metric, k, value, n_users, ci_low, ci_high
    per_item: run_id, run_name, item_id, k, exposure, popularity
    segments: run_id, run_name, segment, metric, k, value, n_users, ci_low, ci_high
    excluded: run_id, run_name, code, reason, n_users (Result.excluded: every user a mean left out)

The knobs are stored once per run (``convention_knobs`` as JSON, sorted keys); ``run_name`` is the
run's name in a multi-run evaluate (one run: ``Result.run_name``, the recommendations
file's stem, else "run"); ``inputs_fingerprint`` a SHA-256 of the
canonical input tables; ``user_id`` and ``item_id`` text; ``value`` NULL where undefined. Appending to a table or
dataset with other columns raises :class:`WriteSchemaError` before anything is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import math
import os
import re
import socket
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from rankwise import _duckdb_connect
from rankwise.errors import InvalidIdentifierError, MissingDependencyError, ParameterError, WriteError, WriteLockedError, \
    WriteSchemaError

RUNS_SCHEMA = {
    "run_id": pl.String, "run_name": pl.String, "run_at": pl.Datetime("us", "UTC"), "rankwise_version": pl.String,
    "convention": pl.String, "convention_knobs": pl.String, "inputs_fingerprint": pl.String, "n_users": pl.Int64,
    "metrics": pl.String, "ks": pl.String,
}
PER_USER_SCHEMA = {"run_id": pl.String, "run_name": pl.String, "user_id": pl.String, "metric": pl.String,
                   "k": pl.Int64, "value": pl.Float64}
SUMMARY_SCHEMA = {"run_id": pl.String, "run_name": pl.String, "metric": pl.String, "k": pl.Int64,
                  "value": pl.Float64, "n_users": pl.Int64, "ci_low": pl.Float64, "ci_high": pl.Float64}
PER_ITEM_SCHEMA = {"run_id": pl.String, "run_name": pl.String, "item_id": pl.String, "k": pl.Int64,
                   "exposure": pl.Int64, "popularity": pl.Int64}
SEGMENTS_SCHEMA = {"run_id": pl.String, "run_name": pl.String, "segment": pl.String, **{
    name: dtype for name, dtype in SUMMARY_SCHEMA.items() if name not in ("run_id", "run_name")}}
EXCLUDED_SCHEMA = {"run_id": pl.String, "run_name": pl.String, "code": pl.String, "reason": pl.String,
                   "n_users": pl.Int64}
TABLES = {"runs": RUNS_SCHEMA, "per_user": PER_USER_SCHEMA, "summary": SUMMARY_SCHEMA, "per_item": PER_ITEM_SCHEMA,
          "segments": SEGMENTS_SCHEMA, "excluded": EXCLUDED_SCHEMA}
# runs last: a run is complete when its runs row exists; the optional tables only when the result has them
WRITE_ORDER = ("per_user", "summary", "per_item", "segments", "excluded", "runs")
OPTIONAL = ("per_item", "segments")
_SQL_TYPES = {  # polars dtype -> (PostgreSQL, DuckDB, Delta), as information_schema and Delta's schema spell them
    pl.String: ("text", "VARCHAR", "string"), pl.Int64: ("bigint", "BIGINT", "long"),
    pl.Float64: ("double precision", "DOUBLE", "double"),
    pl.Datetime: ("timestamp with time zone", "TIMESTAMP WITH TIME ZONE", "timestamp"),
}
TARGETS_HINT = ("Write to a postgresql:// URI or an open psycopg connection, a .duckdb/.db file, a "
                ".parquet/.csv/.jsonl dataset path, or delta:PATH.")
_FILE_FORMATS = {".parquet": "parquet", ".csv": "csv", ".jsonl": "ndjson", ".ndjson": "ndjson"}
_RUN_FILE = re.compile(r"run-\d{8}T\d{12}Z-[0-9a-f]{32}\.(?:parquet|csv|jsonl)")  # a dataset's files, by name
STAGING = ".rankwise-staging"  # a dataset's hidden folder of files being written (renamed into place when whole)
_HOST = re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname()) or "host"
# staged: <table>.<file>.<host>.<pid>.tmp in STAGING (before: .<file>.<pid>.tmp in the table's folder)
_STAGED = re.compile(r"[a-z_]*\.(?:" + _RUN_FILE.pattern + r")\.(?:(?P<host>.+)\.)?(?P<pid>\d+)\.tmp")
_PREFIX = re.compile(r"(?:([A-Za-z_][A-Za-z0-9_]{0,62})\.)?([A-Za-z_][A-Za-z0-9_]{0,40})?")  # fullmatch
_log = logging.getLogger("rankwise")
LOCK_RETRIES = 8  # DuckDB: 0.025 + 0.05 + ... + 3.2 s (6.4 s) of waiting for another writer
LOCK_WAIT = 0.025


def _pause(attempt: int) -> None:
    """The backoff before attempt ``attempt + 1`` of waiting for another writer: LOCK_WAIT doubled each time."""
    time.sleep(LOCK_WAIT * 2 ** attempt)


def fingerprint(prepared) -> str | None:
    """SHA-256 of the canonical input tables (their column types, then their rows as CSV text), rows
    sorted so that the order of the input does not matter: by the values themselves (v3; v2 sorted
    the text, 2-3x slower: 7.6 of a 100k-user report's 12 s), by their text for nested ids.

    Nested and binary ids are hashed through a canonical text form (hex for binary, JSON for
    structs and lists), so every id type gets a fingerprint."""
    if not isinstance(getattr(prepared, "recommendations", None), pl.DataFrame):
        return None  # inputs that stayed in Spark or PostgreSQL
    digest = hashlib.sha256(b"rankwise-inputs-v3\n")
    for frame in (prepared.recommendations, prepared.ground_truth):
        digest.update(",".join(f"{c}:{d}" for c, d in frame.schema.items()).encode() + b"\n")
        as_text = [_as_text(name, dtype) for name, dtype in frame.schema.items()]
        if any(dtype.is_nested() for dtype in frame.schema.values()):
            text = frame.select(as_text)
            text = text.sort(text.columns, nulls_last=False)
        else:  # (user, rank) and (user, item) are unique: a total order, whatever the sort's tie rule
            text = frame.sort(frame.columns, nulls_last=False).select(as_text)
        digest.update(text.write_csv(float_scientific=True, float_precision=17).encode())
    return digest.hexdigest()


def _as_text(name: str, dtype) -> pl.Expr:
    """Column ``name`` as text: binary as hex, structs and lists as JSON, anything else cast."""
    if dtype == pl.Binary:
        return pl.col(name).bin.encode("hex").alias(name)
    if isinstance(dtype, (pl.Struct, pl.List, pl.Array)):  # '{"v":<the value as JSON>}' -> the value
        return pl.struct(pl.col(name).alias("v")).struct.json_encode().str.slice(5).str.strip_suffix("}").alias(name)
    return pl.col(name).cast(pl.String)


def frames(result, run_at: datetime | None = None) -> dict[str, pl.DataFrame]:
    """{"runs", "per_user", "summary", "excluded"[, "per_item"][, "segments"]}: the frames as written (one
    run_id per run)."""
    from rankwise._version import __version__

    if not isinstance(_source(result), pl.DataFrame):
        raise ParameterError(
            f"per_user is not a Polars DataFrame (evaluate(..., collect=False) kept it in the engine: {result.long}).",
            hint="Write it with the engine (Spark: result.per_user.write...; PostgreSQL: it is a table already), "
                 "or evaluate with collect=True.")
    run_at = (run_at or datetime.now(timezone.utc)).astimezone(timezone.utc)
    names = list(result.prepared) or [None]
    ids = {name: uuid.uuid4().hex for name in names}
    labels = {name: name if name is not None else getattr(result, "run_name", None) or "run" for name in names}
    knobs = json.dumps({k: _jsonable(v) for k, v in result.convention.knobs().items()}, sort_keys=True)
    metrics, ks = ",".join(result.request.names), ",".join(map(str, result.request.ks))
    rows = _per_user_rows(result)
    run, run_id = _run_columns(rows, ids, labels)
    per_user = rows.select(run_id.alias("run_id"), run.alias("run_name"), "user_id", "metric",
                                             "k", "value").cast(PER_USER_SCHEMA)
    summary = result.summary.with_columns(run_id.alias("run_id"), run.alias("run_name")) \
        .with_columns(pl.col("value", "ci_low", "ci_high").fill_nan(None)).select(list(SUMMARY_SCHEMA)) \
        .cast(SUMMARY_SCHEMA)
    n_users = _n_users(result)
    runs = pl.DataFrame([{
        "run_id": ids[name], "run_name": labels[name], "run_at": run_at, "rankwise_version": __version__,
        "convention": result.convention.name, "convention_knobs": knobs,
        "inputs_fingerprint": result._fingerprints.get(name), "n_users": n_users.get(name, 0),
        "metrics": metrics, "ks": ks} for name in names], schema=RUNS_SCHEMA)
    excluded = result.excluded
    run, run_id = _run_columns(excluded, ids, labels)
    out = {"runs": runs, "per_user": per_user, "summary": summary,  # who each mean left out, and why
           "excluded": excluded.select(run_id.alias("run_id"), run.alias("run_name"), "code", "reason",
                                       "n_users").cast(EXCLUDED_SCHEMA)}
    if getattr(result, "per_item", None) is not None:
        items = result.per_item
        run, run_id = _run_columns(items, ids, labels)
        out["per_item"] = items.select(run_id.alias("run_id"), run.alias("run_name"),
                                       _as_text("item", items.schema["item"]).alias("item_id"), "k", "exposure",
                                       "popularity").cast(PER_ITEM_SCHEMA)
    if getattr(result, "segments", None) is not None and result.segments.width:
        run, run_id = _run_columns(result.segments, ids, labels)
        out["segments"] = result.segments.with_columns(run_id.alias("run_id"), run.alias("run_name")) \
            .with_columns(pl.col("value", "ci_low", "ci_high").fill_nan(None)).select(list(SEGMENTS_SCHEMA)) \
            .cast(SEGMENTS_SCHEMA)
    return out


def _run_columns(frame: pl.DataFrame, ids: dict, labels: dict) -> tuple[pl.Expr, pl.Expr]:
    """(run_name, run_id) of each row of a frame that has a run column when there are several runs; one
    run's name is ``labels[None]`` (``Result.run_name``: the recommendations file's stem, else "run")."""
    if "run" in frame.columns:
        return pl.col("run"), pl.col("run").replace_strict(ids, return_dtype=pl.String)
    return pl.lit(labels[None], dtype=pl.String), pl.lit(ids[None])


def _source(result):
    return result.long if hasattr(result, "long") else result.per_user


def _n_users(result) -> dict:
    """{run name (None for one run): users evaluated}: the users of the per-user frame, whatever the
    metrics (a catalog metric has no per-user rows, but its users are there)."""
    source = _source(result)
    run = ["run"] if "run" in source.columns else []
    user = result.user_col if hasattr(result, "long") else source.columns[len(run)]
    users = source.select(*run, _as_text(user, source.schema[user]).alias("\0user"))
    if run:
        return dict(users.group_by("run").agg(pl.col("\0user").n_unique()).iter_rows())
    return {None: users["\0user"].n_unique()}


def _per_user_rows(result) -> pl.DataFrame:
    """One row per (run, user, metric, k): [run,] user_id (text), metric, k, value (NaN -> NULL).

    From ``result.long`` (user column under the caller's name, k, n_recs, n_rel, one column per
    metric) or, without it, by unpivoting the wide ``result.per_user`` ("ndcg@10" columns)."""
    run = ["run"] if "run" in _source(result).columns else []
    if hasattr(result, "long"):
        user = _as_text(result.user_col, result.long.schema[result.user_col])
        metrics = [n for n in dict.fromkeys(result.request.names) if n in result.long.columns]  # catalog
        long = result.long.select(*run, user.alias("user_id"), "k", *metrics)  # metrics are summary rows only
        rows = long.unpivot(index=[*run, "user_id", "k"], variable_name="metric", value_name="value")
    else:
        user_col = result.per_user.columns[len(run)]
        wide = result.per_user.with_columns(_as_text(user_col, result.per_user.schema[user_col])) \
            .rename({user_col: "\0user"})
        rows = wide.unpivot(index=[*run, "\0user"], variable_name="column", value_name="value")
        split = pl.col("column").str.splitn("@", 2)
        rows = rows.select(*run, pl.col("\0user").alias("user_id"), split.struct.field("field_1").cast(pl.Int64)
                           .alias("k"), split.struct.field("field_0").alias("metric"), "value")
    return rows.with_columns(pl.col("value").cast(pl.Float64).fill_nan(None))


def write(result, target, *, mode: str = "append", prefix: str = "rankwise_", format: str | None = None,
          run_at: datetime | None = None) -> Written:
    """Write ``result`` to ``target`` (see the module docstring); returns {table: where it went}, whose
    ``description`` (also logged at INFO on the "rankwise" logger) names the run and the tables.

    ``prefix`` names database tables only (a ParameterError elsewhere); a naive ``run_at`` is local time."""
    if mode not in ("append", "replace"):
        raise ParameterError(f"mode must be 'append' or 'replace', got {mode!r}.")
    schema, table_prefix = _parse_prefix(prefix)
    if type(target).__module__.startswith("psycopg"):  # the caller's connection, as evaluate(backend=) takes it
        kind, where = "postgres", _psycopg_connection(target)
    elif isinstance(target, (str, os.PathLike)):
        kind, where = target_kind(os.fspath(target), format)
    else:
        raise ParameterError(f"Cannot write to a {type(target).__name__}.", hint=TARGETS_HINT)
    if prefix != "rankwise_" and kind not in ("postgres", "duckdb"):
        raise ParameterError(f"prefix={prefix!r} names database tables; a {kind} target has fixed table "
                             f"folders (runs/, per_user/, ...) under {str(where)!r}.",
                             hint="Drop prefix=, or choose the path itself (e.g. analytics/rw.parquet).")
    tables = frames(result, run_at)
    if kind == "postgres":
        out = _postgres(where, schema, table_prefix, tables, mode)
    elif kind == "duckdb":
        out = _duckdb(Path(where), schema, table_prefix, tables, mode)
    elif kind == "delta":
        out = _delta(Path(where), tables, mode)
    else:
        out = _dataset(Path(where), kind, tables, mode)
    written = Written(out)
    written.description = _describe(kind, where, table_prefix, tables, out)
    _log.info("%s", written.description)
    return written


class Written(dict):
    """{table: where it went}, and ``description``: one line naming the run(s) and the tables written."""

    description: str = ""


def _describe(kind: str, where, prefix: str, tables: dict, out: dict) -> str:
    """E.g. "wrote run 'recs' to runs.duckdb:main: tables rankwise_runs, rankwise_per_user, ..."."""
    names = tables["runs"]["run_name"].to_list()
    runs = ("runs " if len(names) > 1 else "run ") + ", ".join(map(repr, names))
    order = [name for name in TABLES if name in out]
    if kind in ("postgres", "duckdb"):  # out: "<where>:<schema>.<table>" / "<host:port/db> <schema>.<table>"
        location = out["runs"].removesuffix(prefix + "runs").removesuffix(".")
        return f"wrote {runs} to {location}: tables {', '.join(prefix + name for name in order)}"
    what = "Delta tables" if kind == "delta" else "folders"
    return f"wrote {runs} to {where}: {what} {', '.join(name + ('' if kind == 'delta' else '/') for name in order)}"


def target_kind(target: str, format: str | None = None) -> tuple[str, str]:
    """(kind, location): kind is postgres, duckdb, delta, parquet, csv or ndjson."""
    if format not in (None, "delta"):
        raise ParameterError(f"format must be None or 'delta', got {format!r}.",
                             hint="The other formats follow from the target: .parquet, .csv, .jsonl, .duckdb.")
    if target.startswith(("postgresql://", "postgres://")):
        return "postgres", target
    location = target.removeprefix("delta:").removeprefix("//") if target.startswith("delta:") else target
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", location):  # a path would collapse s3://b/x to ./s3:/b/x
        raise ParameterError(f"Cannot write to {target!r}: besides postgresql:// URIs, rankwise writes local "
                             "paths only (no object stores or other URIs).",
                             hint="Write to a local path (a .parquet/.csv/.jsonl dataset, a .duckdb file or "
                                  "delta:PATH) and copy it, or to a postgresql:// URI.")
    if target.startswith("delta:"):  # delta:runs, delta://runs, delta:///abs/runs
        _check_delta_path(location)
        return "delta", location
    path = Path(target)
    if format == "delta" or (path / "runs" / "_delta_log").is_dir():
        _check_delta_path(target)
        return "delta", target
    suffix = path.suffix.lower()
    if suffix in (".duckdb", ".db"):
        return "duckdb", target
    if suffix in _FILE_FORMATS:
        return _FILE_FORMATS[suffix], target
    raise ParameterError(
        f"Cannot tell where to write {target!r}: the suffix {suffix or '(none)'!r} is not one rankwise writes.",
        hint=TARGETS_HINT)


def _psycopg_connection(target):
    """The caller's psycopg Connection (written in a transaction of its own, or a savepoint of its open one)."""
    import psycopg

    if not isinstance(target, psycopg.Connection):
        raise ParameterError(f"Cannot write to a {type(target).__name__}: rankwise writes through a psycopg "
                             "Connection.", hint=TARGETS_HINT)
    return target


def _parse_prefix(prefix) -> tuple[str | None, str]:
    """'analytics.rankwise_' -> ('analytics', 'rankwise_'): letters, digits and underscores only."""
    match = _PREFIX.fullmatch(prefix) if isinstance(prefix, str) else None
    if match is None:
        raise InvalidIdentifierError(
            f"prefix {prefix!r} is not a plain identifier prefix (optionally 'schema.').",
            hint="Use letters, digits and underscores, e.g. prefix='rankwise_' or 'analytics.rankwise_'.")
    return match.group(1), match.group(2) or ""


# -- files: one immutable file per run and table -------------------------------------------------


def _dataset(root: Path, fmt: str, tables: dict, mode: str) -> dict:
    suffix = {"parquet": ".parquet", "csv": ".csv", "ndjson": ".jsonl"}[fmt]
    if root.exists() and not root.is_dir():
        raise WriteError(
            f"{str(root)!r} is a file; rankwise 0.2 writes a dataset directory of that name (one file per run).",
            hint=f"Move the old file away (e.g. to {root.name}.v01{root.suffix}), or write to another path.")
    # hidden entries (.DS_Store, .ipynb_checkpoints) are no one's data: readers' globs skip them too
    foreign = sorted(p.name for p in root.iterdir()
                     if not p.name.startswith(".") and (p.name not in TABLES or not p.is_dir())) \
        if root.is_dir() else []
    if foreign:
        raise WriteError(f"{str(root)!r} holds other files than rankwise's table folders: {', '.join(foreign[:5])}.",
                         hint=f"rankwise's dataset directory holds only {', '.join(f'{t}/' for t in TABLES)}: "
                              "write to another path.")
    run_id = tables["runs"]["run_id"][0]
    stamp = tables["runs"]["run_at"][0].strftime("%Y%m%dT%H%M%S%fZ")
    names = [name for name in WRITE_ORDER if name in tables]
    for name in TABLES if mode == "replace" else names:  # every existing file checked before writing anything
        _check_dataset(root / name, fmt, suffix, TABLES[name], mode)
    _remove_abandoned(root)
    staging = root / STAGING
    staged, out = {}, {}
    try:
        for name in names:  # 1. every table to a file in the hidden staging folder (no reader looks there)
            folder = root / name
            folder.mkdir(parents=True, exist_ok=True)
            staging.mkdir(exist_ok=True)
            final = folder / f"run-{stamp}-{run_id}{suffix}"
            staged[name] = (staging / f"{name}.{final.name}.{_HOST}.{os.getpid()}.tmp", final)
            _write_file(tables[name], staged[name][0], fmt)
        for name in names:  # 2. rename into place (same file system), runs last: microseconds between them
            os.replace(*staged[name])
            out[name] = str(staged[name][1])
        for folder in {root, staging, *(root / name for name in names)}:
            _fsync_directory(folder)
        if mode == "replace":  # the new run is complete: now drop rankwise's other files (old optional tables
            for name in ("runs", *WRITE_ORDER[:-1]):  # too), runs first: an old run is incomplete before its rows go
                folder = root / name
                for old in sorted(folder.iterdir()) if folder.is_dir() else []:
                    if _is_run_file(old.name, suffix) and (name not in staged or old.name != staged[name][1].name):
                        old.unlink(missing_ok=True)
    except BaseException as error:  # an error leaves nothing of this run behind (a kill -9: hidden .tmp files)
        if len(out) < len(names):
            for temporary, final in staged.values():
                with contextlib.suppress(OSError):
                    temporary.unlink(missing_ok=True)
                    if str(final) in out.values():
                        final.unlink()
        if isinstance(error, OSError):
            raise _write_error(root, error) from error
        raise
    return out


def _fsync_directory(folder: Path) -> None:
    """Make the renames durable (POSIX); a no-op where directories cannot be opened."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_file(frame: pl.DataFrame, path: Path, fmt: str) -> None:
    """Write and fsync: the bytes are on disk before the rename makes the file visible."""
    if fmt == "parquet":
        frame.write_parquet(path)
    elif fmt == "csv":
        frame.write_csv(path, float_precision=None)
    else:
        frame.write_ndjson(path)
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _check_dataset(folder: Path, fmt: str, suffix: str, schema: dict, mode: str) -> None:
    """Every file a reader's ``*<suffix>`` glob sees (hidden ones too) must have rankwise's columns
    (append), or be one rankwise wrote (replace: rankwise's files go, anyone else's stays, so replace
    refuses to start while one is there). A WriteSchemaError or WriteError names the file."""
    if folder.exists() and not folder.is_dir():
        raise WriteError(f"{str(folder)!r} should be a directory.", hint="Write to another path.")
    existing = sorted(p for p in folder.iterdir() if p.name.endswith(suffix) and p.is_file()) if folder.is_dir() else []
    expected = list(schema)
    for path in existing:
        ours = _is_run_file(path.name, suffix)
        if mode == "replace" and ours:
            continue  # replaced
        columns = _file_columns(path, fmt) or expected  # an empty .jsonl file: no rows, no columns
        if mode == "append" and ours:
            _check(str(path), columns, expected)
            continue
        foreign = (f"It was not written by rankwise (its name is not run-<time>-<run id>{suffix}): rankwise "
                   "neither writes beside it nor deletes it. Move it out of the folder, or write to another path.")
        _check(str(path), columns, expected, hint=foreign)
        if mode == "replace":  # rankwise's columns, someone else's file: replace would keep its rows
            raise WriteError(f"{str(path)!r} was not written by rankwise: mode='replace' would leave its rows "
                             "beside the new run.", hint=foreign)


def _file_columns(path: Path, fmt: str) -> list | None:
    """A dataset file's column names; None for an empty .jsonl file (a table of no rows)."""
    try:
        if fmt == "parquet":
            import pyarrow.parquet

            return pyarrow.parquet.read_schema(path).names  # polars would glob a '[' in the path
        with path.open() as handle:
            line = handle.readline()
        if fmt == "csv":
            return line.rstrip("\r\n").split(",")
        return None if not line.strip() else list(json.loads(line))
    except Exception as error:  # a corrupt file: say which
        raise WriteError(f"cannot read {str(path)!r} to check its columns: {error}",
                         hint="Remove the damaged file, or write to another path.") from error


def _is_run_file(name: str, suffix: str) -> bool:
    """A file rankwise wrote: run-<UTC time>-<run id><suffix>."""
    return name.endswith(suffix) and _RUN_FILE.fullmatch(name) is not None


def _remove_abandoned(root: Path) -> None:
    """Remove the staged files of writers that are gone (killed mid-write: ``kill -9``, a power loss):
    those of this host whose process no longer runs; another host's are left alone (POSIX only)."""
    if os.name != "posix":
        return
    for folder in (root / STAGING, *(root / name for name in TABLES)):  # earlier versions staged in the tables' folders
        for path in folder.iterdir() if folder.is_dir() else []:
            match = _STAGED.fullmatch(path.name)
            if match and match["host"] in (None, _HOST) and not _alive(int(match["pid"])):
                with contextlib.suppress(OSError):
                    path.unlink()


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (signal 0 checks without sending; another user's counts)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # PermissionError: someone else's process
        return True
    return True


def _write_error(path: Path, error: OSError) -> WriteError:
    blocker = next((p for p in [path, *path.parents] if p.exists() and not p.is_dir()), None)
    why = f"{str(blocker)!r} is a file, not a directory" if blocker else (error.strerror or str(error))
    return WriteError(f"cannot write {str(path)!r}: {why}.",
                      hint="Check that the directory is writable and that no part of the path is a file.")


# -- Delta Lake ----------------------------------------------------------------------------------------


def _delta(root: Path, tables: dict, mode: str) -> dict:
    """One Delta table per table, each write one ACID commit (delta-rs retries a commit that races).

    A run is complete when its runs row exists: append writes runs last and, on an error, deletes the
    run's rows from the tables already written; replace appends the new run the same way, then deletes
    every other run's rows, runs first (old runs become incomplete before their rows go). A table with
    other columns or types is a WriteSchemaError on append; replace overwrites it (starting over)."""
    try:
        import deltalake
        from deltalake.exceptions import DeltaError
    except ImportError as error:
        raise MissingDependencyError("Writing Delta Lake tables needs deltalake.",
                                     hint='pip install "rankwise[delta]"') from error
    for name in OPTIONAL:  # starting over clears an old optional table the result does not have
        if mode == "replace" and name not in tables and (root / name / "_delta_log").is_dir():
            tables = {**tables, name: pl.DataFrame(schema=TABLES[name])}
    names = [name for name in WRITE_ORDER if name in tables]
    ids = ", ".join(f"'{run_id}'" for run_id in tables["runs"]["run_id"])  # uuid hex: safe to quote
    out, overwrite = {}, set()
    try:
        for name in names:  # every check before any write
            location = root / name
            if _delta_being_created(location):
                _wait_for_delta_log(location)  # another writer is creating it: then append to it
            if (location / "_delta_log").is_dir():
                fields = [(f.name, getattr(f.type, "type", str(f.type)))
                          for f in deltalake.DeltaTable(str(location)).schema().fields]
                expected = [(c, _SQL_TYPES[d.base_type()][2]) for c, d in TABLES[name].items()]
                if mode == "replace" and fields != expected:
                    overwrite.add(name)
                else:
                    _check(str(location), fields, expected)
            elif location.exists() and (not location.is_dir() or any(location.iterdir())):
                raise WriteError(f"{str(location)!r} exists and is not a Delta table.",
                                 hint="Write to another path, or remove it.")
        try:
            for name in names:  # runs last
                how = {"mode": "overwrite", "schema_mode": "overwrite"} if name in overwrite else {"mode": "append"}
                deltalake.write_deltalake(str(root / name), tables[name].to_arrow(), **how)
                out[name] = str(root / name)
        except BaseException:
            if "runs" not in out:  # the run is incomplete: take its rows out of the tables it reached
                for name in out:
                    with contextlib.suppress(Exception):
                        deltalake.DeltaTable(out[name]).delete(f"run_id IN ({ids})")
            raise
        if mode == "replace":  # the new run is complete: every other run goes, its runs row first
            for name in sorted(out, key=lambda name: name != "runs"):
                if name not in overwrite:
                    deltalake.DeltaTable(out[name]).delete(f"run_id NOT IN ({ids})")
    except OSError as error:
        raise _write_error(root, error) from error
    except DeltaError as error:
        raise WriteError(f"cannot write the Delta table under {str(root)!r}: {str(error).splitlines()[0]}",
                         hint="A damaged _delta_log or a path that is not a Delta table: write to another path."
                         ) from error
    except BaseException as error:  # pyo3's PanicException is a BaseException: never let it escape
        if type(error).__name__ != "PanicException":
            raise
        raise WriteError(f"deltalake failed writing under {str(root)!r}: {str(error).splitlines()[0]}",
                         hint="Write to a plain local path (letters, digits, '-', '_', '/').") from None
    return out


def _delta_being_created(location: Path) -> bool:
    """A folder holding only Delta data files and no log yet: another writer creating the table (deltalake writes
    the data files first, then the log's first commit)."""
    log = location / "_delta_log"
    if not location.is_dir() or _has_commit(location):
        return False
    entries = [e for e in location.iterdir() if not e.name.startswith(".")]
    return bool(entries) and all(e == log and e.is_dir() or e.is_file() and e.name.endswith(".parquet") for e in entries)


def _wait_for_delta_log(location: Path) -> None:
    """Wait (backoff, as for a DuckDB file another process holds) for the log of a table another writer is creating;
    the caller's checks then see a Delta table, or, if none appears, what the folder is."""
    for attempt in range(LOCK_RETRIES):
        if _has_commit(location):
            return
        _pause(attempt)


def _has_commit(location: Path) -> bool:
    """The Delta table at ``location`` has a commit in its log."""
    return any((location / "_delta_log").glob("*.json"))


def _check_delta_path(location: str) -> None:
    """deltalake panics on some characters in a path and percent-decodes '%': refuse them up front."""
    bad = sorted({c for c in os.path.abspath(location) if c in "[]%^|\\" or ord(c) < 32 or ord(c) == 127})
    if bad:
        raise ParameterError(f"Cannot write Delta tables under {location!r}: deltalake misreads "
                             f"{', '.join(map(repr, bad))} in a path.",
                             hint="Write to a path without these characters (and rename it afterwards if need be).")


# -- DuckDB and PostgreSQL: one transaction ---------------------------------------------------------------


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _duckdb(path: Path, schema: str | None, prefix: str, tables: dict, mode: str) -> dict:
    import duckdb

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _write_error(path, error) from error
    con = _open_duckdb(duckdb, path)
    try:
        con.execute("BEGIN TRANSACTION")
        # names qualified by the database too: DuckDB names it after the file, so a schema named like
        # the file ("analytics" in analytics.duckdb) would be ambiguous
        catalog = _quote(con.execute("SELECT current_database()").fetchone()[0])
        if schema:
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {catalog}.{_quote(schema)}")
        where = schema or "main"
        existing = {}  # DuckDB folds case, quoted names too: compare lower-cased
        for table, column, dtype in con.execute(
                "SELECT lower(table_name), column_name, data_type FROM duckdb_columns() WHERE database_name = "
                "current_database() AND lower(schema_name) = lower(?) ORDER BY table_name, column_index",
                [where]).fetchall():
            existing.setdefault(table, []).append((column, dtype))
        names = [name for name in WRITE_ORDER if name in tables]
        found = {name: existing[(prefix + name).lower()] for name in TABLES if (prefix + name).lower() in existing}
        clear = _plan(f"{path}:{where}.{prefix}", found, 1, names, mode)  # every check before any write
        out = {}
        for name, how in clear.items():
            con.execute(f"{how} {catalog}.{_quote(where)}.{_quote(prefix + name)}")
        for name in names:
            table = f"{catalog}.{_quote(where)}.{_quote(prefix + name)}"
            columns = ", ".join(f"{_quote(c)} {_SQL_TYPES[d.base_type()][1]}" for c, d in TABLES[name].items())
            con.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")
            con.register("_rankwise_rows", tables[name])
            names = ", ".join(map(_quote, TABLES[name]))
            con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _rankwise_rows")
            con.unregister("_rankwise_rows")
            out[name] = f"{path}:{where}.{prefix + name}"
        con.execute("COMMIT")
        return out
    except Exception as error:
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        if isinstance(error, duckdb.Error):
            raise WriteError(f"DuckDB refused the write to {str(path)!r}: {str(error).splitlines()[0]}",
                             hint=DEPENDENT_HINT if isinstance(error, duckdb.DependencyException) else
                             "Nothing of this run was written (one transaction); write to another file "
                             "or prefix if the tables there are not rankwise's.") from error
        raise
    finally:
        con.close()


def _open_duckdb(duckdb, path: Path):
    """Open the file (extensions neither installed nor loaded: a SQLite file fetched ``sqlite_scanner``);
    another process holding it, or still writing a new file's headers (a file shorter than DuckDB's
    three 4 KiB header blocks that DuckDB calls invalid), is waited for (backoff), then WriteLockedError.
    A file of another known kind is a WriteError saying what it is."""
    kind = _foreign_database(path)
    if kind:
        raise WriteError(f"{str(path)!r} is {kind}, not a DuckDB database.",
                         hint="rankwise writes DuckDB files: write to a new .duckdb path.")
    for attempt in range(LOCK_RETRIES + 1):
        size_seen = _size(path)  # before DuckDB reads it: the creator may replace the file meanwhile
        try:
            return _duckdb_connect.connect(str(path))
        except duckdb.IOException as error:
            short = min(size_seen, _size(path)) < 3 * 4096
            being_created = "not a valid duckdb database" in str(error).lower() and short
            if "lock" not in str(error).lower() and not being_created:
                raise WriteError(f"cannot open {str(path)!r} as a DuckDB database: {str(error).splitlines()[0]}",
                                 hint="Is it a DuckDB file? Write to a new .duckdb path.") from error
            if attempt == LOCK_RETRIES and being_created:
                raise WriteError(f"cannot open {str(path)!r} as a DuckDB database: {str(error).splitlines()[0]}",
                                 hint="Is it a DuckDB file? Write to a new .duckdb path.") from error
            if attempt == LOCK_RETRIES:
                raise WriteLockedError(
                    f"{str(path)!r} is held by another process (waited {LOCK_WAIT * (2 ** LOCK_RETRIES - 1):.1f} s).",
                    hint="DuckDB allows one writing process per file: close the other connection, or "
                         "write each process to its own file and combine them later.") from error
            _pause(attempt)
        except duckdb.Error as error:
            raise WriteError(f"cannot open {str(path)!r} as a DuckDB database: {str(error).splitlines()[0]}",
                             hint="Is it a DuckDB file? Write to a new .duckdb path.") from error
    raise AssertionError("unreachable")


_MAGIC = {b"SQLite format 3\0": "a SQLite database", b"PAR1": "a Parquet file"}  # the file's first bytes


def _foreign_database(path: Path) -> str | None:
    """What ``path`` is when its first bytes say it is not a DuckDB database (None: unknown or absent)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError:
        return None
    return next((kind for magic, kind in _MAGIC.items() if head.startswith(magic)), None)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _postgres(target, schema: str | None, prefix: str, tables: dict, mode: str) -> dict:
    """A postgresql:// URI (connected and closed here) or the caller's connection (left open)."""
    try:
        import psycopg
        from psycopg import sql
    except ImportError as error:
        raise MissingDependencyError("Writing to PostgreSQL needs psycopg.",
                                     hint='pip install "rankwise[engines]"  (or: pip install "psycopg[binary]>=3")') from error
    try:
        if isinstance(target, str):
            info = psycopg.conninfo.conninfo_to_dict(target)
            where = f"{info.get('host', '')}:{info.get('port', '5432')}/{info.get('dbname', '')}"  # no password
            con = psycopg.connect(target, prepare_threshold=None,
                                  connect_timeout=int(info.get("connect_timeout", 10)))
        else:
            con, where = target, f"{target.info.host}:{target.info.port}/{target.info.dbname}"
    except (psycopg.Error, ValueError) as error:
        why = re.sub(r"(://[^:@/\s]*):[^@\s]*@", r"\1:***@", str(error).strip().splitlines()[0])  # no password
        raise WriteError(f"cannot connect to PostgreSQL: {why}",
                         hint="Check the URI: postgresql://user[:password]@host:port/database.") from error
    out = {}
    try:
        with con if isinstance(target, str) else contextlib.nullcontext(), con.transaction():  # all or none
            # one rankwise writer at a time per schema and prefix: concurrent CREATE TABLE IF NOT EXISTS races
            con.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"rankwise.write:{schema}.{prefix}",))
            if schema:
                con.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
            current = schema or con.execute("SELECT current_schema()").fetchone()[0]
            if current is None:
                raise WriteError("PostgreSQL has no current schema (no schema of search_path exists).",
                                 hint="Name one: prefix='analytics.rankwise_' (created if missing).")
            names = [name for name in WRITE_ORDER if name in tables]
            found = {}
            for name in TABLES:
                columns = con.execute(
                    "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = %s "
                    "AND table_name = %s ORDER BY ordinal_position", (current, prefix + name)).fetchall()
                if columns:
                    found[name] = [tuple(row) for row in columns]
            clear = _plan(f"{where} {current}.{prefix}", found, 0, names, mode)  # every check before any write
            for name, how in clear.items():
                con.execute(sql.SQL(how + " {}").format(sql.Identifier(current, prefix + name)))
            for name in names:
                table = sql.Identifier(current, prefix + name)
                columns = sql.SQL(", ").join(
                    sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(_SQL_TYPES[d.base_type()][0]))
                    for c, d in TABLES[name].items())
                con.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} ({})").format(table, columns))
                frame = tables[name]
                copy_sql = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT csv)").format(
                    table, sql.SQL(", ").join(map(sql.Identifier, frame.columns)))
                with con.cursor().copy(copy_sql) as copy:
                    copy.write(_csv(frame))
                out[name] = f"{where} {current}.{prefix + name}"
    except psycopg.Error as error:
        raise WriteError(f"PostgreSQL refused the write: {str(error).strip().splitlines()[0]}",
                         hint=DEPENDENT_HINT if isinstance(error, psycopg.errors.DependentObjectsStillExist) else
                         "Check the role's privileges (CREATE on the schema, INSERT on the tables).") from error
    return out


def _csv(frame: pl.DataFrame) -> str:
    """COPY's CSV: NULL is an unquoted empty field; timestamps in ISO 8601 with the offset."""
    buffer = io.StringIO()
    frame.write_csv(buffer, include_header=False, float_precision=None, datetime_format="%Y-%m-%dT%H:%M:%S%.f%:z")
    return buffer.getvalue()


# -- helpers -----------------------------------------------------------------------------------------

DEPENDENT_HINT = ("A view or other object depends on a table that replace drops (its column types differ from "
                  "rankwise's): drop that object first, or write with another prefix. Nothing was written.")


def _plan(where: str, found: dict, engine: int, names: list, mode: str) -> dict:
    """Check a database's existing tables ({name: [(column, type)]}) before any write; returns the
    statement that clears each for ``replace``: DELETE FROM (grants, indexes and views stay) where
    the columns are rankwise's, DROP TABLE where only the types differ. A table of one of rankwise's
    names with other column names is not rankwise's: refused by append (if written) and by replace."""
    clear = {}
    for name, columns in found.items():
        expected = [(c, _SQL_TYPES[d.base_type()][engine]) for c, d in TABLES[name].items()]
        if [c for c, _ in columns] != [c for c, _ in expected] and (mode == "replace" or name in names):
            _check(where + name, columns, expected, hint="It is not a rankwise table (other column names), so "
                   "rankwise neither writes to nor drops it: write with another prefix, or move that table.")
        if mode == "append" and name in names:
            _check(where + name, columns, expected)
        elif mode == "replace":
            clear[name] = "DELETE FROM" if [tuple(c) for c in columns] == expected else "DROP TABLE"
    return clear



def _check(where: str, existing: list, expected: list,
           hint: str = "Write to a new table or path, or pass mode='replace' to start it over.") -> None:
    """Raise WriteSchemaError unless the existing columns (and types) are exactly the expected ones."""
    norm = lambda cols: [tuple(map(str, c)) if isinstance(c, tuple) else str(c) for c in cols]  # noqa: E731
    if norm(existing) == norm(expected):
        return
    raise WriteSchemaError(
        f"{where} exists with other columns than rankwise writes.\n"
        f"  existing: {_show(existing)}\n  expected: {_show(expected)}", hint=hint)


def _show(columns: list) -> str:
    return ", ".join(" ".join(map(str, c)) if isinstance(c, tuple) else str(c) for c in columns)


def _jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value
