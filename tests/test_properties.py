"""Property-based equality: every backend equals the naive oracle, per user, to 1e-12 relative.

Generated inputs cover users in only one input, empty lists, lists shorter than k, k beyond every
list, graded relevance with zeros, integer and string ids, and ties in scores.
"""

from __future__ import annotations

import math

import oracle
import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import rankwise
from rankwise.metrics.declarations import KNOBS_BY_METRIC, REGISTRY

def _knob_values():
    """Every value of every engine knob (numeric knobs: a few representative values)."""
    numeric = {"log_base": [2.0, 10.0], "relevance_threshold": [1.0, 2.0], "rbp_persistence": [0.5, 0.95],
               "err_max_grade": [4.0], "utility_relevant_retrieved": [2.0], "utility_nonrelevant_retrieved": [0.0],
               "utility_relevant_missed": [-1.0], "utility_nonrelevant_missed": [0.5], "collection_size": [100.0],
               "rprec_multiplier": [0.2, 1.6], "iprec_recall_level": [0.1, 0.5, 1.0],
               "gain_levels": [((1.0, 3.0), (2.0, 9.0)), ((0.0, 1.0), (1.0, -2.0), (3.0, 0.5))]}
    accuracy_knobs = {knob for m in REGISTRY for knob in KNOBS_BY_METRIC[m.name]}
    for knob, (values, _) in rankwise.knob_documentation().items():
        if knob in ("duplicates", "ties", "min_score") or knob not in accuracy_knobs:
            continue  # input knobs: tests/test_input_knobs.py; beyond-accuracy knobs: tests/test_beyond.py
        for value in numeric.get(knob, values):
            if value != "error" and value != getattr(rankwise.Convention(), knob):
                yield knob, value


CONVENTIONS = {"default": rankwise.Convention()} | {
    f"{knob}={value}": rankwise.Convention().replace(**{knob: value}) for knob, value in _knob_values()
}


@st.composite
def datasets(draw):
    """{user: [items]} and {user: {item: relevance}} plus how to present them."""
    string_ids = draw(st.booleans())
    n_users = draw(st.integers(0, 8))
    catalog = list(range(12))
    recs, truth = {}, {}
    for user in range(n_users):
        if draw(st.booleans()) or not draw(st.booleans()):
            recs[user] = draw(st.lists(st.sampled_from(catalog), max_size=9, unique=True))
        if draw(st.booleans()) or user not in recs:
            items = draw(st.lists(st.sampled_from(catalog), max_size=6, unique=True))
            truth[user] = {i: draw(st.sampled_from([0.0, 1.0, 1.0, 2.0, 3.0, 0.5])) for i in items}
    form = draw(st.sampled_from(["list", "rank", "score"]))
    scores = {u: draw(st.lists(st.integers(0, 3), min_size=len(items), max_size=len(items)))
              for u, items in recs.items()}
    if string_ids:
        name = lambda prefix, v: f"{prefix}{v:03d}"  # noqa: E731 - zero-padded, so string order = numeric order
        recs = {name("u", u): [name("i", i) for i in items] for u, items in recs.items()}
        truth = {name("u", u): {name("i", i): r for i, r in lab.items()} for u, lab in truth.items()}
        scores = {name("u", u): s for u, s in scores.items()}
    ks = draw(st.lists(st.integers(1, 12), min_size=1, max_size=3, unique=True))
    return recs, truth, scores, form, string_ids, ks


