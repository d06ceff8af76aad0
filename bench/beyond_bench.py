"""Beyond-accuracy metrics at scale: every one but ild and serendipity at k = 10 and 100.

Recommendations and train interactions from bench/generate.py (the ground truth file stands in for
the train interactions: ~12 rows per user over the same Zipf item popularity).

Usage: python bench/beyond_bench.py [--users 1M] [--backend duckdb|polars]
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import rankwise

METRICS = ["novelty", "arp", "long_tail_share", "item_coverage", "gini", "exposure_entropy", "personalization"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", default="1M")
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).parent / "data")
    parser.add_argument("--backend", default="duckdb")
    args = parser.parse_args()
    recs, train = args.data_dir / f"recs_{args.users}.parquet", args.data_dir / f"truth_{args.users}.parquet"
    out = {"users": args.users, "backend": args.backend, "metrics": METRICS}
    for ks in ([10], [10, 100]):
        start = time.perf_counter()
        rankwise.evaluate(str(recs), None, k=ks, metrics=METRICS, train=str(train), backend=args.backend)
        out[f"k={','.join(map(str, ks))}_s"] = round(time.perf_counter() - start, 2)
    out["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
