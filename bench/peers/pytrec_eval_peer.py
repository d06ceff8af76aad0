"""pytrec_eval peer: Parquet -> dicts {user: {item: score}} -> RelevanceEvaluator -> six measures.

Encoding: ids as strings, score = 1/rank (no ties), qrels = every truth row with int relevance.
pytrec_eval evaluates only users present in both dicts (users without recs or without truth are
skipped); we average its per-user dict ourselves. recip_rank has no cutoff (= MRR@100 here).
Timings: read, build (dicts + RelevanceEvaluator), eval.
"""
from __future__ import annotations

import polars as pl
import pytrec_eval

from _common import TREC_METRICS, Timer, emit, load_check_users, parser, write_check

MEASURES = {"P.10", "recall.10", "map_cut.10", "recip_rank", "ndcg_cut.10", "success.10"}


def nested(df: pl.DataFrame, value: str) -> dict[str, dict[str, float]]:
    """Long (user, item, value) -> {user: {item: value}} with string ids."""
    g = df.group_by("user").agg(pl.col("item").cast(pl.Utf8), pl.col(value))
    return {str(u): dict(zip(i, v)) for u, i, v in g.iter_rows()}


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
    with t("build"):
        run = nested(recs.with_columns(score=1.0 / pl.col("rank")), "score")
        qrels = nested(truth.with_columns(pl.col("relevance").cast(pl.Int64)), "relevance")
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, MEASURES)
    with t("eval"):
        per_user = evaluator.evaluate(run)
        n = len(per_user)
        summary = {m: sum(v[m] for v in per_user.values()) / max(n, 1) for m in TREC_METRICS}
    if a.check_users:
        rows = [(int(q), m, v[m]) for q, v in per_user.items() for m in TREC_METRICS]
        write_check(a.check_out, rows, TREC_METRICS)
        return
    emit("pytrec_eval", t, n_users=n, summary=summary)


if __name__ == "__main__":
    main()
