"""rankwise.sql tables, schema and prefix: a name or one SELECT/WITH query, never pasted SQL.

Each hostile value is rendered; whatever renders is executed statement by statement on DuckDB and
on the throwaway PostgreSQL, next to a sentinel table (with one row), a sequence and a directory
where an injected ``COPY ... TO`` would leave a marker file. After every value: the sentinel and
its row are there, the sequence did not move, no marker exists, and no other file's rows entered
the result. A control test runs the injection directly to show the marker check can fail.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import duckdb
import polars as pl
import pytest

import rankwise
from rankwise.sqlgen import render

RECS = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 20], "rank": [1, 2, 1]})
TRUTH = pl.DataFrame({"user": [1, 2], "item": [11, 21], "relevance": [1.0, 1.0]})
# precision@2 by hand: user 1 has 1 hit in 2 -> 0.5; user 2 none -> 0; mean 0.25
PRECISION_AT_2 = 0.25


@pytest.fixture
def marker_dir():
    path = Path(tempfile.mkdtemp(prefix="rw_marker_"))
    path.chmod(0o777)  # the PostgreSQL server user may write here: an injection would leave its mark
    yield path
    for f in path.iterdir():
        f.unlink()
    path.rmdir()


def hostile(marker: Path, other_csv: Path, sentinel: str) -> list:
    """Values that must be refused (or, where noted by the caller, read as one quoted name)."""
    touch = f"COPY (SELECT 1) TO PROGRAM 'touch {marker}/MARKER'"
    return [
        'x"y',
        f"recs; DROP TABLE {sentinel}; --",
        f'recs"; DROP TABLE {sentinel}; --',
        f"recs; {touch}",
        f"SELECT * FROM recs; DROP TABLE {sentinel}",
        f"SELECT * FROM recs; {touch}",
        f"SELECT * FROM recs; COPY (SELECT 1) TO '{marker}/MARKER'",
        f"read_csv('{other_csv}')",
        f"SELECT * FROM read_csv('{other_csv}')",
        f"SELECT * FROM '{other_csv}'",
        f'"{other_csv}"',
        f"SELECT * FROM query('SELECT * FROM read_csv(''{other_csv}'')')",
        f"WITH d AS (DELETE FROM {sentinel} RETURNING *) SELECT * FROM d",
        "SELECT * INTO rw_copy FROM recs",
        f"SELECT user, item, rank FROM recs WHERE nextval('rw_seq') > 0",
        f"SELECT *, lo_export(0, '{marker}/MARKER') AS x FROM recs",
        f"SELECT *, pg_read_file('{other_csv}') AS x FROM recs",
        f"DROP TABLE {sentinel}",
        "recs -- comment",
        "recs /* c */",
        "a.b.c.d",
        ["recs"],
        3,
        "",
    ]


class DuckDB:
    dialect = "duckdb"

    def __init__(self, tmp):
        self.con = duckdb.connect(str(tmp / "db.duckdb"))
        self.con.execute("CREATE TABLE sentinel (x INT)")
        self.con.execute("INSERT INTO sentinel VALUES (42)")
        self.con.execute("CREATE SEQUENCE rw_seq")
        for name, frame in (("recs", RECS), ('"x""y"', RECS), ("truth", TRUTH)):
            self.con.register("_f", frame)
            self.con.execute(f"CREATE TABLE {name} AS SELECT * FROM _f")
            self.con.unregister("_f")
        self.sentinel = "sentinel"

    def execute(self, statement):
        return self.con.execute(statement).fetchall()

    def _seq_untouched(self):
        if self.execute("SELECT x FROM sentinel") != [(42,)]:
            return False
        return self.execute("SELECT last_value FROM duckdb_sequences() WHERE sequence_name = 'rw_seq'") == [(None,)]

    def close(self):
        self.con.close()


class Postgres:
    dialect = "postgres"

    def __init__(self, dsn):
        import psycopg

        self.con = psycopg.connect(dsn, autocommit=True)
        self.schema = f"rw_safe_{uuid.uuid4().hex[:8]}"
        self.con.execute(f'CREATE SCHEMA "{self.schema}"')
        self.con.execute(f'SET search_path TO "{self.schema}"')
        self.con.execute("CREATE TABLE sentinel (x INT)")
        self.con.execute("INSERT INTO sentinel VALUES (42)")
        self.con.execute("CREATE SEQUENCE rw_seq")
        for name, frame in (("recs", RECS), ('"x""y"', RECS), ("truth", TRUTH)):
            cols = ", ".join(f'"{c}" {"DOUBLE PRECISION" if t == pl.Float64 else "BIGINT"}' for c, t in frame.schema.items())
            self.con.execute(f"CREATE TABLE {name} ({cols})")
            with self.con.cursor() as cur, cur.copy(f"COPY {name} FROM STDIN") as copy:
                for row in frame.iter_rows():
                    copy.write_row(row)
        self.sentinel = "sentinel"

    def execute(self, statement):
        cur = self.con.execute(statement)
        return cur.fetchall() if cur.description else []

    def _seq_untouched(self):
        if self.execute("SELECT x FROM sentinel") != [(42,)]:
            return False
        return self.execute("SELECT is_called FROM rw_seq") == [(False,)]  # never advanced

    def close(self):
        self.con.execute(f'DROP SCHEMA "{self.schema}" CASCADE')
        self.con.close()


@pytest.fixture(params=["duckdb", "postgres"])
def db(request, tmp_path):
    if request.param == "duckdb":
        engine = DuckDB(tmp_path)
    else:
        engine = Postgres(request.getfixturevalue("pg_dsn"))
    yield engine
    engine.close()


def _run(db, **kw):
    """Render for db's dialect and execute every statement; the summary rows."""
    script = render.render(metrics=["precision"], k=2, dialect=db.dialect, **kw)
    *head, last = script.statements()
    for statement in head:
        db.execute(statement)
    return db.execute(last)


