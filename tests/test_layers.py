"""The import architecture (pyproject.toml, [tool.importlinter]): no import cycle among rankwise's
packages and modules, the layers (entry points > orchestration > engines > ... > errors), engines
independent of each other, the API naming no particular engine (it looks them up in
rankwise.engines.ENGINES), and nothing but the entry points importing api or cli. Protects against an
upward or circular import, a lazy one inside a function included."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_lint_imports_keeps_every_contract():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if lint is None:
        pytest.fail("lint-imports is missing: pip install -e '.[test]' (import-linter)")
    done = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_api_finds_engines_in_the_one_table():
    """evaluate() takes every engine of rankwise.engines.ENGINES by name, and a postgresql:// URI is
    claimed by the PostgreSQL engine (bound to it), without the API naming either."""
    from rankwise import BACKENDS
    from rankwise.engines import ENGINES, engine

    assert BACKENDS == tuple(ENGINES) == ("polars", "duckdb", "spark", "postgres")
    assert [engine(name).name for name in ENGINES] == list(ENGINES)
    bound = engine("postgresql://user@localhost:5432/db")
    assert bound.name == "postgres" and bound.target == "postgresql://user@localhost:5432/db"
    with pytest.raises(Exception, match="Unknown backend 'polar'") as info:
        engine("polar")
    assert "polars" in str(info.value)


def test_an_engine_declares_the_metrics_it_computes(monkeypatch):
    """Capabilities.metrics is what an engine computes; evaluate() refuses a metric the chosen engine does
    not declare before reading any input (a file that does not exist is never opened), naming the engines
    that do compute it. Every shipped engine declares every metric."""
    import dataclasses

    import rankwise
    from rankwise import engines
    from rankwise.engines.polars import PolarsEngine
    from rankwise.errors import ParameterError

    class Narrow(PolarsEngine):
        name = "narrow"
        capabilities = dataclasses.replace(PolarsEngine.capabilities, metrics=frozenset({"precision", "fbeta"}))

    real = engines.engine_class
    monkeypatch.setitem(engines.ENGINES, "narrow", "narrow:Narrow")
    monkeypatch.setattr(engines, "engine_class", lambda name: Narrow if name == "narrow" else real(name))
    monkeypatch.setattr(engines, "_named", lambda name: engines.engine_class(name)())
    with pytest.raises(ParameterError, match=r"backend 'narrow' does not compute 'ndcg'") as info:
        rankwise.evaluate("no-such-file.parquet", "no-such-file.parquet", k=5, metrics=["f1", "ndcg"],
                          backend="narrow")
    assert "backend='polars' or 'duckdb' or 'spark' or 'postgres'" in info.value.hint
    with pytest.raises(ParameterError, match="'item_coverage'"):
        rankwise.evaluate("no-such-file.parquet", None, k=5, metrics=["item_coverage"], backend="narrow")
    for name in ("polars", "duckdb", "spark", "postgres"):
        caps = real(name).capabilities
        assert caps.metrics is None and caps.computes("ndcg") and caps.computes("gini")
