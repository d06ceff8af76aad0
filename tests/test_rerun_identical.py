"""The same input gives the same per-user values, to the last bit, run after run.

A sum of floats depends on the order of its terms; an engine that adds a user's terms in the order its
threads happen to finish moves the last bit between runs. 100k users are enough for both engines'
thread pools to split the work (smaller inputs run on one thread and would pass by luck).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rankwise

N_USERS, LENGTH = 100_000, 20


@pytest.fixture(scope="module")
def big():
    rng = np.random.default_rng(7)
    users = np.repeat(np.arange(N_USERS), LENGTH)
    ranks = np.tile(np.arange(1, LENGTH + 1), N_USERS)
    items = (users * 7 + ranks * 131) % 50_000
    recs = pl.DataFrame({"user": users, "rank": ranks, "item": items})
    labelled = rng.random(len(users)) < 0.3
    truth = pl.DataFrame({"user": users[labelled], "item": items[labelled],
                          "relevance": rng.choice([1.0, 2.0, 3.0], size=int(labelled.sum()))})
    return recs, truth


# not the conftest's `backend` parametrization: PostgreSQL (parallel workers off) and Spark are not run at 100k here
@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("convention", ["default", "trec_eval"])  # ideal DCG from the top k / from the labels
@pytest.mark.parametrize("form", ["long", "list"])  # list form: the Polars engine's position-by-position path
def test_per_user_values_and_means_are_bit_identical_run_after_run(big, engine, convention, form):
    """And the means over those rows (DuckDB's parallel AVG adds in thread order: its summary runs
    on one thread). Spark and PostgreSQL: tests/test_runs.py, on fewer users."""
    recs, truth = big
    if form == "list":
        recs = recs.sort("user", "rank").group_by("user", maintain_order=True).agg("item")
    runs = [rankwise.evaluate(recs, truth, k=[5, 10, 20], backend=engine, convention=convention, metrics="all")
            for _ in range(3)]
    for other in runs[1:]:
        assert runs[0].per_user.equals(other.per_user)
        assert runs[0].summary.equals(other.summary)
