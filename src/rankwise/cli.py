"""``rankwise`` on the command line: ``rankwise evaluate RECS TRUTH --k 5,10``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import polars as pl

from . import __version__
from .api import BACKENDS, Result, evaluate
from .conventions import PRESETS
from .errors import RankwiseError


def _ks(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--k takes comma-separated integers, got {text!r}") from None


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rankwise", description="Ranking and recommendation metrics.")
    parser.add_argument("--version", action="version", version=f"rankwise {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    ev = commands.add_parser("evaluate", help="evaluate recommendations against ground truth")
    ev.add_argument("recommendations", help="Parquet or CSV file: user, item, rank (or score)")
    ev.add_argument("ground_truth", help="Parquet or CSV file: user, item, optional relevance")
    ev.add_argument("--k", type=_ks, default=[10], help="cutoffs, e.g. 5,10 (default 10)")
    ev.add_argument("--metrics", type=_names, default=None, help="e.g. precision,ndcg (default: all)")
    ev.add_argument("--backend", choices=sorted(BACKENDS), default="polars")
    ev.add_argument("--convention", choices=sorted(PRESETS), default="default")
    ev.add_argument("--per-user", type=Path, help="write the per-user frame (.parquet, .csv, .jsonl)")
    ev.add_argument("--summary", type=Path, help="write the summary frame (.parquet, .csv, .jsonl)")
    ev.add_argument("--output", help="append the run, with metadata, to a postgresql:// URI, a .duckdb "
                    "file or .parquet/.csv/.jsonl files (see rankwise._write)")
    for name in ("user", "item", "rank", "score", "relevance"):
        ev.add_argument(f"--{name}-col", default=name, help=f"name of the {name} column (default {name})")
    sq = commands.add_parser("sql", help="print the metrics as one SQL script for an engine")
    sq.add_argument("--dialect", default="duckdb", help="duckdb, postgres, spark, databricks, bigquery, "
                    "snowflake, trino, clickhouse, redshift (default duckdb)")
    sq.add_argument("--k", type=_ks, default=[10], help="cutoffs, e.g. 5,10 (default 10)")
    sq.add_argument("--metrics", type=_names, default=None, help="e.g. precision,ndcg (default: all)")
    sq.add_argument("--convention", choices=sorted(PRESETS), default="default")
    sq.add_argument("--recommendations", default="recommendations", help="table name or SELECT")
    sq.add_argument("--ground-truth", default="ground_truth", help="table name or SELECT")
    sq.add_argument("--schema", default=None, help="schema/dataset for the per-user table")
    for name in ("user", "item", "rank", "relevance"):
        sq.add_argument(f"--{name}-col", default=name, help=f"name of the {name} column (default {name})")
    sq.add_argument("--score-col", default=None, help="rank by this score column instead of --rank-col")
    sq.add_argument("--no-relevance", action="store_true", help="no relevance column: every label counts 1")
    cmp_ = commands.add_parser("compare", help="the same data under several conventions, side by side")
    ex = commands.add_parser("explain", help="which knobs make two conventions disagree, and by how much")
    for sub in (cmp_, ex):
        sub.add_argument("recommendations", help="Parquet or CSV file: user, item, rank (or score)")
        sub.add_argument("ground_truth", help="Parquet or CSV file: user, item, optional relevance")
        sub.add_argument("--backend", choices=sorted(BACKENDS), default="polars")
        for name in ("user", "item", "rank", "score", "relevance"):
            sub.add_argument(f"--{name}-col", default=name, help=f"name of the {name} column (default {name})")
    cmp_.add_argument("--k", type=_ks, default=[10], help="cutoffs, e.g. 5,10 (default 10)")
    cmp_.add_argument("--metrics", type=_names, default=None, help="e.g. map,ndcg (default: all)")
    cmp_.add_argument("--presets", type=_names, default=None, help="e.g. default,ranx,spark (default: all)")
    ex.add_argument("--a", default="default", choices=sorted(PRESETS), help="first convention (default: default)")
    ex.add_argument("--b", default="ranx", choices=sorted(PRESETS), help="second convention (default: ranx)")
    ex.add_argument("--metric", default="map", help="one metric (default map)")
    ex.add_argument("--k", type=int, default=10, help="one cutoff (default 10)")
    return parser


def _columns(args) -> dict:
    return {f"{n}_col": getattr(args, f"{n}_col") for n in ("user", "item", "rank", "score", "relevance")}


def _compare_command(args) -> int:
    from .compare import compare_conventions, explain

    if args.command == "compare":
        table = compare_conventions(args.recommendations, args.ground_truth, k=args.k, presets=args.presets,
                                    metrics=args.metrics, backend=args.backend, **_columns(args))
        with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=240, tbl_hide_dataframe_shape=True,
                       tbl_hide_column_data_types=True, float_precision=4):
            print(table)
    else:
        print(explain(args.recommendations, args.ground_truth, a=args.a, b=args.b, metric=args.metric,
                      k=args.k, backend=args.backend, **_columns(args)))
    return 0


def _sql_command(args) -> int:
    from .render import sql

    try:
        print(sql(metrics=args.metrics, k=args.k, convention=args.convention, dialect=args.dialect,
                  tables={"recommendations": args.recommendations, "ground_truth": args.ground_truth},
                  user_col=args.user_col, item_col=args.item_col,
                  rank_col=None if args.score_col else args.rank_col, score_col=args.score_col,
                  relevance_col=None if args.no_relevance else args.relevance_col, schema=args.schema), end="")
    except RankwiseError as error:
        print(f"rankwise: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "sql":
        return _sql_command(args)
    if args.command in ("compare", "explain"):
        try:
            return _compare_command(args)
        except RankwiseError as error:
            print(f"rankwise: {type(error).__name__}: {error}", file=sys.stderr)
            return 2
    start = time.perf_counter()
    try:
        result = evaluate(
            args.recommendations, args.ground_truth, k=args.k, metrics=args.metrics,
            backend=args.backend, convention=args.convention, user_col=args.user_col,
            item_col=args.item_col, rank_col=args.rank_col, score_col=args.score_col,
            relevance_col=args.relevance_col,
        )
    except RankwiseError as error:
        print(f"rankwise: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - start
    for path, frame in ((args.per_user, result.per_user), (args.summary, result.summary)):
        if path:
            write_frame(frame, path)
    if args.output:
        try:
            result.write(args.output)
        except RankwiseError as error:
            print(f"rankwise: {type(error).__name__}: {error}", file=sys.stderr)
            return 2
    print(render(result, args.convention, args.backend, elapsed))
    return 0


def write_frame(frame: pl.DataFrame, path: Path) -> None:
    """Write by extension: .parquet, .csv, .jsonl / .ndjson."""
    suffix = path.suffix.lower()
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix in (".parquet", ".pq"):
        frame.write_parquet(path)
    elif suffix == ".csv":
        frame.write_csv(path)
    elif suffix in (".jsonl", ".ndjson", ".json"):
        frame.write_ndjson(path)
    else:
        raise SystemExit(f"rankwise: cannot tell the format of {path} (use .parquet, .csv or .jsonl)")


def render(result: Result, convention: str, backend: str, elapsed: float) -> str:
    """The summary as a metric x k table, then who was left out of the means."""
    summary = result.summary
    ks = sorted(set(summary["k"].to_list()))
    header = ["metric", *[f"@{k}" for k in ks], "users"]
    rows = []
    for metric in dict.fromkeys(summary["metric"].to_list()):
        part = summary.filter(pl.col("metric") == metric).sort("k")
        values = [f"{v:.4f}" for v in part["value"].to_list()]
        counts = sorted(set(part["n_users"].to_list()))
        rows.append([metric, *values, f"{counts[0]}-{counts[-1]}" if len(counts) > 1 else str(counts[0])])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
    out = [f"rankwise {__version__}  convention={convention}  backend={backend}  "
           f"users={result.per_user.height}  {elapsed:.2f}s", "", line(header),
           line(["-" * w for w in widths]), *map(line, rows)]
    left_out = [(reason, n) for reason, n in result.excluded.iter_rows() if n]
    if left_out:
        out += ["", "left out of the means:", *(f"  {n:>8}  {reason}" for reason, n in left_out)]
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
