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
