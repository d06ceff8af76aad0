"""The dbt package (integrations/dbt): generated from rankwise.sqlgen.render without drift, and `dbt build`
over the bundled example on DuckDB and PostgreSQL gives exactly evaluate()'s per-user values and summary."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import polars as pl
import pytest

import rankwise
from rankwise.generate import dbt as _dbt

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples"
DBT = Path(sys.executable).parent / "dbt"
needs_dbt = pytest.mark.skipif(not DBT.exists() and os.environ.get("CI", "").lower() not in ("1", "true", "yes"),
                               reason="dbt is not installed (pip install 'rankwise[dbt]')")
NAMES = [("f2" if m == "f1" else m) for m in rankwise.metrics.declarations.METRICS]  # every accuracy metric, F-beta as F2
pytestmark = pytest.mark.xdist_group("dbt")  # one dbt at a time: each parses the package (~5 s of CPU)


def test_generated_package_has_not_drifted():
    """integrations/dbt/macros/generated/ is what `python -m rankwise.generate.dbt` writes from today's SQL."""
    wanted = _dbt.files()
    folder = ROOT / "integrations" / "dbt" / _dbt.GENERATED
    on_disk = {f"{_dbt.GENERATED}/{p.name}" for p in folder.glob("*.sql")}
    assert on_disk == set(wanted), "regenerate: python -m rankwise.generate.dbt"
    for path, text in wanted.items():
        assert (ROOT / "integrations" / "dbt" / path).read_text() == text, f"{path} drifted: python -m rankwise.generate.dbt"


def test_templates_filled_with_a_preset_are_what_rankwise_sql_renders():
    """Every marker is a slot: filling the templates with a preset's literals gives render()'s statements
    (layout aside), on every dialect for two presets that differ in many knobs and on DuckDB for all."""
    assert _dbt.verify(_dbt.DIALECTS, ["default", "trec_eval"]) > 0
    assert _dbt.verify(["duckdb"]) > 0


# -- dbt build on the bundled example -----------------------------------------------------------------


def _project(tmp_path: Path, profile: str, vars_: str, model: str) -> Path:
    project = tmp_path / "project"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        "name: rw_example\nversion: '1.0'\nconfig-version: 2\nprofile: rw_example\n"
        "models:\n  rw_example:\n    +materialized: table\n"
        f"vars:\n  rankwise: {vars_}\n")
    (project / "packages.yml").write_text(f"packages:\n  - local: {ROOT / 'integrations' / 'dbt'}\n")
    (project / "profiles.yml").write_text(f"rw_example:\n  target: dev\n  outputs:\n    dev: {profile}\n")
    (project / "models" / "sources.yml").write_text(
        "version: 2\nsources:\n  - name: example\n    schema: '{{ target.schema }}'\n"
        "    tables: [{name: recs}, {name: truth}]\n")
    (project / "models" / "rankwise_per_user.sql").write_text(model + "\n")
    return project


def _dbt_run(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_PROFILES_DIR": str(project)}
    for command in (["deps"], list(args)):
        done = subprocess.run([str(DBT), *command, "--project-dir", str(project)], env=env, capture_output=True,
                              text=True, timeout=600)
        if done.returncode != 0:
            return done
    return done


def _same(dbt_per_user: pl.DataFrame, dbt_summary: pl.DataFrame, result, names):
    """Per user and k, each metric equal to evaluate()'s (NULL = NaN) within 1e-12 relative; the summary too."""
    ours = result.long.rename({result.user_col: "user_id"})
    f_name = next((n for n in names if n[:1] == "f" and n[1:2].isdigit()), None)
    if f_name:  # the per-user table's F-beta column is fbeta, as rankwise.sql's
        dbt_per_user = dbt_per_user.rename({"fbeta": f_name})
    joined = ours.join(dbt_per_user, on=["user_id", "k"], how="full", suffix="_dbt", coalesce=True)
    assert joined.height == ours.height == dbt_per_user.height
    for column in ["n_recs", "n_rel", *names]:
        for a, b in zip(joined[column].to_list(), joined[f"{column}_dbt"].to_list()):
            if a is None or (isinstance(a, float) and math.isnan(a)):
                assert b is None, (column, a, b)
            else:
                assert b is not None and math.isclose(a, b, rel_tol=1e-12, abs_tol=0), (column, a, b)
    expected = result.summary.select("metric", "k", "value", "n_users")
    got = dbt_summary.join(expected, on=["metric", "k"], how="full", suffix="_py", coalesce=True)
    assert got.height == expected.height == dbt_summary.height
    for row in got.iter_rows(named=True):
        assert row["n_users"] == row["n_users_py"], row
        if row["value_py"] is None or math.isnan(row["value_py"]):
            assert row["value"] is None, row
        else:
            assert math.isclose(row["value"], row["value_py"], rel_tol=1e-12, abs_tol=0), row


@needs_dbt
def test_dbt_build_on_duckdb_equals_evaluate(tmp_path):
    import duckdb

    db = tmp_path / "example.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(f"CREATE TABLE recs AS SELECT * FROM '{EXAMPLE / 'recommendations.parquet'}'")
        con.execute(f"CREATE TABLE truth AS SELECT * FROM '{EXAMPLE / 'ground_truth.parquet'}'")
    project = _project(tmp_path, f"{{type: duckdb, path: '{db}', schema: main, threads: 1}}",
                       "{k: [5, 10], convention: default, metrics: [" + ", ".join(NAMES) + "]}",
                       "{{ rankwise.per_user(source('example', 'recs'), source('example', 'truth')) }}")
    done = _dbt_run(project, "build")
    assert done.returncode == 0, done.stdout[-3000:]
    with duckdb.connect(str(db), read_only=True) as con:
        per_user = con.sql("SELECT * FROM main.rankwise_per_user").pl()
        summary = con.sql("SELECT * FROM main.rankwise_summary").pl()
    names = NAMES
    result = rankwise.evaluate(EXAMPLE / "recommendations.parquet", EXAMPLE / "ground_truth.parquet", k=[5, 10],
                               metrics=names, convention="default")
    _same(per_user, summary, result, names)


@needs_dbt
def test_dbt_stops_on_a_failed_input_check_naming_it(tmp_path):
    import duckdb

    db = tmp_path / "bad.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE recs AS SELECT * FROM (VALUES (1, 10, 1), (1, 10, 2), (2, 11, 1)) t(\"user\", item, rank)")
        con.execute("CREATE TABLE truth AS SELECT * FROM (VALUES (1, 10, 1.0)) t(\"user\", item, relevance)")
    project = _project(tmp_path, f"{{type: duckdb, path: '{db}', schema: main, threads: 1}}", "{k: 5}",
                       "{{ rankwise.per_user(source('example', 'recs'), source('example', 'truth')) }}")
    done = _dbt_run(project, "build")
    assert done.returncode != 0
    assert "rankwise: recommendations: an item repeated in one user's list (2 rows; e.g. user 1, item 10" in done.stdout
    assert "SKIP relation main.rankwise_summary" in done.stdout
    with duckdb.connect(str(db), read_only=True) as con:
        assert not con.sql("SELECT * FROM duckdb_tables() WHERE table_name = 'rankwise_per_user'").fetchall()


