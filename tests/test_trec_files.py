"""rankwise.inputs.trec: TREC run and qrels files read as trec_eval 10.0 reads them.

The ranking rule, from trec_eval's source (form_res_rels.c, comp_sim_docno): documents of a query
sorted by score descending, equal scores by ``strcmp(docno2, docno1)``, i.e. docno descending in byte
order; the file's rank column is ignored (get_trec_results.c). Verified against the binary by
``test_order_equals_the_trec_eval_binary`` when one is at hand ($TREC_EVAL, ``trec_eval`` on PATH, or
/tmp/trec_eval/trec_eval).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from trec_suite import SUITE_DIR

from rankwise.errors import (
    DuplicateItemError,
    InputError,
    InputFileError,
    ParameterError,
)
from rankwise.inputs import trec
from rankwise.inputs.trec import read_qrels, read_trec_run

TIES = """\
1 Q0 a 1 5.0 r
1 Q0 b 2 5.0 r
1 Q0 c 3 5 r
1 Q0 B 4 5.00 r
1 Q0 10 5 5.0 r
1 Q0 9 6 5.0 r
1 Q0 z 7 6.0 r
1 Q0 y 8 -0.0 r
1 Q0 x 9 0.0 r
1 Q0 w 10 0 r
"""
# score 6 first; the 5s by docno descending in byte order ('c' > 'b' > 'a' > 'B' > '9' > '10');
# -0.0, 0.0 and 0 are one score in C, so 'y' > 'x' > 'w' decides
TIES_ORDER = ["z", "c", "b", "a", "B", "9", "10", "y", "x", "w"]


def _write(tmp_path, name, text, opener=open):
    path = tmp_path / name
    with opener(path, "wb") as f:
        f.write(text.encode())
    return path


def _zstd(path, mode):
    import pyarrow as pa

    return pa.CompressedOutputStream(str(path), "zstd")


def test_ties_are_broken_by_docno_descending_in_byte_order(tmp_path):
    run = read_trec_run(_write(tmp_path, "run.txt", TIES))
    assert run.columns == ["run", "user", "item", "rank", "score"]
    assert run.schema == {"run": pl.String, "user": pl.String, "item": pl.String, "rank": pl.Int64,
                          "score": pl.Float64}
    assert run["item"].to_list() == TIES_ORDER
    assert run["rank"].to_list() == list(range(1, 11))


def test_the_files_rank_column_is_ignored(tmp_path):
    text = "q1 Q0 d1 1 0.1 r\nq1 Q0 d2 2 0.9 r\nq1 Q0 d3 x 0.5 r\n"  # even a non-numeric rank
    run = read_trec_run(_write(tmp_path, "run.txt", text))
    assert run["item"].to_list() == ["d2", "d3", "d1"]
    assert run["rank"].to_list() == [1, 2, 3]


def _trec_eval_binary():
    for cand in (os.environ.get("TREC_EVAL"), shutil.which("trec_eval"), "/tmp/trec_eval/trec_eval"):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    return None


@pytest.mark.skipif(_trec_eval_binary() is None, reason="no trec_eval binary ($TREC_EVAL, PATH, /tmp/trec_eval)")
def test_order_equals_the_trec_eval_binary(tmp_path):
    """trec_eval -m relstring prints each retrieved document's level in trec_eval's order: give the
    ten tied documents the levels 0..9 and read the order back."""
    run_path = _write(tmp_path, "run.txt", TIES)
    levels = {doc: i for i, doc in enumerate(sorted(TIES_ORDER))}
    qrels_path = _write(tmp_path, "qrels.txt", "".join(f"1 0 {d} {lv}\n" for d, lv in levels.items()))
    out = subprocess.run([_trec_eval_binary(), "-q", "-m", "relstring.20", str(qrels_path), str(run_path)],
                         capture_output=True, text=True, check=True).stdout
    printed = out.split("'")[1]
    ours = "".join(str(levels[d]) for d in read_trec_run(run_path)["item"])
    assert printed == ours


@pytest.mark.skipif(_trec_eval_binary() is None, reason="no trec_eval binary ($TREC_EVAL, PATH, /tmp/trec_eval)")
def test_per_query_counts_equal_the_trec_eval_binary(tmp_path):
    """num_ret and P_5 per query from trec_eval on the suite's run equal the reader's rows."""
    out = subprocess.run([_trec_eval_binary(), "-q", "-m", "num_ret", "-m", "P.5", str(SUITE_DIR / "qrels.test"),
                          str(SUITE_DIR / "results.test")], capture_output=True, text=True, check=True).stdout
    printed = {(m, q): v for m, q, v in (line.split() for line in out.splitlines())}
    run = read_trec_run(SUITE_DIR / "results.test")
    qrels = read_qrels(SUITE_DIR / "qrels.test").filter(pl.col("relevance") >= 1)
    for user, n in run.group_by("user").len().iter_rows():
        assert printed[("num_ret", user)] == str(n)
        hits = run.filter((pl.col("user") == user) & (pl.col("rank") <= 5)).join(qrels, on=["user", "item"]).height
        assert printed[("P_5", user)] == "%.4f" % (hits / 5)


@pytest.mark.parametrize("kind", ["plain", "gzip", "bz2", "xz", "zstd"])
def test_compressed_files_are_told_by_their_first_bytes(tmp_path, kind):
    opener = {"plain": open, "gzip": gzip.open, "bz2": bz2.open, "xz": lzma.open, "zstd": _zstd}[kind]
    run = read_trec_run(_write(tmp_path, "run.txt", TIES, opener))  # the name says nothing
    assert run["item"].to_list() == TIES_ORDER
    qrels = read_qrels(_write(tmp_path, "qrels.dat", "1 0 a 1\n1 0 b -1\n", opener))
    assert qrels.rows() == [("1", "a", 1), ("1", "b", -1)]


def test_a_truncated_compressed_file_is_an_input_file_error(tmp_path):
    whole = gzip.compress(TIES.encode() * 50)
    path = tmp_path / "run.gz"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputFileError, match="truncated or corrupt"):
        read_trec_run(path)


def test_several_tags_are_several_runs(tmp_path):
    text = "q1 Q0 d1 1 1.0 bm25\nq1 Q0 d1 1 0.5 dense\nq1 Q0 d2 2 0.9 dense\nq2 Q0 d9 1 2.0 bm25\n"
    path = _write(tmp_path, "runs.txt", text)
    runs = read_trec_run(path)  # the same (qid, docno) in two runs is no duplicate
    assert runs.select("run", "user", "item", "rank").rows() == [
        ("bm25", "q1", "d1", 1), ("bm25", "q2", "d9", 1), ("dense", "q1", "d2", 1), ("dense", "q1", "d1", 2)]
    dense = read_trec_run(path, tag="dense")
    assert dense["run"].unique().to_list() == ["dense"] and dense.height == 2
    with pytest.raises(ParameterError, match="holds no run with that tag") as err:
        read_trec_run(path, tag="dens")
    assert "Did you mean 'dense'" in str(err.value)


def test_whitespace_comments_and_blank_lines(tmp_path):
    """Tabs, runs of blanks, CRLF, leading blanks, blank lines, '#' comments (also indented, and
    several in a row), extra run fields: the same rows as the plain single-space file."""
    messy = ("# a comment\n\n  # an indented comment\n# another\n1\tQ0\t a  1\t5.0 r extra fields\r\n"
             " 1 Q0 b 2 5.0   r\n\n1 Q0 c#1 3 4.0 r\n")
    clean = "1 Q0 a 1 5.0 r\n1 Q0 b 2 5.0 r\n1 Q0 c#1 3 4.0 r\n"
    assert read_trec_run(_write(tmp_path, "m.txt", messy)).equals(read_trec_run(_write(tmp_path, "c.txt", clean)))
    qrels_messy = "# judged by\n#  two people\n\n1\t0  a 1 \r\n  1 0 c#1\t0\n"
    assert read_qrels(_write(tmp_path, "q.txt", qrels_messy)).rows() == [("1", "a", 1), ("1", "c#1", 0)]


def test_lines_across_block_boundaries(tmp_path, monkeypatch):
    """Blocks of 40 bytes (a line longer than a block included): the same rows, and an error names
    the right line number."""
    text = "".join(f"{q} Q0 doc{i:03d} {i} {i % 7}.5 run\n" for q in (1, 2) for i in range(30))
    text += "3 Q0 " + "x" * 100 + " 1 1.0 run\n"
    path = _write(tmp_path, "run.txt", text)
    expected = read_trec_run(path)
    monkeypatch.setattr(trec, "_BLOCK", 40)
    assert read_trec_run(path).equals(expected)
    bad = _write(tmp_path, "bad.txt", text + "4 Q0 d 1 oops run\n")
    with pytest.raises(InputFileError, match="line 62"):
        read_trec_run(bad)


@pytest.mark.parametrize(("text", "line", "why"), [
    ("1 Q0 a 1 5.0 r\n1 Q0 b 2 5.0\n", 2, "wrong number of fields"),
    ("1 Q0 a 1 5.0 r\n\n# c\n1 Q0 b 2 high r\n", 4, "score .* is not a number"),
    ("1 Q0 a 1 nan r\n", 1, "score .* is not a number"),
    ("1 Q0 a 1 5.0 r\n1 Q0 b 2 0x10 r\n", 2, "score .* is not a number"),  # single spaces: the whole-file scan's case
])
def test_a_malformed_run_line_names_file_line_and_text(tmp_path, text, line, why):
    path = _write(tmp_path, "run.txt", text)
    with pytest.raises(InputFileError, match=why) as err:
        read_trec_run(path)
    msg = str(err.value)
    assert "run.txt" in msg and f"line {line}" in msg
    assert repr(text.splitlines()[line - 1]) in msg
    assert "Hint: Each line of a TREC run file: qid Q0 docno rank score tag" in msg


def test_the_whole_file_scan_reads_scores_as_the_block_reader_does(tmp_path, monkeypatch):
    """The whole-file scan parses the score field as a number itself; the block reader casts its text:
    the same doubles, spelling by spelling (signs, exponents, overflow, subnormals, -0 ties +0)."""
    scores = ["1", "-0", "0", "+3", ".5", "5.", "1e5", "1E-3", "+.5e+2", "-inf", "Infinity", "1e400", "4.9e-324",
              "2.2250738585072014e-308", "0.1000000000000000055511151231257827", "9007199254740993"]
    path = _write(tmp_path, "run.txt", "".join(f"1 Q0 d{i} 1 {s} r\n" for i, s in enumerate(scores)))
    whole = read_trec_run(path)
    assert trec._whole_file(os.fspath(path), 6, False, [pl.col("f4")], (), {"f4": pl.Float64}) is not None
    monkeypatch.setattr(trec, "_whole_file", lambda *a, **k: None)
    blocks = read_trec_run(path)
    assert whole.equals(blocks)
    by_doc = dict(zip(blocks["item"], blocks["score"]))
    assert [by_doc[f"d{i}"] for i in range(len(scores))] == [float(s) + 0.0 for s in scores]


@pytest.mark.parametrize(("text", "line", "why"), [
    ("1 0 a 1\n1 0 b\n", 2, "wrong number of fields"),
    ("1 0 a 1\n1 0 b 1 extra\n", 2, "wrong number of fields"),
    ("1 0 a 1\n1 0 b 1.5\n", 2, "not an integer"),
    ("1 0 a yes\n", 1, "not an integer"),
])
def test_a_malformed_qrels_line_names_file_line_and_text(tmp_path, text, line, why):
    path = _write(tmp_path, "qrels.txt", text)
    with pytest.raises(InputFileError, match=why) as err:
        read_qrels(path)
    assert f"line {line}" in str(err.value) and repr(text.splitlines()[line - 1]) in str(err.value)


def test_the_first_few_offending_lines_are_shown(tmp_path):
    path = _write(tmp_path, "run.txt", "".join(f"1 Q0 d{i} {i}\n" for i in range(1, 9)))
    with pytest.raises(InputFileError, match=r"line 1 \(and 3 more\)") as err:
        read_trec_run(path)
    assert "line 5:" in str(err.value) and "line 6:" not in str(err.value)


@pytest.mark.parametrize("text", ["", "\n\n", "# only\n# comments\n"])
def test_an_empty_file_is_a_clear_error(tmp_path, text):
    with pytest.raises(InputFileError, match="holds no run lines"):
        read_trec_run(_write(tmp_path, "run.txt", text))
    with pytest.raises(InputFileError, match="holds no qrels lines"):
        read_qrels(_write(tmp_path, "qrels.txt", text))


def test_a_missing_file_is_an_input_file_error(tmp_path):
    with pytest.raises(InputFileError, match="does not exist"):
        read_trec_run(tmp_path / "nope.txt")


def test_duplicates_stop_as_in_trec_eval(tmp_path):
    """trec_eval: 'duplicate docs' (form_res_rels.c) for a docno twice in a query's results or qrels."""
    run = _write(tmp_path, "run.txt", "1 Q0 a 1 5.0 r\n1 Q0 b 2 4.0 r\n2 Q0 a 1 3 r\n1 Q0 a 3 3.0 r\n")
    with pytest.raises(DuplicateItemError, match=r"docno 'a' .* query '1' .*lines 1, 4") as err:
        read_trec_run(run)
    assert isinstance(err.value, InputError) and "'1 Q0 a 3 3.0 r'" in str(err.value)
    qrels = _write(tmp_path, "qrels.txt", "1 0 a 1\n1 0 b 0\n1 0 a 0\n")
    with pytest.raises(DuplicateItemError, match=r"lines 1, 3"):
        read_qrels(qrels)


