"""The rendered SQL on real engines (DuckDB, PostgreSQL, Spark local mode, ClickHouse via chdb)
gives the Polars backend's per-user values and summary, to 1e-12 relative.

One generated batch per run holds every edge case (see tests/engines.py); each engine runs the
script ``rankwise.sql`` renders for its dialect, exactly as a user would, over user-shaped tables
(user, item, rank or score; user, item, relevance; an empty list = one row with a NULL item).
"""

from __future__ import annotations

import engines as E
import pytest

import rankwise

CONVENTIONS = {
    "default": rankwise.Convention(),
    "labels_ideal_linear_log2": rankwise.Convention(ideal="labels", gain="linear", log_base=2.0),
    "threshold_binary": rankwise.Convention(relevance_threshold=2.0, gain="binary", ap_denominator="n_rel"),
    "everything_else": rankwise.Convention(
        users="intersection", empty_labels="zero", empty_predictions="nan", precision_denominator="min_k_len",
        ap_denominator="min_k_nrel", f_aggregation="of_means", zero_ideal="nan", rr_cutoff=False,
        log_base=10.0, ties="item_desc", duplicates="first_shift"),
    "labels_only": rankwise.Convention(users="labels", empty_labels="one", precision_denominator="min_k_nrel",
                                       ap_denominator="k"),
    "predictions_only": rankwise.Convention(users="predictions", ap_denominator="min_k_len"),
}
# (convention, metrics): the last ones request a subset, F2, and a single k beyond every list
CASES = [(name, None) for name in CONVENTIONS] + [("default", ["ndcg", "f2", "mrr"])]


@pytest.fixture(scope="module")
def engine(engine_name, request):
    """One engine per module and engine name."""
    if engine_name == "duckdb":
        eng = E.DuckDBEngine()
    elif engine_name == "postgres":
        eng = E.PostgresEngine(request.getfixturevalue("pg_dsn"))
    elif engine_name == "spark":
        eng = E.SparkEngine(request.getfixturevalue("spark"))
    elif engine_name == "clickhouse":
        eng = E.ChdbEngine()
    else:
        pytest.fail(f"unknown engine {engine_name!r}")
    yield eng
    eng.close()


@pytest.mark.parametrize("string_ids", [False, True], ids=["int_ids", "str_ids"])
@pytest.mark.parametrize("by_score", [False, True], ids=["ranks", "scores"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{c}-{','.join(m or ['all'])}" for c, m in CASES])
def test_rendered_sql_equals_polars(engine, case, string_ids, by_score):
    name, metrics = CASES[case]
    conv = CONVENTIONS[name]
    ks = E.KS if metrics is None else (20,)
    recs, truth, scores = E.generate(seed=case * 4 + 2 * string_ids + by_score, string_ids=string_ids,
                                     by_score=by_score)
    r, t = E.api_frames(recs, truth, scores, string_ids, by_score)
    expected = rankwise.evaluate(r, t, k=list(ks), metrics=metrics, convention=conv, backend="polars")
    wr, wt = E.warehouse_frames(r, t)
    per_user, summary = engine.run(wr, wt, ks=ks, metrics=metrics, convention=conv,
                                   **({"score_col": "score", "rank_col": None} if by_score else {}))
    E.assert_same(expected, per_user, summary, ks, f_name="f2" if metrics else "f1")
    if metrics:
        assert set(per_user.columns) >= {"ndcg", "fbeta", "mrr"}
        assert "map" not in per_user.columns


def test_relevance_defaults_to_one(engine):
    """Without a relevance column every label has relevance 1 (as evaluate() without one)."""
    recs, truth, scores = E.generate(seed=99, string_ids=False, by_score=False)
    truth = {u: {i: 1.0 for i in lab} for u, lab in truth.items()}
    r, t = E.api_frames(recs, truth, scores, False, False)
    expected = rankwise.evaluate(r, t.drop("relevance"), k=[3], backend="polars")
    wr, wt = E.warehouse_frames(r, t)
    per_user, summary = engine.run(wr, wt.drop("relevance"), ks=(3,), relevance_col=None)
    E.assert_same(expected, per_user, summary, (3,))


def test_null_means_undefined(engine):
    """The SQL's NULL is the API's NaN: a user with no relevant label has NULL metrics under
    empty_labels='nan', and the summary leaves them out of n_users."""
    r, t = E.api_frames({1: [10, 11], 2: [10]}, {1: {11: 1.0}, 2: {10: 0.0}}, {}, False, False)
    wr, wt = E.warehouse_frames(r, t)
    per_user, summary = engine.run(wr, wt, ks=(2,), metrics=["precision"])
    values = {row["user_id"]: row["precision"] for row in per_user.iter_rows(named=True)}
    assert values[1] == pytest.approx(0.5) and values[2] is None
    assert summary.row(0)[2:] == (pytest.approx(0.5), 1)
