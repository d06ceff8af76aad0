"""``rankwise`` on the command line: ``rankwise evaluate RECS TRUTH --k 5,10``.

A failure prints ``rankwise: <ErrorClass>: <problem>`` (the offending rows, if any, indented below)
and ``Hint: ...`` (flags, not Python calls: cli_hint), never a traceback (``--debug`` shows it), and
exits with one of EXIT_CODES. A warning prints as ``rankwise: note: <Warning>: ...``. Everything is
printed through say(): control characters from the data show escaped (``\\x1b``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import warnings
from pathlib import Path

import polars as pl

from rankwise._version import __version__
from rankwise.inference.tables import printable
from rankwise.io.write import target_kind
from rankwise.api import BACKENDS, Result, evaluate
from rankwise.conventions import PRESETS
from rankwise.errors import MissingDependencyError, ParameterError, RankwiseError, WriteError

EXIT_CODES = {
    0: "success",
    1: "internal error (a bug: run again with --debug for the traceback and please report it)",
    2: "bad usage, parameter or input (a missing or unreadable file, a missing column, an invalid value)",
    3: "write error (--output, --per-user or --summary could not be written)",
    4: "a missing optional dependency (e.g. pyspark for --backend spark)",
    130: "interrupted (Ctrl-C)",
    141: "stdout closed by its reader (e.g. | head): the printed output was cut short (the --per-user, --summary "
         "and --output files are still written); 128 + SIGPIPE, as any tool stopped by a closed pipe",
}
EPILOG = "exit codes:\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES.items())


def say(text: str = "", file=None, end: str = "\n") -> None:
    """Every line the CLI prints goes through here: run names, segments and ids come from the data, so
    control characters (ESC, BEL, bidi overrides, ...) are shown escaped, never sent to the terminal."""
    print(printable(str(text)), file=sys.stdout if file is None else file, end=end)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning is a note on stderr, ``rankwise: note: CutoffWarning: ...``, not Python's file:line form."""
    say(f"rankwise: note: {category.__name__}: {message}", file=file or sys.stderr)


def _exit_code(error: RankwiseError) -> int:
    if isinstance(error, WriteError):
        return 3
    if isinstance(error, MissingDependencyError):
        return 4
    return 2


# The library's messages name Python arguments; the command line names flags. ``user_col='x'`` ->
# ``--user-col x``, ``k=[1, 5]`` -> ``--k 1,5``, a bare ``score_col`` -> ``--score-col``. Values of
# None are Python-only (e.g. a Convention's ``metrics=None``) and stay as they are.
_FLAG_ARGS = ("user_col", "item_col", "rank_col", "score_col", "relevance_col", "k", "metrics", "convention",
              "backend", "presets", "dialect", "confidence", "segments", "train", "items", "item_features")
_PY_ARG = re.compile(r"\b(?P<name>" + "|".join(_FLAG_ARGS) + r")\b"
                     r"(?P<eq>=(?P<value>'[^']*'|\"[^\"]*\"|\[[^\]]*\]|\.\.\.|[\w.+-]*\w)?)?")


def as_flags(text: str) -> str:
    """Rewrite the Python argument names in a library message as the CLI's flags."""
    def flag(match: re.Match) -> str:
        name, value = match["name"], match["value"]
        if (match["eq"] is None and not name.endswith("_col")) or value == "None":
            return match[0]
        out = "--" + name.replace("_", "-")
        if value:
            if value.startswith("["):
                value = ",".join(part.strip(" '\"") for part in value[1:-1].split(",") if part.strip() != "...")
            out += " " + value.strip("'\"")
        return out
    return _PY_ARG.sub(flag, text)


# A hint's Python code the command line has no flag for: a call on pl, rankwise, a convention, a Spark
# frame, a Convention(...) or PRESETS[...] (a method chain such as ``.cast(pl.Int64)`` too).
_PY_CODE = re.compile(r"\b(?:pl|rankwise|convention|df|F)\.\w|\bConvention\(|\bPRESETS\[|(?<![\w)\]])\.\w+\(")
_CODE = "\uFFFC"  # stands for one piece of such code while the clauses around it are dropped
# (pattern, replacement), in order: a Python call the library names with its flag, "(CLI: --train)", gives
# the flag; then code goes with its clause: "(code)", ", e.g. code", "use code, or", ", or ... code",
# ": code"; a sentence still holding code goes whole. evaluate() is the evaluate command.
_CLI_HINT = [(re.compile(p), r) for p, r in [
    (r"(?:evaluate\(\.\.\., [^)]*\)|tables=\{[^}]*\}) \((?:CLI|rankwise sql): ([^)]*)\)", r"\1"),
    (r" \(" + _CODE + r"\)", ""),
    (r", e\.g\. " + _CODE + r"(?: or " + _CODE + r")*,?", ""),
    (r"\b\w+ " + _CODE + r", or ", ""),
    (r", or [^.;]*?" + _CODE + r"[^.;]*", ""),
    (r": " + _CODE + r"(?= \(|[.;]|$)", ""),
    (r" ?[^.]*" + _CODE + r"[^.]*(?:\.|$)", ""),
    (r"\bevaluate\(\)", "rankwise evaluate"),
]]


