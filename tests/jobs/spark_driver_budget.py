"""Run by tests/test_spark_native.py in its own process: a local Spark session whose driver may
receive at most 16 MB of results evaluates 5M recommendation rows generated in Spark, with
collect=False; then DuckDB evaluates the same rows written to Parquet. Prints JSON with both
summaries (or the error). Usage: python spark_driver_budget.py OUT_DIR [N_USERS]"""

import json
import sys
import tempfile

from pyspark.sql import SparkSession

import rankwise

out_dir, n_users = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 500_000
spark = (SparkSession.builder.master("local[2]").appName("rankwise-driver-budget")
         .config("spark.driver.maxResultSize", "16m").config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.sql.shuffle.partitions", "4")
         .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="rankwise-spark-warehouse-"))
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
# ten distinct items per user (rank * 97 mod 1000 differs for ranks 1..10); two labels per user,
# at ranks 1 and 4, relevance 1 and 2
recs = spark.range(n_users * 10).selectExpr(
    "id DIV 10 AS user", "id % 10 + 1 AS rank", "((id DIV 10) * 31 + (id % 10 + 1) * 97) % 1000 AS item")
truth = spark.range(n_users * 2).selectExpr(
    "id DIV 2 AS user", "((id DIV 2) * 31 + IF(id % 2 = 0, 97, 388)) % 1000 AS item",
    "CAST(1 + id % 2 AS DOUBLE) AS relevance")
metrics = ["precision", "recall", "map", "ndcg", "mrr"]
result = {}
try:
    res = rankwise.evaluate(recs, truth, k=[5, 10], metrics=metrics, backend="spark", collect=False)
    result["spark"] = res.summary.to_dicts()
    result["per_user_kept_in_spark"] = type(res.long).__module__.startswith("pyspark")
except Exception as error:  # reported to the test, which fails with it
    result["spark_error"] = f"{type(error).__name__}: {str(error)[:500]}"
recs.write.parquet(f"{out_dir}/recs.parquet")
truth.write.parquet(f"{out_dir}/truth.parquet")
spark.stop()
import duckdb  # noqa: E402

con = duckdb.connect()
con.execute(f"COPY (SELECT * FROM read_parquet('{out_dir}/recs.parquet/*.parquet')) TO '{out_dir}/recs1.parquet'")
con.execute(f"COPY (SELECT * FROM read_parquet('{out_dir}/truth.parquet/*.parquet')) TO '{out_dir}/truth1.parquet'")
con.close()
res = rankwise.evaluate(f"{out_dir}/recs1.parquet", f"{out_dir}/truth1.parquet", k=[5, 10], metrics=metrics,
                        backend="duckdb")
result["duckdb"] = res.summary.to_dicts()
print(json.dumps(result))
