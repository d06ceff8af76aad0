"""Inputs a careless or hostile user passes (issue 15): each gives a typed error with a hint, or a
correct result, never a silently wrong number or a raw exception. Expected values are by hand."""

from __future__ import annotations

import datetime
import math

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import rankwise
from rankwise import api
from rankwise.engines import engine
from rankwise.engines.duckdb import select as duckdb_select
from rankwise.inputs import normalize as _inputs

# user 1: [10, 11] with 11 relevant; user 2: [10] with 12 relevant (not recommended)
RECS = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rank": [1, 2, 1]})
TRUTH = pl.DataFrame({"user": [1, 2], "item": [11, 12], "relevance": [1.0, 2.0]})
HIT_RATE_2 = [1.0, 0.0]  # users 1, 2

# Most cases here are decided before an engine runs (the same Python validation for every backend).
# On the slow backends (Spark, PostgreSQL) only the tests of what an engine itself does run, each on
# its first case (tests/conftest.py; --spark-heavy runs everything everywhere)
ONE_CASE_ON_SLOW_BACKENDS = True
SLOW_BACKEND_TESTS = {
    "test_exp2_overflow_is_an_error_on_every_engine", "test_a_mean_that_overflows_is_an_error",
    "test_overflow_in_a_metric_not_requested_is_not_an_error", "test_numpy_numbers_are_knob_values",
    "test_an_empty_list_is_a_user_without_items", "test_unjudged_users_have_their_own_reason",
    "test_excluded_codes_for_every_rule", "test_uint64_ids_on_both_sides_work",
    "test_int128_ids_that_fit_int64_work_on_every_backend", "test_the_largest_k",
    "test_bad_memory_limit_is_a_parameter_error_on_every_backend", "test_memory_limit_runs",
}


def _raises(error, recs=RECS, truth=TRUTH, match=None, **kwargs) -> str:
    with pytest.raises(error, match=match) as info:
        rankwise.evaluate(recs, truth, **{"k": 2, **kwargs})
    assert "Hint:" in str(info.value)
    return str(info.value)


# -- scores --------------------------------------------------------------------------------------

SCORED = pl.DataFrame({"user": [1, 1, 1], "item": [1, 2, 3]})
SCORED_TRUTH = pl.DataFrame({"user": [1], "item": [2]})  # item 2 has the top score, 10


def test_numeric_scores_rank_the_top_score_first(backend):
    recs = SCORED.with_columns(score=pl.Series([9, 10, 2]))
    res = rankwise.evaluate(recs, SCORED_TRUTH, k=1, metrics=["precision"], backend=backend)
    assert res.per_user["precision@1"].to_list() == [1.0]


@pytest.mark.parametrize("scores", [
    pl.Series(["9", "10", "2"]),  # as text "9" > "10": precision@1 was 0
    pl.Series([True, False, True]),
    pl.Series([datetime.date(2024, 1, d) for d in (1, 2, 3)]),
], ids=["text", "boolean", "date"])
def test_non_numeric_scores_are_refused(scores, backend):
    msg = _raises(rankwise.InvalidScoreError, recs=SCORED.with_columns(score=scores), truth=SCORED_TRUTH,
                  match="'score' must be numeric", backend=backend)
    assert "cast" in msg.lower() and "Offending rows" in msg


# -- CSV ids -------------------------------------------------------------------------------------


def test_csv_item_ids_are_text(tmp_path, backend):
    """Item 007 in one file and 7 in the other were inferred as integers: a hit that does not exist."""
    (tmp_path / "r.csv").write_text("user,item,rank\nu1,007,1\n")
    (tmp_path / "t.csv").write_text("user,item\nu1,7\n")
    res = rankwise.evaluate(str(tmp_path / "r.csv"), str(tmp_path / "t.csv"), k=1, metrics=["precision"],
                            backend=backend)
    assert res.per_user["precision@1"].to_list() == [0.0]


def test_csv_user_ids_are_text(tmp_path, backend):
    """Users 001 and 1 were merged into one user (one list of two items)."""
    (tmp_path / "r.csv").write_text("user,item,rank\n001,5,1\n1,6,2\n")
    (tmp_path / "t.csv").write_text("user,item\n001,5\n1,6\n")
    res = rankwise.evaluate(str(tmp_path / "r.csv"), str(tmp_path / "t.csv"), k=1, metrics=["precision"],
                            backend=backend)
    assert res.per_user.schema["user"] == pl.String
    assert res.per_user.sort("user").rows() == [("001", 1.0), ("1", 1.0)]  # 6 moves up to position 1
    assert res.summary["n_users"].to_list() == [2]


def test_csv_against_integer_parquet_says_how_to_proceed(tmp_path):
    (tmp_path / "r.csv").write_text("user,item,rank\n1,10,1\n")
    TRUTH.write_parquet(tmp_path / "t.parquet")
    msg = _raises(rankwise.DtypeMismatchError, recs=str(tmp_path / "r.csv"), truth=str(tmp_path / "t.parquet"))
    assert "CSV" in msg and "schema_overrides" in msg and "cast(pl.String)" in msg and "command line" in msg


