"""The code blocks of README.md and docs/*.md run as tests, on the bundled example (tests/conftest.py
registers this module as a plugin; `pytest -m markdown-docs` runs only these).

Python blocks are collected by pytest-markdown-docs (its `notest`, `continuation` and `fixture:NAME`
info-string options apply). Its own switch, --markdown-docs, would also import every .py file of
tests/ and src/ a second time to look for blocks in docstrings, so its file collector is used here
on the markdown files alone. Rules:

- Every block runs in a fresh temporary directory holding `examples/` (a link to the bundled one):
  relative paths read the example as they do from the repository's root, and what a block writes
  (report.html, runs.duckdb, ...) lands in the temporary directory.
- The README's first Python block loads the example; the names it defines are every block's globals
  (pytest_markdown_docs_globals), as they are for a reader going down the page.
- A ```text block right after a code block is what that block prints: the test compares them line
  by line (trailing spaces ignored, a duration at a line's end is any duration, a line `...`
  stands for any number of lines).
- ```bash blocks run their `rankwise ...` commands (`.venv/bin/rankwise` is this environment's) with
  bash in the temporary directory, each one's exit code 0; a bash block with no rankwise command
  must be marked `notest`.
- `fixture:needs_postgres` runs a block against a scratch database of the test server
  (RANKWISE_POSTGRES names it; dropped after); without the server such a block is skipped, and fails
  when CI is set. (No block needs Spark yet: such a block would get a fixture like this one, and the
  xdist group "spark" that PythonBlock items asking for `needs_spark` are given.)
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
_ENV = {"RANKWISE_PROGRESS": "0", "COLUMNS": "100", "NO_COLOR": "1"}  # what the printed outputs assume


def _fences(path: Path):
    """(fence token, the ```text token right after it or None) for every fence of a markdown file."""
    from markdown_it import MarkdownIt

    tokens = [t for t in MarkdownIt("commonmark").parse(path.read_text("utf8")) if t.block]
    out = []
    for i, token in enumerate(tokens):
        if token.type != "fence":
            continue
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        output = nxt if nxt is not None and nxt.type == "fence" and nxt.info.strip() == "text" else None
        out.append((token, output))
    return out


def _untimed(line: str) -> str:
    """A line without trailing spaces, a duration at its end (the CLI's "1.69s") read as any duration."""
    return re.sub(r"(?<=\s)\d+(\.\d+)?s$", "<seconds>", line.rstrip())


def matches(printed: str, expected: str) -> bool:
    """The printed lines equal the expected ones; an expected line `...` matches any run of lines."""
    got = [_untimed(line) for line in printed.rstrip("\n").split("\n")]
    want = [_untimed(line) for line in expected.rstrip("\n").split("\n")]
    pattern = "\n".join(".*?" if line == "..." else re.escape(line) for line in want)
    return re.fullmatch(pattern.replace("\n.*?\n", "(?:\n.*?)?\n"), "\n".join(got), re.DOTALL) is not None


@contextlib.contextmanager
def _workdir():
    """A temporary directory holding examples/, made the working directory."""
    with tempfile.TemporaryDirectory(prefix="rankwise-docs-") as tmp:
        try:
            os.symlink(ROOT / "examples", Path(tmp) / "examples", target_is_directory=True)
        except OSError:  # no symlinks here: a copy
            import shutil

            shutil.copytree(ROOT / "examples", Path(tmp) / "examples")
        old = os.getcwd()
        os.chdir(tmp)
        try:
            yield Path(tmp)
        finally:
            os.chdir(old)


def _output_error(printed: str, expected: str) -> str:
    return ("the block printed other lines than the ```text block after it shows.\n--- printed\n" + printed
            + "\n--- README shows\n" + expected)


