"""PostgreSQL engine: the shipped SQL rendered for PostgreSQL, run inside the database.

``evaluate(..., backend="postgres")`` (connection from ``RANKWISE_POSTGRES`` or the libpq
environment: PGHOST, PGUSER, ...), ``backend="postgresql://..."``, or ``backend=`` an open psycopg
connection. Inputs:

- table names or SELECT queries (strings, validated as ``rankwise.sql`` validates them): checked by
  ``sql/checks.sql`` and normalised by the canonical views into temporary tables in the database;
  nothing leaves it but the results (:class:`PostgresInputs`);
- anything else ``evaluate`` takes (DataFrames, files): checked and normalised in Python, then
  copied into temporary tables with COPY.

Everything runs in one transaction that is rolled back at the end (temporary objects only), with
parallel workers off so that the sums are bit-identical run after run. With ``collect=False`` the
per-user rows stay in a table of the first non-temporary schema of the search path
(:class:`PostgresTable`), the transaction commits that one table, and the temporary objects are
dropped. Results come back through ``COPY (...) TO STDOUT`` as CSV, which PostgreSQL writes with
shortest round-trip float digits and Polars parses exactly. psycopg (the ``engines`` extra) is the
one driver: Result.write uses it too.
"""

from __future__ import annotations

import io
import os
import re
import uuid
from pathlib import Path
from dataclasses import dataclass, field

import polars as pl

from rankwise.engines import beyond as _beyond

from rankwise.sqlgen import checks as _checks

from rankwise.sqlgen import core as _sqlgen
from rankwise.engines.protocol import COUNTS, COUNTS_SQL, Capabilities, Engine, Output, error_rules, examples_sql
from rankwise.inputs.normalize import ITEM, RANK, REL, USER, Columns, no_order_column, require
from rankwise.conventions import Convention
from rankwise.engines.shape import overflow_hint
from rankwise.errors import (DtypeMismatchError, InvalidRankError, InvalidRelevanceError, InvalidScoreError,
                     MissingDependencyError, NumericOverflowError, ParameterError, RankwiseError)
from rankwise.metrics.declarations import USER_LEVEL, MetricRequest

_INSTALL = 'pip install "rankwise[engines]"  (psycopg 3)'
_PG_TYPES = {pl.Int8: "SMALLINT", pl.Int16: "SMALLINT", pl.Int32: "INTEGER", pl.Int64: "BIGINT",
             pl.UInt8: "SMALLINT", pl.UInt16: "INTEGER", pl.UInt32: "BIGINT", pl.UInt64: "NUMERIC(20)",
             pl.Int128: "NUMERIC(39)", pl.Float32: "DOUBLE PRECISION",
             pl.Float64: "DOUBLE PRECISION", pl.String: "TEXT", pl.Decimal: "NUMERIC", pl.Date: "DATE",
             pl.Boolean: "BOOLEAN"}  # Datetime: _pg_type
_TEXT_OID, _BOOLEAN, _UUID = 25, 16, 2950  # type OIDs
_INTEGER, _TEXT, _NUMBER = {20, 21, 23}, {_TEXT_OID, 1043, 1042}, {20, 21, 23, 700, 701, 1700}


def _psycopg():
    try:
        import psycopg
    except ImportError as error:
        raise MissingDependencyError("backend='postgres' needs psycopg, which is not installed.",
                                     hint=_INSTALL) from error
    return psycopg


def is_postgres_backend(backend) -> bool:
    return (isinstance(backend, str) and backend.startswith(("postgresql://", "postgres://"))) or \
        type(backend).__module__.startswith("psycopg")


@dataclass
class PostgresInputs:
    """Tables (or SELECT queries) that stay in the database; ``user_counts`` as Prepared's, once counted."""

    recommendations: str
    ground_truth: str
    columns: Columns
    counts: dict = field(default_factory=dict)

    def user_counts(self, users: str) -> tuple[int, int]:
        recs, truth, both = self.counts["recs"], self.counts["truth"], self.counts["both"]
        either = recs + truth - both
        return either, {"union": either, "labels": truth, "predictions": recs, "intersection": both}[users]


@dataclass(frozen=True)
class PostgresTable:
    """Per-user rows left in PostgreSQL by ``evaluate(..., collect=False)``: one row per (user, k) with
    user_id, k, n_recs, n_rel and a column per metric (NULL = undefined), as ``sql/per_user.sql``
    returns them. ``name`` is quoted and schema-qualified, ready for SQL; drop the table when done."""

    name: str

    def __str__(self) -> str:
        return self.name



