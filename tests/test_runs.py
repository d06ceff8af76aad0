"""Several runs in one call, confidence intervals on every mean, and bit-identical summaries.

Expected values come from the naive oracle (tests/oracle.py) and scipy's t interval, never from
rankwise itself; a multi-run result is also checked against one evaluate() per run.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from scipy import stats

import engines as E
import oracle
import rankwise
from rankwise.conventions import resolve

KS = (1, 3, 10)


def _inputs(seed: int):
    recs, truth, scores = E.generate(seed=seed, string_ids=False, by_score=False, n_users=60)
    return recs, truth, *E.api_frames(recs, truth, scores, string_ids=False, by_score=False)


def test_several_runs_equal_one_evaluate_per_run(backend):
    _, _, recs_a, truth = _inputs(1)
    _, _, recs_b, _ = _inputs(2)
    both = rankwise.evaluate({"pop": recs_a, "als": recs_b}, truth, k=list(KS), backend=backend)
    assert both.runs == ("pop", "als")
    for name, recs in (("pop", recs_a), ("als", recs_b)):
        alone = rankwise.evaluate(recs, truth, k=list(KS), backend=backend)
        for frame in ("per_user", "summary", "excluded", "long"):
            got = getattr(both, frame).filter(pl.col("run") == name).drop("run")
            assert_frame_equal(got, getattr(alone, frame), check_exact=True)
    assert both.summary.columns[:3] == ["run", "metric", "k"]
    assert both.per_user.columns[0] == "run"


def test_a_user_missing_from_one_run_is_scored_by_that_runs_rule(backend):
    truth = pl.DataFrame({"user": [1, 2], "item": [10, 20]})
    full = pl.DataFrame({"user": [1, 2], "item": [10, 20], "rank": [1, 1]})
    partial = pl.DataFrame({"user": [1], "item": [10], "rank": [1]})
    res = rankwise.evaluate({"full": full, "partial": partial}, truth, k=1, metrics=["precision"], backend=backend,
                            convention=resolve("default").replace(empty_predictions="nan"))
    summary = {(r["run"], r["metric"]): (r["value"], r["n_users"]) for r in res.summary.iter_rows(named=True)}
    assert summary[("full", "precision")] == (1.0, 2)
    assert summary[("partial", "precision")] == (1.0, 1)  # user 2 has no recommendation: left out, counted
    excluded = {(r["run"], r["code"]): r["n_users"] for r in res.excluded.iter_rows(named=True)}
    assert excluded[("partial", "no_predictions")] == 1 and ("full", "no_predictions") not in excluded  # 0: no row


@pytest.mark.parametrize("bad", [{}, {"": "x"}, {1: "x"}])
def test_bad_run_names_are_refused(bad):
    truth = pl.DataFrame({"user": [1], "item": [10]})
    with pytest.raises(rankwise.ParameterError):
        rankwise.evaluate(bad, truth)


@pytest.mark.parametrize("confidence", [0.95, 0.8])
def test_summary_ci_is_the_t_interval_of_the_oracles_per_user_values(backend, confidence):
    recs_d, truth_d, recs, truth = _inputs(3)
    conv = resolve("default")
    res = rankwise.evaluate(recs, truth, k=list(KS), backend=backend, confidence=confidence)
    naive = oracle.evaluate(recs_d, truth_d, KS, conv)
    from rankwise.metrics.declarations import BY_NAME

    for row in res.summary.iter_rows(named=True):
        metric = "fbeta" if row["metric"] == "f1" else row["metric"]
        values = [v[f"{metric}@{row['k']}"] for v in naive.values()]
        if BY_NAME[metric].summary != "mean":  # a sum (trec_eval's counts) or a geometric mean: no t interval
            assert math.isnan(row["ci_low"]) and math.isnan(row["ci_high"]), row
            continue
        values = np.array([v for v in values if not math.isnan(v)])
        low, high = stats.t.interval(confidence, len(values) - 1, loc=values.mean(),
                                     scale=stats.sem(values)) if values.std() > 0 else (values.mean(),) * 2
        assert row["ci_low"] == pytest.approx(low, rel=1e-9, abs=1e-12), row
        assert row["ci_high"] == pytest.approx(high, rel=1e-9, abs=1e-12), row


def test_ci_is_nan_below_two_users_and_for_an_f_of_means(backend):
    truth = pl.DataFrame({"user": [1], "item": [10]})
    recs = pl.DataFrame({"user": [1], "item": [10], "rank": [1]})
    res = rankwise.evaluate(recs, truth, k=1, metrics=["precision"], backend=backend)
    assert math.isnan(res.summary["ci_low"].item()) and math.isnan(res.summary["ci_high"].item())
    _, _, recs, truth = _inputs(4)
    res = rankwise.evaluate(recs, truth, k=3, metrics=["f1"], backend=backend,
                            convention=resolve("default").replace(f_aggregation="of_means"))
    assert math.isnan(res.summary["ci_low"].item())


@pytest.mark.parametrize("confidence", [0, 1, 1.5, "0.95", None])
def test_bad_confidence_is_refused(confidence):
    _, _, recs, truth = _inputs(5)
    with pytest.raises(rankwise.ParameterError, match="confidence"):
        rankwise.evaluate(recs, truth, confidence=confidence)


def _large(n_users: int = 400_000, seed: int = 7):
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(n_users), 5)
    recs = pl.DataFrame({"user": users, "item": rng.integers(0, 50, users.size),
                         "rank": np.tile(np.arange(1, 6), n_users)}).unique(["user", "item"], keep="first")
    recs = recs.with_columns(pl.col("rank").rank("ordinal").over("user").cast(pl.Int64))
    truth = pl.DataFrame({"user": np.arange(n_users), "item": rng.integers(0, 50, n_users),
                          "relevance": rng.integers(1, 4, n_users).astype(float)})
    return recs, truth


def test_summaries_are_bit_identical_run_after_run(backend):
    # Spark and PostgreSQL take seconds per evaluation through a driver or a server: 2k users, one
    # repeat. Polars and DuckDB: 100k users, three runs, in tests/test_rerun_identical.py
    recs, truth = _large(2_000)
    first = rankwise.evaluate(recs, truth, k=[5], metrics=["ndcg", "map", "dcg"], backend=backend).summary
    again = rankwise.evaluate(recs, truth, k=[5], metrics=["ndcg", "map", "dcg"], backend=backend).summary
    assert_frame_equal(again, first, check_exact=True)


def summary_tolerance(n_users: int) -> float:
    """README's stated cross-engine tolerance of a mean over n users: relative max(1e-12, n * 2^-52),
    the error bound of adding n doubles in two different orders."""
    return max(1e-12, n_users * 2.0**-52)


def test_engines_agree_within_the_stated_tolerance():
    """README: per-user values agree to a relative 1e-12; the engines add them in different orders,
    so a mean over n users agrees to a relative max(1e-12, n * 2^-52)."""
    recs, truth = _large(100_000, seed=11)
    a = rankwise.evaluate(recs, truth, k=[1, 5], backend="polars")
    b = rankwise.evaluate(recs, truth, k=[1, 5], backend="duckdb")
    assert_frame_equal(a.per_user, b.per_user, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)
    for x, y in zip(a.summary.iter_rows(named=True), b.summary.iter_rows(named=True), strict=True):
        assert x["n_users"] == y["n_users"]
        assert y["value"] == pytest.approx(x["value"], rel=summary_tolerance(x["n_users"]), abs=0), (x, y)


# -- Result.compare / bootstrap / table: the statistics on an evaluate's own per-user values --------


RUN_SEEDS = {"pop": 3, "als": 4, "ease": 5}


def _three_runs(backend):
    truth = _inputs(1)[3]
    runs = {name: _inputs(seed)[2] for name, seed in RUN_SEEDS.items()}
    return rankwise.evaluate(runs, truth, k=[3, 10], metrics=["ndcg", "recall"], backend=backend)


# heavy: not on Spark or PostgreSQL (--spark-heavy runs them). compare() is computed in Python (scipy, Polars)
# on the collected per-user values whatever the backend; that those values are right for several runs
# on Spark/PostgreSQL is shown there by test_several_runs_equal_one_evaluate_per_run (several runs = one
# evaluate per run, exactly), test_summary_ci_is_the_t_interval_of_the_oracles_per_user_values (one
# run's means and intervals = the oracle's) and the cross-backend tests (per-user values = Polars's,
# e.g. tests/test_engines.py::test_spark_inputs_and_uncollected_per_user).
@pytest.mark.heavy
def test_result_compare_equals_scipy_on_the_oracles_per_user_values(backend):
    res = _three_runs(backend)
    pairs = res.compare(test="t", correction=None)
    assert pairs.height == 3 * 2 * 2  # pairs x metrics x ks
    truth_d = _inputs(1)[1]
    values = {}  # the oracle's per-user values, not rankwise's
    for run, seed in RUN_SEEDS.items():
        naive = oracle.evaluate(_inputs(seed)[0], truth_d, (3, 10), resolve("default"))
        values[run] = {(m, k): {u: v[f"{m}@{k}"] for u, v in naive.items()} for m in ("ndcg", "recall") for k in (3, 10)}
    for row in pairs.iter_rows(named=True):
        a, b = values[row["run_a"]][(row["metric"], row["k"])], values[row["run_b"]][(row["metric"], row["k"])]
        users = [u for u in a if not (math.isnan(a[u]) or math.isnan(b[u]))]
        xa, xb = np.array([a[u] for u in users]), np.array([b[u] for u in users])
        assert row["n_users"] == len(users)
        assert row["p_value"] == pytest.approx(stats.ttest_rel(xb, xa).pvalue, rel=1e-12, abs=1e-15)
        assert row["diff"] == pytest.approx(xb.mean() - xa.mean(), rel=1e-12, abs=1e-15)


def test_result_compare_bootstrap_and_table_agree_across_backends():
    polars_res, duckdb_res = _three_runs("polars"), _three_runs("duckdb")
    for method in ("compare", "bootstrap"):
        assert_frame_equal(getattr(polars_res, method)(seed=7), getattr(duckdb_res, method)(seed=7),
                           check_exact=False, rel_tol=1e-12, abs_tol=1e-15)
    table = polars_res.table(test="wilcoxon")
    significant = polars_res.compare(test="wilcoxon").filter("significant")
    for row in significant.iter_rows(named=True):  # every significant pair shows up as a letter
        win = row["run_a"] if row["mean_a"] > row["mean_b"] else row["run_b"]
        lose = row["run_b"] if win == row["run_a"] else row["run_a"]
        cell = table.frame.filter((pl.col("run") == win) & (pl.col("metric") == row["metric"]) & (pl.col("k") == row["k"]))
        assert "abc"[polars_res.runs.index(lose)] in cell["better_than"].item()
    assert "Runs: a = pop, b = als, c = ease" in repr(table) and "<table" in table._repr_html_()


def test_result_bootstrap_is_reproducible_and_brackets_the_mean():
    res = _three_runs("polars")
    one, again = res.bootstrap(300, seed=1), res.bootstrap(300, seed=1)
    assert_frame_equal(one, again, check_exact=True)
    assert not one.equals(res.bootstrap(300, seed=2))
    assert ((one["ci_low"] <= one["value"]) & (one["value"] <= one["ci_high"])).all()
    with pytest.raises(rankwise.ParameterError, match="two runs"):
        rankwise.evaluate(*_inputs(1)[2:], k=3).compare()


# -- segments: every mean per group of users -------------------------------------------------------


def test_segment_summary_is_the_oracles_mean_and_t_interval_per_segment(backend):
    recs_d, truth_d, recs, truth = _inputs(3)
    users = sorted(set(recs_d) | set(truth_d))
    segment_of = {u: ("even" if u % 2 == 0 else "odd") for u in users if u % 7 != 0}  # multiples of 7: none
    table = pl.DataFrame({"user": list(segment_of), "segment": list(segment_of.values())})
    res = rankwise.evaluate(recs, truth, k=[3, 10], metrics=["recall", "ndcg"], backend=backend, segments=table)
    naive = oracle.evaluate(recs_d, truth_d, (3, 10), resolve("default"))
    assert res.segments.height == 2 * 2 * 2  # segments x metrics x ks
    # metrics in the order asked for, as in the summary (they were sorted by name: ndcg before recall)
    assert res.segments.select("segment", "metric", "k").rows() == [
        (s, m, k) for s in ("even", "odd") for m in ("recall", "ndcg") for k in (3, 10)]
    for row in res.segments.iter_rows(named=True):
        values = np.array([v[f"{row['metric']}@{row['k']}"] for u, v in naive.items()
                           if segment_of.get(u) == row["segment"] and not math.isnan(v[f"{row['metric']}@{row['k']}"])])
        assert row["n_users"] == len(values)
        assert row["value"] == pytest.approx(values.mean(), rel=1e-12)
        low, high = stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
        # recall and ndcg lie in [0, 1]: so does the interval
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((max(low, 0.0), min(high, 1.0)), rel=1e-9)
    no_segment = res.excluded.filter(pl.col("code") == "no_segment")["n_users"].item()
    assert no_segment == sum(1 for u in naive if u not in segment_of)


def test_segments_errors_and_by_segment_compare():
    _, _, recs, truth = _inputs(3)
    with pytest.raises(rankwise.DuplicateUserError, match="more than one segment"):
        rankwise.evaluate(recs, truth, k=3, segments=pl.DataFrame({"user": [1, 1], "segment": ["a", "b"]}))
    with pytest.raises(rankwise.MissingColumnError, match="segment"):
        rankwise.evaluate(recs, truth, k=3, segments=pl.DataFrame({"user": [1]}))
    table = pl.DataFrame({"user": list(range(60)), "segment": ["low" if u < 30 else "high" for u in range(60)]})
    res = rankwise.evaluate({"a": recs, "b": _inputs(4)[2]}, truth, k=3, metrics=["ndcg"], segments=table)
    by_segment = res.compare(by_segment=True, test="t", correction=None)
    for row in by_segment.iter_rows(named=True):  # the same test on that segment's users alone
        part = res.long.filter(pl.col("user").is_in([u for u in range(60) if (u < 30) == (row["segment"] == "low")]))
        a = part.filter(pl.col("run") == "a").sort("user")["ndcg"].to_numpy()
        b = part.filter(pl.col("run") == "b").sort("user")["ndcg"].to_numpy()
        ok = ~(np.isnan(a) | np.isnan(b))
        assert row["n_users"] == ok.sum()
        assert row["p_value"] == pytest.approx(stats.ttest_rel(b[ok], a[ok]).pvalue, rel=1e-12)


def test_table_labels_every_run_with_its_letter_when_catalog_metrics_are_present():
    """Catalog rows have no letters; the run label took the last row's empty letter."""
    recs = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rank": [1, 2, 1]})
    truth = pl.DataFrame({"user": [1, 2], "item": [11, 10]})
    train = pl.DataFrame({"user": [7, 8], "item": [10, 11]})
    res = rankwise.evaluate({"x": recs, "y": recs}, truth, k=2, metrics=["ndcg", "gini"], train=train)
    _, rows = res.table().cells()
    assert [r[0] for r in rows] == ["a  x", "b  y"]


