"""inputs/layout.py grouped_runs (issue 39): an in-memory frame checked in one pass answers exactly as the
batched check of the same rows (same users in the same order, each with its row count, or None), whatever the
batch size."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from rankwise.inputs import layout


def _frames(seed: int):
    rng = np.random.default_rng(seed)
    n_users = int(rng.integers(1, 40))
    lengths = rng.integers(0, 8, n_users)
    users = np.repeat(rng.permutation(1000)[:n_users], lengths)
    ranks = np.concatenate([np.arange(1, n + 1) for n in lengths]) if lengths.sum() else np.array([], int)
    items = rng.integers(0, 30, len(users)) if rng.random() < 0.5 else \
        np.concatenate([rng.permutation(50)[:n] for n in lengths]) if lengths.sum() else np.array([], int)
    rel = rng.random(len(users)) * 3
    df = pl.DataFrame({"user": users, "item": items, "rank": ranks, "rel": rel},
                      schema={"user": pl.Int64, "item": pl.Int64, "rank": pl.Int64, "rel": pl.Float64})
    if df.height and rng.random() < 0.5:  # break one rule somewhere
        i = int(rng.integers(0, df.height))
        kind = rng.integers(0, 5)
        if kind == 0:
            df = df.with_columns(pl.when(pl.int_range(pl.len()) == i).then(None).otherwise(pl.col("item")).alias("item"))
        elif kind == 1:
            df = df.with_columns(pl.when(pl.int_range(pl.len()) == i).then(pl.col("rank") + 1).otherwise(pl.col("rank")))
        elif kind == 2:
            df = pl.concat([df, df.slice(i, 1)])  # a user's second run (or a repeated item)
        elif kind == 3:
            df = df.with_columns(pl.when(pl.int_range(pl.len()) == i).then(-1.0).otherwise(pl.col("rel")).alias("rel"))
        else:
            df = df.reverse()
    return df, pl.DataFrame({"user": ["a", "a", "b", "c", "c"], "item": ["x", "y", "x", "z", "z" if seed % 2 else "w"],
                             "rank": [1, 2, 1, 1, 2], "rel": [1.0] * 5})


@pytest.mark.parametrize("seed", range(30))
def test_one_pass_equals_batches(seed, monkeypatch):
    for df in _frames(seed):
        for kw in ({"rank": "rank"}, {"relevance": "rel"}, {}):
            whole = layout.grouped_runs(df.lazy(), "user", "item", **kw)
            for rows in (1, 2, 3, 7):
                with monkeypatch.context() as m:
                    m.setattr(layout, "_in_memory", lambda lf: False)
                    m.setattr(layout, "BATCH_ROWS", rows)
                    batched = layout.grouped_runs(df.lazy(), "user", "item", **kw)
                assert (whole is None) == (batched is None), (seed, kw, rows)
                if whole is not None:
                    assert whole.runs.rows() == batched.runs.rows() and whole.item_range == batched.item_range
            if whole is not None:  # each run's length, against Polars counting the rows of each user
                counts = df.group_by("user", maintain_order=True).len()
                assert whole.runs.rows() == counts.rows(), seed
                items = df["item"].drop_nulls()
                integer = items.dtype.is_integer() and items.len()
                assert whole.item_range == ((items.min(), items.max()) if integer else None), seed
