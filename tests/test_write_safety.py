"""Result.write under attack and under failure (issue 15): hostile prefixes never reach SQL, two
processes appending at once lose nothing, ``kill -9`` mid-write leaves every earlier run readable,
a failed write leaves no part of its run, and every failure is a typed error with a hint."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import duckdb
import polars as pl
import pytest

import rankwise
from rankwise.io import write as _write

RECS = pl.DataFrame({"user": [1, 1, 2, 3], "item": [10, 11, 10, 12], "rank": [1, 2, 1, 1]})
TRUTH = pl.DataFrame({"user": [1, 2, 4], "item": [11, 12, 10]})
ROWS_PER_RUN = 3 * 2 * 2  # users 1, 2, 4 (the default evaluates the ground truth's users) x precision, ndcg x k = 1, 2
SETUP = """
import os, pickle, sys, time
with open("result.pickle", "rb") as handle:  # the parent's Result: no evaluate (and no scipy import) per child
    result = pickle.load(handle)
def signal_file(path):
    open(path, "w").close()
"""
RESULT = functools.cache(lambda: rankwise.evaluate(RECS, TRUTH, k=[1, 2], metrics=["precision", "ndcg"]))
FILE_TARGETS = {"parquet": "runs.parquet", "csv": "runs.csv", "jsonl": "runs.jsonl"}


@pytest.fixture
def result():
    return RESULT()


def _pg_uri(dsn: str) -> str:
    import psycopg

    info = psycopg.conninfo.conninfo_to_dict(dsn)
    return f"postgresql://{info['user']}@{info['host']}:{info['port']}/{info['dbname']}"


def read(target: str | Path, table: str, prefix: str = "rankwise_") -> pl.DataFrame:
    """One table of a target, read with DuckDB (datasets as one glob) or Polars (Delta)."""
    target = str(target)
    if target.startswith("delta:"):
        return pl.read_delta(str(Path(target.removeprefix("delta:")) / table))
    if target.endswith(".duckdb"):
        with duckdb.connect(target, read_only=True) as con:
            return con.sql(f'SELECT * FROM "{prefix}{table}"').pl()
    suffix = Path(target).suffix
    reader = {".parquet": "read_parquet", ".csv": "read_csv", ".jsonl": "read_json"}[suffix]
    with duckdb.connect() as con:  # DuckDB reads the dataset directory as one table
        return con.sql(f"SELECT * FROM {reader}('{target}/{table}/*{suffix}')").pl()


def assert_complete_runs(target, n_runs: int) -> None:
    """n_runs runs, each with all its per-user and summary rows, and nothing else."""
    runs, per_user, summary = (read(target, t) for t in ("runs", "per_user", "summary"))
    assert runs.height == n_runs and runs["run_id"].n_unique() == n_runs, runs
    assert per_user.group_by("run_id").len().sort("run_id")["len"].to_list() == [ROWS_PER_RUN] * n_runs
    assert set(per_user["run_id"]) == set(summary["run_id"]) == set(runs["run_id"])
    assert summary.height == 4 * n_runs


def spawn(code: str, *args, cwd: Path) -> subprocess.Popen:
    """A child Python running SETUP then ``code`` in ``cwd``, with ``result`` and ``signal_file``."""
    if not (cwd / "result.pickle").exists():
        (cwd / "result.pickle").write_bytes(pickle.dumps(RESULT()))
    return subprocess.Popen([sys.executable, "-c", SETUP + textwrap.dedent(code), *map(str, args)], cwd=cwd,
                            stderr=subprocess.PIPE, text=True)


def wait_for(path: Path, *procs: subprocess.Popen) -> None:
    """Until ``path`` exists (a child's signal); a child that died instead fails the test with its stderr."""
    while not path.exists():
        for proc in procs:
            if proc.poll() is not None:
                pytest.fail(f"child exited with {proc.returncode}:\n{proc.stderr.read()}")
        time.sleep(0.01)


# -- 1. hostile prefixes: validated, never pasted ------------------------------------------------------

HOSTILE = ['x; DROP TABLE sentinel; --', '"', 'x"; COPY (SELECT 1) TO PROGRAM \'touch {marker}\'; --',
           "x'; DROP TABLE sentinel; --", "a\nb", "ünïcode_", "a.b.c", ".x", "x y", "", "1abc", None, 5,
           "rankwise_\n", "analytics.rw_\n"]  # a trailing newline: '$' let it through, silently dropped


@pytest.fixture
def marker():
    """A path any local user (PostgreSQL's server user too) could create: an injection would touch it."""
    folder = Path(tempfile.mkdtemp(prefix="rankwise-marker-"))
    folder.chmod(0o777)
    yield folder / "MARKER"
    (folder / "MARKER").unlink(missing_ok=True)
    folder.rmdir()


def _hostile(marker: Path) -> list:
    return [p.format(marker=marker) if isinstance(p, str) else p for p in HOSTILE]


def test_hostile_prefixes_never_reach_duckdb(result, tmp_path, marker):
    target = tmp_path / "runs.duckdb"
    with duckdb.connect(str(target)) as con:
        con.execute("CREATE TABLE sentinel AS SELECT 42 AS x")
    for prefix in _hostile(marker):
        if prefix == "":
            continue  # the empty prefix is valid: tables runs, per_user, summary
        with pytest.raises(rankwise.InvalidIdentifierError) as info:
            result.write(target, prefix=prefix)
        assert repr(prefix) in str(info.value) and "Hint:" in str(info.value)
    with duckdb.connect(str(target)) as con:
        assert con.sql("SELECT * FROM sentinel").fetchall() == [(42,)]
        assert con.sql("SELECT table_name FROM information_schema.tables").fetchall() == [("sentinel",)]
    assert not marker.exists()


def test_hostile_prefixes_never_reach_postgres(result, pg_dsn, marker):
    import psycopg

    schema = f"rw_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_dsn, autocommit=True) as con:
        con.execute(f'CREATE SCHEMA "{schema}"; CREATE TABLE "{schema}".sentinel AS SELECT 42 AS x')
    try:
        for prefix in _hostile(marker):
            if prefix == "":
                continue
            for qualified in ([prefix, f"{schema}.{prefix}"] if isinstance(prefix, str) else [prefix]):
                with pytest.raises(rankwise.InvalidIdentifierError, match="Hint:"):
                    result.write(_pg_uri(pg_dsn), prefix=qualified)
        with psycopg.connect(pg_dsn) as con:
            assert con.execute(f'SELECT x FROM "{schema}".sentinel').fetchall() == [(42,)]
            assert con.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = %s",
                               (schema,)).fetchone() == (1,)
        assert not marker.exists()
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as con:
            con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_schema_reserved_words_and_case_are_quoted_and_found_again_in_duckdb(result, tmp_path):
    target = tmp_path / "runs.duckdb"
    for prefix in ("analytics.rankwise_", "analytics.rankwise_", "RW_", "RW_", "select.order_", "select.order_"):
        result.write(target, prefix=prefix)  # twice each: the second finds the tables the first made
    with duckdb.connect(str(target)) as con:
        for table in ("analytics.rankwise_runs", '"RW_runs"', '"select"."order_runs"'):
            assert con.sql(f"SELECT count(*) FROM {table}").fetchall() == [(2,)]


