"""trec_eval 10.0's quick test (tests/conformance/fixtures/trec_eval/suite, README there): its
command lines as data (``SUITE``) and a reader of trec_eval's printed output."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

SUITE_DIR = Path(__file__).parent / "conformance" / "fixtures" / "trec_eval" / "suite"


@dataclass(frozen=True)
class Command:
    """One line of trec_eval's Makefile quick test: ``trec_eval [flags] qrels run | diff - expected``."""

    qrels: str  # file names in SUITE_DIR
    run: str
    expected: str
    per_query: bool = False  # -q: a line per query as well as 'all'
    complete: bool = False  # -c: average over every qrels query, a query without results scoring 0
    max_docs: int | None = None  # -M<n>: only the first n documents per query (trec_eval's order)
    relevance_level: int | None = None  # -l<n>: relevant = rel >= n (default 1)
    measures: tuple[str, ...] = ()  # -m ...; () = trec_eval's default set

    @property
    def argv(self) -> str:
        """The command line as the Makefile writes it."""
        parts = ["trec_eval"] + [f"-m {m}" if m == "all_trec" else f"-m{m}" for m in self.measures]
        parts += ["-q"] * self.per_query + ["-c"] * self.complete
        parts += [f"-M{self.max_docs}"] * (self.max_docs is not None)
        parts += [f"-l{self.relevance_level}"] * (self.relevance_level is not None)
        run = self.run.removesuffix(".gz")
        return " ".join(parts + [f"test/{self.qrels}", f"test/{run}"])

    @property
    def id(self) -> str:
        return self.expected


SUITE = [
    Command("qrels.test", "results.test", "out.test"),
    Command("qrels.test.with-comments", "results.test", "out.test"),
    Command("qrels.comment.test", "results.comment.test.gz", "out.comment.test"),
    Command("qrels.test", "results.test", "out.test.a", measures=("all_trec",)),
    Command("qrels.test", "results.test", "out.test.aq", per_query=True, measures=("all_trec",)),
    Command("qrels.test", "results.trunc", "out.test.aqc", per_query=True, complete=True, measures=("all_trec",)),
    Command("qrels.test", "results.trunc", "out.test.aqcM", per_query=True, complete=True, max_docs=100,
            measures=("all_trec",)),
    Command("qrels.rel_level", "results.test", "out.test.aql", per_query=True, relevance_level=2,
            measures=("all_trec", "relstring.20")),
]

_LINE = re.compile(r"^(\S+)\s+(\S+)\s+(.*?)\s*$")


def parse_trec_eval_output(path) -> dict[tuple[str, str], str]:
    """trec_eval's ``measure<TAB>qid<TAB>value`` lines (the measure padded with blanks) as
    {(measure, qid): value}, each value exactly as printed (``relstring``'s quoted string included)."""
    out: dict[tuple[str, str], str] = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        m = _LINE.match(line)
        if m is None:
            raise ValueError(f"{path}:{n}: not a trec_eval output line: {line!r}")
        key = (m.group(1), m.group(2))
        if key in out:
            raise ValueError(f"{path}:{n}: {key} printed twice")
        out[key] = m.group(3)
    return out
