"""Spark backend: the shipped SQL rendered for Spark by :mod:`rankwise.render`, run by ``spark.sql``.

The canonical tables are registered as temporary views under a per-call prefix, the per-user query
runs, and the summary reads its result. ``evaluate(..., backend="spark", collect=False)``
keeps the per-user result as a Spark DataFrame (see :func:`evaluate_uncollected`). Inputs are
normalised by ``rankwise._inputs`` on the driver, as for every backend.
"""

from __future__ import annotations

import tempfile
import uuid

import polars as pl

from . import render
from ._inputs import USER, Prepared
from .conventions import Convention
from .errors import MissingDependencyError
from .metrics import internal_name

METRIC_COLUMNS = ("precision", "recall", "fbeta", "map", "mar", "mrr", "dcg", "ndcg", "hit_rate", "r_precision")
_INSTALL = 'pip install "rankwise[spark]"  (pyspark >= 4 and a Java 17+ runtime)'


def _pyspark():
    try:
        import pyspark
        from pyspark.sql import SparkSession
    except ImportError as error:
        raise MissingDependencyError("backend='spark' needs pyspark, which is not installed.", hint=_INSTALL) from error
    return pyspark, SparkSession


def session():
    """The active SparkSession, or a small local one (loopback only, no UI, UTC, 2 shuffle partitions)."""
    _, SparkSession = _pyspark()
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    return (SparkSession.builder.master("local[2]").appName("rankwise")
            .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.session.timeZone", "UTC")
            # the backend never writes tables; keep Spark from creating ./spark-warehouse
            .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="rankwise-spark-warehouse-"))
            .getOrCreate())


def is_spark_dataframe(obj) -> bool:
    """True for a pyspark (classic or Connect) DataFrame, without importing pyspark."""
    return type(obj).__module__.startswith("pyspark.") and type(obj).__name__ == "DataFrame"


def to_polars(frame) -> pl.DataFrame:
    """A Spark DataFrame collected to Polars through Arrow."""
    return pl.from_arrow(frame.toArrow())


def _to_spark(spark, frame: pl.DataFrame):
    table = frame.to_arrow()
    import pyarrow as pa

    # Spark's Arrow reader takes plain string columns; Polars writes large_string / string_view.
    schema = pa.schema([pa.field(f.name, pa.string() if pa.types.is_large_string(f.type)
                                 or pa.types.is_string_view(f.type) else f.type) for f in table.schema])
    return spark.createDataFrame(table.cast(schema))


def per_user_frame(prep: Prepared, ks, conv: Convention, beta: float, spark=None):
    """The per-user long result as a Spark DataFrame (user_id, k, n_recs, n_rel, metrics), and the
    temporary views it reads; drop them with :func:`_drop` once the frame is consumed or cached."""
    spark = spark or session()
    names = render.relation_names(f"rankwise_{uuid.uuid4().hex[:12]}_", None, "spark")
    _to_spark(spark, prep.recommendations).createOrReplaceTempView(names["recommendations"])
    _to_spark(spark, prep.ground_truth).createOrReplaceTempView(names["ground_truth"])
    spark.sql(render.cutoffs_query(ks, "spark")).createOrReplaceTempView(names["cutoffs"])
    per_user_sql, _, _ = render.queries(ks, conv, beta, "spark", names)
    views = [names[n] for n in ("recommendations", "ground_truth", "cutoffs")]
    return spark.sql(per_user_sql), views


def summary_frame(per_user, conv: Convention, beta: float, spark=None) -> pl.DataFrame:
    """summary.sql over a Spark per-user DataFrame (metric, k, value, n_users), collected."""
    spark = spark or session()
    names = render.relation_names(f"rankwise_{uuid.uuid4().hex[:12]}_", None, "spark")
    per_user.createOrReplaceTempView(names["per_user"])
    _, summary_sql, _ = render.queries((1,), conv, beta, "spark", names)
    try:
        return to_polars(spark.sql(summary_sql))
    finally:
        _drop(spark, [names["per_user"]])


def _drop(spark, views) -> None:
    for view in views:
        spark.catalog.dropTempView(view)


