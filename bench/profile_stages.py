"""Per-stage wall time and peak RSS of rankwise.evaluate on the bench data.

    python bench/profile_stages.py 1M duckdb [--k 1,5,10,20,50,100] [--memory-limit 2GB] [--end-to-end]

Stages: prepare (validation + canonical tables), per_user (the engine), summary, wide, excluded.
Peak RSS is this process's ru_maxrss (DuckDB and Polars run in-process). Run when `uptime` is low.
"""

import argparse
import os
import resource
import time

import rankwise
from rankwise import api
from rankwise.engines import engine
from rankwise.inputs import normalize as _inputs
from rankwise.engines import shape as _shape
from rankwise.metrics.declarations import parse_request

ap = argparse.ArgumentParser()
ap.add_argument("size")
ap.add_argument("backend")
ap.add_argument("--k", default="1,5,10,20,50,100")
ap.add_argument("--memory-limit", default=None)
ap.add_argument("--end-to-end", action="store_true", help="time one evaluate() call only")
args = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
recs, truth = (os.path.join(here, "data", f"{t}_{args.size}.parquet") for t in ("recs", "truth"))
ks = [int(k) for k in args.k.split(",")]
print("load average", os.getloadavg())
t0 = time.perf_counter()
if args.end_to_end:
    res = rankwise.evaluate(recs, truth, k=ks, backend=args.backend, memory_limit=args.memory_limit)
    print("evaluate", round(time.perf_counter() - t0, 2), res.per_user.shape)
else:
    conv = rankwise.PRESETS["default"]
    req = parse_request(None, ks)
    marks = [("start", t0)]
    prep = _inputs.prepare(recs, truth, _inputs.Columns(), conv)
    marks.append(("prepare", time.perf_counter()))
    eng = engine(args.backend)
    out = eng.run(prep, req, conv, memory_limit=api.memory_bytes(args.memory_limit, eng))
    marks.append(("engine", time.perf_counter()))  # per-user rows, summary and counts in one session
    long = _shape.long(out.per_user, req, "user")
    w = _shape.wide(long, "user", req.ks)
    marks.append(("shape", time.perf_counter()))
    ex = _shape.excluded(prep, out.counts, conv)
    marks.append(("excluded", time.perf_counter()))
    for (_, a), (name, b) in zip(marks, marks[1:]):
        print(f"{name:10s} {b - a:7.2f} s")
    print(f"{'total':10s} {marks[-1][1] - t0:7.2f} s   per_user {w.shape}")
print("peak RSS GB", round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2))
print("load average", os.getloadavg())
