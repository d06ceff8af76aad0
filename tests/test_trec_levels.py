"""trec_eval 10.0's ``11pt_avg`` at given recall levels (``-m 11pt_avg.0.25,0.5,0.75``; rankwise's
``11pt_avg_0.25,0.5,0.75``, declarations.LevelMean): every line of tests/conformance/fixtures/trec_eval/levels
(written by the binary; README there has the command lines), per query and 'all', on every engine and through
the CLI; a naive port of m_11pt_avg.c as the oracle on seeded inputs, bit for bit; the parameter errors."""

from __future__ import annotations

import math
import random
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from trec_suite import parse_trec_eval_output

import rankwise
from rankwise.cli import main
from rankwise.errors import CutoffWarning, ParameterError
from rankwise.inputs.trec import read_qrels, read_trec_run
from rankwise.metrics import names

HERE = Path(__file__).parent / "conformance" / "fixtures" / "trec_eval" / "levels"
# (expected output, qrels, run, -M, -l): the README's command lines
FILES = [
    ("out.test.asc", "../suite/qrels.test", "../suite/results.test", None, None),
    ("out.test.unordered", "../suite/qrels.test", "../suite/results.test", None, None),
    ("out.gains.asc", "../gains/qrels.gains", "../gains/results.gains", None, None),
    ("out.gains.eleven", "../gains/qrels.gains", "../gains/results.gains", None, None),
    ("out.gains.duplicates", "../gains/qrels.gains", "../gains/results.gains", None, None),
    ("out.gains.one", "../gains/qrels.gains", "../gains/results.gains", None, None),
    ("out.gains.unordered", "../gains/qrels.gains", "../gains/results.gains", None, None),
    ("out.gains.mixed", "../gains/qrels.gains", "../gains/results.gains", None, None),
    ("out.gains.M5", "../gains/qrels.gains", "../gains/results.gains", 5, None),
    ("out.gains.l2", "../gains/qrels.gains", "../gains/results.gains", None, 2),
    ("out.gains.l2.unordered", "../gains/qrels.gains", "../gains/results.gains", None, 2),
]


def _inputs(qrels: str, run: str, max_docs):
    recs = read_trec_run(HERE / run)
    if max_docs is not None:
        recs = recs.filter(pl.col("rank") <= max_docs)
    truth = read_qrels(HERE / qrels).filter(pl.col("relevance") >= 0)  # level -1: unjudged (form_res_rels.c)
    return recs.select("user", "item", "rank"), truth


def _check_file(expected_file, qrels, run, max_docs, level, backend) -> int:
    expected = parse_trec_eval_output(HERE / expected_file)
    (name,) = {m for m, _ in expected}
    recs, truth = _inputs(qrels, run, max_docs)
    conv = rankwise.PRESETS["trec_eval"]
    if level is not None:
        conv = conv.replace(relevance_threshold=float(level))
    res = rankwise.evaluate(recs, truth, measures=[name], convention=conv, backend=backend)
    got = {u: v for u, v in res.per_measure.iter_rows()}
    got["all"] = res.measure_summary.filter(pl.col("measure") == name)["value"].item()
    bad = [f"{qid}: expected {text}, got {got.get(qid)}" for (_, qid), text in expected.items()
           if qid not in got or f"{got[qid]:.4f}" != text]
    assert not bad, f"{expected_file} on {backend}:\n" + "\n".join(bad)
    return len(expected)


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("expected_file, qrels, run, max_docs, level", FILES, ids=[f[0] for f in FILES])
def test_trec_eval_level_lines(expected_file, qrels, run, max_docs, level, engine):
    """Every line trec_eval 10.0 printed, per query and 'all', to %.4f."""
    assert _check_file(expected_file, qrels, run, max_docs, level, engine) in (4, 41)


def test_trec_eval_level_lines_on_every_backend(backend):
    """Spark and PostgreSQL (their iprec_at_recall values one run each) too, on levels out of order."""
    assert _check_file(*FILES[7], backend) == 41


