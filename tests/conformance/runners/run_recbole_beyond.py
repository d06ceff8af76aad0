"""Run RecBole 1.2.1's beyond-accuracy metrics (recbole.evaluator.metrics) on the beyond-accuracy dataset.

Usage: python run_recbole_beyond.py DATASET.json OUT.json [--k 1,3,5,10]
"""

from collections import Counter

import numpy as np

np.float = float  # RecBole 1.2.1 still uses np.float (removed in numpy 1.24)

import torch  # noqa: E402
from recbole.evaluator.collector import DataStruct  # noqa: E402
from recbole.evaluator.metrics import (AveragePopularity, GiniIndex, ItemCoverage, ShannonEntropy,  # noqa: E402
                                       TailPercentage)

from _common import Dataset, entry, parse_args, write  # noqa: E402

DEFAULT_DECIMALS = 4  # RecBole's default metric_decimal_place
# rankwise name -> (class, RecBole's key prefix, per-user values available through metric_info)
METRICS = {"item_coverage": (ItemCoverage, "itemcoverage", False), "arp": (AveragePopularity, "averagepopularity", True),
           "gini": (GiniIndex, "giniindex", False), "exposure_entropy": (ShannonEntropy, "shannonentropy", False),
           "long_tail_share": (TailPercentage, "tailpercentage", True)}


def data_struct(ds, users, max_k):
    """What RecBole's Collector hands the metrics: 'rec.items' (token ids of each user's top max_k),
    'data.num_items' (the item vocabulary + [PAD] = id 0), 'data.count_items' (train rows per item id)."""
    vocabulary = sorted(set(ds.catalog) | {i for _, i in ds.train} | {i for lst in ds.recs.values() for i in lst})
    token = {item: n + 1 for n, item in enumerate(vocabulary)}
    data = DataStruct()
    data.set("rec.items", torch.tensor([[token[i] for i in ds.recs[u][:max_k]] for u in users]))
    data.set("data.num_items", len(vocabulary) + 1)
    data.set("data.count_items", Counter(token[i] for _, i in ds.train))
    return data, len(vocabulary)


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    max_k = max(args.ks)
    users = [u for u, lst in ds.recs.items() if len(lst) >= max_k]  # RecBole's top-K is always full
    data, n_vocabulary = data_struct(ds, users, max_k)
    results = {}
    for variant, tail_ratio in (("default", 0.1), ("tail_ratio_3", 3)):
        res = {}
        for key, (cls, prefix, per_user_info) in METRICS.items():
            if variant != "default" and key != "long_tail_share":
                continue
            config = {"topk": args.ks, "tail_ratio": tail_ratio}
            exact = cls(dict(config, metric_decimal_place=100))  # round(x, 100) == x
            means = exact.calculate_metric(data)
            means4 = cls(dict(config, metric_decimal_place=DEFAULT_DECIMALS)).calculate_metric(data)
            per_user = None
            if per_user_info:
                matrix, counts = exact.used_info(data)
                values = exact.get_pop(matrix, counts) if key == "arp" else exact.get_tail(matrix, counts)
                per_user = exact.metric_info(values)
            for k in args.ks:
                name = "%s@%d" % (prefix, k)
                pairs = [] if per_user is None else list(zip(users, per_user[:, k - 1]))
                res["%s@%d" % (key, k)] = entry(pairs, means[name], "%s(topk=%s%s) %s" % (
                    cls.__name__, args.ks, ", tail_ratio=%s" % tail_ratio if key == "long_tail_share" else "", name),
                    mean_rounded_default=means4[name])
        results[variant] = res
    encoding = (
        "RecBole ranks the full item vocabulary, so every evaluated user has a full top-K: the %d users whose list "
        "has >= %d items (of %d list users). We feed the metric classes what its Collector would: 'rec.items' = "
        "their top %d items as token ids, 'data.num_items' = %d = the dataset's item vocabulary (catalog, train "
        "and recommended items) + the [PAD] token, 'data.count_items' = train rows per item (repeats counted). "
        "Per-user arp and long_tail_share from metric_info; 'mean' from calculate_metric with "
        "metric_decimal_place=100 (unrounded), 'mean_rounded_default' with RecBole's default 4 decimals. numpy "
        "%s with an np.float = float shim." % (len(users), max_k, len(ds.recs), max_k, n_vocabulary + 1,
                                               np.__version__))
    write(args.out, "recbole", "recbole", ds, encoding, results)


if __name__ == "__main__":
    main()
