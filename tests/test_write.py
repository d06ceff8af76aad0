"""Result.write and `rankwise evaluate --output`: stable schema, knobs once per run, appends, mismatches."""

from __future__ import annotations

import json
import uuid

import duckdb
import polars as pl
import pytest

import rankwise
from rankwise.io import write as _write
from rankwise.cli import main

RECS = pl.DataFrame({"user": [1, 1, 2, 3], "item": [10, 11, 10, 12], "rank": [1, 2, 1, 1]})
TRUTH = pl.DataFrame({"user": [1, 2, 4], "item": [11, 12, 10]})
N_USERS = 4  # users 1, 2, 3 (recs) and 4 (truth) under users="union"
CONVENTION = "recommended_ideal"  # users='union', empty_labels='nan': user 3 (no label) is written as NULL


@pytest.fixture
def result():
    return rankwise.evaluate(RECS, TRUTH, k=[1, 2], metrics=["precision", "ndcg", "f2"], convention=CONVENTION)


def test_frames_schema_and_metadata(result):
    tables = _write.frames(result)
    assert set(tables) == {"runs", "per_user", "summary", "excluded"}  # no beyond-accuracy metrics: no per_item
    for name in tables:
        assert tables[name].schema == pl.Schema(_write.TABLES[name])
    runs, per_user, summary = tables["runs"], tables["per_user"], tables["summary"]
    assert runs.height == 1 and runs["convention"][0] == CONVENTION and runs["n_users"][0] == N_USERS
    knobs = json.loads(runs["convention_knobs"][0])
    assert knobs["gain"] == rankwise.PRESETS[CONVENTION].gain and set(knobs) == set(rankwise.Convention().knobs())
    assert runs["metrics"][0] == "precision,ndcg,f2" and runs["ks"][0] == "1,2"
    assert per_user.height == N_USERS * 3 * 2 and summary.height == 6
    assert set(per_user["run_id"]) == set(summary["run_id"]) == set(runs["run_id"])
    assert set(per_user["metric"]) == {"precision", "ndcg", "f2"} and set(per_user["k"]) == {1, 2}
    # NaN (undefined) is written as NULL: user 3 has no label
    undefined = per_user.filter(pl.col("user_id") == "3")
    assert undefined.height == 6 and undefined["value"].null_count() == undefined.height
    assert str(runs.schema["run_at"]) == "Datetime(time_unit='us', time_zone='UTC')"
    # who each mean left out, and why (it was not written: a warehouse saw the means without it)
    excluded = tables["excluded"]
    assert excluded.select("code", "reason", "n_users").rows() == result.excluded.rows()
    assert set(excluded["run_id"]) == set(runs["run_id"])


def test_fingerprint_is_the_data_not_the_container(result):
    other = rankwise.evaluate(RECS.to_pandas().sample(frac=1, random_state=1), TRUTH.to_arrow(), k=[1, 2],
                              metrics=["precision"])
    assert _write.fingerprint(result.prepared[None]) == _write.fingerprint(other.prepared[None])
    changed = rankwise.evaluate(RECS.with_columns(rank=pl.col("rank") * 2 % 3 + 1), TRUTH, k=1)
    assert _write.fingerprint(changed.prepared[None]) != _write.fingerprint(result.prepared[None])


def test_convention_name_is_the_conventions_own():
    """0.1 looked the name up by knob equality: sklearn was written as 'torchmetrics'."""
    res = rankwise.evaluate(RECS, TRUTH, k=1, convention="sklearn")
    assert _write.frames(res)["runs"]["convention"][0] == "sklearn"
    res = rankwise.evaluate(RECS, TRUTH, k=1, convention=rankwise.Convention(gain="linear"))
    runs = _write.frames(res)["runs"]
    assert runs["convention"][0] == res.convention.name
    assert json.loads(runs["convention_knobs"][0])["gain"] == "linear"


