"""Deterministic conformance datasets (pure Python, seeded ``random.Random``).

Each dataset is written to ``datasets/<name>.json`` as::

    {"name": ..., "recs": [[user, [item, ...]], ...], "truth": [[user, [[item, rel], ...]], ...]}

``recs`` lists are in rank order (position 1 first) without duplicates; an empty list is a user
with no recommendations. ``truth`` holds judged items with their relevance (0 = judged
non-relevant); an empty list is a user with no relevant items. A user may appear in only one
of the two.

The beyond-accuracy dataset (``beyond``) adds the side inputs those metrics read (see :func:`beyond`).

Run ``python datasets.py`` to (re)write every dataset.
"""

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATASET_DIR = HERE / "datasets"


def doc000():
    """The five-user example of conventions.md section 3 (binary relevance)."""
    labels = {"U1": [1, 2, 3, 4, 5, 6], "U2": [2, 4, 6], "U3": [2, 4, 6], "U4": [], "U5": []}
    preds = {"U1": [1, 6, 8], "U2": [1, 2, 3, 4, 5], "U3": [], "U4": [1, 2, 3, 4], "U5": []}
    return {
        "name": "doc000",
        "recs": [[u, p] for u, p in preds.items()],
        "truth": [[u, [[i, 1] for i in labels[u]]] for u in labels],
    }


def _sample_list(rng, catalog, n):
    return rng.sample(catalog, n)


def binary_int(seed=1, n_users=200, n_items=60):
    """Int ids, binary relevance, lists 0..15, with every edge case.

    Users cycle through kinds: normal (both inputs), empty labels, empty recs, labels only
    (absent from recs), recs only (absent from truth), both empty. Hits are made likely by
    drawing part of each list from the user's labels.
    """
    rng = random.Random(seed)
    catalog = list(range(1, n_items + 1))
    recs, truth = [], []
    for u in range(n_users):
        r = rng.random()
        kind = ("normal" if r < 0.70 else "empty_labels" if r < 0.77 else "empty_recs" if r < 0.84
                else "labels_only" if r < 0.91 else "recs_only" if r < 0.97 else "both_empty")
        n_lab = rng.randint(1, 10)
        labels = sorted(_sample_list(rng, catalog, n_lab))
        n_rec = rng.randint(1, 15)
        # mix some labelled items into the list so that hits occur at various ranks
        pool = labels + [i for i in catalog if i not in labels]
        weights = [4.0 if i in labels else 1.0 for i in pool]
        lst = []
        while len(lst) < n_rec:
            item = rng.choices(pool, weights)[0]
            if item not in lst:
                lst.append(item)
        if kind == "empty_labels":
            labels = []
        if kind == "empty_recs":
            lst = []
        if kind == "both_empty":
            labels, lst = [], []
        if kind != "labels_only":
            recs.append([u, lst])
        if kind != "recs_only":
            truth.append([u, [[i, 1] for i in labels]])
    return {"name": "binary_int", "recs": recs, "truth": truth}


def graded_str(seed=2, n_users=200, n_items=40):
    """String ids ("u17", "i0042"), graded relevance 0..3 including judged zeros, short lists (0..8).

    Includes users whose judgements are all zero, users with empty inputs and users present in
    only one of recs/truth.
    """
    rng = random.Random(seed)
    catalog = ["i%04d" % i for i in range(n_items)]
    recs, truth = [], []
    for n in range(n_users):
        u = "u%d" % n
        r = rng.random()
        kind = ("normal" if r < 0.70 else "all_zero" if r < 0.76 else "empty_labels" if r < 0.81
                else "empty_recs" if r < 0.86 else "labels_only" if r < 0.92 else "recs_only" if r < 0.97
                else "both_empty")
        judged = _sample_list(rng, catalog, rng.randint(1, 8))
        rels = [rng.choice([0, 1, 1, 2, 2, 3]) for _ in judged]
        if kind == "all_zero":
            rels = [0] * len(judged)
        n_rec = rng.randint(1, 8)
        # roughly half of the list comes from the judged items
        cands = judged + [i for i in catalog if i not in judged]
        weights = [5.0 if i in judged else 1.0 for i in cands]
        lst = []
        while len(lst) < n_rec:
            item = rng.choices(cands, weights)[0]
            if item not in lst:
                lst.append(item)
        pairs = sorted([i, g] for i, g in zip(judged, rels))
        if kind == "empty_labels":
            pairs = []
        if kind == "empty_recs":
            lst = []
        if kind == "both_empty":
            pairs, lst = [], []
        if kind != "labels_only":
            recs.append([u, lst])
        if kind != "recs_only":
            truth.append([u, pairs])
    return {"name": "graded_str", "recs": recs, "truth": truth}