# every transaction of the backend starts with these: no parallel workers (the same sums every run);
# no JIT, which compiles these wide queries for about 2 s each (bench/postgres_bench.py at 100k users:
# 9.4-10.6 s without, 12.3-13.1 s with; a 15-row beyond-accuracy query: 2.0 s of JIT, 3 ms without)
SETTINGS = {"max_parallel_workers_per_gather": "0", "jit": "off"}


def cursor(conn):
    """A cursor of rankwise's: rows as tuples, whatever row_factory the caller's connection has."""
    from psycopg.rows import tuple_row

    return conn.cursor(row_factory=tuple_row)


def settle(cur) -> dict:
    """Apply :data:`SETTINGS` to the cursor's transaction; the values they replace."""
    return set_local(cur, SETTINGS)


def set_local(cur, values: dict) -> dict:
    """SET LOCAL these settings; the values they replace (set_local them again to restore: e.g. the
    caller's values for the rest of a transaction a collect=False run commits a savepoint in)."""
    cur.execute(f"SELECT {', '.join('current_setting(%s)' for _ in values)}", list(values))
    before = dict(zip(values, cur.fetchone()))
    for name, value in values.items():
        cur.execute("SELECT set_config(%s, %s, true)", (name, value))
    return before


class PostgresEngine(Engine):
    """The rendered SQL in PostgreSQL, over tables that stay there or frames copied in (see the module)."""

    capabilities = Capabilities(native_tables=True, keeps_results=True)

    @classmethod
    def claims(cls, backend) -> bool:
        return is_postgres_backend(backend)

    def native_inputs(self, recs, truth, columns: Columns, conv: Convention):
        return postgres_inputs(recs, truth, columns, conv, self)

    def is_native(self, data) -> bool:
        return is_table_input(data)

    def __init__(self, target=None):
        if target is not None and not isinstance(target, str) and isinstance(target, _psycopg().AsyncConnection):
            raise ParameterError("backend= takes a psycopg Connection, not an AsyncConnection.",
                                 hint="Pass a psycopg.connect(...) connection or its postgresql:// URI.")
        self.target = target  # None: RANKWISE_POSTGRES or the libpq environment; a URI; a connection
        self.name = "postgres"

    def connect(self):
        psycopg = _psycopg()
        if self.target is not None and not isinstance(self.target, str):
            return _Borrowed(self.target)
        conninfo = self.target or os.environ.get("RANKWISE_POSTGRES", "")
        try:
            return psycopg.connect(conninfo)
        except psycopg.Error as error:
            raise RankwiseError(f"cannot connect to PostgreSQL: {str(error).strip().splitlines()[0]}",
                                hint="Check the URI (postgresql://user@host:port/db), or set RANKWISE_POSTGRES / "
                                     "PGHOST, PGPORT, PGUSER, PGDATABASE.") from error

    def run(self, prep, request: MetricRequest, conv: Convention, *,
            memory_limit: int | None = None, collect: bool = True) -> Output:
        psycopg = _psycopg()
        prefix = f"rankwise_{uuid.uuid4().hex[:12]}_"
        names = _sqlgen.relation_names(prefix, None, "postgres")
        stage = "inputs"
        with self.connect() as conn:
            try:
                # one transaction, rolled back (temporary objects only) unless the per-user table stays
                with conn.transaction(force_rollback=collect), cursor(conn) as cur:
                    before = settle(cur)
                    if isinstance(prep, PostgresInputs):
                        _native_views(cur, prep, conv, names)
                        user_dtype = None
                    else:
                        _upload(cur, names["recommendations"], prep.recommendations.select(USER, RANK, ITEM))
                        _upload(cur, names["ground_truth"], prep.ground_truth.select(USER, ITEM, REL))
                        user_dtype = prep.user_dtype
                    cur.execute(f"CREATE TEMP VIEW {names['cutoffs']} AS {_sqlgen.cutoffs_query(request.ks, 'postgres')}")
                    per_user_sql, summary_sql, _ = _sqlgen.queries(request.ks, conv, request.beta, "postgres", names)
                    table = names["per_user"]
                    schema = None if collect else _kept_schema(cur)
                    stage = "per_user"
                    cur.execute(f"CREATE {'TEMP ' if collect else ''}TABLE {_qualified(cur, schema, table)} AS "
                                f"SELECT * FROM ({per_user_sql}) AS r ORDER BY k, user_id")
                    stage = "summary"
                    summary = _fetch(cur, summary_sql)
                    cur.execute(COUNTS_SQL.format(per_user=table))
                    counts = dict(zip(COUNTS, cur.fetchone(), strict=True))
                    examples = {knob: _fetch(cur, examples_sql(table, condition), user_dtype)
                                for knob, condition, _, _ in error_rules(conv)}
                    if collect:
                        per_user = _fetch(cur, f"SELECT * FROM {table} ORDER BY k, user_id", user_dtype)
                    else:
                        _drop_temporary(cur, prefix)
                        per_user = PostgresTable(_qualified(cur, schema, table))
                        set_local(cur, before)
            except psycopg.Error as error:
                if stage == "inputs":  # the checks and views cast the scores and relevance to doubles
                    problem, hint = ("PostgreSQL overflowed reading the inputs (a score or relevance too large "
                                     "for a double).", "Rescale the scores or relevance values to a smaller range.")
                elif stage == "summary":
                    problem, hint = (f"A summary mean is not finite: the per-user {', '.join(request.names)} are "
                                     "too large to add up as doubles.", overflow_hint(conv, per_user=False))
                else:  # PostgreSQL raises where the other engines give inf: in any metric of the query
                    problem, hint = (f"PostgreSQL overflowed computing the per-user {', '.join(request.names)} (a "
                                     "number too large for a double, in this or another metric of the query).",
                                     overflow_hint(conv, per_user=True))
                raise typed_error(error, problem, hint, keeps=not collect) from error
        return Output(per_user, summary, {name: int(counts[name]) for name in COUNTS}, examples)

    def discard(self, kept: PostgresTable) -> None:
        """Drop a table :meth:`run` kept (collect=False) when the evaluation fails after it."""
        with self.connect() as conn, conn.transaction(), cursor(conn) as cur:
            cur.execute(f"DROP TABLE IF EXISTS {kept.name}")

    def beyond(self, recs: pl.LazyFrame, truth, names, side, ks, conv: Convention, *, source, empty,
               want_catalog, memory_limit):
        """The beyond-accuracy values (users, catalog, per_item) for ``_beyond.run``: the script
        rankwise.sql renders for PostgreSQL, run over the canonical frames copied into temporary
        tables, in one transaction rolled back at the end."""
        psycopg = _psycopg()

        prefix = f"rankwise_{uuid.uuid4().hex[:12]}_"
        frames, tables, ids = _beyond.script_inputs(recs, truth, side, prefix)
        script = _beyond.script(tables, names, ks, conv, "postgres", prefix)
        with self.connect() as conn:
            try:
                with conn.transaction(force_rollback=True), cursor(conn) as cur:
                    settle(cur)
                    for table, frame in frames.items():
                        _upload(cur, table, frame)
                    for statement in (*script.setup, *script.stages):  # evaluate() has checked the inputs
                        cur.execute(statement)
                    users, catalog, items = (_fetch(cur, query, *ids)  # ids as their types: NUMERIC(20) is no double
                                             for query in (script.per_user, script.catalog, script.per_item))
            except psycopg.Error as error:  # PostgreSQL raises where the other engines give inf
                raise typed_error(error, f"PostgreSQL overflowed computing {', '.join(names)} (a number too large "
                                         "for a double).",
                                  "Rescale the item feature values, scores or train counts to a smaller range.") from error
        return _beyond.typed(users, catalog, items, ids)


