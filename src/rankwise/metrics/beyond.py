"""The beyond-accuracy metrics' names and stages, from the registry (``rankwise.metrics.declarations.BEYOND``): what
``_beyond`` computes, ``_render_beyond`` renders and ``rankwise.sql`` splits a request by, without
importing either."""

from __future__ import annotations

from rankwise.metrics.declarations import BEYOND

USER_COLUMNS = tuple(m.name for m in BEYOND if m.level == "user")  # one value per user
CATALOG_METRICS = tuple(m.name for m in BEYOND if m.level == "catalog")  # one value per k
METRICS = USER_COLUMNS + CATALOG_METRICS  # through evaluate()
# the side inputs each metric reads (train, items, item_features, ground_truth)
NEEDS = {m.name: tuple(n for n in m.needs if n not in ("recommendations", "scores")) for m in BEYOND}

# the conventions-free stages every beyond query reads: sql file -> the temporary table it fills
STAGES = {"beyond_popularity": "train_popularity", "beyond_cutoffs": "cutoff_buckets", "beyond_ranks": "rank_buckets",
          "beyond_exposure": "exposure"}
