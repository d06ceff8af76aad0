"""read_trec_run alone, two source trees alternated (issue 38: the TREC reader before and after).

Each measurement is a fresh process, ``read_trec_run(RUN)`` under ``/usr/bin/time -f "%e %M %U %S"`` (wall
s, peak RSS KB, user and system CPU s; the call alone timed inside too), the CPU lock held, the 1-minute load average read before and after. Repetition r runs the
trees in the order given when r is even, reversed when odd. The run files are bench/trec_speed.py's
(bench/data/trec_<Q>x1000/run.txt, generated when missing).

  git archive <commit> src | tar -x -C /tmp/reader-before
  python bench/read_trec_run_timing.py before=/tmp/reader-before/src after=src --sizes 1M,10M --reps 3 \\
      --json bench/results/read_trec_run_before_after.jsonl
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from trec_speed import LOCK, SIZES, generate

READ = ("import sys, time; from rankwise.inputs.trec import read_trec_run; t = time.perf_counter(); "
        "read_trec_run(sys.argv[1]); print(round(time.perf_counter() - t, 3))")


def load1() -> float:
    return os.getloadavg()[0]


def measure(src: str, run: Path, lock: bool) -> dict:
    """One fresh process reading ``run`` with rankwise from ``src``: wall s (the process, and the call
    alone), CPU s (user + system), peak RSS MB, loads."""
    cmd = ["/usr/bin/time", "-f", "%e %M %U %S", sys.executable, "-c", READ, str(run)]
    if lock:
        cmd = ["flock", LOCK, *cmd]
    before = load1()
    out = subprocess.run(["nice", *cmd], env=os.environ | {"PYTHONPATH": src}, capture_output=True, text=True,
                         check=True)
    wall, kb, user, system = out.stderr.strip().splitlines()[-1].split()
    return {"wall_s": float(wall), "read_s": float(out.stdout.split()[-1]), "cpu_s": round(float(user) + float(system), 2),
            "peak_rss_mb": round(int(kb) / 1024), "load1_before": before,
            "load1_after": load1()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", nargs="+", help="name=path of a tree's src/ directory")
    ap.add_argument("--sizes", default="1M,10M")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", type=Path, help="append one JSON line per measurement")
    ap.add_argument("--no-lock", dest="lock", action="store_false")
    a = ap.parse_args()
    trees = [t.split("=", 1) for t in a.trees]
    for size in a.sizes.split(","):
        q = SIZES[size]
        run, _ = generate(q, 1_000, HERE / "data" / f"trec_{q}x1000")
        for rep in range(a.reps):
            for name, src in trees if rep % 2 == 0 else trees[::-1]:
                row = {"size": size, "rep": rep, "tree": name} | measure(os.path.abspath(src), run, a.lock)
                print(json.dumps(row), flush=True)
                if a.json:
                    with open(a.json, "a") as f:
                        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