def per_user(prep: Prepared, ks: tuple[int, ...], conv: Convention, beta: float) -> pl.DataFrame:
    """Long per-user frame, the same columns and types as the Polars backend."""
    spark = session()
    frame, views = per_user_frame(prep, ks, conv, beta, spark)
    try:
        return _canonical(to_polars(frame), prep.user_dtype)
    finally:
        _drop(spark, views)


def summary(per_user_long: pl.DataFrame, conv: Convention, beta: float) -> pl.DataFrame:
    """summary.sql on Spark over the (collected) per-user frame."""
    spark = session()
    return summary_frame(_to_spark(spark, per_user_long), conv, beta, spark)


def _canonical(long: pl.DataFrame, user_dtype) -> pl.DataFrame:
    return long.with_columns(
        pl.col(USER).cast(user_dtype), pl.col("k", "n_recs", "n_rel").cast(pl.Int64),
        pl.col(*METRIC_COLUMNS).cast(pl.Float64),
    ).select(USER, "k", "n_recs", "n_rel", *METRIC_COLUMNS)


def evaluate_uncollected(prep: Prepared, request, conv: Convention, user_col: str):
    """evaluate() with ``per_user`` left in Spark (wide: user, then "metric@k" columns, NaN =
    undefined); the summary and the exclusion counts are small and collected."""
    from pyspark.sql import functions as F

    from . import api

    spark = session()
    long, views = per_user_frame(prep, request.ks, conv, request.beta, spark)
    long = long.cache()
    try:
        if "error" in (conv.empty_labels, conv.empty_predictions):
            empty = long.where("n_rel = 0 OR n_recs = 0").select(USER, "n_recs", "n_rel").distinct()
            api._raise_on_error_values(_canonical_stats(to_polars(empty), prep.user_dtype), conv, user_col)
        summary = summary_frame(long, conv, request.beta, spark)
        excluded = _excluded(prep, long, conv)
    finally:
        _drop(spark, views)
    cells = []
    for name in request.names:
        for k in request.ks:
            value = F.max(F.when(F.col("k") == k, F.col(internal_name(name))))
            cells.append(F.coalesce(value, F.lit(float("nan"))).alias(request.column(name, k)))
    wide = long.groupBy(USER).agg(*cells).withColumnRenamed(USER, user_col)
    return api.Result(per_user=wide, summary=api._tidy_summary(summary, request), excluded=excluded,
                      convention=conv, prepared=prep)


def _canonical_stats(frame: pl.DataFrame, user_dtype) -> pl.DataFrame:
    return frame.with_columns(pl.col(USER).cast(user_dtype), pl.col("n_recs", "n_rel").cast(pl.Int64))


def _excluded(prep: Prepared, long, conv: Convention) -> pl.DataFrame:
    """api._excluded's counts, computed in Spark (the same reasons, in the same order)."""
    everyone = pl.concat([prep.recommendations.select(USER), prep.ground_truth.select(USER)]).n_unique()
    row = long.selectExpr(
        "COUNT(DISTINCT user_id) AS users",
        "COUNT(DISTINCT CASE WHEN n_rel = 0 THEN user_id END) AS no_labels",
        "COUNT(DISTINCT CASE WHEN n_rel > 0 AND n_recs = 0 THEN user_id END) AS no_predictions",
        "COUNT(DISTINCT CASE WHEN n_rel > 0 AND n_recs > 0 AND ndcg IS NULL THEN user_id END) AS zero_ideal",
    ).collect()[0]
    rows = [(f"in one input only, outside users={conv.users!r}", everyone - row["users"])]
    if conv.empty_labels == "nan":
        rows.append(("no relevant label (empty_labels='nan')", row["no_labels"]))
    if conv.empty_predictions == "nan":
        rows.append(("labels but no recommendation (empty_predictions='nan')", row["no_predictions"]))
    if conv.zero_ideal == "nan":
        rows.append(("ndcg only: ideal DCG is 0 (zero_ideal='nan'), any k", row["zero_ideal"]))
    return pl.DataFrame(rows, schema={"reason": pl.String, "n_users": pl.Int64}, orient="row")
