"""Prototype (issue 39, target 1): group a long table into per-user lists first, then run rankwise's
list-form path, instead of today's long-form join. Bench-only: rankwise is used through its public API.

Modes (--mode):
  long           today: rankwise.evaluate(recs.parquet, truth.parquet)                     (the baseline)
  lists-file     rankwise.evaluate on the same data already in list form, from Parquet
                 (bench/data/lists_recs_<N>.parquet, lists_truth_<N>.parquet; --write-lists makes them)
  group-polars   long Parquet -> Polars lazy group_by(user).agg(item sorted by rank) -> evaluate(lists)
  group-duckdb   long Parquet -> DuckDB SELECT user, list(item ORDER BY rank) ... GROUP BY user -> evaluate(lists)
  group-runs     long Parquet already in runs (each user's rows contiguous, ranks 1..n in row order: the layout
                 rankwise/_runs.py checks today) -> list columns cut at the run starts (no group_by, no sort;
                 numpy + pyarrow offsets) -> evaluate(lists); falls back to group-polars when the layout fails
--truth lists (default) groups the ground truth too (item and relevance lists); --truth long passes
the long truth file as is (only the recommendations are grouped).

The grouping keeps today's input checks exact: a null user/item/rank, or a user's ranks that are not
exactly 1..n (a gap, a repeat, a rank 0), raise before evaluate; rankwise's list-form checks then find a
repeated item in a list (recommendations) or a repeated label (truth), null items, as today.

--check: also run the long form and require every per-user value to be bit-identical (and the summary
equal); use at 100k (the check itself is not timed).
Prints RESULT {json}: the group and evaluate stage times, total, peak RSS (this process), load average.

Usage: python bench/prototypes/long_to_lists.py --users 1M --mode group-polars --backend duckdb
                                                [--convention default] [--truth lists|long] [--check]
       python bench/prototypes/long_to_lists.py --users 1M --write-lists
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
KS = [1, 5, 10, 20, 50, 100]


class InputError(ValueError):
    pass


def group_polars(recs: Path, truth: Path | None):
    import polars as pl

    r = pl.scan_parquet(recs).group_by("user").agg(
        pl.col("item").sort_by("rank"),
        # exact: the sorted ranks are 1..n (a gap, a repeat or a rank 0 fails); nulls counted apart
        (pl.col("rank").sort() == pl.int_range(1, pl.len() + 1)).all().alias("_ranks_ok"),
        pl.col("rank").null_count().alias("_null_rank"),
    )
    frames = [r]
    if truth is not None:
        frames.append(pl.scan_parquet(truth).group_by("user").agg("item", "relevance"))
    out = pl.collect_all(frames)
    r = out[0]
    bad = r.filter(~pl.col("_ranks_ok") | (pl.col("_null_rank") > 0) | pl.col("user").is_null())
    if bad.height:
        raise InputError(f"{bad.height} users' ranks are not 1..n (or null): {bad.head(3)}")
    r = r.drop("_ranks_ok", "_null_rank")
    return r, (out[1] if truth is not None else None)


def group_duckdb(recs: Path, truth: Path | None):
    import duckdb
    import polars as pl

    con = duckdb.connect()
    r = con.sql(f"""
        SELECT "user", list(item ORDER BY "rank") AS item,
               list(CAST("rank" AS BIGINT) ORDER BY "rank") = range(1, count(*) + 1) AS ranks_ok,
               count(*) - count("rank") AS null_rank
        FROM read_parquet('{recs}') GROUP BY "user" """).pl()
    bad = r.filter(~pl.col("ranks_ok").fill_null(False) | (pl.col("null_rank") > 0) | pl.col("user").is_null())
    if bad.height:
        raise InputError(f"{bad.height} users' ranks are not 1..n (or null): {bad.head(3)}")
    r = r.drop("ranks_ok", "null_rank")
    t = None
    if truth is not None:
        t = con.sql(f"""SELECT "user", list(item) AS item, list(relevance) AS relevance
                        FROM read_parquet('{truth}') GROUP BY "user" """).pl()
    return r, t


def _run_lists(path: Path, cols: list[str]):
    """One file already in runs (each user's rows contiguous): list columns cut at the run starts, no
    group_by and no sort; None when the layout does not hold (then the caller groups)."""
    import numpy as np
    import polars as pl
    import pyarrow as pa

    df = pl.read_parquet(path, columns=["user", *cols])
    if sum(df.null_count().row(0)):
        raise InputError(f"{path}: null values")
    user = df["user"].to_numpy()
    n = len(user)
    starts = np.flatnonzero(np.r_[True, user[1:] != user[:-1]]) if n else np.zeros(0, np.int64)
    run_users = user[starts]
    if len(np.unique(run_users)) != len(starts):
        return None  # a user with two runs: not this layout
    offsets = np.r_[starts, n].astype(np.int64)
    if "rank" in cols:  # ranks 1..n in row order within each run, exactly
        expected = np.arange(n) - np.repeat(starts, np.diff(offsets)) + 1
        if not np.array_equal(df["rank"].to_numpy(), expected):
            return None
    off = pa.array(offsets)
    out = {"user": run_users}
    for c in cols:
        if c == "rank":
            continue
        out[c] = pl.from_arrow(pa.LargeListArray.from_arrays(off, df[c].to_arrow()))
    return pl.DataFrame(out)


def group_runs(recs: Path, truth: Path | None):
    """The zero-sort variant: the layout check rankwise already makes (rankwise/_runs.py: one run per
    user, ranks 1..n in row order) gives the run starts, and the lists are the item column cut there."""
    r = _run_lists(recs, ["item", "rank"])
    if r is None:
        return group_polars(recs, truth)
    t = None
    if truth is not None:
        t = _run_lists(truth, ["item", "relevance"])
        if t is None:
            _, t = group_polars(recs, truth)
    return r, t


def write_lists(users: str) -> None:
    import polars as pl

    r, t = group_polars(DATA / f"recs_{users}.parquet", DATA / f"truth_{users}.parquet")
    r.sort("user").write_parquet(DATA / f"lists_recs_{users}.parquet")
    t.sort("user").write_parquet(DATA / f"lists_truth_{users}.parquet")
    print(f"wrote lists_recs_{users}.parquet ({r.height} users), lists_truth_{users}.parquet ({t.height})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", default="1M")
    ap.add_argument("--mode", default="group-polars", choices=["long", "lists-file", "group-polars", "group-duckdb", "group-runs"])
    ap.add_argument("--backend", default="polars")
    ap.add_argument("--convention", default="default")
    ap.add_argument("--truth", choices=["lists", "long"], default="lists")
    ap.add_argument("--k", default=",".join(map(str, KS)))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--write-lists", action="store_true")
    a = ap.parse_args()
    if a.write_lists:
        write_lists(a.users)
        return
    ks = [int(k) for k in a.k.split(",")]
    recs, truth = DATA / f"recs_{a.users}.parquet", DATA / f"truth_{a.users}.parquet"
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    import rankwise

    imp = time.perf_counter() - t0
    stages = {"import": imp}
    t0 = time.perf_counter()
    if a.mode == "long":
        r, t = str(recs), str(truth)
    elif a.mode == "lists-file":
        r, t = str(DATA / f"lists_recs_{a.users}.parquet"), str(DATA / f"lists_truth_{a.users}.parquet")
        if a.truth == "long":
            t = str(truth)
    else:
        grouper = {"group-polars": group_polars, "group-duckdb": group_duckdb, "group-runs": group_runs}[a.mode]
        r, t = grouper(recs, truth if a.truth == "lists" else None)
        if t is None:
            t = str(truth)
        stages["group"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    res = rankwise.evaluate(r, t, k=ks, backend=a.backend, convention=a.convention)
    per_user = res.per_user
    stages["evaluate"] = time.perf_counter() - t1
    total = time.perf_counter() - t0
    out = {"mode": a.mode, "backend": a.backend, "convention": a.convention, "truth": a.truth, "users": a.users,
           "total_s": round(total, 3), "stages_s": {k: round(v, 3) for k, v in stages.items()},
           "per_user_shape": list(per_user.shape),
           "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
           "load_1m_before": round(load, 2), "load_1m_after": round(os.getloadavg()[0], 2)}
    if a.check and a.mode != "long":
        ref = rankwise.evaluate(str(recs), str(truth), k=ks, backend=a.backend, convention=a.convention)
        same = ref.per_user.sort("user").equals(per_user.sort("user"), null_equal=True)
        same_summary = ref.summary.equals(res.summary, null_equal=True)
        out["check"] = {"per_user_bit_identical": same, "summary_equal": same_summary}
        if not (same and same_summary):
            print("RESULT " + json.dumps(out), flush=True)
            sys.exit("DIFFERS from the long form")
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
