"""Every bad input gets its typed error, naming the problem, showing rows, and giving a hint."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import rankwise

RECS = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rank": [1, 2, 1]})
TRUTH = pl.DataFrame({"user": [1, 2], "item": [11, 12], "relevance": [1.0, 2.0]})


def _raises(error, recs=RECS, truth=TRUTH, match=None, **kwargs):
    with pytest.raises(error, match=match) as info:
        rankwise.evaluate(recs, truth, **{"k": 5, **kwargs})
    assert "Hint:" in str(info.value)
    return str(info.value)


def test_missing_column_lists_what_was_found():
    msg = _raises(rankwise.MissingColumnError, recs=RECS.rename({"item": "product"}), match="item")
    assert "product" in msg  # shows the columns that were found


def test_missing_rank_and_score():
    _raises(rankwise.MissingColumnError, recs=RECS.drop("rank"), match="rank")


def test_custom_column_names_work():
    recs = RECS.rename({"user": "u", "item": "i", "rank": "pos"})
    truth = TRUTH.rename({"user": "u", "item": "i", "relevance": "grade"})
    res = rankwise.evaluate(recs, truth, k=2, metrics=["precision"], user_col="u", item_col="i",
                            rank_col="pos", relevance_col="grade")
    assert res.per_user.columns == ["u", "precision@2"]


@pytest.mark.parametrize("column", ["user", "item"])
def test_nulls_in_ids(column):
    recs = RECS.with_columns(pl.when(pl.col("rank") == 2).then(None).otherwise(pl.col(column)).alias(column))
    msg = _raises(rankwise.NullValueError, recs=recs, match=column)
    assert "null" in msg


def test_null_in_ground_truth_user():
    truth = TRUTH.with_columns(user=pl.Series([1, None]))
    _raises(rankwise.NullValueError, truth=truth, match="user")


def test_same_item_twice_in_a_list():
    recs = pl.DataFrame({"user": [1, 1, 1], "item": [10, 11, 10], "rank": [1, 2, 3]})
    msg = _raises(rankwise.DuplicateItemError, recs=recs, match="repeat")
    assert "first_shift" in msg


def test_duplicates_first_shift_moves_later_items_up(backend):
    recs = pl.DataFrame({"user": [1, 1, 1], "item": [10, 10, 11], "rank": [1, 2, 3]})
    conv = rankwise.Convention(duplicates="first_shift")
    res = rankwise.evaluate(recs, TRUTH, k=2, metrics=["precision"], convention=conv, backend=backend)
    assert res.per_user.filter(pl.col("user") == 1)["precision@2"].item() == 0.5  # item 11 moved to rank 2


def test_duplicate_ranks():
    recs = pl.DataFrame({"user": [1, 1], "item": [10, 11], "rank": [1, 1]})
    _raises(rankwise.DuplicateRankError, recs=recs, match="share")


def test_rank_below_one():
    recs = pl.DataFrame({"user": [1, 1], "item": [10, 11], "rank": [0, 1]})
    _raises(rankwise.InvalidRankError, recs=recs, match=">= 1")


@pytest.mark.parametrize("k", [0, -1, 2.5, "5", [1, 0], [], True, 2**63, [1, True], b"5"])
def test_k_must_be_positive_integers(k):
    _raises(rankwise.ParameterError, k=k, match="k must be")


def test_k_none_is_the_default_cutoff_of_10():
    """k=None is evaluate()'s default (10): None leaves the cutoff to measures= when that is given."""
    recs = pl.DataFrame({"user": [1] * 12, "item": list(range(12)), "rank": list(range(1, 13))})
    truth = pl.DataFrame({"user": [1], "item": [11], "relevance": [1.0]})
    res = rankwise.evaluate(recs, truth, k=None, metrics=["hit_rate"])
    assert res.summary.select("k", "value").rows() == [(10, 0.0)]  # item 11 sits at rank 12: outside the top 10


@pytest.mark.parametrize("bad", [float("nan"), -1.0, float("inf")])
def test_bad_relevance(bad):
    truth = TRUTH.with_columns(relevance=pl.Series([1.0, bad]))
    _raises(rankwise.InvalidRelevanceError, truth=truth, match="relevance")