def test_a_mixed_table_says_which_metrics_have_no_letters_and_why():
    """Per-user metrics get letters; a catalog metric and an F of the means have one value per run: the
    footnote said nothing about their cells having none."""
    recs = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rank": [1, 2, 1]})
    truth = pl.DataFrame({"user": [1, 2], "item": [11, 10]})
    train = pl.DataFrame({"user": [7, 8], "item": [10, 11]})
    res = rankwise.evaluate({"x": recs, "y": recs}, truth, k=2, metrics=["ndcg", "gini"], train=train)
    assert "gini (catalog-level): one value per run" in res.table().footnote
    of_means = rankwise.Convention(f_aggregation="of_means")
    res = rankwise.evaluate({"x": recs, "y": recs}, truth, k=2, metrics=["precision", "f1"], convention=of_means)
    assert "f1 (the F of mean precision and mean recall" in res.table().footnote
    plain = rankwise.evaluate({"x": recs, "y": recs}, truth, k=2, metrics=["precision", "f1"])
    assert "one value per run" not in plain.table().footnote
    assert "t interval of the mean" in plain.table().footnote
    catalog_only = rankwise.evaluate({"x": recs, "y": recs}, None, k=2, metrics=["gini"], train=train)
    assert "t interval" not in catalog_only.table().footnote  # no cell has one


