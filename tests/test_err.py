"""ERR@k (Chapelle, Metzler, Zhang and Grinspan 2009), the second metric added as a declaration:
ERR = sum_{r <= k} R_r / r prod_{i < r} (1 - R_i), R = (2^g - 1) / 2^g_max, g_max the knob
``err_max_grade`` (0: the largest relevance in the ground truth). Proven by hand and against a naive
reading of the paper (this file's own loop, and tests/oracle.py in the engine-wide tests).
"""

from __future__ import annotations

import random

import duckdb
import polars as pl
import pytest

import rankwise
from rankwise import expr
from rankwise.errors import ParameterError


def _paper(ranking: list, grades: dict, k: int, g_max: float) -> float:
    """The cascade model, line by line: the user stops at rank r with probability R_r."""
    value, reach = 0.0, 1.0
    for r, item in enumerate(ranking[:k], start=1):
        g = grades.get(item, 0.0)
        stop = (2 ** min(g, g_max) - 1) / 2 ** g_max if g > 0 else 0.0
        value += reach * stop / r
        reach *= 1 - stop
    return value


def test_err_by_hand(backend):
    """Grades 3 at rank 1 and 1 at rank 3, g_max 3 (the data's largest): R = 7/8 and 1/8;
    ERR@3 = 7/8 + (1/8)(1/8)/3, ERR@1 = 7/8."""
    recs = pl.DataFrame({"user": [1, 1, 1], "item": [10, 11, 12], "rank": [1, 2, 3]})
    truth = pl.DataFrame({"user": [1, 1], "item": [10, 12], "relevance": [3.0, 1.0]})
    res = rankwise.evaluate(recs, truth, k=[1, 3], metrics=["err"], backend=backend)
    assert res.long.sort("k")["err"].to_list() == pytest.approx([7 / 8, 7 / 8 + (1 / 8) * (1 / 8) / 3], rel=1e-15)
    # g_max from the knob: 4 instead of the data's 3 -> R = 7/16 and 1/16
    res = rankwise.evaluate(recs, truth, k=3, metrics=["err"], backend=backend,
                            convention=rankwise.Convention(err_max_grade=4))
    assert res.long["err"].item() == pytest.approx(7 / 16 + (9 / 16) * (1 / 16) / 3, rel=1e-15)


def test_err_equals_the_paper_on_random_graded_lists(backend):
    rng = random.Random(5)
    recs, truth, lists, labels = [], [], {}, {}
    for user in range(60):
        items = rng.sample(range(40), rng.randint(1, 15))
        lists[user] = items
        recs += [(user, item, r) for r, item in enumerate(items, start=1)]
        chosen = rng.sample(range(40), rng.randint(1, 8))
        labels[user] = {item: float(rng.choice([0, 1, 2, 3, 4])) for item in chosen}
        truth += [(user, item, g) for item, g in labels[user].items()]
    recs = pl.DataFrame(recs, schema=["user", "item", "rank"], orient="row")
    truth = pl.DataFrame(truth, schema=["user", "item", "relevance"], orient="row")
    g_max = truth["relevance"].max()
    res = rankwise.evaluate(recs, truth, k=[1, 5, 10], metrics=["err"], backend=backend,
                            convention=rankwise.Convention(users="intersection", empty_labels="zero"))
    for user, k, value in res.long.select("user", "k", "err").iter_rows():
        assert value == pytest.approx(_paper(lists[user], labels[user], k, g_max), rel=1e-12, abs=1e-15), (user, k)


def test_err_in_expressions_and_macros():
    frame = pl.DataFrame({"user": [1, 2], "r": [[10, 11, 12], [5, 6]], "t": [[10, 12], [6, 9]],
                          "rel": [[3.0, 1.0], [2.0, 4.0]]})
    conv = rankwise.Convention(err_max_grade=4)
    got = frame.select(expr.err("r", "t", k=3, relevance="rel", convention=conv))["err@3"].to_list()
    con = duckdb.connect()
    expr.install_duckdb(con)
    con.register("frame", frame)
    macro = [v for (v,) in con.sql("SELECT rankwise_err_graded(r, t, rel, 3, err_max_grade := 4) "
                                    "FROM frame ORDER BY user").fetchall()]
    expected = [_paper([10, 11, 12], {10: 3.0, 12: 1.0}, 3, 4), _paper([5, 6], {6: 2.0, 9: 4.0}, 3, 4)]
    assert got == pytest.approx(expected, rel=1e-14) and macro == pytest.approx(expected, rel=1e-14)
    # binary lists: every label grade 1 of 1, R = 1/2
    binary = frame.select(expr.err("r", "t", k=3))["err@3"].to_list()
    binary_macro = [v for (v,) in con.sql("SELECT rankwise_err(r, t, 3) FROM frame ORDER BY user").fetchall()]
    assert binary == binary_macro == pytest.approx([0.5 + 0.25 / 3, 0.25], rel=1e-14)


def test_err_in_an_expression_with_grades_needs_the_top_grade():
    """A row or group does not know the ground truth's largest grade: refused, not guessed."""
    frame = pl.DataFrame({"r": [[1, 2]], "t": [[1]], "rel": [[2.0]]})
    with pytest.raises(ParameterError, match="err_max_grade"):
        frame.select(expr.err("r", "t", k=2, relevance="rel"))
    with pytest.warns(rankwise.errors.LeftOutWarning, match="left out err"):
        columns = expr.metrics("r", "t", k=2, relevance="rel")
    assert "err@2" not in frame.select(columns).columns
