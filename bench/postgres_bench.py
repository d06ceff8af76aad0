"""Issue 12: evaluating inside PostgreSQL against pulling the tables out and evaluating with DuckDB.

The data is bench/generate.py's (``data/recs_<N>.parquet``, ``data/truth_<N>.parquet``), the
recommendations cut to rank <= --max-rank, loaded once into two tables (``rankwise_bench_recs``,
``rankwise_bench_truth``, suffixed with the size; the load is not timed and is kept for later runs
unless --reload). Then, each in its own process (wall time and the process's peak RSS):

  - in-database: ``evaluate("rankwise_bench_recs", "rankwise_bench_truth", backend=<psycopg connection>)``:
    the checks and the metric SQL run in PostgreSQL (one backend process: parallel workers off), only
    results return;
  - pull + DuckDB: both tables copied out with ``COPY ... TO STDOUT`` (psycopg, the ``engines`` extra) into
    Polars, then ``evaluate(..., backend="duckdb")``.

Every per-user metric of the default convention at k = 10. The two summaries must agree (the run fails
otherwise). The PostgreSQL server's own memory is not in the RSS column (a separate process).
Usage: python bench/postgres_bench.py [--users 1M] [--dsn "host=127.0.0.1 port=54329 user=postgres"]
Prints one JSON line per mode.
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

DATA = Path(__file__).parent / "data"
TABLES = {"recs": "rankwise_bench_recs_{users}", "truth": "rankwise_bench_truth_{users}"}
K = 10


def tables(users: str) -> dict:
    return {name: table.format(users=users.lower()) for name, table in TABLES.items()}


def load(dsn: str, users: str, max_rank: int, reload: bool) -> None:
    """Create the two tables from the Parquet files with COPY (skipped when they exist)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as con:
        exists = con.execute("SELECT to_regclass(%s) IS NOT NULL", (tables(users)["recs"],)).fetchone()[0]
        if exists and not reload:
            return
        started = time.perf_counter()
        frames = {"recs": pl.scan_parquet(DATA / f"recs_{users}.parquet").filter(pl.col("rank") <= max_rank),
                  "truth": pl.scan_parquet(DATA / f"truth_{users}.parquet")}
        columns = {"recs": "user_id BIGINT, item_id BIGINT, rank INTEGER",
                   "truth": "user_id BIGINT, item_id BIGINT, relevance DOUBLE PRECISION"}
        for name, frame in frames.items():
            table = tables(users)[name]
            con.execute(f'DROP TABLE IF EXISTS "{table}"')
            con.execute(f'CREATE UNLOGGED TABLE "{table}" ({columns[name]})')
            data = frame.collect()
            with con.cursor().copy(f'COPY "{table}" FROM STDIN (FORMAT csv)') as copy:
                for chunk in data.iter_slices(1_000_000):
                    copy.write(chunk.write_csv(include_header=False))
            con.execute(f'ANALYZE "{table}"')
        print(f"# loaded in {time.perf_counter() - started:.0f} s", file=sys.stderr)


COLUMNS = {"user_col": "user_id", "item_col": "item_id"}


def in_database(dsn: str, users: str) -> pl.DataFrame:
    import psycopg

    import rankwise

    names = tables(users)
    with psycopg.connect(dsn) as con:
        return rankwise.evaluate(names["recs"], names["truth"], k=K, backend=con, **COLUMNS).summary


def pull_and_duckdb(dsn: str, users: str) -> pl.DataFrame:
    import psycopg

    import rankwise

    frames = {}
    with psycopg.connect(dsn) as con:
        for name, table in tables(users).items():
            buffer = io.BytesIO()
            with con.cursor().copy(f'COPY "{table}" TO STDOUT (FORMAT csv, HEADER)') as copy:
                for block in copy:
                    buffer.write(block)
            buffer.seek(0)
            frames[name] = pl.read_csv(buffer)
    return rankwise.evaluate(frames["recs"], frames["truth"], k=K, backend="duckdb", **COLUMNS).summary


MODES = {"in-database": in_database, "pull+duckdb": pull_and_duckdb}


def _child(mode: str, dsn: str, users: str) -> None:
    started = time.perf_counter()
    summary = MODES[mode](dsn, users)
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"mode": mode, "seconds": round(seconds, 2), "peak_rss_mb": round(peak_mb),
                      "summary": summary.select("metric", "k", "value", "n_users").to_dicts()}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", default="1M")
    ap.add_argument("--dsn", default="host=127.0.0.1 port=54329 user=postgres dbname=postgres")
    ap.add_argument("--max-rank", type=int, default=K)
    ap.add_argument("--reload", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return _child(args.child, args.dsn, args.users)
    load(args.dsn, args.users, args.max_rank, args.reload)
    runs = []
    for mode in MODES:
        done = subprocess.run([sys.executable, __file__, "--child", mode, "--dsn", args.dsn, "--users", args.users],
                              capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    for a, b in zip(runs[0]["summary"], runs[1]["summary"]):
        same = a["metric"] == b["metric"] and a["k"] == b["k"] and a["n_users"] == b["n_users"]
        if not same or abs(a["value"] - b["value"]) > 1e-9 * max(1.0, abs(b["value"])):
            sys.exit(f"the two summaries differ: {a} vs {b}")
    for run in runs:
        print(json.dumps({"users": args.users, "max_rank": args.max_rank, **{k: v for k, v in run.items()
                                                                               if k != "summary"}}))


if __name__ == "__main__":
    main()