def test_a_run_with_no_user_evaluated_keeps_its_rows_and_compares_to_nan(backend):
    """Under users='intersection' run b (user 7 only, outside the truth) evaluates nobody: its summary
    rows were missing, and compare / bootstrap / table raised "unknown run 'b'". Now: NaN, n_users 0,
    and the pair's p NaN (no user paired), as compare's docstring says."""
    truth = pl.DataFrame({"user": [1, 2], "item": [2, 3]})
    a = pl.DataFrame({"user": [1, 1, 2], "item": [1, 2, 3], "rank": [1, 2, 1]})
    b = pl.DataFrame({"user": [7], "item": [2], "rank": [1]})
    conv = rankwise.Convention(users="intersection")
    res = rankwise.evaluate({"a": a, "b": b}, truth, k=[1, 2], metrics=["ndcg"], convention=conv, backend=backend)
    rows_b = res.summary.filter(pl.col("run") == "b")
    assert rows_b["k"].to_list() == [1, 2] and rows_b["n_users"].to_list() == [0, 0]
    assert all(math.isnan(v) for v in rows_b["value"])
    pairs = res.compare()
    assert pairs["n_users"].to_list() == [0, 0] and all(math.isnan(p) for p in pairs["p_value"])
    assert res.bootstrap().filter(pl.col("run") == "b")["n_users"].to_list() == [0, 0]
    assert "nan" in str(res.table())
    alone = rankwise.evaluate(b, truth, k=2, metrics=["ndcg"], convention=conv, backend=backend)
    assert alone.summary.select("metric", "k", "n_users").rows() == [("ndcg", 2, 0)]


