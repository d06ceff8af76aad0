"""Shared plumbing for the tool scripts run by bench/run.py (peers, floor and rankwise).

Protocol: every tool script takes --recs/--truth (Parquet paths). In timed mode it prints one JSON line
(prefix RESULT) with its inner timings. In check mode (--check-users FILE --check-out FILE) it writes
per-user values for the listed users as Parquet (user, metric, k, value, native) using rankwise metric
names, so bench/run.py can compare them with the matching rankwise preset. Check mode is never timed.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import contextmanager

K = 10
# rankwise (metric, k) for each peer-native metric name; recip_rank has no cutoff and lists are <= 100 long
RANX_METRICS = {"precision@10": ("precision", 10), "recall@10": ("recall", 10), "map@10": ("map", 10),
                "mrr@10": ("mrr", 10), "ndcg@10": ("ndcg", 10), "hit_rate@10": ("hit_rate", 10)}
TREC_METRICS = {"P_10": ("precision", 10), "recall_10": ("recall", 10), "map_cut_10": ("map", 10),
                "recip_rank": ("mrr", 100), "ndcg_cut_10": ("ndcg", 10), "success_10": ("hit_rate", 10)}
SPARK_METRICS = {"precisionAtK": ("precision", 10), "recallAtK": ("recall", 10),
                 "meanAveragePrecisionAtK": ("map", 10), "ndcgAtK": ("ndcg", 10)}


def parser(description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--recs", required=True)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--check-users", help="JSON list of user ids: write their per-user values instead of timing")
    ap.add_argument("--check-out", help="Parquet file for the per-user values (check mode)")
    return ap


class Timer:
    """Collects named wall-clock sections: with t("read"): ..."""

    def __init__(self):
        self.sections: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str):
        t0 = time.perf_counter()
        yield
        self.sections[name] = round(self.sections.get(name, 0.0) + time.perf_counter() - t0, 4)


def emit(tool: str, timer: Timer, **extra) -> None:
    """Print the single RESULT line that bench/run.py parses."""
    print("RESULT " + json.dumps({"tool": tool, "timings": timer.sections, **extra}, default=float), flush=True)


def load_check_users(path: str) -> list[int]:
    with open(path) as f:
        return [int(u) for u in json.load(f)]


def write_check(path: str, rows: list[tuple[int, str, float]], mapping: dict[str, tuple[str, int]]) -> None:
    """rows: (user, native metric name, value) -> Parquet in rankwise terms."""
    import polars as pl

    df = pl.DataFrame(
        {
            "user": [r[0] for r in rows],
            "metric": [mapping[r[1]][0] for r in rows],
            "k": [mapping[r[1]][1] for r in rows],
            "value": [float(r[2]) for r in rows],
            "native": [r[1] for r in rows],
        },
        schema={"user": pl.Int64, "metric": pl.Utf8, "k": pl.Int64, "value": pl.Float64, "native": pl.Utf8},
    )
    df.write_parquet(path)
    print(f"check: wrote {df.height} values for {df['user'].n_unique()} users to {path}", file=sys.stderr)


# ------------------------------------------------------------------ beyond-accuracy peers (bench/beyond_bench.py)
# Line protocol, one line per event on stdout (flushed, so the bench can time each metric and give up on one):
#   START <name>                 about to compute metric <name>
#   METRIC {"name", "values", "seconds"}   it finished: values in rankwise names, e.g. {"arp": 12.3}
#   RESULT {"tool", "timings", ...}        the run ended (timings: import, read = Parquet -> the library's input)


def start(name: str) -> float:
    print(f"START {name}", flush=True)
    return time.perf_counter()


def finished(name: str, values: dict[str, float], started: float) -> None:
    print("METRIC " + json.dumps({"name": name, "values": {k: float(v) for k, v in values.items()},
                                  "seconds": round(time.perf_counter() - started, 4)}), flush=True)