def _frames(recs, truth, scores, form, string_ids):
    """Present the data in the chosen form; returns the frames and the rank order rankwise must use."""
    uid = pl.String if string_ids else pl.Int64
    if form == "list":
        r = pl.DataFrame({"user": list(recs), "item": list(recs.values())},
                         schema={"user": uid, "item": pl.List(uid)})
        order = recs
    else:
        rows = []
        for u, items in recs.items():
            for pos, (item, s) in enumerate(zip(items, scores[u]), start=1):
                rows.append((u, item, pos * 3 if form == "rank" else float(s)))  # gappy ranks close up
        value = "rank" if form == "rank" else "score"
        r = pl.DataFrame(rows, schema={"user": uid, "item": uid, value: pl.Int64 if form == "rank" else pl.Float64},
                         orient="row")
        if form == "score":  # ties: item ascending (the default rule)
            order = {u: [i for _, i in sorted(zip(scores[u], items), key=lambda t: (-t[0], t[1]))]
                     for u, items in recs.items()}
        else:
            order = recs
        order = {u: v for u, v in order.items() if v}  # long form cannot express an empty list
    t = pl.DataFrame({"user": list(truth), "item": [list(x) for x in truth.values()],
                      "relevance": [list(x.values()) for x in truth.values()]},
                     schema={"user": uid, "item": pl.List(uid), "relevance": pl.List(pl.Float64)})
    return r, t, order


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-13)


# the first hit and a second relevant item lie below the largest k (RR without a cutoff, candidates)
BELOW_K = ({0: [1, 2, 3, 4, 5, 6], 1: [7, 8, 9, 10]}, {0: {2: 1.0, 5: 2.0}, 1: {10: 1.0}},
           {0: [0] * 6, 1: [0] * 4}, "rank", False, [1, 3])


@pytest.mark.heavy
@pytest.mark.parametrize("name", sorted(CONVENTIONS))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets())
@example(data=BELOW_K)
def test_every_knob_value_equals_oracle(backend, name, data):
    check(backend, data, CONVENTIONS[name], beta=1.0)


COMBINED = st.builds(lambda kw: rankwise.Convention(**kw), st.fixed_dictionaries({
    "users": st.sampled_from(["union", "labels", "intersection"]),
    "unjudged": st.sampled_from(["keep", "drop"]),
    "ap_denominator": st.sampled_from(["n_hits", "n_rel", "min_k_nrel"]),
    "ideal": st.sampled_from(["predictions_topk", "labels", "k_ones"]),
    "gain": st.sampled_from(["binary", "linear", "exp2"]),
    "relevance_threshold": st.sampled_from([0.0, 2.0]),
    "f_aggregation": st.sampled_from(["per_user", "of_means"])}))


@pytest.mark.heavy
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets(), beta=st.sampled_from([1.0, 2.0, 0.5]), conv=COMBINED)
def test_combined_knobs_equal_oracle(backend, data, beta, conv):
    check(backend, data, conv, beta)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets(), beta=st.sampled_from([1.0, 2.0]), conv=COMBINED)
def test_a_few_combined_knobs_equal_oracle(backend, data, beta, conv):
    """The same property with few examples, so that every backend (Spark too) runs it in CI."""
    check(backend, data, conv, beta)


def check(backend, data, conv, beta):
    recs, truth, scores, form, string_ids, ks = data
    r, t, order = _frames(recs, truth, scores, form, string_ids)
    f_name = f"f{beta:g}"
    metrics = [m if m != "fbeta" else f_name for m in oracle.METRICS]
    res = rankwise.evaluate(r, t, k=ks, metrics=metrics, backend=backend, convention=conv)
    expected = oracle.evaluate(order, truth, ks, conv, beta)
    got = {row["user"]: row for row in res.per_user.iter_rows(named=True)}
    assert set(got) == set(expected)
    for user, values in expected.items():
        for col, value in values.items():
            col = col.replace("fbeta", f_name)
            assert _close(got[user][col], value), (user, col, got[user][col], value)
    means = oracle.summary(expected, ks, conv, beta)
    for row in res.summary.iter_rows(named=True):
        metric = "fbeta" if row["metric"] == f_name else row["metric"]
        mean, n = means[(metric, row["k"])]
        assert row["n_users"] == n
        assert _close(row["value"], mean), (metric, row["k"], row["value"], mean)
