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
