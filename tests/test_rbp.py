"""RBP@k (Moffat and Zobel 2008), the first metric added as a declaration: its formula is one line of
``rankwise.metrics.declarations`` over one new statistic. Proven three ways: by hand, against trec_eval 10.0's own
per-query output on the bundled example, and (with every other metric) against the naive oracle on
every backend by tests/test_engines.py, test_expr.py and test_list_positions.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest

import rankwise
from rankwise import expr

HERE = Path(__file__).parent
EXAMPLES = HERE.parent / "examples"
TREC_EVAL = json.loads((HERE / "conformance" / "fixtures" / "trec_eval" / "rbp_example.json").read_text())


def test_rbp_by_hand(backend):
    """Hits at ranks 1 and 3 of [1, 2, 3, 4]: (1 - p)(1 + p^2); p = 0.5: 0.625 at k >= 3, 0.5 at k = 1."""
    recs = pl.DataFrame({"user": [1] * 4, "item": [1, 2, 3, 4], "rank": [1, 2, 3, 4]})
    truth = pl.DataFrame({"user": [1, 1], "item": [1, 3], "relevance": [1.0, 1.0]})
    res = rankwise.evaluate(recs, truth, k=[1, 2, 3, 4], metrics=["rbp"], backend=backend,
                            convention=rankwise.Convention(rbp_persistence=0.5))
    assert res.long.sort("k")["rbp"].to_list() == [0.5, 0.5, 0.625, 0.625]


@pytest.mark.parametrize("k", [5, 10])
def test_rbp_equals_trec_evals_own_output(backend, k):
    """trec_eval -M k -m rbp (p = 0.9) per query, as trec_eval printed it (4 decimals), on the example:
    relevance >= 1 is relevant (the trec_eval preset's threshold), users in both inputs."""
    res = rankwise.evaluate(EXAMPLES / "recommendations.parquet", EXAMPLES / "ground_truth.parquet", k=k,
                            metrics=["rbp"], convention="trec_eval", backend=backend)
    ours = {str(u): v for u, v in res.long.select("user", "rbp").iter_rows()}
    theirs = TREC_EVAL["values"][str(k)]
    assert set(ours) == set(theirs) - {"all"}
    wrong = {q: (ours[q], v) for q, v in theirs.items() if q != "all" and f"{ours[q]:.4f}" != v}
    assert not wrong, list(wrong.items())[:5]
    assert f"{res.summary['value'][0]:.4f}" == theirs["all"]


def test_rbp_in_expressions_and_macros_equals_evaluate():
    frame = pl.DataFrame({"user": [1, 2, 3], "r": [[5, 1, 2, 3], [7, 8], [4]], "t": [[1, 3, 9], [8], [6]]})
    conv = rankwise.Convention(rbp_persistence=0.7)
    got = frame.select(expr.rbp("r", "t", k=3, convention=conv))["rbp@3"].to_list()
    con = duckdb.connect()
    expr.install_duckdb(con)
    con.register("frame", frame)
    macro = [v for (v,) in con.sql("SELECT rankwise_rbp(r, t, 3, rbp_persistence := 0.7) FROM frame ORDER BY user").fetchall()]
    # by hand: user 1 hits at ranks 2, 4 (only 2 within k = 3); user 2 at rank 2; user 3 none
    expected = [0.3 * 0.7, 0.3 * 0.7, 0.0]
    assert got == pytest.approx(expected, rel=1e-15) and macro == pytest.approx(expected, rel=1e-15)


def test_rbp_persistence_outside_0_1_is_refused():
    with pytest.raises(rankwise.errors.ParameterError, match="rbp_persistence"):
        rankwise.Convention(rbp_persistence=1.0)
