"""trec_eval 10.0's own quick test (tests/trec_suite.py: the Makefile's command lines, files in
tests/conformance/fixtures/trec_eval/suite): every expected line of a measure family rankwise
computes under the ``trec_eval`` preset, per query and 'all', formatted ``%.4f`` and compared as
text, on Polars and DuckDB. Inputs come through ``rankwise.inputs.trec`` (trec_eval's ranking);
the rest goes through the public ``rankwise.evaluate``.

The flags as rankwise inputs and knobs:
  -q      per-query lines: ``Result.per_user``; 'all': ``Result.summary``
  -c      ``users="labels"`` (every qrels query) with ``empty_predictions="zero"`` (the preset's)
  -M100   the run cut to ranks 1..100 (trec_eval's order) before evaluating
  -l2     ``relevance_threshold=2`` (DCG keeps the raw levels as gains, as trec_eval's ndcg does)
A qrels level below 0 (-1: pooled, not judged) is given to rankwise as it is: the preset's
``negative_relevance='unjudged'`` reads it as trec_eval does (``form_res_rels.c``): never relevant, no
gain, neither judged (bpref, num_nonrel_judged_ret, unj) nor absent (infAP counts it as pooled).

Families rankwise does not compute yet are listed in ``NOT_YET`` and left out of the comparison
(counted, not skipped); issue 38 adds them.
"""

from __future__ import annotations

import re
import warnings

import polars as pl
import pytest
from trec_suite import SUITE, SUITE_DIR, parse_trec_eval_output

import rankwise
from rankwise.errors import CutoffWarning
from rankwise.inputs.trec import read_qrels, read_trec_run

# trec_eval measure family (the name without its _<cutoff> suffix) -> rankwise metric
CUT = {"P": "precision", "recall": "recall", "map_cut": "map", "ndcg_cut": "ndcg", "success": "hit_rate",
       "relative_P": "relative_p", "unj": "unj"}
# over the whole list: rankwise's metric at k = the longest list (and >= every query's label count); the set
# measures at k are over the top k, so at that k over the whole list
WHOLE = {"map": "map", "ndcg": "ndcg", "recip_rank": "mrr", "Rprec": "r_precision", "rbp": "rbp",
         "num_ret": "num_ret", "num_rel": "num_rel", "num_rel_ret": "num_rel_ret", "set_P": "set_p",
         "set_recall": "set_recall", "set_relative_P": "set_relative_p", "set_map": "set_map", "set_F": "set_f",
         "utility": "utility", "gm_map": "gm_map", "11pt_avg": "ipt11_avg", "G": "g", "binG": "bin_g",
         "ndcg_rel": "ndcg_rel", "Rndcg": "rndcg", "rbp_resid": "rbp_resid",
         "num_nonrel_judged_ret": "num_nonrel_judged_ret", "bpref": "bpref", "gm_bpref": "gm_bpref", "infAP": "infap"}

NOT_YET = {
    # counts and run information
    "runid", "num_q", "relstring",
}

# Lines of a family rankwise has where trec_eval 10.0 is not reproducible, each found by this test and
# kept visible: the test asserts they still differ (remove the entry when rankwise matches them).
# rbp with graded qrels: m_rbp.c rescales gains by (g - min) / (max - min) with ``min`` and ``max``
# never initialised, so its value depends on stack garbage: on out.test.aql query 301 prints 0.0465
# (gains level/4), 302 prints 0.7628 and 303 0.0212 (binary at -l2); rankwise's rbp is binary at the
# relevance threshold (0.0000, 0.7628, 0.0212; mean 0.2613 vs trec_eval's 0.2769). Binary qrels agree.
DIVERGES = {("out.test.aql", "rbp"): "trec_eval's rbp reads uninitialised min/max on graded qrels (m_rbp.c)"}

# a family whose suffix is a parameter, not a cutoff: rankwise's metric over the whole list with the knob set to it
# (Rprec_mult_0.20: rprec_mult with rprec_multiplier=0.2), one evaluation per parameter value
PARAM = {"Rprec_mult": ("rprec_mult", "rprec_multiplier"), "iprec_at_recall": ("iprec_at_recall", "iprec_recall_level")}
_PARAM = re.compile(r"^(Rprec_mult|iprec_at_recall)_(\d+\.\d+)$")

