"""Exact streaming check of the common well-formed layout: one contiguous run of rows per user.

A file written by a recommender is usually already in the canonical form: each user's rows are one
run, ranked 1, 2, ..., n in row order, with no repeated item. Checking that is much cheaper than
building the canonical tables (no sort, no renumbering, nothing kept but the user ids), so
``_inputs`` tries it first and falls back to the general path, which also produces the errors,
whenever it answers None.

The input is read in batches. Each batch is checked on its own, two at a time (Polars releases
the GIL). A repeated item is looked for within each run (a user's items as one list): many small
hash sets that stay in cache, where one set of a batch's (user, item) pairs took 2.3x as long and
one 93M-key set 28 s. Only a run cut by a batch boundary is checked across batches, from the two
small pieces; a user with two runs is caught by the final check that the run users are distinct.
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

BATCH_ROWS = 1_000_000
WHOLE_ROWS = 16_000_000  # an in-memory frame up to this many rows is checked in one pass


def pair_key(schema, a: str, b: str) -> pl.Expr:
    """One UInt64 per (a, b) pair: equal pairs give equal keys. Integer ids are packed into one word,
    other ids hashed; two different pairs may still share a key (packing wraps, hashes collide),
    which can only send the caller to the exact slow path, never hide a repeated pair."""
    if schema[a].is_integer() and schema[b].is_integer():
        return (pl.col(a).cast(pl.UInt64, wrap_numerical=True) * (1 << 32)
                + pl.col(b).cast(pl.UInt64, wrap_numerical=True)).alias("_key")
    return pl.struct(a, b).hash().alias("_key")


@dataclass(frozen=True)
class Layout:
    """What the layout check learned of an input that holds the layout."""

    runs: pl.DataFrame  # (user, n_rows): each user and the rows of their run, in row order
    item_range: tuple | None  # (smallest, largest) item of integer items (None: other items, or no rows)


@dataclass
class _Batch:
    ok: bool
    first_user: object = None
    first_rank: int | None = None
    last_user: object = None
    last_rank: int | None = None
    head: pl.Series | None = None  # keys of the first run (the piece a previous batch may continue)
    tail: pl.Series | None = None  # keys of the last run (the piece the next batch may continue)
    one_run: bool = False
    new_users: pl.Series | None = None  # users whose run starts inside the batch, row 0 excepted
    lengths: np.ndarray | None = None  # rows of each run in the batch: the one at row 0, then new_users'
    item_min: object = None  # the batch's smallest and largest item (integer items)
    item_max: object = None


def grouped_runs(lf: pl.LazyFrame, user: str, item: str, rank: str | None = None,
                 relevance: str | None = None) -> Layout | None:
    """Each user's run length and the items' range (:class:`Layout`) when the layout holds, else None.

    Holds when: no nulls in the columns; every user's rows are one contiguous run (in row order);
    no run repeats an item; with ``rank``, each run is ranked 1, 2, ..., n in row order; with
    ``relevance``, every relevance is a finite number >= 0.
    """
    schema = lf.collect_schema()
    cols = [user, item] + ([rank] if rank else []) + ([relevance] if relevance else [])
    check = _batch_checker(schema, cols, user, item, rank, relevance)
    if _in_memory(lf) and lf.select(pl.len()).collect().item() <= WHOLE_ROWS:
        # a frame already in memory is one batch, checked on this thread: no pool to start or wait on
        # (1M rows: 20 ms, was 20-30 ms; 10M: 100-110 ms, was 120-180 ms); larger ones in batches, so the
        # check's own columns (the items as lists, the run starts) stay the size of a batch
        whole = lf.select(cols).collect()
        checked = map(check, [whole] if whole.height else [])
    else:
        batches = (b for b in lf.select(cols).collect_batches(chunk_size=BATCH_ROWS) if b.height)
        checked = _in_order(check, batches)
    users: list[pl.Series] = []
    pieces: list[np.ndarray] = []  # rows of each batch's runs, and whether the piece starts a run (or continues one)
    starts: list[np.ndarray] = []
    lows, highs = [], []  # the items' range per batch (integer items)
    open_keys, open_user, open_rank = None, None, None
    for b in checked:
        if not b.ok:
            return None
        continues = open_keys is not None and b.first_user == open_user
        if continues:
            if rank and b.first_rank != open_rank + 1:
                return None
            joined = pl.concat([open_keys, b.head])
            if joined.n_unique() < joined.len():
                return None
        else:
            if rank and b.first_rank != 1:
                return None
            users.append(pl.Series(user, [b.first_user], dtype=schema[user]))
        users.append(b.new_users)
        lows.append(b.item_min)
        highs.append(b.item_max)
        pieces.append(b.lengths)
        starts.append(np.arange(len(b.lengths)) > 0 if continues else np.ones(len(b.lengths), dtype=bool))
        open_keys = (joined if continues else b.head) if b.one_run else b.tail
        open_user, open_rank = b.last_user, b.last_rank
    found = pl.concat(users) if users else pl.Series(user, [], dtype=schema[user])
    if found.n_unique() < found.len():
        return None
    rows = np.add.reduceat(np.concatenate(pieces), np.flatnonzero(np.concatenate(starts))) if pieces else []
    integers = schema[item].is_integer() and lows
    return Layout(pl.DataFrame({"user": found, "n_rows": rows}, schema={"user": schema[user], "n_rows": pl.Int64}),
                  (min(lows), max(highs)) if integers else None)


def _in_memory(lf: pl.LazyFrame) -> bool:
    """Whether the plan is nothing but a DataFrame already in memory (``df.lazy()``, maybe projected)."""
    plan = lf.explain(optimized=False)
    return plan.startswith("DF [") and "\n" not in plan


def _batch_checker(schema, cols, user, item, rank, relevance):
    starts = (pl.col(user) != pl.col(user).shift()).fill_null(True)
    key = pair_key(schema, user, item)
    checks = [pl.sum_horizontal(pl.col(cols).null_count()).alias("nulls")]
    if schema[item].is_integer():
        checks += [pl.col(item).min().alias("item_min"), pl.col(item).max().alias("item_max")]
    if rank:
        # row 0 may continue the previous batch's run: it is checked against that run instead
        follows = pl.when(starts).then(pl.col(rank) == 1).otherwise(pl.col(rank) == pl.col(rank).shift() + 1)
        checks.append(follows.slice(1).all().alias("ranked"))
    if relevance:
        rel = pl.col(relevance).cast(pl.Float64)
        checks.append((rel.is_finite() & (rel >= 0)).fill_null(False).all().alias("valid"))

    def check(batch: pl.DataFrame) -> _Batch:
        stats = batch.select(checks).row(0, named=True)
        if stats["nulls"] or not stats.get("ranked", True) or not stats.get("valid", True):
            return _Batch(ok=False)
        run_starts = batch.select(starts.slice(1).arg_true() + 1).to_series()  # run starts after row 0
        if _a_run_repeats_an_item(batch, item, run_starts, key):
            return _Batch(ok=False)
        head_end = int(run_starts[0]) if run_starts.len() else batch.height
        tail_start = int(run_starts[-1]) if run_starts.len() else 0
        last = batch.row(batch.height - 1, named=True)
        return _Batch(
            ok=True,
            first_user=batch[user][0], first_rank=batch[rank][0] if rank else None,
            last_user=last[user], last_rank=last[rank] if rank else None,
            # only the two pieces a cut run may need get keys
            head=batch.slice(0, head_end).select(key).to_series(),
            tail=batch.slice(tail_start).select(key).to_series(),
            one_run=run_starts.len() == 0,
            new_users=batch[user].gather(run_starts),
            lengths=np.diff(run_starts.to_numpy(), prepend=0, append=batch.height).astype(np.int64),
            item_min=stats.get("item_min"), item_max=stats.get("item_max"),
        )

    return check


# item kinds Arrow holds as they are (Polars' 128-bit integers have no Arrow type)
_LISTABLE = {pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64, pl.String}


def _a_run_repeats_an_item(batch: pl.DataFrame, item: str, run_starts: pl.Series, key: pl.Expr) -> bool:
    """Whether a run (the rows from one run start to the next) holds an item twice: the runs as
    lists over the batch's own values (offsets only), distinct items counted per list. Items of
    other kinds than integers and strings: one set of the batch's (user, item) keys instead."""
    items = batch[item]
    if items.dtype not in _LISTABLE:
        return batch.select(key.n_unique()).item() < batch.height
    # the offsets go to Arrow through Polars: pa.array on a numpy array imports pandas (0.2-0.3 s, once)
    offsets = pl.concat([pl.Series([0], dtype=pl.Int64), run_starts.cast(pl.Int64),
                         pl.Series([batch.height], dtype=pl.Int64)]).to_arrow()
    lists = pl.Series(_CArray(pa.LargeListArray.from_arrays(offsets, items.rechunk().to_arrow())))
    return bool((lists.list.n_unique() < lists.list.len()).any())


class _CArray:
    """An Arrow array seen only through the C data interface: Polars then takes it as it is, where a
    pyarrow array goes through a path that imports pyarrow.compute (70 ms, once)."""

    def __init__(self, array):
        self.array = array

    def __arrow_c_array__(self, requested_schema=None):
        return self.array.__arrow_c_array__(requested_schema)


def _in_order(fn, items, workers: int = min(2, os.cpu_count() or 1), ahead: int = 4):
    """fn over items on a small thread pool, results in input order, at most ``ahead`` in flight."""
    if workers < 2:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(workers) as pool:
        pending = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
