"""A dataset larger than the engine's memory: evaluate with memory_limit, check a sample of users.

    python bench/profile_memory_cap.py 3M duckdb 2GB [--every 100]

Runs evaluate() on the full files with the cap, then re-evaluates, uncapped, only the users whose id
is a multiple of --every (filtered inputs; a user's metrics depend only on that user's rows) and
asserts their per-user rows are identical. Prints wall time, peak RSS and the load average.
"""

import argparse
import json
import os
import resource
import time
from datetime import datetime, timezone

import polars as pl
import polars.testing as plt

import rankwise

ap = argparse.ArgumentParser()
ap.add_argument("size")
ap.add_argument("backend")
ap.add_argument("limit")
ap.add_argument("--every", type=int, default=100)
ap.add_argument("--k", default="1,5,10,20,50,100")
args = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
recs, truth = (os.path.join(here, "data", f"{t}_{args.size}.parquet") for t in ("recs", "truth"))
ks = [int(k) for k in args.k.split(",")]
print("load average", os.getloadavg())
load_before = os.getloadavg()[0]
t0 = time.perf_counter()
capped = rankwise.evaluate(recs, truth, k=ks, backend=args.backend, memory_limit=args.limit)
wall = time.perf_counter() - t0
peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
print(f"capped evaluate {wall:.2f} s, per_user {capped.per_user.shape}, peak RSS so far {peak_gb:.2f} GB")
sample = pl.col("user") % args.every == 0
free = rankwise.evaluate(pl.scan_parquet(recs).filter(sample), pl.scan_parquet(truth).filter(sample),
                         k=ks, backend=args.backend)
picked = capped.per_user.filter(sample).sort("user")
plt.assert_frame_equal(picked, free.per_user.sort("user"))
print(f"sample of {picked.height} users identical to an uncapped run")
print("load average", os.getloadavg())
# bench/run.py's report reads the latest of these
out = os.path.join(here, "results", f"memory_cap_{args.size}_{args.backend}.json")
with open(out, "w") as f:
    json.dump({"size": args.size, "backend": args.backend, "limit": args.limit, "k": ks, "wall_s": round(wall, 2),
               "process_peak_rss_gb": round(peak_gb, 2), "users": capped.per_user.height,
               "sample_users_identical": picked.height, "load_1m_before": load_before,
               "command": f"python bench/profile_memory_cap.py {args.size} {args.backend} {args.limit}",
               "timestamp": datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")}, f, indent=1)
print("wrote", out)