def _read(target, suffix: str, table: str) -> pl.DataFrame:
    if suffix == ".duckdb":
        with duckdb.connect(str(target)) as con:
            return con.sql(f"SELECT * FROM rankwise_{table}").pl()
    read = {".parquet": pl.read_parquet, ".csv": pl.read_csv, ".jsonl": pl.read_ndjson}[suffix]
    files = sorted((target / table).glob(f"*{suffix}"))
    return pl.concat([read(f) for f in files], how="vertical_relaxed")


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl", ".duckdb"])
def test_append_two_runs(result, tmp_path, suffix):
    target = tmp_path / f"runs{suffix}"
    result.write(target)
    result.write(target)
    runs, per_user, summary = (_read(target, suffix, t) for t in ("runs", "per_user", "summary"))
    assert per_user.columns == list(_write.PER_USER_SCHEMA) and summary.columns == list(_write.SUMMARY_SCHEMA)
    assert runs.height == 2 and per_user["run_id"].n_unique() == 2 and summary.height == 12
    by_run = summary.group_by("run_id").agg(pl.col("value").sort_by("metric", "k"))
    assert by_run["value"][0].to_list() == by_run["value"][1].to_list()  # comparable runs
    if suffix != ".duckdb":  # one immutable file per run and table, readable as one table by DuckDB
        assert len(list((target / "per_user").glob(f"*{suffix}"))) == 2
        reader = {".parquet": "read_parquet", ".csv": "read_csv", ".jsonl": "read_json"}[suffix]
        with duckdb.connect() as con:
            n = con.sql(f"SELECT COUNT(*) FROM {reader}('{target}/per_user/*{suffix}')").fetchall()[0][0]
        assert n == per_user.height


def test_a_duckdb_schema_named_like_the_file_is_written_to(result, tmp_path):
    # DuckDB names the database after the file: "analytics"."rankwise_runs" was ambiguous (catalog or schema)
    target = tmp_path / "analytics.duckdb"
    result.write(target, prefix="analytics.rankwise_")
    result.write(target, prefix="analytics.rankwise_")
    with duckdb.connect(str(target)) as con:
        n = con.sql('SELECT COUNT(*) FROM analytics.analytics.rankwise_runs').fetchall()[0][0]
    assert n == 2


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl", ".duckdb"])
def test_a_run_with_an_empty_table_can_be_appended_to(tmp_path, suffix):
    """No user in common (users='intersection'): per_user has no rows, and its .jsonl file is empty;
    the next append's column check read that file and failed with 'cannot read ... Expecting value'."""
    recs = pl.DataFrame({"user": [1, 1, 2], "item": [1, 2, 3], "rank": [1, 2, 1]})
    empty = rankwise.evaluate(recs, pl.DataFrame({"user": [3], "item": [2]}), k=1, metrics=["ndcg"],
                              convention=rankwise.Convention(users="intersection"))
    assert empty.long.height == 0
    target = tmp_path / f"runs{suffix}"
    empty.write(target)
    empty.write(target)
    assert _read(target, suffix, "runs").height == 2


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl", ".duckdb"])
def test_schema_mismatch_is_an_error_before_anything_is_written(result, tmp_path, suffix):
    target = tmp_path / f"runs{suffix}"
    wrong = pl.DataFrame({"user": [1], "score": [0.5]})
    if suffix == ".duckdb":
        with duckdb.connect(str(target)) as con:  # rankwise's columns, a type of its own: replace starts it over
            con.execute("CREATE TABLE rankwise_summary (run_id VARCHAR, run_name VARCHAR, metric VARCHAR, "
                        "k BIGINT, value VARCHAR, n_users BIGINT, ci_low DOUBLE, ci_high DOUBLE)")
    else:
        (target / "summary").mkdir(parents=True)  # a file named as rankwise names its own: replace removes it
        path = target / "summary" / f"run-20240101T000000000000Z-{'0' * 32}{suffix}"
        {".parquet": wrong.write_parquet, ".csv": wrong.write_csv, ".jsonl": wrong.write_ndjson}[suffix](path)
    with pytest.raises(rankwise.WriteSchemaError, match="other columns") as info:
        result.write(target)
    assert "Hint:" in str(info.value) and "mode='replace'" in str(info.value)
    if suffix == ".duckdb":  # per_user is written before summary: the transaction left nothing
        with duckdb.connect(str(target)) as con:
            assert con.sql("SELECT COUNT(*) FROM information_schema.tables "
                           "WHERE table_name = 'rankwise_per_user'").fetchall() == [(0,)]
    else:
        assert not (target / "per_user").exists() or not list((target / "per_user").iterdir())
    result.write(target, mode="replace")  # starting over works
    assert _read(target, suffix, "summary").height == 6


