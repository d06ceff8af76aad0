"""A parameter family's values in one evaluation (iprec_at_recall_<l>, Rprec_mult_<m>: declarations.Param):
bit for bit the values of one evaluation per value, as evaluate() computed them before."""

from __future__ import annotations

import polars as pl
import pytest
from trec_suite import SUITE_DIR, parse_trec_eval_output

import rankwise
from rankwise.errors import ParameterError
from rankwise.inputs.trec import read_qrels, read_trec_run
from rankwise.metrics import declarations, names
from rankwise.metrics.names import WHOLE, parse


@pytest.fixture(scope="module")
def suite_inputs():
    run = read_trec_run(SUITE_DIR / "results.test").select("user", "item", "rank")
    qrels = read_qrels(SUITE_DIR / "qrels.test").with_columns(pl.col("relevance").clip(lower_bound=0))
    return run, qrels


ONE_CASE_ON_SLOW_BACKENDS = True  # Spark, PostgreSQL: the first case (their engine path is the fallback)
FAMILY_NAMES = [*names.expand_trec("iprec_at_recall"), *names.expand_trec("Rprec_mult"), "IPrec@0.35"]


def _one_value_at_a_time(recs, truth, measure, conv, backend, ks):
    """What evaluate() did before Params: the measure's metric alone, its knob set to the name's value."""
    m = parse(measure)
    return rankwise.evaluate(recs, truth, metrics=[m.metric], k=ks, convention=conv.replace(**{m.family.param_knob: m.param}),
                             backend=backend)


def _bits(series: pl.Series):
    return series.cast(pl.Float64).to_numpy().view("u8").tolist()


@pytest.fixture(scope="module")
def awkward_inputs(suite_inputs):
    """The suite's run and qrels plus a user with labels and no list, one with a list and no label, and one
    whose labels are all non-relevant."""
    run, qrels = suite_inputs
    run = pl.concat([run, pl.DataFrame({"user": ["x1", "x1", "x3"], "item": ["a", "b", "c"], "rank": [1, 2, 1]},
                                       schema=run.schema)])
    qrels = pl.concat([qrels, pl.DataFrame({"user": ["x2", "x3"], "item": ["a", "c"], "relevance": [1, 0]},
                                           schema=qrels.schema)])
    return run, qrels


@pytest.mark.filterwarnings("ignore::rankwise.errors.CutoffWarning")
@pytest.mark.parametrize("one_by_one", [False, True], ids=["engine", "one-by-one"])
@pytest.mark.parametrize("conv", [
    rankwise.PRESETS["trec_eval"],
    rankwise.PRESETS["trec_eval"].replace(users="union", empty_labels="nan", empty_predictions="zero",
                                          iprec_recall_count="truncate_plus_0.9", relevance_threshold=2.0),
], ids=["trec_eval", "other-knobs"])
def test_parameter_values_in_one_evaluation_are_the_one_value_calls(awkward_inputs, backend, conv, one_by_one,
                                                                     monkeypatch):
    """Every value of iprec_at_recall and Rprec_mult asked in one evaluate() equals, bit for bit per user, k
    and summary row, the evaluation of that metric alone with its knob at that value; also at a cutoff of
    another measure (P_5), under other empty rules, and through the API's fallback for an engine without
    Capabilities.params (Spark and PostgreSQL today: each value run on its own, same prepared inputs)."""
    if one_by_one:
        import dataclasses

        from rankwise.engines import engine as _engine

        kind = type(_engine(backend))
        monkeypatch.setattr(kind, "capabilities", dataclasses.replace(kind.capabilities, params=False))
    recs, truth = awkward_inputs
    # Spark and PostgreSQL: one value (seconds per engine run). Their path is the API's fallback
    # (api._params_one_by_one), the same code the one-by-one cases run on Polars and DuckDB with every
    # value of both families; one value runs it once on the engine: its runs list the same users in the
    # same order, and the value's column and summary rows are that engine's own one-value evaluation.
    family = FAMILY_NAMES if backend in ("polars", "duckdb") else ["iprec_at_recall_0.50"]
    asked = ["P_5", "map", *family]
    res = rankwise.evaluate(recs, truth, measures=asked, convention=conv, backend=backend)
    assert res.per_measure.columns == ["user", *asked]
    ks = res.request.ks
    assert ks == (5, WHOLE)
    summary = {r["measure"]: r for r in res.measure_summary.iter_rows(named=True)}
    for name in family:
        m = parse(name)
        one = _one_value_at_a_time(recs, truth, name, conv, backend, list(ks))
        column = res.measures[asked.index(name)].output or m.metric
        for k in ks:
            got = res.per_user.select("user", f"{column}@{k}")
            want = one.per_user.select("user", f"{m.metric}@{k}")
            assert got["user"].equals(want["user"])
            assert _bits(got[f"{column}@{k}"]) == _bits(want[f"{m.metric}@{k}"]), (name, k)
            mine = res.summary.filter((pl.col("metric") == column) & (pl.col("k") == k)).row(0, named=True)
            theirs = one.summary.filter((pl.col("metric") == m.metric) & (pl.col("k") == k)).row(0, named=True)
            assert _bits(pl.Series([mine["value"], mine["ci_low"]])) == _bits(pl.Series([theirs["value"], theirs["ci_low"]]))
            assert mine["n_users"] == theirs["n_users"]
        assert _bits(pl.Series([summary[name]["value"]])) == _bits(
            one.summary.filter((pl.col("metric") == m.metric) & (pl.col("k") == WHOLE))["value"])