@pytest.mark.parametrize(("name", "rows", "users"), [
    ("results.test", 1500, {"301": 500, "302": 500, "303": 500}),
    ("results.trunc", 584, None),
    ("results.comment.test.gz", 30100, None),
])
def test_trec_evals_own_runs(name, rows, users):
    run = read_trec_run(SUITE_DIR / name)
    assert run.height == rows
    assert run.group_by("run", "user").agg(ok=(pl.col("rank").sort() == pl.int_range(1, pl.len() + 1)).all())["ok"].all()
    if users:
        assert dict(run.group_by("user").len().iter_rows()) == users
        assert run["run"].unique().to_list() == ["STANDARD"]


@pytest.mark.parametrize(("name", "rows", "negative"), [
    ("qrels.test", 3681, 0),
    ("qrels.test.with-comments", 3681, 0),
    ("qrels.rel_level", 3681, 304),
    ("qrels.comment.test", 5890, 0),
])
def test_trec_evals_own_qrels(name, rows, negative):
    qrels = read_qrels(SUITE_DIR / name)
    assert qrels.schema == {"user": pl.String, "item": pl.String, "relevance": pl.Int64}
    assert qrels.height == rows
    assert (qrels["relevance"] < 0).sum() == negative


def test_comments_in_the_qrels_change_nothing():
    """qrels.test.with-comments is qrels.test with three comment lines and one docno holding a '#'."""
    plain = read_qrels(SUITE_DIR / "qrels.test").with_columns(pl.col("item").replace("CR93E-1860", "CR#93E-1860"))
    assert read_qrels(SUITE_DIR / "qrels.test.with-comments").equals(plain)


