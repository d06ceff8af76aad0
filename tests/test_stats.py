"""rankwise.inference.stats: t intervals, corrections, bootstrap and paired tests against independent oracles.

Oracles: scipy (ttest_rel, wilcoxon, t.interval, stats.bootstrap), hand-computed Holm/Bonferroni,
exact enumeration of all sign vectors, naive re-implementations of the documented random streams,
and ranx's Fisher randomization test run in the live conformance venv.
"""

import itertools
import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.stats

from rankwise.inference import stats
from rankwise.errors import DuplicateUserError, MissingColumnError, ParameterError

RUNS = ("pop", "als", "ease")
# the venvs' root, as .ci/run and tests/conformance/make_fixtures.py name it
LIVE_PY = Path(os.environ.get("RANKWISE_CONFORMANCE_VENVS", Path.home() / ".cache" / "rankwise-conformance" / "venvs")) \
    / "live" / "bin" / "python"


def _data(n=120, seed=3):
    """Per run {k: {metric: array over users 0..n-1}} with ties, zero differences and NaNs."""
    rng = np.random.default_rng(seed)
    base = rng.random(n)
    out = {}
    for j, run in enumerate(RUNS):
        out[run] = {}
        for k in (5, 10):
            v = np.clip(base + 0.04 * j + rng.normal(0, 0.15, n), 0, 1)
            v[: n // 4] = base[: n // 4]            # a quarter of users: identical across runs (d = 0)
            grid = np.round(v * 5) / 5              # heavy ties
            v[rng.random(n) < 0.08] = np.nan        # undefined for some users
            grid[np.isnan(v)] = np.nan
            out[run][k] = {"ndcg": v, "precision": grid}
    return out


def _long(data, shuffle_seed=0):
    frames = [pl.DataFrame({"run": run, "user": np.arange(len(m["ndcg"])) * 7 + 1, "k": k, **m})
              for run, ks in data.items() for k, m in ks.items()]
    long = pl.concat(frames).with_columns(pl.col("k").cast(pl.Int64))
    return long.sample(fraction=1.0, shuffle=True, seed=shuffle_seed)  # row order must not matter


def _row(frame, **key):
    sel = frame.filter(*[pl.col(c) == v for c, v in key.items()])
    assert sel.height == 1, key
    return sel.row(0, named=True)


# ------------------------------------------------------------------------------- t, wilcoxon


@pytest.mark.parametrize("test,oracle", [("t", scipy.stats.ttest_rel), ("wilcoxon", scipy.stats.wilcoxon)])
def test_pvalues_equal_scipy_on_paired_users(test, oracle):
    data = _data()
    res = stats.compare(_long(data), "user", ["ndcg", "precision"], test=test, correction=None, runs=RUNS)
    assert res.height == 2 * 2 * 3
    for (a, b), k, m in itertools.product(itertools.combinations(RUNS, 2), (5, 10), ("ndcg", "precision")):
        xa, xb = data[a][k][m], data[b][k][m]
        ok = ~np.isnan(xa) & ~np.isnan(xb)
        d = xb[ok] - xa[ok]
        row = _row(res, run_a=a, run_b=b, metric=m, k=k)
        assert row["n_users"] == ok.sum() < len(xa)
        assert row["p_value"] == pytest.approx(oracle(xb[ok], xa[ok]).pvalue, abs=1e-12, rel=1e-12)
        assert row["p_adjusted"] == row["p_value"]
        assert row["mean_a"] == pytest.approx(xa[ok].mean(), rel=1e-12)
        assert row["mean_b"] == pytest.approx(xb[ok].mean(), rel=1e-12)
        assert row["diff"] == pytest.approx(d.mean(), rel=1e-12, abs=1e-15)
        assert row["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12, abs=1e-15)
        lo, hi = scipy.stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=d.std(ddof=1) / math.sqrt(len(d)))
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi), rel=1e-12, abs=1e-15)
        assert row["significant"] == (row["p_value"] < 0.05)


@pytest.mark.parametrize("test", stats.TESTS)
def test_identical_runs_give_p_one(test):
    v = np.array([0.1, 0.5, 0.5, 0.0, 1.0])
    long = pl.DataFrame({"run": ["a"] * 5 + ["b"] * 5, "user": list(range(5)) * 2, "k": [10] * 10,
                         "m": np.concatenate([v, v])})
    row = stats.compare(long, "user", ["m"], test=test, n_resamples=200).row(0, named=True)
    assert (row["p_value"], row["p_adjusted"], row["diff"], row["significant"]) == (1.0, 1.0, 0.0, False)
    assert math.isnan(row["effect_size"])


