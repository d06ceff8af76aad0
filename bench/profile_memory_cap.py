"""A dataset larger than the engine's memory: evaluate with memory_limit, check a sample of users.

    python bench/profile_memory_cap.py 3M duckdb 2GB [--every 100]

Runs evaluate() on the full files with the cap, then re-evaluates, uncapped, only the users whose id
is a multiple of --every (filtered inputs; a user's metrics depend only on that user's rows) and
asserts their per-user rows are identical. Prints wall time, peak RSS and the load average.
"""

import argparse
import os
import resource
import time

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
t0 = time.perf_counter()
capped = rankwise.evaluate(recs, truth, k=ks, backend=args.backend, memory_limit=args.limit)
print(f"capped evaluate {time.perf_counter() - t0:.2f} s, per_user {capped.per_user.shape}, "
      f"peak RSS so far {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB")
sample = pl.col("user") % args.every == 0
free = rankwise.evaluate(pl.scan_parquet(recs).filter(sample), pl.scan_parquet(truth).filter(sample),
                         k=ks, backend=args.backend)
picked = capped.per_user.filter(sample).sort("user")
plt.assert_frame_equal(picked, free.per_user.sort("user"))
print(f"sample of {picked.height} users identical to an uncapped run")
print("load average", os.getloadavg())