def _end_of_code(text: str, i: int) -> int:
    """Where the Python expression that starts at ``i`` ends: names, dots between names, brackets
    (balanced, quotes inside skipped)."""
    depth, quote = 0, None
    while i < len(text):
        c = text[i]
        if quote:
            quote = None if c == quote else quote
        elif depth and c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}" and depth:
            depth -= 1
        elif not depth and not (c.isalnum() or c == "_" or (c == "." and i + 1 < len(text) and text[i + 1].isalnum())):
            break
        i += 1
    return i


def cli_hint(hint: str) -> str:
    """A library hint for the command line: Python calls the CLI has a flag for become the flag, code it
    has none for is left out with its clause (``Cast both to text, e.g. pl.col('u').cast(pl.String).`` ->
    ``Cast both to text.``), then argument names become flags (as_flags)."""
    pieces, at = [], 0
    for match in _PY_CODE.finditer(hint):
        if match.start() >= at:
            pieces += [hint[at:match.start()], _CODE]
            at = _end_of_code(hint, match.start())
    text = "".join(pieces) + hint[at:]
    for pattern, replacement in _CLI_HINT:
        text = pattern.sub(replacement, text)
    return as_flags(text.strip())


def format_error(error: RankwiseError) -> str:
    """``rankwise: Class: problem``, the offending rows indented (one ``col=value`` line each), the hint."""
    lines = [f"rankwise: {type(error).__name__}: {as_flags(error.problem)}"]
    rows = error.rows
    if isinstance(rows, pl.DataFrame):
        lines += ["  " + "  ".join(f"{col}={value!r}" for col, value in row.items())
                  for row in rows.head(5).iter_rows(named=True)]
    elif rows is not None:
        lines += ["  " + line for line in str(rows).splitlines()]
    if error.hint:
        lines.append(f"Hint: {cli_hint(error.hint)}")
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are ParameterErrors (one line, exit code 2), like every other failure."""

    def error(self, message: str):
        raise ParameterError(f"{message}.", hint=f"See `{self.prog} --help`.")


def _ks(text: str) -> list[int]:
    parts = text.split(",")
    if not parts[-1].strip():
        parts.pop()  # a trailing comma; an empty part between two cutoffs (1,,3) is a typo, refused below
    if not any(part.strip() for part in parts):
        return []  # no cutoff at all: evaluate() says what k takes
    try:
        return [int(part) for part in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    common = {"epilog": EPILOG, "formatter_class": argparse.RawDescriptionHelpFormatter}
    parser = _Parser(prog="rankwise", description="Ranking and recommendation metrics.", **common)
    parser.add_argument("--version", action="version", version=f"rankwise {__version__}")
    parser.add_argument("--debug", action="store_true", help="on failure, show the Python traceback")
    commands = parser.add_subparsers(dest="command", required=True)
    ev = commands.add_parser("evaluate", help="evaluate recommendations against ground truth", **common)
    _evaluation_arguments(ev)
    ev.add_argument("--per-user", type=Path, help="write the per-user frame (.parquet, .csv, .jsonl, .json)")
    ev.add_argument("--summary", type=Path, help="write the summary frame (.parquet, .csv, .jsonl, .json)")
    ev.add_argument("--output", help="append the run, with metadata, to a postgresql:// URI, a .duckdb "
                    "file or .parquet/.csv/.jsonl files (see rankwise.io.write)")
    trec = ev.add_argument_group("TREC files and trec_eval's output (rankwise evaluate RUN QRELS --trec -m all_trec)")
    trec.add_argument("--trec", action="store_true",
                      help="print trec_eval's layout (measure<TAB>qid<TAB>value) under the trec_eval preset")
    trec.add_argument("-m", dest="trec_measures", action="append", default=[], metavar="MEASURE",
                      help="with --trec: a measure, a family with parameters (P.5,10) or a set (official, all_trec, "
                      "set); repeat for several (default official)")
    trec.add_argument("-q", dest="trec_per_query", action="store_true", help="with --trec: a line per query too")
    trec.add_argument("-c", dest="trec_complete", action="store_true",
                      help="with --trec: average over every qrels query (a query without results scores 0)")
    trec.add_argument("-M", dest="trec_max_docs", type=int, metavar="N",
                      help="with --trec: only the first N documents of each query")
    trec.add_argument("-l", dest="trec_level", type=int, metavar="LEVEL",
                      help="with --trec: relevant = qrels level >= LEVEL (default 1)")
    rp = commands.add_parser("report", help="evaluate, then write one self-contained HTML report", **common)
    _evaluation_arguments(rp)
    rp.add_argument("--output", "-o", type=Path, default=Path("report.html"),
                    help="the HTML file (default report.html)")
    rp.add_argument("--title", default=None, help="the report's title")
    sq = commands.add_parser("sql", help="print the metrics as one SQL script for an engine", **common)
    sq.add_argument("--dialect", default="duckdb", help="duckdb, postgres, spark, databricks, bigquery, "
                    "snowflake, trino, clickhouse, redshift (default duckdb)")
    sq.add_argument("--k", type=_ks, default=[10], help="cutoffs, e.g. 5,10 (default 10)")
    sq.add_argument("--metrics", type=_names, default=None, help="e.g. precision,ndcg; all = every metric (default: rankwise.DEFAULT_METRICS)")
    sq.add_argument("--convention", choices=sorted(PRESETS), default="default")
    sq.add_argument("--recommendations", default="recommendations", help="table name or SELECT")
    sq.add_argument("--ground-truth", default=None, help="table name or SELECT (default ground_truth; "
                    "beyond-accuracy metrics read it only when given)")
    for name in ("train", "items", "item-features"):
        sq.add_argument(f"--{name}", default=None, help=f"beyond-accuracy metrics: the {name.replace('-', ' ')} "
                        "table name or SELECT (as evaluate's --" + name + " reads it)")
    sq.add_argument("--schema", default=None, help="schema/dataset for the per-user table")
    for name in ("user", "item", "rank", "relevance"):
        sq.add_argument(f"--{name}-col", default=name, help=f"name of the {name} column (default {name})")
    sq.add_argument("--score-col", default=None, help="rank by this score column instead of --rank-col")
    sq.add_argument("--no-relevance", action="store_true", help="no relevance column: every label counts 1")
    sq.add_argument("--feature-col", default="feature", help="--item-features' feature column (default feature)")
    sq.add_argument("--value-col", default="value", help="--item-features' value column (default value)")
    sq.add_argument("--no-value", action="store_true", help="--item-features has no value column: every feature is 1")
    sq.add_argument("--prefix", default="rankwise_", help="prefix of the script's tables and views (default rankwise_)")
    cmp_ = commands.add_parser("compare", help="the same data under several conventions, side by side", **common)
    ex = commands.add_parser("explain", help="which knobs make two conventions disagree, and by how much",
                             **common)
    for sub in (cmp_, ex):
        sub.add_argument("recommendations", help="Parquet or CSV file: user, item, rank (or score)")
        sub.add_argument("ground_truth", help="Parquet or CSV file: user, item, optional relevance")
        sub.add_argument("--backend", choices=sorted(BACKENDS), default="polars")
        _column_arguments(sub)
        _side_arguments(sub)
    cmp_.add_argument("--k", type=_ks, default=[10], help="cutoffs, e.g. 5,10 (default 10)")
    cmp_.add_argument("--metrics", type=_names, default=None, help="e.g. map,ndcg; all = every metric (default: rankwise.DEFAULT_METRICS)")
    cmp_.add_argument("--presets", type=_names, default=None, help="e.g. default,ranx,spark (default: all)")
    ex.add_argument("--a", default="default", choices=sorted(PRESETS), help="first convention (default: default)")
    ex.add_argument("--b", default="ranx", choices=sorted(PRESETS), help="second convention (default: ranx)")
    ex.add_argument("--metric", default="map", help="one metric (default map)")
    ex.add_argument("--k", type=int, default=10, help="one cutoff (default 10)")
    for sub in (ev, rp, sq, cmp_, ex):  # --debug after the command too (SUPPRESS: keeps the global value)
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                         help="on failure, show the Python traceback")
    return parser


def _evaluation_arguments(sub) -> None:
    """The inputs and options ``evaluate`` and ``report`` share."""
    sub.add_argument("recommendations", nargs="?", help="Parquet or CSV file: user, item, rank (or score)")
    sub.add_argument("ground_truth", help="Parquet or CSV file: user, item, optional relevance")
    sub.add_argument("--run", action="append", type=_run, metavar="NAME=PATH", default=[],
                     help="a named run (repeat for several: --run pop=pop.parquet --run als=als.parquet); "
                     "then give only the ground truth")
    sub.add_argument("--confidence", type=float, default=0.95, help="level of the summary's t intervals")
    sub.add_argument("--test", choices=["t", "wilcoxon", "randomization", "bootstrap"], default="t",
                     help="with several --run: the paired test behind the table's letters (default t)")
    sub.add_argument("--correction", choices=["holm", "bonferroni", "none"], default="holm",
                     help="with several --run: multiple-comparison correction within a metric and k")
    sub.add_argument("--k", type=_ks, default=[10], help="cutoffs, e.g. 5,10 (default 10)")
    sub.add_argument("--metrics", type=_names, default=None,
                     help="e.g. precision,ndcg,novelty,item_coverage; all = every accuracy metric (default: rankwise.DEFAULT_METRICS)")
    sub.add_argument("--segments", help="every mean per group of users too: a (user, segment) table, Parquet or "
                     "CSV, or the name of a ground-truth column")
    sub.add_argument("--backend", choices=sorted(BACKENDS), default="polars")
    sub.add_argument("--convention", choices=sorted(PRESETS), default="default")
    sub.add_argument("--format", choices=["auto", "trec", "table"], default="auto",
                     help="the input files: TREC run and qrels files, tables (Parquet, CSV), or told by their content "
                     "(default auto)")
    _side_arguments(sub)
    _column_arguments(sub)


def _column_arguments(sub) -> None:
    for name in ("user", "item", "rank", "relevance"):
        sub.add_argument(f"--{name}-col", default=name, help=f"name of the {name} column (default {name})")
    sub.add_argument("--score-col", default=None, help="rank by this score column, even where there is a rank "
                     "column (default: a 'score' column ranks a table without --rank-col)")


def _side_arguments(sub) -> None:
    sub.add_argument("--train", help="beyond-accuracy metrics: train interactions (user, item), Parquet or CSV")
    sub.add_argument("--items", help="beyond-accuracy metrics: the item catalog (a table with the item column)")
    sub.add_argument("--item-features", help="beyond-accuracy metrics: (item, feature[, value]) or (item, embedding)")


def _columns(args) -> dict:
    """evaluate()'s column arguments; an explicit --score-col ranks by the scores (rank_col=None)."""
    return {"user_col": args.user_col, "item_col": args.item_col, "relevance_col": args.relevance_col,
            "rank_col": None if args.score_col else args.rank_col, "score_col": args.score_col or "score"}


