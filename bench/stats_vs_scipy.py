"""Issue 36 (7): rankwise.inference.stats' hand-written resampling against scipy.stats.bootstrap and
scipy.stats.permutation_test, at 100k users x 3 runs (ndcg@10 of bench/data's 100k set; the runs
of bench/stats_bench.py: the model, its lists rotated by one, its top two swapped).

For each of bootstrap 'percentile', 'basic', 'BCa' (1,000 resamples, seed 0) and the paired
sign-flip test (10,000 resamples, seed 0, the three pairs):

  same seed   rankwise's result and scipy's, both seeded with 0: largest |difference| of the bounds
              (as a share of the interval's width) or of the p-values;
  same draws  scipy's interval formula fed rankwise's own bootstrap distribution
              (bootstrap_result=..., n_resamples=0): does scipy compute the same interval from the
              same resampled means? (BCa on the first --bca-users users: scipy's jackknife is
              O(n^2) for any statistic);
  seconds     wall time of each (one thread budget: whatever numpy uses).

Usage: python bench/stats_vs_scipy.py [--users 100k] [--data-dir bench/data] [--skip-scipy-bca]
Prints one JSON line per row.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import scipy
import scipy.stats

import rankwise
from rankwise.inference import stats


def _runs(recs: pl.DataFrame) -> dict[str, pl.DataFrame]:
    n = pl.len().over("user")
    rotated = recs.with_columns(rank=((pl.col("rank") % n) + 1).cast(recs.schema["rank"]))
    swapped = recs.with_columns(rank=pl.when(pl.col("rank") == 1).then(2).when(pl.col("rank") == 2).then(1)
                                .otherwise(pl.col("rank")).cast(recs.schema["rank"]))
    return {"model": recs, "rotated": rotated, "swapped": swapped}


def _timed(f):
    start = time.perf_counter()
    out = f()
    return out, round(time.perf_counter() - start, 2)


def _mean(x, axis=-1):
    return np.mean(x, axis=axis)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", default="100k")
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).parent / "data")
    parser.add_argument("--boot-resamples", type=int, default=1000)
    parser.add_argument("--perm-resamples", type=int, default=10_000)
    parser.add_argument("--bca-users", type=int, default=5000)
    parser.add_argument("--skip-scipy-bca", action="store_true", help="scipy's BCa at full size (O(n^2) jackknife)")
    parser.add_argument("--scipy-perm-resamples", type=int, default=None,
                        help="scipy's permutation_test resamples (default: --perm-resamples; its time is linear in them)")
    parser.add_argument("--only", choices=["bootstrap", "randomization"], default=None)
    args = parser.parse_args()
    recs = pl.read_parquet(args.data_dir / f"recs_{args.users}.parquet")
    truth = pl.read_parquet(args.data_dir / f"truth_{args.users}.parquet")
    res = rankwise.evaluate(_runs(recs), truth, k=10, metrics=["ndcg"], backend="duckdb")
    long = res.long.select("run", "user", "k", "ndcg").filter(pl.col("ndcg").is_not_nan())
    runs = ["model", "rotated", "swapped"]
    wide = long.pivot(on="run", index="user", values="ndcg").drop_nulls().sort("user")
    long = long.filter(pl.col("user").is_in(wide["user"].implode()))  # users defined in all three runs
    x = wide.select(runs).to_numpy().T.copy()  # (3 runs, n users), users ascending as rankwise takes them
    base = {"users": x.shape[1], "runs": 3, "numpy": np.__version__, "scipy": scipy.__version__}
    B = args.boot_resamples
    ours_boot = stats._resampled_means(x.T, B, 0, None)  # (B, 3): rankwise's bootstrap distribution

    for method in ("percentile", "basic", "bca") if args.only != "randomization" else ():
        ours, t_ours = _timed(lambda: stats.bootstrap(long, "user", ["ndcg"], n_resamples=B, seed=0, method=method,
                                                      runs=runs))
        lo, hi = ours["ci_low"].to_numpy(), ours["ci_high"].to_numpy()
        row = dict(base, test=f"bootstrap {method}", resamples=B, rankwise_s=t_ours)
        if method != "bca" or not args.skip_scipy_bca:
            sp, t_sp = _timed(lambda: scipy.stats.bootstrap(
                (x,), _mean, n_resamples=B, method=method, rng=np.random.default_rng(0), vectorized=True,
                batch=100, axis=-1).confidence_interval)
            width = hi - lo
            row.update(scipy_s=t_sp, same_seed_max_diff_share_of_width=float(np.max(
                np.maximum(np.abs(sp.low - lo), np.abs(sp.high - hi)) / width)))
        # the same draws: scipy's interval from rankwise's bootstrap distribution
        n_same = x.shape[1] if method != "bca" else args.bca_users
        xs = x[:, :n_same]
        dist = ours_boot if n_same == x.shape[1] else stats._resampled_means(xs.T, B, 0, None)
        fed = scipy.stats.bootstrap((xs,), _mean, n_resamples=0, method=method, vectorized=True, axis=-1, batch=20,
                                    bootstrap_result=SimpleNamespace(bootstrap_distribution=dist.T)).confidence_interval
        ref = ours if n_same == x.shape[1] else stats.bootstrap(
            long.filter(pl.col("user").is_in(wide["user"].head(n_same).implode())), "user", ["ndcg"],
            n_resamples=B, seed=0, method=method, runs=runs)
        row.update(same_draws_users=n_same, same_draws_max_abs_diff=float(np.max(np.maximum(
            np.abs(fed.low - ref["ci_low"].to_numpy()), np.abs(fed.high - ref["ci_high"].to_numpy())))))
        print(json.dumps(row), flush=True)

    if args.only == "bootstrap":
        return
    P, SP = args.perm_resamples, args.scipy_perm_resamples or args.perm_resamples
    ours, t_ours = _timed(lambda: stats.compare(long, "user", ["ndcg"], test="randomization", n_resamples=P, seed=0,
                                                correction=None, runs=runs))
    pairs = [(0, 1), (0, 2), (1, 2)]
    sp_two, sp_abs = [], []

    def scipy_tests():
        for a, b in pairs:
            d = x[b] - x[a]
            kw = dict(permutation_type="samples", n_resamples=SP, vectorized=True, batch=50)
            # scipy's two-sided p (2 x the smaller one-sided p) ...
            sp_two.append(scipy.stats.permutation_test((d,), _mean, rng=np.random.default_rng(0), **kw).pvalue)
            # ... and the README's rule p = (1 + #{|T*| >= |T|}) / (1 + B): statistic |mean|, one-sided
            sp_abs.append(scipy.stats.permutation_test((d,), lambda v, axis=-1: np.abs(np.mean(v, axis=axis)),
                                                       alternative="greater", rng=np.random.default_rng(0),
                                                       **kw).pvalue)

    _, t_sp = _timed(scipy_tests)
    ours_p = ours["p_value"].to_numpy()
    print(json.dumps(dict(base, test="randomization (paired sign flip), 3 pairs", resamples=P, rankwise_s=t_ours,
                          scipy_resamples=SP, scipy_s_both_variants=t_sp, rankwise_p=ours_p.tolist(), scipy_two_sided_p=sp_two,
                          scipy_abs_mean_p=sp_abs,
                          n_nonzero_d=[int(np.count_nonzero(x[b] - x[a])) for a, b in pairs])), flush=True)


if __name__ == "__main__":
    main()
