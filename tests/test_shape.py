"""engines/shape.py's wide frame (Result.per_user) against a plain loop over the long rows."""

import math

import polars as pl
import pytest

from rankwise.engines.shape import wide


def _long(users, ks, chunk_rows=None):
    """(user, k, n_recs, n_rel, precision, ndcg) sorted by (k, user); values from (user, k), NaN for user 2 at k 5;
    with ``chunk_rows``, the frame is made of chunks of that many rows (as a streaming engine returns it)."""
    rows = [(u, k, 10, 3, u / 10 + k, math.nan if (u, k) == (2, 5) else u * k / 7) for k in ks for u in users]
    frame = pl.DataFrame(rows, schema=["user", "k", "n_recs", "n_rel", "precision", "ndcg"], orient="row")
    if chunk_rows:
        frame = pl.concat([frame.slice(i, chunk_rows) for i in range(0, frame.height, chunk_rows)], rechunk=False)
    return frame


@pytest.mark.parametrize("chunk_rows", [None, 1, 4])
def test_wide_is_one_row_per_user_one_column_per_metric_and_k(chunk_rows):
    users, ks = [3, 1, 2, 7, 5], [1, 5, 10]
    long = _long(users, ks, chunk_rows)
    out = wide(long, "user", ks)
    assert out.columns == ["user", "precision@1", "precision@5", "precision@10", "ndcg@1", "ndcg@5", "ndcg@10"]
    assert out.get_column("user").to_list() == users
    for row in out.iter_rows(named=True):
        for k in ks:
            expected = [r for r in long.iter_rows(named=True) if r["user"] == row["user"] and r["k"] == k][0]
            for metric in ("precision", "ndcg"):
                got, want = row[f"{metric}@{k}"], expected[metric]
                assert (math.isnan(got) and math.isnan(want)) or got == want


def test_wide_raises_when_the_engine_did_not_give_one_row_per_user_and_k():
    long = _long([1, 2, 3], [1, 5])
    other_users = long.with_columns(pl.when(pl.col("k") == 5).then(pl.col("user") + 10).otherwise(pl.col("user"))
                                    .alias("user"))
    with pytest.raises(RuntimeError, match="one row per user and k"):
        wide(other_users, "user", [1, 5])
    k_twice = pl.concat([long, long.filter(pl.col("k") == 1)])  # k = 1, 5, then 1 again
    with pytest.raises(RuntimeError, match="not grouped by k"):
        wide(k_twice, "user", [1, 5])


def test_wide_with_runs_is_each_runs_wide_frame_under_its_name():
    a, b = _long([1, 2, 3], [1, 5], chunk_rows=2), _long([4, 2], [1, 5], chunk_rows=3).with_columns(pl.col("ndcg") * 2)
    long = pl.concat([a.select(pl.lit("model").alias("run"), pl.all()), b.select(pl.lit("pop").alias("run"), pl.all())])
    out = wide(long, "user", [1, 5])
    assert out.columns[:2] == ["run", "user"]
    assert out.get_column("run").to_list() == ["model"] * 3 + ["pop"] * 2
    for name, part in (("model", a), ("pop", b)):
        got = out.filter(pl.col("run") == name).drop("run")
        assert got.equals(wide(part, "user", [1, 5]), null_equal=True)