# -- non-finite values ---------------------------------------------------------------------------


def test_exp2_overflow_is_an_error_on_every_engine(backend):
    """2^2000 is inf as a double: DCG was inf, NDCG NaN, counted in n_users, the mean NaN."""
    truth = TRUTH.with_columns(relevance=pl.Series([2000.0, 1.0]))
    msg = _raises(rankwise.NumericOverflowError, truth=truth, metrics=["ndcg", "dcg"], backend=backend,
                  convention=rankwise.Convention(gain="exp2"))
    assert "gain='linear'" in msg and "ndcg" in msg and "dcg" in msg
    # the same labels with linear gain: user 1's hit at position 2 earns 2000 / log_e(3)
    res = rankwise.evaluate(RECS, truth, k=2, metrics=["dcg"], backend=backend,
                            convention=rankwise.Convention(gain="linear", log_base=math.e))
    assert res.per_user["dcg@2"].to_list() == pytest.approx([2000 / math.log(3), 0.0], rel=1e-12)


def test_a_mean_that_overflows_is_an_error(backend):
    """Each user's DCG@1 = 1e308 / ln 2 is finite; their sum, and so the engines' mean, is not."""
    recs = pl.DataFrame({"user": [1, 2], "item": [10, 10], "rank": [1, 1]})
    truth = pl.DataFrame({"user": [1, 2], "item": [10, 10], "relevance": [1e308, 1e308]})
    msg = _raises(rankwise.NumericOverflowError, recs=recs, truth=truth, k=1, metrics=["dcg"], backend=backend,
                  convention=rankwise.Convention(gain="linear"), match="summary mean")
    assert "dcg" in msg


def test_overflow_in_a_metric_not_requested_is_not_an_error(backend):
    """Relevance 2000 under gain='exp2' overflows DCG's gain; hit_rate alone is asked for."""
    truth = TRUTH.with_columns(relevance=pl.Series([2000.0, 1.0]))
    exp2 = rankwise.Convention(gain="exp2")
    if backend == "postgres":  # PostgreSQL raises on a float overflow anywhere in the query (README)
        _raises(rankwise.NumericOverflowError, truth=truth, metrics=["hit_rate"], backend=backend, convention=exp2)
        return
    res = rankwise.evaluate(RECS, truth, k=2, metrics=["hit_rate"], backend=backend, convention=exp2)
    assert res.per_user["hit_rate@2"].to_list() == HIT_RATE_2


@pytest.mark.parametrize("knob,value", [
    ("log_base", float("inf")), ("log_base", float("nan")), ("log_base", "2"), ("log_base", True),
    ("log_base", 1.0), ("min_score", float("nan")), ("min_score", float("inf")), ("min_score", "0.5"),
    ("relevance_threshold", float("nan")), ("relevance_threshold", float("inf")), ("relevance_threshold", -1.0),
    ("relevance_threshold", True),
])
def test_numeric_knobs_are_finite_numbers(knob, value):
    """log_base=inf was accepted (every DCG inf) and min_score=NaN emptied every list; the SQL renderer
    refused inf on its own. Now the Convention refuses them, for evaluate() and rankwise.sql alike."""
    with pytest.raises(rankwise.ParameterError, match=knob) as info:
        rankwise.Convention(**{knob: value})
    assert "Hint:" in str(info.value)
    with pytest.raises(rankwise.ParameterError, match=knob):
        rankwise.PRESETS["default"].replace(**{knob: value})


def test_numpy_numbers_are_knob_values(backend):
    conv = rankwise.Convention(log_base=np.float32(2.0), relevance_threshold=np.int64(1))
    res = rankwise.evaluate(RECS, TRUTH, k=2, metrics=["dcg"], backend=backend, convention=conv)
    # user 1: relevance 1, default gain exp2 -> 2^1 - 1 = 1 at position 2: 1 / log2(3)
    assert res.per_user["dcg@2"].to_list() == pytest.approx([1 / math.log2(3), 0.0], rel=1e-12)


# -- list form -----------------------------------------------------------------------------------


@pytest.mark.parametrize("items", [[None], [10, None]])
def test_a_null_in_a_list_is_an_error(items, backend):
    """[None] was silently an empty list ([10, None] was already an error)."""
    recs = pl.DataFrame({"user": [1, 2], "item": [items, [10]]})
    _raises(rankwise.NullValueError, recs=recs, match="null item", backend=backend)


def test_an_empty_list_is_a_user_without_items(backend):
    recs = pl.DataFrame({"user": [1, 2], "item": [[10, 11], []]}, schema={"user": pl.Int64, "item": pl.List(pl.Int64)})
    res = rankwise.evaluate(recs, TRUTH, k=2, metrics=["hit_rate"], backend=backend)
    assert res.per_user["hit_rate@2"].to_list() == HIT_RATE_2