# -- 2. concurrent appends -------------------------------------------------------------------------------

WRITER = """
go, targets = sys.argv[1], sys.argv[2:]
signal_file(f"ready-{os.getpid()}")
while not os.path.exists(go):
    time.sleep(0.005)
for _ in range(5):
    for target in targets:
        result.write(target)
"""


def test_two_processes_appending_at_once_lose_nothing(tmp_path):
    targets = [*FILE_TARGETS.values(), "runs.duckdb", "delta:runs_delta"]
    writers = [spawn(WRITER, "go", *targets, cwd=tmp_path) for _ in range(2)]
    for proc in writers:
        wait_for(tmp_path / f"ready-{proc.pid}", *writers)
    (tmp_path / "go").touch()  # both start together, each writing 5 runs to every target in turn
    for proc in writers:
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
    for target in targets:
        assert_complete_runs(tmp_path / target if ":" not in target else f"delta:{tmp_path}/runs_delta", 10)


# -- 3. kill -9 in the middle of a write -------------------------------------------------------------------

KILLED = {  # each child writes one run, then is held in the middle of its second write and killed there
    "files": """
        import os as real_os
        replace = real_os.replace
        def held(*args):  # all three tables are staged as hidden files; none renamed yet
            signal_file("held"); time.sleep(600)
        result.write(sys.argv[1]); real_os.replace = held; result.write(sys.argv[1])
    """,
    "duckdb": """
        import duckdb
        connect = duckdb.connect
        class Held:  # the transaction has inserted per_user; the summary insert never finishes
            def __init__(self, con): self.con = con
            def __getattr__(self, name): return getattr(self.con, name)
            def execute(self, query, *args):
                if query.startswith("INSERT") and "summary" in query:
                    signal_file("held"); time.sleep(600)
                return self.con.execute(query, *args)
        result.write(sys.argv[1]); duckdb.connect = lambda *a, **k: Held(connect(*a, **k)); result.write(sys.argv[1])
    """,
    "delta": """
        import deltalake
        write = deltalake.write_deltalake
        def held(location, data, **options):  # kill inside the per_user commit's file writes
            signal_file("held"); time.sleep(600)
        result.write(sys.argv[1]); deltalake.write_deltalake = held; result.write(sys.argv[1])
    """,
}


