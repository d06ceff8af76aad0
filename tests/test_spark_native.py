"""Spark DataFrames are checked, normalised and evaluated in Spark (issue 12): the same results as
DuckDB, the same typed errors as evaluate() on any input, and a driver that never sees the rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import rankwise
from rankwise.engines import spark as _spark_backend

pytest.importorskip("pyspark")

RECS = pl.DataFrame({"user": [1, 1, 1, 2, 2, 3], "item": [10, 11, 12, 20, 21, 30], "rank": [1, 2, 3, 1, 2, 1]})
TRUTH = pl.DataFrame({"user": [1, 1, 2, 4], "item": [11, 13, 20, 40], "relevance": [1.0, 2.0, 1.0, 1.0]})


def _spark_frames(spark, recs, truth):
    return spark.createDataFrame(recs.to_pandas()), spark.createDataFrame(truth.to_pandas())


def test_spark_frames_give_the_same_result_as_duckdb(spark):
    r, t = _spark_frames(spark, RECS, TRUTH)
    got = rankwise.evaluate(r, t, k=[1, 3], backend="spark")
    want = rankwise.evaluate(RECS, TRUTH, k=[1, 3], backend="duckdb")
    for frame in ("summary", "excluded", "per_user"):
        assert_frame_equal(getattr(got, frame), getattr(want, frame), rel_tol=1e-12)


def test_scores_and_ties_are_ranked_in_spark(spark):
    scored = pl.DataFrame({"user": [1, 1, 1, 2], "item": [10, 11, 12, 20], "score": [0.5, 0.9, 0.5, 1.0]})
    r, t = _spark_frames(spark, scored, TRUTH)
    conv = rankwise.PRESETS["default"].replace(ties="item_desc")
    got = rankwise.evaluate(r, t, k=2, backend="spark", convention=conv)
    want = rankwise.evaluate(scored, TRUTH, k=2, backend="polars", convention=conv)
    assert_frame_equal(got.per_user, want.per_user, rel_tol=1e-12)


# scores with ties and a repeated item (user 1's item 11), graded labels with a 0 and a 0.5, users in
# one input only (3 has no hit, 4 no list, 5 no label)
SCORED = pl.DataFrame({"user": [1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 5],
                       "item": [10, 11, 12, 13, 11, 20, 21, 22, 30, 31, 50],
                       "score": [0.9, 0.5, 0.5, 0.7, 0.2, 1.0, 1.0, 0.3, 0.4, 0.4, 0.1]})
GRADED = pl.DataFrame({"user": [1, 1, 1, 1, 2, 2, 3, 4], "item": [11, 12, 14, 13, 21, 20, 99, 40],
                       "relevance": [3.0, 0.5, 2.0, 0.0, 1.0, 2.0, 1.0, 1.0]})
SHIFT = rankwise.PRESETS["default"].replace(duplicates="first_shift")


@pytest.mark.parametrize("conv", [
    SHIFT,
    SHIFT.replace(ties="item_desc", gain="linear", ideal="labels", relevance_threshold=1.0, rr_cutoff=False),
    SHIFT.replace(users="intersection", unjudged="drop", ideal="k_ones", gain="binary", log_base=2.0,
                  precision_denominator="min_k_candidates", ap_denominator="min_k_len"),
    SHIFT.replace(users="labels", precision_denominator="min_k_nrel", ap_denominator="min_k_nrel",
                  zero_ideal="nan", empty_labels="zero", empty_predictions="one"),
], ids=["first_shift", "item_desc-linear-labels-threshold-rr_anywhere", "intersection-k_ones-binary",
        "labels-min_k_nrel"])
def test_per_user_arrays_give_the_long_sqls_values(spark, conv):
    """Spark groups each input by user and scores the arrays (sql/spark_user_*.sql); DuckDB runs the
    long-form per_user.sql on the same rows: the same values under every rule the arrays implement."""
    r, t = _spark_frames(spark, SCORED, GRADED)
    got = rankwise.evaluate(r, t, k=[1, 2, 5], backend="spark", convention=conv)
    want = rankwise.evaluate(SCORED, GRADED, k=[1, 2, 5], backend="duckdb", convention=conv)
    for frame in ("summary", "excluded", "per_user"):
        assert_frame_equal(getattr(got, frame), getattr(want, frame), rel_tol=1e-12)


# ranks, not scores: Spark sorts only the rows ranked within max(k) and checks the whole lists apart
# (sql/spark_user_arrays.sql's $top_only). User 1 repeats an item past k = 5 (first_shift: the top
# five stand, n_recs = 7); users 2 (a repeat within the top five: first_shift pulls rank 6 up) and 3
# (rank values with gaps) need the whole list sorted; 4 has hits past the top five; 5 a short list.
RANKED = pl.DataFrame({
    "user": [1] * 8 + [2] * 6 + [3] * 6 + [4] * 7 + [5] * 3,
    "item": [10, 11, 12, 13, 14, 15, 11, 17, 20, 21, 20, 23, 24, 25, 30, 31, 32, 33, 34, 35,
             40, 41, 42, 43, 44, 45, 46, 50, 51, 52],
    "rank": [*range(1, 9), *range(1, 7), 2, 4, 6, 8, 10, 12, *range(1, 8), 1, 2, 3]})
RANKED_TRUTH = pl.DataFrame({"user": [1, 1, 1, 2, 2, 3, 3, 4, 4, 4, 5, 6],
                             "item": [11, 17, 14, 25, 21, 34, 35, 45, 46, 40, 52, 60],
                             "relevance": [1.0, 2.0, 1.0, 1.0, 3.0, 1.0, 2.0, 1.0, 1.0, 2.0, 1.0, 1.0]})
LENGTHS = SHIFT.replace(precision_denominator="min_k_candidates", ap_denominator="min_k_len", ideal="labels")


@pytest.mark.parametrize("conv, users", [
    (SHIFT, [1, 4, 5, 6]), (SHIFT, [1, 2, 3, 4, 5, 6]), (LENGTHS, [1, 4, 5, 6]), (LENGTHS, [1, 2, 4, 5, 6]),
    (LENGTHS, [3, 4, 5]), (rankwise.PRESETS["default"], [3, 4, 5, 6]),
], ids=["shift-top", "shift-whole", "lengths-top", "lengths-repeat", "lengths-gaps", "error-gaps"])
def test_ranked_lists_sorted_only_within_the_cutoff_give_the_long_sqls_values(spark, conv, users):
    """Only the rows ranked within max(k) are sorted when that gives the same places; a gap in the
    rank values or a repeat that first_shift closes up sorts the whole list: DuckDB's values either way."""
    recs, truth = (frame.filter(pl.col("user").is_in(users)) for frame in (RANKED, RANKED_TRUTH))
    r, t = _spark_frames(spark, recs, truth)
    got = rankwise.evaluate(r, t, k=[1, 2, 5], backend="spark", convention=conv)
    want = rankwise.evaluate(recs, truth, k=[1, 2, 5], backend="duckdb", convention=conv)
    for frame in ("summary", "excluded", "long"):  # long: n_recs too, the whole list's length
        assert_frame_equal(getattr(got, frame), getattr(want, frame), rel_tol=1e-12)


