"""Each beyond-accuracy preset against its library, run live on datasets/beyond.json.

Expected values are only the libraries' own outputs, stored in fixtures/<library>/beyond.json by
``python tests/conformance/make_fixtures.py --libraries <lib> --datasets beyond`` (the runners are
runners/run_<lib>_beyond.py). rankwise.evaluate must give them on backend="polars" and "duckdb":
per user where the library returns per-user values, the library's aggregate otherwise.
score_entropy is not an evaluate metric yet: it is checked through the core (rankwise.engines.beyond).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pytest

from rankwise.inputs.side import prepare_side_inputs
from rankwise.engines.polars import beyond as PB
from rankwise.engines import duckdb as D
import rankwise
from rankwise.engines import beyond as B

HERE = Path(__file__).parent
P = rankwise.PRESETS
TOL = 1e-9
# the beyond-accuracy metrics each library preset claims (in its Convention.metrics)
BEYOND_METRICS = {name: tuple(m for m in p.metrics if m in B.METRICS) for name, p in P.items()
                  if name != "default" and set(p.metrics) & set(B.METRICS)}


@dataclass(frozen=True)
class Case:
    """One library variant (a results key of its fixture) and the convention that must reproduce it."""

    library: str
    variant: str
    convention: rankwise.Convention
    items: str = "catalog"  # items=: the dataset's catalog, or "vocabulary": every item of the dataset
    # (catalog, train, recommended: RecBole's item tokens)
    view: str = "all"  # all: every list; nonempty: no empty list (the library sees only rows); full: only the
    # lists with >= 10 items (RecBole's full top-K)


CASES = [
    Case("rectools", "default", P["rectools"]),
    Case("rectools", "normalized", P["rectools"].replace(coverage_scale="ratio")),
    Case("evidently", "default", P["evidently"], view="nonempty"),  # items= given: the preset ignores it
    Case("recbole", "default", P["recbole"], items="vocabulary", view="full"),
    Case("recbole", "tail_ratio_3", P["recbole"].replace(long_tail_ratio=3.0), items="vocabulary", view="full"),
    Case("recommenders", "default", P["recommenders"]),
    Case("recommenders", "full_lists", P["recommenders"], view="full"),
    Case("replay", "default", P["replay"], view="nonempty"),
    Case("replay", "dict", P["replay"]),
    Case("replay", "polars", P["replay"], view="nonempty"),
]


def _dataset() -> dict:
    return json.loads((HERE / "datasets" / "beyond.json").read_text())


def _fixture(library: str) -> dict:
    path = HERE / "fixtures" / library / "beyond.json"
    if not path.exists():
        pytest.skip(f"no fixture {library}/beyond.json")
    return json.loads(path.read_text())


def inputs(data: dict, case: Case) -> dict:
    """The dataset as evaluate's arguments, seen as the library saw it."""
    recs = [(u, items, data_scores) for (u, items), (_, data_scores) in zip(data["recs"], data["scores"])]
    train = pl.DataFrame(data["train"], schema={"user": pl.Int64, "item": pl.Int64}, orient="row")
    vocabulary = sorted({i for _, lst, _ in recs for i in lst} | set(train["item"]) | set(data["catalog"]))
    if case.view != "all":
        recs = [r for r in recs if len(r[1]) >= (10 if case.view == "full" else 1)]
    return {
        "recommendations": pl.DataFrame({"user": [u for u, _, _ in recs], "item": [lst for _, lst, _ in recs]},
                                        schema={"user": pl.Int64, "item": pl.List(pl.Int64)}),
        "ground_truth": pl.DataFrame({"user": [u for u, _ in data["truth"]],
                                      "item": [[i for i, _ in lab] for _, lab in data["truth"]]},
                                     schema={"user": pl.Int64, "item": pl.List(pl.Int64)}),
        "train": train,
        "items": vocabulary if case.items == "vocabulary" else data["catalog"],
        "item_features": pl.DataFrame({"item": [i for i, _ in data["embeddings"]],
                                       "embedding": [v for _, v in data["embeddings"]]},
                                      schema={"item": pl.Int64, "embedding": pl.List(pl.Float64)}),
        "scored": recs,
    }