def test_duplicate_labels():
    truth = pl.DataFrame({"user": [1, 1], "item": [11, 11]})
    _raises(rankwise.DuplicateItemError, truth=truth, match="label")


def test_id_types_differ():
    truth = TRUTH.with_columns(pl.col("user").cast(pl.String))
    msg = _raises(rankwise.DtypeMismatchError, truth=truth, match="user")
    assert "String" in msg and "Int64" in msg


def test_integer_widths_are_widened_not_rejected(backend):
    truth = TRUTH.with_columns(pl.col("user").cast(pl.Int32), pl.col("item").cast(pl.UInt16))
    res = rankwise.evaluate(RECS, truth, k=2, metrics=["hit_rate"], backend=backend)
    assert res.per_user["hit_rate@2"].to_list() == [1.0, 0.0]


def test_unknown_metric():
    msg = _raises(rankwise.ParameterError, metrics=["precision", "nDCG@10x"], match="Unknown metric")
    assert "ndcg" in msg
    msg = _raises(rankwise.ParameterError, metrics=["novelity"], match="Unknown metric")
    assert "novelty" in msg and "personalization" in msg  # the beyond-accuracy names are listed too


def test_a_cutoff_in_a_metric_name_points_to_k():
    msg = _raises(rankwise.ParameterError, metrics=["ndcg@3"], match="Unknown metric 'ndcg@3'")
    assert "metrics=['ndcg'], k=3" in msg
    assert "k=10" in _raises(rankwise.ParameterError, metrics=["novelty@10"], match="Unknown metric")


def test_two_f_betas_in_one_call():
    _raises(rankwise.ParameterError, metrics=["f1", "f2"], match="One F-beta")


def test_two_spellings_of_one_f_beta_are_refused_not_half_summarised():
    # f1 and f1.0 each got a per-user column, but the summary kept one row under the last name
    msg = _raises(rankwise.ParameterError, metrics=["f1", "precision", "f1.0"], match="same metric")
    assert "'f1'" in msg and "'f1.0'" in msg
    _raises(rankwise.ParameterError, metrics=["f2", "f2.00"], match="same metric")


def test_an_f_beta_is_spelt_with_ascii_digits():
    _raises(rankwise.ParameterError, metrics=["f\u0662"], match="Unknown metric")  # an Arabic-Indic two


def test_unknown_backend_and_convention():
    _raises(rankwise.ParameterError, backend="oracle", match="backend")
    _raises(rankwise.ParameterError, convention="mlflow", match="convention")
    with pytest.raises(rankwise.ParameterError, match="gain"):
        rankwise.Convention(gain="cubic")


def test_unsupported_container():
    _raises(rankwise.UnsupportedInputError, recs={1, 2}, match="unsupported")


def test_list_form_user_twice():
    """A duplicate user row, not a duplicate item (it raised DuplicateItemError)."""
    recs = pl.DataFrame({"user": [1, 1], "item": [[10], [11]]})
    _raises(rankwise.DuplicateUserError, recs=recs, match="one row")
    truth = pl.DataFrame({"user": [2, 2], "item": [[12], [13]]})
    _raises(rankwise.DuplicateUserError, truth=truth, match="ground truth")


@pytest.mark.parametrize("rows, error, match", [
    # each case also breaks every later rule: the list checks run in the order stated in _checked_lists
    ([(None, [10]), (1, [10]), (1, [None, 11, 11])], rankwise.NullValueError, "'user' has 1 null"),
    ([(1, None), (1, [10]), (2, [None, 11, 11])], rankwise.NullValueError, "'item' has 1 null"),
    ([(1, [10]), (1, [10]), (2, [None, 11, 11])], rankwise.DuplicateUserError, "one row"),
    ([(1, [10]), (2, [None, 11, 11])], rankwise.NullValueError, "null item"),
    ([(1, [10]), (2, [11, 11])], rankwise.DuplicateItemError, "repeat an item"),
])
def test_list_checks_raise_the_first_broken_rule(rows, error, match):
    recs = pl.DataFrame(rows, schema={"user": pl.Int64, "item": pl.List(pl.Int64)}, orient="row")
    _raises(error, recs=recs, match=match)