# trec_eval prints these as integers (%ld)
COUNTS = {"num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"}

_SUFFIX = re.compile(r"^(.+?)_(\d+(?:\.\d+)?)$")


def family(measure: str) -> tuple[str, int | None]:
    """'P_10' -> ('P', 10); 'iprec_at_recall_0.10' -> ('iprec_at_recall', None); 'map' -> ('map', None)."""
    m = _SUFFIX.match(measure)
    if m is None:
        return measure, None
    name, cut = m.groups()
    return name, (int(cut) if cut.isdigit() else None)


def name_of(measure: str) -> str:
    return family(measure)[0]


def metric_of(measure: str) -> tuple[str, int | None] | None:
    """rankwise's (metric, k) for a trec_eval measure (k None = the whole list), or None if not yet."""
    name, cut = family(measure)
    if name in NOT_YET:
        return None
    if _PARAM.match(measure):
        return PARAM[name][0], None
    if name in CUT and cut is not None:
        return CUT[name], cut
    if measure in WHOLE:
        return WHOLE[measure], None
    raise AssertionError(f"trec_eval measure {measure!r} is neither mapped nor in NOT_YET")


def _inputs(cmd):
    run = read_trec_run(SUITE_DIR / cmd.run)
    if cmd.max_docs is not None:
        run = run.filter(pl.col("rank") <= cmd.max_docs)
    qrels = read_qrels(SUITE_DIR / cmd.qrels)  # levels as they are: -1 is pooled, not judged (negative_relevance)
    return run.select("user", "item", "rank"), qrels


def _convention(cmd):
    conv = rankwise.PRESETS["trec_eval"]
    if cmd.complete:
        conv = conv.replace(users="labels", empty_predictions="zero")
    if cmd.relevance_level is not None:
        conv = conv.replace(relevance_threshold=float(cmd.relevance_level))
    return conv


def compare(cmd, backend: str) -> tuple[int, int, list[str], list[str]]:
    """(lines checked, lines not yet, mismatches 'measure qid: expected X, got Y', the same for the
    lines in DIVERGES)."""
    expected = parse_trec_eval_output(SUITE_DIR / cmd.expected)
    recs, truth = _inputs(cmd)
    whole = max(recs.group_by("user").len()["len"].max(), truth.group_by("user").len()["len"].max())
    wanted = {key: metric_of(key[0]) for key in expected}
    ks = sorted({k if k is not None else whole for mk in wanted.values() if mk for _, k in [mk]})
    metrics = sorted({mk[0] for mk in wanted.values() if mk})
    metrics = [m for m in metrics if m not in {metric for metric, _ in PARAM.values()}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CutoffWarning)
        res = rankwise.evaluate(recs, truth, metrics=metrics, k=ks, convention=_convention(cmd), backend=backend)
        # the parameter families: one evaluation per value, the families' values paired up
        values = {knob: sorted({float(_PARAM.match(m).group(2)) for m, _ in expected
                                if _PARAM.match(m) and PARAM[_PARAM.match(m).group(1)][1] == knob})
                  for _, knob in PARAM.values()}
        by_param = {}
        for i in range(max(map(len, values.values()))):
            knobs = {knob: vs[i] for knob, vs in values.items() if i < len(vs)}
            one = rankwise.evaluate(recs, truth, metrics=[m for m, _ in PARAM.values()], k=[whole],
                                    convention=_convention(cmd).replace(**knobs), backend=backend)
            for knob, value in knobs.items():
                by_param[knob, value] = one
    per_user = {row["user"]: row for row in res.per_user.iter_rows(named=True)}
    means = {(r["metric"], r["k"]): r["value"] for r in res.summary.iter_rows(named=True)}
    for (knob, value), one in by_param.items():
        for row in one.per_user.iter_rows(named=True):
            per_user.setdefault(row["user"], {})
            per_user[row["user"]][f"{knob}={value}"] = row
        means.update({(f"{knob}={value}", r["metric"], r["k"]): r["value"] for r in one.summary.iter_rows(named=True)})
    checked, not_yet, bad, known = 0, 0, [], []
    for (measure, qid), text in expected.items():
        mk = wanted[(measure, qid)]
        if mk is None:
            not_yet += 1
            continue
        metric, k = mk[0], (mk[1] if mk[1] is not None else whole)
        param = _PARAM.match(measure)
        if param:
            tag = f"{PARAM[param.group(1)][1]}={float(param.group(2))}"
            value = means.get((tag, metric, k)) if qid == "all" else \
                per_user.get(qid, {}).get(tag, {}).get(f"{metric}@{k}")
        else:
            value = means.get((metric, k)) if qid == "all" else per_user.get(qid, {}).get(f"{metric}@{k}")
        got = "missing" if value is None else (
            f"{value:.0f}" if name_of(measure) in COUNTS and value == int(value) else f"{value:.4f}")
        line = f"{measure} {qid}: expected {text}, got {got}"
        if (cmd.expected, measure) in DIVERGES:
            known.append(line) if got != text else None
            continue
        checked += 1
        if got != text:
            bad.append(line)
    return checked, not_yet, bad, known


