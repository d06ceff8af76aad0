"""The command line: one-line errors with documented exit codes, flags in hints, --debug, compare.

Every failure is ``rankwise: <ErrorClass>: <problem>`` (offending rows indented), then ``Hint: ...``,
on stderr, never a traceback; exit codes are cli.EXIT_CODES (2 input/usage, 3 write, 4 dependency,
1 internal).
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

import rankwise
from rankwise import cli
from rankwise.errors import InputFileError, ParameterError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RECS_EX, TRUTH_EX = str(EXAMPLES / "recommendations.parquet"), str(EXAMPLES / "ground_truth.parquet")
RECS = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rank": [1, 2, 1]})
TRUTH = pl.DataFrame({"user": [1, 2], "item": [11, 12]})


@pytest.fixture
def inputs(tmp_path):
    recs, truth = tmp_path / "recs.parquet", tmp_path / "truth.parquet"
    RECS.write_parquet(recs)
    TRUTH.write_parquet(truth)
    return str(recs), str(truth)


def run(capsys, *argv) -> tuple[int, str, list[str]]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def assert_one_error(err: list[str], error: str, rows: int = 0) -> None:
    """``rankwise: <error>: ...``, ``rows`` indented row lines, a ``Hint:`` line; nothing else."""
    text = "\n".join(err)
    assert "Traceback" not in text and "File \"" not in text, text
    assert len(err) == 2 + rows, text
    assert err[0].startswith(f"rankwise: {error}: "), text
    assert all(line.startswith("  ") for line in err[1:1 + rows]), text
    assert err[-1].startswith("Hint: "), text


# -- bad input files: InputFileError, exit 2 -------------------------------------------------------


def _missing(tmp):
    return tmp / "nope.parquet"


def _directory(tmp):
    (tmp / "adir").mkdir()
    (tmp / "adir" / "notes.txt").write_text("not parquet")
    return tmp / "adir"


def _truncated(tmp):
    RECS.write_parquet(tmp / "full.parquet")
    (tmp / "cut.parquet").write_bytes((tmp / "full.parquet").read_bytes()[:100])
    return tmp / "cut.parquet"


def _empty_csv(tmp):
    (tmp / "empty.csv").write_text("")
    return tmp / "empty.csv"


def _header_only_csv(tmp):
    (tmp / "header.csv").write_text("user,item,rank\n")
    return tmp / "header.csv"


def _ragged_csv(tmp):
    (tmp / "ragged.csv").write_text("user,item,rank\n1,10,1\n1,11,2,9\n")
    return tmp / "ragged.csv"


@pytest.mark.parametrize("make", [_missing, _directory, _truncated, _empty_csv, _header_only_csv, _ragged_csv])
@pytest.mark.parametrize("command", ["evaluate", "compare", "explain"])
def test_a_bad_input_file_is_one_line_and_exit_2(tmp_path, capsys, inputs, make, command):
    bad = make(tmp_path)
    code, out, err = run(capsys, command, bad, inputs[1])
    assert code == 2
    assert_one_error(err, "InputFileError")
    assert repr(str(bad)) in err[0] and "recommendations" in err[0]
    code, _, err = run(capsys, command, inputs[0], bad)  # the ground truth side too
    assert code == 2
    assert_one_error(err, "InputFileError")


# -- write errors: exit 3 --------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--per-user", "--summary"])
@pytest.mark.parametrize("where", ["parent_is_a_file", "is_a_directory"])
def test_an_unwritable_frame_path_is_a_write_error_exit_3(tmp_path, capsys, inputs, flag, where):
    (tmp_path / "blocker").write_text("a file")
    (tmp_path / "out.parquet").mkdir()
    target = tmp_path / "blocker" / "out.parquet" if where == "parent_is_a_file" else tmp_path / "out.parquet"
    code, out, err = run(capsys, "evaluate", *inputs, "--k", "2", flag, target)
    assert code == 3
    assert_one_error(err, "WriteError")
    assert repr(str(target)) in err[0]
    assert "precision" in out  # the numbers were printed before the write failed


@pytest.mark.parametrize("flag", ["--summary", "--output"])
def test_a_path_without_a_known_suffix_fails_before_evaluating(tmp_path, capsys, inputs, flag):
    """--output x.txt was refused only after the evaluation had run and printed."""
    code, out, err = run(capsys, "evaluate", *inputs, flag, tmp_path / "summary.xlsx")
    assert (code, out) == (2, "")
    assert_one_error(err, "ParameterError")
    assert not (tmp_path / "summary.xlsx").exists()


def test_a_python_argument_in_a_hint_is_the_flag():
    assert cli.as_flags("Pass e.g. confidence=0.95 for 95 % intervals.") == "Pass e.g. --confidence 0.95 for 95 % intervals."


@pytest.mark.parametrize("name", ["runs.parquet", "runs.csv", "runs.jsonl", "runs.duckdb"])
def test_an_unwritable_output_is_a_write_error_exit_3(tmp_path, capsys, inputs, name):
    (tmp_path / "blocker").write_text("a file")
    code, out, err = run(capsys, "evaluate", *inputs, "--k", "2", "--output", tmp_path / "blocker" / name)
    assert code == 3, err
    error = err[0].split(":")[1].strip()
    assert error in ("WriteError", "WriteSchemaError", "WriteLockedError"), err
    assert_one_error(err, error)


# -- parameters: exit 2, flags in the hints --------------------------------------------------------


@pytest.mark.parametrize("k", ["99999999999999999999", "2147483648", "0", "-3", ","])
def test_an_out_of_range_k_is_a_parameter_error_naming_the_flag(capsys, inputs, k):
    code, _, err = run(capsys, "evaluate", *inputs, f"--k={k}")
    assert code == 2
    assert_one_error(err, "ParameterError")
    assert "--k 10" in err[1] and "k=" not in err[1]


@pytest.mark.parametrize("command,k", [("evaluate", "abc"), ("evaluate", "5,1.5"), ("compare", "x"),
                                       ("explain", "2.5"), ("evaluate", "1,,3")])  # (1,,3: a 2 lost?)
def test_a_non_integer_k_is_a_usage_error(capsys, inputs, command, k):
    code, out, err = run(capsys, command, *inputs, "--k", k)
    assert (code, out) == (2, "")
    assert_one_error(err, "ParameterError")
    assert "--k" in err[0] and repr(k) in err[0] and f"rankwise {command} --help" in err[1]


def test_usage_errors_are_one_line(capsys, inputs):
    for argv in ([], ["evaluate", inputs[0]], ["evaluate", *inputs, "--backend", "nope"], ["frobnicate"]):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, "")
        assert_one_error(err, "ParameterError")


def test_a_missing_column_hint_names_flags_not_python_arguments(capsys, inputs):
    code, _, err = run(capsys, "evaluate", *inputs, "--rank-col", "position")
    assert code == 2
    assert_one_error(err, "MissingColumnError")
    assert "--rank-col position" in err[0]  # a named rank column that is not there (it fell back to scores)
    assert "--rank-col" in err[1] and "--score-col" in err[1] and "_col" not in err[1]


def test_the_same_column_for_two_roles_names_flags(capsys, inputs):
    code, _, err = run(capsys, "evaluate", *inputs, "--user-col", "item")
    assert code == 2
    assert_one_error(err, "ParameterError")
    assert err[0].startswith("rankwise: ParameterError: --user-col and --item-col name the same column")
    assert "_col" not in "\n".join(err)


@pytest.mark.parametrize("text,expected", [
    ("Pass user_col='...'.", "Pass --user-col ...."),
    ("Name the columns with rank_col= / score_col=, or pass lists.",
     "Name the columns with --rank-col / --score-col, or pass lists."),
    ("Pass scores (score_col=...), or not.", "Pass scores (--score-col ...), or not."),
    ("or pass scores as score_col.", "or pass scores as --score-col."),
    ("For example k=10 or k=[1, 5, 10].", "For example --k 10 or --k 1,5,10."),
    ("Use metrics=['map', 'ndcg'] with backend='duckdb'.", "Use --metrics map,ndcg with --backend duckdb."),
    ("convention=\"ranx\"", "--convention ranx"),
    # Python-only: None values, other names, words that merely contain an argument name
    ("lifts the limit with metrics=None.", "lifts the limit with metrics=None."),
    ("min_score=None, rank=0, top k items, collect=True", "min_score=None, rank=0, top k items, collect=True"),
])
def test_as_flags(text, expected):
    assert cli.as_flags(text) == expected


def test_offending_rows_are_indented_lines_under_the_error(tmp_path, capsys):
    (tmp_path / "r.csv").write_text("user,item,rank\n007,a,1\n007,b,1\n7,c,1\n")
    (tmp_path / "t.csv").write_text("user,item\n007,a\n")
    code, _, err = run(capsys, "evaluate", tmp_path / "r.csv", tmp_path / "t.csv")
    assert code == 2
    assert_one_error(err, "DuplicateRankError", rows=2)
    assert sorted(err[1:3]) == ["  user='007'  item='a'  rank=1", "  user='007'  item='b'  rank=1"]


# -- internal errors, missing dependencies, --debug ------------------------------------------------


def _boom(*args, **kwargs):
    raise RuntimeError("boom\nsecond line")


def test_an_unexpected_exception_is_an_internal_error_exit_1(capsys, inputs, monkeypatch):
    monkeypatch.setattr(cli, "evaluate", _boom)
    code, out, err = run(capsys, "evaluate", *inputs)
    assert (code, out) == (1, "")
    assert err == ["rankwise: internal error: RuntimeError: boom",
                   "Hint: run again with --debug for the traceback; please report it."]


@pytest.mark.parametrize("command", ["evaluate", "report"])
@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_reraises(capsys, inputs, monkeypatch, tmp_path, where, command):
    """--debug before or after the command (report refused it after: unrecognized arguments)."""
    def argv(*rest):
        return ["--debug", *rest] if where == "before" else [*rest, "--debug"]

    with pytest.raises(InputFileError):
        cli.main(argv(command, str(tmp_path / "nope.parquet"), inputs[1]))
    monkeypatch.setattr(cli, "evaluate", _boom)
    with pytest.raises(RuntimeError, match="boom"):
        cli.main(argv(command, *inputs))


def test_a_missing_optional_dependency_is_exit_4(capsys, inputs, monkeypatch):
    for name in [m for m in sys.modules if m == "pyspark" or m.startswith("pyspark.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark -> ImportError
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    code, _, err = run(capsys, "evaluate", *inputs, "--backend", "spark")
    assert code == 4
    assert_one_error(err, "MissingDependencyError")
    assert "rankwise[spark]" in err[1]


def test_help_documents_the_exit_codes(capsys):
    for argv in (["--help"], ["evaluate", "--help"]):
        code, out, _ = run(capsys, *argv)
        assert code == 0
        for code_, meaning in ((1, "internal error"), (2, "input"), (3, "write error"), (4, "dependency")):
            assert any(line.split()[:1] == [str(code_)] and meaning in line for line in out.splitlines()), out


@pytest.mark.heavy  # the CLI passes --backend through to evaluate(); Spark costs a minute here
def test_evaluate_still_works(capsys, inputs, backend):
    code, out, err = run(capsys, "evaluate", *inputs, "--k", "1,2", "--metrics", "precision", "--backend", backend)
    assert (code, err) == (0, [])
    # user 1: [10, 11] vs {11}: P@1 0, P@2 1/2; user 2: [10] vs {12}: 0, 0 -> means 0, 1/4
    line = next(line for line in out.splitlines() if line.startswith("precision"))
    assert line.split()[1:3] == ["0.0000", "0.2500"]


# -- compare: presets that cannot apply are skipped and reported -----------------------------------


@pytest.mark.heavy  # every preset on the 2,000-user example: minutes on Spark
def test_compare_default_presets_on_the_rank_example_skips_surprise(capsys, backend):
    code, out, err = run(capsys, "compare", RECS_EX, TRUTH_EX, "--k", "5", "--metrics", "precision",
                         "--backend", backend)
    assert (code, err) == (0, [])
    header = next(line for line in out.splitlines() if "metric" in line)
    applicable = [p for p in rankwise.PRESETS if p != "surprise"]
    assert all(p in header for p in applicable) and "surprise" not in header
    note = out[out.index("skipped"):].splitlines()
    assert note[1].startswith("  surprise: ") and "min_score" in note[1] and len(note) == 2


def test_compare_conventions_reports_skipped_presets():
    table, skipped = rankwise.compare_conventions(RECS_EX, TRUTH_EX, k=5, metrics=["precision"], return_skipped=True)
    assert list(skipped) == ["surprise"] and "'score'" in skipped["surprise"]
    assert table.columns == ["metric", "k", *[p for p in rankwise.PRESETS if p != "surprise"]]
    with pytest.warns(UserWarning, match="surprise"):
        plain = rankwise.compare_conventions(RECS_EX, TRUTH_EX, k=5, metrics=["precision"])
    assert plain.equals(table)


def test_an_explicit_preset_that_cannot_apply_raises(capsys):
    with pytest.raises(ParameterError, match="min_score"):
        rankwise.compare_conventions(RECS_EX, TRUTH_EX, k=5, presets=["default", "surprise"])
    code, out, err = run(capsys, "compare", RECS_EX, TRUTH_EX, "--presets", "default,surprise")
    assert (code, out) == (2, "")
    assert_one_error(err, "ParameterError")
    assert "--score-col" in err[1]


def test_compare_with_scores_keeps_surprise():
    # user a ranked by score: z (5), x (4), y (3); y is below min_score 3.5, so not recommended.
    # relevant = rel >= 3.5: x, y, w. Surprise @3: precision = 1 hit / 2 recommended, recall = 1 / 3.
    recs = pl.DataFrame({"user": ["a"] * 3, "item": ["x", "y", "z"], "score": [4.0, 3.0, 5.0]})
    truth = pl.DataFrame({"user": ["a"] * 3, "item": ["x", "y", "w"], "relevance": [4.0, 5.0, 4.0]})
    table, skipped = rankwise.compare_conventions(recs, truth, k=3, metrics=["precision", "recall"],
                                                  return_skipped=True)
    assert skipped == {}
    assert table["surprise"].to_list() == pytest.approx([1 / 2, 1 / 3])


def test_compare_with_an_input_no_preset_can_read_raises(capsys, tmp_path):
    RECS.drop("rank").write_parquet(tmp_path / "r.parquet")
    with pytest.raises(rankwise.MissingColumnError):
        rankwise.compare_conventions(tmp_path / "r.parquet", TRUTH_EX, k=5)
    code, _, err = run(capsys, "compare", tmp_path / "r.parquet", TRUTH_EX)
    assert code == 2
    assert_one_error(err, "MissingColumnError")


def test_explain_and_compare_take_the_beyond_inputs(capsys, tmp_path):
    """The hand example of test_presets: novelty@2 default 1.5, replay 0.5 (Shapley: novelty_normalize
    -0.625, list_denominator -0.375)."""
    recs, truth, train = tmp_path / "recs.parquet", tmp_path / "truth.parquet", tmp_path / "train.parquet"
    pl.DataFrame({"user": ["x", "y", "y"], "item": ["B", "A", "B"], "rank": [1, 1, 2]}).write_parquet(recs)
    pl.DataFrame({"user": ["x"], "item": ["A"]}).write_parquet(truth)
    pl.DataFrame({"user": ["u1", "u2", "u3", "u4", "u1"], "item": ["A", "A", "A", "A", "B"]}).write_parquet(train)
    code, out, _ = run(capsys, "explain", recs, truth, "--a", "default", "--b", "replay", "--metric", "novelty",
                       "--k", "2", "--train", train)
    assert code == 0 and "novelty@2: default = 1.500000, replay = 0.500000" in out
    assert "-0.625000" in out and "-0.375000" in out
    code, out, _ = run(capsys, "compare", recs, truth, "--presets", "default,replay", "--metrics", "novelty",
                       "--k", "2", "--train", train)
    assert code == 0 and "1.5" in out and "0.5" in out


def test_score_col_ranks_by_the_scores_even_beside_a_rank_column(capsys, tmp_path):
    """--score-col NAME ranks by NAME; before, a stale rank column in the same file won silently.
    By hand, k = 1: the rank column puts item 10 first (no label), the scores item 11 (the label)."""
    recs, truth = tmp_path / "r.csv", tmp_path / "t.csv"
    pl.DataFrame({"user": [1, 1], "item": [10, 11], "rank": [1, 2], "pred": [0.1, 0.9]}).write_csv(recs)
    pl.DataFrame({"user": [1], "item": [11]}).write_csv(truth)
    values = {}
    for flags in ([], ["--score-col", "pred"]):
        code, out, _ = run(capsys, "evaluate", recs, truth, "--k", "1", "--metrics", "precision", *flags)
        assert code == 0
        values[bool(flags)] = out
    assert "0.0" in values[False].split("precision")[1].split("\n")[0]
    assert "1.0" in values[True].split("precision")[1].split("\n")[0]


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_summary_json_is_a_json_array_and_jsonl_a_row_per_line(tmp_path, capsys, inputs, suffix):
    """--summary x.json wrote a row per line (NDJSON), which a JSON reader refuses."""
    import json

    path = tmp_path / f"summary{suffix}"
    code, _, _ = run(capsys, "evaluate", *inputs, "--k", "2", "--metrics", "precision", "--summary", path)
    assert code == 0
    text = path.read_text()
    rows = json.loads(text) if suffix == ".json" else [json.loads(line) for line in text.splitlines()]
    assert [(r["metric"], r["k"]) for r in rows] == [("precision", 2)]


def test_segments_flag_prints_and_writes_the_means_per_segment(tmp_path, capsys, inputs):
    """The command line had no way to the per-segment means evaluate(segments=...) gives."""
    segments = tmp_path / "segments.csv"
    segments.write_text("user,segment\n1,new\n2,old\n")
    out_dir = tmp_path / "runs.parquet"
    code, out, err = run(capsys, "evaluate", *inputs, "--k", "1,2", "--metrics", "precision,mrr",
                         "--segments", segments, "--output", out_dir)
    assert code == 0, err
    # by hand: user 1 (10, 11; label 11): precision@1 0, @2 1/2, RR@1 0, RR@2 1/2; user 2 (10; label 12): 0
    lines = out.split("by segment")[1].splitlines()
    rows = {tuple(line.split()[:2]): line.split()[2:] for line in lines if line.strip().startswith(("new", "old"))}
    assert rows == {("new", "precision"): ["0.0000", "0.5000", "1"], ("new", "mrr"): ["0.0000", "0.5000", "1"],
                    ("old", "precision"): ["0.0000", "0.0000", "1"], ("old", "mrr"): ["0.0000", "0.0000", "1"]}
    written = pl.read_parquet(out_dir / "segments" / "*.parquet")
    assert written.filter(pl.col("segment") == "new", pl.col("metric") == "precision").sort("k")["value"].to_list() \
        == [0.0, 0.5]


def test_a_delta_output_path_deltalake_misreads_is_refused_before_evaluating(tmp_path, monkeypatch, capsys):
    """--output 'delta:out[1]' printed pyo3's PanicException traceback (exit 1) and left out[1]/ behind."""
    monkeypatch.chdir(tmp_path)
    pl.DataFrame({"user": [1, 1], "item": [10, 11], "rank": [1, 2]}).write_csv("recs.csv")
    pl.DataFrame({"user": [1], "item": [11]}).write_csv("truth.csv")
    code = cli.main(["evaluate", "recs.csv", "truth.csv", "--k", "1", "--output", "delta:out[1]"])
    assert code == 2 and "'['" in capsys.readouterr().err
    assert not (tmp_path / "out[1]").exists()