def test_list_truth_checks_raise_the_first_broken_rule():
    schema = {"user": pl.Int64, "item": pl.List(pl.Int64), "relevance": pl.List(pl.Float64)}
    truth = pl.DataFrame([(1, [11, 11], [1.0]), (2, [12], [1.0])], schema=schema, orient="row")
    _raises(rankwise.InvalidRelevanceError, truth=truth, match="differ in length")
    _raises(rankwise.DuplicateItemError, truth=truth.with_columns(relevance=pl.Series([[1.0, 2.0], [1.0]])),
            match="repeat a")


def test_error_convention_for_users_without_labels():
    recs = pl.DataFrame({"user": [1, 3], "item": [10, 10], "rank": [1, 1]})
    conv = rankwise.Convention(users="union", empty_labels="error")  # user 3 is in the recommendations only
    msg = _raises(rankwise.UndefinedValueError, recs=recs, convention=conv, match="no relevant label")
    assert "3" in msg  # names the user


def test_error_convention_for_users_without_recommendations():
    conv = rankwise.Convention(empty_predictions="error")
    truth = pl.DataFrame({"user": [1, 9], "item": [11, 11]})
    _raises(rankwise.UndefinedValueError, truth=truth, convention=conv, match="no recommendation")


@pytest.mark.parametrize("backend_or_sql", ["polars", "duckdb", "sql"])
def test_k_ones_beyond_the_sql_slots_is_refused_everywhere(backend_or_sql):
    """ideal='k_ones' at k = 20000 gave 0.000555 on Polars and 0.001020 on DuckDB/Spark (10,000 SQL slots)."""
    conv = rankwise.Convention(ideal="k_ones")
    with pytest.raises(rankwise.ParameterError, match="k <= 10000") as info:
        if backend_or_sql == "sql":
            rankwise.sql(k=[5, 20000], convention=conv)
        else:
            rankwise.evaluate(RECS, TRUTH, k=[5, 20000], convention=conv, backend=backend_or_sql)
    assert "Hint:" in str(info.value)
    rankwise.evaluate(RECS, TRUTH, k=10000, convention=conv, metrics=["ndcg"])  # the limit itself is fine


def test_k_ones_limits_k_only_where_ndcg_is_asked_for(backend):
    """The ideal moves only ndcg: precision@20000 under rectools (ideal='k_ones') was refused for the
    ndcg limit (and compare_conventions dropped the rectools column at every k). Without ndcg, the values
    equal those under ideal='labels'; the rendered SQL takes the request too."""
    conv = rankwise.PRESETS["rectools"]
    asked = ["precision", "recall", "map", "hit_rate"]
    got = rankwise.evaluate(RECS, TRUTH, k=[5, 20000], metrics=asked, convention=conv, backend=backend)
    want = rankwise.evaluate(RECS, TRUTH, k=[5, 20000], metrics=asked, convention=conv.replace(ideal="labels"),
                             backend="polars")
    assert_frame_equal(got.per_user, want.per_user, rel_tol=1e-12)
    assert_frame_equal(got.summary, want.summary, rel_tol=1e-12)
    assert "precision" in rankwise.sql(metrics=["precision"], k=[5, 20000], convention=conv)
    assert rankwise.expr.precision("r", "t", k=20000, convention=conv) is not None
    with pytest.raises(rankwise.ParameterError, match="k <= 10000"):
        rankwise.evaluate(RECS, TRUTH, k=[5, 20000], metrics=["precision", "ndcg"], convention=conv, backend=backend)


