"""Seeded synthetic data for the rankwise benchmarks.

Writes, per size N (users), into the data dir (default bench/data/):
  recs_<N>.parquet   user int64, item int64, rank int32 (1..len), sorted by (user, rank)
  truth_<N>.parquet  user int64, item int64, relevance float64, sorted by (user, item)

Shape of the data (all numbers are per user, drawn independently):
  * items: ~1M ids, Zipf(0.9) popularity; item ids are a fixed shuffle of popularity order.
  * 2% users have no recommendations (truth only), 3% have no ground truth (recs only).
  * list length 100 for most users, uniform 1..99 for 10% of them; no duplicate items.
  * 5..20 ground-truth rows; each comes from the user's own list with prob 0.18 (ranks skewed to the top,
    so hit_rate@10 is ~0.4), the rest from the popularity distribution; relevance 0/1/2/3 with p .1/.5/.25/.15.

With --beyond, the shape issue 10's beyond-accuracy bench names instead, per size N:
  beyond_recs_<N>.parquet   user, item, rank: 100 distinct items per user from a 100k-item catalog (Zipf 0.9)
  beyond_train_<N>.parquet  user, item: 20 interactions per user over the same popularity (repeats allowed)
  beyond_items.parquet      item: the 100k-item catalog

Usage: python bench/generate.py --sizes 10k,100k,1M,3M [--data-dir DIR] [--seed 42] [--beyond]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

N_ITEMS = 1_000_000
ZIPF_S = 0.9
LIST_LEN = 100
P_NO_RECS, P_NO_TRUTH, P_SHORT = 0.02, 0.03, 0.10
P_FROM_RECS = 0.18
REL_LEVELS, REL_P = np.array([0.0, 1.0, 2.0, 3.0]), [0.10, 0.50, 0.25, 0.15]
CHUNK_USERS = 200_000
ITEM_BITS = 20  # N_ITEMS < 2**20: (local user, item) packs into one int64 key

RECS_SCHEMA = pa.schema([("user", pa.int64()), ("item", pa.int64()), ("rank", pa.int32())])
TRUTH_SCHEMA = pa.schema([("user", pa.int64()), ("item", pa.int64()), ("relevance", pa.float64())])


def parse_size(s: str) -> int:
    """'10k' -> 10_000, '3M' -> 3_000_000, '2500' -> 2500."""
    s = s.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(s[-1], 1)
    return int(float(s[:-1] if mult > 1 else s) * mult)


def size_label(n: int) -> str:
    """Inverse of parse_size for round numbers: 10000 -> '10k'."""
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n % 1_000 == 0:
        return f"{n // 1_000}k"
    return str(n)


def data_paths(data_dir: Path, n: int) -> tuple[Path, Path]:
    label = size_label(n)
    return data_dir / f"recs_{label}.parquet", data_dir / f"truth_{label}.parquet"


class ItemSampler:
    """Draws item indices (0 = most popular) from a Zipf law via an inverse-CDF table."""

    def __init__(self, seed: int, n_items: int = N_ITEMS):
        w = np.arange(1, n_items + 1, dtype=np.float64) ** -ZIPF_S
        self.cdf = np.cumsum(w / w.sum())
        # popularity rank -> public item id (1..n_items), fixed for every size
        self.item_id = np.random.default_rng([seed, 0]).permutation(n_items).astype(np.int64) + 1

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.minimum(np.searchsorted(self.cdf, rng.random(n)), len(self.cdf) - 1).astype(np.int64)


def _group_positions(sorted_groups: np.ndarray) -> np.ndarray:
    """0-based position of each element inside its run of equal values (input sorted by group)."""
    idx = np.arange(len(sorted_groups))
    starts = np.r_[True, sorted_groups[1:] != sorted_groups[:-1]]
    return idx - np.maximum.accumulate(np.where(starts, idx, 0))


def _sorted_unique(a: np.ndarray) -> np.ndarray:
    """np.unique for int64 keys, via an in-place sort (faster than numpy 2's hash-based unique here)."""
    a.sort()
    return a[np.r_[True, a[1:] != a[:-1]]]


def gen_recs(rng, sampler, lengths):
    """Distinct Zipf items per local user, list length lengths[u]; returns (local_user, item_idx, rank)."""
    n_users = len(lengths)
    keys = np.empty(0, dtype=np.int64)
    need = lengths.astype(np.int64).copy()
    while True:
        short = np.flatnonzero(need > 0)
        if len(short) == 0:
            break
        n_draw = (need[short] * 1.3 + 8).astype(np.int64)
        users = np.repeat(short, n_draw)
        new = (users << ITEM_BITS) | sampler.draw(rng, len(users))
        keys = _sorted_unique(np.concatenate([keys, new]))
        have = np.bincount(keys >> ITEM_BITS, minlength=n_users)
        need = lengths - have
    # keys are sorted by (user, item): shuffle inside each user, then keep the first `length` items
    shuffle_key = ((keys >> ITEM_BITS) << 32) | rng.integers(0, 1 << 32, len(keys), dtype=np.int64)
    keys = keys[np.argsort(shuffle_key)]
    user = keys >> ITEM_BITS
    rank = _group_positions(user) + 1
    keep = rank <= lengths[user]
    return user[keep], keys[keep] & ((1 << ITEM_BITS) - 1), rank[keep].astype(np.int32)


def gen_truth(rng, sampler, has_truth, lengths, rec_user, rec_item):
    """Ground truth for users with has_truth; part of it picked from their own lists (top-skewed ranks)."""
    n_users = len(lengths)
    n_truth = np.where(has_truth, rng.integers(5, 21, n_users), 0)
    n_from = np.where(lengths > 0, rng.binomial(n_truth, P_FROM_RECS), 0)
    # picks from the list: rank = ceil(len * u^2), so about a third of them land in the top 10 of a full list
    pu = np.repeat(np.arange(n_users), n_from)
    pick_rank = np.ceil(lengths[pu] * rng.random(len(pu)) ** 2).clip(1).astype(np.int64)
    list_start = np.r_[0, np.cumsum(lengths)[:-1]]  # rec arrays are sorted by (user, rank)
    picked = rec_item[list_start[pu] + pick_rank - 1]
    ru = np.repeat(np.arange(n_users), n_truth - n_from)
    keys = np.concatenate([(pu << ITEM_BITS) | picked, (ru << ITEM_BITS) | sampler.draw(rng, len(ru))])
    keys = _sorted_unique(keys)
    rel = rng.choice(REL_LEVELS, size=len(keys), p=REL_P)
    return keys >> ITEM_BITS, keys & ((1 << ITEM_BITS) - 1), rel


def generate(n: int, data_dir: Path, seed: int = 42, sampler: ItemSampler | None = None) -> tuple[Path, Path]:
    """Write recs_<n>.parquet and truth_<n>.parquet; returns their paths."""
    sampler = sampler or ItemSampler(seed)
    data_dir.mkdir(parents=True, exist_ok=True)
    recs_path, truth_path = data_paths(data_dir, n)
    tmp_r, tmp_t = recs_path.with_suffix(".tmp"), truth_path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp_r, RECS_SCHEMA) as wr, pq.ParquetWriter(tmp_t, TRUTH_SCHEMA) as wt:
        for c, first in enumerate(range(0, n, CHUNK_USERS)):
            rng = np.random.default_rng([seed, n, c + 1])
            m = min(CHUNK_USERS, n - first)
            kind = rng.random(m)
            has_recs, has_truth = kind >= P_NO_RECS, (kind < P_NO_RECS) | (kind >= P_NO_RECS + P_NO_TRUTH)
            short = rng.random(m) < P_SHORT
            lengths = np.where(has_recs, np.where(short, rng.integers(1, LIST_LEN, m), LIST_LEN), 0)
            ru, ri, rr = gen_recs(rng, sampler, lengths)
            tu, ti, tr = gen_truth(rng, sampler, has_truth, lengths, ru, ri)
            uid = np.arange(first + 1, first + m + 1, dtype=np.int64)  # user ids 1..n
            wr.write_table(pa.table([uid[ru], sampler.item_id[ri], rr], schema=RECS_SCHEMA), row_group_size=1 << 20)
            wt.write_table(pa.table([uid[tu], sampler.item_id[ti], tr], schema=TRUTH_SCHEMA), row_group_size=1 << 20)
    tmp_r.replace(recs_path)
    tmp_t.replace(truth_path)
    return recs_path, truth_path


