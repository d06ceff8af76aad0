"""Committed files never hold a path of the machine they were made on (results, logs and docs
record paths relative to the repo; the shared notes are ``../shared/NAME``)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ABSOLUTE = re.compile(r"(?<![\w.~$])/(?:work|root|home|Users)/[\w.-]+")


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout (an sdist): nothing to check")
    return [line for line in out.splitlines() if not line.endswith((".parquet", ".png", ".whl"))]


def test_no_absolute_machine_paths_in_committed_files():
    found = []
    for name in _tracked():
        path = ROOT / name
        if not path.is_file():
            continue
        text = path.read_text(errors="ignore")
        found += [f"{name}: {m.group(0)}" for m in ABSOLUTE.finditer(text)]
    assert not found, "absolute paths in committed files:\n" + "\n".join(found[:20])


# the top level the brief fixes (README, pyproject, src, sql, tests, .ci, bench, examples), with docs/ and
# integrations/ (the dbt package and the MLflow example)
TOP_LEVEL = {".ci", ".gitignore", "README.md", "bench", "docs", "examples", "integrations", "pyproject.toml", "sql",
             "src", "tests"}


def test_nothing_stray_at_the_top_level():
    """A file a test or a README block wrote into the working directory is not committed at the top level (two
    trec_eval fixtures and a README block's run.txt / qrels.txt once were)."""
    stray = sorted({name.split("/")[0] for name in _tracked()} - TOP_LEVEL)
    assert stray == [], f"not part of the layout: {stray}"
