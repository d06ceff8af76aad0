"""``rankwise evaluate RUN QRELS --trec``: trec_eval's output, line for line. Expected lines are trec_eval
10.0's own (its test suite's expected files, tests/conformance/fixtures/trec_eval/suite; and the binary
itself when $TREC_EVAL or /tmp/trec_eval/trec_eval is there): every line rankwise prints is
byte-identical to trec_eval's, in trec_eval's order; a measure rankwise does not compute yet is left
out with one note on stderr."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from trec_suite import SUITE, SUITE_DIR

from rankwise.cli import main, sniff_trec

# trec_eval's rbp reads uninitialised bounds on graded qrels (m_rbp.c; tests/test_trec_suite.py DIVERGES)
DIVERGES = {("out.test.aql", "rbp")}
BINARY = os.environ.get("TREC_EVAL", "/tmp/trec_eval/trec_eval")


def _argv(cmd, *, trec_order=False) -> list[str]:
    files = [str(SUITE_DIR / cmd.run), str(SUITE_DIR / cmd.qrels)]
    flags = [f for m in cmd.measures for f in ("-m", m)] + ["-q"] * cmd.per_query + ["-c"] * cmd.complete
    flags += [f"-M{cmd.max_docs}"] * (cmd.max_docs is not None) + [f"-l{cmd.relevance_level}"] * (cmd.relevance_level is not None)
    return ["evaluate", *(files[::-1] if trec_order else files), "--trec", *flags]


def _run(argv, capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _same_lines(ours: str, theirs: str, skip=()) -> int:
    """Every line of ``ours`` is in ``theirs``, byte for byte, in trec_eval's order; returns the count."""
    printed = {line.split("\t")[0].rstrip() for line in ours.splitlines()}
    wanted = [line for line in theirs.splitlines() if line.split("\t")[0].rstrip() in printed - set(skip)]
    got = [line for line in ours.splitlines() if line.split("\t")[0].rstrip() not in skip]
    assert got == wanted
    return len(got)


@pytest.mark.parametrize("cmd", SUITE, ids=[f"{i}-{c.id}" for i, c in enumerate(SUITE)])
def test_suite_lines_are_trec_evals(cmd, capsys):
    code, out, err = _run(_argv(cmd), capsys)
    assert code == 0, err
    expected = (SUITE_DIR / cmd.expected).read_text()
    skip = {m for (e, m) in DIVERGES if e == cmd.expected}
    n = _same_lines(out, expected, skip)
    assert n >= {False: 18, True: 190}[cmd.per_query]  # every family rankwise has, per query and 'all'
    for measure in ("runid", "num_q", "map", "P_10", "recip_rank", "Rprec"):
        assert f"\n{measure:<22}\tall\t" in "\n" + out
    # every measure is computed but relstring (all_trec's text of the relevance of the top 10): no note leaves
    # another out (all_trec: the gain measures and bpref too)
    notes = [line for line in err.splitlines() if "not computed by rankwise yet" in line]
    assert all(note.endswith("left out: relstring_20") for note in notes), err
    assert "\nbpref " in "\n" + out, out
    if "all_trec" in cmd.measures:
        assert all(f"\n{m:<22}\t" in "\n" + out for m in ("G", "binG", "ndcg_rel", "Rndcg", "rbp_resid", "infAP")), out


def test_trec_eval_argument_order(capsys):
    cmd = SUITE[4]  # -m all_trec -q
    _, ours, _ = _run(_argv(cmd), capsys)
    _, swapped, _ = _run(_argv(cmd, trec_order=True), capsys)
    assert ours == swapped and ours


def test_format_is_told_by_content(tmp_path):
    assert sniff_trec(SUITE_DIR / "results.test") == "run"
    assert sniff_trec(SUITE_DIR / "results.comment.test.gz") == "run"
    assert sniff_trec(SUITE_DIR / "qrels.test.with-comments") == "qrels"
    assert sniff_trec("examples/recommendations.parquet") is None
    (tmp_path / "t.txt").write_text("user,item,rank\n1,2,1\n")
    assert sniff_trec(tmp_path / "t.txt") is None


def test_trec_flags_need_trec(capsys):
    code, _, err = _run(["evaluate", str(SUITE_DIR / "results.test"), str(SUITE_DIR / "qrels.test"), "-q"], capsys)
    assert code == 2 and "--trec" in err


