"""Floors: the least work any tool must do, as plain programs on the same Parquet files.

--level scan (default)  scan both files and count rows per user (Polars: lazy scan + group_by(user).len();
                        DuckDB: SELECT user, count(*) ... GROUP BY). Issue 39's "scan floor".
--level join            scan both files and join the recommended rows with the relevant labels on (user, item),
                        counting the matches per user: the least any tool that finds the hits of a long
                        table does (Polars only).
--level lists           read both files in list form (one row per user, the items a list) and count the
                        items: the same floor for list-form files (decoding every list) (Polars only).
--level precision       the plainest exact program for one metric with its summary: import what the
                        answer needs (Polars, numpy, scipy.special for the t quantile of the interval), the
                        join within the top 10, precision@10 of each user with a relevant label (0 without
                        a hit: rankwise's default users and value), their mean and 95 % t interval (Polars
                        only; equal to rankwise's precision@10 summary). Issue 39, target 3's floor.
Run with the same interpreter as rankwise so it uses the same polars/duckdb builds.
"""
from __future__ import annotations

from _common import K, Timer, emit, parser


def polars_floor(recs: str, truth: str) -> int:
    import polars as pl

    frames = [pl.scan_parquet(p).group_by("user").len() for p in (recs, truth)]
    return sum(f.height for f in pl.collect_all(frames))


def duckdb_floor(recs: str, truth: str) -> int:
    import duckdb

    con = duckdb.connect()
    q = "SELECT count(*) FROM (SELECT \"user\", count(*) AS n FROM read_parquet(?) GROUP BY \"user\")"
    return sum(con.execute(q, [p]).fetchone()[0] for p in (recs, truth))


def relevant_labels(truth: str) -> "pl.LazyFrame":
    """The ground truth's relevant labels (relevance > 0: rankwise's default threshold)."""
    import polars as pl

    return pl.scan_parquet(truth).filter(pl.col("relevance") > 0)


def join_floor(recs: str, truth: str, k: int | None = None) -> "pl.DataFrame":
    """(user, hits): the recommended rows (within the top k) that have a relevant label, counted per user.
    The join is on one UInt64 key, user * 2^32 + item (the bench's ids are below 2^32; the fastest join of
    those tried, rankwise's own for such ids): the two-column join takes 1.8x as long at 1M users."""
    import polars as pl

    key = (pl.col("user").cast(pl.UInt64) * (1 << 32) + pl.col("item").cast(pl.UInt64)).alias("key")
    rows = pl.scan_parquet(recs).select("user", "item", "rank")
    if k is not None:
        rows = rows.filter(pl.col("rank") <= k)
    labels = relevant_labels(truth).select(key)
    return rows.select("user", key).join(labels, on="key", how="inner").group_by("user").len("hits").collect()


def lists_floor(recs: str, truth: str) -> int:
    """Every list of both list-form files decoded: the items counted."""
    import polars as pl

    frames = [pl.scan_parquet(p).select(pl.col("item").list.len().sum()) for p in (recs, truth)]
    return sum(f.item() for f in pl.collect_all(frames))


def precision_floor(recs: str, truth: str) -> tuple[float, float, float]:
    import numpy as np
    import polars as pl
    from scipy.special import stdtrit

    hits = join_floor(recs, truth, K)
    users = relevant_labels(truth).select("user").unique().collect()
    p = users.join(hits, on="user", how="left").select((pl.col("hits").fill_null(0) / K).alias("p"))["p"]
    n, mean, sd = p.len(), p.mean(), p.std()
    half = stdtrit(n - 1, 0.975) * sd / np.sqrt(n)
    return mean, mean - half, mean + half


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--engine", choices=["polars", "duckdb"], default="polars")
    ap.add_argument("--level", choices=["scan", "join", "lists", "precision"], default="scan")
    a = ap.parse_args()
    t = Timer()
    if a.level == "scan":
        with t("scan"):
            groups = (polars_floor if a.engine == "polars" else duckdb_floor)(a.recs, a.truth)
        emit(f"floor-{a.engine}", t, n_groups=groups)
    elif a.level == "join":
        with t("join"):
            hits = join_floor(a.recs, a.truth)
        emit("floor-join-polars", t, n_hits=int(hits["hits"].sum()))
    elif a.level == "lists":
        with t("lists"):
            items = lists_floor(a.recs, a.truth)
        emit("floor-lists-polars", t, n_items=items)
    else:
        with t("precision"):
            mean, low, high = precision_floor(a.recs, a.truth)
        emit("floor-precision-polars", t, precision=mean, ci=[low, high])


if __name__ == "__main__":
    main()
