"""Run Spark MLlib RankingMetrics (pyspark) on a conformance dataset.

Usage: python run_pyspark.py DATASET.json OUT.json [--k 1,3,5,10]
RankingMetrics only returns means; per-user values are produced for small datasets (<= 20 users) by
evaluating ml.evaluation.RankingEvaluator on one-row DataFrames.
"""

import os

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from pyspark.ml.evaluation import RankingEvaluator  # noqa: E402
from pyspark.mllib.evaluation import RankingMetrics  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql.types import ArrayType, DoubleType, StructField, StructType  # noqa: E402

from _common import Dataset, entry, parse_args, write  # noqa: E402

PER_USER_MAX_USERS = 20
AT_K = {"precision": ("precisionAt", "precisionAtK"), "recall": ("recallAt", "recallAtK"),
        "map": ("meanAveragePrecisionAt", "meanAveragePrecisionAtK"), "ndcg": ("ndcgAt", "ndcgAtK")}
SLICES = 2


def labels(ds, u):
    """Relevant items (rel >= 1) in dataset order (sorted by item)."""
    return [i for i, g in sorted(ds.truth.get(u, {}).items(), key=lambda kv: str(kv[0])) if g > 0]


def per_user_values(spark, ds, users, metric_name, k):
    """RankingEvaluator on a one-row DataFrame per user (items mapped to doubles by catalog position)."""
    code = {item: float(j) for j, item in enumerate(ds.items)}
    schema = StructType([StructField("prediction", ArrayType(DoubleType())),
                         StructField("label", ArrayType(DoubleType()))])
    out = []
    for u in users:
        row = ([code[i] for i in ds.recs.get(u, [])], [code[i] for i in labels(ds, u)])
        df = spark.createDataFrame([row], schema)
        kw = {"k": k} if k else {}
        out.append((u, RankingEvaluator(metricName=metric_name, **kw).evaluate(df)))
    return out


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    spark = (SparkSession.builder.master("local[2]").appName("rankwise-conformance")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    sc = spark.sparkContext
    small = len(ds.users) <= PER_USER_MAX_USERS

    universes = {"default": ds.users, "label_rows": [u for u in ds.users if labels(ds, u)]}
    results = {}
    for variant, users in universes.items():
        rows = [(list(ds.recs.get(u, [])), labels(ds, u)) for u in users]
        metrics = RankingMetrics(sc.parallelize(rows, SLICES))
        res = {}
        for k in args.ks:
            for key, (method, ev_name) in AT_K.items():
                pu = per_user_values(spark, ds, users, ev_name, k) if small else []
                res["%s@%d" % (key, k)] = entry(pu, getattr(metrics, method)(k), "RankingMetrics.%s(%d)" % (method, k))
        pu = per_user_values(spark, ds, users, "meanAveragePrecision", None) if small else []
        res["map"] = entry(pu, metrics.meanAveragePrecision, "RankingMetrics.meanAveragePrecision (no cutoff)")
        results[variant] = res

    # relevance array (3-tuples): pyspark documents graded NDCG since 3.4; check what it really does
    rows = [(list(ds.recs.get(u, [])), labels(ds, u),
             [float(ds.truth[u][i]) for i in labels(ds, u)]) for u in ds.users]
    graded = RankingMetrics(sc.parallelize(rows, SLICES))
    results["with_relevance"] = {"ndcg@%d" % k: entry([], graded.ndcgAt(k), "RankingMetrics.ndcgAt(%d) with "
                                                      "relevance array" % k) for k in args.ks}
    spark.stop()

    encoding = (
        "mllib RankingMetrics on an RDD (%d slices) of (recommendation list, relevant items) per user, relevant = "
        "relevance >= 1 in item order, [] when none; item ids as in the dataset. 'default': one row per user of "
        "the union (%s); 'label_rows': only users with >= 1 relevant item; 'with_relevance': union rows as "
        "3-tuples (list, relevant items, their relevance levels), NDCG only. 'map' (no @k) is "
        "meanAveragePrecision. Per-user values (datasets with <= %d users only) come from "
        "ml.evaluation.RankingEvaluator on one-row DataFrames of array<double> (items coded by catalog "
        "position); otherwise per_user is empty. local[2], Java %s."
        % (SLICES, ds.describe_users(), PER_USER_MAX_USERS, os.environ.get("JAVA_VERSION", "17 (system)")))
    write(args.out, "pyspark", "pyspark", ds, encoding, results)


if __name__ == "__main__":
    main()
