"""Run RePlay's beyond-accuracy metrics (Surprisal, Coverage) on the beyond-accuracy dataset.

Usage: python run_replay_beyond.py DATASET.json OUT.json [--k 1,3,5,10]
"""

import pandas as pd
import polars as pl
from replay.metrics import Coverage, Surprisal
from replay.metrics.descriptors import PerUser

from _common import Dataset, entry, parse_args, write


def inputs(ds, variant):
    """(recommendations, train) as pandas (default), dict or polars; rating = the dataset's score."""
    rows = [(u, i, s) for u, lst in ds.recs.items() for i, s in zip(lst, ds.scores[u])]
    train = [(u, i) for u, i in ds.train]
    if variant == "dict":
        recs = {u: [(i, s) for i, s in zip(lst, ds.scores[u])] for u, lst in ds.recs.items()}
        by_user = {}
        for u, i in train:
            by_user.setdefault(u, []).append(i)
        return recs, by_user
    recs = pd.DataFrame(rows, columns=["query_id", "item_id", "rating"])
    train = pd.DataFrame(train, columns=["query_id", "item_id"])
    if variant == "polars":
        return pl.from_pandas(recs), pl.from_pandas(train)
    return recs, train


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    results = {}
    for variant in ("default", "dict", "polars"):
        recs, train = inputs(ds, variant)
        res = {}
        means = Surprisal(topk=args.ks)(recs, train)
        per_user = Surprisal(topk=args.ks, mode=PerUser())(recs, train)
        coverage = Coverage(topk=args.ks)(recs, train)
        for k in args.ks:
            res["novelty@%d" % k] = entry(sorted(per_user["Surprisal-PerUser@%d" % k].items()), means["Surprisal@%d" % k],
                                          "Surprisal(topk=%s)(recs, train) -> Surprisal@%d" % (args.ks, k))
            res["item_coverage@%d" % k] = entry([], coverage["Coverage@%d" % k],
                                                "Coverage(topk=%s)(recs, train) -> Coverage@%d" % (args.ks, k))
        results[variant] = res
    encoding = (
        "'default' = pandas: recommendations (query_id, item_id, rating = the dataset's score, descending along "
        "each list; users with an empty list have no rows), train (query_id, item_id) = every train row, repeats "
        "kept. 'dict' = recommendations {user: [(item, score), ...]} for every list user ([] for an empty list), "
        "train {user: [items]} with repeats. 'polars' = the pandas tables as polars frames. Surprisal: means with "
        "mode=Mean() (default), per-user values with mode=PerUser(). Coverage returns one number per k. Dataset: "
        "%d recommendation users (%d empty lists), %d train rows."
        % (len(ds.recs), sum(1 for lst in ds.recs.values() if not lst), len(ds.train)))
    write(args.out, "replay", "replay-rec", ds, encoding, results)


if __name__ == "__main__":
    main()