def test_several_runs_of_catalog_metrics_only_print_their_values(capsys, tmp_path):
    train = tmp_path / "train.parquet"
    pl.DataFrame({"user": [1, 2, 3], "item": [10, 11, 12]}).write_parquet(train)
    recs_b = tmp_path / "b.parquet"
    pl.DataFrame({"user": [1, 1, 2], "item": [10, 12, 10], "rank": [1, 2, 1]}).write_parquet(recs_b)
    recs_a, truth = tmp_path / "a.parquet", tmp_path / "truth.parquet"
    RECS.write_parquet(recs_a)
    TRUTH.write_parquet(truth)
    code, out, err = run(capsys, "evaluate", "--run", f"a={recs_a}", "--run", f"b={recs_b}", truth,
                         "--metrics", "item_coverage", "--train", train, "--k", "2")
    assert code == 0, err
    # by hand: catalog = the train items {10, 11, 12}; a shows {10, 11}, b {10, 12}: 2/3 each
    assert [line.split() for line in out.splitlines() if line.startswith(("a ", "b "))] == \
        [["a", "0.6667"], ["b", "0.6667"]]
    assert "No tests: item_coverage (catalog-level): one value per run" in out
    code, out, err = run(capsys, "report", "--run", f"a={recs_a}", "--run", f"b={recs_b}", truth,
                         "--metrics", "item_coverage", "--train", train, "--k", "2", "-o", tmp_path / "r.html")
    assert code == 0, err


