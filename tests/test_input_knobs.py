"""The input knobs (ties, duplicates, min_score) on every backend, against the oracle fed with lists
ordered by hand from the documented rules."""

from __future__ import annotations

import math

import oracle
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rankwise


@st.composite
def scored(draw):
    """Long recommendations with scores (ties likely) and optional repeated items; graded labels."""
    rows, truth = [], {}
    for user in range(draw(st.integers(1, 6))):
        for item in draw(st.lists(st.integers(0, 9), max_size=8)):
            rows.append((user, item, float(draw(st.integers(0, 3)))))
        truth[user] = {i: float(draw(st.integers(0, 3))) for i in draw(st.lists(st.integers(0, 9), max_size=5, unique=True))}
    return rows, truth


def expected_lists(rows, ties, duplicates, min_score):
    """Per user: sort by score descending, break ties by the rule, drop repeats, apply min_score."""
    out = {}
    for position, (user, item, score) in enumerate(rows):
        out.setdefault(user, []).append((score, item, position))
    lists = {}
    for user, entries in out.items():
        if min_score is not None:
            entries = [e for e in entries if e[0] >= min_score]
        key = {"item_asc": lambda e: (-e[0], e[1]), "item_desc": lambda e: (-e[0], -e[1]),
               "input_order": lambda e: (-e[0], e[2])}[ties]
        ordered = [item for _, item, _ in sorted(entries, key=key)]
        if duplicates == "first_shift":
            ordered = list(dict.fromkeys(ordered))
        lists[user] = ordered
    return lists


@pytest.mark.heavy
@pytest.mark.parametrize("ties", ["item_asc", "item_desc", "input_order"])
@pytest.mark.parametrize("min_score", [None, 2.0])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=scored())
def test_scores_ties_duplicates_min_score(backend, ties, min_score, data):
    rows, truth = data
    conv = rankwise.Convention(ties=ties, duplicates="first_shift", min_score=min_score, gain="linear")
    recs = pl.DataFrame(rows, schema={"user": pl.Int64, "item": pl.Int64, "score": pl.Float64}, orient="row")
    gt = pl.DataFrame([(u, i, r) for u, lab in truth.items() for i, r in lab.items()],
                      schema={"user": pl.Int64, "item": pl.Int64, "relevance": pl.Float64}, orient="row")
    lists = expected_lists(rows, ties, "first_shift", min_score)
    # a user only in the long truth table with no rows there does not exist; mirror that
    present_truth = {u: lab for u, lab in truth.items() if lab}
    expected = oracle.evaluate(lists, present_truth, [1, 3, 5], conv)
    res = rankwise.evaluate(recs, gt, k=[1, 3, 5], backend=backend, convention=conv, metrics="all")
    got = {row["user"]: row for row in res.per_user.iter_rows(named=True)}
    assert set(got) == set(expected)
    for user, values in expected.items():
        for col, value in values.items():
            g = got[user][col.replace("fbeta", "f1")]
            assert (math.isnan(g) and math.isnan(value)) or math.isclose(g, value, rel_tol=1e-12, abs_tol=1e-13)


def test_min_score_needs_scores():
    recs = pl.DataFrame({"user": [1], "item": [1], "rank": [1]})
    with pytest.raises(rankwise.ParameterError, match="min_score"):
        rankwise.evaluate(recs, recs.drop("rank"), convention=rankwise.Convention(min_score=1.0))


# a rank column and a score column that order the list differently (user 1: ranks 10, 11, 12; scores 12, 10, 11)
BOTH = pl.DataFrame({"user": [1, 1, 1, 2], "item": [10, 11, 12, 20], "rank": [1, 2, 3, 1],
                     "score": [0.6, 0.1, 0.9, 0.2]})
LABELS = pl.DataFrame({"user": [1, 1, 2], "item": [11, 12, 20]})


def test_min_score_applies_with_a_rank_column_too(backend):
    """min_score drops the items scored below it when a rank column ranks the list too; before, the
    rank column's branch ignored it. By hand, min_score 0.5: user 1 keeps 10, 12 (in rank order), so
    at k = 2 one hit of two labels: precision 1/2, recall 1/2; user 2's only item (0.2) goes, an
    empty list: empty_predictions='zero'."""
    res = rankwise.evaluate(BOTH, LABELS, k=2, metrics=["precision", "recall"], backend=backend,
                            convention=rankwise.Convention(min_score=0.5))
    assert res.per_user.sort("user").rows() == [(1, 0.5, 0.5), (2, 0.0, 0.0)]


def test_rank_col_none_ranks_by_the_scores(backend):
    """rank_col=None ranks by score_col although the table has a rank column (the CLI's --score-col).
    By hand, k = 1: by rank user 1's top item is 10 (no label), by score 12 (a label)."""
    by_rank = rankwise.evaluate(BOTH, LABELS, k=1, metrics=["hit_rate"], backend=backend)
    by_score = rankwise.evaluate(BOTH, LABELS, k=1, metrics=["hit_rate"], backend=backend, rank_col=None)
    assert by_rank.per_user.sort("user").rows() == [(1, 0.0), (2, 1.0)]
    assert by_score.per_user.sort("user").rows() == [(1, 1.0), (2, 1.0)]