@pytest.mark.parametrize("change, error", [
    (lambda r, t: (pl.concat([r, r.head(1).with_columns(rank=pl.lit(9, pl.Int64))]), t), rankwise.DuplicateItemError),
    (lambda r, t: (r.with_columns(rank=pl.when(pl.col("rank") == 3).then(2).otherwise("rank")), t),
     rankwise.DuplicateRankError),
    (lambda r, t: (r.with_columns(rank=pl.col("rank") - 1), t), rankwise.InvalidRankError),
    (lambda r, t: (r, pl.concat([t, t.head(1)])), rankwise.DuplicateItemError),
    (lambda r, t: (r, t.with_columns(relevance=pl.lit(-1.0))), rankwise.InvalidRelevanceError),
    (lambda r, t: (r, t.with_columns(relevance=pl.lit(float("nan")))), rankwise.InvalidRelevanceError),
    (lambda r, t: (r.with_columns(user=pl.col("user").cast(pl.String)), t), rankwise.DtypeMismatchError),
    (lambda r, t: (r.with_columns(rank=pl.col("rank").cast(pl.Float64)), t), rankwise.InvalidRankError),
])
def test_bad_spark_frames_raise_the_error_evaluate_raises_anywhere(spark, change, error):
    recs, truth = change(RECS, TRUTH)
    with pytest.raises(error):
        rankwise.evaluate(recs, truth, k=3, backend="polars")  # the rule, on the Python path
    r, t = _spark_frames(spark, recs, truth)
    with pytest.raises(error):
        rankwise.evaluate(r, t, k=3, backend="spark")