@pytest.mark.parametrize("name", ["results.test", "qrels.rel_level", "qrels.comment.test"])
def test_the_fast_split_and_the_general_split_agree(name, monkeypatch):
    """Single-space files go through Polars' CSV reader; anything else through a regular expression.
    Forcing the general path gives the same frame."""
    read = read_qrels if name.startswith("qrels") else read_trec_run
    fast = read(SUITE_DIR / name)
    monkeypatch.setattr(trec, "_fast", lambda *a, **k: None)
    assert read(SUITE_DIR / name).equals(fast)


def _random_run_lines(rng):
    """Distinct (tag, qid, docno) rows: qids and docnos whose byte order differs from their numeric
    order, few score values (ties everywhere, -0.0 beside 0), one to three tags."""
    tags = rng.sample(["bm25", "dense", "Run_B", "a_very_long_run_tag_name"], rng.randint(1, 3))
    rows = []
    for tag in tags:
        for qid in rng.sample(["1", "2", "10", "q9", "Q10", "301"], rng.randint(1, 4)):
            docs = rng.sample(["d1", "d10", "d2", "D1", "a", "b", "B", "9", "10", "z-1", "clueweb12-0000tw"], rng.randint(1, 9))
            rows += [(tag, qid, doc, rng.choice(["1", "1.0", "0.5", "-0.0", "0", "2e-1", "-3"])) for doc in docs]
    return rows