# -- paths are read literally --------------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["*", "?"])
def test_glob_characters_in_a_path_are_literal(tmp_path, pattern, backend):
    """recs*.parquet also read recsX.parquet (every file the glob matched), on both engines."""
    recs_path, truth_path = tmp_path / f"recs{pattern}.parquet", tmp_path / f"truth{pattern}.parquet"
    pl.DataFrame({"user": [1], "item": [10], "rank": [1]}).write_parquet(recs_path)
    pl.DataFrame({"user": [2], "item": [20], "rank": [1]}).write_parquet(tmp_path / "recsX.parquet")
    pl.DataFrame({"user": [1, 2], "item": [10, 20]}).write_parquet(truth_path)
    pl.DataFrame({"user": [3], "item": [30]}).write_parquet(tmp_path / "truthX.parquet")
    res = rankwise.evaluate(str(recs_path), str(truth_path), k=1, metrics=["precision"], backend=backend)
    # user 2 has no recommendation in the literal file: precision 0 (empty_predictions='zero'); no user 3
    assert res.per_user.rows() == [(1, 1.0), (2, 0.0)]


@pytest.mark.parametrize("directory, name", [("parts", "a[1].parquet"), ("parts[x]", "a.parquet"),
                                             ("parts", "sub[1]/a.parquet")])
def test_glob_characters_in_a_directorys_files_are_literal(tmp_path, directory, name, backend):
    """A Parquet directory whose path or files hold [ ] was "cannot be read as one table"."""
    (tmp_path / directory / name).parent.mkdir(parents=True)
    pl.DataFrame({"user": [1], "item": [10], "rank": [1]}).write_parquet(tmp_path / directory / name)
    pl.DataFrame({"user": [2], "item": [20], "rank": [1]}, schema={"user": pl.Int32, "item": pl.Int64,
                                                                   "rank": pl.Int64}).write_parquet(tmp_path / directory / "b.parquet")
    res = rankwise.evaluate(str(tmp_path / directory), pl.DataFrame({"user": [1, 2], "item": [10, 21]}), k=1,
                            metrics=["precision"], backend=backend)
    assert res.per_user.rows() == [(1, 1.0), (2, 0.0)]


def test_duckdb_reads_a_glob_path_itself_and_literally(tmp_path):
    """The DuckDB source (read_parquet on the file) brackets the glob characters."""
    path = tmp_path / "r*[1]?.parquet"
    pl.DataFrame({"user": [1], "item": [10], "rank": [1]}).write_parquet(path)
    pl.DataFrame({"user": [2], "item": [20], "rank": [1]}).write_parquet(tmp_path / "rX1Y.parquet")
    prep = _inputs.prepare(str(path), TRUTH, _inputs.Columns(), rankwise.Convention())
    assert duckdb.sql(duckdb_select(prep.sources["recommendations"])).fetchall() == [(1, 1, 10)]


def test_a_key_value_directory_in_the_path_is_not_a_column(tmp_path, backend):
    """A file under ``user=7/`` holds users 1 and 2: DuckDB's Hive partitioning made every row user 7.
    By hand: each user's label is its second item, inside k = 2: recall 1 for users 1 and 2."""
    path = tmp_path / "user=7" / "recs.parquet"
    path.parent.mkdir()
    pl.DataFrame({"user": [1, 1, 2, 2], "item": [10, 11, 20, 21], "rank": [1, 2, 1, 2]}).write_parquet(path)
    truth = pl.DataFrame({"user": [1, 2], "item": [11, 21]})
    res = rankwise.evaluate(str(path), truth, k=2, metrics=["recall"], backend=backend)
    assert res.per_user.sort("user").rows() == [(1, 1.0), (2, 1.0)]


def test_columns_that_differ_only_in_case_are_not_confused(tmp_path, backend):
    """DuckDB binds names without regard to case: given relevance_col="Relevance" beside a "relevance"
    column, it read the other one (both users relevant). By hand, with "Relevance": user 1's label
    has relevance 0 (no relevant label: undefined, left out); user 2's, relevance 3, sits at rank 2:
    DCG = 7 / ln 3, ideal (the recommended gains sorted) 7 / ln 2, NDCG@2 = ln 2 / ln 3, one user."""
    recs, truth = tmp_path / "r.parquet", tmp_path / "t.parquet"
    pl.DataFrame({"user": [1, 1, 2, 2], "item": [10, 11, 20, 21], "rank": [1, 2, 1, 2]}).write_parquet(recs)
    pl.DataFrame({"user": [1, 2], "item": [11, 21], "relevance": [1, 1], "Relevance": [0, 3]}).write_parquet(truth)
    res = rankwise.evaluate(str(recs), str(truth), k=2, metrics=["ndcg"], relevance_col="Relevance", backend=backend,
                            convention="recommended_ideal")  # the rules of the hand values above
    assert res.summary.select("value", "n_users").rows() == [(pytest.approx(math.log(2) / math.log(3), rel=1e-12), 1)]