def _side(args) -> dict:
    return {"train": args.train, "items": args.items, "item_features": args.item_features}


def _compare_command(args) -> int:
    from rankwise.explain import compare_conventions, explain

    if args.command == "compare":
        table, skipped = compare_conventions(args.recommendations, args.ground_truth, k=args.k, presets=args.presets,
                                             metrics=args.metrics, backend=args.backend, return_skipped=True,
                                             **_columns(args), **_side(args))
        with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=240, tbl_hide_dataframe_shape=True,
                       tbl_hide_column_data_types=True, float_precision=4):
            say(table)
        if skipped:
            say("\nskipped (cannot apply to these inputs; name one in --presets to see the error):")
            for name, reason in skipped.items():
                say(f"  {name}: {as_flags(reason)}")
    else:
        say(explain(args.recommendations, args.ground_truth, a=args.a, b=args.b, metric=args.metric,
                    k=args.k, backend=args.backend, **_columns(args), **_side(args)))
    return 0


def _sql_command(args) -> int:
    from rankwise.sqlgen.render import sql

    def given(tables: dict) -> dict:  # (the accuracy script defaults to a ground_truth table)
        return {key: table for key, table in tables.items() if table is not None}

    say(sql(metrics=args.metrics, k=args.k, convention=args.convention, dialect=args.dialect,
            tables=given({"recommendations": args.recommendations, "ground_truth": args.ground_truth,
                          **_side(args)}),
            user_col=args.user_col, item_col=args.item_col,
            rank_col=None if args.score_col else args.rank_col, score_col=args.score_col,
            relevance_col=None if args.no_relevance else args.relevance_col,
            feature_col=args.feature_col, value_col=None if args.no_value else args.value_col,
            schema=args.schema, prefix=args.prefix), end="")
    return 0


