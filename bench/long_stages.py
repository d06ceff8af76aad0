"""Issue 39, target 1: where the long-form path's time goes at 1M users x 100 (every metric, k = 1, 5, 10,
20, 50, 100), per engine, from outside the package: the timers of bench/fixed_cost.py (input checks,
the engine's run, every DuckDB statement by its SQL file, the Polars per_user plan, shaping) around one
rankwise.evaluate on the Parquet files, in a fresh process per engine; peak RSS (os.wait4) and load.

Usage: flock /tmp/rankwise-cpu.lock python bench/long_stages.py [--users 1M] [--engines duckdb,polars]
                                                                [--convention default] [--lists]
--lists: the same data in list form (lists_recs_/lists_truth_<N>.parquet of bench/long_vs_list.py).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
KS = [1, 5, 10, 20, 50, 100]


def child(engine: str, users: str, convention: str, lists: bool) -> dict:
    import fixed_cost as fc

    load = os.getloadavg()[0]
    import rankwise

    fc.instrument()
    fc.wrap_by_name({"grouped_runs": "layout check (grouped_runs: one run per user, ranks, repeats)",
                     "_checked_lists": "list checks (_checked_lists)"})
    pre = "lists_" if lists else ""
    recs, truth = (str(HERE / "data" / f"{pre}{t}_{users}.parquet") for t in ("recs", "truth"))
    fc.reset()
    t0 = time.perf_counter()
    res = rankwise.evaluate(recs, truth, k=KS, backend=engine, convention=convention)
    total = time.perf_counter() - t0
    stages = dict(fc._CALL)
    stages["other (evaluate minus the outermost stages)"] = total - fc._TOP[0]
    return {"engine": engine, "lists": lists, "convention": convention, "evaluate_s": total, "stages_s": stages,
            "per_user": list(res.per_user.shape), "load_1m_before": load, "load_1m_after": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", default="1M")
    ap.add_argument("--engines", default="duckdb,polars")
    ap.add_argument("--convention", default="default")
    ap.add_argument("--lists", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print("RESULT " + json.dumps(child(a.child, a.users, a.convention, a.lists)), flush=True)
        return
    for engine in a.engines.split(","):
        with tempfile.TemporaryFile("w+") as fo:
            cmd = [sys.executable, __file__, "--child", engine, "--users", a.users, "--convention", a.convention]
            proc = subprocess.Popen(cmd + (["--lists"] if a.lists else []), stdout=fo)
            _, status, usage = os.wait4(proc.pid, 0)
            fo.seek(0)
            out = fo.read()
        if os.waitstatus_to_exitcode(status):
            sys.exit(f"{engine} failed")
        r = json.loads([x for x in out.splitlines() if x.startswith("RESULT ")][-1][7:])
        print(json.dumps(r | {"peak_rss_gb": round(usage.ru_maxrss / 2**20, 2)}))
        print(f"\n## {engine} {'lists' if a.lists else 'long'} {a.convention}: evaluate {r['evaluate_s']:.2f} s, "
              f"peak RSS {usage.ru_maxrss / 2**20:.2f} GB, load {r['load_1m_before']:.1f} -> {r['load_1m_after']:.1f}")
        print("| stage | s |\n|---|---:|")
        for n, v in sorted(r["stages_s"].items(), key=lambda x: -x[1]):
            if v >= 0.005:
                print(f"| {n} | {v:.3f} |")


if __name__ == "__main__":
    main()
