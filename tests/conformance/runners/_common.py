"""Helpers shared by the ``run_<library>.py`` scripts (standard library only, never rankwise).

The runners are executed inside each library's own virtualenv as plain scripts, so this file is
imported as a sibling module (the script's directory is on ``sys.path``).
"""

import argparse
import datetime
import json
import platform
from importlib import metadata


class Dataset:
    """A conformance dataset.

    ``recs`` {user: [items]}, ``truth`` {user: {item: rel}}, ``users`` = union in first-seen order (recs
    first), ``items`` = every item, sorted. The beyond-accuracy dataset adds ``scores`` {user: [score per
    list position]}, ``train`` [(user, item)] (repeats kept), ``catalog`` [items] and ``embeddings``
    {item: [floats]} (empty when the dataset has none).
    """

    def __init__(self, path):
        with open(path) as fh:
            raw = json.load(fh)
        self.name = raw["name"]
        self.recs = {u: list(items) for u, items in raw["recs"]}
        self.truth = {u: {i: g for i, g in pairs} for u, pairs in raw["truth"]}
        self.scores = {u: list(s) for u, s in raw.get("scores", [])}
        self.train = [tuple(row) for row in raw.get("train", [])]
        self.catalog = list(raw.get("catalog", []))
        self.embeddings = {i: list(v) for i, v in raw.get("embeddings", [])}
        self.users = list(self.recs) + [u for u in self.truth if u not in self.recs]
        self.items = sorted({i for l in self.recs.values() for i in l} | {i for d in self.truth.values() for i in d},
                            key=lambda x: (str(type(x)), x))

    def relevant(self, user, threshold=1):
        """Items of ``user`` with relevance >= threshold (empty set if the user has no truth)."""
        return {i for i, g in self.truth.get(user, {}).items() if g >= threshold}

    def describe_users(self):
        """Counts of user kinds, for the ``encoding`` paragraphs."""
        both = [u for u in self.users if u in self.recs and u in self.truth]
        return ("%d users in total: %d in both inputs, %d only in recs, %d only in truth"
                % (len(self.users), len(both), len(set(self.recs) - set(self.truth)),
                   len(set(self.truth) - set(self.recs))))


def parse_args(description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("dataset", help="dataset JSON written by datasets.py")
    ap.add_argument("out", help="fixture JSON to write")
    ap.add_argument("--k", default="1,3,5,10", help="comma-separated cutoffs")
    args = ap.parse_args()
    args.ks = [int(x) for x in args.k.split(",") if x]
    return args


def num(x):
    """Plain float from a library value (numpy/torch scalar); None stays None."""
    if x is None:
        return None
    if hasattr(x, "item"):
        x = x.item()
    return float(x)


def entry(per_user, mean, library_metric, **extra):
    """One metric entry; ``per_user`` is a list of (user, value) pairs in the library's order."""
    out = {"per_user": [[u, num(v)] for u, v in per_user], "mean": num(mean), "library_metric": library_metric}
    out.update(extra)
    return out


def write(out_path, library, dist_name, dataset, encoding, results, **extra):
    """Write the fixture file in the agreed format."""
    doc = {
        "library": library,
        "version": metadata.version(dist_name),
        "python": platform.python_version(),
        "generated_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "dataset": dataset.name,
        "encoding": encoding,
    }
    doc.update(extra)
    doc["results"] = results
    with open(out_path, "w") as fh:
        fh.write(dumps(doc))


def dumps(doc):
    """Fixture JSON: header fields one per line, one line per metric entry (compact but diffable)."""
    head = {k: v for k, v in doc.items() if k != "results"}
    lines = ["{"] + ["%s: %s," % (json.dumps(k), json.dumps(v)) for k, v in head.items()] + ['"results": {']
    variants = list(doc["results"].items())
    for vi, (variant, metrics) in enumerate(variants):
        lines.append(" %s: {" % json.dumps(variant))
        items = list(metrics.items())
        for mi, (key, entry) in enumerate(items):
            lines.append("  %s: %s%s" % (json.dumps(key), json.dumps(entry, separators=(",", ":")),
                                         "," if mi < len(items) - 1 else ""))
        lines.append(" }" + ("," if vi < len(variants) - 1 else ""))
    lines += ["}", "}"]
    return "\n".join(lines) + "\n"
