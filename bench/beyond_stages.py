"""Issue 39, target 4: beyond-accuracy at 1M users, every metric of bench/beyond_bench.py at k = 10 and 100
in one evaluate() (files of generate.py --beyond), per engine: the time of each stage, and beside it the
floor of that stage, the plainest query on the same engine reading the same rows.

Stages (timers wrapped around functions found by name, and a DuckDB connection proxy timing every
statement; see bench/fixed_cost.py): input checks (prepare), side inputs (prepare_side_inputs: train and
items read and checked), DuckDB: every statement by its SQL file (beyond_popularity.sql, beyond_exposure.sql,
beyond_user.sql, ... the CREATE of recommendation_rows, SELECT MAX(rank)); Polars: exposure, polars_user,
polars_catalog, per_item (each forced to collect inside its timer); shaping; the rest of evaluate.
Floors, after evaluate, in the same process and engine:
  scan        read recs (rank <= 100) and train, count rows per user           (the input read)
  item_count  GROUP BY item over the top-100 rows                              (exposure)
  user_sum    the top-100 rows joined with a per-item number (100k items), summed per user and k-bucket
              (novelty / arp / long_tail_share per user)
  train_pop   GROUP BY item over train: rows and distinct users                (popularity)
Each engine in a fresh process, --reps times: medians, peak RSS (os.wait4), load average.

Usage: flock /tmp/rankwise-cpu.lock python bench/beyond_stages.py [--users 1M] [--reps 3] [--engines duckdb,polars]
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
sys.path.insert(0, str(HERE))
METRICS = ["novelty", "arp", "long_tail_share", "item_coverage", "gini", "exposure_entropy", "personalization"]


def polars_floors(recs: str, train: str) -> dict:
    import polars as pl

    out = {}
    r = pl.scan_parquet(recs).filter(pl.col("rank") <= 100)
    t0 = time.perf_counter()
    pl.collect_all([r.group_by("user").len(), pl.scan_parquet(train).group_by("user").len()])
    out["scan"] = time.perf_counter() - t0
    rows = r.select("user", "rank", "item").collect()  # in memory, as evaluate holds them
    t0 = time.perf_counter()
    rows.lazy().group_by("item").len().collect()
    out["item_count"] = time.perf_counter() - t0
    pop = pl.scan_parquet(train).group_by("item").agg(pl.len().cast(pl.Float64).alias("pop")).collect()
    t0 = time.perf_counter()
    (rows.lazy().join(pop.lazy(), on="item", how="left")
     .group_by("user", (pl.col("rank") > 10).alias("bucket")).agg(pl.col("pop").sum()).collect())
    out["user_sum"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    pl.scan_parquet(train).group_by("item").agg(pl.len(), pl.col("user").n_unique()).collect()
    out["train_pop"] = time.perf_counter() - t0
    return out


def duckdb_floors(recs: str, train: str) -> dict:
    import duckdb

    con = duckdb.connect()
    out = {}
    t0 = time.perf_counter()
    for q in (f"SELECT count(*) FROM (SELECT \"user\", count(*) FROM read_parquet('{recs}') WHERE rank <= 100 GROUP BY 1)",
              f"SELECT count(*) FROM (SELECT \"user\", count(*) FROM read_parquet('{train}') GROUP BY 1)"):
        con.execute(q).fetchall()
    out["scan"] = time.perf_counter() - t0
    con.execute(f"CREATE TEMP TABLE rows AS SELECT \"user\", rank, item FROM read_parquet('{recs}') WHERE rank <= 100")
    t0 = time.perf_counter()
    con.execute("SELECT count(*) FROM (SELECT item, count(*) FROM rows GROUP BY item)").fetchall()
    out["item_count"] = time.perf_counter() - t0
    con.execute(f"CREATE TEMP TABLE pop AS SELECT item, CAST(count(*) AS DOUBLE) AS pop FROM read_parquet('{train}') GROUP BY item")
    t0 = time.perf_counter()
    con.execute("SELECT count(*) FROM (SELECT r.\"user\", r.rank > 10 AS bucket, sum(p.pop) FROM rows AS r "
                "LEFT JOIN pop AS p USING (item) GROUP BY 1, 2)").fetchall()
    out["user_sum"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    con.execute(f"SELECT count(*) FROM (SELECT item, count(*), count(DISTINCT \"user\") FROM read_parquet('{train}') "
                "GROUP BY item)").fetchall()
    out["train_pop"] = time.perf_counter() - t0
    return out


def child(engine: str, users: str) -> dict:
    import polars as pl

    import fixed_cost as fc

    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    import rankwise

    imp = time.perf_counter() - t0
    fc.instrument()

    def forced(name, fn):
        def wrapper(*a, **k):
            with fc.clock(name):
                r = fn(*a, **k)
                return r.collect().lazy() if isinstance(r, pl.LazyFrame) else r
        return wrapper

    for m in [m for n, m in sys.modules.items() if n.startswith("rankwise") and m is not None]:
        for attr in ("exposure", "polars_user", "polars_catalog", "per_item"):
            f = getattr(m, attr, None)
            if callable(f) and getattr(f, "__module__", "").startswith("rankwise") and not hasattr(f, "__wrapped__"):
                w = forced(f"polars {attr}", f)
                w.__wrapped__ = f
                setattr(m, attr, w)
    fc.wrap_by_name({"prepare_side_inputs": "side inputs (train, items: read + checks)"})
    data = HERE / "data"
    recs, train = str(data / f"beyond_recs_{users}.parquet"), str(data / f"beyond_train_{users}.parquet")
    items = str(data / "beyond_items.parquet")
    fc.reset()
    t0 = time.perf_counter()
    rankwise.evaluate(recs, None, k=[10, 100], metrics=METRICS, train=train, items=items, backend=engine)
    total = time.perf_counter() - t0
    stages = dict(fc._CALL)
    stages["other (evaluate minus the outermost stages)"] = total - fc._TOP[0]
    floors = (duckdb_floors if engine == "duckdb" else polars_floors)(recs, train)
    return {"engine": engine, "import_s": imp, "evaluate_s": total, "stages_s": stages, "floors_s": floors,
            "load_1m_before": load, "load_1m_after": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", default="1M")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--engines", default="duckdb,polars")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print("RESULT " + json.dumps(child(a.child, a.users)), flush=True)
        return
    results = []
    for rep in range(a.reps):
        for engine in a.engines.split(","):
            with tempfile.TemporaryFile("w+") as fo:
                proc = subprocess.Popen([sys.executable, __file__, "--child", engine, "--users", a.users], stdout=fo)
                _, status, usage = os.wait4(proc.pid, 0)
                fo.seek(0)
                out = fo.read()
            if os.waitstatus_to_exitcode(status):
                sys.exit(f"{engine} failed")
            r = json.loads([x for x in out.splitlines() if x.startswith("RESULT ")][-1][7:])
            r |= {"peak_rss_gb": round(usage.ru_maxrss / 2**20, 2), "rep": rep}
            results.append(r)
            print(json.dumps(r), flush=True)
    path = HERE / "results" / f"beyond_stages_{a.users}_{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(results, indent=1))
    for engine in a.engines.split(","):
        rs = [r for r in results if r["engine"] == engine]
        med = lambda get: statistics.median(get(r) for r in rs)  # noqa: E731
        runs = ", ".join("%.2f" % r["evaluate_s"] for r in rs)
        loads = ", ".join("%.1f" % r["load_1m_before"] for r in rs)
        peak = max(r["peak_rss_gb"] for r in rs)
        print(f"\n## {engine}: evaluate median {med(lambda r: r['evaluate_s']):.2f} s (runs {runs}), "
              f"peak RSS {peak:.2f} GB, load {loads}")
        print("| stage | median s |\n|---|---:|")
        names = sorted({n for r in rs for n in r["stages_s"]}, key=lambda n: -med(lambda r: r["stages_s"].get(n, 0)))
        for n in names:
            print(f"| {n} | {med(lambda r: r['stages_s'].get(n, 0.0)):.3f} |")
        print("| floor | median s |\n|---|---:|")
        for n in rs[0]["floors_s"]:
            print(f"| floor {n} | {med(lambda r: r['floors_s'][n]):.3f} |")


if __name__ == "__main__":
    main()
