"""Measure names as ir_measures writes them, against ir_measures itself, run live in the conformance
virtualenv (CI builds it, .ci/run): each name goes unchanged to ``ir_measures.parse_measure`` there and to
``rankwise.evaluate(measures=...)`` here, per query.

ir_measures computes a measure through a provider, named here so the definition is known: gdeval (its bundled
perl script, the TREC Web track's ``gdeval.pl``: ERR@k and nDCG with 2^rel - 1 gains, grades up to 4, values
printed with 5 decimals, so compared as printed), pytrec_eval (trec_eval 9's definitions), msmarco (RR@k),
``judged`` (ir_measures' own Judged@k) and cwl_eval (RBP). Each measure is asked alone through ir_measures'
own choice of provider (what its users get; the test checks the named one supports it): a provider forced
by hand computes what it does not support (pytrec_eval's RR@3 is RR uncut, its nDCG(dcg='exp-log2') is
nDCG with linear gains), and asked beside RR@3, RR came back 0 for some queries in ir_measures 0.4.3. The data: graded levels 0-4, levels of -1 (pooled, not judged),
retrieved documents without a qrels line, tied scores (every tool breaks them by docno descending), short
lists. gdeval gets the qrels without the -1 lines (it gives -1 the gain 2^-1 - 1 = -0.5, which no trec_eval
measure does) and needs numeric query ids and a relevant document in every query (it divides by the ideal
DCG), which the data has.
"""

from __future__ import annotations

import random
import sys
import warnings
from pathlib import Path

import polars as pl
import pytest

import rankwise
from rankwise.errors import CutoffWarning, ParameterError
from rankwise.metrics import names as N

HERE = Path(__file__).parent
# the names' mapping is the API's, the same on every engine, whose values other tests prove equal (and the
# embedded engines prove here): no case on Spark or PostgreSQL (Spark: 40 s for this module's first case)
ONE_CASE_ON_SLOW_BACKENDS = True
SLOW_BACKEND_TESTS = ()

# provider -> names as ir_measures writes them (IPrec left out: pytrec-eval-terrier 0.5.11 turns a recall
# level into a count by trec_eval 9's rule; rankwise follows trec_eval 10's, proven against its outputs)
MEASURES = {
    "gdeval": ["ERR@5", "ERR@20", "nDCG(dcg='exp-log2')@5", "nDCG(dcg='exp-log2')@20"],
    "pytrec_eval": ["nDCG@5", "nDCG", "P@5", "P(rel=2)@5", "AP", "AP@10", "RR", "R@10", "Rprec",
                    "Rprec(rel=2)", "Success@3", "Bpref", "infAP", "NumRet", "NumRet(rel=1)", "NumRel",
                    "NumRelRet", "SetP", "SetR", "SetF", "SetAP"],
    "msmarco": ["RR@3", "RR@10"],
    "judged": ["Judged@5", "Judged@10"],
    "cwl_eval": ["RBP(rel=1)", "RBP(p=0.5,rel=2)"],
}
GDEVAL_DECIMALS = 5  # gdeval.pl prints "%.5f"

# ir_measures in its own virtualenv: qrels and a run in, per-query values of each measure by the named provider out
_RUNNER = """
import json, sys
import ir_measures
data = json.load(sys.stdin)
out = {}
for provider, names in data["measures"].items():
    qrels = data["gdeval_qrels"] if provider == "gdeval" else data["qrels"]
    for name in names:  # one measure a call, through ir_measures' own choice of provider (what its users get)
        measure = ir_measures.parse_measure(name)
        assert getattr(ir_measures, provider).supports(measure), (provider, name)
        for m in ir_measures.iter_calc([measure], qrels, data["run"]):
            out.setdefault(name, {})[m.query_id] = float(m.value)
json.dump(out, sys.stdout)
"""


def _data(seed: int = 38):
    """qrels {qid: {docno: level}} and a run {qid: {docno: score}}: 25 queries with numeric ids, levels -1..4,
    at least one relevant document in each, lists of 1 to 14 documents, scores from a small set (ties), some
    retrieved documents in no qrels line."""
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(1, 26):
        qid = str(q)
        docs = [f"d{d:03d}" for d in rng.sample(range(300), 20)]
        qrels[qid] = {d: rng.choice([-1, 0, 0, 0, 1, 1, 2, 3, 4]) for d in docs[:12]}
        qrels[qid][docs[rng.randrange(12)]] = rng.choice([1, 2, 3, 4])  # a relevant document in every query
        listed = rng.sample(docs, rng.randint(1, 14))  # docs[12:] are in no qrels line
        scores = {d: float(rng.choice([1, 2, 2, 3, 4, 5])) for d in listed}
        # in trec_eval's order (score descending, docno descending): ir_measures' cwl_eval and judged providers
        # keep a tie in the order given
        run[qid] = dict(sorted(sorted(scores.items(), reverse=True), key=lambda kv: kv[1], reverse=True))
    return qrels, run


