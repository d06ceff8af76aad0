"""Run pytrec-eval-terrier (trec_eval measures) on a conformance dataset.

Usage: python run_pytrec_eval.py DATASET.json OUT.json [--k 1,3,5,10]
"""

import pytrec_eval

from _common import Dataset, entry, parse_args, write

CUT_MEASURES = {"precision": "P", "recall": "recall", "map": "map_cut", "ndcg": "ndcg_cut", "hit_rate": "success"}


def build(ds):
    """qrels: every truth user (empty dict if no judgements); run: every recs user, score = n - position."""
    qrels = {str(u): {str(i): int(g) for i, g in judged.items()} for u, judged in ds.truth.items()}
    run = {str(u): {str(i): float(len(lst) - pos) for pos, i in enumerate(lst)} for u, lst in ds.recs.items()}
    return qrels, run


def evaluate(qrels, run, measures):
    """Per-query dict {query: {measure: value}} exactly as pytrec_eval returns it."""
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


def collect(ds, scores, measure, key=None):
    """Per-user pairs (dataset user ids, library order) and pytrec_eval's aggregated mean."""
    back = {str(u): u for u in ds.users}
    per_user = [(back[q], vals[measure]) for q, vals in scores.items()]
    mean = pytrec_eval.compute_aggregated_measure(measure, [v for _, v in per_user]) if per_user else None
    return entry(per_user, mean, key or measure)


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    qrels, run = build(ds)
    cut = ",".join(str(k) for k in args.ks)
    measures = {"%s.%s" % (m, cut) for m in CUT_MEASURES.values()}
    scores = evaluate(qrels, run, measures)

    default = {}
    for k in args.ks:
        for name, m in CUT_MEASURES.items():
            default["%s@%d" % (name, k)] = collect(ds, scores, "%s_%d" % (m, k))
        # recip_rank and Rprec have no cutoff in trec_eval: evaluate them on the run truncated to k
        top = {q: {d: s for d, s in docs.items() if s > len(docs) - k} for q, docs in run.items()}
        trunc = evaluate(qrels, top, {"recip_rank", "Rprec"})
        default["mrr@%d" % k] = collect(ds, trunc, "recip_rank", "recip_rank on run truncated to %d" % k)
        default["r_precision@%d" % k] = collect(ds, trunc, "Rprec", "Rprec on run truncated to %d" % k)

    full = evaluate(qrels, run, {"recip_rank", "Rprec", "map", "ndcg"})
    uncut = {"mrr": collect(ds, full, "recip_rank"), "r_precision": collect(ds, full, "Rprec"),
             "map": collect(ds, full, "map"), "ndcg": collect(ds, full, "ndcg")}

    seen = sorted(scores, key=str)
    encoding = (
        "qrels = {str(user): {str(item): relevance}} for every truth user (judged zeros kept, users with no "
        "judgements given an empty dict); run = {str(user): {str(item): float(n - position)}} for every recs user "
        "(distinct scores, so trec_eval's docno tie-break never applies; empty list -> empty dict). "
        "Measures requested with cutoffs %s (P, recall, map_cut, ndcg_cut, success). 'default' mrr@k/r_precision@k "
        "are recip_rank/Rprec evaluated on the run truncated to its top k; 'uncut' holds recip_rank, Rprec, map "
        "and ndcg on the full run (keys without @k). Dataset: %s; pytrec_eval returned %d queries. Means are "
        "pytrec_eval.compute_aggregated_measure over the returned queries." % (cut, ds.describe_users(), len(seen)))
    write(args.out, "pytrec_eval", "pytrec-eval-terrier", ds, encoding, {"default": default, "uncut": uncut})


if __name__ == "__main__":
    main()
