"""Run RePlay's replay.metrics on a conformance dataset (pandas and dict inputs).

Usage: python run_replay.py DATASET.json OUT.json [--k 1,3,5,10]
"""

import pandas as pd
from replay.metrics import MAP, MRR, NDCG, HitRate, Precision, Recall
from replay.metrics.descriptors import PerUser

from _common import Dataset, entry, parse_args, write

METRICS = {"precision": Precision, "recall": Recall, "map": MAP, "ndcg": NDCG, "mrr": MRR, "hit_rate": HitRate}


def inputs(ds, variant):
    """(recommendations, ground_truth) in the variant's format; scores n - position, GT = items with rel >= 1."""
    if variant == "dict":
        recs = {u: [(i, float(len(lst) - p)) for p, i in enumerate(lst)] for u, lst in ds.recs.items()}
        gt = {u: [i for i, g in judged.items() if g > 0] for u, judged in ds.truth.items()}
        return recs, gt
    recs = pd.DataFrame([(u, i, float(len(lst) - p)) for u, lst in ds.recs.items() for p, i in enumerate(lst)],
                        columns=["query_id", "item_id", "rating"])
    gt = pd.DataFrame([(u, i) for u, judged in ds.truth.items() for i, g in judged.items() if g > 0],
                      columns=["query_id", "item_id"])
    return recs, gt


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    results = {}
    for variant in ("default", "dict"):
        recs, gt = inputs(ds, variant)
        res = {}
        for key, cls in METRICS.items():
            means = cls(topk=args.ks)(recs, gt)
            per_user = cls(topk=args.ks, mode=PerUser())(recs, gt)
            for k in args.ks:
                mean_key = [n for n in means if n.endswith("@%d" % k)][0]
                pu_key = [n for n in per_user if n.endswith("@%d" % k)][0]
                res["%s@%d" % (key, k)] = entry(list(per_user[pu_key].items()), means[mean_key],
                                                "%s(topk=%s) -> %s" % (cls.__name__, args.ks, mean_key))
        results[variant] = res
    encoding = (
        "'default' = pandas input: recommendations (query_id, item_id, rating = n - position) for every "
        "recommended item; ground_truth (query_id, item_id) for every judged item with relevance >= 1 (users "
        "without relevant items cannot appear). 'dict' = recommendations {user: [(item, n - position), ...]} "
        "for every recs user and ground_truth {user: [relevant items]} for every truth user, [] when the user "
        "has no relevant item. RePlay evaluates the ground-truth users. Means with mode=Mean() (default), "
        "per-user values with mode=PerUser(). Dataset: %s." % ds.describe_users())
    write(args.out, "replay", "replay-rec", ds, encoding, results)


if __name__ == "__main__":
    main()
