"""Result.log_mlflow against a local MLflow file store: the numbers read back equal the summary exactly,
undefined means are left out (never 0), knobs are params, the tables and the report are artifacts."""

from __future__ import annotations

import math
import os
from pathlib import Path

import polars as pl
import pytest

import rankwise
from rankwise.io import mlflow as _mlflow
from rankwise.conventions import PRESETS
from rankwise.errors import MissingDependencyError, ParameterError

if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    import mlflow  # CI installs the mlflow extra: a missing mlflow fails there
else:
    mlflow = pytest.importorskip("mlflow", reason="pip install 'rankwise[mlflow]'")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3.x: a file store needs this
    mlflow.set_tracking_uri((tmp_path / "mlruns").as_uri())
    mlflow.set_experiment("rankwise-test")
    yield mlflow.tracking.MlflowClient()
    while mlflow.active_run():
        mlflow.end_run()
    mlflow.set_tracking_uri(None)


def _recs_truth():
    recs = pl.DataFrame({"user": [1, 1, 2, 2], "item": [10, 11, 20, 21], "rank": [1, 2, 1, 2]})
    truth = pl.DataFrame({"user": [1, 2], "item": [10, 29], "relevance": [1.0, 1.0]})
    return recs, truth


def test_single_run_metrics_params_artifacts(store):
    result = rankwise.evaluate(EXAMPLE / "recommendations.parquet", EXAMPLE / "ground_truth.parquet",
                               k=[5, 10], metrics=["ndcg", "precision", "f2"])
    ids = result.log_mlflow()
    run = store.get_run(ids[None])
    expected = {f"{r['metric']}_at_{r['k']}": r["value"] for r in result.summary.iter_rows(named=True)}
    assert run.data.metrics == expected  # exactly: the file store keeps a float's repr
    assert set(expected) == {"ndcg_at_5", "ndcg_at_10", "precision_at_5", "precision_at_10", "f2_at_5", "f2_at_10"}
    params = run.data.params
    assert params["rankwise.convention"] == "default" and params["rankwise.k"] == "5,10"
    assert params["rankwise.gain"] == str(result.convention.gain)
    assert {f"rankwise.{knob}" for knob in result.convention.knobs()} <= set(params)
    folder = Path(mlflow.artifacts.download_artifacts(run_id=ids[None], artifact_path="rankwise"))
    assert {"excluded.csv", "per_user.parquet", "summary.csv"} <= {p.name for p in folder.iterdir()}
    assert pl.read_parquet(folder / "per_user.parquet").equals(result.per_user)
    assert (folder / "report.html").exists() or "rankwise.report" in run.data.tags
    assert mlflow.active_run() is None  # the run it started is ended


def test_undefined_means_are_not_logged_and_noted(store):
    """No label is relevant: under empty_labels='nan' every user's DCG and NDCG is undefined, so are the
    means: not logged, named in the tag; under the default (empty_labels='zero') they are 0.0, logged."""
    recs, truth = _recs_truth()
    truth = truth.with_columns(relevance=pl.lit(0.0))
    nan = rankwise.evaluate(recs, truth, k=[1, 2], metrics=["dcg", "ndcg"],
                            convention=PRESETS["default"].replace(empty_labels="nan"))
    with mlflow.start_run() as active:
        nan.log_mlflow(prefix="val/")
        assert mlflow.active_run().info.run_id == active.info.run_id  # the active run is used, left open
    run = store.get_run(active.info.run_id)
    assert not run.data.metrics
    assert run.data.tags["val/rankwise.undefined"] == "val/dcg_at_1, val/dcg_at_2, val/ndcg_at_1, val/ndcg_at_2"
    zero = rankwise.evaluate(recs, truth, k=[1, 2], metrics=["dcg", "ndcg"])
    run = store.get_run(zero.log_mlflow()[None])
    assert run.data.metrics == {"dcg_at_1": 0.0, "dcg_at_2": 0.0, "ndcg_at_1": 0.0, "ndcg_at_2": 0.0}
    assert "rankwise.undefined" not in run.data.tags


def test_several_runs_are_nested_runs(store):
    recs, truth = _recs_truth()
    other = recs.with_columns(pl.col("rank").reverse().over("user"))
    result = rankwise.evaluate({"a": recs, "b": other}, truth, k=[1, 2], metrics=["precision", "mrr"])
    ids = result.log_mlflow()
    assert set(ids) == {None, "a", "b"}
    for name in ("a", "b"):
        run = store.get_run(ids[name])
        assert run.data.tags["mlflow.parentRunId"] == ids[None] and run.data.tags["rankwise.run"] == name
        expected = {f"{r['metric']}_at_{r['k']}": r["value"]
                    for r in result.summary.filter(pl.col("run") == name).iter_rows(named=True)}
        assert run.data.metrics == expected
    # by hand: a ranks the relevant item 10 first for user 1 (precision@1 = 1), user 2 has none: mean 0.5
    assert store.get_run(ids["a"]).data.metrics["precision_at_1"] == 0.5
    assert store.get_run(ids["b"]).data.metrics["precision_at_1"] == 0.0


def test_bad_arguments_and_missing_extra(store, monkeypatch):
    recs, truth = _recs_truth()
    result = rankwise.evaluate(recs, truth, k=1, metrics=["precision"])
    with pytest.raises(ParameterError, match="prefix"):
        result.log_mlflow(prefix="a@b")
    monkeypatch.setattr(_mlflow, "_mlflow", lambda: (_ for _ in ()).throw(
        MissingDependencyError("Logging to MLflow needs mlflow.", hint=_mlflow._INSTALL)))
    with pytest.raises(MissingDependencyError, match=r'pip install "rankwise\[mlflow\]"'):
        result.log_mlflow()