def test_report_takes_segments_as_evaluate_does(tmp_path, capsys, inputs):
    segments = tmp_path / "segments.csv"
    segments.write_text("user,segment\n1,new\n2,old\n")
    out = tmp_path / "r.html"
    code, _, err = run(capsys, "report", *inputs, "--k", "1,2", "--metrics", "precision", "--segments", segments,
                       "-o", out)
    assert code == 0, err
    # by hand: user 1 (10, 11; label 11) precision@1 0, @2 1/2
    assert "<td>new</td><td>precision</td><td>0.0000 </td><td>0.5000 </td><td>1</td>" in out.read_text()


def test_sql_takes_the_beyond_accuracy_tables(capsys):
    code, _, err = run(capsys, "sql", "--metrics", "novelty", "--k", "10")
    assert code == 2 and "needs train" in err[0] and "--train TABLE" in err[-1]
    code, out, err = run(capsys, "sql", "--metrics", "novelty,item_coverage,ild", "--k", "10", "--train", "my_train",
                         "--items", "my_items", "--item-features", "SELECT * FROM my_features")
    assert code == 0, err
    assert "FROM my_train" in out and "FROM my_items" in out and "FROM my_features" in out


def test_a_closed_stdout_exits_quietly_with_141():
    """``rankwise ... | head -1``: the reader left; no 'internal error', the code a SIGPIPE'd tool has."""
    import os
    import subprocess

    read, write = os.pipe()
    os.close(read)  # every write to the pipe now fails (EPIPE)
    try:
        proc = subprocess.run([sys.executable, "-m", "rankwise.cli", "sql", "--metrics", "precision"], stdout=write,
                              stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(Path(cli.__file__).parents[1])},
                              timeout=120)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr.decode()) == (141, "")
    assert "141" in cli.EPILOG


