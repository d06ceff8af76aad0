"""Beyond-accuracy metrics at scale: every one but ild and serendipity at k = 10 and 100; with
``--ild``, ild alone at k = 10 on random 64-dimensional embeddings of every recommended item.

Recommendations and train interactions from bench/generate.py (the ground truth file stands in for
the train interactions: ~12 rows per user over the same Zipf item popularity).

Usage: python bench/beyond_bench.py [--users 1M] [--backend duckdb|polars] [--ild]
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
    parser.add_argument("--ild", action="store_true", help="ild at k = 10 on 64-dimensional embeddings")
    args = parser.parse_args()
    recs, train = args.data_dir / f"recs_{args.users}.parquet", args.data_dir / f"truth_{args.users}.parquet"
    if args.ild:
        print(json.dumps(ild(recs, args.backend) | {"users": args.users}))
        return
    out = {"users": args.users, "backend": args.backend, "metrics": METRICS}
    for ks in ([10], [10, 100]):
        start = time.perf_counter()
        rankwise.evaluate(str(recs), None, k=ks, metrics=METRICS, train=str(train), backend=args.backend)
        out[f"k={','.join(map(str, ks))}_s"] = round(time.perf_counter() - start, 2)
    out["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    print(json.dumps(out))


def ild(recs: Path, backend: str, dim: int = 64) -> dict:
    """ild@10 with a random unit-free embedding per recommended item (seeded)."""
    import numpy as np
    import polars as pl

    items = pl.scan_parquet(recs).select(pl.col("item").unique().sort()).collect()["item"]
    vectors = np.random.default_rng(0).standard_normal((len(items), dim))
    features = pl.DataFrame({"item": items, "embedding": vectors}, schema={"item": items.dtype,
                                                                           "embedding": pl.Array(pl.Float64, dim)})
    start = time.perf_counter()
    rankwise.evaluate(str(recs), None, k=10, metrics=["ild"], item_features=features, backend=backend)
    return {"backend": backend, "metric": "ild", "items": len(items), "dim": dim,
            "k=10_s": round(time.perf_counter() - start, 2),
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}


if __name__ == "__main__":
    main()
