"""Every measure `trec_eval -m all_trec` prints, as pytrec_eval computes it, against rankwise run live (the
conformance virtualenv ``live``, built by CI: .ci/run): the same trec_eval names go to
``pytrec_eval.RelevanceEvaluator(qrels, {"all_trec"})`` there and to ``rankwise.evaluate(measures=...)`` here,
per query to 1e-9, and the 'all' values.

Generated data with graded levels 0-3, levels of -1 (pooled, not judged), judged non-relevant documents,
retrieved documents without a qrels line, tied scores (both rank a tie by docno descending), lists of 1 to 40
documents (shorter and longer than trec_eval's cutoffs 5 .. 30), queries without a relevant document and one
with only -1 lines. The run goes to rankwise with its scores.

Left out, and why: ``iprec_at_recall_*`` and ``11pt_avg`` (pytrec-eval-terrier 0.5.11 is trec_eval 9, which
counts a recall level's documents as (long)(l R + 0.9); rankwise follows trec_eval 10.0's lround(l R), proven
against trec_eval 10.0's own outputs in tests/test_trec_suite.py and tests/test_trec_levels.py); ``runid``,
``num_q`` and ``relstring`` (run information, not per-query values).
"""

from __future__ import annotations

import math
import random
import sys
import warnings
from pathlib import Path

import polars as pl
import pytest

import rankwise
from rankwise.errors import CutoffWarning
from rankwise.metrics import names as N

HERE = Path(__file__).parent
# PostgreSQL too (4 s); not Spark: its parameter families run one evaluation per value (11 runs, ~4 minutes
# here; it passed every measure when run so, stop 45), and its values equal the embedded engines' in
# tests/test_trec_suite.py and the cross-backend tests
ONE_CASE_ON_SLOW_BACKENDS = True
SLOW_BACKEND_TESTS = {"postgres": ("test_every_all_trec_measure_matches_pytrec_eval",)}

NOT_COMPARED = ("iprec_at_recall_", "11pt_avg", "runid", "num_q", "relstring")

_RUNNER = """
import json, sys
import pytrec_eval
data = json.load(sys.stdin)
per = pytrec_eval.RelevanceEvaluator(data["qrels"], {"all_trec"}).evaluate(data["run"])
names = sorted(next(iter(per.values())))
agg = {m: pytrec_eval.compute_aggregated_measure(m, [v[m] for v in per.values()]) for m in names}
json.dump({"per": per, "all": agg}, sys.stdout)
"""


def _data(seed: int = 38):
    """qrels {qid: {docno: level}} and a run {qid: {docno: score}} (see the module docstring)."""
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(40):
        qid = f"q{q:02d}"
        docs = [f"d{d:03d}" for d in rng.sample(range(400), 60)]
        levels = [-1, 0, 0, 0, 1, 1, 2, 3] if q % 6 else [-1, 0, 0]  # every sixth query: nothing relevant
        qrels[qid] = {d: rng.choice(levels) for d in docs[:30]}
        if q == 7:
            qrels[qid] = {d: -1 for d in docs[:5]}
        listed = rng.sample(docs, 2 if q == 5 else rng.randint(1, 40))  # docs[30:] are in no qrels line
        # tied scores in every third query, distinct ones elsewhere
        run[qid] = {d: float(rng.randint(1, 5)) if q % 3 == 0 else rng.uniform(0, 100) for d in listed}
    return qrels, run


def _pytrec_eval(qrels, run) -> dict:
    import live_venv  # noqa: PLC0415 (tests/conformance is on sys.path: tests/conftest.py)

    return live_venv.run(_RUNNER, {"qrels": qrels, "run": run})


@pytest.fixture(scope="module")
def expected():
    sys.path.insert(0, str(HERE))
    qrels, run = _data()
    return qrels, run, _pytrec_eval(qrels, run)


def _compared(names) -> list[str]:
    return [n for n in names if not n.startswith(NOT_COMPARED)]


def test_every_all_trec_measure_matches_pytrec_eval(expected, backend):
    qrels, run, want = expected
    names = _compared(next(iter(want["per"].values())))
    measures = [N.parse(n) for n in names]
    assert all(m.live for m in measures), [m.name for m in measures if not m.live]
    recs = pl.DataFrame([(q, d, s) for q, r in run.items() for d, s in r.items()],
                        schema={"user": pl.String, "item": pl.String, "score": pl.Float64}, orient="row")
    truth = pl.DataFrame([(q, d, level) for q, labels in qrels.items() for d, level in labels.items()],
                         schema={"user": pl.String, "item": pl.String, "relevance": pl.Int64}, orient="row")
    conv = N.requirements(measures, rankwise.PRESETS["trec_eval"])
    with warnings.catch_warnings():  # a cutoff past every list (P_1000): the whole list, as trec_eval computes it
        warnings.simplefilter("ignore", CutoffWarning)
        res = rankwise.evaluate(recs, truth, measures=names, convention=conv, score_col="score", rank_col=None,
                                backend=backend)
    per = {row["user"]: row for row in res.per_measure.iter_rows(named=True)}
    summary = {row["measure"]: row["value"] for row in res.measure_summary.iter_rows(named=True)}
    compared = 0
    for qid, values in want["per"].items():
        for name in names:
            mine = per[qid][name]
            if name in ("gm_map", "gm_bpref"):  # pytrec_eval's per-query value is log(max(v, 0.00001)) (m_gm_*.c)
                mine = math.log(max(mine, 0.00001))
            assert mine == pytest.approx(values[name], rel=1e-9, abs=1e-12), (name, qid, backend)
            compared += 1
    for name in names:
        assert summary[name] == pytest.approx(want["all"][name], rel=1e-9, abs=1e-12), (name, "all", backend)
    assert compared == len(want["per"]) * len(names)
    assert len(names) >= 80  # every all_trec measure but the left-out ones


def test_the_data_holds_the_cases_the_measures_tell_apart():
    qrels, run = _data()
    assert any(v < 0 for labels in qrels.values() for v in labels.values())  # pooled, not judged
    assert any(v == 0 for labels in qrels.values() for v in labels.values())  # judged non-relevant
    assert any(all(v <= 0 for v in labels.values()) for labels in qrels.values())  # nothing relevant
    assert any(d not in qrels[q] for q, r in run.items() for d in r)  # unjudged documents
    assert any(len(set(r.values())) < len(r) for r in run.values())  # ties
    assert min(map(len, run.values())) < 5 and max(map(len, run.values())) > 30  # around the cutoffs
