"""rankwise as a benchmark tool: rankwise.evaluate on the Parquet paths, in the caller's interpreter.

--config all: every metric at k=1,5,10,20,50,100; all-k10: every metric at k=10; k10: six metrics at k=10 (the peers' set).
Check mode (--check-users/--check-out, with --convention PRESET) writes per-user values in long form.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "peers"))
from _common import Timer, emit, load_check_users, parser  # noqa: E402

CONFIGS = {
    "all": dict(k=[1, 5, 10, 20, 50, 100], metrics=None),
    "all-k10": dict(k=[10], metrics=None),
    "k10": dict(k=[10], metrics=["precision", "recall", "map", "mrr", "ndcg", "hit_rate"]),
}


def per_user_long(per_user):
    """Normalise res.per_user to long (user, metric, k, value), whether rankwise returns it long or wide."""
    import polars as pl

    df = per_user.collect() if isinstance(per_user, pl.LazyFrame) else per_user
    if {"metric", "k", "value"} <= set(df.columns):
        user = "user" if "user" in df.columns else df.columns[0]
        return df.select(pl.col(user).cast(pl.Int64).alias("user"), "metric", pl.col("k").cast(pl.Int64), "value")
    user = "user" if "user" in df.columns else df.columns[0]
    long = df.unpivot(index=user, variable_name="name", value_name="value")
    parts = pl.col("name").str.extract_groups(r"^(?<metric>[a-z_0-9]+?)[@_](?<k>\d+)$")
    return long.select(
        pl.col(user).cast(pl.Int64).alias("user"),
        parts.struct.field("metric"),
        parts.struct.field("k").cast(pl.Int64),
        pl.col("value").cast(pl.Float64),
    ).drop_nulls("metric")


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--backend", default="polars")
    ap.add_argument("--config", choices=list(CONFIGS), default="all")
    ap.add_argument("--convention", default="default")
    ap.add_argument("--check-metrics", default="precision,recall,map,mrr,ndcg,hit_rate", help="check mode only")
    ap.add_argument("--check-k", default="10,100", help="check mode only")
    ap.add_argument("--memory-limit", help="e.g. 2GB, passed to rankwise.evaluate(memory_limit=...)")
    a = ap.parse_args()
    t = Timer()
    with t("import"):
        import rankwise
    kwargs = dict(CONFIGS[a.config], backend=a.backend, convention=a.convention)
    if a.check_users:
        kwargs.update(k=[int(k) for k in a.check_k.split(",")], metrics=a.check_metrics.split(","))
    if a.memory_limit:
        kwargs["memory_limit"] = a.memory_limit
    with t("evaluate"):
        res = rankwise.evaluate(a.recs, a.truth, **kwargs)
        summary, per_user = res.summary, res.per_user
        n_rows = len(per_user.collect() if hasattr(per_user, "collect") else per_user)
    if a.check_users:
        import polars as pl

        users = load_check_users(a.check_users)
        per_user_long(per_user).filter(pl.col("user").is_in(users)).write_parquet(a.check_out)
        return
    emit(f"rankwise-{a.backend}", t, per_user_rows=n_rows, summary_rows=len(summary),
         version=getattr(rankwise, "__version__", "?"))


if __name__ == "__main__":
    main()
