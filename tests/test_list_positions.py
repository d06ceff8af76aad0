"""The engines' list-form paths against DuckDB's long-form SQL.

List-form recommendations are scored position by position on the lists by the Polars engine
(rankwise.engines.polars.positions), and by the DuckDB engine over the rows ``sql/list_rows.sql`` finds on
the lists; the same data in long form goes through ``sql/per_user.sql`` over every row. Per-user
values must agree to 1e-12 for graded and binary relevance, short lists, k beyond the lists, users on one
side only, and every preset the path serves; a spy checks the list path really ran.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import rankwise
from rankwise.engines.polars import positions as _polars_positions
from rankwise.conventions import resolve
from rankwise.metrics.declarations import USER_LEVEL, stage_switches

PRESETS = [name for name in rankwise.PRESETS if resolve(name).min_score is None]  # lists carry no scores


def _data(seed: int, graded: bool):
    """Lists of 1-12 distinct items for 300 users; labels for most of them (some only in truth)."""
    rng = np.random.default_rng(seed)
    recs, truth = [], []
    for user in range(300):
        if user % 17 != 5:  # some users only in the ground truth
            n = int(rng.integers(1, 13))  # an empty list has no long form (tests/test_properties.py has them)
            recs.append((user, [int(x) for x in rng.choice(40, size=n, replace=False)]))
        if user % 23 != 7:  # some only in the recommendations
            n = int(rng.integers(0, 8))
            for item in rng.choice(40, size=n, replace=False):
                rel = float(rng.choice([0.0, 1.0, 2.0, 3.0])) if graded else 1.0
                truth.append((user, int(item), rel))
    lists = pl.DataFrame(recs, schema={"user": pl.Int64, "item": pl.List(pl.Int64)}, orient="row")
    long = lists.with_columns(rank=pl.int_ranges(1, pl.col("item").list.len() + 1)).explode("item", "rank")
    labels = pl.DataFrame(truth, schema={"user": pl.Int64, "item": pl.Int64, "relevance": pl.Float64}, orient="row")
    return lists, long, labels


@pytest.mark.parametrize("graded", [True, False])
@pytest.mark.parametrize("convention", PRESETS)
def test_list_path_equals_long_form_sql(monkeypatch, convention, graded):
    lists, long, labels = _data(3 if graded else 4, graded)
    ks = [1, 3, 5, 10, 15]
    conv = resolve(convention)
    ran = []
    real = _polars_positions.per_user
    monkeypatch.setattr(_polars_positions, "per_user", lambda *a, **kw: ran.append(1) or real(*a, **kw))
    # every metric the list positions hold (the gain statistics' metrics send the Polars engine to the long plan)
    metrics = [{"fbeta": "f1"}.get(m, m) for m in (conv.metrics or USER_LEVEL)
               if m in USER_LEVEL and not stage_switches({m})["gain_statistics"]]
    want = rankwise.evaluate(long, labels, k=ks, backend="duckdb", convention=convention, metrics=metrics).per_user
    for backend in ("polars", "duckdb"):
        got = rankwise.evaluate(lists, labels, k=ks, backend=backend, convention=convention, metrics=metrics).per_user
        assert got.columns == want.columns and got["user"].to_list() == want["user"].to_list()
        for col in got.columns[1:]:
            for user, a, b in zip(got["user"], got[col], want[col]):
                same = (a is None and b is None) or (a is not None and b is not None and (
                    (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12 * max(1.0, abs(b))))
                assert same, (backend, convention, col, user, a, b)
    assert ran == ([1] if _polars_positions.applies_to(conv, ks) else [])


def test_the_path_serves_the_default_convention():
    """Else the test above would compare the long-form plan with itself and prove nothing here."""
    assert _polars_positions.applies_to(resolve("default"), (1, 10, 100))
