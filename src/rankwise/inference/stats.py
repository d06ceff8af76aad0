"""Confidence intervals, bootstrap intervals and paired significance tests over users.

Input of `bootstrap` and `compare`: a Polars frame ``long`` with a ``run`` column (String), a
user column, ``k`` (Int64) and one Float64 column per metric (NaN = undefined for that user).

Rules shared by every function here:

- Users are the resampling and pairing unit. They are taken in ascending id order, so a result
  does not depend on the row order of ``long``. Runs follow ``runs=`` (default: order of first
  appearance in ``long``); the order sets the pairs (a < b) and the letters.
- Randomness comes from numpy's PCG64 seeded with ``seed`` (an integer >= 0); results are
  reproducible with the seed and do not depend on ``chunk_size`` (resamples per chunk, which only
  bounds memory) or on the number of threads: p-values count ties with a tolerance (a resampled
  statistic within 1e-9 of the mean |d| of the observed one is a tie), interval bounds may differ
  in the last bits of a float sum.
- A user whose value is NaN in a run is left out of that run's mean; in a paired comparison a
  user is used only if both runs have a value (``n_users`` counts them, and ``mean_a``/``mean_b``
  are over those users).
"""

from __future__ import annotations

import contextlib
import math
import numbers
import warnings

import numpy as np
import polars as pl

from rankwise._progress import progress
from rankwise.errors import DuplicateUserError, MissingColumnError, ParameterError, did_you_mean

TESTS = ("t", "wilcoxon", "randomization", "bootstrap")
CORRECTIONS = ("holm", "bonferroni", None)
BOOTSTRAP_METHODS = ("percentile", "basic", "bca")
_CHUNK_BYTES = 64 * 2**20  # memory budget of one chunk of resamples
_BLOCK_BYTES = 512  # sign-flip test: byte positions (8 users each) per lookup block, 4096 users
_TIE_RTOL = 1e-9  # resampling tests: |T*| >= |T| - 1e-9 * sum|d| (or mean |d|) counts as a tie (float rounding)


# --------------------------------------------------------------------------------------------
# t interval and summary statistics


def t_critical(n, confidence: float = 0.95):
    """t(1 - (1 - c)/2, n - 1) for every n (NaN when n < 2). scipy.special.stdtrit is what
    scipy.stats.t.ppf computes (bit-identical), without importing scipy.stats (~1 s)."""
    from scipy.special import stdtrit

    _check_level(confidence, "confidence")
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(n >= 2, stdtrit(np.maximum(n - 1, 1), 1 - (1 - confidence) / 2), np.nan)