@pytest.mark.parametrize("option", [{"relevance_col": "relevnce"}, {"rank_col": "rnk"}, {"score_col": "scor"}])
def test_a_misspelt_column_option_is_a_missing_column_on_spark_frames_too(spark, option):
    # a rank, score or relevance column the caller names must exist: a misspelt relevance_col scored
    # every label 1 in Spark, a misspelt rank_col ranked by the score column
    scored = RECS.with_columns(score=pl.lit(0.5))
    with pytest.raises(rankwise.MissingColumnError) as frame_error:
        rankwise.evaluate(scored, TRUTH, k=3, **option)
    with pytest.raises(rankwise.MissingColumnError) as spark_error:
        rankwise.evaluate(*_spark_frames(spark, scored, TRUTH), k=3, backend="spark", **option)
    assert spark_error.value.problem == frame_error.value.problem


def test_spark_frames_with_a_column_named_like_another_in_other_case_or_float_ids(spark):
    """A "USER" column beside "user" made Spark's (case-insensitive) names ambiguous: a raw
    AnalysisException; float ids were refused for Spark frames only. Both: DuckDB's result."""
    extra = RECS.with_columns(pl.lit("x").alias("USER"))
    got = rankwise.evaluate(*_spark_frames(spark, extra, TRUTH), k=[1, 3], backend="spark")
    assert_frame_equal(got.summary, rankwise.evaluate(RECS, TRUTH, k=[1, 3], backend="duckdb").summary, rel_tol=1e-12)
    floats = [frame.with_columns(pl.col("user", "item").cast(pl.Float64)) for frame in (RECS, TRUTH)]
    got = rankwise.evaluate(*_spark_frames(spark, *floats), k=[1, 3], backend="spark")
    assert_frame_equal(got.per_user, rankwise.evaluate(*floats, k=[1, 3], backend="duckdb").per_user, rel_tol=1e-12)


def test_null_keys_in_spark_frames_are_refused(spark):
    from pyspark.sql import functions as F

    r, t = _spark_frames(spark, RECS, TRUTH)
    r = r.withColumn("item", F.when(F.col("item") == 11, F.lit(None)).otherwise(F.col("item")))
    with pytest.raises(rankwise.NullValueError, match="NULL"):
        rankwise.evaluate(r, t, k=3, backend="spark")


def test_a_null_label_item_in_a_spark_frame_is_refused_and_no_view_is_left(spark):
    """A NULL item in the ground truth passed on Spark DataFrames (users 2 and 3 scored as having no
    labels) while evaluate() refuses it anywhere else; and a failed check left the run's views."""
    from pyspark.sql import functions as F

    r, t = _spark_frames(spark, RECS, TRUTH)
    t = t.withColumn("item", F.when(F.col("user") == 4, F.lit(None)).otherwise(F.col("item")))
    before = _spark_backend.temporary_views(spark)
    with pytest.raises(rankwise.NullValueError):
        rankwise.evaluate(r, t, k=3, backend="spark")
    assert _spark_backend.temporary_views(spark) == before


