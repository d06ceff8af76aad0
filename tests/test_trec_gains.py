"""trec_eval 10.0's G, binG, ndcg, ndcg_rel, Rndcg and rbp_resid under gain parameters (``-m ndcg.1=3,2=9,4=4.5``:
the knob gain_levels), RBP's p (``rbp_resid.p=0.5``), a cut run (``-M5``) and a relevance level (``-l2``): every
expected line of tests/conformance/fixtures/trec_eval/gains (written by the binary; README there has the command
lines), per query and 'all', formatted ``%.4f`` and compared as text on Polars and DuckDB. The measure names are
read by rankwise.metrics.names (the CLI's reader), their knobs set as the CLI sets them."""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl
import pytest
from trec_suite import parse_trec_eval_output

import rankwise
from rankwise.errors import CutoffWarning
from rankwise.inputs.trec import read_qrels, read_trec_run
from rankwise.metrics import names

HERE = Path(__file__).parent / "conformance" / "fixtures" / "trec_eval" / "gains"
# (expected output, qrels, run, -M, -l)
FILES = [
    ("out.rel_level.g1", "../suite/qrels.rel_level", "../suite/results.test", None, None),
    ("out.gains", "qrels.gains", "results.gains", None, None),
    ("out.gains.g2", "qrels.gains", "results.gains", None, None),
    ("out.gains.g3", "qrels.gains", "results.gains", None, None),
    ("out.gains.g4", "qrels.gains", "results.gains", None, None),
    ("out.gains.M5", "qrels.gains", "results.gains", 5, None),
    ("out.gains.l2", "qrels.gains", "results.gains", None, 2),
]

# Lines where rankwise does not reproduce trec_eval, each asserted to still differ (remove when it matches), and the
# 'all' line of their measure:
#  - a query without a relevant label (qrels level >= -l, 1 by default) but with labels of positive gain (a level
#    below -l, or level 0 given a gain): trec_eval computes G, ndcg and ndcg_rel from the gains; rankwise gives such
#    a user the empty_labels value, 0 (trec_eval's Rndcg and binG give 0 there too);
#  - Rndcg when no label of the query has a positive gain (its relevant levels all given negative gains): trec_eval
#    divides 0 by 0 points and prints -nan; rankwise gives 0.
def _diverges(measure: str, qid: str, text: str, no_relevant: set) -> bool:
    return text.endswith("nan") or (qid in no_relevant and text != "0.0000"
                                    and names.parse(measure).metric in ("g", "ndcg", "ndcg_rel"))


def _inputs(qrels: str, run: str, max_docs):
    recs = read_trec_run(HERE / run)
    if max_docs is not None:
        recs = recs.filter(pl.col("rank") <= max_docs)
    truth = read_qrels(HERE / qrels).filter(pl.col("relevance") >= 0)  # level -1: unjudged (form_res_rels.c)
    return recs.select("user", "item", "rank"), truth


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("expected_file, qrels, run, max_docs, level", FILES, ids=[f[0] for f in FILES])
def test_trec_eval_gain_lines(expected_file, qrels, run, max_docs, level, engine):
    expected = parse_trec_eval_output(HERE / expected_file)
    recs, truth = _inputs(qrels, run, max_docs)
    whole = int(max(recs.group_by("user").len()["len"].max(), truth.group_by("user").len()["len"].max()))
    base = rankwise.PRESETS["trec_eval"]
    if level is not None:
        base = base.replace(relevance_threshold=float(level))
    threshold = base.relevance_threshold
    no_relevant = set(truth.group_by("user").agg((pl.col("relevance") >= threshold).any().alias("any"))
                      .filter(~pl.col("any"))["user"].to_list())
    measures = {m: names.parse(m) for m, _ in expected}
    got = {}
    for name, measure in measures.items():  # one evaluation per measure: each names its own knobs
        conv = names.requirements([measure], base)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CutoffWarning)
            res = rankwise.evaluate(recs, truth, metrics=[measure.metric], k=[whole], convention=conv, backend=engine)
        column = f"{measure.metric}@{whole}"
        got[name] = {r["user"]: r[column] for r in res.per_user.iter_rows(named=True)}
        got[name]["all"] = res.summary.filter(pl.col("metric") == measure.metric)["value"].item()
    checked, bad, known = 0, [], []
    for (measure, qid), text in expected.items():
        value = got[measure].get(qid)
        line = f"{measure} {qid}: expected {text}, got {'missing' if value is None else f'{value:.4f}'}"
        same = value is not None and f"{value:.4f}" == text
        if _diverges(measure, qid, text, no_relevant) or qid == "all" and any(
                _diverges(measure, q, t, no_relevant) for (m, q), t in expected.items() if m == measure):
            known.append((line, same))
            continue
        checked += 1
        if not same:
            bad.append(line)
    assert checked >= 16 and checked + len(known) == len(expected)
    assert not bad, f"{expected_file} on {engine}: {len(bad)} of {checked} lines differ:\n" + "\n".join(bad)
    per_query = [(line, same) for line, same in known if " all:" not in line]
    assert all(not same for line, same in per_query), [line for line, same in per_query if same]