def test_a_closed_stdout_still_writes_the_files_asked_for(tmp_path):
    """``rankwise evaluate ... --per-user F --summary G | head -1``: the reader leaving cuts the table
    short, not the files: they are written, and the exit code says stdout was cut (141)."""
    import os
    import subprocess

    import duckdb

    per_user, summary, output = (tmp_path / "per_user.parquet", tmp_path / "summary.csv",
                                 tmp_path / "results.duckdb")
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "rankwise.cli", "evaluate", RECS_EX, TRUTH_EX, "--k", "3",
                               "--per-user", str(per_user), "--summary", str(summary), "--output", str(output)],
                              stdout=write, stderr=subprocess.PIPE, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(Path(cli.__file__).parents[1])})
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr.decode()) == (141, "")
    expected = rankwise.evaluate(RECS_EX, TRUTH_EX, k=3)
    assert pl.read_parquet(per_user).equals(expected.per_user)
    assert pl.read_csv(summary).height == expected.summary.height
    with duckdb.connect(str(output), read_only=True) as con:
        assert con.execute("SELECT COUNT(*) FROM rankwise_runs").fetchall() == [(1,)]


def test_score_col_on_a_table_without_it_names_only_the_score_column(capsys, inputs):
    code, _, err = run(capsys, "evaluate", *inputs, "--score-col", "score")
    assert code == 2
    assert_one_error(err, "MissingColumnError")
    assert err[0] == ("rankwise: MissingColumnError: recommendations: need a 'score' column (or list-form items); "
                      "found ['user', 'item', 'rank'].")


