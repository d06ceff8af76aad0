"""Run RecBole 1.2.1's top-k metrics (recbole.evaluator.metrics) on a conformance dataset.

Usage: python run_recbole.py DATASET.json OUT.json [--k 1,3,5,10]
"""

import numpy as np

np.float = float  # RecBole 1.2.1 still uses np.float (removed in numpy 1.24)

import torch  # noqa: E402
from recbole.evaluator.collector import DataStruct  # noqa: E402
from recbole.evaluator.metrics import MAP, MRR, NDCG, Hit, Precision, Recall  # noqa: E402

from _common import Dataset, entry, parse_args, write  # noqa: E402

METRICS = {"precision": Precision, "recall": Recall, "map": MAP, "ndcg": NDCG, "mrr": MRR, "hit_rate": Hit}
DEFAULT_DECIMALS = 4  # RecBole's default metric_decimal_place


def rec_topk(ds, users, max_k):
    """RecBole's 'rec.topk' tensor: per user max_k 0/1 hit flags (list padded with non-relevant items) + |L|."""
    rows = []
    for u in users:
        rel = ds.relevant(u)
        lst = ds.recs.get(u, [])[:max_k]
        flags = [1 if i in rel else 0 for i in lst] + [0] * (max_k - len(lst))
        rows.append(flags + [len(rel)])
    data = DataStruct()
    data.set("rec.topk", torch.tensor(rows))
    return data


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    users = [u for u in ds.users if ds.relevant(u)]  # RecBole only evaluates users with test items
    data = rec_topk(ds, users, max(args.ks))
    res = {}
    for key, cls in METRICS.items():
        exact = cls({"topk": args.ks, "metric_decimal_place": 100})  # round(x, 100) == x
        rounded = cls({"topk": args.ks, "metric_decimal_place": DEFAULT_DECIMALS})
        pos_index, pos_len = exact.used_info(data)
        per_user = exact.metric_info(pos_index, pos_len) if key in ("recall", "map", "ndcg") \
            else exact.metric_info(pos_index)
        means, means4 = exact.calculate_metric(data), rounded.calculate_metric(data)
        for k in args.ks:
            name = "%s@%d" % (cls.__name__.lower(), k)
            res["%s@%d" % (key, k)] = entry(list(zip(users, per_user[:, k - 1])), means[name],
                                            "%s(topk=%s) %s" % (cls.__name__, args.ks, name),
                                            mean_rounded_default=means4[name])
    encoding = (
        "RecBole scores the full catalog and keeps a top-K boolean matrix; we feed that matrix ('rec.topk' = "
        "max(k) hit flags + number of positives) directly to the metric classes: each user's list truncated to "
        "max(k), padded with non-relevant items, hit = relevance >= 1, pos_len = number of relevant items. "
        "Only users with >= 1 relevant item are evaluated (as RecBole does): %d of %s. Per-user values from "
        "metric_info, 'mean' from calculate_metric with metric_decimal_place=100 (unrounded), "
        "'mean_rounded_default' with RecBole's default 4 decimals. numpy %s with an np.float = float shim."
        % (len(users), ds.describe_users(), np.__version__))
    write(args.out, "recbole", "recbole", ds, encoding, {"default": res})


if __name__ == "__main__":
    main()