# the embedded engines (named ``engine``, not ``backend``: conftest spreads ``backend`` over every engine)
@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("cmd", SUITE, ids=[f"{i}-{c.id}" for i, c in enumerate(SUITE)])
def test_trec_eval_quick_test_lines(cmd, engine):
    """Every expected line of a family rankwise has equals trec_eval's printed value."""
    checked, _not_yet, bad, known = compare(cmd, engine)
    assert checked > 0
    assert not bad, f"{cmd.argv} on {engine}: {len(bad)} of {checked} lines differ:\n" + "\n".join(bad)
    for (expected, measure), why in DIVERGES.items():
        if expected == cmd.expected:
            assert any(line.startswith(f"{measure} ") for line in known), (
                f"{measure} now matches trec_eval on {expected}: remove it from DIVERGES ({why})")


def test_every_expected_measure_is_mapped_or_not_yet():
    """No measure of the expected outputs falls through: each is checked or listed in NOT_YET."""
    for cmd in SUITE:
        for measure, _ in parse_trec_eval_output(SUITE_DIR / cmd.expected):
            metric_of(measure)  # raises for an unknown name


def test_suite_flags_match_the_makefile():
    """SUITE holds the Makefile's command lines (lines 60-67 of trec_eval 10.0's Makefile)."""
    readme = (SUITE_DIR / "README.md").read_text()
    for cmd in SUITE:
        assert f"./{cmd.argv} | diff - test/{cmd.expected}" in readme, cmd.argv


# pytrec-eval-terrier 0.5.11 (trec_eval 9: a recall level becomes (long)(l R + 0.9) relevant documents) on
# qrels.test / results.test, iprec_at_recall_0.10 per query, as it printed them (issue 38: 0.2096 vs trec_eval
# 10.0's 0.2098 on query 301)
TREC_EVAL_9_IPREC_010 = {"301": 0.209607, "302": 0.842105, "303": 0.113636}


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_iprec_recall_count_reproduces_trec_eval_9(engine):
    """iprec_recall_count='truncate_plus_0.9' is trec_eval 9's rule (pytrec_eval's values); 'round' is trec_eval
    10.0's (out.test.aq) and differs on query 301."""
    cmd = next(c for c in SUITE if c.expected == "out.test.aq")
    recs, truth = _inputs(cmd)
    conv = _convention(cmd).replace(iprec_recall_level=0.1)
    got = {}
    for rule in ("truncate_plus_0.9", "round"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CutoffWarning)
            res = rankwise.evaluate(recs, truth, metrics=["iprec_at_recall"], k=[1000], backend=engine,
                                    convention=conv.replace(iprec_recall_count=rule))
        got[rule] = {r["user"]: r["iprec_at_recall@1000"] for r in res.per_user.iter_rows(named=True)}
    assert {q: round(v, 6) for q, v in got["truncate_plus_0.9"].items()} == TREC_EVAL_9_IPREC_010
    expected = parse_trec_eval_output(SUITE_DIR / "out.test.aq")
    assert f"{got['round']['301']:.4f}" == expected[("iprec_at_recall_0.10", "301")] == "0.2098"
