"""``Result.log_mlflow``: a result logged to MLflow (fluent API; the ``mlflow`` extra, mlflow-skinny).

What is logged, to the active run, the run ``run_id`` names, or a new run:

* metrics: every summary row as ``<prefix><metric>_at_<k>`` (MLflow refuses ``@``), the value exactly as in
  ``Result.summary``; an undefined mean (NaN: no user has a defined value) is not logged, never as 0, and
  the tag ``<prefix>rankwise.undefined`` lists the names left out;
* params: ``<prefix>rankwise.convention`` (the preset's name) and every knob as ``<prefix>rankwise.<knob>``,
  with ``rankwise.k``, ``rankwise.metrics.declarations`` and ``rankwise.version``;
* artifacts under ``rankwise/``: ``per_user.parquet``, ``summary.csv``, ``excluded.csv`` and
  ``report.html`` (the report when the ``report`` extra is installed; else the tag
  ``<prefix>rankwise.report`` says why it is missing).

With several runs (``evaluate({"a": ..., "b": ...})``), each run's metrics go to a nested run named after
it (tag ``rankwise.run``), with the params; the parent has the params and the artifacts (tables with a
``run`` column, one report with the runs side by side).
"""

from __future__ import annotations

import logging
import math
import re
import tempfile
from pathlib import Path

from rankwise.errors import MissingDependencyError, ParameterError

_INSTALL = 'pip install "rankwise[mlflow]"  (or: pip install mlflow-skinny)'
_NAME = re.compile(r"[A-Za-z0-9_\-. /]*\Z")  # what MLflow accepts in a metric, param or tag name
ARTIFACT_DIR = "rankwise"
log = logging.getLogger("rankwise")


def _mlflow():
    try:
        import mlflow
    except ImportError as error:
        raise MissingDependencyError("Logging to MLflow needs mlflow.", hint=_INSTALL) from error
    return mlflow


def metric_name(metric: str, k: int, prefix: str = "") -> str:
    """The MLflow name of a summary row: ``ndcg@10`` is ``ndcg_at_10``."""
    return f"{prefix}{metric}_at_{int(k)}"


def log_mlflow(result, run_id: str | None = None, prefix: str = "") -> dict:
    """Log ``result`` to MLflow; returns ``{run name (None for one run, or the parent): run id}``."""
    if not isinstance(prefix, str) or not _NAME.fullmatch(prefix):
        raise ParameterError(f"prefix {prefix!r} is not a valid MLflow name start.",
                             hint="Letters, digits, '_', '-', '.', ' ' and '/', e.g. prefix='val/'.")
    if run_id is not None and not isinstance(run_id, str):
        raise ParameterError(f"run_id must be a string (an MLflow run id), got {run_id!r}.",
                             hint="run_id=mlflow.active_run().info.run_id, or leave it out.")
    mlflow = _mlflow()
    active = mlflow.active_run()
    if run_id is not None and active is not None and active.info.run_id != run_id:
        raise ParameterError(f"run_id {run_id!r} is not the active run ({active.info.run_id}).",
                             hint="Leave run_id out to log to the active run, or end it first.")
    if active is not None:
        return _log(mlflow, result, prefix, active.info.run_id)
    with mlflow.start_run(run_id=run_id) as run:
        return _log(mlflow, result, prefix, run.info.run_id)


def _log(mlflow, result, prefix: str, run_id: str) -> dict:
    out = {None: run_id}
    _params(mlflow, result, prefix)
    _artifacts(mlflow, result, prefix)
    if not result.runs:
        _metrics(mlflow, result.summary, prefix)
        return out
    for name in result.runs:
        with mlflow.start_run(run_name=str(name), nested=True) as child:
            mlflow.set_tag("rankwise.run", str(name))
            _params(mlflow, result, prefix)
            _metrics(mlflow, result.summary.filter(result.summary["run"] == name), prefix)
            out[name] = child.info.run_id
    return out


def _metrics(mlflow, summary, prefix: str) -> None:
    values, undefined = {}, []
    for row in summary.iter_rows(named=True):
        name = metric_name(row["metric"], row["k"], prefix)
        value = row["value"]
        if value is None or math.isnan(value):
            undefined.append(name)
        else:
            values[name] = float(value)
    if values:
        mlflow.log_metrics(values)
    if undefined:
        note = ", ".join(undefined)
        mlflow.set_tag(f"{prefix}rankwise.undefined", note[:5000])
        log.info("rankwise: not logged to MLflow, undefined (no user has a defined value): %s", note)


def _params(mlflow, result, prefix: str) -> None:
    conv = result.convention
    params = {f"{prefix}rankwise.convention": conv.name, f"{prefix}rankwise.version": _version(),
              f"{prefix}rankwise.k": ",".join(map(str, result.request.ks)),
              f"{prefix}rankwise.metrics.declarations": ",".join(result.request.names)}
    params.update({f"{prefix}rankwise.{knob}": repr(value) if value is None else str(value)
                   for knob, value in conv.knobs().items()})
    mlflow.log_params(params)


def _version() -> str:
    import importlib.metadata
    import sys

    try:
        return importlib.metadata.version("rankwise")
    except importlib.metadata.PackageNotFoundError:  # a source checkout on sys.path
        return str(getattr(sys.modules.get("rankwise"), "__version__", "unknown"))


def _artifacts(mlflow, result, prefix: str) -> None:
    import polars as pl

    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        per_user = result.per_user
        if isinstance(per_user, pl.DataFrame):
            per_user.write_parquet(folder / "per_user.parquet")
        else:
            mlflow.set_tag(f"{prefix}rankwise.per_user", "not logged: the per-user rows were left in the engine "
                           "(collect=False)")
        result.summary.write_csv(folder / "summary.csv")
        result.excluded.write_csv(folder / "excluded.csv")
        try:
            result.report(folder / "report.html")
        except MissingDependencyError as error:
            mlflow.set_tag(f"{prefix}rankwise.report", f"not logged: {error.problem} {error.hint or ''}".strip())
        mlflow.log_artifacts(str(folder), artifact_path=ARTIFACT_DIR)
