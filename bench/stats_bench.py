"""Issue 11 at scale: several runs, confidence intervals and paired tests at 1M users.

Three runs over the same users (the generated recommendations, the same lists with every user's
order rotated by one, and with the top two swapped), six metrics at k = 10:

  1. evaluate each run alone (the baseline time);
  2. evaluate the three runs in one call (truth validated once; CIs included) + every pairwise t test;
  3. a 10,000-resample randomization (sign-flip) test for one metric and one pair.

Usage: python bench/stats_bench.py [--users 1M] [--data-dir bench/data] [--backend duckdb]
Prints one JSON line (seconds, peak RSS) to add to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import polars as pl

import rankwise

METRICS = ["precision", "recall", "map", "mrr", "ndcg", "hit_rate"]


def _runs(recs: pl.DataFrame) -> dict[str, pl.DataFrame]:
    n = pl.len().over("user")
    rotated = recs.with_columns(rank=((pl.col("rank") % n) + 1).cast(recs.schema["rank"]))
    swapped = recs.with_columns(rank=pl.when(pl.col("rank") == 1).then(2).when(pl.col("rank") == 2).then(1)
                                .otherwise(pl.col("rank")).cast(recs.schema["rank"]))
    return {"model": recs, "rotated": rotated, "swapped": swapped}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", default="1M")
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).parent / "data")
    parser.add_argument("--backend", default="duckdb")
    args = parser.parse_args()
    recs = pl.read_parquet(args.data_dir / f"recs_{args.users}.parquet")
    truth = pl.read_parquet(args.data_dir / f"truth_{args.users}.parquet")
    runs = _runs(recs)
    out = {"users": args.users, "backend": args.backend, "metrics": METRICS, "k": 10}

    start = time.perf_counter()
    for frame in runs.values():
        rankwise.evaluate(frame, truth, k=10, metrics=METRICS, backend=args.backend)
    out["three_separate_evaluates_s"] = round(time.perf_counter() - start, 2)

    start = time.perf_counter()
    res = rankwise.evaluate(runs, truth, k=10, metrics=METRICS, backend=args.backend)
    out["one_call_three_runs_with_cis_s"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    pairs = res.compare(test="t")
    out["pairwise_t_tests_s"] = round(time.perf_counter() - start, 2)
    out["ratio_to_separate"] = round((out["one_call_three_runs_with_cis_s"] + out["pairwise_t_tests_s"])
                                     / out["three_separate_evaluates_s"], 2)
    out["n_comparisons"] = pairs.height

    start = time.perf_counter()
    pair = res.long.filter(pl.col("run").is_in(["model", "swapped"])).select("run", "user", "k", "ndcg")
    randomization = rankwise.inference.stats.compare(pair, "user", ["ndcg"], test="randomization", n_resamples=10_000, seed=0)
    out["randomization_10k_one_pair_s"] = round(time.perf_counter() - start, 2)
    out["randomization_p"] = randomization["p_value"].item()
    out["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