def test_unknown_target(result):
    with pytest.raises(rankwise.ParameterError, match="Cannot tell where"):
        result.write("runs.xlsx")


@pytest.mark.parametrize("target", ["s3://bucket/x.parquet", "duckdb:///x/u.duckdb", "delta:s3://bucket/runs",
                                    "gs://b/runs.csv"])
def test_a_uri_is_refused_not_written_to_a_local_path(result, tmp_path, monkeypatch, target):
    """Path() collapsed s3://bucket/x.parquet to the local directory ./s3:/bucket/x.parquet and the
    write 'succeeded'."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(rankwise.ParameterError, match="local paths only"):
        result.write(target)
    assert list(tmp_path.iterdir()) == []


def test_a_legacy_single_file_is_not_overwritten(result, tmp_path):
    legacy = tmp_path / "runs.parquet"
    RECS.write_parquet(legacy)
    with pytest.raises(rankwise.WriteError, match="dataset directory"):
        result.write(legacy)
    assert pl.read_parquet(legacy).equals(RECS)


def test_postgres_runs_in_one_schema_and_case_kept(result, pg_dsn):
    import psycopg

    schema = f"rw_{uuid.uuid4().hex[:10]}"
    uri = "postgresql://postgres@127.0.0.1:54329/postgres"
    try:
        for prefix in (f"{schema}.rankwise_", f"{schema}.rankwise_", f"{schema}.RW_", f"{schema}.RW_"):
            result.write(uri, prefix=prefix)  # twice each: the schema and case-kept names are found again
        with psycopg.connect(pg_dsn) as con:
            rows = con.execute(f'SELECT run_id, metric, k, value, n_users FROM "{schema}".rankwise_summary '
                               "ORDER BY run_id, metric, k").fetchall()
            runs = con.execute(f'SELECT COUNT(*), COUNT(DISTINCT inputs_fingerprint) FROM "{schema}"."RW_runs"') \
                .fetchone()
            n_per_user = con.execute(f'SELECT COUNT(DISTINCT run_id), COUNT(*) FROM "{schema}".rankwise_per_user') \
                .fetchone()
        by_run = {}
        for run_id, *rest in rows:
            by_run.setdefault(run_id, []).append(tuple(rest))
        first, second = by_run.values()
        assert first == second and runs == (2, 1)
        assert n_per_user == (2, 2 * N_USERS * 6)
        with psycopg.connect(pg_dsn, autocommit=True) as con:
            con.execute(f'CREATE TABLE "{schema}".bad_summary (metric TEXT)')
        with pytest.raises(rankwise.WriteSchemaError, match="other columns"):
            result.write(uri, prefix=f"{schema}.bad_")
        with psycopg.connect(pg_dsn) as con:  # the failed write left nothing behind
            assert con.execute(f"SELECT to_regclass('{schema}.bad_per_user')").fetchone() == (None,)
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as con:
            con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_cli_output(tmp_path, capsys):
    recs, truth = tmp_path / "recs.parquet", tmp_path / "truth.parquet"
    RECS.write_parquet(recs)
    TRUTH.write_parquet(truth)
    target = tmp_path / "runs.duckdb"
    for _ in range(2):
        assert main(["evaluate", str(recs), str(truth), "--k", "1,2", "--output", str(target)]) == 0
        assert (f"rankwise: wrote run 'recs' to {target}:main: tables rankwise_runs, rankwise_per_user, "
                "rankwise_summary, rankwise_excluded\n") in capsys.readouterr().out
    with duckdb.connect(str(target)) as con:
        assert con.sql("SELECT COUNT(DISTINCT run_id) FROM rankwise_summary").fetchall() == [(2,)]
    bad = tmp_path / "bad.duckdb"
    with duckdb.connect(str(bad)) as con:
        con.execute("CREATE TABLE rankwise_per_user (x INTEGER)")
    assert main(["evaluate", str(recs), str(truth), "--output", str(bad)]) == 3
    assert "WriteSchemaError" in capsys.readouterr().err


# -- per_item (beyond-accuracy metrics) ---------------------------------------------------------------

TRAIN = pl.DataFrame({"user": [7, 8, 8], "item": [10, 10, 12]})
# by hand: top 1 = {1: 10, 2: 10, 3: 12}, top 2 adds item 11 (user 1); the catalog is the train items
# {10, 12}; popularity = distinct train users (10: 7 and 8; 12: 8; 11: none)
PER_ITEM = {("10", 1): (2, 2), ("12", 1): (1, 1), ("10", 2): (2, 2), ("11", 2): (1, 0), ("12", 2): (1, 1)}


@pytest.fixture
def beyond_result():
    return rankwise.evaluate(RECS, TRUTH, k=[1, 2], metrics=["precision", "novelty", "item_coverage"], train=TRAIN)


def _target(tmp_path, suffix):
    """(target, reader of one table, write options) for a dataset directory, a DuckDB file or Delta tables."""
    target = tmp_path / ("runs" if suffix == "delta" else f"runs{suffix}")
    read = (lambda t: pl.read_delta(str(target / t))) if suffix == "delta" else (lambda t: _read(target, suffix, t))
    return target, read, {"format": "delta"} if suffix == "delta" else {}


def _assert_cleared(target, suffix: str, table: str) -> None:
    """After a write with mode="replace" of a result without ``table``: no rows of it are left."""
    if suffix == ".duckdb":
        with duckdb.connect(str(target)) as con:  # emptied, not dropped (its grants and indexes stay)
            assert con.sql(f"SELECT COUNT(*) FROM rankwise_{table}").fetchall() == [(0,)]
    elif suffix == "delta":
        assert pl.read_delta(str(target / table)).height == 0 and pl.read_delta(str(target / "runs")).height == 1
    else:
        assert list((target / table).glob(f"*{suffix}")) == []


def _per_item(frame: pl.DataFrame) -> dict:
    return {(str(r["item_id"]), r["k"]): (r["exposure"], r["popularity"]) for r in frame.iter_rows(named=True)}


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl", ".duckdb", "delta"])
def test_per_item_is_written_and_read_back(beyond_result, result, tmp_path, suffix):
    target, read, kwargs = _target(tmp_path, suffix)
    out = beyond_result.write(target, **kwargs)
    assert set(out) == {"runs", "per_user", "summary", "excluded", "per_item"}
    beyond_result.write(target, **kwargs)
    per_item, runs = read("per_item"), read("runs")
    assert per_item.columns == list(_write.PER_ITEM_SCHEMA) and per_item["run_id"].n_unique() == 2
    assert set(per_item["run_id"]) == set(runs["run_id"])
    for run_id in runs["run_id"]:
        assert _per_item(per_item.filter(pl.col("run_id") == run_id)) == PER_ITEM
    result.write(target, mode="replace", **kwargs)  # starting over without per_item clears the old one
    _assert_cleared(target, suffix, "per_item")


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl", ".duckdb", "delta"])
def test_segments_are_written_and_read_back(result, tmp_path, suffix):
    """A result with segments= was written without its per-segment means: they were lost on write."""
    segments = pl.DataFrame({"user": [1, 2, 3, 4], "segment": ["a", "a", "b", "b"]})
    res = rankwise.evaluate(RECS, TRUTH, k=[1, 2], metrics=["precision"], segments=segments)
    target, read, kwargs = _target(tmp_path, suffix)
    out = res.write(target, **kwargs)
    assert set(out) == {"runs", "per_user", "summary", "excluded", "segments"}
    written, runs = read("segments"), read("runs")
    assert written.columns == list(_write.SEGMENTS_SCHEMA) and set(written["run_id"]) == set(runs["run_id"])
    # by hand, precision: user 1 (rank 1: 10, rank 2: 11 relevant) 0 at k=1, 1/2 at k=2; user 2 (10, label
    # 12) 0; users 3 (no label: excluded) and 4 (no list: 0); a = users 1, 2; b = user 4
    got = {(r["segment"], r["k"]): (r["value"], r["n_users"]) for r in written.iter_rows(named=True)}
    assert got == {("a", 1): (0.0, 2), ("a", 2): (0.25, 2), ("b", 1): (0.0, 1), ("b", 2): (0.0, 1)}
    result.write(target, mode="replace", **kwargs)  # starting over without segments clears the old ones
    _assert_cleared(target, suffix, "segments")


def test_per_item_schema_mismatch_writes_nothing(beyond_result, tmp_path):
    target = tmp_path / "runs.parquet"
    (target / "per_item").mkdir(parents=True)
    pl.DataFrame({"item": [1]}).write_parquet(target / "per_item" / "old.parquet")
    with pytest.raises(rankwise.WriteSchemaError, match="per_item"):
        beyond_result.write(target)
    assert not any((target / t).exists() and list((target / t).iterdir()) for t in ("per_user", "summary", "runs"))


def test_postgres_per_item(beyond_result, pg_dsn):
    import psycopg

    schema = f"rw_{uuid.uuid4().hex[:10]}"
    try:
        beyond_result.write("postgresql://postgres@127.0.0.1:54329/postgres", prefix=f"{schema}.rankwise_")
        with psycopg.connect(pg_dsn) as con:
            rows = con.execute(f'SELECT item_id, k, exposure, popularity FROM "{schema}".rankwise_per_item').fetchall()
        assert {(i, k): (e, p) for i, k, e, p in rows} == PER_ITEM
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as con:
            con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_postgres_segments_per_run(pg_dsn):
    """Two runs with segments into PostgreSQL: each run's per-segment means under its own run_id."""
    import psycopg

    segments = pl.DataFrame({"user": [1, 2, 3, 4], "segment": ["a", "a", "b", "b"]})
    two = rankwise.evaluate({"full": RECS, "head": RECS.head(2)}, TRUTH, k=2, metrics=["precision"], segments=segments)
    schema = f"rw_{uuid.uuid4().hex[:10]}"
    try:
        two.write("postgresql://postgres@127.0.0.1:54329/postgres", prefix=f"{schema}.rankwise_")
        with psycopg.connect(pg_dsn) as con:
            rows = con.execute(f'SELECT r.run_name, s.segment, s.value, s.n_users FROM "{schema}".rankwise_segments s '
                               f'JOIN "{schema}".rankwise_runs r USING (run_id) ORDER BY 1, 2').fetchall()
        # by hand, precision@2: "full" a = (1/2 + 0) / 2, b = user 4's 0 (user 3 has no label); "head" keeps
        # user 1's two items only: a = (1/2 + 0) / 2 (user 2 has no list: 0), b = 0
        assert rows == [("full", "a", 0.25, 2), ("full", "b", 0.0, 1), ("head", "a", 0.25, 2), ("head", "b", 0.0, 1)]
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as con:
            con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_excluded_is_written_per_run():
    """Several runs: each run's exclusions under its own run_id and name, as Result.excluded has them."""
    two = rankwise.evaluate({"a": RECS, "b": RECS.head(2)}, TRUTH, k=1, metrics=["precision"])
    tables = _write.frames(two)
    runs = dict(tables["runs"].select("run_name", "run_id").iter_rows())
    written = tables["excluded"].with_columns(pl.col("run_id").replace_strict({v: k for k, v in runs.items()}))
    assert written.select("run_id", "code", "reason", "n_users").rows() == two.excluded.rows()
    assert (written["run_id"] == written["run_name"]).all()


