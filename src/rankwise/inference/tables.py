"""The comparison table people read: runs as rows, one column per metric@k, each cell the mean, its
interval and the letters of the runs it is significantly better than (ranx-style), with the footnote
that explains the letters. Built by :meth:`rankwise.Result.table`."""

from __future__ import annotations

import html
import math
import re
import shutil
import textwrap
from dataclasses import dataclass

import polars as pl


# What a terminal acts on rather than shows: C0 controls but newline and tab, DEL, C1 controls, and
# the bidirectional marks, embeddings, overrides and isolates (they reorder the text around them).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on (ESC, BEL, CR, ..., bidi overrides) written
    as its escape, ``\\x1b`` or ``\\u202e``; newlines and tabs stay. Applying it twice changes nothing."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


@dataclass(frozen=True)
class ComparisonTable:
    """frame: run, letter, metric, k, value, ci_low, ci_high, n_users, better_than (one row per run,
    metric and k); footnote: what the letters and intervals mean."""

    frame: pl.DataFrame
    footnote: str
    digits: int = 4

    def cells(self) -> tuple[list[str], list[list[str]]]:
        """The header (run, then "metric@k") and one row of strings per run."""
        columns = list(dict.fromkeys(f"{m}@{k}" for m, k in self.frame.select("metric", "k").iter_rows()))
        runs = list(dict.fromkeys(self.frame["run"].to_list()))
        cell = {(r["run"], f"{r['metric']}@{r['k']}"): self._cell(r) for r in self.frame.iter_rows(named=True)}
        letter = dict(self.frame.filter(pl.col("letter") != "").select("run", "letter").unique().iter_rows())
        letter = {run: letter.get(run, "") for run in runs}
        label = (lambda run: f"{letter[run]}  {run}") if any(letter.values()) else str
        return ["run", *columns], [[label(run), *(cell.get((run, c), "") for c in columns)] for run in runs]

    def _cell(self, row: dict) -> str:
        d = self.digits
        value = "nan" if row["value"] is None or math.isnan(row["value"]) else f"{row['value']:.{d}f}"
        lo, hi = row["ci_low"], row["ci_high"]
        interval = "" if lo is None or math.isnan(lo) else f" [{lo:.{d}f}, {hi:.{d}f}]"
        marks = f" {row['better_than']}" if row["better_than"] else ""
        return value + interval + marks

    def text(self, width: int | None = None) -> str:
        """The table as text within ``width`` characters (default: the terminal's width, 100 when the
        output is not a terminal): blocks of whole metrics (every k of one metric together), each
        starting with the run column, then the footnote wrapped to the same width."""
        header, rows = self.cells()
        header, rows = [*map(printable, header)], [[*map(printable, row)] for row in rows]  # (widths as shown)
        width = width or shutil.get_terminal_size((100, 24)).columns
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines = []
        for block in _blocks(header, widths, width):
            lines += [*_lines([header, *rows], widths, [0, *block]), ""]
        return "\n".join(lines + textwrap.wrap(printable(self.footnote), max(width, 20)))

    __repr__ = __str__ = text

    def _repr_html_(self) -> str:
        header, rows = self.cells()
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
        return (f"<table class='rankwise-comparison'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                f"<p style='font-size:smaller'>{html.escape(self.footnote)}</p>")


def _blocks(header: list[str], widths: list[int], width: int) -> list[list[int]]:
    """The value columns (indices 1..) in blocks that fit ``width`` beside the run column: whole metrics
    (the columns of one "metric@k" prefix) while they fit, a metric wider than a block split by k."""
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(header[1:], start=1):
        groups.setdefault(name.rsplit("@", 1)[0], []).append(i)
    room = max(width - widths[0], 1)  # what the run column leaves
    blocks, current, used = [], [], 0
    for columns in groups.values():
        need = sum(widths[i] + 2 for i in columns)
        if current and used + need > room:  # this metric starts a new block
            blocks, current, used = blocks + [current], [], 0
        for i in columns:  # (a metric wider than a whole block is split by k)
            if current and used + widths[i] + 2 > room:
                blocks, current, used = blocks + [current], [], 0
            current.append(i)
            used += widths[i] + 2
    return blocks + [current] if current else blocks or [[]]


def _lines(table: list[list[str]], widths: list[int], columns: list[int]) -> list[str]:
    """The header, a rule and the rows of ``table`` (header first) in ``columns``: the first left-aligned."""
    def line(r):
        return "  ".join(r[i].ljust(widths[i]) if i == 0 else r[i].rjust(widths[i]) for i in columns)

    header, *rows = table
    return [line(header), line(["-" * w for w in widths]), *map(line, rows)]


def build(summary: pl.DataFrame, letters: pl.DataFrame | None, footnote: str, confidence: float,
          digits: int = 4) -> ComparisonTable:
    """summary: (run,) metric, k, value, n_users, ci_low, ci_high; letters: stats.letters' frame."""
    if "run" not in summary.columns:
        summary = summary.with_columns(run=pl.lit("run"))
    if letters is None:
        letters = summary.select("run", "metric", "k").with_columns(letter=pl.lit(""), better_than=pl.lit(""))
    frame = summary.join(letters, on=["run", "metric", "k"], how="left", maintain_order="left").with_columns(
        pl.col("letter").fill_null(""), pl.col("better_than").fill_null(""))
    shown = frame["ci_low"].is_not_null() & frame["ci_low"].is_not_nan()  # a cell with an interval
    note = f"[low, high]: {confidence:.0%} t interval of the mean over users." if shown.any() else ""
    return ComparisonTable(
        frame.select("run", "letter", "metric", "k", "value", "ci_low", "ci_high", "n_users", "better_than"),
        f"{footnote} {note}".strip(), digits)


def from_pairs(summary: pl.DataFrame, pairs: pl.DataFrame, runs, *, test: str, correction, alpha: float,
               confidence: float, digits: int = 4, note: str = "") -> ComparisonTable:
    """The table of several runs from their summary and ``Result.compare``'s pairs; ``note`` ends the
    footnote."""
    from rankwise.inference import stats

    letters, footnote = stats.letters(pairs, runs=list(runs), test=test, correction=correction, alpha=alpha)
    return build(summary, letters, footnote + _fewer_paired(summary, pairs) + note, confidence, digits)


def _fewer_paired(summary: pl.DataFrame, pairs: pl.DataFrame) -> str:
    """A footnote sentence when some comparison paired fewer users than a mean shown has: then the
    letters (paired means) can order two runs otherwise than their cells."""
    users = {(r["run"], r["metric"], r["k"]): r["n_users"] for r in summary.iter_rows(named=True)}
    fewer = [r["n_users"] for r in pairs.iter_rows(named=True)
             if r["n_users"] < max(users.get((r[side], r["metric"], r["k"]), 0) for side in ("run_a", "run_b"))]
    if not fewer:
        return ""
    return (f" The runs scored different users: a comparison pairs only the users both runs scored (down to "
            f"{min(fewer)} users), so its letters can order two runs otherwise than the means shown, each over "
            f"its run's own users; Result.compare() gives the paired means.")