def test_format_trec_refuses_tables(capsys):
    code, _, err = _run(["evaluate", "examples/recommendations.parquet", "examples/ground_truth.parquet", "--trec",
                         "--format", "trec"], capsys)
    assert code == 2 and "TREC run" in err


def test_trec_files_in_the_table_output(capsys):
    code, out, _ = _run(["evaluate", str(SUITE_DIR / "qrels.test"), str(SUITE_DIR / "results.test"),
                         "--convention", "trec_eval", "--metrics", "precision", "--k", "10"], capsys)
    assert code == 0 and "0.3000" in out  # P_10 'all' of out.test


def test_family_parameters_and_one_measure(capsys):
    code, out, err = _run(["evaluate", str(SUITE_DIR / "results.test"), str(SUITE_DIR / "qrels.test"), "--trec",
                           "-m", "P.5,10", "-m", "ndcg_cut.10", "-m", "recip_rank"], capsys)
    assert code == 0 and not err
    expected = (SUITE_DIR / "out.test.a").read_text()
    assert _same_lines(out, expected) == 4 and out.splitlines()[0].startswith("recip_rank")  # trec_eval's order


@pytest.mark.skipif(not (os.path.isfile(BINARY) and os.access(BINARY, os.X_OK)), reason="no trec_eval binary")
@pytest.mark.parametrize("flags", [["-m", "all_trec", "-q"], ["-m", "P.3,7", "-m", "map_cut.2", "-q", "-l2"],
                                   ["-m", "official", "-c", "-M50"], ["-m", "ndcg", "-m", "success.2,4", "-q"]])
def test_against_the_binary(flags, capsys, tmp_path):
    """The binary's output on the suite's files, any flags: our lines are its lines."""
    qrels = "qrels.rel_level" if "-l2" in flags else "qrels.test"
    run = tmp_path / "results.test"
    shutil.copy(SUITE_DIR / "results.test", run)
    theirs = subprocess.run([BINARY, *flags, str(SUITE_DIR / qrels), str(run)], capture_output=True, text=True,
                            check=True).stdout
    code, ours, _ = _run(["evaluate", str(SUITE_DIR / qrels), str(run), "--trec", *flags], capsys)
    assert code == 0
    assert _same_lines(ours, theirs, skip={"rbp"} if "-l2" in flags else ()) > 0


GAINS_DIR = SUITE_DIR.parent / "gains"


@pytest.mark.parametrize("qrels, run, flags, expected", [
    ("../suite/qrels.rel_level", "../suite/results.test",
     ["-m", "ndcg.1=3,2=9,4=4.5", "-m", "G.1=3,2=9,4=4.5", "-m", "ndcg_rel.1=3,2=9,4=4.5", "-m", "Rndcg.1=3,2=9,4=4.5"],
     "out.rel_level.g1"),
    ("qrels.gains", "results.gains", ["-m", "ndcg.0=-1,1=0.5,2=2,3=7", "-m", "G.0=-1,1=0.5,2=2,3=7",
                                      "-m", "ndcg_rel.0=-1,1=0.5,2=2,3=7", "-m", "Rndcg.0=-1,1=0.5,2=2,3=7"],
     "out.gains.g2"),
    ("qrels.gains", "results.gains", ["-M5", "-m", "G", "-m", "binG", "-m", "ndcg", "-m", "ndcg_rel", "-m", "Rndcg",
                                      "-m", "rbp_resid.p=0.5"], "out.gains.M5"),
], ids=["rel_level-gains", "gains-level0-negative", "M5-rbp_resid-p"])
def test_gain_parameters_print_trec_evals_lines(qrels, run, flags, expected, capsys):
    """-m ndcg.<level>=<gain>,... (gain_levels) and rbp_resid.p=<p>: the whole output is trec_eval 10.0's, byte for
    byte (tests/conformance/fixtures/trec_eval/gains, written by the binary; its README has the command lines)."""
    code, out, err = _run(["evaluate", str(GAINS_DIR / run), str(GAINS_DIR / qrels), "--trec", "-q", *flags], capsys)
    assert code == 0, err
    assert out == (GAINS_DIR / expected).read_text()
