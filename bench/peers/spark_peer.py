"""Spark MLlib peer: spark.read.parquet -> one row per user (pred array, label array) -> RankingEvaluator.

Encoding: pred = items sorted by rank; label = items with relevance > 0 (Spark is binary; relevance
arrays are dropped from Python anyway). Full outer join on user, missing side = empty array, so every
user of either file is one row (empty labels -> 0 with a warning, empty pred -> 0), as Spark averages rows.
Metrics @10: precisionAtK, recallAtK, meanAveragePrecisionAtK, ndcgAtK (Spark has no MRR / hit rate).
Local mode, SPARK_LOCAL_IP=127.0.0.1, UI off. Timings: session, build (read + arrays + join, cached),
eval (four evaluator passes over the cached frame). Check mode evaluates each sampled user as a
one-row frame (Spark only returns means), so keep the user list short.
"""
from __future__ import annotations

import os

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from pyspark.ml.evaluation import RankingEvaluator  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from _common import K, SPARK_METRICS, Timer, emit, load_check_users, parser, write_check  # noqa: E402


def session(driver_memory: str) -> SparkSession:
    return (
        SparkSession.builder.master("local[*]")
        .appName("rankwise-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )


def user_rows(spark: SparkSession, recs: str, truth: str):
    """One row per user: user, pred array<double> (rank order), label array<double> (relevance > 0)."""
    pred = (
        spark.read.parquet(recs)
        .groupBy("user")
        .agg(F.sort_array(F.collect_list(F.struct("rank", "item"))).alias("s"))
        .select("user", F.col("s.item").cast("array<double>").alias("pred"))
    )
    label = (
        spark.read.parquet(truth)
        .groupBy("user")
        .agg(F.collect_list(F.when(F.col("relevance") > 0, F.col("item").cast("double"))).alias("label"))
    )
    empty = F.array().cast("array<double>")
    return pred.join(label, "user", "full_outer").select(
        "user", F.coalesce("pred", empty).alias("pred"), F.coalesce("label", empty).alias("label")
    )


def evaluate(df) -> dict[str, float]:
    ev = RankingEvaluator(predictionCol="pred", labelCol="label", k=K)
    return {m: ev.setMetricName(m).evaluate(df) for m in SPARK_METRICS}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--driver-memory", default="6g")
    a = ap.parse_args()
    t = Timer()
    with t("session"):
        spark = session(a.driver_memory)
        spark.sparkContext.setLogLevel("ERROR")
    with t("build"):
        df = user_rows(spark, a.recs, a.truth)
        if a.check_users:
            users = load_check_users(a.check_users)
            df = df.where(F.col("user").isin(users))
        df = df.cache()
        n = df.count()
    if a.check_users:
        rows = []
        for u in users:
            one = df.where(F.col("user") == u)
            if one.count():
                rows += [(u, m, v) for m, v in evaluate(one).items()]
        write_check(a.check_out, rows, SPARK_METRICS)
        spark.stop()
        return
    with t("eval"):
        summary = evaluate(df)
    spark.stop()
    emit("spark", t, n_users=n, summary=summary)


if __name__ == "__main__":
    main()
