"""Issue 39, target 2: rankwise against RecTools, RePlay and ranx, FIRST call, same in-memory frames.

At --users (default 100k) and each k of --ks (default 10,100; the recommendations cut to their top k:
1M rows at k = 10, 10M at k = 100), every (tool, metric group) runs in a fresh process
(bench/peers/first_call_peer.py): the data is loaded from .npz arrays into the tool's frames before the
clock starts (not timed), the import is timed apart, then the FIRST call computing the group's values.
rankwise runs under each library's preset (convention="rectools" / "replay" / "ranx") on Polars and
DuckDB, from a Polars DataFrame of the same arrays.

Groups:
  accuracy        precision, recall, map, ndcg, mrr, hit_rate @k   (recs_/truth_<users>.parquet)
                  vs ranx (preset ranx), RecTools calc_metrics (rectools), RePlay OfflineMetrics (replay)
  novelty, arp, item_coverage, serendipity, all (RecTools' four in one calc_metrics)   vs RecTools
  novelty (Surprisal), item_coverage (Coverage), all (OfflineMetrics of both)          vs RePlay
                  (beyond_recs_/beyond_train_<users>.parquet of generate.py --beyond; Serendipity's ground truth
                  is the train pairs, each (user, item) once)
Not run (no rankwise preset reproduces them): RecTools IntraListDiversity (Hamming distances on item
features), RePlay Novelty (share of recommended items outside the user's own train history),
Unexpectedness (needs a second, baseline recommender) and CategoricalDiversity (item categories).

Every library value must equal rankwise's (both engines, same preset) to 1e-9, else exit 1.
--reps N repeats the whole matrix N times (every repetition fresh processes); the table shows medians;
a process slower than --once-above seconds (60) runs once.
Run under the CPU lock: flock /tmp/rankwise-cpu.lock python bench/peers_first_call.py --reps 3

Usage: python bench/peers_first_call.py [--users 100k] [--ks 10,100] [--reps 3]
                                        [--libraries rectools,replay,ranx] [--groups accuracy,beyond]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEER = HERE / "peers" / "first_call_peer.py"
sys.path.insert(0, str(HERE / "peers"))
from first_call_peer import BEYOND  # noqa: E402

CONFORMANCE = HERE.parent / "tests" / "conformance"
VENV = {"rectools": "rectools", "replay": "replay", "ranx": "live"}


def write_arrays(users: str, ks: list[int], data_dir: Path, out: Path) -> None:
    """The tools' input arrays (.npz, numpy only: every venv can read them), once per size."""
    import numpy as np
    import polars as pl

    out.mkdir(parents=True, exist_ok=True)
    stamp = out / "done.json"
    if stamp.exists() and json.loads(stamp.read_text()) == {"ks": ks, "v": 2}:
        return

    def save(name, df):
        np.savez(out / f"{name}.npz", **{c: df[c].to_numpy() for c in df.columns})

    recs = pl.read_parquet(data_dir / f"recs_{users}.parquet")
    save("acc_truth", pl.read_parquet(data_dir / f"truth_{users}.parquet"))
    brecs = pl.read_parquet(data_dir / f"beyond_recs_{users}.parquet")
    train = pl.read_parquet(data_dir / f"beyond_train_{users}.parquet").select("user", "item")
    save("beyond_train", train)
    # Serendipity's ground truth: the train pairs once each (a label may not repeat; train repeats them)
    save("beyond_truth", train.unique(["user", "item"]).sort("user", "item"))
    for k in ks:
        save(f"acc_recs_{k}", recs.filter(pl.col("rank") <= k))
        save(f"beyond_recs_{k}", brecs.filter(pl.col("rank") <= k))
    stamp.write_text(json.dumps({"ks": ks, "v": 2}))


def python_of(tool: str) -> str:
    if tool.startswith("rankwise"):
        return sys.executable
    sys.path.insert(0, str(CONFORMANCE))
    from make_fixtures import ensure_venv

    return str(ensure_venv(VENV[tool], log=lambda m: print(m, file=sys.stderr)))


def run(cmd: list[str], keep_path: bool = False) -> dict:
    """One fresh process: its RESULT, wall time, peak RSS (os.wait4) and the load average. PYTHONPATH
    reaches only rankwise's processes (``keep_path``: to time a snapshot or a work tree)."""
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe, text=True,
                                env={k: v for k, v in os.environ.items() if keep_path or k != "PYTHONPATH"})
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        fo.seek(0), fe.seek(0)
        out, err = fo.read(), fe.read()
    lines = [x for x in out.splitlines() if x.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"{' '.join(cmd)} failed (rc {proc.returncode}):\n{err[-3000:]}")
    res = json.loads(lines[-1][7:])
    res |= {"wall_s": round(wall, 3), "peak_rss_gb": round(usage.ru_maxrss / 2**20, 2),
            "load_1m_before": round(load, 2)}
    return res