def test_per_user_has_every_metric_column_when_no_user_is_evaluated(backend):
    """per_user had only the user column when nobody was evaluated (and several runs raised): code
    that selects "ndcg@2" broke in exactly that case. The columns are the same as with users."""
    truth = pl.DataFrame({"user": [1], "item": [2]})
    b = pl.DataFrame({"user": [7], "item": [2], "rank": [1]})
    conv = rankwise.Convention(users="intersection")
    columns = ["user", "precision@1", "precision@2", "ndcg@1", "ndcg@2"]
    alone = rankwise.evaluate(b, truth, k=[1, 2], metrics=["precision", "ndcg"], convention=conv, backend=backend)
    assert alone.per_user.columns == columns and alone.per_user.height == 0
    assert alone.per_user.schema["ndcg@2"] == pl.Float64 and alone.per_user.schema["user"] == pl.Int64
    runs = rankwise.evaluate({"x": b, "y": b}, truth, k=[1, 2], metrics=["precision", "ndcg"], convention=conv,
                             backend=backend)
    assert runs.per_user.columns == ["run", *columns] and runs.per_user.height == 0


def test_a_segment_without_users_in_a_run_compares_to_nan():
    """compare(by_segment=True) raised "unknown run 'b'" when one segment had no user of run b, and
    the other segment's comparison was lost with it. Segment x: users 1, 2 (a hits both, b user 1)."""
    truth = pl.DataFrame({"user": [1, 2, 3], "item": [2, 3, 4]})
    a = pl.DataFrame({"user": [1, 2, 3], "item": [2, 3, 4], "rank": [1, 1, 1]})
    b = pl.DataFrame({"user": [1, 2], "item": [2, 5], "rank": [1, 1]})
    segments = pl.DataFrame({"user": [1, 2, 3], "segment": ["x", "x", "y"]})
    res = rankwise.evaluate({"a": a, "b": b}, truth, k=1, metrics=["precision"], segments=segments,
                            convention=rankwise.Convention(users="intersection"))
    out = res.compare(by_segment=True)
    x, y = out.filter(pl.col("segment") == "x").row(0, named=True), out.filter(pl.col("segment") == "y").row(0, named=True)
    assert (x["mean_a"], x["mean_b"], x["n_users"]) == (1.0, 0.5, 2)
    assert y["n_users"] == 0 and math.isnan(y["p_value"])


