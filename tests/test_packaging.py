"""The built wheel: the shipped SQL is inside it, and it cannot shadow the public ``rankwise.sql``."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
                   check=True, capture_output=True)
    return next(out.glob("rankwise-*.whl"))


def test_wheel_ships_every_sql_file_under_a_private_name(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(Path(n).name for n in names if n.startswith("rankwise/_sql/"))
    assert shipped == sorted(p.name for p in (ROOT / "sql").glob("*.sql"))
    assert not [n for n in names if n.startswith("rankwise/sql/")]


def test_import_rankwise_sql_keeps_the_function(wheel, tmp_path):
    """With the SQL shipped as rankwise/sql/, ``import rankwise.sql`` imported the directory as a
    namespace package and replaced the function: ``rankwise.sql(k=3)`` raised TypeError."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import rankwise\n"
            "assert rankwise.__file__.startswith(sys.argv[1]), rankwise.__file__\n"
            "try:\n    import rankwise.sql\nexcept ImportError:\n    pass\n"
            "print(rankwise.sql(k=3, dialect='postgres').count('CREATE TABLE'))")
    run = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "1"