def clean(seed=3, n_users=200, n_items=50):
    """Every user in both inputs with >=1 recommendation and >=1 label, relevance 1..3 only.

    Lists 1..12, labels 1..8; int ids. For libraries that cannot express the edge cases.
    """
    rng = random.Random(seed)
    catalog = list(range(1, n_items + 1))
    recs, truth = [], []
    for u in range(1, n_users + 1):
        labels = sorted(_sample_list(rng, catalog, rng.randint(1, 8)))
        n_rec = rng.randint(1, 12)
        cands = labels + [i for i in catalog if i not in labels]
        weights = [4.0 if i in labels else 1.0 for i in cands]
        lst = []
        while len(lst) < n_rec:
            item = rng.choices(cands, weights)[0]
            if item not in lst:
                lst.append(item)
        recs.append([u, lst])
        truth.append([u, [[i, rng.randint(1, 3)] for i in labels]])
    return {"name": "clean", "recs": recs, "truth": truth}


def beyond(seed=10, n_users=160, n_rec_users=140, dim=5):
    """Beyond-accuracy inputs: ranked lists with scores, train interactions, a catalog, item embeddings.

    Items 1..90 form the catalog; train holds items 1..70 and 91..92 (outside the catalog), so items
    71..90 (in the catalog) and 93..94 (outside it) are cold. Users 0..139 have recommendations
    (two empty lists, ~15 % short lists of 1..9 items, the rest 10..15 items, drawn by popularity
    from the items the user has no train row for), users 20..159 have train rows (1..12 items, ~20 %
    of the rows repeated 1..3 times), so users 0..19 are cold and 140..159 train-only. Scores descend
    strictly along each list; truth = 1..6 items per list user (relevance 1), about half of them
    recommended. Every item 1..94 has a nonzero embedding of ``dim`` numbers.
    """
    rng = random.Random(seed)
    catalog = list(range(1, 91))
    train_pool = list(range(1, 71)) + [91, 92]
    every_item = list(range(1, 95))
    weight = {i: 1.0 / (1 + rank) ** 1.1 for rank, i in enumerate(rng.sample(train_pool, len(train_pool)))}
    weight.update({i: 0.01 for i in every_item if i not in weight})  # cold items: rarely recommended
    train, seen = [], {}
    for u in range(20, n_users):
        items = set()
        target = rng.randint(1, 12)
        while len(items) < target:
            items.add(rng.choices(train_pool, [weight[i] for i in train_pool])[0])
        seen[u] = items
        for i in sorted(items):
            train += [[u, i]] * (1 + (rng.randint(1, 3) if rng.random() < 0.2 else 0))
    rng.shuffle(train)
    recs, scores, truth = [], [], []
    for u in range(n_rec_users):
        r = rng.random()
        n = 0 if u in (7, 93) else rng.randint(1, 9) if r < 0.15 else rng.randint(10, 15)
        pool = [i for i in every_item if i not in seen.get(u, ())]
        lst = []
        while len(lst) < n:
            item = rng.choices(pool, [weight[i] for i in pool])[0]
            if item not in lst:
                lst.append(item)
        score, s = [], rng.uniform(1.0, 4.0)
        for _ in lst:
            score.append(round(s, 6))
            s -= rng.uniform(0.01, 0.6)
        relevant = set(rng.sample(lst, min(len(lst), rng.randint(0, 3))))
        target = max(len(relevant), rng.randint(1, 6))
        while len(relevant) < target:
            relevant.add(rng.choice(pool))
        recs.append([u, lst])
        scores.append([u, score])
        truth.append([u, [[i, 1] for i in sorted(relevant)]])
    embeddings = []
    for i in every_item:
        vec = [0.0] * dim
        while not any(vec):
            vec = [round(rng.uniform(-1, 1), 3) for _ in range(dim)]
        embeddings.append([i, vec])
    return {"name": "beyond", "recs": recs, "scores": scores, "truth": truth, "train": train,
            "catalog": catalog, "embeddings": embeddings}


GENERATORS = {"doc000": doc000, "binary_int": binary_int, "graded_str": graded_str, "clean": clean,
              "beyond": beyond}


def write_all(directory=DATASET_DIR):
    """Write every dataset as JSON; return the list of paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, gen in GENERATORS.items():
        path = directory / (name + ".json")
        path.write_text(json.dumps(gen(), separators=(",", ":")) + "\n")
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in write_all():
        print(p)