def _score_entropy(scored, ks, conv, engine: str) -> dict[int, float]:
    """score_entropy per k through the core (not an evaluate metric yet), on one engine."""
    rows = [(u, r, i, s) for u, lst, sc in scored for r, (i, s) in enumerate(zip(lst, sc), start=1)]
    rows += [(u, None, None, None) for u, lst, _ in scored if not lst]
    recs = pl.DataFrame(rows, schema={"user_id": pl.Int64, "rank": pl.Int64, "item_id": pl.Int64,
                                      "score": pl.Float64}, orient="row")
    side = prepare_side_inputs()
    if engine == "duckdb":
        with duckdb.connect() as con:
            D.register(con, recs, side, ks)
            cat = D.beyond_query(con, "beyond_catalog", conv).sort("metric", "k")
    else:
        cat = PB.polars_catalog(recs.lazy(), side, ks, conv)
    return {r["k"]: r["value"] for r in cat.filter(pl.col("metric") == "score_entropy").iter_rows(named=True)}


def _close(a, b) -> bool:
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return math.isclose(a, b, rel_tol=TOL, abs_tol=TOL)


def compare(case: Case, fixture: dict, engine: str) -> int:
    """Assert rankwise == the library for every entry of the variant; returns how many values matched."""
    results = fixture["results"][case.variant]
    wanted = {}
    for key in results:
        name, _, k = key.partition("@")
        wanted.setdefault(name, set()).add(int(k))
    ks = sorted(set().union(*wanted.values()))
    args = inputs(_dataset(), case)
    scored = args.pop("scored")
    metrics = sorted(set(wanted) - {"score_entropy"})
    conv = case.convention.replace(metrics=None)
    res = rankwise.evaluate(**args, k=ks, metrics=metrics, convention=conv, backend=engine)
    per_user = {r["user"]: r for r in res.per_user.iter_rows(named=True)}
    means = {(r["metric"], r["k"]): r["value"] for r in res.summary.iter_rows(named=True)}
    if "score_entropy" in wanted:
        for k, v in _score_entropy(scored, ks, conv, engine).items():
            means["score_entropy", k] = v
    checked = 0
    for key, entry in results.items():
        name, _, k = key.partition("@")
        k = int(k)
        assert _close(means[name, k], entry["mean"]), (case.library, case.variant, engine, key, means[name, k],
                                                       entry["mean"])
        checked += 1
        if not entry["per_user"]:
            continue
        for user, value in entry["per_user"]:
            ours = per_user[user][key]
            assert _close(ours, value), (case.library, case.variant, engine, key, user, ours, value)
            checked += 1
        # the same users: those the library scores are those with a defined value in rankwise
        theirs = {u for u, v in entry["per_user"] if not _close(v, math.nan)}
        assert theirs == {u for u, r in per_user.items() if not _close(r[key], math.nan)}, (case.variant, key)
    return checked


@pytest.mark.parametrize("engine", ["polars", "duckdb"])  # the beyond-accuracy metrics run on these two
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.library}-{c.variant}")
def test_preset_matches_library_beyond_fixture(case, engine):
    assert compare(case, _fixture(case.library), engine)


@pytest.mark.parametrize("library", sorted(BEYOND_METRICS))
def test_every_claimed_metric_is_checked_live(library):
    """Each beyond-accuracy metric a preset claims (its metrics) has live values in its fixture and a case."""
    fixture = _fixture(library)
    variants = {c.variant for c in CASES if c.library == library}
    checked = {key.partition("@")[0] for v in variants for key in fixture["results"][v]}
    assert set(BEYOND_METRICS[library]) <= checked, set(BEYOND_METRICS[library]) - checked


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_recommenders_novelty_gap_is_pooling(engine):
    """MS novelty on lists of every length equals the mean over recommendation rows of rankwise's
    item novelty (recommenders preset): per-user novelty weighted by n_u. The preset's per-user mean
    differs only by that weighting."""
    results = _fixture("recommenders")["results"]["pooled"]
    case = Case("recommenders", "pooled", P["recommenders"])
    args = inputs(_dataset(), case)
    args.pop("scored")
    ks = sorted(int(key.partition("@")[2]) for key in results)
    res = rankwise.evaluate(**args, k=ks, metrics=["novelty"], convention=case.convention.replace(metrics=None),
                            backend=engine)
    lengths = {u: len(lst) for u, lst in _dataset()["recs"]}
    for k in ks:
        rows = [(min(lengths[r["user"]], k), r[f"novelty@{k}"]) for r in res.per_user.iter_rows(named=True)
                if lengths[r["user"]]]
        pooled = sum(n * v for n, v in rows) / sum(n for n, _ in rows)
        assert _close(pooled, results[f"novelty@{k}"]["mean"]), (k, pooled, results[f"novelty@{k}"]["mean"])
        if k > 1:  # lists shorter than k: the per-user mean is another number
            mean = res.summary.filter((pl.col("metric") == "novelty") & (pl.col("k") == k))["value"].item()
            assert not _close(mean, results[f"novelty@{k}"]["mean"])
