"""The five worked users of a widely read review of recommender-metric definitions, at k = 1, 3, 5:
every table cell, on every backend, under the preset that holds the review's definitions
(``recommended_ideal``: the ideal DCG from the recommended items' own gains, AP over the hits).

Expected values are the review's own fractions (mean RR@3 corrected to 1/2, see the README).
"""

from __future__ import annotations

import math

import polars as pl
import pytest

import rankwise

CONVENTION = "recommended_ideal"
RECS = pl.DataFrame({"user": [1, 2, 3, 4, 5], "item": [[1, 6, 8], [1, 2, 3, 4, 5], [], [1, 2, 3, 4], []]})
TRUTH = pl.DataFrame({"user": [1, 2, 3, 4, 5], "item": [[1, 2, 3, 4, 5, 6], [2, 4, 6], [2, 4, 6], [], []]})
NAN = float("nan")
ln = math.log

# per metric: {user: (value@1, value@3, value@5)}; users 4 and 5 have no labels -> NaN
PER_USER = {
    "precision": {1: (1, 2 / 3, 2 / 5), 2: (0, 1 / 3, 2 / 5), 3: (0, 0, 0)},
    "recall": {1: (1 / 6, 1 / 3, 1 / 3), 2: (0, 1 / 3, 2 / 3), 3: (0, 0, 0)},
    "f1": {1: (2 / 7, 4 / 9, 4 / 11), 2: (0, 1 / 3, 1 / 2), 3: (0, 0, 0)},
    "map": {1: (1, 1, 1), 2: (0, 1 / 2, 1 / 2), 3: (0, 0, 0)},
    "mrr": {1: (1, 1, 1), 2: (0, 1 / 2, 1 / 2), 3: (0, 0, 0)},
    "ndcg": {
        1: (1, 1, 1),
        2: (0, (1 / ln(3)) / (1 / ln(2)), (1 / ln(3) + 1 / ln(5)) / (1 / ln(2) + 1 / ln(3))),
        3: (0, 0, 0),
    },
    "dcg": {
        1: (1 / ln(2), 1 / ln(2) + 1 / ln(3), 1 / ln(2) + 1 / ln(3)),
        2: (0, 1 / ln(3), 1 / ln(3) + 1 / ln(5)),
        3: (0, 0, 0),
    },
    "hit_rate": {1: (1, 1, 1), 2: (0, 1, 1), 3: (0, 0, 0)},
}
# the review's "Mean" rows (MRR@3 = 1/2: the review's 0.333 is an arithmetic slip)
MEANS = {
    "precision": (1 / 3, 1 / 3, 4 / 15),
    "recall": (1 / 18, 2 / 9, 1 / 3),
    "f1": (2 / 21, 7 / 27, 19 / 66),
    "map": (1 / 3, 1 / 2, 1 / 2),
    "mrr": (1 / 3, 1 / 2, 1 / 2),
    "ndcg": (1 / 3, (1 + 0.6309297535714574) / 3, (1 + 0.6509209298071326) / 3),
    "hit_rate": (1 / 3, 2 / 3, 2 / 3),
}
KS = (1, 3, 5)


@pytest.fixture(scope="module", params=["list", "long"])
def inputs(request):
    if request.param == "list":
        return RECS, TRUTH
    recs = RECS.explode("item").drop_nulls().with_columns(rank=pl.int_range(1, pl.len() + 1).over("user"))
    truth = TRUTH.explode("item").drop_nulls()
    return recs, truth


def test_per_user_cells(inputs, backend):
    res = rankwise.evaluate(*inputs, k=list(KS), metrics=list(PER_USER), convention=CONVENTION,
                            backend=backend)
    table = {row["user"]: row for row in res.per_user.iter_rows(named=True)}
    for metric, users in PER_USER.items():
        for user, values in users.items():
            for k, expected in zip(KS, values):
                assert table[user][f"{metric}@{k}"] == pytest.approx(expected, rel=1e-12, abs=1e-15), (metric, user, k)
        for user in (4, 5):
            if user in table:  # long form cannot express user 5 (no rows in either input)
                assert all(math.isnan(table[user][f"{metric}@{k}"]) for k in KS)


def test_means_and_counts(inputs, backend):
    res = rankwise.evaluate(*inputs, k=list(KS), metrics=list(MEANS), convention=CONVENTION, backend=backend)
    got = {(r["metric"], r["k"]): (r["value"], r["n_users"]) for r in res.summary.iter_rows(named=True)}
    for metric, values in MEANS.items():
        for k, expected in zip(KS, values):
            value, n_users = got[(metric, k)]
            assert value == pytest.approx(expected, rel=1e-12), (metric, k)
            assert n_users == 3


def test_users_without_labels_are_reported(backend):
    res = rankwise.evaluate(RECS, TRUTH, k=3, convention=CONVENTION, backend=backend)
    reasons = dict(res.excluded.select("reason", "n_users").iter_rows())
    assert reasons["no relevant label (empty_labels='nan')"] == 2
    assert res.per_user.height == 5
