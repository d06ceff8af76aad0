"""List-form benchmark (issue 14): every per-user metric on one-row-per-user list data.

Data (seeded, in memory): N users, 100 recommended items each (distinct), 5..20 labels each, ~18% of
them taken from the user's own list (spread over the list), relevance 0/1/2/3 with p .1/.5/.25/.15.

Configs, each timed end to end from the in-memory frame (input checks included: the expressions and
macros test every row for repeated / null items; evaluate() runs its usual checks):
  all   every per-user metric at k = 1, 5, 10, 20, 50, 100
  k10   every per-user metric at k = 10
Tools: polars-expr (rankwise.expr.metrics, binary relevance), polars-expr-graded (relevance list,
default convention: exp2 gain), duckdb-macro (sql/macros.sql, binary), evaluate-polars /
evaluate-duckdb (rankwise.evaluate on the list-form frames), evaluate-polars-graded (the same with the
relevance list).

Usage: python bench/list_form.py [--users 1M] [--tools polars-expr,duckdb-macro,...] [--configs all,k10]
Prints one line per (tool, config): seconds (best of --reps).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl
import pyarrow as pa

KS_ALL = [1, 5, 10, 20, 50, 100]
NAMES = ["precision", "recall", "f1", "map", "mar", "mrr", "dcg", "ndcg", "hit_rate", "r_precision"]
TOOLS = ["polars-expr", "polars-expr-graded", "duckdb-macro", "evaluate-polars", "evaluate-duckdb",
         "evaluate-polars-graded"]


def make(n: int, seed: int = 42, length: int = 100) -> pl.DataFrame:
    """One row per user: user, recs (list), truth (list), rel (list parallel to truth)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 1_000_000, n)
    stride = rng.integers(1, 9_999, n)
    recs = (base[:, None] + np.arange(length)[None, :] * stride[:, None]) % 1_000_000  # distinct per row
    n_truth = rng.integers(5, 21, n)
    n_own = rng.binomial(n_truth, 0.18)
    offset = rng.integers(0, 30, n)
    user_of = np.repeat(np.arange(n), n_truth)
    j = np.arange(n_truth.sum()) - np.repeat(np.cumsum(n_truth) - n_truth, n_truth)
    own = j < np.repeat(n_own, n_truth)
    pos = (np.repeat(offset, n_truth) + j * 13) % length  # distinct positions, skewed to the top
    items = np.where(own, recs[user_of, pos], 1_000_000 + user_of * 32 + j)  # the rest: not recommended
    rel = rng.choice([0.0, 1.0, 2.0, 3.0], p=[0.1, 0.5, 0.25, 0.15], size=len(items))
    offsets = np.r_[0, np.cumsum(n_truth)].astype(np.int32)
    table = pa.table({
        "user": np.arange(n, dtype=np.int64),
        "recs": pa.ListArray.from_arrays(np.arange(0, n * length + 1, length, dtype=np.int32), recs.ravel()),
        "truth": pa.ListArray.from_arrays(offsets, items.astype(np.int64)),
        "rel": pa.ListArray.from_arrays(offsets, rel),
    })
    return pl.from_arrow(table)


def run(tool: str, ks: list[int], df: pl.DataFrame):
    import rankwise
    from rankwise import expr

    if tool.startswith("polars-expr"):
        rel = "rel" if tool.endswith("graded") else None
        return df.lazy().select("user", *expr.metrics("recs", "truth", k=ks, metrics=NAMES, relevance=rel)).collect()
    if tool == "duckdb-macro":
        import duckdb

        con = duckdb.connect()
        expr.install_duckdb(con)
        con.register("lists", df.select("user", "recs", "truth").to_arrow())
        cols = ", ".join(f'rankwise_{m}(recs, truth, {k}) AS "{m}@{k}"' for m in NAMES for k in ks)
        return con.execute(f"SELECT user, {cols} FROM lists").to_arrow_table()
    backend = tool.split("-")[1]
    recs = df.select("user", pl.col("recs").alias("item"))
    truth = df.select("user", pl.col("truth").alias("item"))
    if tool.endswith("graded"):  # the relevance list: four levels 0-3, exp2 gain
        truth = truth.with_columns(df["rel"].alias("relevance"))
    return rankwise.evaluate(recs, truth, k=ks, metrics=NAMES, backend=backend).per_user


def parse_size(s: str) -> int:
    s = s.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(s[-1], 1)
    return int(float(s[:-1] if mult > 1 else s) * mult)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", default="1M")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--configs", default="all,k10")
    ap.add_argument("--reps", type=int, default=1)
    args = ap.parse_args()
    n = parse_size(args.users)
    t0 = time.perf_counter()
    df = make(n)
    print(f"data: {n} users x 100, {df['truth'].list.len().sum()} labels, built in {time.perf_counter() - t0:.1f} s",
          flush=True)
    for tool in args.tools.split(","):
        for config in args.configs.split(","):
            ks = KS_ALL if config == "all" else [10]
            best = float("inf")
            for _ in range(args.reps):
                start = time.perf_counter()
                run(tool, ks, df)
                best = min(best, time.perf_counter() - start)
            print(f"{tool:20s} {config:4s} {best:8.2f} s", flush=True)


if __name__ == "__main__":
    main()