def test_a_csv_score_or_relevance_that_turns_decimal_late_is_read(tmp_path, backend):
    """Polars infers a CSV column's type from its first 100 rows: integer scores and relevances, then
    0.5 in row 151, failed to parse. The files must give what the same rows give as DataFrames."""
    recs = pl.DataFrame({"user": list(range(150)) + [1], "item": list(range(150)) + [999],
                         "score": [1.0] * 150 + [0.5]})
    truth = recs.rename({"score": "relevance"})
    for name, frame in (("r.csv", recs), ("t.csv", truth)):  # integers first, as a user writes them
        rows = [f"{u},{i},{v:g}" for u, i, v in frame.iter_rows()]
        (tmp_path / name).write_text("\n".join([",".join(frame.columns), *rows]) + "\n")
    got = rankwise.evaluate(str(tmp_path / "r.csv"), str(tmp_path / "t.csv"), k=2, metrics=["ndcg"], backend=backend)
    want = rankwise.evaluate(recs.with_columns(pl.col("user", "item").cast(pl.String)),
                             truth.with_columns(pl.col("user", "item").cast(pl.String)), k=2, metrics=["ndcg"])
    assert got.summary.rows() == want.summary.rows()


# -- excluded ------------------------------------------------------------------------------------


def _excluded(res) -> list[tuple]:
    return res.excluded.rows()


def test_unjudged_users_have_their_own_reason(backend):
    """User 2 is in both inputs with no label: under unjudged='drop' it was counted as 'in one input only'."""
    recs = pl.DataFrame({"user": [1, 2], "item": [[10], [10]]})
    truth = pl.DataFrame({"user": [1, 2], "item": [[10], []]}, schema={"user": pl.Int64, "item": pl.List(pl.Int64)})
    res = rankwise.evaluate(recs, truth, k=1, metrics=["precision"], backend=backend,
                            convention=rankwise.Convention(unjudged="drop"))
    assert _excluded(res) == [("unjudged", "no judged item (unjudged='drop')", 1)]  # no zero rows


def test_excluded_codes_for_every_rule(backend):
    # user 1: hit; user 2: labels, no recommendation; user 3: recommendations only; user 4: only a
    # zero-relevance label (judged, nothing relevant); user 5: a miss, so the ideal of its top 1 is 0
    recs = pl.DataFrame({"user": [1, 3, 5], "item": [10, 10, 20], "rank": [1, 1, 1]})
    truth = pl.DataFrame({"user": [1, 2, 4, 5], "item": [10, 10, 10, 10], "relevance": [1.0, 1.0, 0.0, 1.0]})
    conv = rankwise.Convention(users="labels", unjudged="drop", empty_labels="nan", empty_predictions="nan",
                               ideal="predictions_topk", zero_ideal="nan")  # the ideal of user 5's top 1
    res = rankwise.evaluate(recs, truth, k=1, metrics=["ndcg"], backend=backend, convention=conv)
    assert res.excluded.columns == ["code", "reason", "n_users"]
    assert [(code, n) for code, _, n in _excluded(res)] == [
        ("outside_users", 1), ("no_labels", 1), ("no_predictions", 1), ("zero_ideal", 1)]  # unjudged: 0, no row
    assert res.summary["n_users"].to_list() == [1]  # user 1 only


# -- ids -----------------------------------------------------------------------------------------


def test_uint64_ids_above_int64_against_signed_ids():
    recs = RECS.with_columns(pl.Series("user", [2**63 + 5, 2**63 + 5, 2], dtype=pl.UInt64))
    msg = _raises(rankwise.DtypeMismatchError, recs=recs, match="UInt64")
    assert str(2**63 + 5) in msg and "pl.String" in msg


def test_uint64_ids_on_both_sides_work(backend):
    big = 2**63 + 5
    recs = RECS.with_columns(pl.Series("user", [big, big, 2], dtype=pl.UInt64))
    truth = TRUTH.with_columns(pl.Series("user", [big, 2], dtype=pl.UInt64))
    res = rankwise.evaluate(recs, truth, k=2, metrics=["hit_rate"], backend=backend)
    assert res.per_user.rows() == [(2, 0.0), (big, 1.0)]


def test_int128_ids_that_fit_int64_work_on_every_backend(backend):
    recs, truth = RECS.with_columns(pl.col("user").cast(pl.Int128)), TRUTH.with_columns(pl.col("user").cast(pl.Int128))
    res = rankwise.evaluate(recs, truth, k=2, metrics=["hit_rate"], backend=backend)
    assert res.per_user["hit_rate@2"].to_list() == HIT_RATE_2


