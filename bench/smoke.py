"""Seconds-long benchmark smoke test for CI: 10k users, in-process, prints a small table.

Generates bench data for 10k users in a temp dir (or uses --data-dir if it has it), times the Polars
floor and rankwise.evaluate on both backends for both configs, and fails (exit 1) if a run errors or
the two backends' summaries differ by more than 1e-9.

  python bench/smoke.py
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import data_paths, generate  # noqa: E402

N = 10_000
CONFIGS = {
    "all": dict(k=[1, 5, 10, 20, 50, 100], metrics=None),
    "k10": dict(k=[10], metrics=["precision", "recall", "map", "mrr", "ndcg", "hit_rate"]),
}


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path)
    a = ap.parse_args()
    data_dir = a.data_dir or Path(tempfile.mkdtemp(prefix="rankwise-smoke-"))
    recs, truth = data_paths(data_dir, N)
    if not (recs.exists() and truth.exists()):
        generate(N, data_dir)
    import rankwise

    rows, failures = [], []
    t, _ = timed(lambda: pl.collect_all([pl.scan_parquet(p).group_by("user").len() for p in (recs, truth)]))
    rows.append(("floor-polars", "scan", t, None))
    for config, kw in CONFIGS.items():
        summaries = {}
        for backend in ("polars", "duckdb"):
            try:
                t, res = timed(lambda: rankwise.evaluate(str(recs), str(truth), backend=backend, **kw))
                summaries[backend] = res.summary.sort("metric", "k")
                rows.append((f"rankwise-{backend}", config, t, res.summary.height))
            except Exception as e:  # report every failure, not just the first
                failures.append(f"rankwise-{backend} {config}: {type(e).__name__}: {e}")
        if len(summaries) == 2:
            p, d = summaries["polars"], summaries["duckdb"]
            diff = (p["value"] - d["value"]).abs().max() if p.height == d.height else float("inf")
            if not diff <= 1e-9:
                failures.append(f"{config}: polars and duckdb summaries differ (max abs diff {diff})")
    floor = rows[0][2]
    print(f"rankwise smoke benchmark, {N:,} users, in-process (first call includes imports/JIT warm-up)")
    print(f"{'tool':16} {'config':6} {'seconds':>8} {'x floor':>8} {'summary rows':>13}")
    for tool, config, t, n in rows:
        print(f"{tool:16} {config:6} {t:8.3f} {t / floor:8.1f} {n if n is not None else '-':>13}")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