def _plugin_classes():
    from pytest_markdown_docs.definitions import FenceTestDefinition
    from pytest_markdown_docs.plugin import MarkdownInlinePythonItem, MarkdownTextFile

    class PythonBlock(MarkdownInlinePythonItem):
        """A Python block: run in a temporary directory, its printed lines captured and compared."""

        expected: str | None = None

        def runtest(self):
            capman = self.config.pluginmanager.getplugin("capturemanager")
            printed = io.StringIO()
            # pytest-markdown-docs lets the block print to the terminal; the output is read here instead
            with _workdir(), capman.global_and_fixture_disabled(), contextlib.redirect_stdout(printed):
                super().runtest()
            if self.expected is not None and not matches(printed.getvalue(), self.expected):
                raise AssertionError(_output_error(printed.getvalue(), self.expected))

    class BashBlock(MarkdownInlinePythonItem):
        """A bash block: its rankwise commands run with this environment's rankwise."""

        expected: str | None = None

        def runtest(self):
            commands = rankwise_commands(self.code)
            env = {**os.environ, **_ENV, "PATH": os.pathsep.join([str(Path(sys.executable).parent),
                                                                 os.environ.get("PATH", "")])}
            printed = []
            with _workdir():
                for command in commands:
                    done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + command], env=env,
                                          capture_output=True, text=True, timeout=300)
                    if done.returncode != 0:
                        raise AssertionError(f"`{command}` exited with {done.returncode}:\n{done.stdout}\n{done.stderr}")
                    printed.append(done.stdout)
            text = "".join(printed)
            if self.expected is not None and not matches(text, self.expected):
                raise AssertionError(_output_error(text, self.expected))

        def repr_failure(self, excinfo, style=None):
            if isinstance(excinfo.value, AssertionError):
                return f"bash block at {self.path.name}:{self.start_line}: {excinfo.value}"
            return super().repr_failure(excinfo, style)

    class MarkdownFile(MarkdownTextFile):
        """pytest-markdown-docs' Python blocks as PythonBlock items, plus the bash blocks."""

        def collect(self):
            fences = _fences(self.path)
            outputs = {token.map[0] + 1: out.content for token, out in fences if out is not None}
            for item in super().collect():
                block = PythonBlock.from_parent(self, name=item.name, test_definition=item.test_definition)
                block.expected = outputs.get(block.start_line)
                if "needs_spark" in block.fixturenames:
                    block.add_marker(pytest.mark.xdist_group("spark"))
                yield block
            for n, (token, out) in enumerate(fences, start=1):
                info = token.info.split()
                if not info or info[0] not in ("bash", "sh", "shell") or "notest" in info:
                    continue
                if not rankwise_commands(token.content):
                    raise ValueError(f"{self.path.name}:{token.map[0] + 1}: a bash block without a rankwise "
                                     "command: mark it ```bash notest")
                definition = FenceTestDefinition(
                    token.content, tuple(o[len("fixture:"):] for o in info if o.startswith("fixture:")),
                    token.map[0] + 1, self.path, None)
                block = BashBlock.from_parent(self, name=f"[BashFence#{n}][line:{token.map[0] + 1}]",
                                              test_definition=definition)
                block.expected = out.content if out is not None else None
                yield block

    return MarkdownFile


def rankwise_commands(script: str) -> list[str]:
    """The rankwise commands of a bash block: each line (joined at trailing backslashes), each part of
    an `&&` chain, whose program is rankwise (a path ending in /rankwise runs this environment's)."""
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if words and (words[0] == "rankwise" or words[0].endswith("/rankwise")):
                commands.append("rankwise " + part.strip().split(None, 1)[1] if len(words) > 1 else "rankwise")
    return commands


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".md" and Path(file_path).resolve() in DOCS:
        try:
            return _plugin_classes().from_parent(parent, path=file_path)
        except ImportError:
            if _CI:
                raise
            return None  # pytest-markdown-docs not installed (the `test` extra has it)
    return None


_setup: dict | None = None


def pytest_markdown_docs_globals():
    """The names the README's first Python block defines (it loads the bundled example)."""
    global _setup
    if _setup is None:
        token = next(t for t, _ in _fences(ROOT / "README.md") if t.info.split()[:1] == ["python"])
        namespace: dict = {"__name__": "readme_setup"}
        with _workdir():
            exec(compile(token.content, str(ROOT / "README.md"), "exec"), namespace)
        _setup = {k: v for k, v in namespace.items() if not k.startswith("__")}
    return dict(_setup)


def _unavailable(what: str, hint: str):
    if _CI:
        pytest.fail(f"{what} (CI=true).\nHint: {hint}", pytrace=False)
    pytest.skip(what)


@pytest.fixture
def needs_postgres(monkeypatch):
    """A scratch database on the test server, named by RANKWISE_POSTGRES (a postgresql:// URI); dropped after."""
    try:
        import psycopg
    except ImportError:
        _unavailable("psycopg is not installed", 'pip install "rankwise[engines]"')
    server = os.environ.get("RANKWISE_POSTGRES", "host=127.0.0.1 port=54329 user=postgres dbname=postgres")
    try:
        admin = psycopg.connect(server, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as e:
        _unavailable(f"PostgreSQL is not reachable at {server!r}: {e}", "bash .ci/postgres.sh start")
    name = f"rankwise_docs_{uuid.uuid4().hex[:12]}"
    with admin:
        admin.execute(f"CREATE DATABASE {name}")
        info = admin.info
        uri = f"postgresql://{info.user}@{info.host}:{info.port}/{name}"
        monkeypatch.setenv("RANKWISE_POSTGRES", uri)
        try:
            yield uri
        finally:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")

