"""``python -m rankwise._generate``: write the shipped SQL generated from the metric declarations.

It rewrites the generated part of ``sql/per_user.sql`` (from ``_formulas.BEGIN`` to the end: the shared
terms, the metrics, the empty-input rules) and all of ``sql/summary.sql`` from ``rankwise.metrics.REGISTRY``
through ``rankwise._formulas``; ``tests/test_formulas.py`` regenerates both and fails on drift. (Kept out of
``_formulas``, which ``rankwise.metrics`` imports: the generator reads the registry, a layer above both.)
"""

from __future__ import annotations

from pathlib import Path

from . import _sql_files
from ._formulas import render_per_user, summary_sql
from .metrics import REGISTRY


def main() -> None:
    metrics = [m for m in REGISTRY if m.level == "user"]
    path = Path(_sql_files.sql_dir()) / "per_user.sql"
    path.write_text(render_per_user(path.read_text(), metrics))
    (path.parent / "summary.sql").write_text(summary_sql(metrics))
    print("wrote per_user.sql, summary.sql")


if __name__ == "__main__":
    main()
