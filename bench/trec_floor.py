"""Issue 38's floor: the plainest program that gives trec_eval's map for every query of a TREC run file.

What any tool that reproduces trec_eval from the text files must do at least, timed step by step (eager
Polars, each step on the one before's frame), on the files of ``bench/trec_speed.py``
(``bench/data/trec_<queries>x<docs>/run.txt`` and ``qrels.txt``):

  parse   the run file's three needed columns (qid, docno, score) read by Polars' CSV reader, one space
          between fields, no line checked (less than trec_eval's reader: any whitespace, every line checked)
  order   trec_eval's ranking: per query, score descending, equal scores by docno descending; ``--order sort``
          (default): one sort on the three columns; ``--order ties``: rankwise's own (read_trec_run's), which in
          the usual file (each query one stretch, scores descending) sorts only the tied documents by docno
          and puts the queries in byte order: the cheapest order known
  rank    each row's rank: its position from its query's first row (the rows are in query order)
  qrels   the qrels file read, its relevant labels (rel >= 1) kept
  join    the ranked rows that have a relevant label (an inner join on qid and docno)
  map     AP per query (sum over the relevant retrieved of hits so far / rank, over the query's relevant
          count) and their mean over the run's queries that have a judgement (trec_eval's 'all')

One measure, no input check, no output but the mean: every tool that gives trec_eval's 97 measures from
the same files does at least this. ``--check`` compares the map with rankwise's (use it on a small size).

Usage: flock /tmp/rankwise-cpu.lock python bench/trec_floor.py --dir bench/data/trec_100000x1000 [--order ties] [--check]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import time

import polars as pl

RUN = {"qid": pl.String, "q0": pl.String, "docno": pl.String, "rank": pl.Int64, "score": pl.Float64,
       "tag": pl.String}
QRELS = {"qid": pl.String, "iter": pl.String, "docno": pl.String, "rel": pl.Int64}


def scan(path: str, schema: dict) -> pl.LazyFrame:
    return pl.scan_csv(path, separator=" ", has_header=False, new_columns=list(schema), schema=schema)


def ties_order(parsed: pl.DataFrame) -> pl.DataFrame:
    """(qid, docno, score) in trec_eval's order by read_trec_run's steps (qid becomes the query's number in
    byte order: the same ranks, the same map)."""
    from rankwise.inputs.trec import _query_codes, _trec_eval_order

    # one chunk first, as read_trec_run does (on the reader's ~1,900 chunks at 100M rows the order takes 10x as long)
    df = parsed.rechunk().select(pl.lit("run").alias("run"), pl.col("qid").alias("user"), pl.col("docno").alias("item"),
                                 "score")
    queries, codes, stretches = _query_codes(df)
    df = df.select(codes.alias("query"), "item", "score")
    return _trec_eval_order(df, stretches == queries.height).select(
        pl.col("query").alias("qid"), pl.col("item").alias("docno"), "score")


def floor(run: str, qrels: str, order: str = "sort") -> tuple[dict, float, int]:
    """(seconds per step, map, queries averaged)."""
    times: dict[str, float] = {}

    def step(name, fn):
        t = time.perf_counter()
        out = fn()
        times[name] = round(time.perf_counter() - t, 3)
        return out

    parsed = step("parse", lambda: scan(run, RUN).select("qid", "docno", "score").collect())
    if order == "sort":
        ordered = step("order", lambda: parsed.sort(["qid", "score", "docno"], descending=[False, True, True]))
    else:
        ordered = step("order", lambda: ties_order(parsed))
        # the labels' queries as the same numbers (a query of the qrels only gets none: it meets no row)
        codes = parsed.select(pl.col("qid").unique()).sort("qid").with_row_index("code")
    del parsed
    first = pl.when((pl.col("qid") != pl.col("qid").shift(1)).fill_null(True)).then(pl.col("i")).forward_fill()
    ranked = step("rank", lambda: ordered.with_row_index("i").select("qid", "docno", (pl.col("i") - first + 1)
                                                                      .alias("rank")))
    del ordered
    relevant = step("qrels", lambda: scan(qrels, QRELS).filter(pl.col("rel") >= 1).select("qid", "docno")
                    .collect())
    if order != "sort":
        relevant = step("qrels codes", lambda: relevant.join(codes, on="qid").select(
            pl.col("code").cast(ranked.schema["qid"]).alias("qid"), "docno"))
    hits = step("join", lambda: ranked.join(relevant, on=["qid", "docno"], how="inner"))

    def mean_ap():
        sums = (hits.sort("qid", "rank").group_by("qid")
                .agg((pl.int_range(1, pl.len() + 1) / pl.col("rank")).sum().alias("s")))
        n_rel = relevant.group_by("qid").len("n_rel")
        queries = ranked.select(pl.col("qid").unique())  # the run's queries with a judgement
        ap = (n_rel.join(queries, on="qid").join(sums, on="qid", how="left")
              .select((pl.col("s").fill_null(0.0) / pl.col("n_rel")).alias("ap")))
        return ap.get_column("ap").mean(), ap.height

    value, n = step("map", mean_ap)
    return times, value, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--check", action="store_true", help="compare map with rankwise's (a small size)")
    ap.add_argument("--order", choices=["sort", "ties"], default="sort")
    a = ap.parse_args()
    run, qrels = os.path.join(a.dir, "run.txt"), os.path.join(a.dir, "qrels.txt")
    load = os.getloadavg()[0]
    times, value, n = floor(run, qrels, a.order)
    out = {"dir": a.dir, "order": a.order, "steps_s": times, "total_s": round(sum(times.values()), 3), "map": value, "queries": n,
           "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
           "load_1m": [load, os.getloadavg()[0]]}
    if a.check:
        import rankwise
        r = rankwise.evaluate(rankwise.read_trec_run(run), rankwise.read_qrels(qrels), measures=["map"],
                              convention="trec_eval")
        out["rankwise_map"] = r.summary.row(0, named=True)["value"]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