BEYOND_ITEMS, BEYOND_TRAIN_PER_USER = 100_000, 20
BEYOND_SCHEMAS = {"recs": RECS_SCHEMA, "train": pa.schema([("user", pa.int64()), ("item", pa.int64())]),
                  "items": pa.schema([("item", pa.int64())])}


def beyond_paths(data_dir: Path, n: int) -> dict:
    label = size_label(n)
    return {"recs": data_dir / f"beyond_recs_{label}.parquet", "train": data_dir / f"beyond_train_{label}.parquet",
            "items": data_dir / "beyond_items.parquet"}


def generate_beyond(n: int, data_dir: Path, seed: int = 42) -> dict:
    """Write the beyond-accuracy bench's files (module docstring); returns their paths."""
    sampler = ItemSampler(seed, BEYOND_ITEMS)
    data_dir.mkdir(parents=True, exist_ok=True)
    paths = beyond_paths(data_dir, n)
    tmp = {k: p.with_suffix(".tmp") for k, p in paths.items()}
    pq.write_table(pa.table([np.sort(sampler.item_id)], schema=BEYOND_SCHEMAS["items"]), tmp["items"])
    with pq.ParquetWriter(tmp["recs"], RECS_SCHEMA) as wr, pq.ParquetWriter(tmp["train"], BEYOND_SCHEMAS["train"]) as wt:
        for c, first in enumerate(range(0, n, CHUNK_USERS)):
            rng = np.random.default_rng([seed, n, c + 1, 10])
            m = min(CHUNK_USERS, n - first)
            ru, ri, rr = gen_recs(rng, sampler, np.full(m, LIST_LEN))
            uid = np.arange(first + 1, first + m + 1, dtype=np.int64)  # user ids 1..n
            wr.write_table(pa.table([uid[ru], sampler.item_id[ri], rr], schema=RECS_SCHEMA), row_group_size=1 << 20)
            tu = np.repeat(uid, BEYOND_TRAIN_PER_USER)
            wt.write_table(pa.table([tu, sampler.item_id[sampler.draw(rng, len(tu))]], schema=BEYOND_SCHEMAS["train"]),
                           row_group_size=1 << 20)
    for k, p in paths.items():
        tmp[k].replace(p)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10k,100k,1M,3M")
    ap.add_argument("--data-dir", type=Path, default=Path(__file__).parent / "data")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--force", action="store_true", help="regenerate files that already exist")
    ap.add_argument("--beyond", action="store_true", help="the beyond-accuracy bench's files (see above)")
    a = ap.parse_args()
    sampler = ItemSampler(a.seed)
    for n in map(parse_size, a.sizes.split(",")):
        if a.beyond:
            t = time.perf_counter()
            paths = generate_beyond(n, a.data_dir, a.seed)
            rows = {k: pq.ParquetFile(p).metadata.num_rows for k, p in paths.items()}
            print(f"{size_label(n)} (beyond): {rows['recs']:,} rec rows, {rows['train']:,} train rows, "
                  f"{rows['items']:,} items in {time.perf_counter() - t:.1f}s")
            continue
        paths = data_paths(a.data_dir, n)
        if all(p.exists() for p in paths) and not a.force:
            print(f"{size_label(n)}: exists, skipped ({paths[0]})")
            continue
        t = time.perf_counter()
        generate(n, a.data_dir, a.seed, sampler)
        rows = [pq.ParquetFile(p).metadata.num_rows for p in paths]
        print(f"{size_label(n)}: {rows[0]:,} rec rows, {rows[1]:,} truth rows in {time.perf_counter() - t:.1f}s")


if __name__ == "__main__":
    main()
