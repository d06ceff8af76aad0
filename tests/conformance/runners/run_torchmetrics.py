"""Run TorchMetrics' Retrieval* metrics on a conformance dataset (flat indexes/preds/target rows).

Usage: python run_torchmetrics.py DATASET.json OUT.json [--k 1,3,5,10]
"""

import torch
from torchmetrics.retrieval import (RetrievalHitRate, RetrievalMAP, RetrievalMRR, RetrievalNormalizedDCG,
                                    RetrievalPrecision, RetrievalRecall, RetrievalRPrecision)

from _common import Dataset, entry, parse_args, write

AT_K = {"precision": RetrievalPrecision, "recall": RetrievalRecall, "map": RetrievalMAP, "mrr": RetrievalMRR,
        "ndcg": RetrievalNormalizedDCG, "hit_rate": RetrievalHitRate}
GRADED = {"ndcg"}  # the only metric accepting non-binary targets


def rows(ds, pad):
    """(indexes, preds, graded target, users-with-rows) for every dataset user.

    Recommended items score n - position (> 0); ``pad`` non-relevant padding rows score in (-1, 0);
    judged-but-unrecommended items score -1, -2, ... (item order), i.e. below every padding row.
    """
    idx, preds, target, present = [], [], [], []
    for q, u in enumerate(ds.users):
        lst, judged = ds.recs.get(u, []), ds.truth.get(u, {})
        n_before = len(idx)
        for p, item in enumerate(lst):
            idx.append(q), preds.append(float(len(lst) - p)), target.append(judged.get(item, 0))
        for j in range(pad):
            idx.append(q), preds.append(-(j + 1.0) / (pad + 1.0)), target.append(0)
        rest = [i for i in sorted(judged, key=str) if i not in lst]
        for j, item in enumerate(rest):
            idx.append(q), preds.append(-1.0 - j), target.append(judged[item])
        if len(idx) > n_before:
            present.append(u)
    return torch.tensor(idx), torch.tensor(preds, dtype=torch.float64), torch.tensor(target), present


def compute(metric_cls, kwargs, data, graded, check_mean=False):
    """Library mean plus per-query values captured through a callable ``aggregation``.

    The callable returns ``values.mean()``, which is what the default ``aggregation="mean"`` returns
    (torchmetrics' ``_retrieval_aggregate``), so one run gives both; ``check_mean`` also runs the
    default and asserts the two means are equal."""
    idx, preds, target, present = data
    tgt = target if graded else (target > 0).long()
    captured = []

    def capture(values, dim=None):
        captured.append(values.clone())
        return values.mean()

    mean = metric_cls(aggregation=capture, **kwargs)(preds, tgt, indexes=idx)
    if check_mean:
        assert torch.equal(mean, metric_cls(**kwargs)(preds, tgt, indexes=idx)), (metric_cls.__name__, kwargs)
    users = present
    if kwargs.get("empty_target_action") == "skip":
        has_pos = {int(q) for q in idx[tgt > 0].unique()}
        users = [u for q, u in enumerate(present) if q in has_pos]
    values = captured[0].tolist() if captured else []
    return users, values, mean


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    pad = max(args.ks)
    padded, bare = rows(ds, pad), rows(ds, 0)
    # In the no-padding encoding users without rows vanish; re-index so query ids stay contiguous.
    keep = {u: q for q, u in enumerate(bare[3])}
    remap = torch.tensor([keep.get(u, -1) for u in ds.users])
    bare = (remap[bare[0]], bare[1], bare[2], bare[3])

    variants = {"default": ("neg", padded, False), "skip": ("skip", padded, False), "pos": ("pos", padded, False),
                "adaptive_k": ("neg", bare, True), "nopad": ("neg", bare, False)}
    results = {}
    for name, (action, data, adaptive) in variants.items():
        res = {}
        for k in args.ks:
            for key, cls in AT_K.items():
                if adaptive and key != "precision":
                    continue
                kw = {"top_k": k, "empty_target_action": action}
                if adaptive:
                    kw["adaptive_k"] = True
                users, values, mean = compute(cls, kw, data, key in GRADED, check_mean=(k == args.ks[0]))
                res["%s@%d" % (key, k)] = entry(list(zip(users, values)), mean, "%s(%s)" % (
                    cls.__name__, ", ".join("%s=%r" % kv for kv in kw.items())))
        if not adaptive:
            kw = {"empty_target_action": action}
            users, values, mean = compute(RetrievalRPrecision, kw, data, False)
            res["r_precision"] = entry(list(zip(users, values)), mean, "RetrievalRPrecision(empty_target_action=%r)"
                                       % action)
        results[name] = res

    encoding = (
        "One row per candidate document, indexes = the user's position in the dataset's user list (%s). "
        "Recommended items: preds = n - position (> 0, distinct). Then %d non-relevant padding rows with preds in "
        "(-1, 0) standing for the rest of the catalog, so that unrecommended items never reach the top %d. Then "
        "every judged item that was not recommended (judged zeros too) with preds -1, -2, ... Target: relevance "
        "binarised (rel >= 1) for all metrics except RetrievalNormalizedDCG, which gets the raw graded relevance. "
        "Variants: default = empty_target_action='neg'; skip; pos; nopad = 'neg' without padding rows (users "
        "with no recommendations and no judgements have no rows and vanish; their ranks fill up with "
        "unrecommended relevant items); adaptive_k = RetrievalPrecision(adaptive_k=True) on the nopad rows "
        "(with padding it would equal default). Per-user values are captured by a callable aggregation, means "
        "come from the same run (the callable returns values.mean(), as aggregation='mean' does; checked against a run with the default at the first k). float64 preds (values come back as float32)."
        % (ds.describe_users(), pad, pad))
    write(args.out, "torchmetrics", "torchmetrics", ds, encoding, results,
          torch_version=torch.__version__)


if __name__ == "__main__":
    main()