@pytest.mark.parametrize("target", [*FILE_TARGETS.values(), "runs.duckdb", "delta:runs_delta"])
def test_kill_9_mid_append_leaves_every_earlier_run_readable(tmp_path, target):
    kind = "delta" if target.startswith("delta:") else "duckdb" if target.endswith(".duckdb") else "files"
    where = f"delta:{tmp_path}/runs_delta" if kind == "delta" else tmp_path / target
    child = spawn(KILLED[kind], where, cwd=tmp_path)
    wait_for(tmp_path / "held", child)
    if kind == "files":  # the staged files are outside the table folders: a reader of a folder never meets them
        assert {p.name[:4] for t in ("runs", "per_user", "summary", "excluded") for p in (where / t).iterdir()} \
            == {"run-"}
        assert len(list((where / ".rankwise-staging").iterdir())) == 4
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert_complete_runs(where, 1)  # the first run, whole; nothing of the killed one is visible
    RESULT().write(where)  # and appends go on
    assert_complete_runs(where, 2)
    if kind == "files":  # the killed writer's staged files went with that next write
        assert [p.name for p in where.rglob("*") if p.is_file() and not p.name.startswith("run-")] == []


# -- 4. a failed write leaves no part of its run ---------------------------------------------------------


def _failing_summary(monkeypatch):
    """The summary frame gets text in its BIGINT column k: its insert fails after per_user's succeeded."""
    frames = _write.frames
    monkeypatch.setattr(_write, "frames", lambda *a, **k: {
        **(tables := frames(*a, **k)), "summary": tables["summary"].with_columns(k=pl.lit("not a number"))})


def test_a_failed_summary_leaves_no_per_user_rows_in_duckdb(result, tmp_path, monkeypatch):
    target = tmp_path / "runs.duckdb"
    result.write(target)
    _failing_summary(monkeypatch)
    with pytest.raises(rankwise.WriteError, match="Hint:"):
        result.write(target)
    assert_complete_runs(target, 1)


def test_a_failed_summary_leaves_no_per_user_rows_in_postgres(result, pg_dsn, monkeypatch):
    import psycopg

    schema = f"rw_{uuid.uuid4().hex[:10]}"
    try:
        result.write(_pg_uri(pg_dsn), prefix=f"{schema}.rw_")
        _failing_summary(monkeypatch)
        with pytest.raises(rankwise.WriteError, match="Hint:") as info:
            result.write(_pg_uri(pg_dsn), prefix=f"{schema}.rw_")
        assert not isinstance(info.value.__cause__, rankwise.RankwiseError)  # psycopg's error, wrapped
        with psycopg.connect(pg_dsn) as con:
            counts = [con.execute(f'SELECT count(*) FROM "{schema}"."rw_{t}"').fetchone()[0]
                      for t in ("runs", "per_user", "summary")]
        assert counts == [1, ROWS_PER_RUN, 4]
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as con:
            con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.parametrize("target", FILE_TARGETS.values())
def test_a_failed_file_write_leaves_no_files_of_its_run(result, tmp_path, monkeypatch, target):
    """Read-only directory, full disk: any OSError on the summary file. (Root ignores chmod, so patched.)"""
    result.write(tmp_path / target)
    write_file = _write._write_file

    def failing(frame, path, fmt):
        if path.name.startswith("summary."):  # staged as <table>.<file>.<host>.<pid>.tmp
            raise PermissionError(13, "Permission denied", str(path))
        write_file(frame, path, fmt)

    monkeypatch.setattr(_write, "_write_file", failing)
    with pytest.raises(rankwise.WriteError, match="Permission denied") as info:
        result.write(tmp_path / target)
    assert "Hint:" in str(info.value)
    assert_complete_runs(tmp_path / target, 1)
    assert sorted(p.name for p in (tmp_path / target).rglob("*") if p.is_file() and not p.name.startswith("run-")) == []


# -- 5. typed errors ------------------------------------------------------------------------------------------


def test_a_held_duckdb_file_is_retried_then_write_locked_error(result, tmp_path, monkeypatch):
    target = tmp_path / "runs.duckdb"
    holder = spawn("""
        import duckdb
        con = duckdb.connect(sys.argv[1]); signal_file("held"); time.sleep(600)
    """, target, cwd=tmp_path)
    try:
        wait_for(tmp_path / "held", holder)
        monkeypatch.setattr(_write, "LOCK_RETRIES", 3)  # 0.025 + 0.05 + 0.1 s of waiting
        with pytest.raises(rankwise.WriteLockedError, match="held by another process") as info:
            result.write(target)
        assert "Hint:" in str(info.value)
    finally:
        holder.kill()
        holder.wait()
    result.write(target)  # released: the write goes through
    assert_complete_runs(target, 1)


def test_a_duckdb_file_still_being_created_is_waited_for(result, tmp_path):
    """Another process has created the file but not yet written DuckDB's headers: DuckDB calls it
    invalid. The fresh-clone CI saw this in test_two_processes_appending_at_once_lose_nothing; the
    write must wait, not fail."""
    import threading

    target, ready = tmp_path / "runs.duckdb", tmp_path / "ready.duckdb"
    duckdb.connect(str(ready)).close()  # a complete new database file
    target.write_bytes(b"\0" * 100)  # what a process writing one shows for a moment

    def finish_creating():
        time.sleep(0.2)
        os.replace(ready, target)

    creator = threading.Thread(target=finish_creating)
    creator.start()
    try:
        result.write(target)
    finally:
        creator.join()
    assert_complete_runs(target, 1)


