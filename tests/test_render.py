"""rankwise.sql: one script per dialect, rendered by sqlglot from the shipped files.

Every dialect's script for a fixed request is pinned in tests/snapshots/render/<dialect>.sql
(refresh with RANKWISE_UPDATE_SNAPSHOTS=1) and parsed back by sqlglot in that dialect. What a
dialect cannot express is declared in rankwise.render.GAPS and tested here as an error.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

import rankwise
from rankwise import render
from rankwise.cli import main

SNAPSHOTS = Path(__file__).parent / "snapshots" / "render"
REQUEST = dict(metrics=None, k=[5, 10], convention="default",
               tables={"recommendations": "analytics.recs", "ground_truth": "analytics.truth"})


@pytest.mark.parametrize("dialect", render.DIALECTS)
def test_snapshot(dialect):
    text = rankwise.sql(dialect=dialect, **REQUEST)
    path = SNAPSHOTS / f"{dialect}.sql"
    if os.environ.get("RANKWISE_UPDATE_SNAPSHOTS") or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"rendered SQL for {dialect} changed; RANKWISE_UPDATE_SNAPSHOTS=1 to accept"


@pytest.mark.parametrize("dialect", render.DIALECTS)
def test_parses_back(dialect):
    """sqlglot reads every statement back in the target dialect, and nothing is left unbound."""
    script = render.render(dialect=dialect, **REQUEST)
    statements = script.statements()
    for statement in statements:
        tree = sqlglot.parse_one(statement, read=dialect)
        assert not list(tree.find_all(exp.Placeholder, exp.Parameter)), statement[:200]
        assert "$" not in statement
    kinds = [sqlglot.parse_one(s, read=dialect).key for s in statements]
    assert kinds[-1] in ("select", "union")
    assert "create" in kinds and "drop" in kinds


@pytest.mark.parametrize("dialect", render.DIALECTS)
def test_no_decimal_literals(dialect):
    """Non-integer literals are DOUBLE outside DuckDB: ``1.0`` is DECIMAL in Trino, Snowflake, Spark
    and PostgreSQL, and ``1.0 / 3`` would round (Snowflake keeps 6 decimals)."""
    if dialect == "duckdb":
        return
    script = render.render(dialect=dialect, **REQUEST)
    for statement in script.statements():
        for literal in sqlglot.parse_one(statement, read=dialect).find_all(exp.Literal):
            if not literal.is_string and "." in literal.this:
                assert isinstance(literal.parent, exp.Cast), (dialect, literal.parent.sql(dialect))


def test_reads_the_files_at_call_time(monkeypatch, tmp_path):
    """A new knob in the SQL files is bound generically (no renderer change)."""
    for name in ("per_user", "summary"):
        (tmp_path / f"{name}.sql").write_text((rankwise._sql_files.sql_dir() / f"{name}.sql").read_text())
    text = (tmp_path / "summary.sql").read_text().replace("$f_aggregation = 'per_user'", "$gain = 'nope' OR $f_aggregation = 'per_user'")
    (tmp_path / "summary.sql").write_text(text)
    monkeypatch.setattr(rankwise._sql_files, "sql_dir", lambda: tmp_path)
    assert "'exp2' = 'nope'" in rankwise.sql(dialect="postgres", k=3)


def test_metrics_prune_the_script():
    script = render.render(metrics=["ndcg", "f2"], k=3, dialect="postgres")
    create = script.create_per_user[1]
    assert "p.ndcg" in create and "p.fbeta" in create and "p.map" not in create
    assert "'map'" not in script.summary and "'f2'" in script.summary
    assert "* CAST(2.0 AS DOUBLE PRECISION)" in create  # beta = 2


def test_schema_and_prefix():
    text = rankwise.sql(dialect="bigquery", k=3, schema="ds", prefix="eval_")
    assert "CREATE TABLE ds.eval_per_user" in text and "CREATE VIEW ds.eval_recommendations" in text
    text = rankwise.sql(dialect="postgres", k=3, schema="ds")  # temporary views cannot have a schema
    assert "CREATE TEMPORARY VIEW rankwise_recommendations" in text and "CREATE TABLE ds.rankwise_per_user" in text


def test_query_as_input_and_keyword_columns():
    text = rankwise.sql(dialect="postgres", k=3, user_col="user", tables={
        "recommendations": "SELECT * FROM raw.recs WHERE day = '2024-01-01'", "ground_truth": "t"})
    assert "FROM raw.recs" in text and "src.user AS user_id" in text


# -- declared gaps -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", render.DIALECTS)
def test_gap_input_order_ties(dialect):
    with pytest.raises(render.UnsupportedSQLError, match="input_order") as info:
        rankwise.sql(dialect=dialect, score_col="score", convention=rankwise.Convention(ties="input_order"))
    assert "Hint:" in str(info.value)
    rankwise.sql(dialect=dialect, convention=rankwise.Convention(ties="input_order"))  # ranks: fine


@pytest.mark.parametrize("knob", ["empty_labels", "empty_predictions"])
def test_gap_error_values(knob):
    with pytest.raises(render.UnsupportedSQLError, match=f"{knob}='error'"):
        rankwise.sql(dialect="trino", convention=rankwise.Convention(**{knob: "error"}))


def test_gap_registry_names_real_dialects():
    for gap in render.GAPS:
        assert set(gap.dialects) <= {"*", *render.DIALECTS}, gap


def test_clickhouse_rewrites():
    """ClickHouse: inequality joins become CROSS JOIN + WHERE, qualified projections get aliases,
    CREATE TABLE gets an engine."""
    script = render.render(dialect="clickhouse", k=3)
    assert "CROSS JOIN rankwise_cutoffs AS c" in script.per_user and "ON j.rank <= c.k" not in script.per_user
    assert "r.user_id AS user_id" in script.per_user
    assert "ENGINE=MergeTree" in script.create_per_user[1].replace(" ", "")


def test_unknown_dialect_and_tables():
    with pytest.raises(rankwise.ParameterError, match="Unknown dialect"):
        rankwise.sql(dialect="oracle")
    with pytest.raises(rankwise.ParameterError, match="unknown keys"):
        rankwise.sql(tables={"recs": "x"})


def test_cli_sql(capsys):
    assert main(["sql", "--dialect", "snowflake", "--k", "5,10", "--convention", "default"]) == 0
    out = capsys.readouterr().out
    assert out == rankwise.sql(k=[5, 10], dialect="snowflake")
    assert main(["sql", "--dialect", "nope"]) == 2
    assert "Unknown dialect" in capsys.readouterr().err