def t_interval(mean, sd, n, confidence: float = 0.95):
    """(low, high) = mean ± t(1 - (1 - c)/2, n - 1) · sd / √n, sample sd; NaN when n < 2.

    Accepts numbers or numpy arrays (returns arrays), or Polars expressions (returns two
    expressions; the t quantile is evaluated by scipy on the batch of ``n``).
    """
    _check_level(confidence, "confidence")
    if any(isinstance(x, pl.Expr) for x in (mean, sd, n)):
        mean, sd, n = (x if isinstance(x, pl.Expr) else pl.lit(x) for x in (mean, sd, n))
        crit = n.cast(pl.Float64).map_batches(
            lambda s: pl.Series(t_critical(s.fill_null(0).to_numpy(), confidence)),
            return_dtype=pl.Float64)
        half = crit * sd.cast(pl.Float64).fill_null(float("nan")) / n.cast(pl.Float64).sqrt()
        return mean - half, mean + half
    mean, sd, n = (np.asarray(x, dtype=np.float64) for x in (mean, sd, n))
    # the quantile only where it can count: a NaN sd (a catalog metric, one user) gives NaN whatever it is,
    # and with no such row scipy is not imported at all (its first import: 0.2-0.4 s)
    needed = (n >= 2) & ~np.isnan(sd)
    crit = t_critical(np.where(needed, n, 0.0), confidence) if needed.any() else np.full(np.shape(n), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = crit * sd / np.sqrt(n)
    return mean - half, mean + half


def within_range(frame: pl.DataFrame, value_range, *, difference: bool = False) -> pl.DataFrame:
    """``frame`` with its ``ci_low`` / ``ci_high`` clipped to the range of each row's ``metric``: an
    interval of a mean never leaves the range its per-user values lie in (recall's t interval over 4
    users, 0.625 ± 0.762, is [0, 1], not [-0.137, 1.387]); NaN stays NaN.

    ``value_range(metric)`` gives (low, high), None on an open side (``rankwise.metrics.declarations.value_range``).
    ``difference=True``: the frame holds differences of two means of the metric (compare's diff), so
    the range is [low - high, high - low] ([-1, 1] for a metric in [0, 1]); open if either side is.
    """
    if not frame.height:
        return frame
    bounds = {}
    for name in frame["metric"].unique().to_list():
        low, high = value_range(name)
        if difference:
            low, high = (low - high, high - low) if low is not None and high is not None else (None, None)
        bounds[name] = (-math.inf if low is None else low, math.inf if high is None else high)
    if not bounds:
        return frame
    low, high = (pl.col("metric").replace_strict({m: b[i] for m, b in bounds.items()}, return_dtype=pl.Float64)
                 for i in (0, 1))
    return frame.with_columns(pl.col("ci_low", "ci_high").clip(low, high))


def summary_stats_exprs(col: str) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Aggregations (mean, sample sd, n) of ``col`` over its non-NaN, non-null values.

    Named ``mean``, ``sd``, ``n``; mean is NaN when n = 0 and sd is NaN when n < 2.
    """
    x = pl.col(col).filter(pl.col(col).is_not_nan())
    nan = float("nan")
    return (x.mean().fill_null(nan).alias("mean"), x.std(ddof=1).fill_null(nan).alias("sd"),
            x.count().cast(pl.Int64).alias("n"))


# --------------------------------------------------------------------------------------------
# multiple-comparison corrections


def adjust_pvalues(p, correction: str | None = "holm") -> np.ndarray:
    """Adjusted p-values over one family; NaN p-values are not counted and stay NaN.

    bonferroni: min(1, m·p). holm: with p sorted ascending, p_(i) ↦ max_{j ≤ i} min(1, (m − j + 1)·p_(j)).
    None: unchanged.
    """
    _check_choice(correction, CORRECTIONS, "correction")
    p = np.asarray(p, dtype=np.float64)
    out = p.copy()
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if correction is None or m == 0:
        return out
    q = p[ok]
    if correction == "bonferroni":
        out[ok] = np.minimum(1.0, m * q)
        return out
    order = np.argsort(q, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * q[order]))
    res = np.empty(m)
    res[order] = adj
    out[ok] = res
    return out


# --------------------------------------------------------------------------------------------
# resampling cores


def _resampled_means(x: np.ndarray, n_resamples: int, seed, chunk_size: int | None) -> np.ndarray:
    """(n_resamples, C) bootstrap means of the columns of x (users × C, NaN = undefined).

    A column resamples its own m defined users: resample r draws idx = Generator(PCG64(SeedSequence(
    seed).spawn(B)[r])).integers(0, m, m) among them. Columns defined for the same users share these
    draws (paired); a column's resamples do not depend on which other columns x holds.
    """
    out = np.full((n_resamples, x.shape[1]), np.nan)  # a column without users has no resampled mean
    defined = ~np.isnan(x)
    same_users: dict[bytes, list[int]] = {}
    for j in range(x.shape[1]):
        same_users.setdefault(np.packbits(defined[:, j]).tobytes(), []).append(j)
    for js in same_users.values():
        users = defined[:, js[0]]
        if users.any():
            out[:, js] = _means_of_resamples(x[users][:, js], n_resamples, seed, chunk_size)
    return out


def _means_of_resamples(a: np.ndarray, n_resamples: int, seed, chunk_size: int | None) -> np.ndarray:
    """(n_resamples, C) means of the columns of ``a`` (n users × C, all defined) over the resamples of
    :func:`_resampled_means`."""
    n, ncol = a.shape
    rc = chunk_size or max(1, min(n_resamples, _CHUNK_BYTES // (8 * max(n, 1))))
    children = np.random.SeedSequence(seed).spawn(n_resamples)
    out = np.empty((n_resamples, ncol))
    for start in progress(range(0, n_resamples, rc), desc="bootstrap", unit="chunk"):
        stop = min(n_resamples, start + rc)
        counts = np.empty((stop - start, n))
        for j, r in enumerate(range(start, stop)):
            idx = np.random.Generator(np.random.PCG64(children[r])).integers(0, n, size=n)
            counts[j] = np.bincount(idx, minlength=n)
        out[start:stop] = counts @ a / n
    return out


def _nibble_tables(dp: np.ndarray) -> np.ndarray:
    """(bytes, 2, 16): [p, h, v] = Σ of dp[8p + 4h + t] over the bits t set in the nibble v."""
    q = dp.reshape(-1, 2, 4)
    tab = np.zeros(q.shape[:2] + (16,))
    for v in range(1, 16):
        low = v & -v
        tab[:, :, v] = tab[:, :, v ^ low] + q[:, :, low.bit_length() - 1]
    return tab


def _sums_of_set_bits(tab: np.ndarray, by: np.ndarray) -> np.ndarray:
    """Per row of the byte matrix ``by``: Σ d_i over the users whose bit is set (fixed order)."""
    rows, nbytes = by.shape
    total = np.zeros(rows)
    for p0 in range(0, nbytes, _BLOCK_BYTES):
        b = by[:, p0:p0 + _BLOCK_BYTES]
        m = b.shape[1]
        off = np.arange(m, dtype=np.int32) * 16
        idx = np.empty((rows, m), dtype=np.int32)
        part = np.zeros(rows)
        for h, nib in ((0, np.bitwise_and(b, 15)), (1, np.right_shift(b, 4))):
            np.add(nib, off, out=idx, casting="unsafe")
            part += np.take(np.ascontiguousarray(tab[p0:p0 + m, h, :]), idx).sum(axis=1)
        total += part
    return total


def _sign_flip_exceedances(d: np.ndarray, n_resamples: int, seed, chunk_size: int | None) -> int:
    """#{r : |Σ s_ri d_i| >= |Σ d_i|} over random sign vectors s_r (paired randomization).

    Users with d = 0 are dropped (their sign changes nothing); the others, in order, take their
    signs from PCG64(seed).random_raw: resample r reads W = ceil(n/64) outputs (r·W onward) and
    user i gets +1 if bit i of that little-endian bit string is set, else −1. With S1 = Σ d_i over
    the set bits and D = Σ d_i, the statistic is Σ s_i d_i = 2·S1 − D; sums use 4-user lookup
    tables (n/4 lookups per resample). Ties: |T*| >= |T| − 1e-9·Σ|d_i| (rounding of equal sums).
    """
    d = d[d != 0]
    n = d.size
    if n == 0:
        return n_resamples
    words = -(-n // 64)
    dp = np.zeros(words * 64)
    dp[:n] = d
    tab = _nibble_tables(dp)
    total = _sums_of_set_bits(tab, np.full((1, words * 8), 255, dtype=np.uint8))[0]
    threshold = abs(total) - _TIE_RTOL * np.abs(d).sum()
    rc = chunk_size or max(1, min(n_resamples, _CHUNK_BYTES // (8 * words)))
    bitgen = np.random.PCG64(seed)
    hits = 0
    for start in progress(range(0, n_resamples, rc), desc="randomization test", unit="chunk"):
        rows = min(rc, n_resamples - start)
        raw = bitgen.random_raw(size=(rows, words)).astype("<u8", copy=False)
        s1 = _sums_of_set_bits(tab, raw.view(np.uint8))
        hits += int(np.count_nonzero(np.abs(2 * s1 - total) >= threshold))
    return hits


# --------------------------------------------------------------------------------------------
# frames ↔ matrices


def _matrix(long: pl.DataFrame, user_col: str, metrics, runs=None, ks=None) -> tuple[list, list, np.ndarray, dict]:
    """Runs (given, or first-appearance order), ks (given, or those of ``long``; ascending), X (users ×
    columns), column of (run, k, metric)."""
    if isinstance(long, pl.LazyFrame):
        long = long.collect()
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    if not metrics:
        raise ParameterError("metrics is empty: nothing to resample or compare.",
                             hint="pass the metric column names, e.g. metrics=['ndcg', 'recall'].")
    need = ["run", user_col, "k", *metrics]
    missing = [c for c in need if c not in long.columns]
    if missing:
        raise MissingColumnError(
            f"per-user frame: no column {', '.join(map(repr, missing))} (columns: {', '.join(long.columns)}).",
            hint="the frame needs run, the user column, k and one Float64 column per metric (Result.long with a run column).")
    rows, index = _free("_rows", long.columns), _free("_u", long.columns)  # helper names no column has
    dup = long.group_by("run", user_col, "k").agg(pl.len().alias(rows)).filter(pl.col(rows) > 1)
    if dup.height:
        raise DuplicateUserError(
            f"per-user frame: {dup.height} (run, {user_col}, k) combination(s) appear more than once; "
            "a user must have one value per run and k.", rows=dup.head(5),
            hint="pass one row per run, user and k (e.g. Result.long of a multi-run evaluate).")
    run_col = long.get_column("run")
    # an Enum declares the frame's runs, also those without a row (no user evaluated): NaN columns
    present = run_col.dtype.categories.to_list() if run_col.dtype == pl.Enum else \
        run_col.unique(maintain_order=True).to_list()
    if runs is None:
        runs = present
    else:
        runs = list(runs)
        unknown = [r for r in runs if r not in present]
        if unknown or len(set(runs)) != len(runs):
            raise ParameterError(f"runs={runs!r}: {'unknown run(s) ' + ', '.join(map(repr, unknown)) if unknown else 'a run is repeated'} "
                                 f"(runs in the frame: {', '.join(map(repr, present))}).",
                                 hint="pass each run name once, in the order wanted (it sets the pairs and letters).")
        long = long.filter(pl.col("run").is_in(runs))
    if ks is not None:  # the cutoffs asked for (one without rows gets NaN columns)
        long = long.filter(pl.col("k").is_in(list(ks)))
    ks = sorted(long.get_column("k").unique().to_list() if ks is None else set(ks))
    users = long.select(pl.col(user_col).unique().sort()).with_row_index(index)
    frame = long.join(users, on=user_col, how="left")
    cols = {(r, k, m): i for i, (r, k, m) in enumerate((r, k, m) for r in runs for k in ks for m in metrics)}
    x = np.full((users.height, len(cols)), np.nan)
    for (r, k), part in frame.partition_by("run", "k", as_dict=True).items():
        idx = part.get_column(index).to_numpy()
        for m in metrics:
            x[idx, cols[(r, k, m)]] = part.get_column(m).cast(pl.Float64).fill_null(np.nan).to_numpy()
    return runs, ks, x, cols


# --------------------------------------------------------------------------------------------
# bootstrap intervals of the means


def bootstrap(long: pl.DataFrame, user_col: str, metrics, n_resamples: int = 1000, seed=0,
              confidence: float = 0.95, method: str = "percentile",
              chunk_size: int | None = None, runs=None, ks=None) -> pl.DataFrame:
    """Bootstrap interval of each run's mean per metric and k, resampling users.

    Each run, metric and k resamples, with replacement, the users that have a value (runs, metrics
    and ks valued for the same users share the draws: paired). With θ̂ the observed mean, θ* the
    resampled means and q_p their p-quantile (numpy's linear rule), α = 1 − confidence:
    percentile = (q_{α/2}, q_{1−α/2}); basic = (2θ̂ − q_{1−α/2}, 2θ̂ − q_{α/2}); bca = percentile at
    levels Φ(z0 + (z0 + z)/(1 − a(z0 + z))) for z = z_{α/2}, z_{1−α/2}, z0 = Φ⁻¹(share of θ* below θ̂,
    ties half), a = Σu³ / (6 (Σu²)^1.5) with u the jackknife deviations over users.
    The interval is NaN below two users with a value (as the t interval). ``ks``: the cutoffs to
    report (default: those of ``long``; a k without rows gives NaN rows).
    Returns run, metric, k, value, ci_low, ci_high, n_users.
    """
    _check_choice(method, BOOTSTRAP_METHODS, "method")
    _check_level(confidence, "confidence")
    _check_resamples(n_resamples)
    _check_seed(seed)
    runs, ks, x, cols = _matrix(long, user_col, metrics, runs, ks)
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    keys = [(r, k, m) for r in runs for m in metrics for k in ks]
    x = x[:, [cols[key] for key in keys]]
    theta = np.array([_nanmean(x[:, i]) for i in range(x.shape[1])])
    n_def = (~np.isnan(x)).sum(axis=0)
    boot = _resampled_means(x, n_resamples, seed, chunk_size)
    alpha = 1 - confidence
    if method == "bca":
        lo, hi = _bca(x, theta, boot, alpha)
    else:
        with _all_nan_is_nan():
            qlo, qhi = np.nanquantile(boot, [alpha / 2, 1 - alpha / 2], axis=0)
        lo, hi = (qlo, qhi) if method == "percentile" else (2 * theta - qhi, 2 * theta - qlo)
    bad = n_def < 2
    lo, hi = np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)
    return pl.DataFrame({
        "run": [r for r, _, _ in keys], "metric": [m for _, _, m in keys],
        "k": pl.Series([k for _, k, _ in keys], dtype=pl.Int64),
        "value": theta, "ci_low": lo, "ci_high": hi, "n_users": pl.Series(n_def, dtype=pl.Int64),
    })


def _bca(x, theta, boot, alpha):
    from scipy.special import ndtr, ndtri

    lo, hi = np.full(len(theta), np.nan), np.full(len(theta), np.nan)
    for i in range(x.shape[1]):
        col, b = x[:, i], boot[:, i]
        b = b[~np.isnan(b)]
        m = int((~np.isnan(col)).sum())
        if m < 2 or b.size == 0:
            continue
        # jackknife over all users: a defined user i gives (S − x_i)/(m − 1), an undefined one θ̂
        jack = np.where(np.isnan(col), theta[i], (theta[i] * m - np.nan_to_num(col)) / (m - 1))
        u = jack.mean() - jack
        den = 6 * (u @ u) ** 1.5
        a = (u ** 3).sum() / den if den > 0 else 0.0
        tie = _TIE_RTOL * np.nanmean(np.abs(col))  # a resampled mean equal to θ̂ up to float rounding is a tie
        z0 = ndtri(((b < theta[i] - tie).sum() + (b <= theta[i] + tie).sum()) / (2 * b.size))
        levels = [ndtr(z0 + (z0 + z) / (1 - a * (z0 + z))) for z in (ndtri(alpha / 2), ndtri(1 - alpha / 2))]
        if np.all(np.isfinite(levels)):
            lo[i], hi[i] = np.quantile(b, levels)
    return lo, hi


# --------------------------------------------------------------------------------------------
# paired comparisons


def compare(long: pl.DataFrame, user_col: str, metrics, baseline: str | None = None, test: str = "t",
            correction: str | None = "holm", alpha: float = 0.05, seed=0, n_resamples: int = 10_000,
            confidence: float = 0.95, chunk_size: int | None = None, runs=None, ks=None) -> pl.DataFrame:
    """Paired comparison of runs per metric, k and pair (every pair a < b in run order, or
    baseline = a against each other run b), on the users where both runs have a value.

    d_i = x_b,i − x_a,i; diff = mean(d) = mean_b − mean_a; effect_size = mean(d) / sd(d) (sample sd,
    NaN if sd = 0, or below 1e-9 of the mean |d|: constant differences up to float rounding). ci_low/ci_high: t interval of mean(d), or for test="bootstrap" the percentile
    interval of the resampled mean(d). p_value, two-sided:
      t             scipy.stats.ttest_rel (NaN when n < 2);
      wilcoxon      scipy.stats.wilcoxon with its defaults (zero_method="wilcox", method="auto");
      randomization paired sign flip of d, statistic Σd (≡ mean d): p = (1 + #{|T*| >= |T|}) / (1 + B);
      bootstrap     shifted null: resample users (paired), p = (1 + #{|mean* − mean| >= |mean|}) / (1 + B).
    Every test gives p = 1 when all differences are 0 (identical runs on these users; scipy's t
    would give NaN) and NaN when no user is paired; t and bootstrap give NaN for one user. The
    bootstrap test needs more than a handful of users: with two, p = 1 / (1 + B) whenever both
    differences have one sign. p_adjusted: `correction` over the comparisons
    of one (metric, k), NaN p-values left out; significant = p_adjusted < alpha.
    """
    _check_choice(test, TESTS, "test")
    _check_choice(correction, CORRECTIONS, "correction")
    _check_level(alpha, "alpha")
    _check_level(confidence, "confidence")
    if test in ("randomization", "bootstrap"):
        _check_resamples(n_resamples)
        _check_seed(seed)
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    runs, ks, x, cols = _matrix(long, user_col, metrics, runs, ks)
    if baseline is not None and baseline not in runs:
        raise ParameterError(f"baseline={baseline!r} is not a run (runs: {', '.join(map(repr, runs))}).",
                             hint="pass one of the run names, or baseline=None for every pair.")
    if len(runs) < 2:
        raise ParameterError(f"compare needs at least two runs; the frame has {len(runs)} ({', '.join(map(repr, runs))}).",
                             hint="evaluate several runs at once: rankwise.evaluate({'a': recs_a, 'b': recs_b}, truth, ...).")
    if baseline is None:
        pairs = [(a, b) for i, a in enumerate(runs) for b in runs[i + 1:]]
    else:
        pairs = [(baseline, b) for b in runs if b != baseline]
    groups = [(m, k, a, b) for m in metrics for k in ks for a, b in pairs]
    rows, tolerance = [], []
    for m, k, a, b in groups:
        xa, xb = x[:, cols[(a, k, m)]], x[:, cols[(b, k, m)]]
        ok = ~np.isnan(xa) & ~np.isnan(xb)
        xa, xb = xa[ok], xb[ok]
        d = xb - xa
        n = d.size
        mean = d.mean() if n else np.nan
        sd = d.std(ddof=1) if n > 1 else np.nan
        tolerance.append(_TIE_RTOL * np.abs(d).mean() if n else 0.0)
        lo, hi = t_interval(mean, sd, n, confidence)
        rows.append(dict(run_a=a, run_b=b, metric=m, k=k, mean_a=xa.mean() if n else np.nan,
                         mean_b=xb.mean() if n else np.nan, diff=mean, ci_low=float(lo), ci_high=float(hi),
                         p_value=_p_value(test, xa, xb, d, seed, n_resamples, chunk_size),
                         n_users=n, effect_size=mean / sd if sd > tolerance[-1] else np.nan))
    if test == "bootstrap" and groups:  # each pair resamples its paired users (pairs of the same users: the same draws)
        dmat = np.column_stack([x[:, cols[(b, k, m)]] - x[:, cols[(a, k, m)]] for m, k, a, b in groups])
        boot = _resampled_means(dmat, n_resamples, seed, chunk_size)
        with _all_nan_is_nan():
            qlo, qhi = np.nanquantile(boot, [(1 - confidence) / 2, 1 - (1 - confidence) / 2], axis=0)
        for g, row in enumerate(rows):
            b = boot[:, g][~np.isnan(boot[:, g])]
            if row["n_users"] < 2:  # one user: every resample is that user (p = 1 / (1 + B) otherwise)
                continue
            row["ci_low"], row["ci_high"] = float(qlo[g]), float(qhi[g])
            far = np.abs(b - row["diff"]) >= abs(row["diff"]) - tolerance[g]
            row["p_value"] = 1.0 if row["diff"] == 0 else (1 + np.count_nonzero(far)) / (1 + b.size)
    schema = {"run_a": pl.String, "run_b": pl.String, "metric": pl.String, "k": pl.Int64,
              "mean_a": pl.Float64, "mean_b": pl.Float64, "diff": pl.Float64, "ci_low": pl.Float64,
              "ci_high": pl.Float64, "p_value": pl.Float64, "n_users": pl.Int64, "effect_size": pl.Float64}
    out = pl.DataFrame(rows, schema=schema)
    p_adj = np.empty(out.height)
    fam = np.array([f"{m}\x00{k}" for m, k, _, _ in groups])
    for f in dict.fromkeys(fam):
        sel = fam == f
        p_adj[sel] = adjust_pvalues(out.get_column("p_value").to_numpy()[sel], correction)
    out = out.with_columns(p_adjusted=pl.Series(p_adj))
    out = out.with_columns(significant=(pl.col("p_adjusted") < alpha) & pl.col("p_adjusted").is_not_nan())
    return out.select("run_a", "run_b", "metric", "k", "mean_a", "mean_b", "diff", "ci_low", "ci_high",
                      "p_value", "p_adjusted", "significant", "n_users", "effect_size")


def _p_value(test, xa, xb, d, seed, n_resamples, chunk_size) -> float:
    n = d.size
    if n == 0:
        return math.nan
    if not np.any(d != 0):
        return 1.0
    if test == "t":
        from scipy.stats import ttest_rel

        with warnings.catch_warnings():  # constant differences up to rounding: scipy warns, p is ~0 anyway
            warnings.simplefilter("ignore", RuntimeWarning)
            return float(ttest_rel(xb, xa).pvalue) if n > 1 else math.nan
    if test == "wilcoxon":
        from scipy.stats import wilcoxon

        return float(wilcoxon(xb, xa).pvalue)
    if test == "randomization":
        return (1 + _sign_flip_exceedances(d, n_resamples, seed, chunk_size)) / (1 + n_resamples)
    return math.nan  # bootstrap: filled from the shared resamples in compare()


# --------------------------------------------------------------------------------------------
# letters


def run_letter(i: int) -> str:
    """0 → a, 25 → z, 26 → aa, ... (ranx-style labels by run order)."""
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(97 + r) + s
    return s


def letters(compare_frame: pl.DataFrame, runs=None, test: str | None = None,
            correction: str | None = None, alpha: float | None = None) -> tuple[pl.DataFrame, str]:
    """For each run, metric and k, the letters of the runs it is significantly better than.

    Run X beats run Y when their comparison is ``significant`` and X's mean is strictly higher
    (mean_a/mean_b of that row). Letters a, b, c... follow ``runs`` (default: order of first
    appearance in run_a, run_b). Returns (frame with run, letter, metric, k, better_than) and a
    footnote explaining the letters; test/correction/alpha only fill in the footnote.
    """
    if runs is None:
        runs = list(dict.fromkeys(v for a, b in zip(compare_frame["run_a"], compare_frame["run_b"]) for v in (a, b)))
    letter = {r: run_letter(i) for i, r in enumerate(runs)}
    sep = "," if len(runs) > 26 else ""  # past z the letters have two characters: "aa,b" is not "a,a,b"
    beats: dict = {}
    for row in compare_frame.iter_rows(named=True):
        if not row["significant"] or row["mean_a"] == row["mean_b"]:
            continue
        win, lose = (row["run_a"], row["run_b"]) if row["mean_a"] > row["mean_b"] else (row["run_b"], row["run_a"])
        beats.setdefault((win, row["metric"], row["k"]), set()).add(lose)
    mk = compare_frame.select("metric", "k").unique(maintain_order=True).rows()
    out = pl.DataFrame(
        [(r, letter[r], m, k, sep.join(letter[x] for x in runs if x in beats.get((r, m, k), ())))
         for r in runs for m, k in mk],
        schema={"run": pl.String, "letter": pl.String, "metric": pl.String, "k": pl.Int64,
                "better_than": pl.String}, orient="row")
    how = ", ".join(p for p in (
        f"{test} test" if test else None,
        f"{correction} correction within each metric and k" if correction else
        ("no multiple-comparison correction" if test else None),
        f"adjusted p < {alpha}" if alpha is not None else None) if p)
    footnote = ("Runs: " + ", ".join(f"{letter[r]} = {r}" for r in runs) + ". Letters after a value name the "
                "runs it is significantly better than (paired over users, higher mean"
                + (f"; {how}" if how else "") + ").")
    return out, footnote


# --------------------------------------------------------------------------------------------
# helpers


@contextlib.contextmanager
def _all_nan_is_nan():
    """A column with no value (a run or segment without users) has NaN quantiles, silently."""
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)
        yield


def _nanmean(v: np.ndarray) -> float:
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else math.nan


def _check_choice(value, allowed, name):
    if value not in allowed:
        raise ParameterError(f"{name}={value!r} is not one of {', '.join(map(repr, allowed))}.",
                             hint=did_you_mean(value, allowed) + f"pass {name}= one of {', '.join(map(repr, allowed))}.")


def _check_level(value, name):
    if not (isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and 0 < value < 1):
        raise ParameterError(f"{name}={value!r} must be a number strictly between 0 and 1.",
                             hint=f"e.g. {name}={0.95 if name == 'confidence' else 0.05}.")


def _check_seed(seed):
    if not (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0):
        raise ParameterError(f"seed={seed!r} must be an integer >= 0.", hint="e.g. seed=0; the same seed gives the same result.")


def _free(name: str, taken) -> str:
    """``name``, or ``name`` with more underscores, that is not in ``taken`` (a helper column's name)."""
    while name in taken:
        name += "_"
    return name


def _check_resamples(n):
    if not (isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1):
        raise ParameterError(f"n_resamples={n!r} must be a positive integer.", hint="e.g. n_resamples=10_000.")
