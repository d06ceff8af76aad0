"""Test helpers: generated edge-case data, real engines that run a rendered script, comparison.

Users are independent in every per-user metric, so one generated batch holds every edge case at once
(users in one input only, empty lists, lists shorter than k, k beyond every list, graded relevance
with zeros, ties in scores) and one script run per (engine, convention, id type) checks them all.
"""

from __future__ import annotations

import math
import os
import random
import tempfile
import uuid
from pathlib import Path

import polars as pl

import rankwise
from rankwise.sqlgen.render import render

from rankwise.metrics.declarations import USER_LEVEL as METRIC_COLUMNS  # noqa: E402
KS = (1, 3, 5, 20)  # 20: beyond every list (at most 9 items)
PG_DSN = os.environ.get("RANKWISE_PG_DSN", "host=127.0.0.1 port=54329 user=postgres dbname=postgres")


def generate(seed: int, string_ids: bool, by_score: bool, n_users: int = 40):
    """({user: [items]}, {user: {item: relevance}}, {user: [scores]}) with every edge case."""
    rng = random.Random(seed)
    recs, truth, scores = {}, {}, {}
    for user in range(n_users):
        shape = user % 5  # 0 both, 1 recs only, 2 truth only, 3 empty list(s), 4 both
        if shape in (0, 1, 4) or (shape == 3 and not by_score):
            recs[user] = [] if shape == 3 else rng.sample(range(12), rng.randint(1, 9))
        if shape in (0, 2, 3, 4):
            items = [] if (shape == 3 and user % 2) else rng.sample(range(12), rng.randint(1, 6))
            truth[user] = {i: rng.choice([0.0, 1.0, 1.0, 2.0, 3.0, 0.5]) for i in items}
        if user in recs:
            scores[user] = [rng.randint(0, 3) for _ in recs[user]]  # many ties
    if string_ids:
        name = lambda prefix, v: f"{prefix}{v:03d}"  # noqa: E731 - string order = numeric order
        recs = {name("u", u): [name("i", i) for i in items] for u, items in recs.items()}
        truth = {name("u", u): {name("i", i): r for i, r in lab.items()} for u, lab in truth.items()}
        scores = {name("u", u): s for u, s in scores.items()}
    return recs, truth, scores


def api_frames(recs, truth, scores, string_ids: bool, by_score: bool):
    """What evaluate() gets: list-form recommendations (or long with scores), list-form truth."""
    uid = pl.String if string_ids else pl.Int64
    if by_score:
        rows = [(u, i, float(s)) for u, items in recs.items() for i, s in zip(items, scores[u])]
        r = pl.DataFrame(rows, schema={"user": uid, "item": uid, "score": pl.Float64}, orient="row")
    else:
        r = pl.DataFrame({"user": list(recs), "item": list(recs.values())}, schema={"user": uid, "item": pl.List(uid)})
    t = pl.DataFrame({"user": list(truth), "item": [list(x) for x in truth.values()],
                      "relevance": [list(x.values()) for x in truth.values()]},
                     schema={"user": uid, "item": pl.List(uid), "relevance": pl.List(pl.Float64)})
    return r, t


def warehouse_frames(r: pl.DataFrame, t: pl.DataFrame):
    """The same data as long tables, the way a warehouse holds it: an empty list is one row with a
    NULL item; ranks are gappy (3, 6, 9, ...) to check that the script renumbers them."""
    if r.schema["item"] == pl.List:
        r = (r.with_columns(rank=pl.int_ranges(1, pl.col("item").list.len() + 1) * 3)
             .explode("item", "rank", empty_as_null=True).select("user", "item", "rank"))
    t = t.explode("item", "relevance", empty_as_null=True)
    return r, t


# -- engines ----------------------------------------------------------------------------------------


class Engine:
    """Loads two input tables, runs a rendered script statement by statement, reads results back."""

    dialect = ""

    def __init__(self):
        self.schema = None

    def run(self, recs: pl.DataFrame, truth: pl.DataFrame, *, ks, metrics="all", convention="default", **kw):
        """Run rankwise.sql's statements; return (per_user long frame, summary frame)."""
        self.load("rw_recs", recs)
        self.load("rw_truth", truth)
        script = render(metrics, list(ks), convention, self.dialect,
                        {"recommendations": self.qualified("rw_recs"), "ground_truth": self.qualified("rw_truth")},
                        schema=self.schema, **kw)
        *head, last = script.statements()
        for statement in head:  # the check is a SELECT: fetched, as a SQL client shows it (Spark is lazy)
            self.query(statement) if statement == script.check else self.execute(statement)
        summary = self.query(last)
        per_user = self.query(f"SELECT * FROM {script.names['per_user']}")
        return per_user, summary

    def qualified(self, name: str) -> str:
        return f"{self.schema}.{name}" if self.schema else name

    def close(self):
        pass


class DuckDBEngine(Engine):
    dialect = "duckdb"

    def __init__(self):
        super().__init__()
        import duckdb

        self.con = duckdb.connect()

    def load(self, name, frame):
        self.con.register("_frame", frame)
        self.con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _frame")
        self.con.unregister("_frame")

    def execute(self, statement):
        self.con.execute(statement)

    def query(self, statement):
        return self.con.sql(statement).pl()


