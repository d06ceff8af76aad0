"""Run Microsoft Recommenders' beyond-accuracy metrics (python_evaluation) on the beyond-accuracy dataset.

Usage: python run_recommenders_beyond.py DATASET.json OUT.json [--k 1,3,5,10]
The functions have no k: each k gets the recommendation table cut to every user's top k.
"""

import numpy as np
import pandas as pd
from recommenders.evaluation import python_evaluation as pe

from _common import Dataset, entry, parse_args, write

FEATURES = dict(item_sim_measure="item_feature_vector", col_item_features="features")


def tables(ds, k, min_len=1):
    """train (userID, itemID) every row; reco = the top k of every list with >= min_len items; features."""
    train = pd.DataFrame(ds.train, columns=["userID", "itemID"])
    reco = pd.DataFrame([(u, i) for u, lst in ds.recs.items() if len(lst) >= min_len for i in lst[:k]],
                        columns=["userID", "itemID"])
    features = pd.DataFrame({"itemID": list(ds.embeddings), "features": [np.array(v) for v in ds.embeddings.values()]})
    return train, reco, features


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    default, full, pooled = {}, {}, {}
    full_len = max(args.ks)
    for k in args.ks:
        train, reco, features = tables(ds, k)
        default["item_coverage@%d" % k] = entry([], pe.catalog_coverage(train, reco),
                                                "python_evaluation.catalog_coverage(train, top-%d reco)" % k)
        default["exposure_entropy@%d" % k] = entry([], pe.distributional_coverage(train, reco),
                                                   "python_evaluation.distributional_coverage(train, top-%d reco)" % k)
        per_user = pe.user_diversity(train, reco, item_feature_df=features, **FEATURES)
        default["ild@%d" % k] = entry(list(zip(per_user["userID"].tolist(), per_user["user_diversity"])),
                                      pe.diversity(train, reco, item_feature_df=features, **FEATURES),
                                      "python_evaluation.diversity(train, top-%d reco, item_feature_df, "
                                      "item_sim_measure='item_feature_vector'); per user: user_diversity" % k)
        pooled["novelty@%d" % k] = entry([], pe.novelty(train, reco), "python_evaluation.novelty(train, top-%d reco)" % k)
        train, reco, _ = tables(ds, k, min_len=full_len)
        full["novelty@%d" % k] = entry([], pe.novelty(train, reco),
                                       "python_evaluation.novelty(train, top-%d reco of the lists with >= %d items)"
                                       % (k, full_len))
    encoding = (
        "train_df = every train row (userID, itemID), repeats kept (MS assumes none; the metrics run here use train "
        "only for its item set, novelty for row counts); reco_df = (userID, itemID) of every user's top k (users "
        "with an empty list have no rows; no list holds a train pair of its user, as MS requires); item_feature_df "
        "= (itemID, features = the embedding as a numpy array). Variant 'full_lists': only the %d users whose list "
        "has >= %d items, so every list has k items at every k; 'pooled': novelty on every list (a mean over "
        "recommendation rows). pandas %s." % (
            sum(1 for lst in ds.recs.values() if len(lst) >= full_len), full_len, pd.__version__))
    write(args.out, "recommenders", "recommenders", ds, encoding, {"default": default, "full_lists": full, "pooled": pooled})


if __name__ == "__main__":
    main()