def test_spark_id_and_relevance_types_the_python_path_takes(spark, tmp_path):
    """UInt64 ids from a Polars-written Parquet file read into Spark as decimal(20, 0) ("ids must be
    both integers": a self-contradicting DtypeMismatchError), and a Boolean relevance was refused."""
    recs = RECS.with_columns(pl.col("user", "item").cast(pl.UInt64))
    truth = TRUTH.with_columns(pl.col("user", "item").cast(pl.UInt64), relevance=pl.col("relevance") > 1.5)
    recs.write_parquet(tmp_path / "r.parquet")
    truth.write_parquet(tmp_path / "t.parquet")
    r, t = spark.read.parquet(str(tmp_path / "r.parquet")), spark.read.parquet(str(tmp_path / "t.parquet"))
    assert r.schema["user"].dataType.simpleString() == "decimal(20,0)"
    got = rankwise.evaluate(r, t, k=[1, 3], backend="spark")
    want = rankwise.evaluate(recs, truth, k=[1, 3], backend="polars")
    assert_frame_equal(got.summary, want.summary, rel_tol=1e-12)


def test_collect_false_with_several_runs_is_refused_before_any_spark_work(spark):
    r, t = _spark_frames(spark, RECS, TRUTH)
    before = _spark_backend.temporary_views(spark)
    with pytest.raises(rankwise.ParameterError, match="collect=False takes one run"):
        rankwise.evaluate({"a": r, "b": r}, t, k=3, backend="spark", collect=False)
    assert _spark_backend.temporary_views(spark) == before


def _cached_plans(spark) -> int:
    return spark._jsparkSession.sharedState().cacheManager().numCachedEntries()


def test_collect_false_leaves_only_the_per_user_frame(spark):
    """collect=False left ten temporary views and the per-user rows cached per call; the cache manager
    holds a cached plan until someone unpersists it, so a long session that evaluated many models
    filled its memory. Now the per-user rows are the result's own materialised frame (freed by Spark's
    cleaner once the caller drops it, like any checkpoint), and no view or cached plan is left."""
    r, t = _spark_frames(spark, RECS, TRUTH)
    want = rankwise.evaluate(RECS, TRUTH, k=[1, 3], backend="duckdb")
    views, cached = _spark_backend.temporary_views(spark), _cached_plans(spark)
    for _ in range(3):
        got = rankwise.evaluate(r, t, k=[1, 3], backend="spark", collect=False)
        assert _spark_backend.temporary_views(spark) == views
        assert _cached_plans(spark) == cached
        assert_frame_equal(got.summary, want.summary, rel_tol=1e-12)
        wide = pl.from_arrow(got.per_user.toArrow()).sort("user")  # still readable: nothing it needs was dropped
        assert_frame_equal(wide, want.per_user.sort("user"), check_dtypes=False, rel_tol=1e-12)


def test_evaluating_from_another_thread_keeps_the_sessions_settings(spark):
    """From a worker thread getActiveSession() is None: session() built a new builder whose
    getOrCreate() set the running session's shuffle partitions and time zone to rankwise's."""
    import threading

    key = "spark.sql.session.timeZone"
    before = spark.conf.get(key)
    spark.conf.set(key, "America/New_York")
    try:
        worker = threading.Thread(target=lambda: rankwise.evaluate(RECS, TRUTH, k=2, backend="spark"))
        worker.start()
        worker.join()
        assert spark.conf.get(key) == "America/New_York"
    finally:
        spark.conf.set(key, before)


def test_the_local_session_rankwise_makes_has_1mb_memory_pages(spark):
    """engines.spark.session()'s own local session (the one this test run uses): 1 MB Tungsten pages, a core
    setting read when the JVM starts (Spark's default here, 16 MB, made small evaluations 2-3x slower)."""
    assert spark.sparkContext.getConf().get("spark.buffer.pageSize") == "1m"


