"""The engines behind one protocol (:mod:`rankwise.engines.protocol`): Polars, DuckDB, Spark, PostgreSQL.

The API finds an engine here, by name or by what the caller passed as ``backend`` (a postgresql://
URI, a psycopg connection), and from then on asks its capabilities and calls its protocol methods: it
imports no engine module and never asks which engine it holds. Engine modules are imported on first
use (Spark's and PostgreSQL's drivers are optional extras, and each engine imports them lazily too).
"""

from __future__ import annotations

import importlib
from functools import cache

from rankwise.errors import ParameterError, did_you_mean

# name -> "module:class"; the order is the order of BACKENDS and of the error messages
ENGINES = {
    "polars": "rankwise.engines.polars:PolarsEngine",
    "duckdb": "rankwise.engines.duckdb:DuckDBEngine",
    "spark": "rankwise.engines.spark:SparkEngine",
    "postgres": "rankwise.engines.postgres:PostgresEngine",
}


@cache
def engine_class(name: str) -> type:
    module, _, cls = ENGINES[name].partition(":")
    return getattr(importlib.import_module(module), cls)


@cache
def _named(name: str):
    return engine_class(name)()


def engine(backend):
    """The engine for ``backend``: a name of :data:`ENGINES`, or a target an engine claims (a
    postgresql:// URI or an open psycopg connection: the PostgreSQL engine bound to it)."""
    if isinstance(backend, str) and backend in ENGINES:
        return _named(backend)
    for name in ENGINES:
        cls = engine_class(name)
        if cls.claims(backend):
            return cls(backend)
    raise ParameterError(f"Unknown backend {backend!r}.",
                         hint=did_you_mean(backend, ENGINES) + f"Use one of: {', '.join(ENGINES)}, or a "
                              "postgresql:// URI.")


def require_metrics(chosen, names) -> None:
    """A ParameterError when engine ``chosen`` does not declare one of the metrics ``names`` (registry
    names; ``Capabilities.metrics``), naming the engines that do."""
    missing = [n for n in names if not chosen.capabilities.computes(n)]
    if missing:
        others = [name for name in ENGINES if all(engine_class(name).capabilities.computes(n) for n in missing)]
        raise ParameterError(f"backend {chosen.name!r} does not compute {', '.join(map(repr, missing))}.",
                             hint=f"Use backend={' or '.join(map(repr, others))}, or leave those metrics out."
                             if others else "No engine computes them all: evaluate them separately.")


def able(capability: str) -> list[str]:
    """The names of the engines that have ``capability`` (a field of protocol.Capabilities)."""
    return [name for name in ENGINES if getattr(engine_class(name).capabilities, capability)]