class PostgresEngine(Engine):
    dialect = "postgres"
    _types = {pl.Int64: "BIGINT", pl.String: "TEXT", pl.Float64: "DOUBLE PRECISION"}

    def __init__(self, dsn: str = PG_DSN):
        super().__init__()
        import psycopg

        self.con = psycopg.connect(dsn, autocommit=True, connect_timeout=5, prepare_threshold=None)
        # what the README advises for these scripts (and the backend does): PostgreSQL's JIT compiles each
        # wide query for about 2 s, on 15 rows as on millions; the values do not change
        self.con.execute("SET jit = off")
        self.schema = f"rw_{uuid.uuid4().hex[:10]}"
        self.con.execute(f"CREATE SCHEMA {self.schema}")

    def load(self, name, frame):
        table = self.qualified(name)
        columns = ", ".join(f"\"{c}\" {self._types[d.base_type()]}" for c, d in frame.schema.items())
        self.con.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
        self.con.execute(f"CREATE TABLE {table} ({columns})")
        with self.con.cursor() as cur, cur.copy(f"COPY {table} FROM STDIN") as copy:
            for row in frame.iter_rows():
                copy.write_row(row)

    def execute(self, statement):
        self.con.execute(statement)

    def query(self, statement):
        cur = self.con.execute(statement)
        names = [d.name for d in cur.description]
        return pl.DataFrame(cur.fetchall(), schema=names, orient="row", infer_schema_length=None)

    def close(self):
        self.con.execute(f"DROP SCHEMA {self.schema} CASCADE")
        self.con.close()


class ChdbEngine(Engine):
    dialect = "clickhouse"
    _types = {pl.Int64: "Int64", pl.String: "String", pl.Float64: "Float64"}

    def __init__(self):
        super().__init__()
        from chdb import session

        self.dir = tempfile.mkdtemp(prefix="rankwise-chdb-")
        self.sess = session.Session(self.dir)

    def load(self, name, frame):
        path = Path(self.dir) / f"{name}.parquet"
        frame.write_parquet(path)
        columns = ", ".join(f"`{c}` Nullable({self._types[d.base_type()]})" for c, d in frame.schema.items())
        self.sess.query(f"DROP TABLE IF EXISTS {name}")
        self.sess.query(f"CREATE TABLE {name} ({columns}) ENGINE = Memory")
        self.sess.query(f"INSERT INTO {name} SELECT * FROM file('{path}', Parquet)")

    def execute(self, statement):
        self.sess.query(statement)

    def query(self, statement):
        return pl.from_arrow(self.sess.query(statement, "ArrowTable"))

    def close(self):
        self.sess.close()


class SparkEngine(Engine):
    dialect = "spark"

    def __init__(self, spark):
        super().__init__()
        self.spark = spark

    def load(self, name, frame):
        self.spark.createDataFrame(frame.to_arrow()).createOrReplaceTempView(name)

    def execute(self, statement):
        self.spark.sql(statement)

    def query(self, statement):
        return pl.from_arrow(self.spark.sql(statement).toArrow())


def postgres_reachable(dsn: str = PG_DSN) -> bool:
    try:
        import psycopg

        psycopg.connect(dsn, connect_timeout=3).close()
        return True
    except Exception:
        return False


# -- comparison -------------------------------------------------------------------------------------


def close(a, b) -> bool:
    """Equal to 1e-12 relative; SQL NULL (None) is the API's NaN."""
    a = float("nan") if a is None else float(a)
    b = float("nan") if b is None else float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-13)


def assert_same(result, per_user: pl.DataFrame, summary: pl.DataFrame, ks, f_name: str = "f1"):
    """The engine's long per-user rows and summary equal evaluate()'s Result, value for value."""
    wide = {row["user"]: row for row in result.per_user.iter_rows(named=True)}
    rows = per_user.iter_rows(named=True)
    seen = {}
    for row in rows:
        seen.setdefault(row["user_id"], set()).add(int(row["k"]))
        expected = wide[row["user_id"]]
        for m in METRIC_COLUMNS:
            if m not in row:
                continue
            api = f"{f_name if m == 'fbeta' else m}@{int(row['k'])}"
            if api in expected:
                assert close(row[m], expected[api]), (row["user_id"], api, row[m], expected[api])
    assert set(seen) == set(wide), (set(seen) ^ set(wide))
    assert all(v == set(ks) for v in seen.values())
    api_summary = {(m, k): (v, n) for m, k, v, n, *_ in result.summary.iter_rows()}
    got = {(m, int(k)): (v, int(n)) for m, k, v, n in summary.select("metric", "k", "value", "n_users").iter_rows()}
    assert set(got) == set(api_summary), set(got) ^ set(api_summary)
    for key, (value, n) in api_summary.items():
        assert got[key][1] == n, (key, got[key], (value, n))
        assert close(got[key][0], value), (key, got[key], value)
    order = [(m, k) for m, k, *_ in result.summary.iter_rows()]
    assert [(m, int(k)) for m, k in summary.select("metric", "k").iter_rows()] == order


def evaluate(r, t, ks, convention, by_score: bool, metrics="all"):
    return rankwise.evaluate(r, t, k=list(ks), metrics=metrics, convention=convention, backend="polars")