@needs_dbt
@pytest.mark.parametrize(("vars_", "message"), [
    ("{k: 5, metrics: [ndgc]}", "rankwise: unknown metric ndgc."),
    ("{k: [5, 0]}", "rankwise: k must be a positive integer"),
    ("{k: 5, convention: surprise}", "rankwise: convention surprise cannot be rendered in SQL"),
    ("{k: 5, kk: 1}", "rankwise: vars: rankwise has an unknown key 'kk'."),
])
def test_bad_vars_are_compile_errors_with_a_hint(tmp_path, vars_, message):
    project = _project(tmp_path, f"{{type: duckdb, path: '{tmp_path / 'x.duckdb'}', schema: main, threads: 1}}", vars_,
                       "{{ rankwise.per_user(source('example', 'recs'), source('example', 'truth')) }}")
    done = _dbt_run(project, "compile")
    assert done.returncode != 0
    assert message in done.stdout and "Hint: " in done.stdout, done.stdout[-2000:]


@needs_dbt
def test_dbt_build_on_postgres_equals_evaluate(tmp_path, pg_dsn):
    """Ranks from a score column, trec_eval's knobs (ties by item descending), on PostgreSQL."""
    import psycopg

    name = f"rankwise_dbt_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        dsn = psycopg.conninfo.make_conninfo(pg_dsn, dbname=name)
        info = psycopg.conninfo.conninfo_to_dict(dsn)
        recs = pl.read_parquet(EXAMPLE / "recommendations.parquet").with_columns(
            score=(100 - pl.col("rank")) // 2 * 1.0).drop("rank")  # ties: two items per score
        truth = pl.read_parquet(EXAMPLE / "ground_truth.parquet")
        with psycopg.connect(dsn) as con:
            con.execute('CREATE TABLE recs ("user" bigint, item bigint, score double precision)')
            con.execute('CREATE TABLE truth ("user" bigint, item bigint, relevance double precision)')
            for table, frame in (("recs", recs), ("truth", truth)):
                with con.cursor().copy(f"COPY {table} FROM STDIN") as copy:
                    for row in frame.iter_rows():
                        copy.write_row(row)
        profile = (f"{{type: postgres, host: '{info.get('host', '127.0.0.1')}', port: {info.get('port', 5432)}, "
                   f"user: '{info.get('user', 'postgres')}', password: '{info.get('password', '')}', dbname: {name}, "
                   "schema: public, threads: 1}")
        project = _project(tmp_path, profile, "{k: [1, 3, 10], convention: trec_eval, metrics: [ndcg, map, precision]}",
                           "{{ rankwise.per_user(source('example', 'recs'), source('example', "
                           "'truth'), score_col='score') }}")
        done = _dbt_run(project, "build")
        assert done.returncode == 0, done.stdout[-3000:]
        with psycopg.connect(dsn) as con:
            cols = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = "
                                              "'rankwise_per_user' ORDER BY ordinal_position").fetchall()]
            per_user = pl.DataFrame(con.execute("SELECT * FROM rankwise_per_user").fetchall(), schema=cols, orient="row")
            summary = pl.DataFrame(con.execute("SELECT metric, k, value, n_users FROM rankwise_summary").fetchall(),
                                   schema=["metric", "k", "value", "n_users"], orient="row")
        names = ["ndcg", "map", "precision"]
        result = rankwise.evaluate(recs, truth, k=[1, 3, 10], metrics=names, convention="trec_eval", score_col="score")
        _same(per_user, summary, result, names)
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
