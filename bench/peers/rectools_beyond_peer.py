"""RecTools peer for bench/beyond_bench.py --peers: its beyond-accuracy metrics at k on the bench files.

Runs in RecTools' own venv (the conformance venv ``rectools``; see beyond_bench.py for pyarrow).
Encoding, as tests/conformance/runners/run_rectools_beyond.py found RecTools must be fed to be compared
with rankwise's ``rectools`` preset:
  reco              = every row of the recommendations file (user_id, item_id, rank); RecTools cuts at k;
  prev_interactions = every row of the train file (repeats kept);
  interactions      = the ground-truth rows with relevance > 0 (Serendipity only);
  catalog           = the distinct train items (rankwise's catalog when no items= is given).
Metrics (rankwise name <- RecTools class, each ``calc``, i.e. the pandas mean of ``calc_per_user``):
  novelty <- MeanInvUserFreq, arp <- AvgRecPopularity, item_coverage <- CatalogCoverage (a count),
  serendipity <- Serendipity. Not run: IntraListDiversity (Hamming distances; rankwise's ild is cosine).

Usage: python rectools_beyond_peer.py --recs R.parquet --train T.parquet --truth T.parquet [--k 10]
                                      [--metrics novelty,arp,item_coverage,serendipity]
Prints the line protocol of _common.py (START / METRIC / RESULT).
"""
from __future__ import annotations

import argparse

from _common import Timer, emit, finished, start

METRICS = ["novelty", "arp", "item_coverage", "serendipity"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recs", required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--truth", help="ground truth (needed by serendipity)")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--metrics", default=",".join(METRICS))
    a = ap.parse_args()
    wanted = [m for m in a.metrics.split(",") if m]
    t = Timer()
    with t("import"):
        import pandas as pd
        import rectools
        from rectools import Columns
        from rectools.metrics import AvgRecPopularity, CatalogCoverage, MeanInvUserFreq, Serendipity
    names = {"user": Columns.User, "item": Columns.Item}
    with t("read"):
        reco = pd.read_parquet(a.recs, columns=["user", "item", "rank"]).rename(columns=names)
        prev = pd.read_parquet(a.train, columns=["user", "item"]).rename(columns=names)
        catalog = prev[Columns.Item].unique()
        if "serendipity" in wanted:
            truth = pd.read_parquet(a.truth, columns=["user", "item", "relevance"])
            inter = truth.loc[truth["relevance"] > 0, ["user", "item"]].rename(columns=names)
    k = a.k
    calls = {
        "novelty": lambda: MeanInvUserFreq(k=k).calc(reco, prev),
        "arp": lambda: AvgRecPopularity(k=k).calc(reco, prev),
        "item_coverage": lambda: CatalogCoverage(k=k).calc(reco, catalog),
        "serendipity": lambda: Serendipity(k=k).calc(reco, inter, prev, catalog),
    }
    for name in wanted:
        t0 = start(name)
        finished(name, {name: calls[name]()}, t0)
    emit("rectools", t, version=rectools.__version__, k=k, rows=len(reco), train_rows=len(prev),
         catalog=len(catalog), users=int(reco[Columns.User].nunique()))


if __name__ == "__main__":
    main()