def test_an_empty_metrics_list_is_a_parameter_error():
    """It raised Polars' raw ComputeError ("cannot return empty fold")."""
    with pytest.raises(rankwise.ParameterError, match="metrics is empty") as info:
        rankwise.evaluate(RECS, TRUTH, k=1, metrics=[])
    # a hint that reads on the command line too (it said metrics=None, a Python value)
    assert "leave metrics out" in info.value.hint and "None" not in info.value.hint
    assert "f0.5" in _raises(rankwise.ParameterError, metrics=["f0"], match="beta > 0")


def test_a_beyond_metric_without_its_input_says_what_to_pass():
    train = pl.DataFrame({"user": [7], "item": [10]})
    with pytest.raises(rankwise.ParameterError, match="needs ground_truth, which was not given[.]") as info:
        rankwise.evaluate(RECS, None, k=1, metrics=["serendipity"], train=train)
    assert "ground_truth=" in info.value.hint and "the TRUTH argument" in info.value.hint  # no --ground-truth flag
    with pytest.raises(rankwise.ParameterError, match="needs train, which was not given [(]or empty[)]"):
        rankwise.evaluate(RECS, None, k=1, metrics=["novelty"], train=train.clear())


@pytest.mark.parametrize("user_col", ["k", "n_rel", "run", "ndcg", "novelty", "precision@3"])
def test_a_user_column_named_like_an_output_column_is_a_parameter_error(user_col):
    """The user column is a column of the per-user frames beside k, n_recs, n_rel, run and the metric
    columns: such a name raised Polars' DuplicateError or ColumnNotFoundError (the CLI: internal error)."""
    frame = pl.DataFrame({user_col: [1], "item": [1], "rank": [1]})
    with pytest.raises(rankwise.ParameterError, match="collide"):
        rankwise.evaluate(frame, frame.drop("rank"), k=1, user_col=user_col)


@pytest.mark.parametrize("relevance", [[[1.0], None], [1.0, 2.0]])
def test_a_list_form_relevance_that_is_null_or_not_a_list_is_an_invalid_relevance_error(relevance):
    """A null relevance list, or one number per user instead of a list, leaked Polars' ShapeError /
    InvalidOperationError."""
    recs = pl.DataFrame({"user": [1, 2], "item": [["a", "x"], ["c"]]})
    truth = pl.DataFrame({"user": [1, 2], "item": [["a"], ["c"]], "relevance": relevance})
    with pytest.raises(rankwise.InvalidRelevanceError, match="'relevance'"):
        rankwise.evaluate(recs, truth, k=1)


def test_a_lazyframe_whose_scan_cannot_read_its_file_is_an_input_file_error(tmp_path):
    """pl.scan_parquet of a missing file failed at collect with a raw FileNotFoundError."""
    frame = pl.DataFrame({"user": [1], "item": [1], "rank": [1]})
    with pytest.raises(rankwise.InputFileError, match="recommendations: the LazyFrame"):
        rankwise.evaluate(pl.scan_parquet(tmp_path / "missing.parquet"), frame.drop("rank"), k=1)
    with pytest.raises(rankwise.InputFileError, match="ground truth: the LazyFrame"):
        rankwise.evaluate(frame, pl.scan_csv(tmp_path / "missing.csv"), k=1)


def test_a_non_integer_rank_column_shows_the_rows_that_are_not_whole_numbers():
    """'must be integer, got String' showed no row: in a CSV with one bad value, which one?"""
    recs = pl.DataFrame({"user": [1, 1, 2], "item": ["a", "b", "c"], "rank": ["1", "x", "1"]})
    with pytest.raises(rankwise.InvalidRankError) as info:
        rankwise.evaluate(recs, pl.DataFrame({"user": [1], "item": ["a"]}), k=1)
    assert info.value.rows is not None and info.value.rows["rank"].to_list() == ["x"]
    # NaN and infinity are not whole numbers either (NaN != floor(NaN) is false: every row was shown)
    recs = pl.DataFrame({"user": [1, 1, 2, 2], "item": [1, 2, 3, 4], "rank": [1.0, float("nan"), 1.0, float("inf")]})
    with pytest.raises(rankwise.InvalidRankError) as info:
        rankwise.evaluate(recs, pl.DataFrame({"user": [1], "item": [1]}), k=1)
    assert info.value.rows["item"].to_list() == [2, 4]


