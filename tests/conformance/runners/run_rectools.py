"""Run RecTools' rectools.metrics on a conformance dataset.

Usage: python run_rectools.py DATASET.json OUT.json [--k 1,3,5,10]
"""

import pandas as pd
from rectools import Columns
from rectools.metrics import MAP, MRR, NDCG, F1Beta, HitRate, Precision, Recall

from _common import Dataset, entry, parse_args, write

# variant -> {rankwise metric: (class, extra keyword arguments)}
VARIANTS = {
    "default": {"precision": (Precision, {}), "recall": (Recall, {}), "f1": (F1Beta, {}), "map": (MAP, {}),
                "ndcg": (NDCG, {}), "mrr": (MRR, {}), "hit_rate": (HitRate, {})},
    "r_precision": {"precision": (Precision, {"r_precision": True})},
    "divide_by_k": {"map": (MAP, {"divide_by_k": True})},
    "divide_by_achievable": {"ndcg": (NDCG, {"divide_by_achievable": True})},
}


def tables(ds):
    """reco (user_id, item_id, rank = 1-based position); interactions (user_id, item_id) for rel >= 1."""
    reco = pd.DataFrame([(u, i, p + 1) for u, lst in ds.recs.items() for p, i in enumerate(lst)],
                        columns=[Columns.User, Columns.Item, Columns.Rank])
    inter = pd.DataFrame([(u, i) for u, judged in ds.truth.items() for i, g in judged.items() if g > 0],
                         columns=[Columns.User, Columns.Item])
    return reco, inter


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    reco, inter = tables(ds)
    results = {}
    for variant, table in VARIANTS.items():
        res = {}
        for k in args.ks:
            for key, (cls, kw) in table.items():
                metric = cls(k=k, **kw)
                per_user = metric.calc_per_user(reco, inter)
                res["%s@%d" % (key, k)] = entry(list(per_user.items()), metric.calc(reco, inter), repr(metric))
        results[variant] = res
    encoding = (
        "reco = (user_id, item_id, rank = 1-based position) for every recommended item; interactions = "
        "(user_id, item_id) for every judged item with relevance >= 1 (relevance is binary in RecTools; judged "
        "zeros and users without relevant items are absent). RecTools evaluates the interaction users. "
        "Per-user values from calc_per_user, means from calc. Dataset: %s; %d interaction users."
        % (ds.describe_users(), inter[Columns.User].nunique()))
    write(args.out, "rectools", "rectools", ds, encoding, results)


if __name__ == "__main__":
    main()