def test_baseline_pairs_and_no_paired_users():
    long = pl.DataFrame({"run": ["a", "a", "b", "b", "c", "c"], "user": [1, 2] * 3, "k": [3] * 6,
                         "m": [0.2, 0.4, 0.6, 1.0, float("nan"), float("nan")]})
    res = stats.compare(long, "user", "m", baseline="b")
    assert res.select("run_a", "run_b").rows() == [("b", "a"), ("b", "c")]
    ba = res.row(0, named=True)
    assert ba["diff"] == pytest.approx(0.3 - 0.8) and ba["n_users"] == 2
    bc = res.row(1, named=True)
    assert bc["n_users"] == 0 and math.isnan(bc["p_value"]) and math.isnan(bc["p_adjusted"])
    assert bc["significant"] is False
    # the NaN p-value is left out of the family: Holm over one p-value leaves it unchanged
    assert ba["p_adjusted"] == pytest.approx(ba["p_value"])


# ------------------------------------------------------------------------------- t interval


def test_t_interval_matches_scipy_and_nan_below_two():
    mean, sd, n = np.array([0.3, 0.5, 0.7, 0.1]), np.array([0.2, 0.1, 0.05, 0.3]), np.array([2, 10, 1000, 1])
    for c in (0.9, 0.95, 0.99):
        lo, hi = stats.t_interval(mean, sd, n, confidence=c)
        for i in range(3):
            assert (lo[i], hi[i]) == pytest.approx(
                scipy.stats.t.interval(c, n[i] - 1, loc=mean[i], scale=sd[i] / math.sqrt(n[i])), rel=1e-13)
        assert math.isnan(lo[3]) and math.isnan(hi[3])


def test_summary_stats_and_t_interval_as_polars_expressions():
    df = pl.DataFrame({"g": ["x"] * 5 + ["y"] * 2 + ["z"], "v": [0.1, 0.4, float("nan"), 0.9, 0.3, 0.5, None, 0.7]})
    lo, hi = stats.t_interval(pl.col("mean"), pl.col("sd"), pl.col("n"), confidence=0.9)
    out = (df.group_by("g").agg(*stats.summary_stats_exprs("v"))
           .with_columns(lo.alias("lo"), hi.alias("hi")).sort("g"))
    x = np.array([0.1, 0.4, 0.9, 0.3])
    r = out.row(0, named=True)
    assert (r["mean"], r["sd"], r["n"]) == pytest.approx((x.mean(), x.std(ddof=1), 4), rel=1e-14)
    assert (r["lo"], r["hi"]) == pytest.approx(
        scipy.stats.t.interval(0.9, 3, loc=x.mean(), scale=x.std(ddof=1) / 2), rel=1e-13)
    for g in ("y", "z"):  # one value: sd, lo, hi NaN
        r = out.filter(pl.col("g") == g).row(0, named=True)
        assert r["n"] == 1 and math.isnan(r["sd"]) and math.isnan(r["lo"]) and math.isnan(r["hi"])


# ------------------------------------------------------------------------------- corrections


