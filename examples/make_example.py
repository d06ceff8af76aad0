"""Generate the bundled example: a small, realistic recommender evaluation (deterministic).

2,000 users, 500 items with Zipf-like popularity, lists of 0-20 items (most 20), graded relevance
1-3 (plus some judged-irrelevant 0s), a few users with no relevant items and a few with no list.
Writes recommendations.parquet (user, item, rank) and ground_truth.parquet (user, item, relevance),
two more models over the same users for comparisons (popular.parquet, shuffled.parquet), and the
side inputs of the beyond-accuracy metrics and of segments: train.parquet (user, item: interactions
before the test period, for popularity and novelty), items.parquet (the catalog), item_features.parquet
(item, feature: genres), item_embeddings.parquet (item, embedding: 8 numbers) and users.parquet (user,
country). Each file has its own seeded generator: adding one leaves the others byte for byte alike.
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
    side_inputs(n_users, weights, random.Random(seed + 2))


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


GENRES = ["action", "comedy", "drama", "horror", "romance", "sci-fi", "documentary", "animation"]
COUNTRIES = {"us": 5, "de": 2, "fr": 2, "br": 1, "jp": 1}


def side_inputs(n_users: int, weights: list[float], rng: random.Random) -> None:
    """train.parquet, items.parquet, item_features.parquet, item_embeddings.parquet, users.parquet."""
    n_items = len(weights)
    train = []
    for user in range(1, n_users + 1):
        if rng.random() < 0.1:
            continue  # a new user: no interactions before the test period
        seen: set[int] = set()
        for _ in range(rng.randint(1, 8)):
            seen.add(rng.choices(range(n_items), weights)[0])  # popular items are seen more often
        train += [(user, item) for item in sorted(seen)]
    pl.DataFrame(train, schema={"user": pl.Int64, "item": pl.Int64}, orient="row").write_parquet(
        HERE / "train.parquet")
    pl.DataFrame({"item": range(n_items)}, schema={"item": pl.Int64}).write_parquet(HERE / "items.parquet")
    genres = {item: sorted(rng.sample(range(len(GENRES)), rng.randint(1, 3))) for item in range(n_items)}
    pl.DataFrame([(item, GENRES[g]) for item, gs in genres.items() for g in gs],
                 schema={"item": pl.Int64, "feature": pl.String}, orient="row").write_parquet(
        HERE / "item_features.parquet")
    # an item's vector: its genres' directions plus noise, so that items of one genre lie close
    axes = [[rng.gauss(0, 1) for _ in range(8)] for _ in GENRES]
    vectors = [[round(sum(axes[g][d] for g in gs) + rng.gauss(0, 0.3), 3) for d in range(8)]
               for gs in genres.values()]
    pl.DataFrame({"item": range(n_items), "embedding": vectors},
                 schema={"item": pl.Int64, "embedding": pl.List(pl.Float64)}).write_parquet(
        HERE / "item_embeddings.parquet")
    countries = rng.choices(list(COUNTRIES), list(COUNTRIES.values()), k=n_users)
    pl.DataFrame({"user": range(1, n_users + 1), "country": countries},
                 schema={"user": pl.Int64, "country": pl.String}).write_parquet(HERE / "users.parquet")


if __name__ == "__main__":
    main()
