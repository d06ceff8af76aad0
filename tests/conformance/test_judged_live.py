"""trec_eval's judged-aware measures against pytrec_eval, run live in the conformance virtualenv (CI builds
it, .ci/run): bpref, gm_bpref, infAP and num_nonrel_judged_ret (pytrec-eval-terrier 0.5.11 has no unj) on
generated qrels with graded levels, judged non-relevant rows, levels of -1 (pooled, not judged), documents
without a qrels line, tied scores and short lists; per query to 1e-9 on every backend, and the 'all' values.

The run goes to rankwise with its scores (the trec_eval preset breaks a tie by docno descending, as trec_eval
does; docnos of equal width); a cutoff k is pytrec_eval on the run cut to its first k documents (trec_eval -M k).
Every expected value is pytrec_eval's.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import polars as pl
import pytest

import rankwise

HERE = Path(__file__).parent
MEASURES = {"bpref": "bpref", "infAP": "infap", "num_nonrel_judged_ret": "num_nonrel_judged_ret",
            "gm_bpref": "gm_bpref"}
CUTS = (3, 10)  # 10 is past every list: the whole list

# pytrec_eval in its own virtualenv: qrels, runs in, per-query values out (one process for every run)
_RUNNER = """
import json, sys
import pytrec_eval
data = json.load(sys.stdin)
out = {}
for name, run in data["runs"].items():
    per = pytrec_eval.RelevanceEvaluator(data["qrels"], set(data["measures"])).evaluate(run)
    out[name] = {"per": per, "all": {m: pytrec_eval.compute_aggregated_measure(m, [v[m] for v in per.values()])
                                     for m in data["measures"]}}
json.dump(out, sys.stdout)
"""


def _data(seed: int = 38):
    """qrels {qid: {docno: level}} and a run {qid: {docno: score}}: 30 queries, levels -1..3 (a few queries
    with no relevant or no judged non-relevant document, one with only -1 lines), lists of 1 to 8 documents,
    scores from a small set (ties), some documents not in the qrels."""
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(30):
        qid = f"q{q:02d}"
        docs = [f"d{d:03d}" for d in rng.sample(range(200), 12)]
        levels = [-1, 0, 0, 1, 2, 3] if q % 5 else ([0, 0, -1] if q % 10 == 0 else [1, 2, -1])
        if q == 7:
            levels = [-1]
        qrels[qid] = {d: rng.choice(levels) for d in docs[:8]}
        listed = rng.sample(docs, rng.randint(1, 8))  # docs[8:] are in no qrels line
        run[qid] = {d: float(rng.choice([1, 2, 2, 3, 4])) for d in listed}
    return qrels, run


def _top(ranking: dict, k: int) -> dict:
    """The first k documents in trec_eval's order: score descending, docno descending (form_res_rels.c)."""
    order = sorted(ranking.items(), key=lambda kv: kv[0], reverse=True)
    order.sort(key=lambda kv: kv[1], reverse=True)  # stable: ties keep docno descending
    return dict(order[:k])


def _pytrec_eval(qrels, runs) -> dict:
    import live_venv  # noqa: PLC0415 (tests/conformance is on sys.path: tests/conftest.py)

    return live_venv.run(_RUNNER, {"qrels": qrels, "runs": runs, "measures": list(MEASURES)})


@pytest.fixture(scope="module")
def expected():
    sys.path.insert(0, str(HERE))
    qrels, run = _data()
    return qrels, run, _pytrec_eval(qrels, {str(k): {q: _top(r, k) for q, r in run.items()} for k in CUTS})


def _frames(qrels, run):
    recs = pl.DataFrame([(q, d, s) for q, r in run.items() for d, s in r.items()],
                        schema={"user": pl.String, "item": pl.String, "score": pl.Float64}, orient="row")
    truth = pl.DataFrame([(q, d, float(level)) for q, labels in qrels.items() for d, level in labels.items()],
                         schema={"user": pl.String, "item": pl.String, "relevance": pl.Float64}, orient="row")
    return recs, truth


def test_judged_aware_measures_match_pytrec_eval(expected, backend):
    qrels, run, want = expected
    recs, truth = _frames(qrels, run)
    conv = rankwise.PRESETS["trec_eval"]
    res = rankwise.evaluate(recs, truth, metrics=sorted(set(MEASURES.values())), k=list(CUTS), convention=conv,
                            score_col="score", rank_col=None, backend=backend)
    per_user = {row["user"]: row for row in res.per_user.iter_rows(named=True)}
    summary = {(r["metric"], r["k"]): r["value"] for r in res.summary.iter_rows(named=True)}
    compared = 0
    for k in CUTS:
        got = want[str(k)]
        assert set(got["per"]) == set(per_user), k  # the same queries evaluated (in both, -1-only query 7 too)
        for qid, values in got["per"].items():
            for measure, metric in MEASURES.items():
                value = per_user[qid][f"{metric}@{k}"]
                # pytrec_eval's per-query gm_bpref is log(max(bpref, 0.00001)) (m_gm_bpref.c); rankwise's is bpref
                mine = math.log(max(value, 0.00001)) if measure == "gm_bpref" else value
                assert mine == pytest.approx(values[measure], rel=1e-9, abs=1e-12), (measure, qid, k, backend)
                compared += 1
        for measure, metric in MEASURES.items():
            assert summary[(metric, k)] == pytest.approx(got["all"][measure], rel=1e-9), (measure, k, backend)
    assert compared == len(CUTS) * len(qrels) * len(MEASURES)
    # the data holds every case the measures tell apart
    assert any(v < 0 for labels in qrels.values() for v in labels.values())
    assert any(d not in qrels[q] for q, r in run.items() for d in r)
    assert any(len(set(r.values())) < len(r) for r in run.values())
