"""Code run in the conformance virtualenv ``live`` (ranx, pytrec_eval, ir_measures, scikit-learn, TorchMetrics;
make_fixtures.VENVS), which CI builds (.ci/run): JSON in, JSON out."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from make_fixtures import DEFAULT_VENV_ROOT


def run(code: str, data):
    """What ``code`` prints (JSON) given ``data`` as JSON on its stdin, run by the venv's Python. Without the
    venv the test fails under CI (which must build it) and is skipped elsewhere, with the command that builds it."""
    venv = Path(os.environ.get("RANKWISE_CONFORMANCE_VENVS", DEFAULT_VENV_ROOT)) / "live"
    python = venv / "bin" / "python"
    if not python.exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI must build the conformance virtualenv {venv} (see .ci/run)")
        pytest.skip(f"no virtualenv {venv}: python tests/conformance/make_fixtures.py --libraries pytrec_eval")
    done = subprocess.run([str(python), "-c", code], input=json.dumps(data), capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)
