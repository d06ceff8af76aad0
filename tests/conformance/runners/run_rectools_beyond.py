"""Run RecTools' beyond-accuracy metrics on the beyond-accuracy dataset.

Usage: python run_rectools_beyond.py DATASET.json OUT.json [--k 1,3,5,10]
"""

import pandas as pd
from rectools import Columns
from rectools.metrics import AvgRecPopularity, CatalogCoverage, MeanInvUserFreq, Serendipity

from _common import Dataset, entry, parse_args, write


def tables(ds):
    """reco (user, item, rank); prev_interactions = train rows (repeats kept); interactions = relevant truth."""
    reco = pd.DataFrame([(u, i, p + 1) for u, lst in ds.recs.items() for p, i in enumerate(lst)],
                        columns=[Columns.User, Columns.Item, Columns.Rank])
    prev = pd.DataFrame(ds.train, columns=[Columns.User, Columns.Item])
    inter = pd.DataFrame([(u, i) for u, judged in ds.truth.items() for i, g in judged.items() if g > 0],
                         columns=[Columns.User, Columns.Item])
    return reco, prev, inter


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    reco, prev, inter = tables(ds)
    catalog = ds.catalog
    default, normalized = {}, {}
    for k in args.ks:
        for key, metric, call in (
            ("novelty", MeanInvUserFreq(k=k), lambda m: m.calc_per_user(reco, prev)),
            ("arp", AvgRecPopularity(k=k), lambda m: m.calc_per_user(reco, prev)),
            ("serendipity", Serendipity(k=k), lambda m: m.calc_per_user(reco, inter, prev, catalog)),
        ):
            per_user = call(metric)
            default["%s@%d" % (key, k)] = entry(list(per_user.items()), per_user.mean(),
                                                "%r.calc_per_user, mean = pandas mean" % metric)
        for table, metric in ((default, CatalogCoverage(k=k)), (normalized, CatalogCoverage(k=k, normalize=True))):
            table["item_coverage@%d" % k] = entry([], metric.calc(reco, catalog), "%r.calc(reco, catalog)" % metric)
    encoding = (
        "reco = (user_id, item_id, rank = 1-based position) for every recommended item (users with an empty list "
        "have no rows); prev_interactions = every train row, repeats kept; interactions = the truth items (all "
        "relevance 1); catalog = the dataset's catalog list (%d items). Per-user values from calc_per_user "
        "(RecTools returns the reco users; a user with no item at k would be NaN), mean = the pandas mean "
        "RecTools' calc takes. CatalogCoverage returns one number (a count; variant normalized: / len(catalog)). "
        "Dataset: %d recommendation users, %d train rows." % (len(catalog), len(ds.recs), len(ds.train)))
    write(args.out, "rectools", "rectools", ds, encoding, {"default": default, "normalized": normalized})


if __name__ == "__main__":
    main()