def test_an_empty_untyped_pandas_frame_says_why_its_rank_is_float():
    import pandas as pd

    empty = pd.DataFrame({"user": [], "item": [], "rank": []})  # pandas makes these float64
    with pytest.raises(rankwise.InvalidRankError) as info:
        rankwise.evaluate(empty, TRUTH, k=1)
    assert "empty pandas column is float64" in info.value.hint
    typed = empty.astype({"user": "int64", "item": "int64", "rank": "int64"})
    assert rankwise.evaluate(typed, TRUTH, k=1, metrics=["precision"]).summary["n_users"].to_list() == [
        TRUTH["user"].n_unique()]


# -- messages and guards (issue 37) ----------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "suggested"), [
    ({"metrics": ["ndgc"]}, "'ndcg'"),
    ({"metrics": ["Recal"]}, "'recall'"),
    ({"metrics": ["novelti"]}, "'novelty'"),
    ({"convention": "ranks"}, "'ranx'"),
    ({"backend": "duckbd"}, "'duckdb'"),
])
def test_an_unknown_name_suggests_the_closest(kwargs, suggested):
    """metrics=['ndgc'] listed every known name but did not say which was meant."""
    msg = _raises(rankwise.ParameterError, **kwargs)
    assert f"Did you mean {suggested}" in msg  # first: the closest ('recall', then 'set_recall')


def test_an_unknown_knob_or_option_suggests_the_closest():
    with pytest.raises(rankwise.ParameterError, match="Did you mean [^?]*'gain'"):
        rankwise.PRESETS["default"].replace(gian="linear")
    res = rankwise.evaluate({"a": RECS, "b": RECS}, TRUTH, k=2, metrics=["precision"])
    with pytest.raises(rankwise.ParameterError, match="Did you mean 'holm'"):
        res.compare(correction="hollm")
    with pytest.raises(rankwise.ParameterError, match="Did you mean 'precision'"):
        res.compare(metrics=["precison"])


def test_a_name_close_to_nothing_gets_no_suggestion():
    msg = _raises(rankwise.ParameterError, metrics=["zzzz"])
    assert "Did you mean" not in msg and "Known metrics" in msg


def _cutoff_warnings(caught):
    return [str(w.message) for w in caught if issubclass(w.category, rankwise.errors.CutoffWarning)]


def test_k_above_every_list_warns_once_naming_the_longest_list(backend):
    """k = 100 on 4-item lists gave P@100 = 0.01 without a word."""
    import warnings

    recs = pl.DataFrame({"user": [1, 1, 1, 1, 2, 2], "item": [10, 11, 12, 13, 10, 11], "rank": [1, 2, 3, 4, 1, 2]})
    truth = pl.DataFrame({"user": [1, 2, 2], "item": [11, 10, 99]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = rankwise.evaluate(recs, truth, k=[2, 50, 100], metrics=["precision"], backend=backend)
    (message,) = _cutoff_warnings(caught)  # once, for every k above
    assert "k = 50, 100" in message and "the longest list has 4 items" in message
    # by hand: one hit per user, divided by k = 100
    assert res.summary.filter(pl.col("k") == 100)["value"].item() == pytest.approx(0.01)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rankwise.evaluate(recs, truth, k=[2, 4], metrics=["precision"], backend=backend)  # 4: the longest list
    assert _cutoff_warnings(caught) == []


def test_k_above_every_list_of_one_run_names_that_run():
    import warnings

    long = pl.DataFrame({"user": [1, 1, 1, 1], "item": [10, 11, 12, 13], "rank": [1, 2, 3, 4]})
    short = long.filter(pl.col("rank") <= 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rankwise.evaluate({"long": long, "short": short}, pl.DataFrame({"user": [1], "item": [11]}), k=3,
                          metrics=["precision"])
    (message,) = _cutoff_warnings(caught)
    assert "k = 3 in run 'short' (the longest list has 2 items)" in message and "'long'" not in message
    assert caught[0].filename == __file__  # points at the caller's line, not inside rankwise
