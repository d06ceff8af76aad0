"""Run ml_metrics (Kaggle apk/mapk, PyPI 0.1.4) on a conformance dataset.

Usage: python run_ml_metrics.py DATASET.json OUT.json [--k 1,3,5,10]
"""

import ml_metrics

from _common import Dataset, entry, parse_args, write


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    # every user of the union: actual = relevant items (rel >= 1), predicted = the list ([] when absent)
    actual = [sorted(ds.relevant(u), key=str) for u in ds.users]
    predicted = [list(ds.recs.get(u, [])) for u in ds.users]
    res = {}
    for k in args.ks:
        per_user = [(u, ml_metrics.apk(a, p, k)) for u, a, p in zip(ds.users, actual, predicted)]
        res["map@%d" % k] = entry(per_user, ml_metrics.mapk(actual, predicted, k), "apk / mapk(k=%d)" % k)
    encoding = (
        "For every user of the union (%s): actual = list of items with relevance >= 1 ([] when none or absent "
        "from truth), predicted = the recommendation list ([] when absent). Per-user values are apk(actual, "
        "predicted, k), the mean is mapk over all users." % ds.describe_users())
    write(args.out, "ml_metrics", "ml_metrics", ds, encoding, {"default": res})


if __name__ == "__main__":
    main()
