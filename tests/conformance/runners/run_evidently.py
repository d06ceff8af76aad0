"""Run Evidently's recsys metrics (legacy Report API) on a conformance dataset.

Usage: python run_evidently.py DATASET.json OUT.json [--k 1,3,5,10]
Evidently only returns means (curves over k), so ``per_user`` is always empty.
"""

import pandas as pd
from evidently.legacy.metrics import (FBetaTopKMetric, HitRateKMetric, MAPKMetric, MARKMetric, MRRKMetric,
                                      NDCGKMetric, PrecisionTopKMetric, RecallTopKMetric)
from evidently.legacy.pipeline.column_mapping import ColumnMapping
from evidently.legacy.report import Report

from _common import Dataset, entry, parse_args, write

UNRECOMMENDED_RANK = 10 ** 6
METRICS = {"precision": PrecisionTopKMetric, "recall": RecallTopKMetric, "f1": FBetaTopKMetric,
           "map": MAPKMetric, "mar": MARKMetric, "ndcg": NDCGKMetric, "mrr": MRRKMetric, "hit_rate": HitRateKMetric}


def table(ds):
    """One row per (user, item): recommended items with their rank, relevant unrecommended items at rank 10^6."""
    rows = []
    for u in ds.users:
        lst, judged = ds.recs.get(u, []), ds.truth.get(u, {})
        rows += [(u, item, p + 1, judged.get(item, 0)) for p, item in enumerate(lst)]
        rows += [(u, item, UNRECOMMENDED_RANK, g) for item, g in sorted(judged.items(), key=str)
                 if item not in lst and g > 0]
    return pd.DataFrame(rows, columns=["user", "item", "rank", "target"])


def value(metric_cls, k, df, no_feedback):
    """The metric's value at k, or an error string (e.g. KeyError when k exceeds Evidently's curve)."""
    metric = metric_cls(k=k, no_feedback_users=no_feedback)
    mapping = ColumnMapping(recommendations_type="rank", target="target", prediction="rank",
                            user_id="user", item_id="item")
    try:
        Report(metrics=[metric]).run(reference_data=None, current_data=df, column_mapping=mapping)
        res = metric.get_result()
        v = getattr(res, "current_value", None)
        if v is None:  # MRR/HitRate results: a curve; position of k as TopKMetricResult locates it
            v = res.current[k - 1 if min(res.current.index) == 0 else k]
        return float(v), None
    except Exception as exc:  # recorded in the fixture
        return None, "%s: %s" % (type(exc).__name__, exc)


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    df = table(ds)
    results = {}
    for variant, no_feedback in (("default", False), ("no_feedback_users", True)):
        res = {}
        for k in args.ks:
            for key, cls in METRICS.items():
                v, err = value(cls, k, df, no_feedback)
                extra = {"error": err} if err else {}
                name = "%s(k=%d, no_feedback_users=%s)" % (cls.__name__, k, no_feedback)
                res["%s@%d" % (key, k)] = entry([], v, name, **extra)
        results[variant] = res
    encoding = (
        "One pandas table (user, item, rank, target) with recommendations_type='rank': every recommended item "
        "with its 1-based rank and target = its relevance (0 if unjudged), plus every relevant (rel >= 1) "
        "judged item that was not recommended, at rank 10^6; unrecommended judged zeros are not rows. Users with "
        "neither recommendations nor relevant judgements have no rows and are invisible to Evidently. Dataset: "
        "%s; %d users have rows. Evidently returns only the mean, so per_user is empty. f1 = FBetaTopKMetric "
        "(beta=1). A metric whose k is beyond Evidently's curve carries an 'error' and a null mean."
        % (ds.describe_users(), df["user"].nunique()))
    write(args.out, "evidently", "evidently", ds, encoding, results)


if __name__ == "__main__":
    main()
