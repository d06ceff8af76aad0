"""Before and after a change, alternated in one machine session: rankwise.evaluate end to end from
Parquet, each run in a fresh process, one version then the other, repeated.

    git worktree add /tmp/before <commit>        # the "before" checkout (its src/ is imported)
    python bench/before_after.py --before /tmp/before --sizes 100k,1M --reps 3 [--list-form]

Each process imports rankwise from --before/src or from this checkout's src (PYTHONPATH), evaluates
the bench data (bench/generate.py) under one preset's definitions (--convention; its metric limits
lifted) with every metric both versions have ("same metrics") and, if the versions differ in their
metric lists, with every metric of each ("all metrics"), at
k = 1, 5, 10, 20, 50, 100 and at k = 10, on both backends. --list-form also times bench/list_form.py
(1M users in list form) for both. Prints a table of medians (wall seconds, peak RSS MB); the
1-minute load average is printed with each row.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
HERE = BENCH.parent
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import rankwise
recs, truth, backend, ks, metrics = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5]
metrics = None if metrics == "all" else metrics.split(",")
convention = sys.argv[6]
t1 = time.perf_counter()
res = rankwise.evaluate(recs, truth, k=ks, metrics=metrics, backend=backend,
                        convention=rankwise.PRESETS[convention].replace(metrics=None))
n = res.per_user.height
t2 = time.perf_counter()
print("RESULT " + json.dumps({"import": t1 - t0, "evaluate": t2 - t1, "rows": n,
                              "metrics": sorted(set(res.summary["metric"].to_list()))}))
"""


def run(src: Path, args: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M", sys.executable, "-c", CHILD, *args],
                         env=env, capture_output=True, text=True, check=True)
    result = json.loads(next(line for line in out.stdout.splitlines() if line.startswith("RESULT "))[7:])
    wall, rss = next(line for line in out.stderr.splitlines() if line.startswith("TIME ")).split()[1:]
    return {**result, "wall": float(wall), "rss_mb": int(rss) / 1024, "load": os.getloadavg()[0]}


def metric_list(src: Path) -> list[str]:
    code = ("try:\n import rankwise.metrics.declarations as m\n"
            "except ImportError:\n import rankwise.metrics as m\n"   # before the layout (40e98eb and earlier)
            "print(','.join(m.METRICS))")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(src)),
                         capture_output=True, text=True, check=True)
    return out.stdout.strip().split(",")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="a checkout of the earlier commit")
    ap.add_argument("--sizes", default="100k,1M")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--backends", default="duckdb,polars")
    ap.add_argument("--list-form", action="store_true")
    ap.add_argument("--convention", default="ranx", help="the preset both versions evaluate under")
    ap.add_argument("--before-convention", help="the same definitions under another name in the before checkout "
                    "(e.g. --convention recommended_ideal --before-convention default)")
    a = ap.parse_args()
    conventions = {"before": a.before_convention or a.convention, "after": a.convention}
    versions = {"before": a.before.resolve() / "src", "after": HERE / "src"}
    lists = {v: metric_list(src) for v, src in versions.items()}
    same = [m for m in lists["before"] if m in lists["after"]]
    sets = {"same metrics": {v: ",".join(same) for v in versions}}
    if lists["before"] != lists["after"]:
        sets["all metrics"] = {v: "all" for v in versions}
    rows = []
    for size in a.sizes.split(","):
        recs, truth = BENCH / "data" / f"recs_{size}.parquet", BENCH / "data" / f"truth_{size}.parquet"
        for backend in a.backends.split(","):
            for label, ks in (("k=1..100", [1, 5, 10, 20, 50, 100]), ("k=10", [10])):
                for set_name, per_version in sets.items():
                    times = {v: [] for v in versions}
                    for _ in range(a.reps):
                        for v, src in versions.items():  # alternated: before, after, before, after, ...
                            times[v].append(run(src, [str(recs), str(truth), backend, json.dumps(ks), per_version[v],
                                                      conventions[v]]))
                    row = {"size": size, "backend": backend, "k": label, "metrics": set_name,
                           "convention": conventions["after"]}
                    for v in versions:
                        row[v] = (statistics.median(r["wall"] for r in times[v]),
                                  statistics.median(r["rss_mb"] for r in times[v]),
                                  max(r["load"] for r in times[v]),
                                  [round(r["wall"], 2) for r in times[v]])
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    if a.list_form:
        for rep in range(a.reps):
            for v, src in versions.items():
                out = subprocess.run([sys.executable, str(BENCH / "list_form.py"), "--users", "1M"],
                                     env=dict(os.environ, PYTHONPATH=str(src)), capture_output=True, text=True)
                print(json.dumps({"list_form": v, "rep": rep, "load": os.getloadavg()[0],
                                  "out": out.stdout.strip().splitlines()[-12:]}), flush=True)
    print("\n| users | backend | convention | k | metrics | before s (runs) | after s (runs) | after / before | "
          "RSS MB before / after |")
    print("|---:|---|---|---|---|---:|---:|---:|---:|")
    for r in rows:
        b, f = r["before"], r["after"]
        print(f"| {r['size']} | {r['backend']} | {r['convention']} | {r['k']} | {r['metrics']} | "
              f"{b[0]:.2f} ({', '.join(map(str, b[3]))}) | "
              f"{f[0]:.2f} ({', '.join(map(str, f[3]))}) | {f[0] / b[0]:.2f} | {b[1]:.0f} / {f[1]:.0f} |")


if __name__ == "__main__":
    main()