def test_the_segment_table_groups_once(monkeypatch):
    """2000 segments ran 2000 filters over the frame (quadratic); the rows come from one group_by."""
    n = 2000
    frame = pl.DataFrame({"segment": [f"s{i:04d}" for i in range(n) for _ in (1, 2)], "metric": ["ndcg"] * 2 * n,
                          "k": [2, 1] * n, "value": [i / n for i in range(n) for _ in (1, 2)],
                          "n_users": [1, 2] * n})

    def no_filter(*_, **__):
        raise AssertionError("a filter per group")

    monkeypatch.setattr(pl.DataFrame, "filter", no_filter)
    lines = cli._metric_table(frame, ["segment"])
    assert len(lines) == 2 + n
    assert lines[2].split() == ["s0000", "ndcg", "0.0000", "0.0000", "1-2"]
    assert lines[-1].split() == ["s1999", "ndcg", f"{1999 / n:.4f}", f"{1999 / n:.4f}", "1-2"]


@pytest.mark.parametrize("where", ["directory", "under_a_file"])
def test_a_report_that_cannot_be_written_fails_before_the_evaluation(capsys, inputs, tmp_path, monkeypatch, where):
    # the WriteError came after the whole evaluation, which was lost with it
    monkeypatch.setattr(cli, "_evaluate", lambda args: pytest.fail("evaluated before checking the output"))
    (tmp_path / "a_file").write_text("x")
    output = tmp_path if where == "directory" else tmp_path / "a_file" / "report.html"
    code, out, err = run(capsys, "report", *inputs, "-o", output)
    assert (code, out) == (3, "")
    assert_one_error(err, "WriteError")
    assert "Traceback" not in "\n".join(err)


