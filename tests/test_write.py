"""Result.write and `rankwise evaluate --output`: stable schema, run metadata, appends, mismatches."""

from __future__ import annotations

import json
import uuid

import duckdb
import polars as pl
import pytest

import rankwise
from rankwise import _write
from rankwise.cli import main

RECS = pl.DataFrame({"user": [1, 1, 2, 3], "item": [10, 11, 10, 12], "rank": [1, 2, 1, 1]})
TRUTH = pl.DataFrame({"user": [1, 2, 4], "item": [11, 12, 10]})


@pytest.fixture
def result():
    return rankwise.evaluate(RECS, TRUTH, k=[1, 2], metrics=["precision", "ndcg", "f2"])


def test_frames_schema_and_metadata(result):
    per_user, summary = _write.frames(result)
    assert per_user.schema == pl.Schema(_write.PER_USER_SCHEMA)
    assert summary.schema == pl.Schema(_write.SUMMARY_SCHEMA)
    assert per_user.height == result.per_user.height * 6 and summary.height == 6
    assert per_user["run_id"].n_unique() == 1 and per_user["convention"][0] == "default"
    knobs = json.loads(per_user["convention_knobs"][0])
    assert knobs == {k: v for k, v in rankwise.Convention().knobs().items()} | {"log_base": knobs["log_base"]}
    assert set(per_user["metric"]) == {"precision", "ndcg", "f2"} and set(per_user["k"]) == {1, 2}
    # NaN (undefined) is written as NULL: user 3 has no label
    undefined = per_user.filter(pl.col("user_id") == "3")
    assert undefined["value"].null_count() == undefined.height
    assert str(per_user.schema["run_at"]) == "Datetime(time_unit='us', time_zone='UTC')"


def test_fingerprint_is_the_data_not_the_container(result):
    other = rankwise.evaluate(RECS.to_pandas().sample(frac=1, random_state=1), TRUTH.to_arrow(), k=[1, 2],
                              metrics=["precision"])
    assert _write.fingerprint(result.prepared) == _write.fingerprint(other.prepared)
    changed = rankwise.evaluate(RECS.with_columns(rank=pl.col("rank") * 2 % 3 + 1), TRUTH, k=1)
    assert _write.fingerprint(changed.prepared) != _write.fingerprint(result.prepared)


def test_custom_convention_name():
    res = rankwise.evaluate(RECS, TRUTH, k=1, convention=rankwise.Convention(gain="linear"))
    per_user, _ = _write.frames(res)
    assert per_user["convention"][0] == "custom"
    assert json.loads(per_user["convention_knobs"][0])["gain"] == "linear"


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl", ".duckdb"])
def test_append_two_runs(result, tmp_path, suffix):
    target = tmp_path / f"runs{suffix}"
    result.write(target)
    result.write(target)
    if suffix == ".duckdb":
        con = duckdb.connect(str(target))
        per_user = con.sql("SELECT * FROM rankwise_per_user").pl()
        summary = con.sql("SELECT * FROM rankwise_summary").pl()
        con.close()
    else:
        read = {".parquet": pl.read_parquet, ".csv": pl.read_csv, ".jsonl": pl.read_ndjson}[suffix]
        per_user = read(tmp_path / f"runs_per_user{suffix}")
        summary = read(tmp_path / f"runs_summary{suffix}")
    assert per_user.columns == list(_write.PER_USER_SCHEMA)
    assert summary.columns == list(_write.SUMMARY_SCHEMA)
    assert per_user["run_id"].n_unique() == 2 and summary.height == 12
    runs = summary.group_by("run_id").agg(pl.col("value").sort_by("metric", "k"))
    assert runs["value"][0].to_list() == runs["value"][1].to_list()  # comparable runs


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl", ".duckdb"])
def test_schema_mismatch_is_an_error(result, tmp_path, suffix):
    target = tmp_path / f"runs{suffix}"
    wrong = pl.DataFrame({"user": [1], "score": [0.5]})
    if suffix == ".duckdb":
        con = duckdb.connect(str(target))
        con.execute("CREATE TABLE rankwise_per_user (user_id VARCHAR, score DOUBLE)")
        con.close()
    else:
        path = tmp_path / f"runs_per_user{suffix}"
        {".parquet": wrong.write_parquet, ".csv": wrong.write_csv, ".jsonl": wrong.write_ndjson}[suffix](path)
    with pytest.raises(_write.WriteSchemaError, match="other columns") as info:
        result.write(target)
    assert "Hint:" in str(info.value) and "mode='replace'" in str(info.value)
    result.write(target, mode="replace")  # starting over works


