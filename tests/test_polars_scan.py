"""rankwise.engines.polars.scan: its running sums and maxima equal Polars' own per-group calls bit for bit
(``cum_sum().over(run)``, ``cum_max().forward_fill().over(run)``), on random runs of every length, with nulls,
negative and mixed-magnitude floats and integers, both of its paths (a step per position, Polars' call per run)."""

import numpy as np
import polars as pl
import pytest

from rankwise.engines.polars import scan


def _frame(rng, n, n_users):
    users = np.sort(rng.integers(0, n_users, n))
    x = rng.normal(size=n) * 10.0 ** rng.integers(-5, 5, n)
    nulls = pl.Series(rng.random(n) < 0.2)
    return pl.DataFrame({"u": users, "x": x, "xi": rng.integers(-5, 5, n), "m": np.abs(x)}).with_columns(
        xn=pl.when(nulls).then(None).otherwise(pl.col("x")), mn=pl.when(nulls).then(None).otherwise(pl.col("m")),
        xin=pl.when(nulls).then(None).otherwise(pl.col("xi")))


@pytest.mark.parametrize("runs_per_position", [0, 10**9], ids=["step-per-position", "polars-per-run"])
def test_running_sums_and_maxima_equal_polars_per_group_calls(monkeypatch, runs_per_position):
    monkeypatch.setattr(scan, "RUNS_PER_POSITION", runs_per_position)
    rng = np.random.default_rng(1)
    for trial in range(60):
        df = _frame(rng, int(rng.integers(0, 300)), int(rng.integers(1, 40)))
        expected = df.with_columns(
            a=pl.col("x").cum_sum().over("u"), b=pl.col("xn").cum_sum().over("u"), c=pl.col("xi").cum_sum().over("u"),
            d=pl.col("mn").cum_max().forward_fill().over("u"), e=pl.col("xin").cum_sum().over("u"),
            f=pl.len().over("u").cast(pl.Int64), p=pl.int_range(pl.len(), dtype=pl.Int64).over("u"))
        p = pl.col("_p")
        got = df.lazy().with_columns(_p=scan.position("u")).with_columns(
            a=scan.running_sum(pl.col("x"), p), b=scan.running_sum(pl.col("xn"), p),
            c=scan.running_sum(pl.col("xi"), p, pl.Int64), d=scan.running_max(pl.col("mn"), p),
            e=scan.running_sum(pl.col("xin"), p, pl.Int64), f=scan.run_length(p), p=p).collect()
        for column in "abcdefp":
            assert got[column].equals(expected[column], check_dtypes=True), (trial, column)


def test_level_ends_are_where_the_next_row_of_the_run_differs():
    rng = np.random.default_rng(2)
    for trial in range(60):
        n = int(rng.integers(0, 200))
        df = pl.DataFrame({"u": np.sort(rng.integers(0, 30, n)), "g": rng.integers(0, 3, n).astype(float)}) \
            .sort("u", "g", descending=[False, True])
        expected = df.select(pl.col("g").ne_missing(pl.col("g").shift(-1).over("u"))).to_series()
        got = df.lazy().with_columns(_p=scan.position("u")).select(scan.ends_level(pl.col("g"), pl.col("_p"))).collect()
        assert got.to_series().equals(expected, check_names=False), trial


def test_positions_hold_across_the_streaming_engines_batches():
    """Computed on the whole column: a run that crosses the streaming engine's morsels keeps counting."""
    rng = np.random.default_rng(3)
    n = 2_000_000
    lf = pl.LazyFrame({"u": np.sort(rng.integers(0, 300_000, n)), "x": rng.random(n)}).filter(pl.col("x") > 0.1) \
        .sort("u", "x")
    got = lf.with_columns(_p=scan.position("u")).with_columns(
        s=scan.running_sum(pl.col("x"), pl.col("_p")), s_ref=pl.col("x").cum_sum().over("u"),
        p_ref=pl.int_range(pl.len(), dtype=pl.Int64).over("u")).collect(engine="streaming")
    assert got["_p"].equals(got["p_ref"], check_names=False) and got["s"].equals(got["s_ref"], check_names=False)