def _ir_measures(qrels, run) -> dict:
    import live_venv  # noqa: PLC0415 (tests/conformance is on sys.path: tests/conftest.py)

    gdeval_qrels = {q: {d: v for d, v in labels.items() if v >= 0} for q, labels in qrels.items()}
    return live_venv.run(_RUNNER, {"qrels": qrels, "gdeval_qrels": gdeval_qrels, "run": run, "measures": MEASURES})


@pytest.fixture(scope="module")
def expected():
    sys.path.insert(0, str(HERE))
    qrels, run = _data()
    return qrels, run, _ir_measures(qrels, run)


def _calls(names: list[str]) -> list[list[str]]:
    """The names in as few evaluate() calls as their conventions allow (nDCG@5 and nDCG(dcg='exp-log2')@5
    need two values of one knob: two calls)."""
    calls: list[list[str]] = []
    for name in names:
        for call in calls:
            try:
                N.requirements([N.parse(n) for n in [*call, name]], rankwise.PRESETS["default"])
            except ParameterError:
                continue
            call.append(name)
            break
        else:
            calls.append([name])
    return calls


def _rankwise(qrels, run, names: list[str], backend: str) -> dict:
    recs = pl.DataFrame([(q, d, s) for q, r in run.items() for d, s in r.items()],
                        schema={"user": pl.String, "item": pl.String, "score": pl.Float64}, orient="row")
    truth = pl.DataFrame([(q, d, level) for q, labels in qrels.items() for d, level in labels.items()],
                         schema={"user": pl.String, "item": pl.String, "relevance": pl.Int64}, orient="row")
    got: dict = {}
    for call in _calls(names):
        # trec_eval's knobs (ties by docno, the judged rules), its list of metrics lifted (ERR, Judged)
        conv = N.requirements([N.parse(n) for n in call], rankwise.PRESETS["trec_eval"].replace(metrics=None))
        with warnings.catch_warnings():  # @20 is past every list: the whole list, as ir_measures computes it
            warnings.simplefilter("ignore", CutoffWarning)
            res = rankwise.evaluate(recs, truth, measures=call, convention=conv, score_col="score", rank_col=None,
                                    backend=backend)
        for row in res.per_measure.iter_rows(named=True):
            for name in call:
                got.setdefault(name, {})[row["user"]] = row[name]
    return got


@pytest.mark.parametrize("provider", list(MEASURES))
def test_ir_measures_names_match_ir_measures(expected, provider, backend):
    qrels, run, want = expected
    gdeval = provider == "gdeval"
    names = MEASURES[provider]
    got = _rankwise({q: {d: v for d, v in labels.items() if v >= 0} for q, labels in qrels.items()} if gdeval
                    else qrels, run, names, backend)
    compared = 0
    for name in names:
        assert set(got[name]) == set(want[name]), name  # the same queries, every one
        for qid, value in want[name].items():
            mine = got[name][qid]
            if gdeval:
                assert f"{mine:.{GDEVAL_DECIMALS}f}" == f"{value:.{GDEVAL_DECIMALS}f}", (name, qid, mine, value, backend)
            else:
                assert mine == pytest.approx(value, rel=1e-9, abs=1e-12), (name, qid, backend)
            compared += 1
    assert compared == len(names) * len(qrels)


def test_the_data_holds_the_cases_the_measures_tell_apart():
    qrels, run = _data()
    assert any(v < 0 for labels in qrels.values() for v in labels.values())  # pooled, not judged
    assert {v for labels in qrels.values() for v in labels.values()} >= {0, 1, 2, 3, 4}
    assert any(d not in qrels[q] for q, r in run.items() for d in r)  # unjudged documents
    assert any(len(set(r.values())) < len(r) for r in run.values())  # ties
    assert any(len(r) < 5 for r in run.values()) and any(len(r) > 10 for r in run.values())  # short and long lists
