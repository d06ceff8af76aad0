"""Long recommendations whose rows are not grouped by user (a join's or an unordered export's output): the general
input path, which sorts the rows into lists and renumbers the ranks, beside the same rows already in list order
(the layout check's path). Synthetic: --users users x 20 items (50k items, no item twice in a list), 10 % of the
rows labelled relevant; the default metrics at k = 5, 10, 20. Cases: sorted (rank column, rows in list order),
shuffled rank, shuffled score (no rank column: ranked by score), shuffled rank with text user ids.

Usage: flock /tmp/rankwise-cpu.lock python bench/shuffled_inputs.py [--users 1M] [--engines polars,duckdb]
(one line per case and engine: seconds of the evaluate call, and NDCG@10, equal in every case; run a fresh process
per version, e.g. PYTHONPATH=<checkout>/src for "before")
"""
from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", default="1M")
    ap.add_argument("--engines", default="polars,duckdb")
    a = ap.parse_args()
    import numpy as np
    import polars as pl

    import rankwise

    n, length = int(float(a.users.upper().replace("K", "e3").replace("M", "e6"))), 20
    rng = np.random.default_rng(5)
    recs = pl.DataFrame({"user": np.repeat(np.arange(n), length), "item": rng.integers(0, 50_000, n * length),
                         "score": -np.tile(np.arange(1, length + 1), n) + rng.random(n * length) * 0.5})
    recs = (recs.unique(["user", "item"], keep="first", maintain_order=True)
            .with_columns(pl.int_range(1, pl.len() + 1).over("user").alias("rank")))
    truth = recs.sample(fraction=0.1, seed=2).select("user", "item", pl.lit(1.0).alias("relevance"))
    shuffled = recs.sample(fraction=1.0, shuffle=True, seed=1)
    text = pl.format("u{}", "user").alias("user")
    cases = [("sorted rank", recs, truth), ("shuffled rank", shuffled, truth),
             ("shuffled score", shuffled.drop("rank"), truth),
             ("shuffled rank, text users", shuffled.with_columns(text), truth.with_columns(text))]
    for name, r, t in cases:
        for engine in a.engines.split(","):
            t0 = time.perf_counter()
            res = rankwise.evaluate(r, t, k=[5, 10, 20], backend=engine)
            dt = time.perf_counter() - t0
            ndcg = res.summary.filter((pl.col("metric") == "ndcg") & (pl.col("k") == 10))["value"][0]
            print(f"{name:27s} {engine:7s} {dt:6.2f} s  ndcg@10 {ndcg!r}", flush=True)


if __name__ == "__main__":
    main()