def test_holm_and_bonferroni_by_hand():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> running max 0.06
    assert stats.adjust_pvalues(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.adjust_pvalues(p, "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 0.02])
    assert stats.adjust_pvalues(p, None) == pytest.approx(p)
    assert stats.adjust_pvalues([0.3, 0.2, 0.9], "holm") == pytest.approx([0.6, 0.6, 0.9])
    got = stats.adjust_pvalues([0.02, float("nan"), 0.5], "bonferroni")  # NaN: not counted, stays NaN
    assert got[0] == pytest.approx(0.04) and math.isnan(got[1]) and got[2] == 1.0


def test_compare_corrects_within_each_metric_and_k():
    res = stats.compare(_long(_data()), "user", ["ndcg", "precision"], test="t", correction="holm", alpha=0.1)
    assert res.height == 12
    for (m, k), fam in res.group_by("metric", "k"):
        p = fam.get_column("p_value").to_list()
        order = sorted(range(3), key=p.__getitem__)
        expected, running = [0.0] * 3, 0.0
        for rank, i in enumerate(order):           # Holm written out for three p-values
            running = max(running, min(1.0, (3 - rank) * p[i]))
            expected[i] = running
        assert fam.get_column("p_adjusted").to_list() == pytest.approx(expected, rel=1e-12)
        assert fam.get_column("significant").to_list() == [q < 0.1 for q in expected]


# ------------------------------------------------------------------------------- randomization


def _naive_sign_flip_p(d, n_resamples, seed):
    """The documented stream, written plainly: signs from unpacked PCG64 raw bits, users with d != 0."""
    d = d[d != 0]
    words = -(-d.size // 64)
    raw = np.random.PCG64(seed).random_raw(n_resamples * words).reshape(n_resamples, words).astype("<u8")
    bits = np.unpackbits(raw.view(np.uint8), axis=1, bitorder="little")[:, : d.size]
    stat = (2.0 * bits - 1.0) @ d
    return (1 + np.count_nonzero(np.abs(stat) >= abs(d.sum()) * (1 - 1e-12))) / (1 + n_resamples)


def _pair_frame(xa, xb):
    n = len(xa)
    return pl.DataFrame({"run": ["a"] * n + ["b"] * n, "user": list(range(n)) * 2, "k": [10] * (2 * n),
                         "m": np.concatenate([xa, xb])})


def test_randomization_follows_documented_stream_and_ignores_chunking():
    rng = np.random.default_rng(11)
    xa = rng.random(150)
    xb = xa + rng.normal(0.03, 0.2, 150)
    xb[:20] = xa[:20]  # zero differences are skipped by the stream
    long = _pair_frame(xa, xb)
    ps = {cs: stats.compare(long, "user", "m", test="randomization", seed=5, n_resamples=3000,
                            chunk_size=cs)["p_value"][0] for cs in (None, 1, 7, 3000)}
    assert len(set(ps.values())) == 1
    assert ps[None] == _naive_sign_flip_p(xb - xa, 3000, 5)
    other = stats.compare(long, "user", "m", test="randomization", seed=6, n_resamples=3000)["p_value"][0]
    assert other != ps[None]


def test_randomization_converges_to_exact_enumeration():
    d = np.array([0.3, -0.1, 0.25, 0.4, -0.05, 0.2, 0.15, 0.1, 0.05, -0.2])
    exact = np.mean([abs(np.dot(s, d)) >= abs(d.sum()) - 1e-12 for s in itertools.product((-1, 1), repeat=d.size)])
    b = 40_000
    p = stats.compare(_pair_frame(np.zeros(d.size), d), "user", "m", test="randomization",
                      n_resamples=b, seed=1)["p_value"][0]
    assert abs(p - exact) < 4 * math.sqrt(exact * (1 - exact) / b) + 2 / b


@pytest.mark.skipif(not LIVE_PY.exists() and os.environ.get("CI", "").lower() not in ("1", "true", "yes"), reason=f"no live ranx venv at {LIVE_PY} (tests/conformance README builds it)")
def test_randomization_agrees_with_ranx_fisher():
    rng = np.random.default_rng(2024)
    control = rng.random(80)
    treatment = np.clip(control + rng.normal(0.03, 0.15, 80), 0, 1)
    b = 20_000
    script = ("import json, sys, numpy as np\n"
              "from ranx.statistical_tests import fisher_randomization_test\n"
              "a = json.load(sys.stdin)\n"
              "p, _ = fisher_randomization_test(np.array(a['c']), np.array(a['t']), a['b'], 0.01, 42)\n"
              "print(json.dumps(float(p)))\n")
    out = subprocess.run([str(LIVE_PY), "-c", script], input=json.dumps({"c": control.tolist(),
                         "t": treatment.tolist(), "b": b}), capture_output=True, text=True, timeout=600, check=True)
    p_ranx = json.loads(out.stdout.strip().splitlines()[-1])  # ranx: #{>=} / B, no +1
    p_ours = stats.compare(_pair_frame(control, treatment), "user", "m", test="randomization",
                           n_resamples=b, seed=0)["p_value"][0]
    assert 0.01 < p_ranx < 0.5  # a p-value where the agreement means something
    p_ours_unplussed = (p_ours * (1 + b) - 1) / b
    assert abs(p_ours_unplussed - p_ranx) < 4 * math.sqrt(2 * p_ranx * (1 - p_ranx) / b)


# ------------------------------------------------------------------------------- bootstrap


def _naive_boot_means(d, n_resamples, seed):
    """The documented stream, written plainly: one spawned PCG64 per resample, indices, mean."""
    kids = np.random.SeedSequence(seed).spawn(n_resamples)
    return np.array([d[np.random.Generator(np.random.PCG64(c)).integers(0, d.size, d.size)].mean() for c in kids])


def test_compare_bootstrap_follows_documented_stream():
    rng = np.random.default_rng(8)
    xa = rng.random(90)
    xb = xa + rng.normal(0.05, 0.2, 90)
    b = 1500
    row = stats.compare(_pair_frame(xa, xb), "user", "m", test="bootstrap", n_resamples=b, seed=3,
                        confidence=0.9, chunk_size=64).row(0, named=True)
    d = xb - xa
    boot = _naive_boot_means(d, b, 3)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(np.quantile(boot, [0.05, 0.95])), rel=1e-12)
    shifted_p = (1 + np.count_nonzero(np.abs(boot - d.mean()) >= abs(d.mean()))) / (1 + b)
    assert row["p_value"] == pytest.approx(shifted_p, rel=1e-12)
    assert row["ci_low"] < row["diff"] < row["ci_high"]


def test_a_pair_resamples_its_own_users_whatever_other_runs_scored():
    """The pair (a, b) has 8 users in common; run c scored 300. Its bootstrap row is the documented stream
    over those 8 paired users (and so the same with or without c); a run's interval resamples its own users."""
    xa = np.array([.2, .5, .1, .4, .3, .6, .2, .5])
    xb = np.array([.4, .6, .3, .5, .2, .9, .4, .6])
    c = np.random.default_rng(0).random(300)
    long = pl.DataFrame({"run": ["a"] * 8 + ["b"] * 8 + ["c"] * 300, "user": [*range(8), *range(8), *range(300)],
                         "k": 10, "m": [*xa, *xb, *c]})
    b, d = 400, xb - xa
    boot = _naive_boot_means(d, b, 0)
    for frame in (stats.compare(long, "user", "m", test="bootstrap", n_resamples=b),
                  stats.compare(long, "user", "m", test="bootstrap", n_resamples=b, runs=["a", "b"])):
        row = frame.filter((pl.col("run_a") == "a") & (pl.col("run_b") == "b")).row(0, named=True)
        assert row["n_users"] == 8
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(np.quantile(boot, [0.025, 0.975])), rel=1e-12)
        assert row["p_value"] == pytest.approx(
            (1 + np.count_nonzero(np.abs(boot - d.mean()) >= abs(d.mean()) - 1e-9 * np.abs(d).mean())) / (1 + b))
    one = stats.bootstrap(long, "user", "m", b).filter(pl.col("run") == "b").row(0, named=True)
    assert (one["ci_low"], one["ci_high"]) == pytest.approx(
        tuple(np.quantile(_naive_boot_means(xb, b, 0), [0.025, 0.975])), rel=1e-12)


def test_ks_selects_the_cutoffs_of_a_frame_with_more():
    long = pl.DataFrame({"run": ["a", "b"] * 4, "user": [1, 1, 2, 2] * 2, "k": [5] * 4 + [10] * 4,
                         "ndcg": [.1, .4, .3, .5, .2, .6, .3, .7]})
    five = long.filter(pl.col("k") == 5)
    assert stats.bootstrap(long, "user", "ndcg", 50, ks=[5]).equals(stats.bootstrap(five, "user", "ndcg", 50))
    assert stats.compare(long, "user", "ndcg", ks=[5]).equals(stats.compare(five, "user", "ndcg"))


def test_levels_may_be_numpy_numbers():
    long = _pair_frame(np.array([.1, .4, .2, .8]), np.array([.3, .5, .2, .9]))
    assert stats.compare(long, "user", "m", alpha=np.float32(0.05), confidence=np.float64(0.9)).equals(
        stats.compare(long, "user", "m", alpha=0.05, confidence=0.9))
    with pytest.raises(ParameterError, match="strictly between"):
        stats.compare(long, "user", "m", alpha=np.float64(1.5))


def test_bca_counts_resampled_means_equal_to_the_mean_as_ties():
    """Values in tenths (precision@10): many resampled means equal the observed one exactly, which float
    sums put on either side of it. z0 from exact integer sums over the same draws (the documented rule)."""
    from scipy.special import ndtr, ndtri

    ints = np.array([3, 0, 7, 10, 3, 3, 7, 0, 10, 3, 7, 7, 0, 3, 10])
    x, n, b = ints / 10, ints.size, 500
    lib = stats.bootstrap(pl.DataFrame({"run": "a", "user": range(n), "k": 10, "m": x}), "user", "m", b, seed=3,
                          method="bca").row(0, named=True)
    kids = np.random.SeedSequence(3).spawn(b)
    draws = [np.random.Generator(np.random.PCG64(c)).integers(0, n, n) for c in kids]
    sums = np.array([ints[i].sum() for i in draws])
    below, ties = (sums < ints.sum()).sum(), (sums == ints.sum()).sum()
    assert ties > 5  # the case this test is about
    jack = np.array([np.delete(x, i).mean() for i in range(n)])
    u = jack.mean() - jack
    a = (u ** 3).sum() / (6 * (u @ u) ** 1.5)
    z0 = ndtri((2 * below + ties) / (2 * b))
    levels = [ndtr(z0 + (z0 + z) / (1 - a * (z0 + z))) for z in (ndtri(0.025), ndtri(0.975))]
    boot = np.array([x[i].mean() for i in draws])
    assert (lib["ci_low"], lib["ci_high"]) == pytest.approx(tuple(np.quantile(boot, levels)), rel=1e-12)


def test_bootstrap_reproducible_brackets_mean_and_matches_scipy():
    data = _data(n=200)
    long = _long(data)
    b = 3000
    res = {meth: stats.bootstrap(long, "user", ["ndcg", "precision"], n_resamples=b, seed=9, method=meth, runs=RUNS)
           for meth in stats.BOOTSTRAP_METHODS}
    again = stats.bootstrap(_long(data, shuffle_seed=1), "user", ["ndcg", "precision"], n_resamples=b, seed=9,
                            chunk_size=17, runs=RUNS)
    assert again.equals(res["percentile"]) or np.allclose(again["ci_low"], res["percentile"]["ci_low"], rtol=1e-13)
    other = stats.bootstrap(long, "user", ["ndcg"], n_resamples=b, seed=10, runs=RUNS)
    assert not np.allclose(other["ci_low"], res["percentile"].filter(pl.col("metric") == "ndcg")["ci_low"])
    for meth, frame in res.items():
        assert frame.height == 3 * 2 * 2
        assert frame.select("run").unique(maintain_order=True)["run"].to_list() == list(RUNS)
        assert (frame["ci_low"] < frame["value"]).all() and (frame["value"] < frame["ci_high"]).all()
    # one column without NaNs against scipy.stats.bootstrap (independent RNG: Monte Carlo tolerance)
    x = data["als"][10]["ndcg"]
    x = x[~np.isnan(x)]
    only = pl.DataFrame({"run": "als", "user": np.arange(x.size), "k": 10, "ndcg": x}).with_columns(
        pl.col("k").cast(pl.Int64))
    se = x.std(ddof=1) / math.sqrt(x.size)
    for meth, sp in (("percentile", "percentile"), ("basic", "basic"), ("bca", "BCa")):
        mine = stats.bootstrap(only, "user", ["ndcg"], n_resamples=b, seed=1, method=meth).row(0, named=True)
        assert mine["value"] == pytest.approx(x.mean()) and mine["n_users"] == x.size
        ref = scipy.stats.bootstrap((x,), np.mean, n_resamples=b, method=sp, random_state=1).confidence_interval
        assert abs(mine["ci_low"] - ref.low) < 0.3 * se and abs(mine["ci_high"] - ref.high) < 0.3 * se


def test_bca_matches_scipy_on_skewed_values():
    # lognormal: BCa's skew corrections move the upper end by about one standard error
    x = np.random.default_rng(1).lognormal(0, 1.5, 40)
    only = pl.DataFrame({"run": "a", "user": np.arange(x.size), "k": 10, "m": x}).with_columns(
        pl.col("k").cast(pl.Int64))
    se = x.std(ddof=1) / math.sqrt(x.size)
    mine = stats.bootstrap(only, "user", ["m"], n_resamples=4000, seed=1, method="bca").row(0, named=True)
    ref = scipy.stats.bootstrap((x,), np.mean, n_resamples=4000, method="BCa", random_state=1).confidence_interval
    assert abs(mine["ci_low"] - ref.low) < 0.4 * se and abs(mine["ci_high"] - ref.high) < 0.4 * se


# ------------------------------------------------------------------------------- letters


def test_letters_by_hand():
    cmp = pl.DataFrame({
        "run_a": ["pop", "pop", "als", "pop"], "run_b": ["als", "ease", "ease", "als"],
        "metric": ["ndcg", "ndcg", "ndcg", "recall"], "k": [10, 10, 10, 10],
        "mean_a": [0.2, 0.2, 0.4, 0.5], "mean_b": [0.4, 0.3, 0.3, 0.1],
        "significant": [True, False, True, True]})
    tie = pl.DataFrame({"run_a": ["als"], "run_b": ["ease"], "metric": ["recall"], "k": [10], "mean_a": [0.3],
                        "mean_b": [0.3], "significant": [True]})  # equal means: nobody is better
    cmp = pl.concat([cmp, tie])
    table, note = stats.letters(cmp, test="t", correction="holm", alpha=0.05)
    got = {(r, m): s for r, m, s in table.select("run", "metric", "better_than").rows()}
    assert got == {("pop", "ndcg"): "", ("als", "ndcg"): "ac", ("ease", "ndcg"): "",
                   ("pop", "recall"): "b", ("als", "recall"): "", ("ease", "recall"): ""}
    assert table.filter(pl.col("run") == "ease")["letter"][0] == "c"
    assert "a = pop, b = als, c = ease" in note and "holm" in note and "0.05" in note
    assert [stats.run_letter(i) for i in (0, 25, 26, 27)] == ["a", "z", "aa", "ab"]


def test_letters_past_z_are_separated():
    """With 28 runs run 'a' better than runs 26 (aa) and 27 (ab) read 'aaab': a, a, a, b or aa, ab?
    Past 26 runs the letters are comma-separated."""
    runs = [f"r{i}" for i in range(28)]
    cmp = pl.DataFrame({"run_a": ["r0"] * 27, "run_b": runs[1:], "metric": ["ndcg"] * 27, "k": [10] * 27,
                        "mean_a": [0.5] * 27, "mean_b": [0.1] * 27, "significant": [i in (26, 27) for i in range(1, 28)]})
    table, _ = stats.letters(cmp, runs=runs)
    assert table.filter(pl.col("run") == "r0")["better_than"].item() == "aa,ab"
    few, _ = stats.letters(cmp.head(3).with_columns(significant=pl.lit(True)), runs=runs[:4])
    assert few.filter(pl.col("run") == "r0")["better_than"].item() == "bcd"


# ------------------------------------------------------------------------------- errors


def test_bad_input_raises_typed_errors_with_hints():
    long = _long(_data(n=20))
    with pytest.raises(MissingColumnError, match="'mrr'") as e:
        stats.compare(long, "user", ["mrr"])
    assert "Hint:" in str(e.value)
    with pytest.raises(DuplicateUserError, match="more than once") as e:
        stats.bootstrap(pl.concat([long, long.head(1)]), "user", ["ndcg"])
    assert "Hint:" in str(e.value)
    for kwargs in ({"test": "fisher"}, {"correction": "bh"}, {"alpha": 1.5}, {"baseline": "nope"},
                   {"test": "randomization", "n_resamples": 0}):
        with pytest.raises(ParameterError) as e:
            stats.compare(long, "user", ["ndcg"], **kwargs)
        assert "Hint:" in str(e.value)
    with pytest.raises(ParameterError, match="unknown run"):
        stats.compare(long, "user", ["ndcg"], runs=["pop", "svd"])
    with pytest.raises(ParameterError, match="at least two runs"):
        stats.compare(long.filter(pl.col("run") == "pop"), "user", ["ndcg"])
    with pytest.raises(ParameterError, match="method"):
        stats.bootstrap(long, "user", ["ndcg"], method="bc")


# ------------------------------------------------------------------------------- review, stop 27


def test_bootstrap_test_and_interval_of_one_user_are_nan():
    """The shifted-null bootstrap gave p = 1/(B + 1), "significant", for one user (|mean* - mean| is
    always 0 < |mean|), and bootstrap() a zero-width interval: both NaN below two users, like t."""
    xa, xb = np.array([0.1]), np.array([0.5])
    row = stats.compare(_pair_frame(xa, xb), "user", "m", test="bootstrap", n_resamples=500).row(0, named=True)
    assert math.isnan(row["p_value"]) and row["significant"] is False
    assert math.isnan(row["ci_low"]) and math.isnan(row["ci_high"])
    one = stats.bootstrap(_pair_frame(xa, xb), "user", "m", n_resamples=50)
    assert one["ci_low"].is_nan().all() and one["ci_high"].is_nan().all()


def test_bootstrap_p_value_counts_exact_ties_whatever_the_chunking():
    """Values on a 0.01 grid: a resample whose mean difference lies exactly on the rejection boundary
    (|mean* - mean| = |mean|) counted or not as float rounding fell, differently by chunk_size (which
    orders the sums): p = 0.0485 against the exact 0.0535 here, significant at 0.05 or not."""
    rng = np.random.default_rng(4)
    d = rng.integers(-3, 4, 60) / 100
    xa = np.round(rng.random(60), 2)
    ps = {cs: stats.compare(_pair_frame(xa, xa + d), "user", "m", test="bootstrap", n_resamples=2000, seed=1,
                            chunk_size=cs).row(0, named=True)["p_value"] for cs in (None, 1, 7)}
    # the oracle: the documented stream, counted in integer hundredths (exact)
    hundredths = np.rint(d * 100).astype(np.int64)
    kids = np.random.SeedSequence(1).spawn(2000)
    sums = np.array([hundredths[np.random.Generator(np.random.PCG64(c)).integers(0, 60, 60)].sum() for c in kids])
    exact = (1 + np.count_nonzero(np.abs(sums - hundredths.sum()) >= abs(hundredths.sum()))) / 2001
    assert exact > 0.05 and ps == {None: exact, 1: exact, 7: exact}


def test_effect_size_of_constant_differences_is_nan_without_warnings():
    """Differences that are all 0.1 up to float rounding had sd 1.5e-17 and effect_size 6.6e15, and
    scipy's 'catastrophic cancellation' RuntimeWarning reached the user."""
    import warnings

    xa = np.array([0.0, 0.1, 0.2, 0.3, 0.7, 0.9])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        row = stats.compare(_pair_frame(xa, xa + 0.1), "user", "m").row(0, named=True)
    assert row["diff"] == pytest.approx(0.1) and math.isnan(row["effect_size"])


@pytest.mark.parametrize("user_col", ["len", "_u", "_n"])
def test_any_user_column_name(user_col):
    """A user column named 'len' or '_u' met the helper columns of the pairing: Polars DuplicateError."""
    long = _pair_frame(np.array([0.1, 0.2, 0.4]), np.array([0.3, 0.2, 0.9])).rename({"user": user_col})
    row = stats.compare(long, user_col, "m").row(0, named=True)
    assert row["n_users"] == 3 and row["diff"] == pytest.approx((0.2 + 0.0 + 0.5) / 3)
    assert stats.bootstrap(long, user_col, "m", n_resamples=20)["n_users"].to_list() == [3, 3]


def test_seeds_are_checked():
    long = _pair_frame(np.array([0.1, 0.2, 0.4]), np.array([0.3, 0.2, 0.9]))
    for seed in (-1, "x", 1.5):
        with pytest.raises(ParameterError, match="seed"):
            stats.bootstrap(long, "user", "m", n_resamples=10, seed=seed)
        with pytest.raises(ParameterError, match="seed"):
            stats.compare(long, "user", "m", test="bootstrap", n_resamples=10, seed=seed)


def test_no_evaluated_user_gives_nan_rows():
    """Runs in which no user is evaluated: compare, table and bootstrap raised numpy's ValueError
    ('need at least one array to concatenate'), while the summary has NaN rows."""
    import rankwise

    recs = pl.DataFrame({"user": [1], "item": [5], "rank": [1]}).head(0)
    truth = pl.DataFrame({"user": [1, 2], "item": [5, 6]})
    res = rankwise.evaluate({"a": recs, "b": recs}, truth, k=[5, 10], metrics=["ndcg"],
                            convention=rankwise.PRESETS["default"].replace(users="predictions"))
    pairs = res.compare()
    assert pairs.select("k", "n_users").rows() == [(5, 0), (10, 0)] and pairs["p_value"].is_nan().all()
    boot = res.bootstrap(10)
    assert boot.height == 4 and boot["ci_low"].is_nan().all() and (boot["n_users"] == 0).all()
    assert "nan" in res.table().text()


def test_result_compare_and_table_arguments():
    import rankwise

    recs = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rank": [1, 2, 1]})
    truth = pl.DataFrame({"user": [1, 2], "item": [11, 12]})
    one = rankwise.evaluate(recs, truth, k=2, metrics=["precision"])
    with pytest.raises(ParameterError, match="one run"):
        one.compare()
    two = rankwise.evaluate({"a": recs, "b": recs}, truth, k=2, metrics=["precision"])
    with pytest.raises(ParameterError, match="digits"):
        two.table(digits=-1)


def test_result_compare_reads_metric_names_as_evaluate_does():
    import rankwise

    truth = pl.DataFrame({"user": [1, 2, 3, 4], "item": [1, 2, 3, 4]})
    a = pl.DataFrame({"user": [1, 2, 3, 4], "item": [1, 2, 9, 9], "rank": 1})
    b = pl.DataFrame({"user": [1, 2, 3, 4], "item": [1, 9, 9, 9], "rank": 1})
    res = rankwise.evaluate({"a": a, "b": b}, truth, k=1, metrics=["NDCG", "Recall"])
    assert res.compare(metrics=[" NDCG", "Recall"]).equals(res.compare(metrics=["ndcg", "recall"]))
    assert res.bootstrap(50, metrics="NDCG").equals(res.bootstrap(50, metrics="ndcg"))
    for wrong in ("recal", "ndcg@1", "map"):  # a typo, a cutoff in the name, a metric not evaluated
        with pytest.raises(ParameterError, match="not in this result") as info:
            res.compare(metrics=[wrong])
        assert "catalog" not in str(info.value).lower()


def test_table_says_when_the_letters_pair_fewer_users_than_the_means():
    """Under users='predictions', run a scored 4 users and run b 2 of them: the letters come from the
    paired means (b better over users 1, 2), the cells show each run's own mean (a's 4 users); the
    footnote said nothing, so the table read 'b better' beside a higher mean for a, or the reverse."""
    import rankwise

    a = pl.DataFrame({"user": [1, 2, 3, 4], "item": [9, 9, 30, 40], "rank": [1, 1, 1, 1]})
    b = pl.DataFrame({"user": [1, 2], "item": [10, 20], "rank": [1, 1]})
    truth = pl.DataFrame({"user": [1, 2, 3, 4], "item": [10, 20, 30, 40]})
    res = rankwise.evaluate({"a": a, "b": b}, truth, k=1, metrics=["precision"],
                            convention=rankwise.PRESETS["default"].replace(users="predictions"))
    text = res.table(test="t", correction=None).text()
    # by hand: a's mean over its 4 users = (0 + 0 + 1 + 1) / 4 = 0.5; b's over its 2 users = 1; paired (1, 2): 0 vs 1
    assert "0.5000" in text and "1.0000" in text
    assert "pairs only the users both runs scored (down to 2 users)" in text


# -- intervals within the metric's range (issue 37) -----------------------------------------------


def test_within_range_clips_each_metric_to_its_bounds_and_a_difference_to_twice_them():
    frame = pl.DataFrame({"metric": ["recall", "dcg", "recall", "other"], "ci_low": [-0.137, -0.5, 0.2, -9.0],
                          "ci_high": [1.387, 7.0, float("nan"), 9.0]})
    bounds = {"recall": (0.0, 1.0), "dcg": (0.0, None), "other": (None, None)}
    out = stats.within_range(frame, bounds.get)
    assert out.select("ci_low", "ci_high").rows()[:2] == [(0.0, 1.0), (0.0, 7.0)]
    assert out["ci_low"][2] == 0.2 and math.isnan(out["ci_high"][2])  # NaN stays NaN
    assert out.row(3) == ("other", -9.0, 9.0)
    diff = stats.within_range(frame, bounds.get, difference=True)  # recall - recall lies in [-1, 1]
    assert diff.select("ci_low", "ci_high").rows()[:2] == [(-0.137, 1.0), (-0.5, 7.0)]


def _four_users():
    """Recall@2 of 4 users by hand: 1, 1, 1/2, 0; DCG@2 (binary gain, log2): 1, 1, 1, 0."""
    recs = pl.DataFrame({"user": [1, 2, 3, 3, 4], "item": [1, 1, 1, 2, 5], "rank": [1, 1, 1, 2, 1]})
    truth = pl.DataFrame({"user": [1, 2, 3, 3, 4], "item": [1, 1, 1, 3, 6]})
    return recs, truth


def test_the_summary_interval_of_recall_over_four_users_stays_in_0_1(backend):
    """Recall over 4 users printed 0.625 [-0.137, 1.387]."""
    import rankwise

    recs, truth = _four_users()
    conv = rankwise.Convention(gain="binary", log_base=2.0)
    res = rankwise.evaluate(recs, truth, k=2, metrics=["recall", "dcg"], convention=conv, backend=backend)
    rows = {r["metric"]: r for r in res.summary.iter_rows(named=True)}
    low, high = scipy.stats.t.interval(0.95, 3, loc=0.625, scale=scipy.stats.sem([1, 1, 0.5, 0]))
    assert low < 0 and high > 1  # the t interval leaves [0, 1]
    assert rows["recall"]["value"] == pytest.approx(0.625)
    assert (rows["recall"]["ci_low"], rows["recall"]["ci_high"]) == (0.0, 1.0)
    # DCG is only bounded below: 0.75 +- t * 0.5 / 2 is clipped at 0, not at 1
    low, high = scipy.stats.t.interval(0.95, 3, loc=0.75, scale=scipy.stats.sem([1, 1, 1, 0]))
    assert low < 0 and high > 1
    assert (rows["dcg"]["ci_low"], rows["dcg"]["ci_high"]) == pytest.approx((0.0, high), rel=1e-12)


def test_segment_compare_and_bootstrap_intervals_stay_in_range():
    import rankwise

    truth = pl.DataFrame({"user": [1, 2, 3, 4], "item": [1, 1, 1, 1]})
    # hit_rate@1 by hand: a = 0, 0, 1, 0; b = 1, 1, 0, 1; differences b - a: 1, 1, -1, 1
    a = pl.DataFrame({"user": [1, 2, 3, 4], "item": [2, 2, 1, 2], "rank": [1, 1, 1, 1]})
    b = pl.DataFrame({"user": [1, 2, 3, 4], "item": [1, 1, 2, 1], "rank": [1, 1, 1, 1]})
    segments = pl.DataFrame({"user": [1, 2, 3, 4], "segment": ["x"] * 4})
    res = rankwise.evaluate({"a": a, "b": b}, truth, k=1, metrics=["hit_rate"], segments=segments)
    row = res.compare(test="t").row(0, named=True)
    low, high = scipy.stats.t.interval(0.95, 3, loc=0.5, scale=scipy.stats.sem([1, 1, -1, 1]))
    assert low < -1 and high > 1  # a difference of two means in [0, 1] lies in [-1, 1]
    assert (row["diff"], row["ci_low"], row["ci_high"]) == (0.5, -1.0, 1.0)
    assert res.compare(by_segment=True).select("ci_low", "ci_high").row(0) == (-1.0, 1.0)
    seg = res.segments.filter(pl.col("run") == "a").row(0, named=True)
    low, high = scipy.stats.t.interval(0.95, 3, loc=0.25, scale=scipy.stats.sem([0, 0, 1, 0]))
    assert low < 0 and high > 1  # 0.25 +- 3.18 * 0.25 leaves [0, 1] on both sides
    assert (seg["ci_low"], seg["ci_high"]) == (0.0, 1.0)
    # the basic bootstrap interval 2 mean - q: below 0 for run a before clipping
    raw = stats.bootstrap(res.long, "user", ["hit_rate"], 2000, method="basic", runs=["a", "b"])
    assert raw.filter(pl.col("run") == "a")["ci_low"].item() < 0
    boot = res.bootstrap(2000, method="basic")
    assert boot.filter(pl.col("run") == "a")["ci_low"].item() == 0.0
    assert ((boot["ci_low"] >= 0) & (boot["ci_high"] <= 1)).all()
