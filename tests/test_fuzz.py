"""Differential fuzz test (issue 15, item 5): random conventions, input forms, cutoffs and hostile
table and column names; the naive oracle, evaluate() on Polars and on DuckDB, and the rendered SQL
run in DuckDB over tables with those names must agree. Seeded and bounded (hypothesis, derandomized)
so it is cheap enough for every CI run; the oracle is tests/oracle.py, never rankwise."""

from __future__ import annotations

import math

import duckdb
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oracle
import rankwise
from rankwise.sqlgen import render
from rankwise.metrics.declarations import KNOBS_BY_METRIC, REGISTRY

ACCURACY_KNOBS = sorted({k for m in REGISTRY for k in KNOBS_BY_METRIC[m.name]}
                        - {"duplicates", "ties", "min_score", "relevance_threshold", "log_base", "rbp_persistence",
                           "err_max_grade", "utility_relevant_retrieved", "utility_nonrelevant_retrieved",
                           "utility_relevant_missed", "utility_nonrelevant_missed", "collection_size", "rprec_multiplier",
                           "iprec_recall_level", "gain_levels"})
# names a careless or hostile user might give: spaces, quotes, keywords, unicode, SQL fragments
HOSTILE_NAMES = ["recs", "My Recs", 'we"ird', "select", "t; DROP TABLE sentinel; --", "é-table", "Order"]
HOSTILE_COLUMNS = ["user", "User Id", 'q"uote', "from", "ünïcode"]


@st.composite
def conventions(draw):
    knobs = {}
    docs = rankwise.knob_documentation()
    for knob in ACCURACY_KNOBS:
        values = [v for v in docs[knob][0] if v != "error"]
        if draw(st.booleans()):
            knobs[knob] = draw(st.sampled_from(values))
    knobs["log_base"] = draw(st.sampled_from([2.0, 10.0, math.e]))
    knobs["relevance_threshold"] = draw(st.sampled_from([0.5, 1.0, 2.0]))
    knobs["rbp_persistence"] = draw(st.sampled_from([0.5, 0.8, 0.95]))
    knobs["err_max_grade"] = draw(st.sampled_from([0.0, 4.0]))
    knobs["utility_relevant_missed"] = draw(st.sampled_from([0.0, -0.5]))
    knobs["utility_nonrelevant_missed"] = draw(st.sampled_from([0.0, 0.25]))
    knobs["collection_size"] = draw(st.sampled_from([0.0, 50.0]))
    knobs["rprec_multiplier"] = draw(st.sampled_from([0.2, 1.0, 1.8]))
    knobs["iprec_recall_level"] = draw(st.sampled_from([0.0, 0.3, 0.5, 1.0]))
    knobs["gain_levels"] = draw(st.sampled_from([(), {1: 3.0, 2: 9.0}, {0: 1.0, 1: -2.0, 3: 0.5}]))
    return rankwise.Convention(**knobs)


@st.composite
def cases(draw):
    n_users = draw(st.integers(1, 6))
    recs, truth = {}, {}
    for user in range(n_users):
        if draw(st.booleans()) or user == 0:
            recs[user] = draw(st.lists(st.integers(0, 9), max_size=6, unique=True))
        if draw(st.booleans()) or user == 0:
            truth[user] = draw(st.dictionaries(st.integers(0, 9), st.sampled_from([0.0, 1.0, 2.0, 3.0]), max_size=5))
    ks = sorted(draw(st.sets(st.integers(1, 7), min_size=1, max_size=3)))
    names = draw(st.sampled_from(HOSTILE_NAMES)), draw(st.sampled_from(HOSTILE_NAMES))
    user_col = draw(st.sampled_from(HOSTILE_COLUMNS))
    return recs, truth, ks, draw(conventions()), names, user_col


def _frames(recs, truth, user_col):
    r = [(u, i, rank) for u, items in recs.items() for rank, i in enumerate(items, start=1)]
    t = [(u, i, rel) for u, labels in truth.items() for i, rel in labels.items()]
    recs_df = pl.DataFrame(r, schema={user_col: pl.Int64, "item": pl.Int64, "rank": pl.Int64}, orient="row")
    truth_df = pl.DataFrame(t, schema={user_col: pl.Int64, "item": pl.Int64, "relevance": pl.Float64}, orient="row")
    return recs_df, truth_df


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _close(a, b) -> bool:
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_oracle_engines_and_rendered_sql_agree(case):
    recs, truth, ks, conv, (recs_name, truth_name), user_col = case
    if recs_name == truth_name:
        truth_name += "_truth"
    recs = {u: items for u, items in recs.items() if items}  # a long table cannot hold an empty list
    truth = {u: labels for u, labels in truth.items() if labels}
    recs_df, truth_df = _frames(recs, truth, user_col)
    metrics = ["precision", "recall", "map", "mrr", "ndcg", "hit_rate", "r_precision"]
    expected = oracle.evaluate(recs, truth, ks, conv)
    for backend in ("polars", "duckdb"):
        res = rankwise.evaluate(recs_df, truth_df, k=ks, metrics=metrics, convention=conv, backend=backend,
                                user_col=user_col)
        got = {row[user_col]: row for row in res.per_user.iter_rows(named=True)}
        assert set(got) == set(expected), (backend, conv)
        for user, values in expected.items():
            for m in metrics:
                for k in ks:
                    assert _close(values[f"{m}@{k}"], got[user][f"{m}@{k}"]), (backend, user, m, k, conv)

    con = duckdb.connect()
    con.execute("CREATE TABLE sentinel AS SELECT 42 AS x")
    for name, frame in ((recs_name, recs_df), (truth_name, truth_df)):
        con.register("_frame", frame)
        con.execute(f"CREATE TABLE {_quoted(name)} AS SELECT * FROM _frame")
        con.unregister("_frame")
    script = render.render(metrics, ks, conv, "duckdb",
                           {"recommendations": _quoted(recs_name), "ground_truth": _quoted(truth_name)},
                           user_col=user_col)
    for statement in script.statements()[:-1]:
        con.execute(statement)
    rows = con.sql(f"SELECT * FROM {script.names['per_user']}").pl()
    for row in rows.iter_rows(named=True):
        for m in metrics:
            assert _close(expected[row["user_id"]][f"{m}@{row['k']}"], row[m]), ("sql", row, m, conv)
    assert rows.height == len(expected) * len(ks)
    assert con.execute("SELECT x FROM sentinel").fetchall() == [(42,)]


@pytest.mark.parametrize("name", ["read_csv('x.csv')", "a; DROP TABLE sentinel", "query('SELECT 1')", "x UNION SELECT 1",
                                  '"x.y"', '"../secret.csv"'])
def test_hostile_unquoted_table_strings_are_refused(name):
    with pytest.raises((rankwise.InvalidIdentifierError, rankwise.ParameterError)):
        rankwise.sql(k=3, tables={"recommendations": name})
