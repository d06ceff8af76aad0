"""Run ranx on a conformance dataset.

Usage: python run_ranx.py DATASET.json OUT.json [--k 1,3,5,10]
"""

from ranx import Qrels, Run, evaluate

from _common import Dataset, entry, parse_args, write

AT_K = {"precision": "precision", "recall": "recall", "f1": "f1", "map": "map", "mrr": "mrr", "dcg": "dcg",
        "ndcg": "ndcg", "hit_rate": "hit_rate"}
BURGES = {"dcg": "dcg_burges", "ndcg": "ndcg_burges"}


def to_dicts(ds, users_q, users_r):
    """ranx dicts with string ids; run scores n - position (distinct, so no ties)."""
    qrels = {str(u): {str(i): int(g) for i, g in ds.truth.get(u, {}).items()} for u in users_q}
    run = {str(u): {str(i): float(len(ds.recs.get(u, [])) - p) for p, i in enumerate(ds.recs.get(u, []))}
           for u in users_r}
    return qrels, run


def run_metrics(ds, qrels_d, run_d, names, make_comparable=False):
    """Evaluate the ranx metric names; per-user values from ``run.scores``, mean from ``evaluate``."""
    qrels, run = Qrels.from_dict(qrels_d), Run.from_dict(run_d)
    means = evaluate(qrels, run, list(names.values()), make_comparable=make_comparable)
    if len(names) == 1:
        means = {next(iter(names.values())): means}
    back = {str(u): u for u in ds.users}
    return {key: entry([(back[q], v) for q, v in run.scores[m].items()], means[m], m) for key, m in names.items()}


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)

    def names(table, suffix=""):
        out = {"%s@%d" % (key, k): "%s@%d%s" % (m, k, suffix) for k in args.ks for key, m in table.items()}
        out["r_precision"] = "r-precision" + suffix
        return out

    qrels_all, run_all = to_dicts(ds, ds.users, ds.users)
    results = {
        "default": run_metrics(ds, qrels_all, run_all, names(AT_K)),
        "burges": run_metrics(ds, qrels_all, run_all,
                              {"%s@%d" % (key, k): "%s@%d" % (m, k) for k in args.ks for key, m in BURGES.items()}),
        "rel_lvl2": run_metrics(ds, qrels_all, run_all, names(AT_K, "-l2")),
    }
    qrels_t, run_r = to_dicts(ds, list(ds.truth), list(ds.recs))
    results["make_comparable"] = run_metrics(ds, qrels_t, run_r, names(AT_K), make_comparable=True)

    encoding = (
        "Qrels.from_dict({str(user): {str(item): relevance}}) with judged zeros kept, and "
        "Run.from_dict({str(user): {str(item): float(n - position)}}) (distinct scores). Dataset: %s. "
        "'default', 'burges' (dcg_burges/ndcg_burges) and 'rel_lvl2' (every metric with the '-l2' suffix) use "
        "both dicts over the union of users, with an empty inner dict wherever a user is missing from one "
        "input. 'make_comparable' feeds qrels for truth users and a run for recs users only and calls "
        "evaluate(make_comparable=True). Per-user values are run.scores after evaluate; means are evaluate's. "
        "r-precision takes no cutoff (key r_precision)." % ds.describe_users())
    write(args.out, "ranx", "ranx", ds, encoding, results)


if __name__ == "__main__":
    main()
