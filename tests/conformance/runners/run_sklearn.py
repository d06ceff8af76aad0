"""Run scikit-learn's ndcg_score / dcg_score on a conformance dataset (dense user x item rows).

Usage: python run_sklearn.py DATASET.json OUT.json [--k 1,3,5,10]
"""

import math

import numpy as np
from sklearn.metrics import dcg_score, ndcg_score
# the per-row functions both public scores average over (ndcg_score = mean of _ndcg_sample_scores):
# one call per matrix instead of one public call (about 2 ms of parameter checks) per user
from sklearn.metrics._ranking import _dcg_sample_scores, _ndcg_sample_scores

from _common import Dataset, entry, parse_args, write

VARIANTS = {
    "default": "recommended items, then the user's unrecommended judged items, then the rest of the catalog; "
               "all scores distinct",
    "labels_last": "recommended items, then the rest of the catalog, then the user's unrecommended judged items "
                   "(they only enter the ideal DCG); all scores distinct",
    "tied_tail": "recommended items get n - position, every other column 0 (tied; sklearn's default "
                 "tie-averaged DCG)",
    "tied_tail_ignore_ties": "as tied_tail with ignore_ties=True",
}


def matrices(ds, variant, pad):
    """y_true (relevance, 0 for unjudged) and y_score: every dataset user x (every item + ``pad`` dummy items)."""
    catalog = list(ds.items) + [("pad", j) for j in range(pad)]  # never-judged filler columns
    col = {item: j for j, item in enumerate(catalog)}
    n_cols = len(catalog)
    y_true = np.zeros((len(ds.users), n_cols))
    y_score = np.zeros((len(ds.users), n_cols))
    for r, u in enumerate(ds.users):
        judged = ds.truth.get(u, {})
        for item, g in judged.items():
            y_true[r, col[item]] = g
        lst = ds.recs.get(u, [])
        if variant.startswith("tied_tail"):
            for pos, item in enumerate(lst):
                y_score[r, col[item]] = len(lst) - pos
            continue
        rest_judged = [i for i in ds.items if i in judged and i not in lst]
        rest = [i for i in catalog if i not in judged and i not in lst]
        order = lst + (rest_judged + rest if variant == "default" else rest + rest_judged)
        for pos, item in enumerate(order):  # distinct scores, decreasing along the order
            y_score[r, col[item]] = n_cols - pos
    return y_true, y_score


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    results = {}
    for variant in VARIANTS:
        y_true, y_score = matrices(ds, variant, max(args.ks))
        kw = {"ignore_ties": variant.endswith("ignore_ties")}
        res = {}
        for k in args.ks:
            for name, fn, per_row in (("ndcg", ndcg_score, _ndcg_sample_scores), ("dcg", dcg_score, _dcg_sample_scores)):
                values = per_row(y_true, y_score, k=k, **kw)
                for r in range(min(3, len(values))):  # the public function on one row: the same value
                    one = fn(y_true[r:r + 1], y_score[r:r + 1], k=k, **kw)
                    assert math.isclose(one, values[r], rel_tol=1e-15, abs_tol=1e-300), (name, k, variant, r)
                per_user = [(u, float(values[r])) for r, u in enumerate(ds.users)]
                mean = fn(y_true, y_score, k=k, **kw)
                res["%s@%d" % (name, k)] = entry(per_user, mean, "%s_score(k=%d%s)" % (
                    name, k, ", ignore_ties=True" if kw["ignore_ties"] else ""))
        results[variant] = res
    encoding = (
        "Dense matrices with one row per dataset user (union of recs and truth: %s) and one column per item "
        "seen anywhere in the dataset plus max(k) never-judged filler columns (%d columns), so that in "
        "labels_last no unrecommended judged item can reach the top k. y_true = judged relevance (0 for "
        "unjudged); users with no judgements are all-zero rows. y_score per variant: %s. Per-user values come from "
        "the per-row function the score averages (_ndcg_sample_scores / _dcg_sample_scores, checked against "
        "the public function on single rows; with ignore_ties a BLAS dot product makes a row's last bit depend "
        "on the matrix shape); the mean is the function on the whole matrix. dcg_score uses its "
        "default log_base=2."
        % (ds.describe_users(), len(ds.items) + max(args.ks), "; ".join("%s = %s" % kv for kv in VARIANTS.items())))
    write(args.out, "sklearn", "scikit-learn", ds, encoding, results)


if __name__ == "__main__":
    main()