def test_int128_ids_beyond_int64_are_refused(backend):
    recs = RECS.with_columns(pl.Series("item", [2**70, 11, 10], dtype=pl.Int128))
    msg = _raises(rankwise.DtypeMismatchError, recs=recs, match="Int128", backend=backend)
    assert str(2**70) in msg


def test_pandas_object_column_mixing_types():
    recs = pd.DataFrame({"user": [1, "1", 2], "item": [10, 11, 10], "rank": [1, 2, 1]})
    msg = _raises(rankwise.DtypeMismatchError, recs=recs, match="'user' mixes Python types")
    assert "int" in msg and "str" in msg


def test_duplicate_column_names():
    recs = pd.DataFrame([[1, 10, 1, 5]], columns=["user", "item", "rank", "user"])
    _raises(rankwise.UnsupportedInputError, recs=recs, match="'user'")
    table = pa.table([pa.array([1]), pa.array([11]), pa.array([12])], names=["user", "item", "item"])
    _raises(rankwise.UnsupportedInputError, truth=table, match="'item'")


def test_arrow_readers_and_datasets_are_tables_other_arrow_objects_typed_errors():
    """A RecordBatchReader or a pyarrow.dataset raised AttributeError: no attribute 'column_names'."""
    import pyarrow.dataset as ds

    table = RECS.to_arrow()
    for data in (table.to_reader(), ds.dataset(table)):
        res = rankwise.evaluate(data, TRUTH, k=2, metrics=["hit_rate"])
        assert res.per_user["hit_rate@2"].to_list() == HIT_RATE_2
    _raises(rankwise.UnsupportedInputError, recs=pa.array([1, 2]), match="not a table")


def test_a_dict_of_columns_is_not_taken_for_runs():
    """{"user": [...], ...} was read as runs named user, item, rank: 'unsupported input type list'."""
    _raises(rankwise.ParameterError, recs=RECS.to_dict(as_series=False), match="columns of values")


def test_fixed_size_arrays_of_items_are_list_form(backend):
    """A pl.Array item column (rows of a 2-D numpy array) is list form; it was 'need a rank or a score
    column'. Users 1 and 2 list [10, 11] and [10, 12]: by hand, hit_rate@2 is 1 (11) and 1 (12)."""
    recs = pl.DataFrame({"user": [1, 2], "item": np.array([[10, 11], [10, 12]])})
    assert isinstance(recs.schema["item"], pl.Array)
    res = rankwise.evaluate(recs, TRUTH, k=2, metrics=["hit_rate"], backend=backend)
    assert res.per_user["hit_rate@2"].to_list() == [1.0, 1.0]


def test_a_repeated_csv_header_is_refused_like_a_repeated_frame_column(tmp_path):
    """Polars renames a CSV's second 'rank' to 'rank_duplicated_0', so the file was read with the
    first: as with pandas and Arrow, the repeat is an UnsupportedInputError naming it."""
    path = tmp_path / "r.csv"
    path.write_text("user,item,rank,rank\n1,10,1,2\n")
    _raises(rankwise.UnsupportedInputError, recs=str(path), match="'rank'")


@pytest.mark.parametrize("names", [
    {"user_col": "item"}, {"item_col": "user"}, {"rank_col": "score"}, {"relevance_col": "user"},
    {"user_col": "u", "item_col": "u"},
])
def test_two_roles_cannot_share_a_column(names):
    _raises(rankwise.ParameterError, match="same column", **names)


def test_column_names_are_strings():
    _raises(rankwise.ParameterError, user_col=0, match="user_col")


def test_empty_column_name_with_parquet(tmp_path, backend):
    """DuckDB read the file itself and failed to parse CAST("" AS ...)."""
    RECS.rename({"user": ""}).write_parquet(tmp_path / "r.parquet")
    TRUTH.rename({"user": ""}).write_parquet(tmp_path / "t.parquet")
    res = rankwise.evaluate(str(tmp_path / "r.parquet"), str(tmp_path / "t.parquet"), k=2, metrics=["hit_rate"],
                            backend=backend, user_col="")
    assert res.per_user.rows() == [(1, 1.0), (2, 0.0)]


# -- k and memory_limit --------------------------------------------------------------------------


@pytest.mark.parametrize("k", [np.int64(2), np.array([2]), [np.int32(2)], np.uint8(2), (2,)])
def test_numpy_integers_are_k(k, backend):
    res = rankwise.evaluate(RECS, TRUTH, k=k, metrics=["hit_rate"], backend=backend)
    assert res.per_user.columns == ["user", "hit_rate@2"] and res.per_user["hit_rate@2"].to_list() == HIT_RATE_2


@pytest.mark.parametrize("k", [2**63, 2**31, [5, 2**40], np.bool_(True), np.float64(2.0), np.array([[2]])])
def test_k_beyond_the_maximum_or_not_an_integer(k):
    _raises(rankwise.ParameterError, k=k, match="k must be")


