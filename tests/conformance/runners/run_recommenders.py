"""Run Microsoft Recommenders' python_evaluation ranking metrics on a conformance dataset.

Usage: python run_recommenders.py DATASET.json OUT.json [--k 1,3,5,10]
The functions return only the mean, so ``per_user`` is always empty.
"""

import pandas as pd
from recommenders.evaluation import python_evaluation as pe

from _common import Dataset, entry, parse_args, write

# variant -> {rankwise metric: (function name, extra keyword arguments)}
VARIANTS = {
    "default": {"precision": ("precision_at_k", {}), "recall": ("recall_at_k", {}), "map": ("map_at_k", {}),
                "ndcg": ("ndcg_at_k", {}), "r_precision": ("r_precision_at_k", {})},
    "map": {"map": ("map", {})},
    "ndcg_log2": {"ndcg": ("ndcg_at_k", {"discfun_type": "log2"})},
    "ndcg_raw": {"ndcg": ("ndcg_at_k", {"score_type": "raw"})},
    "ndcg_raw_log2": {"ndcg": ("ndcg_at_k", {"score_type": "raw", "discfun_type": "log2"})},
    "ndcg_exp_log2": {"ndcg": ("ndcg_at_k", {"score_type": "exp", "discfun_type": "log2"})},
}


def tables(ds):
    """rating_true: relevant (rel >= 1) judged items with rating = relevance; rating_pred: prediction = n - position."""
    true = [(u, i, float(g)) for u, judged in ds.truth.items() for i, g in judged.items() if g > 0]
    pred = [(u, i, float(len(lst) - p)) for u, lst in ds.recs.items() for p, i in enumerate(lst)]
    return (pd.DataFrame(true, columns=["userID", "itemID", "rating"]),
            pd.DataFrame(pred, columns=["userID", "itemID", "prediction"]))


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    true, pred = tables(ds)
    results = {}
    for variant, table in VARIANTS.items():
        res = {}
        for k in args.ks:
            for key, (fn, kw) in table.items():
                value = getattr(pe, fn)(true, pred, k=k, **kw)
                name = "python_evaluation.%s(k=%d%s)" % (fn, k, "".join(", %s=%r" % kv for kv in kw.items()))
                res["%s@%d" % (key, k)] = entry([], value, name)
        results[variant] = res
    encoding = (
        "rating_true = one row (userID, itemID, rating=relevance) per judged item with relevance >= 1 (judged "
        "zeros and users without relevant items are absent); rating_pred = one row (userID, itemID, "
        "prediction = n - position) per recommended item (users with an empty list are absent); "
        "relevancy_method='top_k'. Dataset: %s; %d users in rating_true, %d in rating_pred, %d in both. "
        "The functions return only the mean, so per_user is empty."
        % (ds.describe_users(), true["userID"].nunique(), pred["userID"].nunique(),
           len(set(true["userID"]) & set(pred["userID"]))))
    write(args.out, "recommenders", "recommenders", ds, encoding, results)


if __name__ == "__main__":
    main()