@pytest.mark.parametrize("target", [*FILE_TARGETS.values(), "runs.duckdb", "delta"])
def test_a_corrupt_existing_target_is_a_write_error(result, tmp_path, target):
    if target == "runs.duckdb":
        # longer than DuckDB's headers (a shorter file may be another process's new file: waited for)
        (tmp_path / target).write_bytes(b"not a database" * 1000)
        path = tmp_path / target
    elif target == "delta":
        (tmp_path / "d" / "per_user" / "_delta_log").mkdir(parents=True)
        (tmp_path / "d" / "per_user" / "_delta_log" / "00000000000000000000.json").write_text("{garbage")
        path = f"delta:{tmp_path}/d"
    else:
        (tmp_path / target / "summary").mkdir(parents=True)
        (tmp_path / target / "summary" / f"run-old{Path(target).suffix}").write_bytes(b"\x00\xff garbage")
        path = tmp_path / target
    with pytest.raises(rankwise.WriteError, match="Hint:") as info:
        result.write(path)
    assert type(info.value) in (rankwise.WriteError, rankwise.WriteSchemaError)
    if target in FILE_TARGETS.values():  # nothing was written next to the damaged file
        assert not (tmp_path / target / "per_user").exists()


def test_a_legacy_or_foreign_path_under_a_delta_target(result, tmp_path):
    (tmp_path / "d" / "runs").mkdir(parents=True)
    (tmp_path / "d" / "runs" / "notes.txt").write_text("mine")
    with pytest.raises(rankwise.WriteError, match="not a Delta table"):
        result.write(f"delta:{tmp_path}/d")
    assert not (tmp_path / "d" / "per_user").exists()


def test_a_delta_table_another_writer_is_creating_is_waited_for(result, tmp_path, monkeypatch):
    """Another writer creating a Delta table has written its data files but not yet the log's first commit: the
    folder holds only .parquet files. The write waits for the log, then appends (two processes appending at once
    failed here with 'exists and is not a Delta table' when one saw the other's table half made); a folder whose
    log never comes is still refused, after the wait."""
    import threading

    import deltalake

    result.write(f"delta:{tmp_path}/made")  # a finished table to copy the log from
    runs = tmp_path / "d" / "runs"
    runs.mkdir(parents=True)
    data = next((tmp_path / "made" / "runs").glob("*.parquet"))
    (runs / data.name).write_bytes(data.read_bytes())  # the creator's data file, no log yet

    def creator_commits():
        time.sleep(0.3)
        shutil.copytree(tmp_path / "made" / "runs" / "_delta_log", runs / "_delta_log")

    commit = threading.Thread(target=creator_commits)
    commit.start()
    result.write(f"delta:{tmp_path}/d")
    commit.join()
    assert deltalake.DeltaTable(str(runs)).to_pyarrow_table().num_rows == 2  # the creator's run and this one
    half_made = tmp_path / "e" / "runs"
    half_made.mkdir(parents=True)
    (half_made / data.name).write_bytes(data.read_bytes())
    monkeypatch.setattr(_write, "LOCK_RETRIES", 2)
    with pytest.raises(rankwise.WriteError, match="not a Delta table"):
        result.write(f"delta:{tmp_path}/e")


def test_delta_replace_starts_over_a_table_with_other_columns(result, tmp_path):
    """An existing Delta table with other columns: append is refused (hint: mode='replace'), and replace
    then failed ('Cannot cast schema') after per_user was already overwritten: half a write."""
    import deltalake

    deltalake.write_deltalake(str(tmp_path / "d" / "summary"), pl.DataFrame({"x": [1]}).to_arrow())
    with pytest.raises(rankwise.WriteSchemaError, match="mode='replace'"):
        result.write(f"delta:{tmp_path}/d")
    result.write(f"delta:{tmp_path}/d", mode="replace")
    assert_complete_runs(f"delta:{tmp_path}/d", 1)


def test_delta_without_the_package_is_a_missing_dependency(result, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "deltalake", None)
    with pytest.raises(rankwise.MissingDependencyError, match=r"rankwise\[delta\]"):
        result.write(tmp_path / "runs", format="delta")


