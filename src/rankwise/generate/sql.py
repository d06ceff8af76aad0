"""``python -m rankwise.generate.sql``: write the shipped SQL generated from the metric declarations.

It rewrites the generated part of ``sql/per_user.sql`` (from ``_formulas.BEGIN`` to the end: the shared
terms, the metrics, the empty-input rules; and its parameter families' statistics between ``-- >>> param ...``
markers), the template lines of ``sql/param_families.sql`` (the same statistics at each value), all of ``sql/summary.sql``, the generated ends of
``sql/beyond_user.sql`` and ``sql/beyond_catalog.sql``, the metric macros of ``sql/macros.sql``
(:mod:`rankwise.generate.macros`) and ``metrics/formula_trees.py`` (the formulas as the tuple trees the Polars
translation reads) from ``rankwise.metrics.declarations`` through ``rankwise.metrics.formulas``;
``tests/test_formulas.py`` regenerates each and fails on drift. (Kept out of
``_formulas``, which ``rankwise.metrics.declarations`` imports: the generator reads the registry, a layer above both.)
"""

from __future__ import annotations

from pathlib import Path

from rankwise.generate import macros as _macros
from rankwise.sqlgen import files as _sql_files
from rankwise.metrics.declarations import BEYOND, BY_NAME, PARAM_KNOBS, REGISTRY
from rankwise.metrics.formulas import (BEYOND_CATALOG_TERMS, BEYOND_TERMS, TERMS, render_beyond_catalog,
                                       render_beyond_user, render_param_families, render_per_user,
                                       render_per_user_params, summary_sql, trees_module)

FAMILIES = {name: BY_NAME[name] for name in PARAM_KNOBS}  # the parameter families' declarations


def formulas() -> list[str]:
    """Every declared formula: the terms' and the metrics'."""
    return [*TERMS.values(), *BEYOND_TERMS.values(), *BEYOND_CATALOG_TERMS.values(),
            *(m.sql for m in (*REGISTRY, *BEYOND) if m.sql is not None)]


def main() -> None:
    metrics = [m for m in REGISTRY if m.level == "user"]
    path = Path(_sql_files.sql_dir()) / "per_user.sql"
    path.write_text(render_per_user_params(render_per_user(path.read_text(), metrics), FAMILIES))
    families = path.parent / "param_families.sql"
    families.write_text(render_param_families(families.read_text(), FAMILIES))
    (path.parent / "summary.sql").write_text(summary_sql(metrics))
    beyond = path.parent / "beyond_user.sql"
    beyond.write_text(render_beyond_user(beyond.read_text(), [m for m in BEYOND if m.level == "user"]))
    catalog = path.parent / "beyond_catalog.sql"
    catalog.write_text(render_beyond_catalog(catalog.read_text(), [m for m in BEYOND if m.level == "catalog"]))
    macros = path.parent / "macros.sql"
    macros.write_text(_macros.render(macros.read_text()))
    (Path(__file__).resolve().parents[1] / "metrics" / "formula_trees.py").write_text(trees_module(formulas()))
    print("wrote per_user.sql, param_families.sql, summary.sql, beyond_user.sql, beyond_catalog.sql, macros.sql, "
          "src/rankwise/metrics/formula_trees.py")


if __name__ == "__main__":
    main()