def test_a_write_error_names_the_path_once(capsys, inputs):
    code, _, err = run(capsys, "evaluate", *inputs, "--k", "2", "--per-user", "/proc/rankwise-x.csv")
    assert code == 3 and err[0].count("/proc/rankwise-x.csv") == 1, err


# -- control characters from the data are shown escaped (issue 35) ----------------------------------

# clear the screen, set the window title (ended by BEL), reverse the text, a C1 CSI
HOSTILE = "\x1b[2J\x1b]0;owned\x07\u202e\x9b"
SHOWN = "\\x1b[2J\\x1b]0;owned\\x07\\u202e\\x9b"


def _raw_controls(text: str) -> list[str]:
    """What a terminal acts on: C0 but newline, DEL, C1 and the bidi override used above."""
    return [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f or c == "\u202e"]


def _segment_inputs(tmp_path):
    recs, truth = tmp_path / "recs.parquet", tmp_path / "truth.parquet"
    RECS.write_parquet(recs)
    TRUTH.with_columns(seg=pl.Series(["s" + HOSTILE, "plain"])).write_parquet(truth)
    return recs, truth


@pytest.mark.parametrize("runs", [1, 2])
def test_run_names_and_segments_with_control_characters_are_printed_escaped(capsys, tmp_path, runs):
    recs, truth = _segment_inputs(tmp_path)
    given = [recs] if runs == 1 else ["--run", f"m{HOSTILE}={recs}", "--run", f"n{HOSTILE}={recs}"]
    code, out, err = run(capsys, "evaluate", *given, truth, "--k", "1", "--metrics", "precision", "--segments", "seg")
    assert code == 0, err
    assert _raw_controls(out) == [], repr(out)
    assert out.count("s" + SHOWN) == runs  # a segment row per run
    if runs == 2:
        table = out.split("\n\n")[1].splitlines()  # the comparison table: header, rule, a row per run
        assert f"m{SHOWN}" in table[2] and f"n{SHOWN}" in table[3]
        assert len({len(line) for line in table}) == 1, out  # the columns line up as shown
    # by hand: user 1's first item (10) is not relevant, nor is user 2's: precision@1 is 0 in each segment
    segment_lines = out.split("by segment:\n")[1].splitlines()
    assert all(line.split()[-2:] == ["0.0000", "1"] for line in segment_lines[2:]), out
    assert len({len(line) for line in segment_lines}) == 1, out  # the columns line up as shown