def test_the_largest_k(backend):
    res = rankwise.evaluate(RECS, TRUTH, k=2**31 - 1, metrics=["hit_rate"], backend=backend)
    assert res.per_user["hit_rate@2147483647"].to_list() == HIT_RATE_2


@pytest.mark.parametrize("limit", ["abc", 0, 10**30, -5, True, "2 XB", "1MB", 2.5e9, "-2GB", ""])
def test_bad_memory_limit_is_a_parameter_error_on_every_backend(limit, backend):
    _raises(rankwise.ParameterError, memory_limit=limit, match="memory_limit", backend=backend)


@pytest.mark.parametrize("text,size", [
    ("2GB", 2 * 10**9), ("512MiB", 512 * 2**20), ("1.5 GB", 1_500_000_000), ("64mib", 64 * 2**20),
    (2**30, 2**30), (np.int64(2**30), 2**30), ("1000000000", 10**9), ("1TiB", 2**40),
])
def test_memory_limit_sizes(text, size):
    assert api.memory_bytes(text, engine("duckdb")) == size


@pytest.mark.parametrize("limit", ["2GB", "512MiB", "1.5 GB", 2**30])
def test_memory_limit_runs(limit, backend):
    if not engine(backend).capabilities.memory_limit:
        with pytest.raises(rankwise.ParameterError, match="memory_limit"):
            rankwise.evaluate(RECS, TRUTH, k=2, backend=backend, memory_limit=limit)
        return
    res = rankwise.evaluate(RECS, TRUTH, k=2, metrics=["hit_rate"], backend=backend, memory_limit=limit)
    assert res.per_user["hit_rate@2"].to_list() == HIT_RATE_2


# -- file inputs ---------------------------------------------------------------------------------


def _corrupt_parquet(path):
    """A valid footer and a zstd page of zeros: readable schema, the error only at collect time."""
    pl.DataFrame({"user": range(20_000), "item": range(20_000), "rank": [1] * 20_000}).write_parquet(
        path, compression="zstd", statistics=False)
    data = bytearray(path.read_bytes())
    data[60:400] = bytes(340)
    path.write_bytes(bytes(data))


