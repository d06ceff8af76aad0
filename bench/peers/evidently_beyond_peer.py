"""Evidently peer for bench/beyond_bench.py --peers: its beyond-accuracy recsys metrics at k on the bench files.

Runs in Evidently's own venv (the conformance venv ``evidently``), legacy Report API, as
tests/conformance/runners/run_evidently_beyond.py found it must be fed to be compared with rankwise's
``evidently`` preset, except that the bench files have ranks, not scores:
  current_data = every row of the recommendations file (user, item, rank), recommendations_type="rank"
                 (Evidently keeps rank <= k itself);
  additional_data current_train_data = every row of the train file (user, item), repeats kept.
One Report per metric, so each is timed on its own (each Report recomputes the train statistics it needs):
  novelty <- NoveltyMetric; arp, item_coverage, gini <- PopularityBias (one Report, three numbers);
  personalization <- PersonalizationMetric.
Not run: DiversityMetric (ild) builds a dense items x items cosine matrix over every train item and
item ranked <= k + 1 (510k items, 2.1 TB at 100k users); ScoreDistribution needs scores (the bench
files have ranks).

Usage: python evidently_beyond_peer.py --recs R.parquet --train T.parquet [--k 10]
                                       [--metrics novelty,popularity_bias,personalization]
Prints the line protocol of _common.py (START / METRIC / RESULT).
"""
from __future__ import annotations

import argparse
import warnings

from _common import Timer, emit, finished, start

METRICS = ["novelty", "popularity_bias", "personalization"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recs", required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--metrics", default=",".join(METRICS))
    a = ap.parse_args()
    wanted = [m for m in a.metrics.split(",") if m]
    warnings.filterwarnings("ignore")  # Evidently's deprecation notices for the legacy API
    t = Timer()
    with t("import"):
        import evidently
        import pandas as pd
        from evidently.legacy.metrics import NoveltyMetric, PersonalizationMetric, PopularityBias
        from evidently.legacy.pipeline.column_mapping import ColumnMapping
        from evidently.legacy.report import Report
    with t("read"):
        current = pd.read_parquet(a.recs, columns=["user", "item", "rank"])
        train = pd.read_parquet(a.train, columns=["user", "item"])
    mapping = ColumnMapping(recommendations_type="rank", prediction="rank", user_id="user", item_id="item")
    k = a.k

    def run(metric):
        Report(metrics=[metric]).run(reference_data=None, current_data=current, column_mapping=mapping,
                                     additional_data={"current_train_data": train})
        return metric.get_result()

    def popularity_bias():
        res = run(PopularityBias(k=k))
        return {"arp": res.current_apr, "item_coverage": res.current_coverage, "gini": res.current_gini}

    calls = {
        "novelty": lambda: {"novelty": run(NoveltyMetric(k=k)).current_value},
        "popularity_bias": popularity_bias,
        "personalization": lambda: {"personalization": run(PersonalizationMetric(k=k)).current_value},
    }
    for name in wanted:
        t0 = start(name)
        finished(name, calls[name](), t0)
    emit("evidently", t, version=evidently.__version__, k=k, rows=len(current), train_rows=len(train),
         users=int(current["user"].nunique()))


if __name__ == "__main__":
    main()
