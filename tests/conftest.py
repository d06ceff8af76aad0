"""One test body, every backend: tests that take a ``backend`` argument run once per backend.

Choose backends with ``pytest --backends polars,duckdb`` (default: every backend available here).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # tests import the oracle as a plain module

import rankwise  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--backends", default=",".join(rankwise.BACKENDS),
                     help="comma-separated backends to run cross-backend tests on")


def pytest_generate_tests(metafunc):
    if "backend" in metafunc.fixturenames:
        chosen = [b.strip() for b in metafunc.config.getoption("--backends").split(",") if b.strip()]
        metafunc.parametrize("backend", chosen)

# Scripts that run inside other libraries' virtualenvs are not test modules (nor doctest targets).
collect_ignore_glob = ["conformance/runners/*", "conformance/datasets.py", "conformance/make_fixtures.py"]
