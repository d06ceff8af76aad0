"""Where the peak memory of one evaluate() goes: the process's RSS sampled every 10 ms, its peak, the largest
RSS in each half second, and the RSS when the Polars engine's stages start and end (per_user, summary).

    flock /tmp/rankwise-cpu.lock python bench/memory_timeline.py --size 1M [--backend polars] [--metrics all]
    _RJEM_MALLOC_CONF=background_thread:true python bench/memory_timeline.py --size 1M   # Polars' allocator purging
    _RJEM_MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0 python bench/memory_timeline.py --size 1M   # ~ live bytes
    python bench/memory_timeline.py --size 1M --backend duckdb [--memory-limit 1500MB]   # + DuckDB's own tags

One process, one evaluate (from bench/data/recs_<size>.parquet and truth_<size>.parquet, k = 1, 5, 10, 20, 50,
100). With ``--backend duckdb`` it also samples DuckDB's own accounting, ``duckdb_memory()`` by tag, every 50 ms from
a second cursor on the engine's connection, and prints each tag's largest value and the largest total with its tags
(COLUMN_DATA: materialized CTEs, which do not spill; HASH_TABLE, ORDER_BY, WINDOW: operators that do). The RSS counts pages the allocator has freed but not yet returned: Polars' jemalloc returns an arena's
freed pages when that arena is next used (or, with ``background_thread:true``, on time); with both decay times 0
it returns them at once (slower), so the RSS is close to the bytes in use. Before/after: run it with
``PYTHONPATH=<other checkout>/src``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
START = time.perf_counter()


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1M")
    ap.add_argument("--backend", default="polars")
    ap.add_argument("--metrics", default=None, help="comma-separated, or 'all' (default: the defaults)")
    ap.add_argument("--convention", default="default")
    ap.add_argument("--memory-limit", default=None, help="evaluate(memory_limit=...), e.g. 1500MB")
    args = ap.parse_args()

    samples: list[tuple[float, int]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append((time.perf_counter() - START, rss()))
            time.sleep(0.01)

    threading.Thread(target=sample, daemon=True).start()
    import rankwise
    from rankwise.engines import polars as engine

    marks: list[tuple[str, float, int]] = []
    tags: dict[str, int] = {}
    totals: list[tuple[int, float, list]] = []
    if args.backend == "duckdb":
        from rankwise.engines import duckdb as duck

        def with_tags(con, *a, _run=duck._run, **k):  # DuckDB's own accounting, from a second cursor
            cursor, done = con.cursor(), threading.Event()

            def poll() -> None:
                while not done.is_set():
                    rows = cursor.execute("SELECT tag, memory_usage_bytes FROM duckdb_memory()").fetchall()
                    for tag, used in rows:
                        tags[tag] = max(tags.get(tag, 0), used)
                    totals.append((sum(u for _, u in rows), time.perf_counter() - START,
                                   sorted(((u, t) for t, u in rows), reverse=True)[:3]))
                    time.sleep(0.05)
            poller = threading.Thread(target=poll, daemon=True)
            poller.start()
            try:
                return _run(con, *a, **k)
            finally:
                done.set()
                poller.join()
        duck._run = with_tags
    for name in ("per_user", "summary"):  # the Polars engine's stages, timed where the engine calls them
        def wrapped(*a, _f=getattr(engine, name), _name=name, **k):
            marks.append((_name + " starts", time.perf_counter() - START, rss()))
            out = _f(*a, **k)
            marks.append((_name + " ends", time.perf_counter() - START, rss()))
            return out
        setattr(engine, name, wrapped)
    metrics = None if args.metrics is None else "all" if args.metrics == "all" else args.metrics.split(",")
    data = BENCH / "data"
    t = time.perf_counter()
    result = rankwise.evaluate(str(data / f"recs_{args.size}.parquet"), str(data / f"truth_{args.size}.parquet"),
                               k=[1, 5, 10, 20, 50, 100], metrics=metrics, backend=args.backend,
                               convention=args.convention, memory_limit=args.memory_limit)
    elapsed = time.perf_counter() - t
    stop.set()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"{args.backend}, {args.size}, metrics={args.metrics or 'defaults'}: evaluate {elapsed:.2f} s, "
          f"peak RSS {peak / 1e9:.3f} GB (getrusage), {result.summary['n_users'].max()} users; "
          f"_RJEM_MALLOC_CONF={os.environ.get('_RJEM_MALLOC_CONF', '')!r}; load {os.getloadavg()[0]:.2f}")
    buckets: dict[float, int] = {}
    for at, r in samples:
        buckets[round(at * 2) / 2] = max(buckets.get(round(at * 2) / 2, 0), r)
    print("largest RSS per half second (s: GB): " + " ".join(f"{at:.1f}:{r / 1e9:.2f}" for at, r in buckets.items()))
    if marks:
        print("stages: " + ", ".join(f"{name} at {at:.1f} s ({r / 1e9:.2f} GB)" for name, at, r in marks))
    if tags:
        print("DuckDB, largest per tag (GB): " + ", ".join(f"{t} {u / 1e9:.2f}" for t, u in
                                                           sorted(tags.items(), key=lambda x: -x[1]) if u))
        total, at, top = max(totals)
        print(f"DuckDB, largest total {total / 1e9:.2f} GB at {at:.1f} s: "
              + ", ".join(f"{t} {u / 1e9:.2f}" for u, t in top))


if __name__ == "__main__":
    sys.exit(main())
