"""Floor: the least work any tool must do, i.e. scan both Parquet files and count rows per user.

--engine polars: lazy scan + group_by(user).len(); --engine duckdb: SELECT user, count(*) ... GROUP BY.
Run with the same interpreter as rankwise so it uses the same polars/duckdb builds.
"""
from __future__ import annotations

from _common import Timer, emit, parser


def polars_floor(recs: str, truth: str) -> int:
    import polars as pl

    frames = [pl.scan_parquet(p).group_by("user").len() for p in (recs, truth)]
    return sum(f.height for f in pl.collect_all(frames))


def duckdb_floor(recs: str, truth: str) -> int:
    import duckdb

    con = duckdb.connect()
    q = "SELECT count(*) FROM (SELECT \"user\", count(*) AS n FROM read_parquet(?) GROUP BY \"user\")"
    return sum(con.execute(q, [p]).fetchone()[0] for p in (recs, truth))


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--engine", choices=["polars", "duckdb"], default="polars")
    a = ap.parse_args()
    t = Timer()
    with t("scan"):
        groups = (polars_floor if a.engine == "polars" else duckdb_floor)(a.recs, a.truth)
    emit(f"floor-{a.engine}", t, n_groups=groups)


if __name__ == "__main__":
    main()
