"""Locating and reading the shipped SQL files (``sql/`` in the repo, ``rankwise/_sql`` in the wheel)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def sql_dir() -> Path:
    """The installed copy inside the package, or the repo's top-level ``sql/`` in a source checkout."""
    package = Path(__file__).resolve().parents[1]  # src/rankwise (or site-packages/rankwise)
    for candidate in (package / "_sql", package.parents[1] / "sql"):
        if (candidate / "per_user.sql").is_file():
            return candidate
    raise FileNotFoundError(f"rankwise's SQL files are missing (looked in {package / '_sql'}).")


@cache
def read(name: str) -> str:
    """The text of ``<name>.sql``."""
    return (sql_dir() / f"{name}.sql").read_text()


@cache
def restricted(name: str, metrics: frozenset | None) -> str:
    """The text of ``per_user.sql`` or ``summary.sql`` with only the metric columns ``metrics`` in its
    generated stages (None: the whole file): DuckDB then binds and plans only what a request computes
    (the engine's per-request SQL; rendered SQL, the dbt package and the other engines read every metric)."""
    from rankwise.metrics.formulas import per_user_restricted, summary_restricted

    text = read(name)
    if metrics is None:
        return text
    return {"per_user": per_user_restricted, "summary": summary_restricted}[name](text, metrics)


def bind(sql: str, convention="default", beta: float = 1.0, *, f_name: str | None = None, computed=None) -> dict:
    """The values of exactly the parameters ``sql`` uses: the convention's knobs, ``beta``,
    ``f_name``, the F-beta row's name in summary.sql (default ``f<beta>``: "f1", "f2", "f0.5", as
    evaluate() names it; the engines pass their internal "fbeta"), and per_user.sql's stage switches
    for the metric columns ``computed`` (None = every metric: every stage runs)."""
    from rankwise.conventions import resolve
    from rankwise.metrics.declarations import stage_switches

    values = {**resolve(convention).sql_parameters(), "beta": float(beta),
              "f_name": f"f{float(beta):g}" if f_name is None else str(f_name), **stage_switches(computed)}
    return {name: values[name] for name in parameters(sql)}


def parameters(sql: str) -> list[str]:
    """The ``$name`` parameters a query uses (comments excluded), in order of first use."""
    body = "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
    return list(dict.fromkeys(_PARAMETER.findall(body)))
