"""Beyond-accuracy values are the same to the last bit, run after run (issue 10).

A float sum depends on the order of its terms: an engine that adds a user's terms, or the catalog's
items, in the order its threads finish moves the last bit between runs. 100k users are enough for
both engines' thread pools to split the work (smaller inputs run on one thread and pass by luck).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import rankwise

N_USERS, LENGTH, N_ITEMS = 100_000, 20, 50_000
METRICS = ["novelty", "arp", "long_tail_share", "serendipity", "item_coverage", "gini", "exposure_entropy",
           "personalization"]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    users = np.repeat(np.arange(N_USERS), LENGTH)
    ranks = np.tile(np.arange(1, LENGTH + 1), N_USERS)
    items = (rng.zipf(1.3, size=len(users)) * 7 + users) % N_ITEMS  # skewed exposure, per-user spread
    recs = pl.DataFrame({"user": users, "rank": ranks, "item": items}).unique(["user", "item"], keep="first")
    recs = recs.sort("user", "rank").with_columns(pl.int_range(pl.len()).over("user").add(1).alias("rank"))
    train = pl.DataFrame({"user": rng.integers(0, N_USERS, 600_000), "item": rng.zipf(1.2, 600_000) % N_ITEMS})
    labelled = rng.random(recs.height) < 0.2
    truth = recs.filter(pl.Series(labelled)).select("user", "item", pl.lit(1.0).alias("relevance"))
    return recs, truth, train


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_beyond_values_are_bit_identical_run_after_run(data, engine):
    recs, truth, train = data
    runs = [rankwise.evaluate(recs, truth, k=[5, 10, 20], metrics=METRICS, train=train, backend=engine)
            for _ in range(3)]
    for other in runs[1:]:
        for table in ("per_user", "summary", "per_item"):
            first, again = getattr(runs[0], table), getattr(other, table)
            assert first.columns == again.columns and first.height == again.height
            moved = [c for c in first.columns if not first[c].equals(again[c])]
            assert moved == [], f"{table}: {moved} moved between runs"


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_score_entropy_is_bit_identical_run_after_run(data, engine):
    """score_entropy's sums of e^d and e^d d over the pooled scores, exact per binary exponent: the same to the
    last bit run after run (float sums in the threads' order moved it), and equal to math.fsum's to 1e-15."""
    recs, _, _ = data
    recs = recs.with_columns(score=pl.Series(np.random.default_rng(5).normal(0.0, 3.0, recs.height)))
    values = [rankwise.evaluate(recs, None, k=[5, 10, 20], metrics=["score_entropy"], backend=engine).summary["value"]
              for _ in range(3)]
    assert all(v.equals(values[0]) for v in values[1:])
    for k, value in zip([5, 10, 20], values[0]):
        s = recs.filter(pl.col("rank") <= k)["score"].to_numpy()
        d = s - s.max()
        z, zd = math.fsum(np.exp(d)), math.fsum(np.exp(d) * d)
        assert math.isclose(value, math.log(z) - zd / z, rel_tol=1e-15)


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_ild_is_bit_identical_run_after_run(data, engine):
    """ild from long item features: on Polars the items and features numbered in sorted order and each vector's
    norm summed in the order of the feature numbers, so every list's vector sum adds its terms in one order; in
    the SQL each vector's squared norm an exact sum (a float window sum moved it: 2 runs of 2 failed)."""
    recs, _, _ = data
    rng = np.random.default_rng(7)
    features = pl.DataFrame({"item": np.repeat(np.arange(N_ITEMS), 4), "feature": rng.integers(0, 40, N_ITEMS * 4),
                             "value": rng.normal(size=N_ITEMS * 4)}).with_columns(pl.col("feature").cast(pl.String))
    # each item's rows scattered (as a join's output can come): a window sum per item then adds them in the threads' order
    features = features.unique(["item", "feature"], keep="first", maintain_order=True).sample(fraction=1.0, shuffle=True,
                                                                                              seed=3)
    runs = [rankwise.evaluate(recs, None, k=[5, 10, 20], metrics=["ild"], item_features=features,
                              backend=engine).per_user for _ in range(3)]
    for other in runs[1:]:
        moved = [c for c in runs[0].columns if not runs[0][c].equals(other[c])]
        assert moved == [], f"per_user: {moved} moved between runs"
