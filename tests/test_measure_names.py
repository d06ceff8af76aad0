"""Measure names as trec_eval and ir_measures write them (rankwise.metrics.names, evaluate(measures=...)).
Expected values come from trec_eval 10.0's own expected output (tests/conformance/fixtures/trec_eval/suite)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from trec_suite import SUITE_DIR, parse_trec_eval_output

import rankwise
from rankwise.errors import ParameterError
from rankwise.inputs.trec import read_qrels, read_trec_run
from rankwise.metrics import declarations, names
from rankwise.metrics.names import WHOLE, check, parse


@pytest.mark.parametrize("name, metric, k, knobs", [
    ("P_10", "precision", 10, {"precision_denominator": ("k",)}),
    ("recall_5", "recall", 5, {}),
    ("map", "map", None, {"ap_denominator": ("n_rel", "min_k_nrel")}),
    ("map_cut_10", "map", 10, {"ap_denominator": ("n_rel",)}),
    ("ndcg", "ndcg", None, {"gain": ("linear",), "gain_levels": ((),), "log_base": (2.0,), "ideal": ("labels",)}),
    ("ndcg_cut_10", "ndcg", 10, {"gain": ("linear",), "gain_levels": ((),), "log_base": (2.0,), "ideal": ("labels",)}),
    ("recip_rank", "mrr", None, {}),
    ("Rprec", "r_precision", None, {}),
    ("success_1", "hit_rate", 1, {}),
    ("rbp", "rbp", None, {"rbp_persistence": (0.9,)}),
    # trec_eval's gains per level (-m ndcg.1=3,2=9,4=4.5 prints ndcg_1=3,2=9,4=4.5) and rbp_resid's p
    ("ndcg_1=3,2=9,4=4.5", "ndcg", None, {"gain": ("linear",), "gain_levels": (((1.0, 3.0), (2.0, 9.0), (4.0, 4.5)),),
                                          "log_base": (2.0,), "ideal": ("labels",)}),
    ("G_0=-1,3=6", "g", None, {"gain": ("linear",), "gain_levels": (((0.0, -1.0), (3.0, 6.0)),), "log_base": (2.0,)}),
    ("Rndcg", "rndcg", None, {"gain": ("linear",), "gain_levels": ((),), "log_base": (2.0,)}),
    ("binG", "bin_g", None, {}),
    ("rbp_resid", "rbp_resid", None, {"rbp_persistence": (0.9,)}),
    ("rbp_resid_p=0.5", "rbp_resid", None, {"rbp_persistence": (0.5,)}),
    ("set_P", "set_p", None, {}),
    ("num_ret", "num_ret", None, {}),
    ("nDCG@10", "ndcg", 10, {"gain": ("linear",), "gain_levels": ((),), "log_base": (2.0,), "ideal": ("labels",)}),
    ("nDCG(dcg=exp-log2)@10", "ndcg", 10, {"gain": ("exp2",), "gain_levels": ((),), "log_base": (2.0,), "ideal": ("labels",)}),
    ("P(rel=2)@5", "precision", 5, {"precision_denominator": ("k",), "relevance_threshold": (2,)}),
    # ir_measures' rel=1 when a name gives none (a threshold of 0 is the same on integer levels)
    ("AP", "map", None, {"ap_denominator": ("n_rel", "min_k_nrel"), "relevance_threshold": (1, 0)}),
    ("AP@10", "map", 10, {"ap_denominator": ("n_rel",), "relevance_threshold": (1, 0)}),
    ("RR", "mrr", None, {"relevance_threshold": (1, 0)}),
    ("RR@10", "mrr", 10, {"rr_cutoff": (True,), "ties": ("item_asc",), "relevance_threshold": (1, 0)}),
    ("RBP(p=0.8)", "rbp", None, {"rbp_persistence": (0.8,), "relevance_threshold": (1, 0)}),
    ("RBP", "rbp", None, {"rbp_persistence": (0.8,), "relevance_threshold": (1, 0)}),
    ("Judged@10", "judged", 10, {"ties": ("item_asc",)}),  # its provider: equal scores by docno ascending
    ("R@100", "recall", 100, {"relevance_threshold": (1, 0)}),
    ("ERR@10", "err", 10, {"err_max_grade": (4.0,)}),
    ("Success@10", "hit_rate", 10, {"relevance_threshold": (1, 0)}),
    ("NumRelRet", "num_rel_ret", None, {"relevance_threshold": (1, 0)}),
    ("NumRet", "num_ret", None, {}),
    ("NumRet(rel=1)", "num_rel_ret", None, {"relevance_threshold": (1,)}),
])
def test_names_parse(name, metric, k, knobs):
    m = parse(name)
    assert (m.metric, m.k, m.knobs) == (metric, k, knobs)
    assert m.cutoff == (WHOLE if k is None else k)


def test_parameters_of_a_family():
    m = parse("iprec_at_recall_0.50")
    assert (m.metric, m.param, m.knobs) == ("iprec_at_recall", 0.5, {"iprec_recall_level": (0.5,)})
    assert parse("IPrec@0.5").knobs == {"iprec_recall_level": (0.5,)}
    # ir_measures' Judged@k is its own metric: any qrels line counts (a level -1 too) and a short list is not
    # filled (judged_provider.py divides by min(k, list length)), so it is not 1 - unj_k
    assert parse("Judged@10").metric == "judged" and parse("Judged@10").family.transform == ""


@pytest.mark.parametrize("name, words", [
    ("ndcg_cut10", "Did you mean 'ndcg_cut_10'"), ("nDGC@10", "Did you mean 'nDCG@10'"),
    ("recip_rnak", "Did you mean 'recip_rank'"), ("", "non-empty"),
    ("P_0", "positive integer"), ("map_10", "Unknown measure"), ("ERR", "needs a cutoff"), ("NumQ@5", "no cutoff"),
    ("P(foo=1)@5", "no parameter"), ("nDCG(dcg=weird)@5", "dcg="), ("P(rel=x)@5", "not a number"),
])
def test_bad_names(name, words):
    with pytest.raises(ParameterError) as info:
        parse(name)
    assert words in str(info.value) + (info.value.hint or "")


def test_knob_mismatch_names_the_preset_or_knob():
    conv = rankwise.PRESETS["trec_eval"]
    with pytest.raises(ParameterError) as info:
        check([parse("RR@10")], conv, rankwise.PRESETS)
    text = str(info.value) + info.value.hint
    assert "rr_cutoff=True" in text and "rr_cutoff=False" in text and "replace(rr_cutoff=True)" in text
    with pytest.raises(ParameterError) as info:
        check([parse("map_cut_10")], rankwise.PRESETS["default"], rankwise.PRESETS)
    assert "ap_denominator='n_rel'" in str(info.value) and "convention='" in info.value.hint
    check([parse(n) for n in ("P_10", "map", "ndcg_cut_10", "recip_rank", "Rprec", "rbp")], conv)  # all fit


def test_waiting_metric_is_refused_then_goes_live(monkeypatch):
    fam = names.Family("zz_test", "trec_eval", "zz_metric", "none", "a test family")
    monkeypatch.setattr(names, "FAMILIES", (*names.FAMILIES, fam))
    monkeypatch.setitem(names._TREC, "zz_test", fam)
    with pytest.raises(ParameterError, match="not computed by rankwise yet") as info:
        check([parse("zz_test")], rankwise.PRESETS["trec_eval"])
    assert names.ISSUE in str(info.value)
    monkeypatch.setitem(declarations.BY_NAME, "zz_metric", declarations.BY_NAME["map"])
    check([parse("zz_test")], rankwise.PRESETS["trec_eval"])  # live once the registry has it


def test_a_parameter_without_its_knob_waits(monkeypatch):
    # a convention without the knob (iprec_recall_level exists now: the check holds for the next such family)
    import types

    knobs = {k: v for k, v in rankwise.PRESETS["trec_eval"].knobs().items() if k != "iprec_recall_level"}
    with pytest.raises(ParameterError, match="not computed by rankwise yet.*iprec_recall_level"):
        check([parse("iprec_at_recall_0.50")], types.SimpleNamespace(**knobs))


def test_run_information_is_not_a_measure():
    with pytest.raises(ParameterError, match="run information"):
        check([parse("runid")], rankwise.PRESETS["trec_eval"])


def test_expand_trec_options():
    assert names.expand_trec("P.5,10") == ["P_5", "P_10"]
    assert names.expand_trec("success") == ["success_1", "success_5", "success_10"]
    assert names.expand_trec("iprec_at_recall.0.5") == ["iprec_at_recall_0.50"]
    assert names.expand_trec("P_10") == ["P_10"]
    official = names.expand_trec("official")
    assert official[:6] == ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map"] and "P_1000" in official
    every = {n for n in names.expand_trec("all_trec")}
    printed = {measure for measure, _ in parse_trec_eval_output(SUITE_DIR / "out.test.a")}
    assert every == printed  # -m all_trec names exactly what trec_eval prints


def test_every_name_trec_eval_prints_parses():
    for out in ("out.test.a", "out.test.aql"):
        for measure, _ in parse_trec_eval_output(SUITE_DIR / out):
            parse(measure)


def test_docs_page_is_generated():
    page = Path(__file__).parents[1] / "docs" / "measures.md"
    assert page.read_text() == names.markdown(), "run: python -m rankwise.metrics.names > docs/measures.md"


@pytest.fixture(scope="module")
def suite_inputs():
    run = read_trec_run(SUITE_DIR / "results.test").select("user", "item", "rank")
    qrels = read_qrels(SUITE_DIR / "qrels.test").with_columns(pl.col("relevance").clip(lower_bound=0))
    return run, qrels


@pytest.mark.filterwarnings("ignore::rankwise.errors.CutoffWarning")  # P_1000 of 500 documents, as trec_eval asks
@pytest.mark.parametrize("ranges", [False, True], ids=["one-plan", "user-ranges"])
@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_evaluate_measures_against_trec_eval(suite_inputs, engine, ranges, monkeypatch, tmp_path):
    """Every live measure of `trec_eval -m all_trec -q` equals trec_eval's printed value, per query and 'all'; also
    with the queries evaluated a range at a time from Parquet files (protocol.ROWS_PER_RANGE, as a large input is)."""
    from rankwise.engines import protocol

    seen = []
    if ranges:
        for frame, name in zip(suite_inputs, ("run.parquet", "qrels.parquet")):
            frame.write_parquet(tmp_path / name)
        suite_inputs = (tmp_path / "run.parquet", tmp_path / "qrels.parquet")
        monkeypatch.setattr(protocol, "ROWS_PER_RANGE", 100)  # the suite run: 3 queries x 500 rows
        of_prep = protocol.user_ranges
        monkeypatch.setattr(protocol, "user_ranges", lambda *a: seen.append(of_prep(*a)) or seen[-1])
    expected = parse_trec_eval_output(SUITE_DIR / "out.test.aq")
    # every value of a parameter family (iprec_at_recall_<l>, Rprec_mult_<m>) in the same evaluation
    asked = [n for n in dict.fromkeys(m for m, _ in expected) if parse(n).metric and parse(n).live]
    assert {"P_10", "map", "gm_map", "ndcg", "ndcg_cut_10", "recip_rank", "Rprec", "success_1", "rbp",
            "iprec_at_recall_0.00", "iprec_at_recall_0.50", "Rprec_mult_0.20", "Rprec_mult_2.00"} <= set(asked)
    res = rankwise.evaluate(*suite_inputs, measures=asked, convention="trec_eval", backend=engine)
    assert res.per_measure.columns == ["user", *asked]
    summary = {r["measure"]: r for r in res.measure_summary.iter_rows(named=True)}
    bad = []
    for row in res.per_measure.iter_rows(named=True):
        for name in asked:
            if (name, row["user"]) in expected:
                got = f"{row[name]:.4f}" if parse(name).family.value == "float" else str(int(row[name]))
                bad += [] if got == expected[(name, row["user"])] else [(name, row["user"], got)]
    for name in asked:
        m = parse(name)
        got = f"{summary[name]['value']:.4f}" if m.family.value == "float" else str(int(summary[name]["value"]))
        bad += [] if got == expected[(name, "all")] else [(name, "all", got)]
    assert not bad
    assert summary["map"]["k"] is None and summary["P_10"]["k"] == 10
    assert not ranges or max(map(len, seen)) >= 4  # the suite's three queries, each its own range


def test_measures_and_metrics_are_exclusive(suite_inputs):
    with pytest.raises(ParameterError, match="replaces metrics= and k="):
        rankwise.evaluate(*suite_inputs, measures=["P_10"], metrics=["precision"])
    with pytest.raises(ParameterError, match="replaces metrics= and k="):
        rankwise.evaluate(*suite_inputs, measures=["P_10"], k=10)
    with pytest.raises(ParameterError, match="empty"):
        rankwise.evaluate(*suite_inputs, measures=[])


def test_measures_under_the_default_convention(suite_inputs):
    """ir_measures' names under the default convention; the whole list warns of no cutoff."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = rankwise.evaluate(*suite_inputs, measures=["nDCG@10", "AP", "RR@10", "P@5"])
    expected = parse_trec_eval_output(SUITE_DIR / "out.test.a")
    values = dict(res.measure_summary.select("measure", "value").iter_rows())
    assert f"{values['nDCG@10']:.4f}" == expected[("ndcg_cut_10", "all")]
    assert f"{values['AP']:.4f}" == expected[("map", "all")]
    assert f"{values['P@5']:.4f}" == expected[("P_5", "all")]