def test_unknown_target(result):
    with pytest.raises(rankwise.ParameterError, match="Cannot tell where"):
        result.write("runs.xlsx")


def test_postgres_two_runs_one_table(result, pg_dsn):
    """Done-when: a run written to PostgreSQL twice leaves two comparable runs in one table."""
    import psycopg

    schema = f"rw_{uuid.uuid4().hex[:10]}"
    uri = "postgresql://postgres@127.0.0.1:54329/postgres"
    with psycopg.connect(pg_dsn, autocommit=True) as con:
        con.execute(f"CREATE SCHEMA {schema}")
    try:
        result.write(uri, prefix=f"{schema}.rankwise_")
        result.write(uri, prefix=f"{schema}.rankwise_")
        with psycopg.connect(pg_dsn) as con:
            rows = con.execute(f"SELECT run_id, metric, k, value, n_users, inputs_fingerprint, convention_knobs "
                               f"FROM {schema}.rankwise_summary ORDER BY run_id, metric, k").fetchall()
            n_per_user = con.execute(f"SELECT COUNT(DISTINCT run_id), COUNT(*) FROM {schema}.rankwise_per_user").fetchone()
            types = con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                "WHERE table_schema = %s AND table_name = 'rankwise_per_user' "
                                "ORDER BY ordinal_position", (schema,)).fetchall()
        runs = {}
        for run_id, *rest in rows:
            runs.setdefault(run_id, []).append(tuple(rest))
        assert len(runs) == 2
        first, second = runs.values()
        assert first == second  # same values, fingerprint and knobs: comparable
        assert n_per_user == (2, 2 * result.per_user.height * 6)
        assert [t for _, t in types] == ["text", "timestamp with time zone", "text", "text", "text", "text",
                                         "text", "text", "bigint", "double precision"]
        with psycopg.connect(pg_dsn, autocommit=True) as con:
            con.execute(f"CREATE TABLE {schema}.bad_per_user (metric TEXT)")
        with pytest.raises(_write.WriteSchemaError, match="other columns"):
            result.write(uri, prefix=f"{schema}.bad_")
        with psycopg.connect(pg_dsn) as con:  # the failed write left nothing behind
            assert con.execute(f"SELECT to_regclass('{schema}.bad_summary')").fetchone() == (None,)
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as con:
            con.execute(f"DROP SCHEMA {schema} CASCADE")


def test_cli_output(tmp_path, capsys):
    recs, truth = tmp_path / "recs.parquet", tmp_path / "truth.parquet"
    RECS.write_parquet(recs)
    TRUTH.write_parquet(truth)
    target = tmp_path / "runs.duckdb"
    for _ in range(2):
        assert main(["evaluate", str(recs), str(truth), "--k", "1,2", "--output", str(target)]) == 0
    con = duckdb.connect(str(target))
    assert con.sql("SELECT COUNT(DISTINCT run_id) FROM rankwise_summary").fetchall() == [(2,)]
    con.close()
    bad = tmp_path / "bad.duckdb"
    con = duckdb.connect(str(bad))
    con.execute("CREATE TABLE rankwise_per_user (x INTEGER)")
    con.close()
    assert main(["evaluate", str(recs), str(truth), "--output", str(bad)]) == 2
    assert "WriteSchemaError" in capsys.readouterr().err