def _kept_schema(cur) -> str:
    """The schema a kept per-user table goes to: the first of the search path that exists and is not
    the session's temporary schema (a table there would be dropped with this run's temporary objects)."""
    cur.execute("SELECT s FROM unnest(current_schemas(false)) WITH ORDINALITY AS p(s, i) "
                "WHERE s::regnamespace <> pg_my_temp_schema() ORDER BY i LIMIT 1")
    row = cur.fetchone()
    if row is None:
        cur.execute("SHOW search_path")
        raise ParameterError(f"collect=False keeps the per-user rows in a table of the first schema of the "
                             f"search path, and it has none but the temporary one (search_path: {cur.fetchone()[0]}).",
                             hint="SET search_path TO a schema the role can CREATE in (e.g. public), or collect=True.")
    return row[0]


def _qualified(cur, schema: str | None, table: str) -> str:
    from psycopg import sql

    return table if schema is None else sql.Identifier(schema, table).as_string(cur.connection)


def _drop_temporary(cur, prefix: str) -> None:
    """Drop this run's temporary objects (they would outlive the call on a caller's connection)."""
    from psycopg import sql

    cur.execute("SELECT c.relname, c.relkind FROM pg_class AS c WHERE c.relnamespace = pg_my_temp_schema() "
                "AND starts_with(c.relname, %s) ORDER BY c.relkind = 'v' DESC", (prefix,))
    for name, kind in cur.fetchall():
        what = sql.SQL("VIEW" if kind == "v" else "TABLE")
        cur.execute(sql.SQL("DROP {} IF EXISTS {} CASCADE").format(what, sql.Identifier(name)))