def test_an_f_of_means_is_not_paired_or_resampled(backend):
    """Under f_aggregation='of_means' the summary's F is the F of mean P and mean R; bootstrap and
    compare resampled and paired the per-user F, another number (0.3 against 0.30303 by hand: run a's
    P = (1/2, 1/2, 0), R = (1/2, 1/3, 0), F of the means 2 (1/3)(5/18) / (1/3 + 5/18) = 10/33)."""
    a = pl.DataFrame({"user": [1, 1, 1, 2, 2, 3], "item": [1, 2, 3, 1, 4, 5], "rank": [1, 2, 3, 1, 2, 1]})
    b = pl.DataFrame({"user": [1, 2, 2, 3], "item": [2, 4, 5, 5], "rank": [1, 1, 2, 1]})
    truth = pl.DataFrame({"user": [1, 1, 2, 2, 2, 4], "item": [2, 9, 4, 5, 6, 1]})
    conv = rankwise.Convention(users="labels", f_aggregation="of_means")
    res = rankwise.evaluate({"a": a, "b": b}, truth, k=2, metrics=["precision", "recall", "f1"], convention=conv,
                            backend=backend)
    f_a = res.summary.filter((pl.col("run") == "a") & (pl.col("metric") == "f1"))["value"].item()
    assert f_a == pytest.approx(10 / 33, rel=1e-12)
    assert set(res.compare()["metric"]) == set(res.bootstrap()["metric"]) == {"precision", "recall"}
    with pytest.raises(rankwise.ParameterError, match="of_means"):
        res.compare(metrics=["f1"])


