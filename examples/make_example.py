"""Generate the bundled example: a small, realistic recommender evaluation (deterministic).

2,000 users, 500 items with Zipf-like popularity, lists of 0-20 items (most 20), graded relevance
1-3 (plus some judged-irrelevant 0s), a few users with no relevant items and a few with no list.
Writes recommendations.parquet (user, item, rank) and ground_truth.parquet (user, item, relevance),
and two more models over the same users for comparisons (popular.parquet, shuffled.parquet).
"""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl

HERE = Path(__file__).parent


def main(n_users: int = 2000, n_items: int = 500, seed: int = 7) -> None:
    rng = random.Random(seed)
    weights = [1 / (i + 1) ** 1.1 for i in range(n_items)]  # popular items are recommended more often
    recs, truth = [], []
    for user in range(1, n_users + 1):
        taste = rng.sample(range(n_items), 40)  # items this user would like
        liked = rng.sample(taste, rng.randint(1, 12))
        if rng.random() < 0.04:
            liked = []  # no relevant item at all: undefined under the default convention
        for item in liked:
            truth.append((user, item, float(rng.choices([1, 2, 3], [6, 3, 1])[0])))
        for item in rng.sample([i for i in taste if i not in liked], 2):
            truth.append((user, item, 0.0))  # judged, not relevant
        if rng.random() < 0.03:
            continue  # no recommendations for this user
        length = 20 if rng.random() < 0.8 else rng.randint(1, 19)
        picked: list[int] = []
        while len(picked) < length:
            pool = taste if rng.random() < 0.35 else None  # a model that is right a third of the time
            item = rng.choice(pool) if pool else rng.choices(range(n_items), weights)[0]
            if item not in picked:
                picked.append(item)
        recs += [(user, item, rank) for rank, item in enumerate(picked, start=1)]
    pl.DataFrame(recs, schema={"user": pl.Int64, "item": pl.Int64, "rank": pl.Int32}, orient="row").write_parquet(
        HERE / "recommendations.parquet")
    pl.DataFrame(truth, schema={"user": pl.Int64, "item": pl.Int64, "relevance": pl.Float64},
                 orient="row").write_parquet(HERE / "ground_truth.parquet")
    other_models(recs, random.Random(seed + 1))


def other_models(recs: list[tuple[int, int, int]], rng: random.Random) -> None:
    """Two more runs over the same users, for comparing models: popular.parquet (everyone gets the 20
    most recommended items) and shuffled.parquet (each list of recommendations.parquet in random order)."""
    counts: dict[int, int] = {}
    lists: dict[int, list[int]] = {}
    for user, item, _ in recs:
        counts[item] = counts.get(item, 0) + 1
        lists.setdefault(user, []).append(item)
    top = sorted(counts, key=lambda i: (-counts[i], i))[:20]
    schema = {"user": pl.Int64, "item": pl.Int64, "rank": pl.Int32}
    popular = [(user, item, rank) for user in lists for rank, item in enumerate(top, start=1)]
    shuffled = [(user, item, rank) for user, items in lists.items()
                for rank, item in enumerate(rng.sample(items, len(items)), start=1)]
    pl.DataFrame(popular, schema=schema, orient="row").write_parquet(HERE / "popular.parquet")
    pl.DataFrame(shuffled, schema=schema, orient="row").write_parquet(HERE / "shuffled.parquet")


if __name__ == "__main__":
    main()
