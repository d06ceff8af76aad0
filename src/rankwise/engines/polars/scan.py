"""Running sums and maxima within runs of rows (a user's rows, sorted): the Polars plan's running statistics.

``term.cum_sum().over(USER)`` makes one call per user (about 0.1 us a row at 1M users: 0.25 s for each running sum
over the 2.5M judged rows of 1M users x 100). Here every run is scanned at once, position by position: with
p = the row's position in its run (0, 1, ...), the rows at position p take the value of the row before them
(position p - 1, computed in the step before) combined with their own term. The additions are the same, in the
same order, as Polars' cum_sum within each run: s_0 = x_0, s_p = s_(p-1) + x_p (bit for bit;
tests/test_polars_scan.py). Cost: one stable sort of the positions and one vectorised step per position.

The frame must hold each run's rows together, in scan order (the plan sorts by user, rank first).
"""

from __future__ import annotations

import numpy as np
import polars as pl


# the step per position costs about as much as Polars' call per run for this many runs of rows
RUNS_PER_POSITION = 256


def position(*by: str) -> pl.Expr:
    """0-based position of each row within its run of equal ``by`` values (rows in frame order), by Polars' own
    per-run call. (Two cheaper forms were measured and dropped: shifts and a running maximum over the column gave
    wrong positions inside the plan on the streaming engine, a run or two at its batch boundaries; computed here on
    the whole column, the peak at 1M users, every metric, rose from 3.8 to 5.4 GB.)"""
    return pl.int_range(pl.len(), dtype=pl.Int64).over(list(by))


def run_length(pos: pl.Expr) -> pl.Expr:
    """The length of the row's run, from ``position``."""
    def apply(s: pl.Series) -> pl.Series:
        run = np.cumsum(s.to_numpy() == 0) - 1
        return pl.Series(s.name, np.bincount(run)[run] if len(s) else run, dtype=pl.Int64)
    return pos.map_batches(apply, return_dtype=pl.Int64)


def ends_level(term: pl.Expr, pos: pl.Expr) -> pl.Expr:
    """True where the next row of the run holds another ``term`` value, or the run ends there."""
    def apply(s: pl.Series) -> pl.Series:
        x, p = s.struct.field("x"), s.struct.field("p").to_numpy()
        same_run = np.append(p[1:] != 0, False)
        differs = x.ne_missing(x.shift(-1)).to_numpy()
        return pl.Series(s.name, ~same_run | differs, dtype=pl.Boolean)
    return pl.struct(pos.alias("p"), term.alias("x")).map_batches(apply, return_dtype=pl.Boolean)


def running_sum(term: pl.Expr, pos: pl.Expr, dtype=pl.Float64) -> pl.Expr:
    """``term.cum_sum()`` within each run, ``term`` of ``dtype`` (Float64 or Int64; Polars' null rule: null where
    the term is null, the sum skips it)."""
    return _scan(term, pos, "sum", dtype)


def running_max(term: pl.Expr, pos: pl.Expr) -> pl.Expr:
    """``term.cum_max().forward_fill()`` within each run, ``term`` Float64: null until the run's first non-null
    term, then the largest so far (the terms are never NaN or -0.0: precision values)."""
    return _scan(term, pos, "max", pl.Float64)


class Runs:
    """The running statistics of a plan stage whose frame holds each ``by`` run together, in order, with its rows'
    ``position`` in column ``_p``: this module's scan where the runs are at most SHORT rows long (``short``: a
    user's rows within k), else Polars' own ``over`` (a few long runs: TREC's 1,000 documents a query)."""

    SHORT = 128

    def __init__(self, by: str | list[str], short: bool):
        self.by, self.short = by, short

    def sum(self, term: pl.Expr, dtype=pl.Float64) -> pl.Expr:
        return running_sum(term, pl.col("_p"), dtype) if self.short else term.cum_sum().over(self.by)

    def max(self, term: pl.Expr) -> pl.Expr:
        return running_max(term, pl.col("_p")) if self.short else term.cum_max().forward_fill().over(self.by)


def _scan(term: pl.Expr, pos: pl.Expr, how: str, dtype) -> pl.Expr:
    if dtype not in (pl.Float64, pl.Int64):
        raise TypeError(f"rankwise internal: a running statistic of {dtype}")

    def apply(s: pl.Series) -> pl.Series:
        fields = s.struct.unnest()  # (one step for both fields)
        values = fields.get_column("x").cast(dtype)
        return _scan_arrays(fields.get_column("p").to_numpy(), values, how).alias(s.name)
    return pl.struct(pos.alias("p"), term.alias("x")).map_batches(apply, return_dtype=dtype)


def _scan_arrays(pos: np.ndarray, values: pl.Series, how: str) -> pl.Series:
    n = len(values)
    if n == 0:
        return values
    width = int(pos.max()) + 1
    if width * RUNS_PER_POSITION > n - np.count_nonzero(pos):  # few long runs (TREC's 1,000 documents a query)
        run = pl.Series(np.cumsum(pos == 0))  # Polars' own call per run is then cheaper than a step per position
        scan = pl.col("x").cum_sum() if how == "sum" else pl.col("x").cum_max().forward_fill()
        return pl.DataFrame({"run": run, "x": values}).select(scan.over("run")).to_series()
    order = np.argsort(pos.astype(np.uint16) if width <= 65536 else pos, kind="stable")  # rows by position
    counts = np.bincount(pos, minlength=width)
    step = np.add if how == "sum" else np.maximum
    nulls = values.null_count() > 0
    x = values.fill_null(0).to_numpy() if nulls else values.to_numpy()
    out = x.copy()  # position 0: the term itself
    if nulls:
        has = ~values.is_null().to_numpy()
        seen = has.copy()  # a term so far in the run
    start = int(counts[0])
    for count in counts[1:]:
        rows = order[start:start + count]
        start += int(count)
        if not nulls:
            out[rows] = step(out[rows - 1], x[rows])
            continue
        had, present = seen[rows - 1], has[rows]
        out[rows] = np.where(had & present, step(out[rows - 1], x[rows]), np.where(present, x[rows], out[rows - 1]))
        seen[rows] = had | present
    result = pl.Series(out, dtype=values.dtype)
    if not nulls:
        return result
    return pl.select(pl.when(pl.Series(has if how == "sum" else seen)).then(result)).to_series()