def test_segment_tables_of_another_id_type_are_typed_errors(tmp_path):
    """String (or float) user ids in the segment table against integer users raised Polars'
    InvalidOperationError, and "1" or 1.5 were silently matched to user 1; a CSV's ids, read as text,
    still meet integer users when every one is an integer."""
    recs = pl.DataFrame({"user": [1, 1, 2, 3], "item": [1, 2, 3, 4], "rank": [1, 2, 1, 1]})
    truth = pl.DataFrame({"user": [1, 2, 3], "item": [2, 3, 9]})
    for table in (pl.DataFrame({"user": ["1", "2"], "segment": ["x", "y"]}),
                  pl.DataFrame({"user": [1.0, 1.5], "segment": ["x", "y"]})):
        with pytest.raises(rankwise.DtypeMismatchError, match="segments: the user ids"):
            rankwise.evaluate(recs, truth, k=3, metrics=["precision"], segments=table)
    path = tmp_path / "segments.csv"
    path.write_text("user,segment\n1,x\n2,x\n3,y\n")
    res = rankwise.evaluate(recs, truth, k=3, metrics=["precision"], segments=str(path))
    # by hand at k = 3: user 1 hits 2 of its 2 items (1/3), user 2 hits 3 (1/3), user 3 none: x = 1/3, y = 0
    assert res.segments.select("segment", "value").rows() == [("x", pytest.approx(1 / 3)), ("y", 0.0)]