def test_runs_n_users_counts_the_evaluated_users_with_catalog_metrics_only():
    """runs.n_users was counted from per-user rows: 0 when every metric is a catalog metric."""
    recs = pl.DataFrame({"user": [1, 1, 2, 3, 5, 5], "item": [10, 11, 10, 12, 11, 12], "rank": [1, 2, 1, 1, 1, 2]})
    truth = pl.DataFrame({"user": [1, 2, 4, 5], "item": [11, 12, 10, 12]})
    train = pl.DataFrame({"user": [7, 7, 8, 8, 9], "item": [10, 11, 10, 12, 10]})
    # item_coverage is over the recommended lists: users 1, 2, 3 and 5 (4 has no list), truth or not
    for labels in (truth, None):
        res = rankwise.evaluate(recs, labels, k=[1, 2], metrics=["item_coverage"], train=train)
        assert _write.frames(res)["runs"]["n_users"].to_list() == [4]


@pytest.mark.parametrize("autocommit", [False, True])
def test_postgres_write_to_the_callers_connection(result, pg_dsn, autocommit):
    """evaluate(backend=) takes a psycopg connection; write() gave a garbled error about a 'suffix'."""
    import psycopg

    schema = f"rw_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(pg_dsn, autocommit=autocommit) as con:
            out = result.write(con, prefix=f"{schema}.rw_")
            assert not con.closed and set(out) == {"runs", "per_user", "summary", "excluded"}
            assert con.execute("SELECT 1").fetchone() == (1,)  # still the caller's to use
        with psycopg.connect(pg_dsn) as other:  # committed: another session sees the run
            assert other.execute(f'SELECT COUNT(*) FROM "{schema}".rw_runs').fetchone() == (1,)
            assert other.execute(f'SELECT COUNT(*) FROM "{schema}".rw_per_user').fetchone() == (N_USERS * 6,)
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as con:
            con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_a_target_of_another_type_names_the_target_forms(result):
    with pytest.raises(rankwise.ParameterError, match="psycopg connection") as info:
        result.write(42)
    assert "suffix" not in str(info.value)