# -- live: pytrec_eval (trec_eval 9's G, binG, ndcg_rel, Rndcg; it has no rbp_resid, and its measure parameters are
# split at commas, so no gains per level) on generated data, per query to 1e-9 ------------------------------------

_PYTREC = """
import json, sys
import pytrec_eval
data = json.load(open(sys.argv[1]))
out = pytrec_eval.RelevanceEvaluator(data["qrels"], {"G", "binG", "ndcg", "ndcg_rel", "Rndcg"}).evaluate(data["run"])
json.dump(out, open(sys.argv[2], "w"))
"""


def _graded_data(seed: int):
    """qrels with levels 0..3 (some queries without a relevant level), runs with unjudged documents, tied scores
    (trec_eval orders a tie by docno descending) and lists of 1 to 30 documents; the ranking trec_eval reads from
    the scores, written out by that rule (score descending, then docno descending)."""
    import random

    rng = random.Random(seed)
    qrels, run, ranked = {}, {}, {}
    for q in range(60):
        qid, docs = f"q{q:02d}", [f"d{i:03d}" for i in range(50)]
        top = rng.choice((0, 1, 2, 3, 3))
        qrels[qid] = {d: rng.randint(0, top) for d in rng.sample(docs, rng.randint(1, 25))}
        listed = rng.sample(docs, rng.randint(1, 30))
        run[qid] = {d: float(rng.randint(1, 6)) if q % 3 == 0 else rng.uniform(0, 100) for d in listed}
        ranked[qid] = sorted(listed, key=lambda d: (-run[qid][d], [-ord(c) for c in d]))
    return qrels, run, ranked


@pytest.mark.parametrize("seed", [1, 2])
def test_gain_measures_match_pytrec_eval_live(seed, tmp_path):
    """pytrec_eval (in the conformance venv ``live``, built by CI) against rankwise's trec_eval preset on Polars and
    DuckDB: G, binG, ndcg, ndcg_rel and Rndcg of every query to 1e-9."""
    import json
    import math
    import os
    import subprocess
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "conformance"))
    from make_fixtures import DEFAULT_VENV_ROOT, LIBRARIES  # noqa: PLC0415

    venv = Path(os.environ.get("RANKWISE_CONFORMANCE_VENVS", DEFAULT_VENV_ROOT)) / LIBRARIES["pytrec_eval"][0]
    if not (venv / "bin" / "python").exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI must build the conformance virtualenv {venv} (see .ci/run)")
        pytest.skip(f"no virtualenv {venv}: python tests/conformance/make_fixtures.py --libraries pytrec_eval")
    qrels, run, ranked = _graded_data(seed)
    (tmp_path / "in.json").write_text(json.dumps({"qrels": qrels, "run": run}))
    (tmp_path / "run.py").write_text(_PYTREC)
    subprocess.run([str(venv / "bin" / "python"), str(tmp_path / "run.py"), str(tmp_path / "in.json"),
                    str(tmp_path / "out.json")], check=True)
    expected = json.loads((tmp_path / "out.json").read_text())
    recs = pl.DataFrame([(q, d, r) for q, docs in ranked.items() for r, d in enumerate(docs, 1)],
                        schema={"user": pl.String, "item": pl.String, "rank": pl.Int64}, orient="row")
    truth = pl.DataFrame([(q, d, float(v)) for q, labels in qrels.items() for d, v in labels.items()],
                         schema={"user": pl.String, "item": pl.String, "relevance": pl.Float64}, orient="row")
    metric = {"G": "g", "binG": "bin_g", "ndcg": "ndcg", "ndcg_rel": "ndcg_rel", "Rndcg": "rndcg"}
    checked = 0
    for engine in ("polars", "duckdb"):
        res = rankwise.evaluate(recs, truth, metrics=list(metric.values()), k=[100], convention="trec_eval",
                                backend=engine)
        rows = {r["user"]: r for r in res.per_user.iter_rows(named=True)}
        for qid, values in expected.items():  # a query without a relevant label too: 0 on both sides
            for name, value in values.items():
                ours = rows[qid][f"{metric[name]}@100"]
                assert math.isclose(ours, value, rel_tol=1e-9, abs_tol=1e-12), (engine, qid, name, ours, value)
                checked += 1
    assert checked == 2 * 5 * 60