def _make(tmp_path, case: str, side: str) -> str:
    """Create the broken input ``case`` in tmp_path; return its path relative to tmp_path."""
    if case == "missing":
        return "missing.parquet"
    if case == "directory without parquet":
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "a.csv").write_text("user,item\n1,2\n")
        return "d"
    if case == "truncated parquet":
        RECS.write_parquet(tmp_path / "x.parquet")
        data = (tmp_path / "x.parquet").read_bytes()
        (tmp_path / "x.parquet").write_bytes(data[: len(data) // 2])
        return "x.parquet"
    if case == "corrupt page":
        _corrupt_parquet(tmp_path / "c.parquet")
        return "c.parquet"
    if case == "empty csv":
        (tmp_path / "e.csv").write_text("")
        return "e.csv"
    if case == "header-only csv":
        (tmp_path / "h.csv").write_text("user,item,rank\n")
        return "h.csv"
    if case == "ragged csv":
        (tmp_path / "r.csv").write_text("user,item,rank\n1,10,1\n1,11,2,7\n")
        return "r.csv"
    if case == "unparsable csv":  # the bad value lies past the rows Polars infers the types from
        number = "rank" if side == "recommendations" else "relevance"
        (tmp_path / "u.csv").write_text(f"user,item,{number}\n" + "".join(f"{u},1,1\n" for u in range(300)) + "7,8,x\n")
        return "u.csv"
    raise AssertionError(case)


FILE_CASES = {
    "missing": "does not exist", "directory without parquet": "holds no Parquet files",
    "truncated parquet": "truncated or corrupt", "corrupt page": "truncated or corrupt", "empty csv": "is empty",
    "header-only csv": "no rows", "ragged csv": "more fields than the header", "unparsable csv": "cannot be parsed",
}


@pytest.mark.parametrize("side", ["recommendations", "ground truth"])
@pytest.mark.parametrize("case", list(FILE_CASES))
def test_unreadable_files(tmp_path, monkeypatch, case, side, backend):
    monkeypatch.chdir(tmp_path)
    path = _make(tmp_path, case, side)
    inputs = {"recs": path} if side == "recommendations" else {"truth": path}
    msg = _raises(rankwise.InputFileError, **inputs, backend=backend)
    first_line = msg.splitlines()[0]
    assert first_line.startswith(f"{side}:") and f"'{path}'" in first_line and FILE_CASES[case] in first_line
    assert str(tmp_path) not in msg  # the path as given


def test_a_directory_of_parquet_files_skips_hidden_files(tmp_path, backend):
    """A Spark output directory (part files, _SUCCESS, .crc) was a raw 'different file extensions' error."""
    (tmp_path / "recs").mkdir()
    RECS.filter(pl.col("user") == 1).write_parquet(tmp_path / "recs" / "part-0.parquet")
    RECS.filter(pl.col("user") == 2).write_parquet(tmp_path / "recs" / "part-1.parquet")
    (tmp_path / "recs" / "_SUCCESS").write_text("")
    (tmp_path / "recs" / ".part-0.parquet.crc").write_bytes(b"\x00")
    res = rankwise.evaluate(str(tmp_path / "recs"), TRUTH, k=2, metrics=["hit_rate"], backend=backend)
    assert res.per_user["hit_rate@2"].to_list() == HIT_RATE_2


@pytest.mark.parametrize("users", [
    pl.Series(["u1", "u2"], dtype=pl.Categorical),
    pl.Series(["u1", "u2"], dtype=pl.Enum(["u1", "u2"])),
    pl.Series([datetime.datetime(2024, 1, 1), datetime.datetime(2024, 1, 2)]).dt.replace_time_zone("UTC"),
])
def test_the_user_column_keeps_its_type_on_every_engine(users):
    """DuckDB returned a categorical user column as String and a UTC time zone as Etc/UTC, so the
    two engines' frames differed for one input."""
    recs = pl.DataFrame({"user": users, "item": [1, 2], "rank": [1, 1]})
    truth = pl.DataFrame({"user": users, "item": [1, 3]})
    got = {b: rankwise.evaluate(recs, truth, k=1, metrics=["precision"], backend=b) for b in ("polars", "duckdb")}
    assert got["polars"].per_user.schema["user"] == users.dtype
    for frame in ("per_user", "long"):
        assert_frame_equal(getattr(got["polars"], frame), getattr(got["duckdb"], frame))


def test_enum_ids_meet_string_ids_as_text():
    """Enum ids in one input and String (or Categorical) in the other were a DtypeMismatchError, while
    Categorical and String met as text: all three are text now, on every input."""
    enum = pl.Enum(["u1", "u2"])
    recs = pl.DataFrame({"user": ["u1", "u1", "u2"], "item": ["a", "b", "c"], "rank": [1, 2, 1]},
                        schema_overrides={"user": enum, "item": pl.Enum(["a", "b", "c"])})
    truth = pl.DataFrame({"user": ["u1", "u2"], "item": ["b", "x"]}, schema_overrides={"item": pl.Categorical})
    for backend in ("polars", "duckdb"):
        res = rankwise.evaluate(recs, truth, k=2, metrics=["precision", "mrr"], backend=backend)
        # by hand: u1 finds b at rank 2 (precision 1/2, RR 1/2), u2 finds nothing
        assert res.summary.select("metric", "value").rows() == [("precision", 0.25), ("mrr", 0.25)]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_a_nan_or_infinite_score_is_one_invalid_score_error_everywhere(bad, backend):
    """The Python path raised NullValueError for NaN and took infinity; sql/checks.sql (the rendered
    scripts, Spark DataFrames, PostgreSQL tables) raises InvalidScoreError for both: one rule now."""
    recs = SCORED.with_columns(score=pl.Series([9.0, bad, 2.0]))
    _raises(rankwise.InvalidScoreError, recs=recs, truth=SCORED_TRUTH, match="NaN or infinite", backend=backend)
    _raises(rankwise.InvalidScoreError, recs=recs.with_columns(rank=pl.Series([1, 2, 3])), truth=SCORED_TRUTH,
            match="NaN or infinite", backend=backend, convention=rankwise.Convention(min_score=0.0))


def test_a_parquet_directory_whose_files_differ_in_integer_width_is_one_table(tmp_path, backend):
    """Spark or pandas parts written at different times: Int32 ids in one file, Int64 in the next.
    Polars' scan takes the first file's type and failed on the second ('cannot be read as one table');
    the widest type is taken now. Other differences (a column's kind, the column set) still fail."""
    directory = tmp_path / "recs"
    directory.mkdir()
    narrow = {"user": pl.Int32, "item": pl.Int32, "rank": pl.Int32}
    pl.DataFrame({"user": [1, 1], "item": [10, 11], "rank": [1, 2]}, schema=narrow).write_parquet(directory / "a.parquet")
    pl.DataFrame({"user": [2], "item": [20], "rank": [1]}).write_parquet(directory / "b.parquet")  # Int64
    res = rankwise.evaluate(str(directory), TRUTH, k=2, metrics=["hit_rate"], backend=backend)
    assert res.per_user["hit_rate@2"].to_list() == HIT_RATE_2  # user 1 hits 11, user 2 misses 12
    pl.DataFrame({"user": [3], "item": ["x"], "rank": [1]}).write_parquet(directory / "c.parquet")
    with pytest.raises(rankwise.InputFileError, match="cannot be read as one table"):
        rankwise.evaluate(str(directory), TRUTH, k=2, backend=backend)


# -- names validated whole (issue 35): "$" also matched before a trailing newline ------------------

# every module-level pattern of the package that validates a name, with a name it accepts; a new
# pattern must be listed here or in _NOT_NAMES (the test below fails until it is)
_NAME_PATTERNS = {
    "_sqlgen._PREFIX": "rankwise_", "_sqlgen._BARE": "items", "_sqlgen._PLAIN_COLUMN": "user_id",
    "metrics._F_BETA": "f2.5", "_write._PREFIX": "ds.eval_",
    "_write._RUN_FILE": "run-20240101T000000000000Z-" + "0" * 32 + ".parquet",
    "_write._STAGED": "per_user.run-20240101T000000000000Z-" + "0" * 32 + ".parquet.1234.tmp",
    "_mlflow._NAME": "eval/",
}
# patterns that find text inside a longer text (or, api._SIZE, trim whitespace on purpose)
_NOT_NAMES = {"_inputs._GLOB", "_postgres_backend._QUERY", "_spark_backend._RELATIONS", "_sql_files._PARAMETER",
              "_table._CONTROL", "api._SIZE", "cli._PY_ARG", "cli._PY_CODE"}


def _package_patterns() -> dict:
    import importlib
    import pkgutil
    import re

    found = {}
    for info in pkgutil.iter_modules(rankwise.__path__):
        module = importlib.import_module(f"rankwise.{info.name}")
        found.update({f"{info.name}.{attr}": (module, attr, value) for attr, value in vars(module).items()
                      if isinstance(value, re.Pattern)})
    return found


def test_every_name_pattern_refuses_a_trailing_newline():
    """render._PLAIN_COLUMN let user_col="uid\\n" through unquoted (DuckDB then read column uid) and
    render._PREFIX accepted prefix "x\\n": a name is matched whole (fullmatch), never with match()."""
    import inspect

    patterns = _package_patterns()
    unknown = sorted(set(patterns) - set(_NAME_PATTERNS) - _NOT_NAMES)
    assert not unknown, f"classify these patterns in _NAME_PATTERNS or _NOT_NAMES: {unknown}"
    for key, (module, attr, pattern) in patterns.items():
        if key not in _NAME_PATTERNS:
            continue
        sample = _NAME_PATTERNS[key]
        assert pattern.fullmatch(sample), key
        for bad in (sample + "\n", sample + "\r\n", "\n" + sample):
            assert pattern.fullmatch(bad) is None, (key, bad)
        source = inspect.getsource(module)
        assert f"{attr}.match(" not in source and f"{attr}.search(" not in source, f"{key}: use fullmatch"


@pytest.mark.parametrize("prefix", ["x\n", "rankwise_\n"])
def test_a_prefix_with_a_trailing_newline_is_refused(prefix):
    """(schema= is SQL text, parsed by sqlglot's tokenizer: whitespace around a name is SQL's own.)"""
    with pytest.raises(rankwise.ParameterError, match="Hint:"):
        rankwise.sql(["precision"], k=2, prefix=prefix)


def test_a_column_with_a_trailing_newline_is_not_read_as_another(tmp_path):
    """user_col="user\\n" was rendered unquoted, so DuckDB read column user; quoted, it is missing."""
    con = duckdb.connect()
    con.execute("CREATE TABLE recommendations AS SELECT 1 AS \"user\", 10 AS item, 1 AS rank")
    con.execute("CREATE TABLE ground_truth AS SELECT 1 AS \"user\", 10 AS item, 1.0 AS relevance")
    script = rankwise.sql(["precision"], k=1, user_col="user\n")
    with pytest.raises(duckdb.Error, match="user"):
        con.execute(script)


@pytest.mark.parametrize("argv", [["--relevance-col", "item"], ["--score-col", "user"], ["--user-col", "rank"],
                                  ["--metrics", "ild", "--item-features", "f", "--feature-col", "item"]])
def test_the_cli_sql_refuses_one_column_for_two_roles(capsys, argv):
    """rankwise.sql(relevance_col="item") rendered a script reading item ids as relevance: every entry
    point now uses evaluate()'s rule."""
    from rankwise import cli

    assert cli.main(["sql", *argv]) == 2
    err = capsys.readouterr().err
    assert "ParameterError" in err and "name the same column" in err


def test_an_ideal_dcg_that_overflows_alone_raises(backend):
    """gain='exp2', ideal='labels': the recommended label earns 1, the unrecommended one 2^2000 - 1 = inf,
    so NDCG was 1 / inf = 0, a plausible number, on every backend (rankwise.expr already raised)."""
    recs = pl.DataFrame({"user": [1], "item": [1], "rank": [1]})
    truth = pl.DataFrame({"user": [1, 1], "item": [1, 5], "relevance": [1.0, 2000.0]})
    with pytest.raises(rankwise.errors.NumericOverflowError, match="ndcg"):
        rankwise.evaluate(recs, truth, k=1, metrics=["ndcg"], backend=backend,
                          convention=rankwise.Convention(gain="exp2", ideal="labels"))
