"""Issue 39, target 1: long form vs list form vs the scan floor, both engines, peak RSS, one command.

At --users (default 1M) x 100, every metric at k = 1, 5, 10, 20, 50, 100, every tool in a fresh process
(peak RSS from os.wait4; this driver stays small so the number is the child's own), --reps times, medians:
  floor-polars / floor-duckdb    bench/peers/floor.py: scan both long Parquet files, count rows per user
  floor-join-polars              bench/peers/floor.py --level join: the two files joined on (user, item),
                                 matches counted per user (with --tools floor)
  floor-lists-polars             bench/peers/floor.py --level lists: the list-form files read, every list
                                 decoded (with --tools floor)
  long-<engine>                  rankwise.evaluate(recs.parquet, truth.parquet)            (today's path)
  list-<engine>                  rankwise.evaluate on the same data in list form, from Parquet
                                 (lists_recs_/lists_truth_<N>.parquet, written once from the long files)
  grouped-<grouper>-<engine>     prototype: the long files grouped into per-user lists (Polars group_by or
                                 DuckDB list(... ORDER BY rank)) with exact rank checks, then the list path
                                 (bench/prototypes/long_to_lists.py); grouped-runs-*: lists cut at the run
                                 starts of a file already in runs (no group_by, no sort)
for each --conventions (default, recommended_ideal; the grouped prototypes under the first one only). Ratios printed: long/floor and list/floor on the faster
engine (floor = the faster floor), long/list per engine and best/best, grouped/long, peak RSS against
the issue's 1.5 GB.

Usage: flock /tmp/rankwise-cpu.lock python bench/long_vs_list.py [--users 1M] [--reps 3]
           [--conventions default,recommended_ideal] [--tools floor,long,list,grouped]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROTO = HERE / "prototypes" / "long_to_lists.py"
FLOOR = HERE / "peers" / "floor.py"
GOALS = {"long/floor": 4.0, "long/list": 1.3, "list/floor": 3.0, "peak GB": 1.5}


def run(cmd: list[str]) -> dict:
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        proc = subprocess.Popen([str(c) for c in cmd], stdout=fo, stderr=fe, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        fo.seek(0), fe.seek(0)
        out, err = fo.read(), fe.read()
    rc = os.waitstatus_to_exitcode(status)
    lines = [x for x in out.splitlines() if x.startswith("RESULT ")]
    if rc or not lines:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed (rc {rc}):\n{err[-3000:]}")
    res = json.loads(lines[-1][7:])
    return res | {"wall_s": round(wall, 3), "peak_rss_gb": round(usage.ru_maxrss / 2**20, 2),
                  "load_1m_before": round(load, 2), "load_1m_after": round(os.getloadavg()[0], 2)}


GROUPED = "polars-polars,polars-duckdb,duckdb-duckdb,runs-polars,runs-duckdb"


def jobs(users: str, conventions: list[str], tools: list[str], grouped=GROUPED.split(",")) -> list[tuple[str, str, list]]:
    recs, truth = HERE / "data" / f"recs_{users}.parquet", HERE / "data" / f"truth_{users}.parquet"
    out = []
    if "floor" in tools:
        for engine in ("polars", "duckdb"):
            out.append((f"floor-{engine}", "-", [sys.executable, FLOOR, "--recs", recs, "--truth", truth,
                                                  "--engine", engine]))
        # the bare join of the recommended rows with the labels (no metric): what any plan that joins pays
        out.append(("floor-join-polars", "-", [sys.executable, FLOOR, "--recs", recs, "--truth", truth, "--level", "join"]))
        # the list-form files read, every list decoded: the list form's own scan
        lists = [HERE / "data" / f"lists_{n}_{users}.parquet" for n in ("recs", "truth")]
        out.append(("floor-lists-polars", "-", [sys.executable, FLOOR, "--recs", lists[0], "--truth", lists[1],
                                                "--level", "lists"]))
    for conv in conventions:
        proto = [sys.executable, PROTO, "--users", users, "--convention", conv]
        for engine in ("polars", "duckdb"):
            if "long" in tools:
                out.append((f"long-{engine}", conv, proto + ["--mode", "long", "--backend", engine]))
            if "list" in tools:
                out.append((f"list-{engine}", conv, proto + ["--mode", "lists-file", "--backend", engine]))
        if "grouped" in tools and conv == conventions[0]:  # the prototype under the first convention only
            for grouper, engine in (tuple(g.split("-")) for g in grouped):
                out.append((f"grouped-{grouper}-{engine}", conv,
                            proto + ["--mode", f"group-{grouper}", "--backend", engine]))
    return out


def seconds(res: dict) -> float:
    """Floor: its one timed section (scan, join or lists); rankwise: everything after the import (group + evaluate)."""
    if "timings" in res:
        return next(iter(res["timings"].values()))
    return res["total_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", default="1M")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--conventions", default="default,recommended_ideal")
    ap.add_argument("--tools", default="floor,long,list,grouped")
    ap.add_argument("--grouped", default=GROUPED, help="the prototypes, <grouper>-<engine>")
    a = ap.parse_args()
    data = HERE / "data"
    if not (data / f"lists_recs_{a.users}.parquet").exists():
        subprocess.run([sys.executable, PROTO, "--users", a.users, "--write-lists"], check=True)
    todo = jobs(a.users, a.conventions.split(","), a.tools.split(","), a.grouped.split(","))
    results = []
    for rep in range(a.reps):
        for name, conv, cmd in todo:
            res = run(cmd) | {"tool": name, "conv": conv, "rep": rep, "seconds": None}
            res["seconds"] = seconds(res)
            results.append(res)
            print(json.dumps(res), flush=True)
    path = HERE / "results" / f"long_vs_list_{a.users}_{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(results, indent=1))
    report(results)


def report(results: list[dict]) -> None:
    cells: dict = {}
    for r in results:
        cells.setdefault((r["conv"], r["tool"]), []).append(r)
    med = {key: statistics.median(r["seconds"] for r in rs) for key, rs in cells.items()}
    rss = {key: max(r["peak_rss_gb"] for r in rs) for key, rs in cells.items()}
    print("\n| convention | tool | median s (after import) | runs s | peak RSS GB | process wall s | load 1 min |")
    print("|---|---|---:|---|---:|---:|---|")
    for (conv, tool), rs in cells.items():
        runs = ", ".join("%.2f" % r["seconds"] for r in rs)
        loads = ", ".join(str(r["load_1m_before"]) for r in rs)
        print(f"| {conv} | {tool} | {med[conv, tool]:.2f} | {runs} | "
              f"{rss[conv, tool]:.2f} | {statistics.median(r['wall_s'] for r in rs):.2f} | "
              f"{loads} |")
    floors = {e: med.get(("-", f"floor-{e}")) for e in ("polars", "duckdb")}
    if not all(floors.values()):
        print("\nno floor run (--tools without floor): no ratios to the floor")
    floor = min((v for v in floors.values() if v), default=float("nan"))
    if all(floors.values()):
        print(f"\nfloor: polars {floors['polars']:.2f} s, duckdb {floors['duckdb']:.2f} s; best {floor:.2f} s")
    print("| convention | ratio | polars | duckdb | best engine | goal |")
    print("|---|---|---:|---:|---:|---:|")
    for tool, what in (("floor-join-polars", "bare join / floor (no metric)"),
                       ("floor-lists-polars", "list files read / floor (no metric)")):
        if med.get(("-", tool)):
            print(f"| - | {what} | {med['-', tool] / floor:.2f} | | | |")
    for conv in sorted({c for c, _ in cells if c != "-"}):
        def m(tool):
            return med.get((conv, tool))
        long = {e: m(f"long-{e}") for e in ("polars", "duckdb")}
        lst = {e: m(f"list-{e}") for e in ("polars", "duckdb")}
        if all(long.values()):
            print(f"| {conv} | long/floor | {long['polars'] / floor:.2f} | {long['duckdb'] / floor:.2f} | "
                  f"{min(long.values()) / floor:.2f} | <= 4 |")
        if all(lst.values()):
            print(f"| {conv} | list/floor | {lst['polars'] / floor:.2f} | {lst['duckdb'] / floor:.2f} | "
                  f"{min(lst.values()) / floor:.2f} | <= 3 |")
        if all(long.values()) and all(lst.values()):
            print(f"| {conv} | long/list | {long['polars'] / lst['polars']:.2f} | {long['duckdb'] / lst['duckdb']:.2f}"
                  f" | {min(long.values()) / min(lst.values()):.2f} | <= 1.3 |")
            print(f"| {conv} | peak RSS GB long / list | {rss[conv, 'long-polars']:.2f} / {rss[conv, 'list-polars']:.2f}"
                  f" | {rss[conv, 'long-duckdb']:.2f} / {rss[conv, 'list-duckdb']:.2f} | | <= 1.5 |")
        for tool in [t for c, t in cells if c == conv and t.startswith("grouped")]:
            engine = tool.rsplit("-", 1)[1]
            if long.get(engine):
                print(f"| {conv} | {tool} / long-{engine} | | | {m(tool) / long[engine]:.2f} "
                      f"({m(tool):.2f} s, {rss[conv, tool]:.2f} GB) | |")


if __name__ == "__main__":
    main()
