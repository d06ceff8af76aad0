"""Beyond-accuracy metrics at scale: every one but ild and serendipity at k = 10 and 100; with
``--ild``, ild alone at k = 10 on random 64-dimensional embeddings of every recommended item.

Data (bench/generate.py): by default the shape issue 10 names (``--shape issue``, files of
``generate.py --beyond``): 100 items per user from a 100k-item catalog (passed as ``items``), 20 train
interactions per user. ``--shape shared``: the accuracy benches' files instead, a 1M-item universe, the
ground truth file standing in for the train interactions (~12 rows per user over the same Zipf
popularity), no ``items`` (the catalog is the train items).

With ``--peers rectools,evidently``: each library's beyond-accuracy metrics at k = 10 against rankwise under
the matching preset (convention="rectools" / "evidently") on Polars and DuckDB, every tool its own process
(rankwise in this interpreter, the library in its conformance venv, tests/conformance/make_fixtures.py):
wall time of the process, its import, read (Parquet -> the library's input) and metric times, peak RSS.
The libraries' means must equal rankwise's to 1e-9 (else exit 1, unless KNOWN_DIFFERENCES gives the
reason); a metric still running after --budget seconds (default 600) is killed and reported as did not
finish, and the library is run again for the metrics after it. Peers: bench/peers/<library>_beyond_peer.py.

Usage: python bench/beyond_bench.py [--users 1M] [--backend duckdb|polars] [--ild] [--shape issue|shared]
       python bench/beyond_bench.py --users 100k --peers rectools,evidently [--budget 600]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import queue
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

_T0 = time.perf_counter()
import rankwise  # noqa: E402  (timed: the rankwise tool process reports its import time like the peers)

IMPORT_S = time.perf_counter() - _T0
METRICS = ["novelty", "arp", "long_tail_share", "item_coverage", "gini", "exposure_entropy", "personalization"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", default="1M")
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).parent / "data")
    parser.add_argument("--backend", default="duckdb")
    parser.add_argument("--ild", action="store_true", help="ild at k = 10 on 64-dimensional embeddings")
    parser.add_argument("--peers", help="comma-separated libraries (rectools, evidently): time them against rankwise")
    parser.add_argument("--budget", type=float, default=600.0, help="seconds one peer metric may run (--peers)")
    parser.add_argument("--shape", choices=["issue", "shared"], default="issue",
                        help="issue: generate.py --beyond's files (100k-item catalog); shared: recs_/truth_ files")
    parser.add_argument("--as-tool", metavar="CONVENTION", help=argparse.SUPPRESS)  # internal: rankwise's process
    args = parser.parse_args()
    if args.shape == "issue":
        recs, train = (args.data_dir / f"beyond_{name}_{args.users}.parquet" for name in ("recs", "train"))
        items = args.data_dir / "beyond_items.parquet"
    else:
        recs, train = args.data_dir / f"recs_{args.users}.parquet", args.data_dir / f"truth_{args.users}.parquet"
        items = None
    missing = [p for p in (recs, train, items) if p is not None and not p.exists()]
    if missing:
        sys.exit(f"missing {', '.join(map(str, missing))}: run python bench/generate.py --sizes {args.users}"
                 + (" --beyond" if args.shape == "issue" else ""))
    if args.as_tool:
        rankwise_tool(args.as_tool, recs, train, args.backend)
        return
    if args.peers:
        sys.exit(peers(args.peers.split(","), recs, train, args))
    if args.ild:
        print(json.dumps(ild(recs, args.backend) | {"users": args.users}))
        return
    out = {"users": args.users, "backend": args.backend, "shape": args.shape, "metrics": METRICS}
    for ks in ([10], [10, 100]):
        start = time.perf_counter()
        rankwise.evaluate(str(recs), None, k=ks, metrics=METRICS, train=str(train),
                          items=None if items is None else str(items), backend=args.backend)
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


# ------------------------------------------------------------------------------------------------ --peers
PEER_K = 10
PEER_DIR = Path(__file__).resolve().parent / "peers"
CONFORMANCE = Path(__file__).resolve().parents[1] / "tests" / "conformance"
# library -> its metric groups (one START/METRIC each in the peer) -> the rankwise metrics each gives; truth: the
# ground truth is read (RecTools' Serendipity: the truth file, which also stands in for train, as above)
PEERS = {
    "rectools": {"groups": {"novelty": ["novelty"], "arp": ["arp"], "item_coverage": ["item_coverage"],
                            "serendipity": ["serendipity"]}, "truth": True},
    "evidently": {"groups": {"novelty": ["novelty"], "popularity_bias": ["arp", "item_coverage", "gini"],
                             "personalization": ["personalization"]}, "truth": False},
}
# (library, metric) -> why its value may differ from rankwise's preset (none so far: every value agrees)
KNOWN_DIFFERENCES: dict[tuple[str, str], str] = {}
# RecTools' venv has no Parquet reader: pyarrow goes to a directory of its own on the peer's PYTHONPATH (the
# conformance venv is left as make_fixtures built it); 20.0.0 still runs on that venv's numpy 1.26
PYARROW_FOR = {"rectools": "pyarrow==20.0.0"}


def peer_python(library: str) -> tuple[Path, dict]:
    """The library's conformance venv (built or reused by make_fixtures.ensure_venv) and the peer's extra env."""
    sys.path.insert(0, str(CONFORMANCE))
    from make_fixtures import ensure_venv

    python = ensure_venv(library, log=lambda msg: print(msg, file=sys.stderr))
    if library not in PYARROW_FOR:
        return python, {"PYTHONPATH": None}  # never rankwise's own path (e.g. a pinned source tree)
    extras = Path.home() / ".cache" / "rankwise-bench" / "beyond-extras" / library
    if not (extras / "pyarrow").exists():
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--target", str(extras),
                        PYARROW_FOR[library]], check=True)
    return python, {"PYTHONPATH": str(extras)}


def run_process(cmd: list, env: dict, budget: float) -> dict:
    """Run one tool process speaking the START / METRIC / RESULT protocol (bench/peers/_common.py), in this
    environment updated by ``env`` (None: unset): its wall time, peak RSS (os.wait4: the process and its
    waited-for children), the METRIC lines; a stage running longer than ``budget`` seconds kills the process
    (its own session) and is reported in ``dnf``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={k: v for k, v in {**os.environ, **env}.items() if v is not None},
                            start_new_session=True)
    lines: queue.Queue = queue.Queue()
    stderr: list[str] = []
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout] + [lines.put(None)], daemon=True).start()
    threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True).start()
    out: dict = {"metrics": {}}
    stage, stage_t0 = "import and read", time.perf_counter()
    while True:
        try:
            line = lines.get(timeout=max(0.0, stage_t0 + budget - time.perf_counter()))
        except queue.Empty:
            os.killpg(proc.pid, signal.SIGKILL)
            out["dnf"] = {"name": stage, "waited_s": round(time.perf_counter() - stage_t0, 1)}
            break
        if line is None:
            break
        if line.startswith("START "):
            stage, stage_t0 = line[6:].strip(), time.perf_counter()
        elif line.startswith("METRIC "):
            m = json.loads(line[7:])
            out["metrics"][m["name"]] = m
        elif line.startswith("RESULT "):
            out["result"] = json.loads(line[7:])
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    out |= {"wall_s": round(time.perf_counter() - t0, 2), "peak_rss_gb": round(usage.ru_maxrss / 2**20, 2),
            "rc": proc.returncode, "loadavg_1m_after": round(os.getloadavg()[0], 2)}
    if proc.returncode and "dnf" not in out:
        raise RuntimeError(f"{cmd[1]} failed (rc {proc.returncode}):\n{''.join(stderr)[-3000:]}")
    return out