def test_the_marker_check_can_fail(db, marker_dir):
    """Control: the injection, run directly, does leave the marker (so its absence below means something)."""
    if db.dialect == "postgres":
        db.execute(f"COPY (SELECT 1) TO PROGRAM 'touch {marker_dir}/MARKER'")
    else:
        db.execute(f"COPY (SELECT 1) TO '{marker_dir}/MARKER'")
    assert (marker_dir / "MARKER").exists()


def test_hostile_tables_are_refused_and_nothing_runs(db, marker_dir, tmp_path):
    other = tmp_path / "other.csv"
    other.write_text("user,item,rank\n1,11,1\n2,21,1\n")  # would make every user a hit
    for key in ("recommendations", "ground_truth"):
        for value in hostile(marker_dir, other, db.sentinel):
            tables = {"recommendations": "recs", "ground_truth": "truth", key: value}
            try:
                rows = _run(db, tables=tables)
            except rankwise.ParameterError as error:  # InvalidIdentifierError is one
                assert "Hint:" in str(error) and (repr(value)[:20] in str(error) or not isinstance(value, str))
            else:
                pytest.fail(f"{key}={value!r} rendered and ran: {rows}")
            assert db._seq_untouched(), (key, value)
            assert not (marker_dir / "MARKER").exists(), (key, value)
    assert _run(db, tables={"recommendations": "recs", "ground_truth": "truth"})[0][2] == PRECISION_AT_2


def test_a_quoted_name_is_one_name(db):
    """``"x""y"`` is the table x"y (the quote re-escaped on output); bare ``x"y`` is refused above."""
    rows = _run(db, tables={"recommendations": '"x""y"', "ground_truth": "truth"})
    assert rows[0][2] == PRECISION_AT_2
    rows = _run(db, tables={"recommendations": 'SELECT * FROM "x""y" WHERE "item" <> 11', "ground_truth": "truth"})
    assert rows[0][2] == 0.0  # the query ran: user 1's only hit (item 11) is gone


@pytest.mark.parametrize("option, value", [
    ("prefix", "x; DROP TABLE sentinel; --"), ("prefix", 'x"'), ("prefix", ""), ("prefix", "a.b"),
    ("schema", "s; DROP TABLE sentinel"), ("schema", 's"; DROP TABLE sentinel; --'), ("schema", "a.b.c"),
    ("schema", ["s"]),
])
def test_hostile_prefix_and_schema_are_refused(db, option, value):
    with pytest.raises(rankwise.ParameterError, match="Hint:"):
        _run(db, tables={"recommendations": "recs", "ground_truth": "truth"}, **{option: value})
    assert db._seq_untouched()


def test_a_quoted_schema_is_used_as_one_name(db):
    if db.dialect == "duckdb":
        db.execute('CREATE SCHEMA "we ird"')
    else:
        db.execute(f'CREATE SCHEMA "we ird_{db.schema}"')
    schema = '"we ird"' if db.dialect == "duckdb" else f'"we ird_{db.schema}"'
    rows = _run(db, tables={"recommendations": "recs", "ground_truth": "truth"}, schema=schema)
    assert rows[0][2] == PRECISION_AT_2
    assert db.execute(f"SELECT count(*) FROM {schema}.rankwise_per_user") == [(2,)]
    if db.dialect == "postgres":
        db.execute(f"DROP SCHEMA {schema} CASCADE")


def test_errors_name_the_key():
    with pytest.raises(rankwise.InvalidIdentifierError, match=r"tables\['ground_truth'\] 'x\"y'") as info:
        rankwise.sql(tables={"ground_truth": 'x"y'})
    assert "Hint:" in str(info.value)
    with pytest.raises(rankwise.ParameterError, match=r"2 statements"):
        rankwise.sql(tables={"recommendations": "SELECT 1 AS a; SELECT 2 AS a"})
    with pytest.raises(rankwise.ParameterError, match="got \\['r'\\]"):
        rankwise.sql(tables={"recommendations": ["r"]})