def _trec_eval_order_by_hand(rows):
    """The oracle, with Python's sorted(): runs and qids in byte order, score descending, equal
    scores by docno descending in byte order, ranks 1..n per (run, qid)."""
    by_docno = sorted(rows, key=lambda r: r[2].encode(), reverse=True)
    ordered = sorted(by_docno, key=lambda r: (r[0].encode(), r[1].encode(), -float(r[3])))
    out, rank = [], 0
    for i, (tag, qid, doc, score) in enumerate(ordered):
        rank = 1 if i == 0 or ordered[i - 1][:2] != (tag, qid) else rank + 1
        out.append((tag, qid, doc, rank, float(score) + 0.0))
    return out


def _layouts(rng, rows):
    """The same rows in the layouts the reader treats apart: shuffled; each query one stretch with
    scores descending and ties in any order (only ties sorted); already in trec_eval's order (nothing
    moves); a query in two stretches; messy blanks (split block by block)."""
    shuffled = rng.sample(rows, len(rows))
    by_query = sorted(shuffled, key=lambda r: (r[1], r[0]))  # qids grouped, not in byte order
    grouped = sorted(by_query, key=lambda r: (r[1], r[0], -float(r[3])))
    ordered = [(t, q, d, s) for t, q, d, _, s in _trec_eval_order_by_hand(rows)]
    half = len(grouped) // 2
    split = grouped[half:] + grouped[:half]
    line = "{1} Q0 {2} 0 {3} {0}\n".format
    messy = "".join("  {1}\t Q0 {2}  7 {3} {0} extra\r\n".format(*r) for r in shuffled)
    return {"shuffled": "".join(line(*r) for r in shuffled), "grouped": "".join(line(*r) for r in grouped),
            "ordered": "".join(line(*r) for r in ordered), "split": "".join(line(*r) for r in split),
            "messy": messy}