def typed_error(error, overflow: str, overflow_hint: str, keeps: bool = False) -> RankwiseError:
    """The rankwise error of a psycopg error: an overflow (``overflow``: what overflowed), a refused
    privilege (``keeps``: the run keeps a table), or anything else (a missing table, a bad query)."""
    psycopg = _psycopg()
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if isinstance(error, psycopg.errors.NumericValueOutOfRange):
        return NumericOverflowError(overflow, hint=overflow_hint)
    if isinstance(error, psycopg.errors.InsufficientPrivilege):
        return RankwiseError(f"PostgreSQL refused: {first}",
                             hint="The role needs TEMP privilege on the database, SELECT on the input tables"
                                  + (" and CREATE on the schema of the per-user table (collect=False)." if keeps
                                     else "."))
    return RankwiseError(f"PostgreSQL: {first}",
                         hint="Inputs are table names (optionally schema.table, quoted as needed) or one "
                              "SELECT/WITH query; check that they exist and read.")


class _Borrowed:
    """A caller's connection used as a context manager that does not close it."""

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        return self.conn

    def __exit__(self, *exc):
        return False


_FILE_LIKE = (".parquet", ".pq", ".csv")
# a query: SELECT or WITH after any whitespace, opening parentheses and SQL comments
_QUERY = re.compile(r"(?:\s|\(|--[^\n]*(?:\n|$)|/\*(?:[^*]|\*(?!/))*\*/)*(?:select|with)\b", re.IGNORECASE)


def _is_file(data) -> bool:
    """A Path, or a string that names an existing file or directory, or (not a query) has a path
    separator or a data file suffix: read by rankwise, not a table name."""
    if isinstance(data, Path) or (isinstance(data, str) and os.path.exists(data)):
        return True
    return isinstance(data, str) and not _QUERY.match(data) and (
        os.sep in data or data.lower().endswith(_FILE_LIKE))


def is_table_input(data) -> bool:
    """A string naming a table or a SELECT query (a string that names an existing file is a file)."""
    return isinstance(data, str) and not _is_file(data)


def postgres_inputs(recs, truth, columns: Columns, conv: Convention, engine: PostgresEngine) -> PostgresInputs | None:
    """PostgresInputs when both inputs are strings naming tables or SELECT queries (a string that names
    an existing file is a file), else None (the inputs are read and checked in Python, then copied)."""
    is_table = [is_table_input(x) for x in (recs, truth)]
    if not all(is_table):
        if any(is_table):
            raise ParameterError("backend='postgres' takes both inputs as table names / queries, or both as data.",
                                 hint="Pass two table names (or SELECT queries), or two DataFrames/files.")
        return None
    if conv.min_score is not None:
        raise ParameterError("min_score is applied in Python, not in the database.",
                             hint="Pass the tables as DataFrames, or a convention with min_score=None.")
    return PostgresInputs(recs, truth, columns)