def _hostile_error(*args, **kwargs):
    raise ParameterError(f"bad run {HOSTILE}.", hint=f"Rename {HOSTILE}.")


def _hostile_bug(*args, **kwargs):
    raise RuntimeError(f"boom {HOSTILE}")


def _hostile_warning(*args, **kwargs):
    import warnings
    warnings.warn(f"careful {HOSTILE}", UserWarning, stacklevel=1)
    raise ParameterError("stop.", hint="Stop.")


@pytest.mark.parametrize("fake", [_hostile_error, _hostile_bug, _hostile_warning])
def test_errors_and_warnings_with_control_characters_are_printed_escaped(capsys, inputs, monkeypatch, fake):
    monkeypatch.setattr(cli, "evaluate", fake)
    code, out, err = run(capsys, "evaluate", *inputs)
    text = "\n".join(err)
    assert code in (1, 2) and out == ""
    assert _raw_controls(text) == [] and SHOWN in text, text


# -- hints show flags, not Python calls (issue 35) --------------------------------------------------


@pytest.mark.parametrize("hint,expected", [
    # a call the library names with its flag: the flag
    ("Pass evaluate(..., train=...) (CLI: --train).", "Pass --train."),
    ("Pass evaluate(..., train=..., item_features=... or items=...) (CLI: --train, --item-features or --items).",
     "Pass --train, --item-features or --items."),
    ("Pass tables={'train': ..., ...} (rankwise sql: --train TABLE).", "Pass --train TABLE."),
    # code the command line has no flag for goes, with its clause
    ("Cast both to the same type, e.g. pl.col('user').cast(pl.String).", "Cast both to the same type."),
    ("Cast it, e.g. pl.col('u').cast(pl.String) or .cast(pl.Int64), to the type of the recommendations' ids.",
     "Cast it to the type of the recommendations' ids."),
    ("Cast the ids of every input to text (pl.col('item').cast(pl.String)).", "Cast the ids of every input to text."),
    ("Cast the score to a number, e.g. pl.col('score').cast(pl.Float64), or pass ranks (rank_col=).",
     "Cast the score to a number or pass ranks (--rank-col)."),
    ("Drop nulls from the lists: pl.col('item').list.drop_nulls() (an empty list is a user with no items).",
     "Drop nulls from the lists (an empty list is a user with no items)."),
    ("De-duplicate the lists, or choose Convention(duplicates='first_shift') to keep each item's first occurrence.",
     "De-duplicate the lists."),
    ("Filter those users out, or choose a value: convention.replace(empty_labels='nan').", "Filter those users out."),
    ("gain='exp2' gives 2^relevance - 1, which overflows above relevance 1023: use convention.replace(gain='linear'), "
     "or rescale the relevance.", "gain='exp2' gives 2^relevance - 1, which overflows above relevance 1023: rescale "
     "the relevance."),
    ("It has: map, ndcg. For another definition, derive a convention: rankwise.PRESETS['ranx'].replace(...) keeps "
     "its knobs and lifts the limit with metrics=None.", "It has: map, ndcg."),
    ("Replace it in the ids (pl.col(...).str.replace_all('\\x00', '')), or use backend='duckdb'.",
     "Replace it in the ids, or use --backend duckdb."),
    ("Cast one side, e.g. df.withColumn('u', F.col('u').cast('string')).", "Cast one side."),
    ("Use evaluate() for 'error', or choose a value: convention.replace(empty_labels='nan').",
     "Use rankwise evaluate for 'error'."),
    ("Name it once, e.g. metrics=['f1', ...].", "Name it once, e.g. --metrics f1."),
    # no code: as it was
    ("Check the path (a relative path starts at the current directory).",
     "Check the path (a relative path starts at the current directory)."),
])
def test_a_hint_shows_the_flag_or_no_call(hint, expected):
    assert cli.cli_hint(hint) == expected


