"""ranx peer: Parquet -> pandas (string ids) -> Qrels/Run.from_df -> evaluate six metrics @10.

Encoding: score = 1/rank; qrels keep every truth row (relevance as int, 0 = judged non-relevant);
run = users with recommendations. evaluate(make_comparable=True) adds empty runs for truth users
without recs and drops users without truth, so the mean is over truth users.
Timings: read, build (Qrels/Run), eval (first call, includes numba JIT unless cached), eval_warm (again).
"""
from __future__ import annotations

import polars as pl
import ranx

from _common import RANX_METRICS, Timer, emit, load_check_users, parser, write_check

METRICS = list(RANX_METRICS)


def main() -> None:
    a = parser(__doc__).parse_args()
    t = Timer()
    with t("read"):
        recs = pl.read_parquet(a.recs)
        truth = pl.read_parquet(a.truth)
        if a.check_users:
            users = load_check_users(a.check_users)
            recs = recs.filter(pl.col("user").is_in(users))
            truth = truth.filter(pl.col("user").is_in(users))
        run_df = recs.select(
            q_id=pl.col("user").cast(pl.Utf8), doc_id=pl.col("item").cast(pl.Utf8), score=1.0 / pl.col("rank")
        ).to_pandas().astype({"q_id": object, "doc_id": object})  # ranx asserts object dtype
        qrels_df = truth.select(
            q_id=pl.col("user").cast(pl.Utf8), doc_id=pl.col("item").cast(pl.Utf8),
            score=pl.col("relevance").cast(pl.Int64),
        ).to_pandas().astype({"q_id": object, "doc_id": object})
    with t("build"):
        qrels = ranx.Qrels.from_df(qrels_df)
        run = ranx.Run.from_df(run_df).make_comparable(qrels)
    with t("eval"):
        summary = ranx.evaluate(qrels, run, METRICS)
    if a.check_users:
        rows = [(int(q), m, v) for m in METRICS for q, v in run.scores[m].items()]
        write_check(a.check_out, rows, RANX_METRICS)
        return
    with t("eval_warm"):
        ranx.evaluate(qrels, run, METRICS)
    emit("ranx", t, n_users=len(qrels.keys()), summary=summary)


if __name__ == "__main__":
    main()
