"""Issue 12: rankwise's Spark backend against Spark MLlib's RankingEvaluator, in one local session.

The data is generated in Spark (users x items recommendations with ranks, ten labels per user) and
written to Parquet; both tools read the same files:

  - MLlib: one row per user with the predicted and the relevant item arrays (collect_list, full outer
    join), cached, then RankingEvaluator for precisionAtK, recallAtK, meanAveragePrecisionAtK and
    ndcgAtK at k = 10 (what bench/peers/spark_peer.py measures);
  - rankwise: evaluate(spark.read.parquet(...), ..., backend="spark", convention="spark",
    collect=False) for precision, recall, map and ndcg at k = 10: checked, normalised and scored by
    spark.sql, per-user rows left in Spark.

The two means must agree (the spark preset reproduces MLlib); the run fails otherwise. Peak memory is
sampled every 50 ms from /proc for the driver's JVM and for the Python process (what reached the
driver). Each tool runs --repeat times, alternated (MLlib first), in the same session: the first run of each
pays the JVM's warm-up. Usage: python bench/spark_bench.py [--users 10k,50k] [--items 100] [--repeat 2]
Prints one JSON line per size (times in seconds, one per run; peaks over all runs) for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import threading
import time

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import rankwise  # noqa: E402
from rankwise.engines import spark as _spark_backend

METRICS = {"precision": "precisionAtK", "recall": "recallAtK", "map": "meanAveragePrecisionAtK", "ndcg": "ndcgAtK"}
K = 10


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class PeakRSS:
    """Peak resident memory of the given processes while the block runs (sampled every 50 ms)."""

    def __init__(self, **pids: int):
        self.pids, self.peak, self._stop = pids, dict.fromkeys(pids, 0.0), threading.Event()

    def _sample(self):
        while not self._stop.is_set():
            for name, pid in self.pids.items():
                self.peak[name] = max(self.peak[name], _rss_mb(pid))
            time.sleep(0.05)

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def generate(spark, users: int, items: int, directory: str) -> tuple[str, str]:
    """Recommendations (user, item, rank) and labels (user, item, relevance), written as Parquet."""
    recs = spark.sql(f"""
        SELECT CAST(u.id AS BIGINT) AS user, CAST(pmod(u.id * 7919 + r.id * 104729, 5000) AS BIGINT) + r.id * 5000
               AS item, CAST(r.id + 1 AS INT) AS rank
        FROM range({users}) AS u CROSS JOIN range({items}) AS r""")
    # ten labels per user at list positions r = (13u + 11j) mod 2 * items: about half are recommended
    truth = spark.sql(f"""
        SELECT t.user, CAST(pmod(t.user * 7919 + t.r * 104729, 5000) AS BIGINT) + t.r * 5000 AS item,
               1.0D AS relevance
        FROM (SELECT CAST(u.id AS BIGINT) AS user, pmod(u.id * 13 + j.id * 11, {2 * items}) AS r
              FROM range({users}) AS u CROSS JOIN range(10) AS j) AS t""")
    paths = (os.path.join(directory, "recs.parquet"), os.path.join(directory, "truth.parquet"))
    recs.write.mode("overwrite").parquet(paths[0])
    truth.write.mode("overwrite").parquet(paths[1])
    return paths


def mllib(spark, recs_path: str, truth_path: str) -> dict[str, float]:
    from pyspark.ml.evaluation import RankingEvaluator
    from pyspark.sql import functions as F

    pred = (spark.read.parquet(recs_path).groupBy("user")
            .agg(F.sort_array(F.collect_list(F.struct("rank", "item"))).alias("s"))
            .select("user", F.col("s.item").cast("array<double>").alias("pred")))
    label = (spark.read.parquet(truth_path).groupBy("user")
             .agg(F.collect_list(F.col("item").cast("double")).alias("label")))
    empty = F.array().cast("array<double>")
    rows = pred.join(label, "user", "full_outer").select(
        F.coalesce("pred", empty).alias("pred"), F.coalesce("label", empty).alias("label")).cache()
    evaluator = RankingEvaluator(predictionCol="pred", labelCol="label", k=K)
    out = {ours: evaluator.setMetricName(theirs).evaluate(rows) for ours, theirs in METRICS.items()}
    rows.unpersist()
    return out


def ours(spark, recs_path: str, truth_path: str) -> dict[str, float]:
    result = rankwise.evaluate(spark.read.parquet(recs_path), spark.read.parquet(truth_path), k=K,
                               metrics=list(METRICS), convention="spark", backend="spark", collect=False)
    assert not hasattr(result.per_user, "height"), "per_user should stay in Spark"
    return {row["metric"]: row["value"] for row in result.summary.iter_rows(named=True)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", default="10k,50k")
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each tool, alternated (the first is cold)")
    args = parser.parse_args()
    spark = _spark_backend.session()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    for size in args.users.split(","):
        users = int(float(size.lower().replace("k", "e3").replace("m", "e6")))
        with tempfile.TemporaryDirectory(prefix="rankwise-spark-bench-") as directory:
            recs_path, truth_path = generate(spark, users, args.items, directory)
            row = {"bench": "spark_vs_mllib", "users": users, "rows": users * args.items, "k": K,
                   "spark": spark.version, "master": spark.sparkContext.master}
            values = {}
            for _ in range(args.repeat):
                for name, tool in (("mllib", mllib), ("rankwise", ours)):
                    start = time.perf_counter()
                    with PeakRSS(jvm=jvm, python=os.getpid()) as peak:
                        values[name] = tool(spark, recs_path, truth_path)
                        spark.catalog.clearCache()  # what a run leaves cached is not reused by the next
                    row.setdefault(f"{name}_s", []).append(round(time.perf_counter() - start, 2))
                    for process in ("jvm", "python"):
                        key = f"{name}_peak_{process}_mb"
                        row[key] = max(row.get(key, 0), round(peak.peak[process]))
            row["load_1min"] = os.getloadavg()[0]
            for metric in METRICS:
                a, b = values["mllib"][metric], values["rankwise"][metric]
                assert math.isclose(a, b, rel_tol=1e-9), (metric, a, b)
            row["means_agree"] = {m: values["rankwise"][m] for m in METRICS}
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