@pytest.mark.parametrize("target", ["runs.parquet", "delta:runs"])
def test_a_prefix_is_refused_where_there_are_no_tables_to_name(result, tmp_path, monkeypatch, target):
    """prefix= was ignored for dataset and Delta targets: the caller's tables were not named as asked."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(rankwise.ParameterError, match="prefix") as info:
        result.write(target, prefix="analytics.rw_")
    assert "Hint:" in str(info.value) and list(tmp_path.iterdir()) == []
    result.write(target, prefix="rankwise_")  # the default, spelled out, is fine


def test_the_inputs_fingerprint_is_computed_once_for_report_and_write(tmp_path, monkeypatch):
    """The run card and write() each sorted every input row for the fingerprint (about 15 s per run at
    1M users x 100): the Result computes it once, and both show the same digest."""
    pytest.importorskip("altair")
    calls = []
    real = _write.fingerprint
    monkeypatch.setattr(_write, "fingerprint", lambda prep: calls.append(prep) or real(prep))
    res = rankwise.evaluate(RECS, TRUTH, k=[1, 2], metrics=["precision"])
    page = res.report(tmp_path / "r.html").read_text()
    res.write(tmp_path / "runs.parquet")
    written = pl.read_parquet(tmp_path / "runs.parquet" / "runs" / "*.parquet")["inputs_fingerprint"].item()
    assert len(calls) == 1 and written == real(res.prepared[None]) and written in page


# -- what a write names (issue 37) -------------------------------------------------------------------------


def test_a_single_run_is_named_after_its_recommendations_file(tmp_path):
    """A single run was stored with run_name NULL."""
    RECS.write_parquet(tmp_path / "popular.parquet")
    for recommendations, name in ((tmp_path / "popular.parquet", "popular"), (str(tmp_path / "popular.parquet"), "popular"),
                                  (RECS, "run")):
        res = rankwise.evaluate(recommendations, TRUTH, k=[1, 2], metrics=["precision"])
        for table, frame in _write.frames(res).items():
            assert frame["run_name"].to_list() == [name] * frame.height, table
    two = _write.frames(rankwise.evaluate({"a": RECS, "b": RECS}, TRUTH, k=1, metrics=["precision"]))
    assert sorted(two["runs"]["run_name"]) == ["a", "b"]


@pytest.mark.parametrize("suffix", [".duckdb", ".parquet"])
def test_a_write_names_the_tables_it_wrote(result, tmp_path, caplog, suffix):
    target = tmp_path / f"runs{suffix}"
    with caplog.at_level("INFO", logger="rankwise"):
        written = result.write(target)
    if suffix == ".duckdb":
        names = ["rankwise_runs", "rankwise_per_user", "rankwise_summary", "rankwise_excluded"]
        assert written.description == f"wrote run 'run' to {target}:main: tables {', '.join(names)}"
        with duckdb.connect(str(target), read_only=True) as con:  # the names are the tables'
            assert sorted(names) == sorted(row[0] for row in con.sql("SHOW TABLES").fetchall())
    else:
        assert written.description == f"wrote run 'run' to {target}: folders runs/, per_user/, summary/, excluded/"
        assert sorted(p.name for p in target.iterdir() if not p.name.startswith(".")) == [
            "excluded", "per_user", "runs", "summary"]
    assert written.description in caplog.text
    assert set(written) == {"runs", "per_user", "summary", "excluded"}  # still {table: where}