def matrix(libraries: list[str], groups: list[str], ks: list[int], scipy_row: bool = False) -> list[tuple]:
    """(tool, preset, group, k) for every process of one repetition (``scipy_row``: also rankwise-polars+scipy,
    the Polars engine with scipy.special imported before the clock)."""
    extra = ("rankwise-polars+scipy",) if scipy_row else ()
    jobs = []
    for k in ks:
        for library in libraries:
            lib_groups = (["accuracy"] if "accuracy" in groups else []) + \
                (list(BEYOND.get(library, {})) if "beyond" in groups else [])
            for group in lib_groups:
                for tool in ("rankwise-polars", "rankwise-duckdb", *extra, library):
                    jobs.append((tool, library, group, k))
    return jobs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", default="100k")
    ap.add_argument("--ks", default="10,100")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--libraries", default="rectools,replay,ranx")
    ap.add_argument("--groups", default="accuracy,beyond")
    ap.add_argument("--data-dir", type=Path, default=HERE / "data")
    ap.add_argument("--once-above", type=float, default=60.0,
                    help="a process slower than this (s) in the first repetition is not repeated")
    ap.add_argument("--scipy-row", action="store_true",
                    help="also rankwise-polars+scipy: scipy.special imported before the clock (a diagnostic row: "
                         "what the first call costs without scipy's first import; not in the best-of ratio)")
    ap.add_argument("--write-arrays", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json", type=Path, help="write every process's result here (default bench/results/)")
    a = ap.parse_args()
    ks = [int(k) for k in a.ks.split(",")]
    arrays = a.data_dir / f"first_call_{a.users}"
    if a.write_arrays:
        write_arrays(a.users, ks, a.data_dir, arrays)
        return
    t0 = time.perf_counter()
    # in a child process: this driver stays small, so the children's peak RSS is their own (a forked child
    # starts from its parent's high-water mark on Linux)
    subprocess.run([sys.executable, __file__, "--write-arrays", "--users", a.users, "--ks", a.ks,
                    "--data-dir", str(a.data_dir)], check=True)
    print(f"arrays ready in {time.perf_counter() - t0:.1f} s: {arrays}", file=sys.stderr)
    libraries = a.libraries.split(",")
    pythons = {tool: python_of(tool) for tool in ["rankwise", *libraries]}
    jobs = matrix(libraries, a.groups.split(","), ks, a.scipy_row)
    results: list[dict] = []
    slow = set()
    for rep in range(a.reps):
        for tool, preset, group, k in jobs:
            if (tool, preset, group, k) in slow:
                continue
            py = pythons["rankwise" if tool.startswith("rankwise") else tool]
            cmd = [py, str(PEER), "--tool", tool, "--group", group, "--k", str(k), "--data", str(arrays)]
            if tool.startswith("rankwise"):
                cmd += ["--preset", preset]
            res = run(cmd, keep_path=tool.startswith("rankwise")) | {"rep": rep, "library": preset}
            results.append(res)
            if res["wall_s"] > a.once_above:
                slow.add((tool, preset, group, k))
            print(json.dumps(res), flush=True)
    path = a.json or HERE / "results" / f"peers_first_call_{a.users}_{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(results, indent=1))
    sys.exit(report(results, ks))


def report(results: list[dict], ks: list[int]) -> int:
    """Median table (call s, import s, wall s) per (library, group, k, tool); value agreement."""
    cells: dict = {}
    for r in results:
        cells.setdefault((r["library"], r["group"], r["k"], r["tool"]), []).append(r)
    problems = []
    print("\n| library | group | k | tool | first call s (median) | runs | import s | process wall s | "
          "peak RSS | ratio rankwise best / library |")
    print("|---|---|---:|---|---:|---|---:|---:|---:|---:|")
    order = sorted({key[:3] for key in cells}, key=lambda x: (x[2], x[0], x[1] != "accuracy", x[1]))
    for library, group, k in order:
        row = {t: cells[(library, group, k, t)] for t in ("rankwise-polars", "rankwise-duckdb",
                                                          "rankwise-polars+scipy", library)
               if (library, group, k, t) in cells}
        med = {t: statistics.median(r["call_s"] for r in rs) for t, rs in row.items()}
        best = min(med.get("rankwise-polars", math.inf), med.get("rankwise-duckdb", math.inf))
        for tool, rs in row.items():
            calls = ", ".join(f"{r['call_s']:.3f}" for r in rs)
            ratio = f"{best / med[library]:.2f}" if tool == library and med.get(library) else ""
            if tool.endswith("+scipy") and med.get(library):
                ratio = f"({med[tool] / med[library]:.2f}, scipy pre-imported)"
            print(f"| {library} | {group} | {k} | {tool} {rs[0]['version']} | {med[tool]:.3f} | {calls} | "
                  f"{statistics.median(r['import_s'] for r in rs):.2f} | "
                  f"{statistics.median(r['wall_s'] for r in rs):.2f} | "
                  f"{max(r['peak_rss_gb'] for r in rs):.2f} | {ratio} |")
        theirs = row.get(library, [{}])[0].get("values", {})
        for tool in ("rankwise-polars", "rankwise-duckdb", "rankwise-polars+scipy"):
            if tool not in row and tool.endswith("+scipy"):  # the optional row (--scipy-row)
                continue
            ours = row.get(tool, [{}])[0].get("values", {})
            for m, v in theirs.items():
                if not math.isclose(v, ours.get(m, math.nan), rel_tol=1e-9, abs_tol=1e-9):
                    problems.append(f"{library} {group} k={k} {m}: library {v!r}, {tool} {ours.get(m)!r}")
    loads = [r["load_1m_before"] for r in results]
    print(f"\nload average (1 min) before each process: min {min(loads)}, median {statistics.median(loads)}, "
          f"max {max(loads)}")
    for p in problems:
        print("DIFFERS:", p)
    if not problems:
        print("values: every library value equals rankwise's (Polars and DuckDB, same preset) to 1e-9")
    return 1 if problems else 0


if __name__ == "__main__":
    main()