def test_cli_prints_trec_evals_lines(capsys):
    """``rankwise evaluate RUN QRELS --trec -q -m 11pt_avg.<levels>``: trec_eval's lines, byte for byte."""
    for expected_file, qrels, run, _, _ in (FILES[1], FILES[7]):
        levels = next(iter(parse_trec_eval_output(HERE / expected_file)))[0].removeprefix("11pt_avg_")
        code = main(["evaluate", str(HERE / run), str(HERE / qrels), "--trec", "-q", "-m", f"11pt_avg.{levels}"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert out == (HERE / expected_file).read_text()


# -- a naive oracle: m_11pt_avg.c line for line ------------------------------------------------------------


def _oracle(rels: list[bool], num_rel: int, levels, count) -> float:
    """te_calc_11ptavg: ``rels`` the retrieved list's relevance in rank order, ``count`` the level -> number of
    relevant documents rule (lround in trec_eval 10.0)."""
    cutoffs = [count(level * num_rel) for level in levels]
    num_ret, num_rel_ret = len(rels), sum(rels)
    current = len(levels) - 1
    while current >= 0 and cutoffs[current] > num_rel_ret:
        current -= 1
    precis = num_rel_ret / num_ret
    int_precis, rel_so_far, total = precis, num_rel_ret, 0.0
    i = num_ret
    while i > 0 and rel_so_far > 0:
        precis = rel_so_far / i
        int_precis = max(int_precis, precis)
        if rels[i - 1]:
            while current >= 0 and rel_so_far == cutoffs[current]:
                total += int_precis
                current -= 1
            rel_so_far -= 1
        i -= 1
    while current >= 0:
        total += int_precis
        current -= 1
    return total / len(levels)


def _lround(x: float) -> int:
    """C's lround (x >= 0 here): halves away from zero, exactly (x - floor(x) has no rounding error)."""
    return math.floor(x) + (x - math.floor(x) >= 0.5)


COUNTS = {"round": _lround, "truncate_plus_0.9": lambda x: int(x + 0.9)}  # trec_eval 10.0, trec_eval 9


@pytest.fixture(scope="module")
def seeded():
    """60 users, 1-12 relevant labels, lists of 1-25 items: ties in the rounding of l n_rel, users with no
    relevant item retrieved, and a relevant item at rank 1."""
    rng = random.Random(38)
    recs, truth, lists = [], [], {}
    for u in range(60):
        user = f"u{u:02d}"
        n_rel = rng.randint(1, 12)
        relevant = {f"r{j}" for j in range(n_rel)}
        pool = sorted(relevant | {f"n{j}" for j in range(20)})
        items = rng.sample(pool, rng.randint(1, min(25, len(pool))))
        if u % 10 == 0:  # nothing relevant retrieved
            items = [i for i in items if i not in relevant] or ["n0"]
        recs += [(user, item, rank) for rank, item in enumerate(items, 1)]
        truth += [(user, item, 1) for item in relevant] + [(user, "n1", 0)]
        lists[user] = ([i in relevant for i in items], n_rel)
    recs = pl.DataFrame(recs, schema={"user": pl.String, "item": pl.String, "rank": pl.Int64}, orient="row")
    truth = pl.DataFrame(truth, schema={"user": pl.String, "item": pl.String, "relevance": pl.Int64}, orient="row")
    return recs, truth, lists


LEVEL_SETS = ["0.25,0.5,0.75", "0.0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0", "0.5,0.5", "0.75,0.25,0.5",
              "1.0,0.0,0.35,0.35,0.9,0.6", "0.9,0.1,0.5,0.3", "0.3,0.3,0.1", "0.05", "0.0"]
RANDOM_SETS = [",".join(str(round(random.Random(s).random(), 2)) for _ in range(random.Random(s + 99).randint(1, 7)))
               for s in range(8)]


def _bits(values) -> list[int]:
    return np.asarray(values, dtype=np.float64).view("u8").tolist()


@pytest.mark.parametrize("count", list(COUNTS))
def test_values_are_the_oracles_bit_for_bit(seeded, count):
    """Every user's value is the oracle's, bit for bit (the same additions in the same order, then sum / n), on
    Polars and DuckDB; the two engines' summary rows are the same bits, run after run, and the oracle's mean."""
    recs, truth, lists = seeded
    conv = rankwise.PRESETS["trec_eval"].replace(iprec_recall_count=count)
    asked = [f"11pt_avg_{levels}" for levels in LEVEL_SETS + RANDOM_SETS]
    runs = [rankwise.evaluate(recs, truth, measures=asked, convention=conv, backend=b)
            for b in ("polars", "duckdb", "polars")]
    for name in asked:
        levels = [float(x) for x in name.removeprefix("11pt_avg_").split(",")]
        want = {u: _oracle(rels, n_rel, levels, COUNTS[count]) for u, (rels, n_rel) in lists.items()}
        for res in runs:
            got = dict(res.per_measure.select("user", name).iter_rows())
            assert set(got) == set(want)
            assert _bits([got[u] for u in sorted(want)]) == _bits([want[u] for u in sorted(want)]), name
        means = [res.measure_summary.filter(pl.col("measure") == name)["value"].item() for res in runs]
        assert len(set(_bits(means))) == 1, (name, means)
        assert means[0] == pytest.approx(sum(want.values()) / len(want), rel=1e-14, abs=1e-15)


def test_levels_in_ascending_order_are_the_mean_of_iprec_at_recall(seeded):
    """Given in ascending order, trec_eval's value is the mean of iprec_at_recall at the levels (the oracle's
    iprec_at_recall: the largest precision at or below each rank from the r-th relevant item on)."""
    recs, truth, lists = seeded
    levels = (0.1, 0.35, 0.35, 0.8)
    res = rankwise.evaluate(recs, truth, measures=["11pt_avg_0.1,0.35,0.35,0.8"], convention="trec_eval")

    def iprec(rels, n_rel, level):
        r = _lround(level * n_rel)
        precisions = [sum(rels[:i + 1]) / (i + 1) for i, rel in enumerate(rels) if rel and sum(rels[:i + 1]) >= r]
        return max(precisions, default=0.0)

    for user, value in res.per_measure.iter_rows():
        rels, n_rel = lists[user]
        assert value == pytest.approx(sum(iprec(rels, n_rel, lv) for lv in levels) / len(levels), abs=1e-15)


def test_names_and_columns():
    """trec_eval's -m spelling becomes its printed name; both spellings parse to the levels as given."""
    assert names.expand_trec("11pt_avg.0.25,0.5,0.75") == ["11pt_avg_0.25,0.5,0.75"]
    assert names.expand_trec("11pt_avg") == ["11pt_avg"]
    assert names.parse("11pt_avg_0.75,0.25,0.25").levels == (0.75, 0.25, 0.25)
    assert names.parse("11pt_avg.1,0").levels == (1.0, 0.0)
    assert names.parse("11pt_avg").levels is None
    recs = pl.DataFrame({"user": ["a", "a"], "item": ["x", "y"], "rank": [1, 2]})
    truth = pl.DataFrame({"user": ["a"], "item": ["y"], "relevance": [1]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CutoffWarning)
        res = rankwise.evaluate(recs, truth, measures=["11pt_avg", "11pt_avg_0.5,0.5", "11pt_avg.0.5,0.5"],
                                convention="trec_eval")
    assert res.per_measure.row(0) == ("a", 0.5, 0.5, 0.5)  # 1 relevant at rank 2: every level's iprec is 1/2
    assert "ipt11_avg(iprec_recall_levels=0.5,0.5)" in res.summary["metric"].to_list()


@pytest.mark.parametrize("name, problem", [
    ("11pt_avg_", "gives no recall levels"),
    ("11pt_avg.", "gives no recall levels"),
    ("11pt_avg_1.5,0.2", "'1.5' is not a recall level"),
    ("11pt_avg_-0.2,0.5", "'-0.2' is not a recall level"),
    ("11pt_avg_0.5,,0.7", "'' is not a recall level"),
    ("11pt_avg_abc", "'abc' is not a recall level"),
    ("11pt_avg_nan", "'nan' is not a recall level"),
])
def test_bad_levels_are_refused(name, problem):
    """trec_eval reads these as numbers anyway (atof: 'abc' is 0; 1.5 a count no walk meets); rankwise refuses."""
    recs = pl.DataFrame({"user": ["a"], "item": ["x"], "rank": [1]})
    with pytest.raises(ParameterError, match=problem) as err:
        rankwise.evaluate(recs, recs.with_columns(relevance=pl.lit(1)).drop("rank"), measures=[name],
                          convention="trec_eval")
    assert "from 0 to 1" in err.value.hint and "11pt_avg_0.25,0.5,0.75" in err.value.hint


@pytest.mark.parametrize("conv", [
    rankwise.PRESETS["trec_eval"].replace(users="union"),
    rankwise.PRESETS["trec_eval"].replace(users="union", empty_labels="nan", empty_predictions="one",
                                          iprec_recall_count="truncate_plus_0.9"),
], ids=["trec_eval-union", "other-rules"])
def test_users_without_labels_or_lists_and_every_engine_alike(seeded, conv, backend):
    """A user with labels and no list, one with a list and no relevant label: the empty rules' value (0, NaN or
    1 as the convention says); the others the oracle's; every engine the same bits as Polars."""
    recs, truth, lists = seeded
    recs = pl.concat([recs, pl.DataFrame({"user": ["x1", "x1"], "item": ["a", "b"], "rank": [1, 2]},
                                         schema=recs.schema)])
    truth = pl.concat([truth, pl.DataFrame({"user": ["x1", "x2"], "item": ["a", "c"], "relevance": [0, 1]},
                                           schema=truth.schema)])
    asked = ["11pt_avg_0.25,0.5,0.75", "11pt_avg_1.0,0.0,0.35,0.35,0.9,0.6"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CutoffWarning)
        res, ref = (rankwise.evaluate(recs, truth, measures=asked, convention=conv, backend=b)
                    for b in (backend, "polars"))
    got = {row[0]: row[1:] for row in res.per_measure.iter_rows()}
    no_labels = {"zero": 0.0, "nan": float("nan"), "one": 1.0}[conv.empty_labels]
    no_list = {"zero": 0.0, "nan": float("nan"), "one": 1.0}[conv.empty_predictions]
    assert _bits(got["x1"]) == _bits([no_labels] * 2) and _bits(got["x2"]) == _bits([no_list] * 2)
    for i, name in enumerate(asked):
        levels = [float(x) for x in name.removeprefix("11pt_avg_").split(",")]
        for user, (rels, n_rel) in lists.items():
            assert _bits([got[user][i]]) == _bits([_oracle(rels, n_rel, levels, COUNTS[conv.iprec_recall_count])])
    assert res.per_measure.sort("user").equals(ref.per_measure.sort("user"))
    mine, theirs = (r.measure_summary.select("measure", "value", "n_users") for r in (res, ref))
    assert _bits(mine["value"]) == _bits(theirs["value"]) and mine["n_users"].equals(theirs["n_users"])
    assert mine["n_users"].to_list() == ([61, 61] if conv.empty_labels == "nan" else [62, 62])