def test_delta_targets_spelled_three_ways(result, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result.write("delta:a")
    result.write("a", format="delta")
    result.write("delta://a")
    result.write("a")  # an existing Delta dataset directory is recognised
    assert_complete_runs("delta:a", 4)


def test_a_bad_postgres_uri_is_a_write_error_without_the_password(result):
    for uri in ("postgresql://me:s3cret@[broken", "postgresql://me:s3cret@127.0.0.1:1/db",
                "postgresql://me@127.0.0.1:notaport/db"):
        with pytest.raises(rankwise.WriteError, match="Hint:") as info:
            result.write(uri)
        assert "s3cret" not in str(info.value)


# -- 6. ids of every type, user columns named like the written columns -----------------------------------------

IDS = {  # user ids of three types and their text form in user_id (by hand: JSON, lowercase hex)
    "struct": ([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}], ['{"a":1,"b":"x"}', '{"a":2,"b":"y"}']),
    "binary": ([b"\x00a", b"\xffb"], ["0061", "ff62"]),
    "list": ([[1, 2], [3]], ["[1,2]", "[3]"]),
}
FINGERPRINT = """
import polars as pl, sys
from rankwise.io import write as _write
from types import SimpleNamespace
frame = pl.read_ipc(sys.argv[1])
print(_write.fingerprint(SimpleNamespace(recommendations=frame, ground_truth=frame)))
"""


@pytest.mark.parametrize("kind", IDS)
def test_struct_binary_and_list_ids_are_written_and_fingerprinted(tmp_path, kind):
    (first, second), texts = IDS[kind]
    recs = pl.DataFrame({"user": [first, first, second], "item": [10, 11, 10], "rank": [1, 2, 1]})
    truth = pl.DataFrame({"user": [first, second], "item": [11, 10]})
    res = rankwise.evaluate(recs, truth, k=1, metrics=["precision"])
    res.write(tmp_path / "runs.parquet")
    rows = read(tmp_path / "runs.parquet", "per_user").sort("user_id")
    assert rows.select("user_id", "value").rows() == [(texts[0], 0.0), (texts[1], 1.0)]  # user 1 hits at rank 2
    fingerprint = read(tmp_path / "runs.parquet", "runs")["inputs_fingerprint"][0]
    assert len(fingerprint) == 64
    # stable: another process with another hash seed gets the same digest of the same rows in another order
    canonical = res.prepared[None].recommendations
    canonical.reverse().write_ipc(tmp_path / "recs.arrow")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", FINGERPRINT, str(tmp_path / "recs.arrow")], env=env,
                         capture_output=True, text=True, check=True).stdout.strip()
    prepared = type("P", (), {"recommendations": canonical, "ground_truth": canonical})
    assert out == _write.fingerprint(prepared)
    first_row = pl.int_range(pl.len()) == 0
    changed = canonical.with_columns(user_id=pl.when(first_row).then(pl.col("user_id").last())
                                     .otherwise(pl.col("user_id")))  # row 1 moved to the other user
    assert _write.fingerprint(type("P", (), {"recommendations": changed, "ground_truth": changed})) != out


@pytest.mark.parametrize("user_col", ["value", "metric", "run_id", "user_id", "run_name"])
def test_a_user_column_named_like_a_written_column(tmp_path, user_col):
    res = rankwise.evaluate(RECS.rename({"user": user_col}), TRUTH.rename({"user": user_col}), k=[1, 2],
                            metrics=["precision", "ndcg"], user_col=user_col)
    res.write(tmp_path / "runs.parquet")
    assert_complete_runs(tmp_path / "runs.parquet", 1)
    rows = read(tmp_path / "runs.parquet", "per_user").filter(metric="precision", k=2).sort("user_id")
    # the ground truth's users (the default): user 3 has recommendations only and is not evaluated
    assert rows.select("user_id", "value").rows() == [("1", 0.5), ("2", 0.0), ("4", 0.0)]


# -- 7. Delta: a run is whole or absent across its tables ----------------------------------------------------


def _runs_are_whole(target) -> set:
    """The run ids with a runs row; each has all its per-user and summary rows (orphan rows of a run
    without a runs row are allowed: such a run is incomplete, not wrong)."""
    runs, per_user, summary = (read(target, t) for t in ("runs", "per_user", "summary"))
    for run_id in runs["run_id"]:
        assert per_user.filter(run_id=run_id).height == ROWS_PER_RUN and summary.filter(run_id=run_id).height == 4
    return set(runs["run_id"])


def _failing_delta_write(monkeypatch, table: str):
    """write_deltalake raises (as a full disk would) when it comes to ``table``."""
    import deltalake

    write = deltalake.write_deltalake

    def failing(location, *args, **kwargs):
        if Path(str(location)).name == table:
            raise OSError(28, "No space left on device")
        return write(location, *args, **kwargs)

    monkeypatch.setattr(deltalake, "write_deltalake", failing)


def test_a_failed_delta_append_leaves_no_rows_of_its_run(result, tmp_path, monkeypatch):
    """per_user was committed, summary failed: per_user kept the failed run's rows."""
    target = f"delta:{tmp_path}/d"
    result.write(target)
    _failing_delta_write(monkeypatch, "summary")
    with pytest.raises(rankwise.WriteError, match="No space left"):
        result.write(target)
    assert_complete_runs(target, 1)


