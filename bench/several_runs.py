"""Several runs in one evaluate(): the evaluate, then Result.per_user (the wide frame of every run), timed apart,
and the process's peak RSS. Each run is the same recommendations file (bench/generate.py), so the figures
isolate the cost of the runs' shaping; the defaults at k = 1, 5, 10, 20, 50, 100.

Usage: flock /tmp/rankwise-cpu.lock python bench/several_runs.py [--users 1M] [--runs 3]
(prints one JSON line; run it in a fresh process per version, e.g. PYTHONPATH=<checkout>/src for "before")
"""
from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", default="1M")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    import rankwise

    recs = str(DATA / f"recs_{a.users}.parquet")
    t0 = time.perf_counter()
    result = rankwise.evaluate({f"run{i}": recs for i in range(a.runs)}, str(DATA / f"truth_{a.users}.parquet"),
                               k=[1, 5, 10, 20, 50, 100])
    t1 = time.perf_counter()
    wide = result.per_user
    t2 = time.perf_counter()
    print(json.dumps({"users": a.users, "runs": a.runs, "evaluate_s": round(t1 - t0, 2),
                      "per_user_s": round(t2 - t1, 3), "per_user_shape": list(wide.shape),
                      "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}))


if __name__ == "__main__":
    main()