def test_segment_users_outside_the_evaluations_integer_type_are_not_evaluated_users():
    """Int32 users against a segment table of Int64 ids, one of them 2**40: the cast to Int32 raised
    Polars' InvalidOperationError. Such a user cannot be an evaluated user: it is in no mean, like
    any other segment user that was not evaluated."""
    recs = pl.DataFrame({"user": [1, 2], "item": [1, 2], "rank": [1, 1]}, schema_overrides={"user": pl.Int32})
    truth = pl.DataFrame({"user": [1, 2], "item": [1, 3]}, schema_overrides={"user": pl.Int32})
    table = pl.DataFrame({"user": [1, 2, 2**40], "segment": ["x", "y", "y"]})
    res = rankwise.evaluate(recs, truth, k=1, metrics=["precision"], segments=table)
    # by hand: user 1 hits at rank 1 (precision 1), user 2 misses (0)
    assert res.segments.select("segment", "value", "n_users").rows() == [("x", 1.0, 1), ("y", 0.0, 1)]
    assert res.excluded.filter(pl.col("code") == "no_segment").height == 0  # nobody left out: no row


def test_segments_edge_cases_are_parameter_errors_or_empty_frames():
    """user_col='segment' with segments='country' raised Polars' DuplicateError; no evaluated user in
    any segment made compare(by_segment=True) raise 'cannot concat empty list'."""
    recs = pl.DataFrame({"user": [1, 2], "item": [1, 2], "rank": [1, 1]})
    truth = pl.DataFrame({"user": [1, 2], "item": [1, 3], "country": ["fr", "de"]})
    with pytest.raises(rankwise.ParameterError, match="collides with the segment column"):
        rankwise.evaluate(recs.rename({"user": "segment"}), truth.rename({"user": "segment"}), k=1,
                          user_col="segment", segments="country")
    res = rankwise.evaluate({"a": recs, "b": recs}, truth, k=1, metrics=["precision"],
                            segments=pl.DataFrame({"user": [100], "segment": ["x"]}))
    out = res.compare(by_segment=True)
    assert out.height == 0 and out.columns[:3] == ["segment", "run_a", "run_b"]


def test_an_input_error_in_one_of_several_runs_names_the_run(backend):
    """With three runs the user had to bisect: the error said what was wrong, not in which run."""
    truth = pl.DataFrame({"user": [1], "item": [11]})
    good = pl.DataFrame({"user": [1, 1], "item": [10, 11], "rank": [1, 2]})
    repeated = pl.DataFrame({"user": [1, 1], "item": [10, 10], "rank": [1, 2]})
    with pytest.raises(rankwise.DuplicateItemError) as info:
        rankwise.evaluate({"a": good, "als": repeated}, truth, k=1, backend=backend)
    assert info.value.problem.startswith("run 'als': recommendations:") and info.value.rows is not None
    with pytest.raises(rankwise.DuplicateItemError) as info:
        rankwise.evaluate(repeated, truth, k=1, backend=backend)
    assert info.value.problem.startswith("recommendations:")  # one run: nothing to name


# -- issue 37: what compare leaves out, excluded without zero rows, segments by any column, table width --


def test_compare_names_the_catalog_metrics_it_leaves_out():
    """compare() dropped gini without a word when it was asked for beside per-user metrics."""
    import warnings

    recs = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rank": [1, 2, 1]})
    truth = pl.DataFrame({"user": [1, 2], "item": [11, 10]})
    train = pl.DataFrame({"user": [7, 8], "item": [10, 11]})
    res = rankwise.evaluate({"x": recs, "y": recs}, truth, k=2, metrics=["ndcg", "gini", "item_coverage"],
                            train=train)
    with pytest.warns(rankwise.errors.LeftOutWarning, match=r"compare\(\) left out gini, item_coverage "
                                                              r"\(catalog-level\)"):
        out = res.compare()
    assert set(out["metric"]) == {"ndcg"}
    with pytest.warns(rankwise.errors.LeftOutWarning, match=r"bootstrap\(\) left out gini"):
        res.bootstrap(50)
    with warnings.catch_warnings():  # naming the metrics is not leaving any out; the table's footnote says it
        warnings.simplefilter("error", rankwise.errors.LeftOutWarning)
        res.compare(metrics=["ndcg"])
        assert "No letters for gini, item_coverage (catalog-level)" in res.table().footnote