@pytest.mark.skipif(os.environ.get("RANKWISE_SKIP_SPARK_SCALE") == "1", reason="RANKWISE_SKIP_SPARK_SCALE=1")
def test_five_million_rows_with_a_16mb_driver(tmp_path):
    """The proof issue 12 asks for: maxResultSize=16m, 5M rows generated in Spark, collect=False; the
    driver path (collecting the input through Arrow) fails this test."""
    job = Path(__file__).parent / "jobs" / "spark_driver_budget.py"
    done = subprocess.run([sys.executable, str(job), str(tmp_path)], capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "spark_error" not in result, result["spark_error"]
    assert result["per_user_kept_in_spark"]
    spark_summary, duckdb_summary = pl.DataFrame(result["spark"]), pl.DataFrame(result["duckdb"])
    # the stated tolerance of a mean over n users (README; tests/test_runs.py): max(1e-12, n * 2^-52)
    assert_frame_equal(spark_summary, duckdb_summary, rel_tol=500_000 * 2.0**-52, abs_tol=0)
    # by construction every user has hits at ranks 1 and 4 of 10 and two labels (relevance 1, 2)
    values = {(r["metric"], r["k"]): r["value"] for r in duckdb_summary.iter_rows(named=True)}
    assert values[("precision", 5)] == pytest.approx(2 / 5) and values[("recall", 10)] == pytest.approx(1.0)
    assert values[("mrr", 5)] == pytest.approx(1.0) and values[("map", 10)] == pytest.approx((1 + 2 / 4) / 2)


def test_a_spark_dataframe_as_train_is_a_parameter_error_saying_what_to_pass(spark):
    # it was "train: unsupported input type DataFrame"
    train = spark.createDataFrame(pl.DataFrame({"user": [7], "item": [10]}).to_pandas())
    with pytest.raises(rankwise.ParameterError, match="train: a Spark DataFrame") as info:
        rankwise.evaluate(RECS, None, k=2, metrics=["novelty"], train=train, backend="spark")
    assert "Parquet" in info.value.hint


def test_integer_ranks_past_2_53_are_compared_as_doubles_on_spark(spark):
    """The README's limit, as it stands (issue 35): ranks 2^53 and 2^53 + 1 are one double, so Spark's
    checks see a repeated rank; Polars compares the integers (item 10 first, not relevant: 0 by hand)."""
    from rankwise.errors import DuplicateRankError

    recs = pl.DataFrame({"user": [1, 1], "item": [10, 11], "rank": [2**53, 2**53 + 1]})
    truth = pl.DataFrame({"user": [1], "item": [11]})
    assert rankwise.evaluate(recs, truth, k=1, metrics=["precision"]).per_user["precision@1"].to_list() == [0.0]
    r, t = _spark_frames(spark, recs, truth)
    with pytest.raises(DuplicateRankError):
        rankwise.evaluate(r, t, k=1, metrics=["precision"], backend="spark")


def test_decimal_user_ids_keep_their_type_as_on_the_other_backends(spark):
    """decimal(20,0) users (how Spark reads UInt64 ids) come back as Decimal(20, 0), as a Polars
    Decimal(20, 0) column does on Polars and DuckDB (README, Spark)."""
    import decimal

    users = [decimal.Decimal(2**64 - 2), decimal.Decimal(5)]
    r = spark.createDataFrame([(users[0], 10, 1), (users[1], 10, 1)], "user decimal(20,0), item long, rank long")
    t = spark.createDataFrame([(users[0], 10), (users[1], 11)], "user decimal(20,0), item long")
    got = rankwise.evaluate(r, t, k=1, metrics=["precision"], backend="spark").per_user
    assert got.schema["user"] == pl.Decimal(20, 0)
    # by hand: user 2^64 - 2 is shown item 10, its label: 1; user 5 is shown 10, labelled 11: 0
    assert dict(zip(got["user"].to_list(), got["precision@1"].to_list())) == {users[0]: 1.0, users[1]: 0.0}
    frame = pl.DataFrame({"user": pl.Series(users, dtype=pl.Decimal(20, 0)), "item": [10, 10], "rank": [1, 1]})
    truth = pl.DataFrame({"user": pl.Series(users, dtype=pl.Decimal(20, 0)), "item": [10, 11]})
    for backend in ("polars", "duckdb"):
        assert_frame_equal(got.sort("user"), rankwise.evaluate(frame, truth, k=1, metrics=["precision"],
                                                               backend=backend).per_user.sort("user"))
