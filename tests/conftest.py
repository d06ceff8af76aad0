"""One test body, every backend: tests that take a ``backend`` argument run once per backend.

Choose backends with ``pytest --backends polars,duckdb`` (default: every backend available here;
"spark" when pyspark is importable). Tests that take an ``engine`` argument run the rendered SQL
on real engines; choose with ``--engines duckdb,postgres,spark,clickhouse`` (default: every engine
whose client is installed, all of them when CI=true). A selected engine that cannot run fails.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests import the oracle as a plain module

import rankwise  # noqa: E402


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
_BACKENDS = [b for b in rankwise.BACKENDS if (b != "spark" or _installed("pyspark"))
             and (b != "postgres" or _CI or _installed("psycopg"))]
# backend="postgres" connects with RANKWISE_POSTGRES: the throwaway server .ci/postgres.sh starts
os.environ.setdefault("RANKWISE_POSTGRES", os.environ.get("RANKWISE_PG_DSN",
                                                          "host=127.0.0.1 port=54329 user=postgres dbname=postgres"))
_ENGINE_CLIENTS = {"duckdb": "duckdb", "postgres": "psycopg", "spark": "pyspark", "clickhouse": "chdb"}
_ENGINES = [e for e, module in _ENGINE_CLIENTS.items() if _CI or _installed(module)]


def pytest_configure(config):
    """The code blocks of README.md and docs/*.md are tests (tests/docs_blocks.py; the `test` extra has
    pytest-markdown-docs, which collects them)."""
    if _CI or _installed("pytest_markdown_docs"):
        import docs_blocks

        config.pluginmanager.register(docs_blocks, "rankwise-docs-blocks")


def pytest_addoption(parser):
    parser.addoption("--backends", default=",".join(_BACKENDS),
                     help="comma-separated backends to run cross-backend tests on")
    parser.addoption("--spark-heavy", action="store_true",
                     help="also run tests marked heavy (hundreds of evaluations) on backend=spark")
    parser.addoption("--engines", default=",".join(_ENGINES),
                     help="comma-separated engines to run the rendered SQL on (duckdb,postgres,spark,clickhouse)")


def _chosen(config, option: str) -> list[str]:
    return [b.strip() for b in config.getoption(option).split(",") if b.strip()]


def pytest_generate_tests(metafunc):
    if "backend" in metafunc.fixturenames:
        backends = _chosen(metafunc.config, "--backends")
        # Spark takes seconds per evaluation: sweeps of hundreds of evaluations run on it only on
        # request; PostgreSQL (tens of ms each, through a server) runs them too, but not the sweeps
        if metafunc.definition.get_closest_marker("heavy") and not metafunc.config.getoption("--spark-heavy"):
            backends = [b for b in backends if b not in ("spark", "postgres")]
        metafunc.parametrize("backend", backends)
    if "engine_name" in metafunc.fixturenames:
        names = _chosen(metafunc.config, "--engines")
        only = metafunc.definition.get_closest_marker("engines")  # a test for some engines: not a skip on others
        metafunc.parametrize("engine_name", [n for n in names if only is None or n in only.args], scope="module")


SLOW_BACKENDS = ("spark", "postgres")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (its hook would otherwise run first)
def pytest_collection_modifyitems(config, items):
    """In a module with ONE_CASE_ON_SLOW_BACKENDS = True, a test parametrized over more than the backend
    runs every case on the fast backends and its first case on each slow one, and if the module names
    SLOW_BACKEND_TESTS only those run on the slow ones (a dict {backend: names}: per slow backend); a module's ON_SLOW_ENGINE = {engine: (test
    names, keep(params))} runs only the kept parameter sets of those tests on that engine (deselected,
    not skipped; --spark-heavy runs them all). Every Spark test joins one xdist group: with ``--dist loadgroup`` (CI) one worker runs
    them all on one warmed-up JVM instead of each worker starting its own."""
    for item in items:
        if "spark" in item.nodeid.lower():
            item.add_marker(pytest.mark.xdist_group("spark"))
    if config.getoption("--spark-heavy"):
        return
    seen, keep, dropped = set(), [], []
    for item in items:
        params = item.callspec.params if hasattr(item, "callspec") else {}
        on_engine = getattr(getattr(item, "module", None), "ON_SLOW_ENGINE", {}).get(params.get("engine_name"))
        if on_engine is not None and item.originalname in on_engine[0] and not on_engine[1](params):
            dropped.append(item)
            continue
        backend = params.get("backend")
        if backend in SLOW_BACKENDS and getattr(item.module, "ONE_CASE_ON_SLOW_BACKENDS", False):
            key = (item.module.__name__, item.originalname, backend)
            wanted = getattr(item.module, "SLOW_BACKEND_TESTS", None)
            if isinstance(wanted, dict):  # {backend: test names}: per slow backend
                wanted = wanted.get(backend, ())
            if key in seen or (wanted is not None and item.originalname not in wanted):
                dropped.append(item)
                continue
            seen.add(key)
        keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run (local, loopback, no UI); backend="spark" reuses it."""
    from rankwise.engines import spark as _spark_backend

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # rankwise's own local session, as users get it: with 1 MB Tungsten pages (engines/spark.py session(); Spark's
    # default here is 16 MB and every broadcast hash join of a query takes a page: a 60-user evaluation took
    # 4-12 s, 3 s with 1 MB pages, same plans and results; the Spark tests of a CI-like run, 2027 -> 629 s on
    # their worker). tests/jobs/spark_driver_budget.py makes a session of its own, as a user would: Spark's default.
    session = _spark_backend.session()
    session.sparkContext.setLogLevel("ERROR")
    # Test data is tiny: compiling Java for every query (whole-stage and expression codegen) costs more
    # than running it, about 3x per evaluation here. Spark's own test suite runs this interpreted mode;
    # the generated-code path is exercised at scale by tests/jobs/spark_driver_budget.py (its own session).
    session.conf.set("spark.sql.codegen.wholeStage", "false")
    session.conf.set("spark.sql.codegen.factoryMode", "NO_CODEGEN")
    # adaptive execution re-plans every stage of these tiny queries: 17 s against 21 s for seven scripts
    session.conf.set("spark.sql.adaptive.enabled", "false")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _spark_for_backend(request):
    """Tests on backend="spark" go through the shared session fixture (created once, stopped at the end)."""
    if getattr(request.node, "callspec", None) and request.node.callspec.params.get("backend") == "spark":
        request.getfixturevalue("spark")


@pytest.fixture(scope="session")
def pg_dsn():
    """A reachable PostgreSQL (``.ci/postgres.sh`` starts one on 127.0.0.1:54329); fails if there is none."""
    import engines

    if not engines.postgres_reachable():
        pytest.fail(f"PostgreSQL is not reachable at {engines.PG_DSN!r}{' (CI=true)' if _CI else ''}.\n"
                    "Hint: run `bash .ci/postgres.sh` (as root), or deselect it: --engines duckdb,spark,clickhouse",
                    pytrace=False)
    return engines.PG_DSN

# Scripts that run inside other libraries' virtualenvs are not test modules (nor doctest targets).
collect_ignore_glob = ["conformance/runners/*", "conformance/fixtures/*", "conformance/datasets.py", "conformance/make_fixtures.py"]
sys.path.insert(0, str(Path(__file__).parent / "conformance"))  # make_fixtures.run_library for live runs