def test_a_failed_delta_replace_keeps_the_old_runs(result, tmp_path, monkeypatch):
    """replace overwrote per_user and summary, then failed at runs: the old run lost its rows and the
    new one had no runs row."""
    target = f"delta:{tmp_path}/d"
    result.write(target)
    old = set(read(target, "runs")["run_id"])
    _failing_delta_write(monkeypatch, "runs")
    with pytest.raises(rankwise.WriteError, match="No space left"):
        result.write(target, mode="replace")
    assert_complete_runs(target, 1)
    assert set(read(target, "runs")["run_id"]) == old


def test_delta_replace_removes_the_runs_row_before_the_rows(result, tmp_path, monkeypatch):
    """A replace stopped after its first delete (a kill): every run with a runs row is whole."""
    import deltalake

    target = f"delta:{tmp_path}/d"
    result.write(target)
    result.write(target)
    delete, calls = deltalake.DeltaTable.delete, []

    def stopping(self, *args, **kwargs):
        if calls:
            raise KeyboardInterrupt
        calls.append(1)
        return delete(self, *args, **kwargs)

    monkeypatch.setattr(deltalake.DeltaTable, "delete", stopping)
    with pytest.raises(KeyboardInterrupt):
        result.write(target, mode="replace")
    assert len(_runs_are_whole(target)) == 1  # the new run only: the old ones are incomplete, not half-there
    monkeypatch.undo()
    result.write(target, mode="replace")
    assert_complete_runs(target, 1)


@pytest.mark.parametrize(("table", "column", "dtype"), [("per_user", "value", pl.Float32),
                                                        ("runs", "run_at", pl.Date)])
def test_delta_append_checks_the_column_types(result, tmp_path, table, column, dtype):
    """Only the names were compared: Float32 values and Date run_at (the time dropped) were cast silently."""
    import deltalake

    frame = _write.frames(result)[table].with_columns(pl.col(column).cast(dtype))
    deltalake.write_deltalake(str(tmp_path / "d" / table), frame.to_arrow())
    with pytest.raises(rankwise.WriteSchemaError, match=f"{column} "):
        result.write(f"delta:{tmp_path}/d")
    assert not (tmp_path / "d" / "per_user" if table == "runs" else tmp_path / "d" / "summary").exists()


