"""The import architecture (pyproject.toml, [tool.importlinter]): no import cycle among rankwise's
modules, the layers (entry points > orchestration > engines > ... > errors), engines independent of
each other, and nothing but the entry points importing api or cli. Protects against an upward or
circular import, a lazy one inside a function included."""

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