PYTHON = ("pl.", "evaluate(", "tables=", "convention.", "Convention(", "PRESETS", "replace(", "_col", "=...")


@pytest.mark.parametrize("case,error,hint", [
    ("ids_differ", "DtypeMismatchError", "Hint: Cast both to the same type."),
    ("text_scores", "InvalidScoreError", "Hint: Cast the score to a number or pass ranks (--rank-col)."),
    ("item_twice", "DuplicateItemError", "Hint: De-duplicate the lists."),
    ("no_train", "ParameterError", "Hint: Pass --train."),
    ("ranx_novelty", "ParameterError", "Hint: It has: precision, recall, f1 (any f<beta>), map, mrr, dcg, ndcg, "
                                       "hit_rate, r_precision."),
    ("sql_no_train", "ParameterError", "Hint: Pass --train TABLE."),
])
def test_cli_hints_name_flags_not_python_calls(capsys, tmp_path, inputs, case, error, hint):
    recs, truth = inputs
    other = tmp_path / "other.parquet"
    if case == "ids_differ":
        TRUTH.with_columns(pl.col("user").cast(pl.String)).write_parquet(other)
        argv = ["evaluate", recs, other]
    elif case == "text_scores":
        RECS.drop("rank").with_columns(score=pl.Series(["9", "10", "2"])).write_parquet(other)
        argv = ["evaluate", other, truth]
    elif case == "item_twice":
        RECS.with_columns(item=pl.Series([10, 10, 10])).write_parquet(other)
        argv = ["evaluate", other, truth]
    else:
        argv = {"no_train": ["evaluate", recs, truth, "--metrics", "novelty"],
                "ranx_novelty": ["explain", recs, truth, "--metric", "novelty"],
                "sql_no_train": ["sql", "--metrics", "novelty"]}[case]
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err[0].startswith(f"rankwise: {error}: ") and err[-1] == hint, err
    assert not any(code in err[-1] for code in PYTHON), err


class _Careful(UserWarning):
    pass


def test_a_warning_is_a_note_on_stderr(capsys, inputs, monkeypatch):
    def evaluate(*args, **kwargs):
        import warnings
        warnings.warn("k is above every list.", _Careful, stacklevel=2)
        return rankwise.evaluate(*args, **kwargs)

    monkeypatch.setattr(cli, "evaluate", evaluate)
    code, out, err = run(capsys, "evaluate", *inputs, "--k", "2", "--metrics", "precision")
    assert code == 0 and out
    assert err == ["rankwise: note: _Careful: k is above every list."]  # not Python's file:line and source line


def test_metrics_all_prints_every_metric_and_the_default_the_usual_set(capsys):
    code, out, err = run(capsys, "evaluate", RECS_EX, TRUTH_EX, "--k", "5")
    assert code == 0, err
    shown = [line.split()[0] for line in out.split("-----", 1)[1].splitlines()[1:] if line.strip()]
    assert shown == list(rankwise.DEFAULT_METRICS)
    code, out, err = run(capsys, "evaluate", RECS_EX, TRUTH_EX, "--k", "5", "--metrics", "all")
    assert code == 0, err
    shown = [line.split()[0] for line in out.split("-----", 1)[1].splitlines()[1:] if line.strip()]
    assert shown == list(rankwise.METRICS)