def _run(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, got {text!r}")
    return name, path


def _evaluate(args):
    """The Result (and seconds taken) of the inputs ``evaluate`` and ``report`` share."""
    if args.run and args.recommendations:  # argparse gave the one positional to recommendations
        raise ParameterError("give either RECOMMENDATIONS GROUND_TRUTH or --run NAME=PATH ... GROUND_TRUTH, not both.",
                             hint="With --run, the only positional argument is the ground truth.")
    if not args.run and not args.recommendations:
        raise ParameterError("missing the recommendations.", hint="rankwise evaluate RECS TRUTH, or --run NAME=PATH TRUTH.")
    names = [name for name, _ in args.run]
    if len(set(names)) != len(names):
        raise ParameterError(f"run names repeat: {names}.", hint="Give each --run a different NAME.")
    recommendations = dict(args.run) if args.run else args.recommendations
    recommendations, truth, _ = _read_inputs(recommendations, args.ground_truth, args.format)
    start = time.perf_counter()
    result = evaluate(
        recommendations, truth, k=args.k, metrics=args.metrics, confidence=args.confidence,
        backend=args.backend, convention=args.convention, segments=args.segments,
        **_columns(args), **_side(args),
    )
    return result, time.perf_counter() - start


def _evaluate_command(args) -> int:
    if args.trec:
        return _trec_command(args)
    flags = [f for f, v in (("-m", args.trec_measures), ("-q", args.trec_per_query), ("-c", args.trec_complete),
                            ("-M", args.trec_max_docs is not None), ("-l", args.trec_level is not None)) if v]
    if flags:
        raise ParameterError(f"{', '.join(flags)} {'is a trec_eval flag' if len(flags) == 1 else 'are trec_eval flags'}: "
                             "they go with --trec.", hint="Add --trec to print trec_eval's layout.")
    for path in (args.per_user, args.summary):
        if path:
            _format(path)  # a wrong suffix fails before the evaluation, not after
    if args.output:
        target_kind(args.output)  # so does an --output rankwise cannot tell how to write
    result, elapsed = _evaluate(args)
    if len(result.runs) > 1:
        text = render_runs(result, args, elapsed)
    else:
        text = render(result, args.convention, args.backend, elapsed)
    if result.segments is not None:
        text += "\n\n" + render_segments(result.segments)
    try:
        say(text)  # first: a failed write keeps the numbers
        sys.stdout.flush()
        reader_left = False
    except BrokenPipeError:  # `| head`: the table is cut short, the files asked for are still written
        reader_left = True
    for path, frame in ((args.per_user, result.per_user), (args.summary, result.summary)):
        if path:
            write_frame(frame, path)
    if args.output:
        written = result.write(args.output)
        if not reader_left:
            say(f"rankwise: {written.description}")  # the tables, named
    if reader_left:
        raise BrokenPipeError  # exit 141 (main)
    return 0


def _report_command(args) -> int:
    _check_writable(Path(args.output))  # before the evaluation, which the report would otherwise lose
    result, elapsed = _evaluate(args)
    path = result.report(args.output, title=args.title, compare={
        "test": args.test, "correction": None if args.correction == "none" else args.correction})
    say(f"rankwise {__version__}: report of {len(result.runs) or 1} run(s) written to {path} ({elapsed:.2f}s to evaluate)")
    return 0


# -- TREC files in, trec_eval's layout out ---------------------------------------------------------------

_TABLE_SUFFIXES = {".parquet", ".pq", ".csv", ".json", ".jsonl", ".ndjson", ".arrow", ".ipc", ".feather"}


def sniff_trec(path) -> str | None:
    """"run" (6 or more fields), "qrels" (4 fields) or None (a table, or not a local file): told by the
    first line that is not blank or a comment, after decompressing (gzip, bzip2, xz, zstd)."""
    from rankwise.inputs.trec import _open

    if not isinstance(path, (str, os.PathLike)) or not os.path.isfile(path):
        return None
    if Path(path).suffix.lower() in _TABLE_SUFFIXES:
        return None
    with open(path, "rb") as raw:
        if raw.read(4) == b"PAR1":
            return None
    stream, _ = _open(os.fspath(path))
    with stream:
        head = stream.read(1 << 16)
    for line in head.split(b"\n")[:-1] or head.split(b"\n"):
        fields = line.split()
        if not fields or fields[0].startswith(b"#"):
            continue
        return "qrels" if len(fields) == 4 else "run" if len(fields) >= 6 else None
    return None


def _read_inputs(recommendations, ground_truth, fmt: str):
    """(recommendations, ground truth, {run: tag}) with TREC files read (a run file's tags become runs;
    trec_eval's order, QRELS RUN, is accepted: told by the fields); tables are passed on as they are."""
    if fmt == "table" or isinstance(recommendations, dict):
        return recommendations, ground_truth, {}
    from rankwise.inputs.trec import read_qrels, read_trec_run

    kinds = [sniff_trec(recommendations), sniff_trec(ground_truth)]
    if kinds == ["qrels", "run"]:  # trec_eval's order
        recommendations, ground_truth = ground_truth, recommendations
        kinds.reverse()
    if fmt == "trec" and kinds != ["run", "qrels"]:
        raise ParameterError(f"--format trec: expected a TREC run (qid Q0 docno rank score tag) and a qrels file "
                             f"(qid iter docno rel), got {kinds[0] or 'not a run'} and {kinds[1] or 'not qrels'}.",
                             hint="Give RUN QRELS (or QRELS RUN), or --format table for Parquet/CSV tables.")
    tags = {}
    if kinds[0] == "run":
        run = read_trec_run(recommendations)
        tags = {tag: tag for tag in run.get_column("run").unique(maintain_order=True).to_list()}
        frames = {tag: run.filter(pl.col("run") == tag).select("user", "item", "rank", "score") for tag in tags}
        recommendations = frames if len(frames) > 1 else next(iter(frames.values()))
    if kinds[1] == "qrels":  # a negative level (-1: pooled, not judged) is read by negative_relevance='unjudged'
        ground_truth = read_qrels(ground_truth)
    return recommendations, ground_truth, tags


def _trec_command(args) -> int:
    """trec_eval's output: ``%-22s\\t%s\\t%6.4f`` lines (an integer measure with %ld), with -q every query's
    lines (qids in byte order) before the 'all' ones; measures in trec_eval's order."""
    from rankwise.metrics import names as _names

    if args.run or not args.recommendations:
        raise ParameterError("--trec takes one run file and the qrels: RUN QRELS (or QRELS RUN).",
                             hint="rankwise evaluate run.txt qrels.txt --trec -m all_trec")
    if args.trec_max_docs is not None and args.trec_max_docs < 1:
        raise ParameterError(f"-M takes a positive number of documents, got {args.trec_max_docs}.", hint="e.g. -M100.")
    recs, truth, tags = _read_inputs(args.recommendations, args.ground_truth, args.format)
    runs = recs if isinstance(recs, dict) else {
        next(iter(tags), None) or Path(str(args.recommendations)).stem: recs}
    if args.trec_max_docs is not None:  # trec_eval's -M: the first N documents in its order
        runs = {name: _lazy(r).filter(pl.col("rank") <= args.trec_max_docs) for name, r in runs.items()}
    conv = PRESETS["trec_eval"]
    if args.trec_complete:
        conv = conv.replace(users="labels", empty_predictions="zero")
    if args.trec_level is not None:
        conv = conv.replace(relevance_threshold=float(args.trec_level))
    asked = list(dict.fromkeys(n for option in (args.trec_measures or ["official"]) for n in _names.expand_trec(option)))
    order = {f.name: i for i, f in enumerate(_names.FAMILIES) if f.style == "trec_eval"}
    parsed = sorted((_names.parse(n) for n in asked),
                    key=lambda m: order.get(m.family.name, len(order)) if m.family.style == "trec_eval" else len(order))
    info = [m for m in parsed if m.family.metric is None and m.family.name in ("runid", "num_q")]
    skipped = [m for m in parsed if m not in info and not m.live]
    measures = [m for m in parsed if m.live]
    if skipped:
        families = {}
        for m in skipped:
            families.setdefault(m.family.name, []).append(m.name)
        text = ", ".join(v[0] if len(v) == 1 else f"{k}_* ({len(v)})" for k, v in families.items())
        say(f"rankwise: note: not computed by rankwise yet ({_names.ISSUE}), left out: {text}", file=sys.stderr)
    # one evaluation: a parameter family's values (iprec_at_recall_<level>, Rprec_mult_<m>) are computed
    # beside the other measures, from the same per-query statistics
    batches = [(measures, _names.requirements(measures, conv))] if measures else []
    out = []
    for name, recs in runs.items():
        out += _trec_lines(name, recs, truth, measures, batches, info, args)
    try:
        sys.stdout.write("".join(out))
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    return 0


def _lazy(frame):
    return frame.lazy() if isinstance(frame, pl.DataFrame) else frame


def _trec_value(m, value: float) -> str:
    return f"{int(value)}" if m.family.value == "int" else f"{value:6.4f}"


def _trec_lines(runid, recs, truth, measures, batches, info, args) -> list[str]:
    """One run's lines in trec_eval's layout; ``batches``: (measures, convention) evaluated together."""
    line = "{:<22}\t{}\t{}\n".format
    out = []
    if measures:
        per, summary = None, {}
        for batch, conv in batches:
            with warnings.catch_warnings():  # a cutoff past every list (P_1000 of 500 documents) is trec_eval's too
                from rankwise.errors import CutoffWarning

                warnings.simplefilter("ignore", CutoffWarning)
                result = evaluate(recs, truth, measures=[m.name for m in batch], convention=conv,
                                  backend=args.backend, **_columns(args))
            user = result.user_col
            per = result.per_measure if per is None else per.join(result.per_measure, on=user, how="full",
                                                                  coalesce=True)
            summary.update({r["measure"]: r["value"] for r in result.measure_summary.iter_rows(named=True)})
        per = per.sort(pl.col(user).cast(pl.String))
        if args.trec_per_query:
            for row in per.iter_rows(named=True):
                qid = printable(str(row[user]))
                out += [line(m.name, qid, _trec_value(m, row[m.name])) for m in measures
                        if m.family.aggregate != "gm"]  # trec_eval prints gm_map for 'all' only
        n_queries = per.height
    else:
        summary, n_queries = {}, None
    for m in info:
        if m.family.name == "runid":
            out.append(line("runid", "all", printable(str(runid))))
        else:
            if n_queries is None:
                raise ParameterError("num_q alone: rankwise counts the queries while computing a measure.",
                                     hint="Add a measure, e.g. -m num_q -m map.")
            out.append(line("num_q", "all", n_queries))
    return _trec_ordered(out, info, measures, summary, line)


def _trec_ordered(out, info, measures, summary, line) -> list[str]:
    """The per-query lines, then runid and num_q, then each measure's 'all' line."""
    per_query, info_lines = out[:len(out) - len(info)], out[len(out) - len(info):]
    return per_query + info_lines + [line(m.name, "all", _trec_value(m, summary[m.name])) for m in measures]


_COMMANDS = {"evaluate": _evaluate_command, "report": _report_command, "sql": _sql_command, "compare": _compare_command,
             "explain": _compare_command}


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit code (EXIT_CODES). Failures print one error and a hint."""
    with warnings.catch_warnings():  # (restores the caller's showwarning when main returns)
        warnings.showwarning = _show_warning  # a warning is printed as the rest is
        return _main(argv)


def _main(argv) -> int:
    args = None  # stays None on a usage error: nothing worth a traceback
    try:
        args = build_parser().parse_args(argv)
        code = _COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed stdout fails here, not in the interpreter's flush at exit
        return code
    except SystemExit as exit_:  # --help, --version
        return exit_.code if isinstance(exit_.code, int) else 0
    except BrokenPipeError:  # the reader left: stop quietly, and make the flush at exit a no-op
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # a stdout without a descriptor (captured in-process)
            pass
        return 141
    except KeyboardInterrupt:
        if getattr(args, "debug", False):
            raise
        say("rankwise: interrupted", file=sys.stderr)
        return 130
    except RankwiseError as error:
        if getattr(args, "debug", False):
            raise
        say(format_error(error), file=sys.stderr)
        return _exit_code(error)
    except Exception as error:  # a bug: say so in one line, keep the traceback for --debug
        if getattr(args, "debug", False):
            raise
        first = (str(error).strip().splitlines() or [""])[0]
        say(f"rankwise: internal error: {type(error).__name__}: {first}\n"
              "Hint: run again with --debug for the traceback; please report it.", file=sys.stderr)
        return 1


_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "ndjson", ".ndjson": "ndjson",
            ".json": "json"}  # .json: one JSON array of row objects, as a .json reader expects


def _format(path: Path) -> str:
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ParameterError(f"cannot tell the format of {str(path)!r} from its suffix.",
                             hint="Name the file .parquet, .csv, .jsonl or .json.")
    return fmt


def _check_writable(path: Path) -> None:
    """A WriteError now, not after the evaluation, for a file that cannot be written: a directory, a
    path under a file, or a place this process cannot create the file in (tried: opened for appending,
    removed again when it was not there)."""
    if path.is_dir():
        raise WriteError(f"cannot write {str(path)!r}: it is a directory.", hint="Name a file, e.g. report.html.")
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a"):
            pass
    except OSError as error:
        raise _file_write_error(path, error) from error
    if not existed:
        path.unlink()


def _file_write_error(path: Path, error: OSError) -> WriteError:
    """The WriteError of a file that could not be written: a part of its path that is a file, or the OS's reason."""
    blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    why = f"{str(blocker)!r} is a file, not a directory" if blocker else \
        (error.strerror or str(error)).removesuffix(f": {path}")  # (Polars' message ends with the path)
    return WriteError(f"cannot write {str(path)!r}: {why}.",
                      hint="Check that the directory exists and is writable and that the path is not a directory.")


def write_frame(frame: pl.DataFrame, path: Path) -> None:
    """Write by extension: .parquet, .csv, .jsonl / .ndjson (a row per line), .json (one array); an OS
    error becomes a WriteError."""
    fmt = _format(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        getattr(frame, f"write_{fmt}")(path)
    except OSError as error:
        raise _file_write_error(path, error) from error


def render_runs(result: Result, args, elapsed: float) -> str:
    """Several runs: the comparison table (runs x metric@k, t intervals, significance letters)."""
    table = result.table(test=args.test, correction=None if args.correction == "none" else args.correction)
    left_out = [f"  {run:<12} {n:>8}  {reason}"
                for run, reason, n in result.excluded.select("run", "reason", "n_users").iter_rows() if n]
    head = (f"rankwise {__version__}  convention={args.convention}  backend={args.backend}  "
            f"runs={len(result.runs)}  {elapsed:.2f}s")
    return "\n".join([head, "", table.text(), *(["", "left out of the means:", *left_out] if left_out else [])])


def render(result: Result, convention: str, backend: str, elapsed: float) -> str:
    """The summary as a metric x k table, then who was left out of the means (per run)."""
    if result.runs:
        parts = []
        for run in result.runs:
            one = Result(*(f.filter(pl.col("run") == run).drop("run") for f in (result.long, result.summary,
                                                                                  result.excluded)),
                         result.convention, result.request, result.user_col)
            parts.append(f"run {run}\n" + render(one, convention, backend, elapsed))
        return "\n\n".join(parts)
    out = [f"rankwise {__version__}  convention={convention}  backend={backend}  "
           f"users={result.per_user.height}  {elapsed:.2f}s", "", *_metric_table(result.summary, [])]
    left_out = [(reason, n) for reason, n in result.excluded.select("reason", "n_users").iter_rows() if n]
    if left_out:
        out += ["", "left out of the means:", *(f"  {n:>8}  {reason}" for reason, n in left_out)]
    return "\n".join(out)


def render_segments(segments: pl.DataFrame) -> str:
    """The means per segment (and run): one line per (run, segment, metric), a column per k."""
    keys = [c for c in ("run", "segment") if c in segments.columns]
    return "\n".join(["by segment:", *_metric_table(segments, keys)])


def _metric_table(frame: pl.DataFrame, keys: list[str]) -> list[str]:
    """Lines of a (keys..., metric) x k table of the values, then the users in the means (a range
    when they differ by k)."""
    ks = sorted(set(frame["k"].to_list()))
    header = [*keys, "metric", *[f"@{k}" for k in ks], "users"]
    rows = []
    for group, part in frame.group_by(*keys, "metric", maintain_order=True):  # one pass, not a filter per group
        values = [f"{v:.4f}" for v in part.sort("k")["value"].to_list()]
        counts = sorted(set(part["n_users"].to_list()))
        rows.append([*map(printable, map(str, group)), *values,  # (escaped before the widths: as shown)
                     f"{counts[0]}-{counts[-1]}" if len(counts) > 1 else str(counts[0])])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    texts = len(keys) + 1  # left-aligned columns

    def line(row):
        return "  ".join(c.ljust(w) if i < texts else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))

    return [line(header), line(["-" * w for w in widths]), *map(line, rows)]


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