@pytest.mark.parametrize("seed", range(25))
def test_every_layout_gives_trec_evals_order(tmp_path, seed, monkeypatch):
    """Random small runs with ties, tags and shuffled lines, in every layout: the reader's rows equal
    an independent sort by hand (Python's sorted() with trec_eval's key), read as a whole (plain
    files of simple lines), block by block (compressed) and by the regular expression alone."""
    import random

    rng = random.Random(seed)
    rows = _random_run_lines(rng)
    expected = _trec_eval_order_by_hand(rows)
    for layout, text in _layouts(rng, rows).items():
        path = _write(tmp_path, f"{layout}.txt", text)
        got = read_trec_run(path)
        assert got.rows() == expected, layout
        if layout != "messy":
            assert trec._whole_file(os.fspath(path), 6, False, [pl.col("f0")], ()) is not None, layout
        gz = _write(tmp_path, f"{layout}.gz", text, gzip.open)  # compressed: block by block
        with monkeypatch.context() as m:
            m.setattr(trec, "_BLOCK", 64)
            assert read_trec_run(gz).equals(got), layout  # blocks of a line or two
            m.setattr(trec, "_fast", lambda *a, **k: None)
            assert read_trec_run(path).equals(got), layout  # the regular expression only


@pytest.mark.parametrize("text", [
    b"\xef\xbb\xbf1 Q0 a 1 5.0 r\n2 Q0 b 1 4.0 r\n",  # a byte-order mark
    b"1 Q0 a 1 5.0 r\n2 Q0 b 1 4.0 r\n# a comment at the end\n",
    b"1 Q0 a 1 5.0 r\n2 Q0 b 1 4.0 r\n\n",  # a blank line at the end
    b"1 Q0 a 1 5.0 r\n2 Q0 b 1 4.0 r",  # no newline at the end
    b"1 Q0 a 1 5.0 r x y\n2 Q0 b 1 4.0 r\n",  # fields after the tag, two of them on the first line
    b"1 Q0 a 1 5.0 r \n2 Q0 b 1 4.0 r\n",  # a trailing blank
    b"1 Q0 a 1 5.0 r\n2  Q0 b 1 4.0 r\n",  # a run of spaces (an empty field to the CSV reader)
    b"1 Q0 a 1 5.0 r\n2 Q0 b 1 4.0\n",  # a short line after a good one
    b"1 Q0 a 1 +5 r\n2 Q0 b 1 1e400 r\n3 Q0 c 1 -inf r\n",
    b"1 Q0 \xc3\xa9 1 5 r\n1 Q0 e 1 5 r\n1 Q0 E 1 5 r\n",  # UTF-8 docnos: byte order
    b"1 Q0 \xc3\xa9 1 5 r\n1 Q0 \xff 1 5 r\n",  # not UTF-8
])
def test_the_whole_file_scan_and_the_regular_expression_agree(tmp_path, monkeypatch, text):
    """Plain files at the edges of the whole-file scan: the same frame, or the same error, as the
    regular expression alone gives."""
    path = tmp_path / "run.txt"
    path.write_bytes(text)

    def outcome():
        try:
            return read_trec_run(path)
        except InputError as exc:
            return f"{type(exc).__name__}: {exc}"

    whole = outcome()
    monkeypatch.setattr(trec, "_fast", lambda *a, **k: None)
    general = outcome()
    assert whole.equals(general) if isinstance(whole, pl.DataFrame) else whole == general


def test_a_path_given_as_bytes_or_with_blanks_is_read_as_a_path(tmp_path):
    """The whole-file scan is handed the file's name, never its name as CSV text."""
    path = _write(tmp_path, "a b c d e f g.txt", TIES)
    assert read_trec_run(os.fsencode(path))["item"].to_list() == TIES_ORDER
    assert read_trec_run(path)["item"].to_list() == TIES_ORDER