def test_several_runs_and_result_without_measures(suite_inputs):
    run, qrels = suite_inputs
    res = rankwise.evaluate({"a": run, "b": run}, qrels, measures="P_10", convention="trec_eval")
    assert res.per_measure.columns == ["run", "user", "P_10"]
    assert res.measure_summary.get_column("run").to_list() == ["a", "b"]
    plain = rankwise.evaluate(run, qrels, k=10, metrics=["precision"], convention="trec_eval")
    with pytest.raises(ParameterError, match="measures"):
        plain.per_measure


@pytest.mark.parametrize("name, problem", [("ndcg_1=x", "<relevance level>=<gain>"), ("P_1=3", "no level=gain"),
                                           ("ndcg_-1=3", "whole number >= 0"), ("rbp_resid_p=high", "not a number")])
def test_gain_parameters_refused_by_name(name, problem):
    with pytest.raises(ParameterError, match=problem):
        parse(name)


def test_requirements_refuse_a_knob_one_name_would_change_under_another():
    """P@5 is ir_measures' rel=1; beside P(rel=2)@5, or beside a trec_eval name that reads the convention's
    relevance level (trec_eval's -l2), one of them would silently get the other's threshold."""
    from rankwise import PRESETS
    from rankwise.metrics.names import requirements

    level2 = PRESETS["trec_eval"].replace(relevance_threshold=2.0)
    for names, conv in ((["P@5", "P(rel=2)@5"], PRESETS["default"]), (["P(rel=2)@5", "P@5"], PRESETS["default"]),
                        (["P_5", "P@5"], level2)):
        with pytest.raises(ParameterError, match="Evaluate them in two calls"):
            requirements([parse(n) for n in names], conv)
    assert requirements([parse("P_5"), parse("P@5")], PRESETS["trec_eval"]).relevance_threshold == 1.0
    assert requirements([parse("P@5")], level2).relevance_threshold == 1  # alone: the name's own rel=1
