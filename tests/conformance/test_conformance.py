"""Each preset against its library: per-user values and means, on every backend.

Expected values are the libraries' own outputs: fixture files written by make_fixtures.py from live
runs (library version inside each file), and, for ranx, pytrec_eval, scikit-learn and TorchMetrics,
a live run in this test session when their virtualenv exists (CI builds it; locally:
``python tests/conformance/make_fixtures.py --libraries ranx``).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pytest

import rankwise

# every preset x dataset x backend: on Spark and PostgreSQL only with --spark-heavy (the engines run
# the same shipped SQL in tests/test_engines.py under every convention)
pytestmark = pytest.mark.heavy

HERE = Path(__file__).parent
DATASETS = ("doc000", "binary_int", "graded_str", "clean")
LIVE = ("ranx", "pytrec_eval", "sklearn", "torchmetrics")
UNCUT = 10_000  # k for a library value with no cutoff: beyond every list and label set
P = rankwise.PRESETS


@dataclass(frozen=True)
class Case:
    """How one library variant saw the data, and the convention that must reproduce it."""

    library: str
    variant: str
    convention: rankwise.Convention
    view: str = "lists"  # lists: as generated; padded: both inputs list every user; relevant: only
    # labels with relevance >= 1 and no empty lists; long: no empty lists
    skip: tuple[str, ...] = ()  # metric names not compared, each with a reason in NOT_COMPARED
    rel_tol: float = 1e-9
    rename: dict = field(default_factory=dict)


CASES = [
    Case("ranx", "default", P["ranx"], view="padded"),
    Case("ranx", "burges", P["ranx"].replace(gain="exp2"), view="padded"),
    Case("ranx", "rel_lvl2", P["ranx"].replace(relevance_threshold=2.0), view="padded", skip=("dcg", "ndcg")),
    Case("ranx", "make_comparable", P["ranx"]),
    Case("pytrec_eval", "default", P["trec_eval"].replace(rr_cutoff=True), skip=("r_precision",)),
    Case("pytrec_eval", "uncut", P["trec_eval"]),
    Case("sklearn", "labels_last", P["sklearn"]),
    Case("sklearn", "tied_tail_ignore_ties", P["sklearn"].replace(ideal="labels")),
    Case("torchmetrics", "default", P["torchmetrics"], rel_tol=1e-6),
    Case("torchmetrics", "skip", P["torchmetrics"].replace(empty_labels="nan"), rel_tol=1e-6),
    Case("torchmetrics", "pos", P["torchmetrics"].replace(empty_labels="one"), rel_tol=1e-6),
    Case("evidently", "default", P["evidently"], skip=("map", "mar")),
    Case("ml_metrics", "default", P["kaggle"]),
    Case("pyspark", "default", P["spark"]),
    Case("pyspark", "label_rows", P["spark"].replace(empty_labels="nan"), view="relevant"),
    Case("pyspark", "with_relevance", P["spark"]),
    Case("recbole", "default", P["recbole"], view="relevant"),
    Case("recommenders", "default", P["recommenders"], view="relevant", skip=("ndcg", "r_precision")),
    Case("recommenders", "map", P["recommenders"].replace(ap_denominator="n_rel"), view="relevant"),
    Case("recommenders", "ndcg_log2", rankwise.Convention(
        users="labels", empty_labels="nan", gain="binary", ideal="labels", log_base=2.0), view="relevant"),
    Case("rectools", "default", P["rectools"], view="relevant"),
    Case("rectools", "r_precision", P["rectools"].replace(precision_denominator="min_k_nrel"), view="relevant"),
    Case("rectools", "divide_by_k", P["rectools"].replace(ap_denominator="k"), view="relevant"),
    Case("rectools", "divide_by_achievable", P["rectools"].replace(ideal="labels"), view="relevant"),
    Case("replay", "default", P["replay"], view="relevant"),
]
NOT_COMPARED = {
    ("evidently", "default", "map"): "Evidently's repeat-last-relevance bug: test_evidently_map_divergence_is_that_bug",
    ("ranx", "rel_lvl2", "dcg"): "ranx -l2 drops labels below 2 from the gains too; rankwise keeps raw gains",
    ("pytrec_eval", "default", "r_precision"): "Rprec on a run cut at k divides by R, not min(k, R)",
    ("recommenders", "default", "ndcg"): "averaged over other users: case recommenders/ndcg_log2",
}


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _frames(dataset: dict, view: str):
    recs = [(u, items) for u, items in dataset["recs"]]
    truth = [(u, [(i, r) for i, r in labels if view != "relevant" or r >= 1]) for u, labels in dataset["truth"]]
    if view == "padded":  # every user of the union in both inputs, an empty list where it had none
        known_r, known_t = {u for u, _ in recs}, {u for u, _ in truth}
        recs += [(u, []) for u, _ in truth if u not in known_r]
        truth += [(u, []) for u, _ in recs if u not in known_t]
    if view in ("relevant", "long"):
        recs = [(u, items) for u, items in recs if items]
        truth = [(u, labels) for u, labels in truth if labels]
    def kind(values):
        return pl.String if any(isinstance(v, str) for v in values) else pl.Int64

    uid = kind([u for u, _ in recs + truth])
    iid = kind([i for _, items in recs for i in items] + [i for _, lab in truth for i, _ in lab])
    r = pl.DataFrame({"user": [u for u, _ in recs], "item": [items for _, items in recs]},
                     schema={"user": uid, "item": pl.List(iid)})
    t = pl.DataFrame({"user": [u for u, _ in truth], "item": [[i for i, _ in lab] for _, lab in truth],
                      "relevance": [[float(x) for _, x in lab] for _, lab in truth]},
                     schema={"user": uid, "item": pl.List(iid), "relevance": pl.List(pl.Float64)})
    return r, t


def _expected_fixture(case: Case, dataset: str) -> dict:
    path = HERE / "fixtures" / case.library / f"{dataset}.json"
    if not path.exists():
        pytest.skip(f"no fixture {path.name} for {case.library}")
    return _load(path)


def compare(case: Case, dataset_name: str, fixture: dict, backend: str) -> int:
    """Assert rankwise == library for every metric of the variant; returns how many values matched."""
    dataset = _load(HERE / "datasets" / f"{dataset_name}.json")
    recs, truth = _frames(dataset, case.view)
    results = fixture["results"].get(case.variant)
    if results is None:
        pytest.skip(f"{case.library} has no variant {case.variant}")
    wanted: dict[int, list[tuple[str, str]]] = {}
    for key, entry in results.items():
        name, _, k = key.partition("@")
        if name in case.skip or entry.get("mean") is None:
            continue
        public = "f1" if name == "f1" else name
        wanted.setdefault(int(k) if k else UNCUT, []).append((key, public))
    checked = 0
    conv = case.convention.replace(metrics=None)  # variants may use metrics outside the preset's list
    # every k in one evaluation (a k's values do not depend on the other cutoffs asked for)
    res = rankwise.evaluate(recs, truth, k=sorted(wanted), metrics=sorted({p for keys in wanted.values() for _, p in keys}),
                            convention=conv, backend=backend)
    per_user = {row["user"]: row for row in res.per_user.iter_rows(named=True)}
    means = {(r["metric"], r["k"]): r["value"] for r in res.summary.iter_rows(named=True)}
    for k, keys in wanted.items():
        for key, public in keys:
            entry = results[key]
            ours_mean = means[public, k]
            assert _close(ours_mean, entry["mean"], case.rel_tol), (case.library, case.variant, key, ours_mean, entry["mean"])
            checked += 1
            for user, value in entry.get("per_user") or []:
                ours = per_user[user][f"{public}@{k}"]
                assert _close(ours, value, case.rel_tol), (case.library, case.variant, key, user, ours, value)
                checked += 1
    assert checked, "nothing compared"
    return checked


def _close(a: float, b: float, rel_tol: float) -> bool:
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=rel_tol * 1e-3)


@pytest.mark.heavy
@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.library}-{c.variant}")
def test_preset_matches_library_fixture(case, dataset, backend):
    compare(case, dataset, _expected_fixture(case, dataset), backend)


@pytest.mark.parametrize("library", LIVE)
def test_preset_matches_library_live(library):
    """Run the library now (its virtualenv is built by CI) and compare on every dataset, on both
    in-process backends (one library process for all datasets; the other backends equal these in
    test_engines)."""
    from make_fixtures import DEFAULT_VENV_ROOT, LIBRARIES, run_library_on  # noqa: PLC0415

    venv = Path(os.environ.get("RANKWISE_CONFORMANCE_VENVS", DEFAULT_VENV_ROOT)) / LIBRARIES[library][0]
    if not (venv / "bin" / "python").exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI must build the conformance virtualenv {venv} (see .ci/run)")
        pytest.skip(f"no virtualenv {venv}: python tests/conformance/make_fixtures.py --libraries {library}")
    for dataset, fixture in zip(DATASETS, run_library_on(library, DATASETS, venv_root=venv.parent)):
        for case in (c for c in CASES if c.library == library):
            for backend in ("polars", "duckdb"):
                compare(case, dataset, fixture, backend)


@pytest.mark.heavy
@pytest.mark.parametrize("dataset", DATASETS)
def test_evidently_map_divergence_is_that_bug(dataset, backend):
    """Evidently's MAP@k equals, to the last digit, AP computed with rel_i for i beyond a short list
    taken as the list's last relevance (its bug); rankwise's evidently preset gives the true AP."""
    fixture = _expected_fixture(Case("evidently", "default", P["evidently"]), dataset)
    data = _load(HERE / "datasets" / f"{dataset}.json")
    recs, truth = dict(data["recs"]), {u: {i for i, r in lab if r >= 1} for u, lab in data["truth"]}
    for k in (3, 5, 10):
        entry = fixture["results"]["default"].get(f"map@{k}")
        if not entry or entry.get("mean") is None:
            continue
        buggy, true = [], []
        for user, relevant in truth.items():
            if not relevant:
                continue
            pred = recs.get(user, [])
            rows = len(set(pred) | relevant)
            bug_sum = true_sum = 0.0
            for i in range(1, k + 1):
                tp = sum(1 for x in pred[:i] if x in relevant)
                last_rel = 1 if pred and pred[min(i, len(pred)) - 1] in relevant else 0
                bug_sum += tp / min(rows, i) * last_rel
                true_sum += tp / i if i <= len(pred) and pred[i - 1] in relevant else 0.0
            buggy.append(bug_sum / len(relevant))
            true.append(true_sum / len(relevant))
        assert math.isclose(sum(buggy) / len(buggy), entry["mean"], rel_tol=1e-12)
        recs_f, truth_f = _frames(data, "lists")
        ours = rankwise.evaluate(recs_f, truth_f, k=k, metrics=["map"], convention="evidently", backend=backend)
        assert math.isclose(ours.summary["value"].item(), sum(true) / len(true), rel_tol=1e-12)