def _native_views(cur, inputs: PostgresInputs, conv: Convention, names: dict) -> None:
    """Check the caller's tables with sql/checks.sql, then materialise the canonical inputs over them
    (temporary tables) and count their users."""
    c = inputs.columns
    source = {"recommendations": inputs.recommendations, "ground_truth": inputs.ground_truth}
    r, t = (_columns(cur, _sqlgen.source_of(source[name], "postgres").sql("postgres")) for name in source)
    # a rank, score or relevance column the caller names must exist (else a misspelt one is ignored)
    require(r, [c.user, c.item], "recommendations", c, optional=("rank", "score"))
    require(t, [c.user, c.item], "ground truth", c, optional=("relevance",))
    # uuid ids are compared and returned as their text form (the tables' own form of a uuid)
    for name, cols in (("recommendations", r), ("ground_truth", t)):
        uuids = [column for column in (c.user, c.item) if cols.get(column) == _UUID]
        if uuids:
            source[name] = _with_casts(source[name], list(cols), dict.fromkeys(uuids, "TEXT"))
            cols.update(dict.fromkeys(uuids, _TEXT_OID))
    for column in (c.user, c.item):
        kinds = ["integer" if r[column] in _INTEGER else "text" if r[column] in _TEXT else "other",
                 "integer" if t[column] in _INTEGER else "text" if t[column] in _TEXT else "other"]
        if kinds[0] != kinds[1] or "other" in kinds:
            cur.execute("SELECT format_type(%s, NULL), format_type(%s, NULL)", (r[column], t[column]))
            types = cur.fetchone()
            problem = (f"unsupported type {types[0]} in both tables" if types[0] == types[1] and "other" in kinds
                       else f"types {types[0]} (recommendations) and {types[1]} (ground truth)")
            raise DtypeMismatchError(f"{column!r} has {problem}; ids must be both integers or both text.",
                                     hint=f"Cast them in a query, e.g. SELECT {column}::text AS {column}, ... "
                                          f"(or {column}::bigint for whole numbers).")
    by_score = c.rank not in r
    if by_score and c.score not in r:
        raise no_order_column(c, list(r), lists=False)
    if not by_score and r[c.rank] not in _INTEGER:
        raise InvalidRankError(f"recommendations: {c.rank!r} must be integer.", hint="Cast it, or pass score_col=.")
    if by_score and r[c.score] not in _NUMBER:
        raise InvalidScoreError(f"recommendations: {c.score!r} must be numeric to rank by it.",
                                hint="Cast the score to double precision.")
    has_relevance = c.relevance in t
    if has_relevance and t[c.relevance] == _BOOLEAN:
        # true = 1, false = 0, as for a DataFrame (PostgreSQL casts boolean to integer, not to double)
        source["ground_truth"] = _with_casts(source["ground_truth"], list(t), {c.relevance: "INT"})
    elif has_relevance and t[c.relevance] not in _NUMBER:
        raise InvalidRelevanceError(f"ground truth: {c.relevance!r} must be numeric.",
                                    hint="Cast the relevance to double precision.")
    rank_col, score_col = (None, c.score) if by_score else (c.rank, None)
    relevance_col = c.relevance if has_relevance else None
    for name, query in _checks.raw_views(source, "postgres", c.user, c.item, rank_col, score_col,
                                         relevance_col).items():
        cur.execute(f"CREATE TEMP VIEW {names[name]} AS {query}")
    # the checks group the rows by (user, item) and by (user, rank): about as many groups as rows, which
    # hash aggregates spill to disk batch by batch; sorting them is faster
    before = set_local(cur, {"enable_hashagg": "off"})
    _checks.raise_on_failed_checks(_fetch(cur, _checks.checks_query(conv, by_score, "postgres", names)))
    set_local(cur, before)
    # the canonical inputs materialised once (temporary tables, analysed): the per-user query reads the
    # recommendations more than once, and each read of a view would renumber the ranks again
    for name, query in _checks.input_views(source, "postgres", c.user, c.item, rank_col, score_col, relevance_col,
                                           conv).items():
        cur.execute(f"CREATE TEMP TABLE {names[name]} AS {query}")
        cur.execute(f"ANALYZE {names[name]}")
    # ranks are renumbered 1..n per user: a user of the recommendations is one row of rank 1
    cur.execute(
        f"SELECT (SELECT COUNT(*) FROM {names['recommendations']} WHERE rank = 1), COUNT(*), "
        f"COUNT(*) FILTER (WHERE EXISTS (SELECT FROM {names['recommendations']} AS r "
        f"WHERE r.rank = 1 AND r.user_id = t.user_id)) "
        f"FROM (SELECT DISTINCT user_id FROM {names['ground_truth']}) AS t")
    inputs.counts.update(zip(("recs", "truth", "both"), map(int, cur.fetchone())))


def _with_casts(source, columns: list, casts: dict) -> str:
    """A SELECT over the table or query ``source`` with every column, those of ``casts`` cast to its type."""
    _, exp = _sqlgen.sqlglot_api()
    cells = [exp.cast(exp.column(name, table="src", quoted=True), casts[name]).as_(name, quoted=True)
             if name in casts else exp.column(name, table="src", quoted=True) for name in columns]
    return exp.select(*cells).from_(_sqlgen.source_of(source, "postgres")).sql("postgres")