def rankwise_tool(convention: str, recs: Path, train: Path, backend: str) -> None:
    """rankwise as a tool process: the metrics of ``convention``'s library under that preset, one evaluate()."""
    spec = PEERS[convention]
    metrics = [m for group in spec["groups"].values() for m in group]
    print("START evaluate", flush=True)
    t0 = time.perf_counter()
    res = rankwise.evaluate(str(recs), str(train) if spec["truth"] else None, k=PEER_K, metrics=metrics,
                            train=str(train), convention=convention, backend=backend)
    values = {r["metric"]: r["value"] for r in res.summary.iter_rows(named=True) if r["k"] == PEER_K}
    print("METRIC " + json.dumps({"name": "evaluate", "values": values,
                                  "seconds": round(time.perf_counter() - t0, 4)}), flush=True)
    print("RESULT " + json.dumps({"tool": f"rankwise-{backend}", "timings": {"import": round(IMPORT_S, 4)},
                                  "version": rankwise.__version__}), flush=True)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def peers(libraries: list[str], recs: Path, train: Path, args) -> int:
    """Time rankwise (both backends) and each library; check the values; print JSON lines and the tables."""
    rows, values, problems = [], [], []
    for library in libraries:
        spec = PEERS[library]
        ours = {}
        for backend in ("polars", "duckdb"):
            run = run_process([sys.executable, __file__, "--as-tool", library, "--backend", backend, "--users",
                               args.users, "--data-dir", args.data_dir, "--shape", args.shape], {}, args.budget)
            if "dnf" in run:
                raise RuntimeError(f"rankwise {backend} did not finish in {args.budget:.0f} s: {run['dnf']}")
            ours[backend] = run["metrics"]["evaluate"]["values"]
            rows.append((library, f"rankwise {backend}", run))
        python, env = peer_python(library)
        todo, theirs = list(spec["groups"]), {}
        while todo:  # again after a metric that did not finish, for the ones after it
            cmd = [python, PEER_DIR / f"{library}_beyond_peer.py", "--recs", recs, "--train", train, "--k", PEER_K,
                   "--metrics", ",".join(todo)] + (["--truth", train] if spec["truth"] else [])
            run = run_process(cmd, env, args.budget)
            rows.append((library, f"{library} {run.get('result', {}).get('version', '')}".strip(), run))
            for m in run["metrics"].values():
                theirs |= m["values"]
            dnf = run.get("dnf", {}).get("name")
            if dnf and dnf not in spec["groups"]:
                break  # it did not get as far as a metric
            todo = [g for g in todo if g not in run["metrics"] and g != dnf]
        for group, metrics in spec["groups"].items():
            for metric in metrics:
                v = theirs.get(metric)
                status = "did not finish" if v is None else "equal (1e-9)"
                if v is not None and not all(close(v, ours[b][metric]) for b in ours):
                    status = f"differs: {KNOWN_DIFFERENCES[library, metric]}" if (library, metric) in \
                        KNOWN_DIFFERENCES else "DIFFERS"
                    if status == "DIFFERS":
                        problems.append(f"{library} {metric}: library {v!r}, rankwise {ours}")
                values.append((library, metric, v, ours["polars"][metric], ours["duckdb"][metric], status))
    for library, tool, run in rows:
        print(json.dumps({"users": args.users, "library": library, "tool": tool} | run))
    print("\n| preset / library | tool | process wall s | import s | read s | metrics s | peak RSS GB | load 1 min |")
    print("|---|---|---:|---:|---:|---|---:|---:|")
    for library, tool, run in rows:
        timings = run.get("result", {}).get("timings", {})
        per = [f"{name} {m['seconds']:.2f}" for name, m in run["metrics"].items()]
        if "dnf" in run:
            per.append(f"{run['dnf']['name']}: did not finish ({run['dnf']['waited_s']:.0f} s waited)")
        total = sum(m["seconds"] for m in run["metrics"].values())
        metrics_cell = f"{total:.2f}" + ("" if tool.startswith("rankwise") else f" ({', '.join(per)})")
        read = "in evaluate" if tool.startswith("rankwise") else f"{timings.get('read', float('nan')):.2f}"
        print(f"| {library} | {tool} | {run['wall_s']:.2f} | {timings.get('import', float('nan')):.2f} | {read} "
              f"| {metrics_cell} | {run['peak_rss_gb']:.2f} | {run['loadavg_1m_after']:.1f} |")
    print("\n| preset / library | metric@10 | library | rankwise polars | rankwise duckdb | |")
    print("|---|---|---:|---:|---:|---|")
    for library, metric, v, p, d, status in values:
        print(f"| {library} | {metric} | {'—' if v is None else repr(v)} | {p!r} | {d!r} | {status} |")
    for p in problems:
        print("DIFFERS:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    main()