def test_parameter_values_are_named_columns(suite_inputs, monkeypatch):
    """The convention's own value is the metric's column, as with metrics=; another value is a column of
    its own (declarations.Param.column) in per_user, long and summary; a name asked twice is one column."""
    res = rankwise.evaluate(*suite_inputs, measures=["iprec_at_recall_0.00", "iprec_at_recall_0.50", "IPrec@0.5"],
                            convention="trec_eval")
    assert rankwise.PRESETS["trec_eval"].iprec_recall_level == 0.0
    other = declarations.Param("iprec_at_recall", 0.5).column
    assert other == "iprec_at_recall(iprec_recall_level=0.5)"
    assert [m.output for m in res.measures] == [None, other, other]
    assert res.request.names == ("iprec_at_recall", other) and res.request.params == ()
    assert {f"iprec_at_recall@{WHOLE}", f"{other}@{WHOLE}"} <= set(res.per_user.columns)
    assert res.summary["metric"].to_list() == ["iprec_at_recall", other]
    values = res.per_measure
    assert values["iprec_at_recall_0.50"].equals(values["IPrec@0.5"], check_names=False)
    assert not values["iprec_at_recall_0.50"].equals(values["iprec_at_recall_0.00"], check_names=False)
    import dataclasses

    from rankwise.engines.polars import PolarsEngine

    # (an engine that keeps results: Spark, PostgreSQL; refused before any engine work)
    monkeypatch.setattr(PolarsEngine, "capabilities", dataclasses.replace(PolarsEngine.capabilities, keeps_results=True))
    with pytest.raises(ParameterError, match="collect=False takes one value"):
        rankwise.evaluate(*suite_inputs, measures=["Rprec_mult_0.20", "Rprec_mult_0.40"], convention="trec_eval",
                          collect=False)


@pytest.mark.parametrize("one_by_one", [False, True], ids=["engine", "one-by-one"])
@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_only_parameter_values(suite_inputs, engine, one_by_one, monkeypatch):
    """Values other than the convention's alone: no column of the metric at the convention's value."""
    if one_by_one:
        import dataclasses

        from rankwise.engines import engine as _engine

        kind = type(_engine(engine))
        monkeypatch.setattr(kind, "capabilities", dataclasses.replace(kind.capabilities, params=False))
    asked = ["iprec_at_recall_0.50", "Rprec_mult_0.20"]
    res = rankwise.evaluate(*suite_inputs, measures=asked, convention="trec_eval", backend=engine)
    columns = [declarations.Param("iprec_at_recall", 0.5).column, declarations.Param("rprec_mult", 0.2).column]
    assert res.request.names == tuple(columns)
    assert res.per_user.columns == ["user", *(f"{c}@{WHOLE}" for c in columns)]
    assert res.summary["metric"].to_list() == columns
    assert res.per_measure.columns == ["user", *asked]
    expected = {m: v for (m, q), v in parse_trec_eval_output(SUITE_DIR / "out.test.a").items() if q == "all"}
    assert [f"{r['value']:.4f}" for r in res.measure_summary.iter_rows(named=True)] == [expected[n] for n in asked]


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_parameter_values_from_list_form_inputs(awkward_inputs, engine):
    """Lists of items in rank order (the engines' list paths) give the long tables' values, bit for bit."""
    recs, truth = awkward_inputs
    lists = recs.sort("user", "rank").group_by("user", maintain_order=True).agg(pl.col("item"))
    asked = ["map", "P_5", *FAMILY_NAMES]
    conv = rankwise.PRESETS["trec_eval"]
    long = rankwise.evaluate(recs, truth, measures=asked, convention=conv, backend=engine)
    listed = rankwise.evaluate(lists, truth, measures=asked, convention=conv, backend=engine, rank_col=None)
    assert long.per_measure.columns == listed.per_measure.columns
    for name in asked:
        assert _bits(long.per_measure[name]) == _bits(listed.per_measure[name]), name