def test_excluded_lists_only_reasons_that_leave_someone_out(backend):
    """res.excluded listed 'outside_users ... 0'; with nobody left out it is empty, same columns and types."""
    recs = pl.DataFrame({"user": [1, 2], "item": [10, 10], "rank": [1, 1]})
    truth = pl.DataFrame({"user": [1, 2], "item": [10, 11]})
    schema = {"code": pl.String, "reason": pl.String, "n_users": pl.Int64}
    one = rankwise.evaluate(recs, truth, k=1, metrics=["precision"], backend=backend)
    assert one.excluded.schema == schema and one.excluded.height == 0
    both = rankwise.evaluate({"a": recs, "b": recs}, truth, k=1, metrics=["precision"], backend=backend)
    assert both.excluded.schema == {"run": pl.String, **schema} and both.excluded.height == 0
    # user 3 has labels only: outside users='intersection' (by hand, one user), the only row
    conv = rankwise.Convention(users="intersection")
    res = rankwise.evaluate(recs, truth.vstack(pl.DataFrame({"user": [3], "item": [10]})), k=1,
                            metrics=["precision"], convention=conv, backend=backend)
    assert res.excluded.select("code", "n_users").rows() == [("outside_users", 1)]


def test_segments_by_any_column_name():
    """A (user, country) table failed: the column had to be named 'segment'."""
    recs = pl.DataFrame({"user": [1, 2, 3], "item": [10, 10, 10], "rank": [1, 1, 1]})
    truth = pl.DataFrame({"user": [1, 2, 3], "item": [10, 11, 10], "country": ["fr", "de", "fr"]})
    users = pl.DataFrame({"user": [1, 2, 3], "country": ["fr", "de", "fr"], "age": [30, 40, 50]})
    # precision@1 by hand: users 1 and 3 (fr) hit, user 2 (de) misses
    expected = [("country", "de", 0.0, 1), ("country", "fr", 1.0, 2)]
    for segments in ((users, "country"), users.select("user", "country"), "country"):
        res = rankwise.evaluate(recs, truth if isinstance(segments, str) else truth.select("user", "item"), k=1,
                                metrics=["precision"], segments=segments)
        assert res.segments.select("segment_by", "segment", "value", "n_users").rows() == expected
    res = rankwise.evaluate(recs, truth, k=1, metrics=["precision"], segments=(users, "age"))
    assert res.segments.select("segment_by", "segment").rows() == [("age", "30"), ("age", "40"), ("age", "50")]
    with pytest.raises(rankwise.MissingColumnError, match=r"segments=\(table, 'country'\)") as info:
        rankwise.evaluate(recs, truth, k=1, segments=users)  # two candidate columns: name one
    with pytest.raises(rankwise.MissingColumnError, match="Did you mean 'country'"):
        rankwise.evaluate(recs, truth, k=1, segments=(users, "contry"))
    with pytest.raises(rankwise.ParameterError, match=r"\(table, column name\)"):
        rankwise.evaluate(recs, truth, k=1, segments=(users, "country", "age"))


def test_the_table_fits_the_width_in_blocks_of_whole_metrics():
    """Ten metrics printed ~290-character lines."""
    _, _, recs_a, truth = _inputs(1)
    _, _, recs_b, _ = _inputs(2)
    res = rankwise.evaluate({"pop": recs_a, "als": recs_b}, truth, k=[3, 5], metrics="all")
    for width in (80, 140):
        text = res.table().text(width=width)
        assert max(map(len, text.splitlines())) <= width
        blocks = [b.splitlines() for b in text.split("\n\n")[:-1]]  # the footnote last
        assert len(blocks) > 1 and all(b[0].startswith("run") and len(b) == 4 for b in blocks)
        shown = [c for b in blocks for c in b[0].split()[1:]]
        assert shown == [f"{m}@{k}" for m in rankwise.METRICS for k in (3, 5)]  # every column once, in order
        for block in blocks:  # a metric's columns stay together
            metrics = [c.split("@")[0] for c in block[0].split()[1:]]
            assert all(metrics.count(m) == 2 for m in metrics)
    one_line = res.table().text(width=10_000).split("\n\n")
    assert len(one_line) == 2  # wide enough: one block and the footnote