def _columns(cur, source_sql: str) -> dict:
    """{column: type OID} of a table or query, from a zero-row SELECT."""
    cur.execute(f"SELECT * FROM {source_sql} LIMIT 0")
    return {d.name: d.type_code for d in cur.description}


def _pg_type(name: str, dtype) -> str:
    """The PostgreSQL type a canonical column is copied into; ids of a type it cannot hold as Polars
    does (nanoseconds, bytes, nested) are a DtypeMismatchError."""
    if isinstance(dtype, pl.Datetime) and dtype.time_unit != "ns":
        return "TIMESTAMPTZ" if dtype.time_zone else "TIMESTAMP"
    if dtype.base_type() in _PG_TYPES:
        return _PG_TYPES[dtype.base_type()]
    what = {USER: "user ids", ITEM: "item ids"}.get(name, f"column {name!r}")
    raise DtypeMismatchError(f"The {what} are {dtype}, which backend='postgres' does not copy into PostgreSQL.",
                             hint="Cast them to integers or strings (or Datetime('us')), or use backend='duckdb'.")


def _upload(cur, table: str, frame: pl.DataFrame) -> None:
    """A canonical frame into a temporary table through COPY (CSV: NULL unquoted-empty, '' quoted)."""
    columns = ", ".join(f"{name} {_pg_type(name, frame.schema[name])}" for name in frame.columns)
    for name in (USER, ITEM):  # PostgreSQL text cannot hold the NUL character
        if name in frame.columns and frame.schema[name] == pl.String:
            bad = frame.filter(pl.col(name).str.contains("\x00", literal=True)).select(name).unique().head(5)
            if bad.height:
                raise DtypeMismatchError(
                    f"The {'user' if name == USER else 'item'} ids hold the NUL character (\\x00), which PostgreSQL "
                    "text cannot hold.", rows=bad.select(pl.col(name).str.replace_all("\x00", "\\x00", literal=True)
                                                    .alias("user" if name == USER else "item")),
                    hint="Replace it in the ids (pl.col(...).str.replace_all('\\x00', '')), or use backend='duckdb'.")
    cur.execute(f"CREATE TEMP TABLE {table} ({columns})")
    with cur.copy(f"COPY {table} FROM STDIN (FORMAT csv)") as copy:
        copy.write(frame.write_csv(include_header=False, float_scientific=True, float_precision=17))
    # autovacuum never analyses a temporary table: without statistics the planner takes every input for
    # a row or so and nests loops over the per-user query's CTEs (2,000 users: 90 s instead of 1)
    cur.execute(f"ANALYZE {table}")


def _fetch(cur, query: str, user_dtype=None, item_dtype=None) -> pl.DataFrame:
    """A query's rows as a Polars frame through COPY ... TO STDOUT (CSV), the id columns (user_id,
    item_id) read as the given types (a NUMERIC(20) UInt64 id read as a double loses its last digits)."""
    cur.execute(f"SELECT * FROM ({query}) AS q LIMIT 0")
    types = {d.name: d.type_code for d in cur.description}
    buffer = io.BytesIO()
    with cur.copy(f"COPY ({query}) TO STDOUT (FORMAT csv, HEADER)") as copy:
        for block in copy:
            buffer.write(block)
    schema = {name: pl.Int64 if oid in _INTEGER else pl.Float64 if oid in _NUMBER else pl.String
              for name, oid in types.items()}
    ids = {col: dtype for col, dtype in ((USER, user_dtype), (ITEM, item_dtype)) if col in schema and dtype is not None}
    # 't' / 'f' and '... +00' are parsed after reading
    as_text = {col: dtype for col, dtype in ids.items()
               if dtype == pl.Boolean or (isinstance(dtype, pl.Datetime) and dtype.time_zone)}
    schema.update({col: dtype for col, dtype in ids.items() if col not in as_text})
    buffer.seek(0)
    frame = pl.read_csv(buffer, schema=schema) if buffer.getbuffer().nbytes \
        else pl.DataFrame(schema=schema)
    for col, dtype in as_text.items():
        frame = frame.with_columns(pl.col(col) == "t" if dtype == pl.Boolean else pl.col(col).str.to_datetime(
            "%Y-%m-%d %H:%M:%S%.f%#z", time_unit=dtype.time_unit).dt.convert_time_zone(dtype.time_zone))
    metrics = [c for c in frame.columns if c in USER_LEVEL]
    return frame.with_columns(pl.col(metrics).cast(pl.Float64)) if metrics else frame