@pytest.mark.parametrize(("name", "char"), [("out[1]", "["), ("a%41b", "%"), ("x^y", "^"), ("p|q", "|")])
def test_a_delta_path_deltalake_misreads_is_a_parameter_error(result, tmp_path, monkeypatch, name, char):
    """'[' made deltalake panic (a BaseException past every handler) and '%' was percent-decoded
    (the table written to another directory); both left files behind."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(rankwise.ParameterError, match="Delta") as info:
        result.write(f"delta:{name}")
    assert repr(char) in str(info.value) and "Hint:" in str(info.value)
    assert list(tmp_path.iterdir()) == []


# -- 8. replace on a database: only rankwise's tables, emptied in place -----------------------------------------


@pytest.fixture(params=["duckdb", "postgres"])
def database(request, tmp_path):
    """(target, prefix, run(sql) -> rows) for a DuckDB file or a fresh PostgreSQL schema."""
    if request.param == "duckdb":
        target = tmp_path / "runs.duckdb"

        def run(statement):
            with duckdb.connect(str(target)) as con:
                cur = con.execute(statement)
                return cur.fetchall() if cur.description else []

        yield str(target), "analytics.", run, "analytics"
        return
    import psycopg

    dsn = request.getfixturevalue("pg_dsn")
    schema = f"rw_{uuid.uuid4().hex[:10]}"

    def run(statement):
        with psycopg.connect(dsn, autocommit=True) as con:
            cur = con.execute(statement)
            return cur.fetchall() if cur.description else []

    run(f'CREATE SCHEMA "{schema}"')
    try:
        yield _pg_uri(dsn), f"{schema}.", run, schema
    finally:
        run(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_replace_refuses_someone_elses_table_of_a_rankwise_name(result, database):
    """prefix='analytics.': replace dropped the user's analytics.segments (a table it does not even write)."""
    target, prefix, run, schema = database
    run(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    run(f"CREATE TABLE {schema}.segments (id INTEGER, name TEXT)")
    run(f"INSERT INTO {schema}.segments VALUES (1, 'mine')")
    result.write(target, prefix=prefix)
    with pytest.raises(rankwise.WriteSchemaError, match="segments") as info:
        result.write(target, prefix=prefix, mode="replace")
    assert "not a rankwise table" in str(info.value)
    assert run(f"SELECT * FROM {schema}.segments") == [(1, "mine")]
    assert len(run(f"SELECT * FROM {schema}.runs")) == 1  # nothing changed


def test_replace_keeps_indexes_and_dependent_views(result, database):
    """replace was DROP + CREATE: the index went, and a view on runs made it fail (a privileges hint)."""
    target, prefix, run, schema = database
    result.write(target, prefix=prefix)
    result.write(target, prefix=prefix)
    run(f"CREATE INDEX per_user_by_user ON {schema}.per_user (user_id)")
    run(f"CREATE VIEW {schema}.run_names AS SELECT run_id FROM {schema}.runs")
    result.write(target, prefix=prefix, mode="replace")
    assert len(run(f"SELECT * FROM {schema}.run_names")) == 1
    indexes = "SELECT index_name FROM duckdb_indexes()" if target.endswith(".duckdb") else \
        f"SELECT indexname FROM pg_indexes WHERE schemaname = '{schema}'"
    assert ("per_user_by_user",) in run(indexes)


def test_replace_of_a_table_with_other_types_names_the_dependent_view(result, pg_dsn):
    """Column types differ: replace must drop the table; a view on it is named in the hint."""
    import psycopg

    schema = f"rw_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_dsn, autocommit=True) as con:
        con.execute(f'CREATE SCHEMA "{schema}"')
        try:
            result.write(_pg_uri(pg_dsn), prefix=f"{schema}.")
            con.execute(f'ALTER TABLE "{schema}".per_user ALTER COLUMN value TYPE real')
            con.execute(f'CREATE VIEW "{schema}".v AS SELECT value FROM "{schema}".per_user')
            with pytest.raises(rankwise.WriteError, match="depends on") as info:
                result.write(_pg_uri(pg_dsn), prefix=f"{schema}.", mode="replace")
            assert "privileges" not in str(info.value)
        finally:
            con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


# -- 9. dataset directories ---------------------------------------------------------------------------------


@pytest.mark.parametrize("target", FILE_TARGETS.values())
def test_a_dataset_path_with_brackets_can_be_appended_to(result, tmp_path, target):
    """The schema check gave the path to pl.read_parquet_schema, which globs: '[2024]' matched nothing."""
    where = tmp_path / target.replace("runs", "runs[2024]")
    result.write(where)
    result.write(where)
    readers = {".parquet": pl.read_parquet, ".csv": pl.read_csv, ".jsonl": pl.read_ndjson}  # bytes: no glob
    runs = pl.concat([readers[p.suffix](io.BytesIO(p.read_bytes())) for p in (where / "runs").iterdir()])
    assert runs.height == 2


@pytest.mark.parametrize("target", FILE_TARGETS.values())
def test_dataset_replace_removes_the_old_runs_files_first(result, tmp_path, monkeypatch, target):
    """Old files were deleted per_user first, runs last: a kill in between left an old run with its
    runs row and no per-user rows."""
    where = tmp_path / target
    result.write(where)
    unlink, calls = Path.unlink, []

    def stopping(self, *args, **kwargs):
        if calls:
            raise KeyboardInterrupt
        calls.append(self)
        return unlink(self, *args, **kwargs)

    monkeypatch.setattr(Path, "unlink", stopping)
    with pytest.raises(KeyboardInterrupt):
        result.write(where, mode="replace")
    monkeypatch.undo()
    assert len(_runs_are_whole(where)) == 1  # the new run: the old one lost its runs row first


def test_someone_elses_parquet_directory_is_not_written_into(result, tmp_path):
    """rankwise added excluded/ per_user/ runs/ summary/ beside part-0.parquet: the user's dataset no longer read."""
    where = tmp_path / "events.parquet"
    where.mkdir()
    RECS.write_parquet(where / "part-0.parquet")
    for mode in ("append", "replace"):
        with pytest.raises(rankwise.WriteError, match="part-0.parquet") as info:
            result.write(where, mode=mode)
        assert "Hint:" in str(info.value)
    assert [p.name for p in where.iterdir()] == ["part-0.parquet"]
    assert pl.read_parquet(where).equals(RECS)


def test_a_hidden_file_does_not_make_a_rankwise_directory_foreign(result, tmp_path):
    """A file manager's .DS_Store beside rankwise's folders: the next append still lands (a reader's glob skips
    hidden files too); a visible stray file is still refused."""
    where = tmp_path / "results.parquet"
    result.write(where)
    (where / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    (where / ".ipynb_checkpoints").mkdir()
    result.write(where)
    assert len(pl.read_parquet(where / "runs" / "*.parquet")) == 2
    (where / "notes.txt").write_text("mine")
    with pytest.raises(rankwise.WriteError, match="notes.txt"):
        result.write(where)


# -- 10. someone else's files and abandoned staged files in a dataset (issue 35) ---------------------------

WRITERS = {".parquet": "write_parquet", ".csv": "write_csv", ".jsonl": "write_ndjson"}


def _files(where: Path) -> dict:
    """Every file under a dataset, with its bytes."""
    return {str(p.relative_to(where)): p.read_bytes() for p in sorted(where.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("target", FILE_TARGETS.values())
def test_dataset_replace_refuses_a_file_rankwise_did_not_write(result, tmp_path, target):
    """replace deleted every file of the suffix in the table folders, someone's per_user/part-0.parquet too."""
    where, suffix = tmp_path / target, Path(target).suffix
    result.write(where)
    getattr(RECS, WRITERS[suffix])(where / "per_user" / f"part-0{suffix}")  # other columns
    before = _files(where)
    with pytest.raises(rankwise.WriteSchemaError, match=f"part-0\\{suffix}") as info:
        result.write(where, mode="replace")
    assert "Hint:" in str(info.value) and "not written by rankwise" in str(info.value)
    assert _files(where) == before
    (where / "per_user" / f"part-0{suffix}").unlink()
    copy = where / "per_user" / f"copy{suffix}"  # rankwise's columns under another name: its rows would stay
    copy.write_bytes(next((where / "per_user").glob("run-*")).read_bytes())
    before = _files(where)
    with pytest.raises(rankwise.WriteError, match="copy.*not written by rankwise"):
        result.write(where, mode="replace")
    assert _files(where) == before
    copy.unlink()
    result.write(where, mode="replace")
    assert_complete_runs(where, 1)


@pytest.mark.parametrize("target", FILE_TARGETS.values())
def test_append_checks_the_columns_of_every_file(result, tmp_path, target):
    """Only the first file (sorted) was checked: a per_user/zz-part-0.parquet with other columns was
    appended beside, and pl.scan_parquet('.../per_user/*.parquet') failed from then on."""
    where, suffix = tmp_path / target, Path(target).suffix
    result.write(where)
    getattr(RECS, WRITERS[suffix])(where / "per_user" / f"zz-part-0{suffix}")
    before = _files(where)
    with pytest.raises(rankwise.WriteSchemaError, match=f"zz-part-0\\{suffix}") as info:
        result.write(where)
    assert "Hint:" in str(info.value)
    assert _files(where) == before


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize("mode", ["append", "replace"])
def test_staged_files_of_writers_that_are_gone_are_removed(result, tmp_path, mode):
    """kill -9 left each table's hidden staged file behind, for good; replace left them too."""
    where = tmp_path / "runs.parquet"
    result.write(where)
    name, staging = f"run-20240101T000000000000Z-{'0' * 32}.parquet", where / ".rankwise-staging"
    staging.mkdir(exist_ok=True)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = _dead_pid()
        gone = [staging / f"per_user.{name}.{_write._HOST}.{dead}.tmp",
                where / "summary" / f".{name}.{dead}.tmp"]  # where earlier versions staged
        kept = [staging / f"per_user.{name}.{_write._HOST}.{live.pid}.tmp",  # a writer still at work
                staging / f"runs.{name}.another-host.{dead}.tmp"]  # another host's pid says nothing here
        for path in gone + kept:
            path.write_bytes(b"PAR1 partial")
        result.write(where, mode=mode)
        assert [path.exists() for path in gone + kept] == [False, False, True, True]
        assert len(pl.read_parquet(where / "per_user")) == ROWS_PER_RUN * (1 if mode == "replace" else 2)
    finally:
        live.kill()
        live.wait()


# -- 11. DuckDB connections: no extension installed or loaded behind the user's back ----------------------


def test_a_sqlite_file_is_named_not_opened(result, tmp_path):
    """DuckDB opening a SQLite file tried to download sqlite_scanner (native code), then said 'Is it a DuckDB file?'."""
    import sqlite3

    target = tmp_path / "s.db"
    with contextlib.closing(sqlite3.connect(target)) as con:
        con.execute("CREATE TABLE t (a)")
        con.commit()
    before = target.read_bytes()
    with pytest.raises(rankwise.WriteError, match="is a SQLite database") as info:
        result.write(target)
    assert "Hint:" in str(info.value)
    assert target.read_bytes() == before


def test_every_duckdb_connection_rankwise_opens_has_extension_autoloading_off(result, tmp_path, monkeypatch):
    from rankwise.generate import docs as _docs

    seen, connect = [], duckdb.connect

    def recording(*args, **kwargs):
        con = connect(*args, **kwargs)
        seen.append(con.execute("SELECT current_setting('autoinstall_known_extensions'), "
                                "current_setting('autoload_known_extensions')").fetchall()[0])
        return con

    monkeypatch.setattr(duckdb, "connect", recording)
    sites = {
        "write": lambda: result.write(tmp_path / "runs.duckdb"),
        "engine": lambda: rankwise.evaluate(RECS, TRUTH, k=1, metrics=["precision"], backend="duckdb"),
        "beyond": lambda: rankwise.evaluate(RECS, TRUTH, k=1, metrics=["novelty"], train=RECS, backend="duckdb"),
        "docs": lambda: _docs._list_example("ndcg"),
    }
    from rankwise.engines import duckdb as duckdb_engine

    for site, run in sites.items():
        seen.clear()
        monkeypatch.setattr(duckdb_engine, "_SHARED", {})  # the engine's per-process database: opened anew here
        run()
        assert seen and set(seen) == {(False, False)}, site


def test_no_duckdb_connection_is_opened_but_through_the_helper():
    source = Path(rankwise.__file__).parent
    found = [f"{path.name}:{number}" for path in sorted(source.rglob("*.py")) if path.name != "_duckdb_connect.py"
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if "duckdb.connect(" in line and ">>>" not in line]
    assert found == []
