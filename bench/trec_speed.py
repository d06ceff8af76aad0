"""Issue 38 (speed): all_trec end to end from TREC text files, rankwise beside pytrec_eval, ranx and trec_eval.

For each size Q x D (--sizes 1M,10M,100M: 1,000 / 10,000 / 100,000 queries x --docs 1,000 documents) a
seeded run and qrels are written under bench/data/trec_<Q>x<D>/ (gitignored):

* run: ``qid Q0 docno rank score tag``, D distinct docnos per query (strings ``D0000000``), scores rounded
  to two decimals (many ties: trec_eval breaks them by docno, descending), lines in score order;
* qrels: ``qid 0 docno rel``: retrieved documents judged with a probability falling with rank (30 % in the
  top 100, 5 % below), levels 0-3 and some -1 (pooled, not judged), plus 20 judged documents per query
  that the run does not retrieve; the other retrieved documents are unjudged.

Then every tool runs in a fresh process, its FIRST call from the files (import, parse, evaluate, output
all inside the clock), under /usr/bin/time (wall s, peak RSS), the CPU lock held (``--lock``), the 1-minute
load average read just before and after each process:

  rankwise-cli-polars / rankwise-cli-duckdb   ``rankwise evaluate RUN QRELS --trec -m all_trec --backend B``
  rankwise-python      read_trec_run + read_qrels + one evaluate() of every measure, as the CLI does (the
                       parameter families' values too), every stage timed apart
  pytrec_eval          pytrec_eval.parse_run / parse_qrel on the open files, RelevanceEvaluator(qrels,
                       {'all_trec'}), evaluate(run), compute_aggregated_measure per measure
  ranx                 Qrels.from_file / Run.from_file (kind="trec"), evaluate() of the measures ranx has
                       that match all_trec's (RANX_METRICS)
  trec_eval            ``trec_eval -m all_trec QRELS RUN`` (the C reference; --trec-eval PATH)

Repetitions alternate the tools (rep 0: in the order given, rep 1: reversed, ...). A tool is run at a size
only if its peak RSS at the previous size, times the row ratio, fits in --mem-cap-gb (18); otherwise the
table says it does not fit, with the extrapolation. Before timing (--check, at the first size) rankwise's
'all' values are compared with trec_eval's printed ones (4 decimals) and with pytrec_eval's (1e-9).

Usage (from the repo root, rankwise's env; peers in the conformance venv 'live'):
  python bench/trec_speed.py --sizes 1M,10M --reps 3 --check --trec-eval path/to/trec_eval
  python bench/trec_speed.py --sizes 100M --reps 1 --after bench/results/trec_speed_<...>.json
  python bench/trec_speed.py --profile 10M --backend polars     # rankwise-python's stages alone
  python bench/trec_speed.py --report bench/results/trec_speed_*.json   # one table of several runs
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LOCK = "/tmp/rankwise-cpu.lock"
SIZES = {"1M": 1_000, "10M": 10_000, "30M": 30_000, "100M": 100_000}  # queries; x --docs (1,000) rows
TOOLS = ["rankwise-cli-polars", "rankwise-cli-duckdb", "rankwise-python", "pytrec_eval", "ranx", "trec_eval"]
CUTS = [5, 10, 15, 20, 30, 100, 200, 500, 1000]
# ranx's metrics matching all_trec's: P_k, recall_k, map_cut_k, ndcg_cut_k at trec_eval's cutoffs, and
# map, ndcg, recip_rank, Rprec, num_rel_ret (hits); ranx 0.3.21 has no bpref, rbp or iprec_at_recall
RANX_METRICS = ([f"{m}@{k}" for m in ("precision", "recall", "map", "ndcg") for k in CUTS]
                + ["map", "ndcg", "mrr", "r-precision", "hits"])
CHECK = ["map", "gm_map", "Rprec", "recip_rank", "P_10", "P_1000", "recall_100", "ndcg", "ndcg_cut_10",
         "map_cut_100", "iprec_at_recall_0.50", "11pt_avg", "bpref", "num_rel_ret", "success_10", "rbp"]


# -- data ------------------------------------------------------------------------------------------------

def generate(queries: int, docs: int, out: Path, seed: int = 38, chunk: int = 10_000) -> tuple[Path, Path]:
    """The run and qrels text files (written once per (queries, docs, seed); a stamp marks them done)."""
    import numpy as np
    import polars as pl

    out.mkdir(parents=True, exist_ok=True)
    run_path, qrels_path, stamp = out / "run.txt", out / "qrels.txt", out / "done.json"
    want = {"queries": queries, "docs": docs, "seed": seed, "v": 1}
    if stamp.exists() and json.loads(stamp.read_text()) == want:
        return run_path, qrels_path
    prime = 1_000_003  # docnos of a query: (a + j * step) mod prime, j = 0..docs+19, all distinct
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    with open(run_path, "wb") as fr, open(qrels_path, "wb") as fq:
        for start in range(0, queries, chunk):
            n = min(chunk, queries - start)
            a = rng.integers(0, prime, n)
            step = rng.integers(1, prime, n)
            j = np.arange(docs + 20)
            ids = (a[:, None] + j[None, :] * step[:, None]) % prime            # (n, docs + 20)
            qid = np.repeat(np.arange(start + 1, start + n + 1), docs)
            # scores: a falling trend plus noise, two decimals (ties within a query)
            score = np.round(10.0 * rng.random((n, docs)) ** 0.5, 2)
            order = np.argsort(-score, axis=1, kind="stable")
            score = np.take_along_axis(score, order, axis=1)
            retrieved = ids[:, :docs]
            rank = np.tile(np.arange(1, docs + 1), n)
            run = pl.DataFrame({"qid": qid, "q0": "Q0", "doc": retrieved.ravel(), "rank": rank,
                                "score": score.ravel(), "tag": "rankwise_bench"})
            run = run.with_columns(pl.format("D{}", pl.col("doc").cast(pl.String).str.zfill(7)).alias("doc"))
            buf = io_bytes(run, float_precision=2)
            fr.write(buf)
            # qrels: judged with p 0.3 in the top 100, 0.05 below; levels by rank band; -1 sometimes
            p = np.where(rank <= 100, 0.30, 0.05).reshape(n, docs)
            judged = rng.random((n, docs)) < p
            top = (rank <= 100).reshape(n, docs)
            u = rng.random((n, docs))
            lev_top = np.select([u < 0.05, u < 0.50, u < 0.75, u < 0.90], [-1, 0, 1, 2], 3)
            lev_low = np.select([u < 0.05, u < 0.80, u < 0.92, u < 0.98], [-1, 0, 1, 2], 3)
            level = np.where(top, lev_top, lev_low)
            qi, di = np.nonzero(judged)
            extra_lev = (rng.random((n, 20)) < 0.5).astype(np.int64) + (rng.random((n, 20)) < 0.2)  # 0-2
            q_all = np.concatenate([qi, np.repeat(np.arange(n), 20)])
            d_all = np.concatenate([retrieved[qi, di], ids[:, docs:].ravel()])
            l_all = np.concatenate([level[qi, di], extra_lev.ravel()])
            o = np.lexsort((d_all, q_all))
            qrels = pl.DataFrame({"qid": q_all[o] + start + 1, "iter": 0, "doc": d_all[o], "rel": l_all[o]})
            qrels = qrels.with_columns(pl.format("D{}", pl.col("doc").cast(pl.String).str.zfill(7)).alias("doc"))
            fq.write(io_bytes(qrels))
    stamp.write_text(json.dumps(want))
    print(f"generated {queries} x {docs} in {time.perf_counter() - t0:.0f} s: {out}", file=sys.stderr)
    return run_path, qrels_path


def io_bytes(df, float_precision=None) -> bytes:
    import io

    b = io.BytesIO()
    df.write_csv(b, separator=" ", include_header=False, quote_style="never", float_precision=float_precision)
    return b.getvalue()


def peak_mb() -> float:
    """This process's peak RSS so far (MB)."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


# -- the tool processes (stdlib imports only above: the peers' venv runs this file too) -------------------

def child(tool: str, run: str, qrels: str, backend: str, values: bool) -> None:
    t = {}
    c0 = time.perf_counter()
    if tool == "rankwise-python":
        import warnings

        import polars as pl

        import rankwise
        from rankwise.errors import CutoffWarning
        from rankwise.metrics import names as N

        t["import_s"] = time.perf_counter() - c0
        c = time.perf_counter()
        r = rankwise.read_trec_run(run)
        t["read_run_s"] = time.perf_counter() - c
        c = time.perf_counter()
        q = rankwise.read_qrels(qrels).with_columns(pl.col("relevance").clip(lower_bound=0))
        t["read_qrels_s"] = time.perf_counter() - c
        t["peak_rss_after_read_mb"] = peak_mb()
        r = r.select("user", "item", "rank", "score")
        live = [m for m in (N.parse(n) for n in dict.fromkeys(N.expand_trec("all_trec"))) if m.live]
        conv = rankwise.PRESETS["trec_eval"]
        c = time.perf_counter()
        with warnings.catch_warnings():  # one call: the parameter families' values beside the other measures
            warnings.simplefilter("ignore", CutoffWarning)
            res = rankwise.evaluate(r, q, measures=[m.name for m in live], convention=N.requirements(live, conv),
                                    backend=backend)
        summary = {x["measure"]: x["value"] for x in res.measure_summary.iter_rows(named=True)}
        t["evaluate_s"] = time.perf_counter() - c
        t["batches"] = [{"batch": "all", "measures": len(live), "s": round(t["evaluate_s"], 3), "peak_rss_mb": peak_mb()}]
        version = rankwise.__version__ + f" ({backend})"
    elif tool == "rankwise-read-stages":
        # read_trec_run's stages one by one (the steps of rankwise.inputs.trec.read_trec_run, same calls)
        import polars as pl

        from rankwise.inputs import trec

        t["import_s"] = time.perf_counter() - c0
        names = ["user", "item", "score_text", "run"]
        score = (pl.col("score_text").cast(pl.Float64, strict=False) + 0.0).alias("score_text")
        labels = pl.col("user", "run").cast(pl.Categorical)
        c = time.perf_counter()
        df = trec._parse(run, trec._RUN_RX, names, "run", trec._RUN_FORMAT, convert=(score, labels))
        df = df.select("run", "user", "item", pl.col("score_text").alias("score"))
        t["parse_s"], t["parse_peak_mb"], t["parsed_mb"] = time.perf_counter() - c, peak_mb(), df.estimated_size() / 2**20
        c = time.perf_counter()
        queries, query, stretches = trec._query_codes(df)
        df = df.select(query.alias("query"), "item", "score").rechunk()
        t["query_codes_s"], t["query_codes_peak_mb"] = time.perf_counter() - c, peak_mb()
        c = time.perf_counter()
        trec._check_duplicates(run, df, ["run", "user", "item"], "run", None, same_keys=["query", "item"])
        t["repeat_check_s"], t["repeat_check_peak_mb"] = time.perf_counter() - c, peak_mb()
        c = time.perf_counter()
        df = trec._trec_eval_order(df, one_stretch_per_query=stretches == queries.height)
        t["order_s"], t["order_peak_mb"] = time.perf_counter() - c, peak_mb()
        summary, version = {}, "read_trec_run stages"
    elif tool == "pytrec_eval":
        import importlib.metadata

        import pytrec_eval

        t["import_s"] = time.perf_counter() - c0
        c = time.perf_counter()
        with open(run) as f:
            r = pytrec_eval.parse_run(f)
        t["read_run_s"] = time.perf_counter() - c
        c = time.perf_counter()
        with open(qrels) as f:
            q = pytrec_eval.parse_qrel(f)
        t["read_qrels_s"] = time.perf_counter() - c
        c = time.perf_counter()
        ev = pytrec_eval.RelevanceEvaluator(q, {"all_trec"})
        per = ev.evaluate(r)
        t["evaluate_s"] = time.perf_counter() - c
        c = time.perf_counter()
        names = sorted(next(iter(per.values())))
        summary = {m: pytrec_eval.compute_aggregated_measure(m, [v[m] for v in per.values()]) for m in names}
        t["aggregate_s"] = time.perf_counter() - c
        version = importlib.metadata.version("pytrec_eval-terrier")
    elif tool == "ranx":
        import importlib.metadata

        from ranx import Qrels, Run, evaluate

        t["import_s"] = time.perf_counter() - c0
        c = time.perf_counter()
        q = Qrels.from_file(qrels, kind="trec")
        t["read_qrels_s"] = time.perf_counter() - c
        c = time.perf_counter()
        r = Run.from_file(run, kind="trec")
        t["read_run_s"] = time.perf_counter() - c
        c = time.perf_counter()
        summary = evaluate(q, r, RANX_METRICS)
        t["evaluate_s"] = time.perf_counter() - c
        version = importlib.metadata.version("ranx")
    else:
        raise SystemExit(f"unknown tool {tool}")
    t["inner_s"] = time.perf_counter() - c0
    out = {"version": version, **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in t.items()},
           "n_measures": len(summary)}
    if values:
        out["values"] = {k: float(v) for k, v in summary.items()}
    print("RESULT " + json.dumps(out), flush=True)


# -- the driver ------------------------------------------------------------------------------------------

def peer_python() -> str:
    sys.path.insert(0, str(ROOT / "tests" / "conformance"))
    from make_fixtures import ensure_venv

    return str(ensure_venv("live", log=lambda m: print(m, file=sys.stderr)))


def command(tool: str, run: Path, qrels: Path, a, values: bool = False) -> tuple[list[str], bool]:
    """(argv, is rankwise) of one tool process."""
    if tool.startswith("rankwise-cli-"):
        exe = shutil.which("rankwise", path=str(Path(sys.executable).parent)) or "rankwise"
        return [exe, "evaluate", str(run), str(qrels), "--trec", "-m", "all_trec",
                "--backend", tool.rsplit("-", 1)[1]], True
    if tool == "trec_eval":
        return [a.trec_eval, "-m", "all_trec", str(qrels), str(run)], False
    py = sys.executable if tool.startswith("rankwise-") else a.peer_python
    argv = [py, str(Path(__file__).resolve()), "--child", tool, "--run", str(run), "--qrels", str(qrels),
            "--backend", a.backend] + (["--values"] if values else [])
    return argv, tool.startswith("rankwise-")


def timed(argv: list[str], rankwise: bool, lock: bool, timeout: float) -> dict:
    """One fresh process under /usr/bin/time (wall, peak RSS), the CPU lock held, loads before and after."""
    import fcntl

    env = {k: v for k, v in os.environ.items() if rankwise or k != "PYTHONPATH"}
    with tempfile.TemporaryDirectory() as tmp, open(LOCK, "a") as lk:
        if lock:
            fcntl.flock(lk, fcntl.LOCK_EX)
        try:
            load0 = os.getloadavg()[0]
            tf, of, ef = Path(tmp, "time"), Path(tmp, "out"), Path(tmp, "err")
            with open(of, "w") as fo, open(ef, "w") as fe:
                try:
                    rc = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", str(tf), *argv], check=False, stdout=fo,
                                        stderr=fe, env=env, timeout=timeout).returncode
                except subprocess.TimeoutExpired:
                    rc = "timeout"
            load1 = os.getloadavg()[0]
        finally:
            if lock:
                fcntl.flock(lk, fcntl.LOCK_UN)
        out, err = of.read_text(), ef.read_text()
        tl = tf.read_text().split() if tf.exists() else []
    res = {"rc": rc, "load_before": round(load0, 2), "load_after": round(load1, 2), "stdout": out}
    if len(tl) >= 2 and tl[-2].replace(".", "").isdigit():
        res |= {"wall_s": float(tl[-2]), "peak_rss_mb": round(int(tl[-1]) / 1024, 1)}
    if rc != 0:
        res["stderr_tail"] = err[-2000:]
    lines = [x for x in out.splitlines() if x.startswith("RESULT ")]
    if lines:
        res |= json.loads(lines[-1][7:])
    return res


def trec_lines(text: str) -> dict[str, str]:
    """trec_eval's 'all' lines: measure -> printed value."""
    vals = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[1].strip() == "all":
            vals[parts[0].strip()] = parts[2].strip()
    return vals


def check(run: Path, qrels: Path, a) -> list[str]:
    """rankwise's 'all' values against trec_eval's printed ones and pytrec_eval's to 1e-9."""
    print("agreement check ...", file=sys.stderr)
    notes = []
    rw = {t: trec_lines(timed(command(t, run, qrels, a)[0], True, a.lock, a.timeout)["stdout"])
          for t in ("rankwise-cli-polars", "rankwise-cli-duckdb")}
    te = trec_lines(timed(command("trec_eval", run, qrels, a)[0], False, a.lock, a.timeout)["stdout"])
    py = timed(*command("rankwise-python", run, qrels, a, values=True), a.lock, a.timeout)["values"]
    pe = timed(*command("pytrec_eval", run, qrels, a, values=True), a.lock, a.timeout)["values"]
    for name in sorted(set(te) | set(rw["rankwise-cli-polars"])):
        if name in ("runid",):
            continue
        ours = {t: v.get(name) for t, v in rw.items()}
        if ours["rankwise-cli-polars"] != ours["rankwise-cli-duckdb"]:
            notes.append(f"{name}: rankwise polars {ours['rankwise-cli-polars']} != duckdb {ours['rankwise-cli-duckdb']}")
        mine = ours["rankwise-cli-polars"]
        if name not in te:
            notes.append(f"{name}: rankwise {mine}, not in trec_eval's all_trec")
        elif mine is None:
            notes.append(f"{name}: trec_eval {te[name]}, not computed by rankwise")
        elif mine != te[name]:
            notes.append(f"{name}: DIFFERS rankwise {mine} vs trec_eval {te[name]}")
    for name in CHECK:
        if name in pe and name in py:
            d = abs(py[name] - pe[name])
            ok = d <= 1e-9 * max(1.0, abs(pe[name]))
            notes.append(f"{name}: rankwise {py[name]!r} pytrec_eval {pe[name]!r} |diff| {d:.2e}"
                         f"{'' if ok else '  DIFFERS'}")
        elif name in pe:
            notes.append(f"{name}: pytrec_eval {pe[name]!r}, not computed by rankwise")
        elif name in py:
            notes.append(f"{name}: rankwise {py[name]!r}, not in pytrec_eval")
    return notes


def profile(size: str, a) -> None:
    """rankwise's stages at one size, each in a fresh process: read_trec_run's steps (parse, query codes,
    repeat check, trec_eval's order) with the peak RSS after each, then rankwise-python (read_trec_run, read_qrels, each evaluate()
    batch the CLI makes)."""
    run, qrels = generate(SIZES[size], a.docs, a.data_dir / f"trec_{SIZES[size]}x{a.docs}")
    for tool in ("rankwise-read-stages", "rankwise-python"):
        res = timed(*command(tool, run, qrels, a), a.lock, a.timeout)
        res.pop("stdout", None)
        print(json.dumps(res | {"tool": tool}, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child")
    ap.add_argument("--run")
    ap.add_argument("--qrels")
    ap.add_argument("--values", action="store_true")
    ap.add_argument("--generate", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--backend", default="polars", help="rankwise-python's engine")
    ap.add_argument("--sizes", default="1M,10M")
    ap.add_argument("--docs", type=int, default=1_000)
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--check", action="store_true", help="agreement check at the first size before timing")
    ap.add_argument("--profile", help="a size: rankwise-python's stages only")
    ap.add_argument("--mem-cap-gb", type=float, default=18.0)
    ap.add_argument("--after", type=Path, help="a previous run's JSON: its peaks decide what fits at the next size")
    ap.add_argument("--trec-eval", default=os.environ.get("TREC_EVAL") or shutil.which("trec_eval") or "trec_eval")
    ap.add_argument("--no-lock", dest="lock", action="store_false")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--data-dir", type=Path, default=HERE / "data")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--report", type=Path, nargs="+", help="print the table of these runs' JSON (merged)")
    a = ap.parse_args()
    if a.child:
        return child(a.child, a.run, a.qrels, a.backend, a.values)
    if a.report:
        return report(merge(a.report))
    if a.generate:
        generate(a.generate, a.docs, a.data_dir / f"trec_{a.generate}x{a.docs}")
        return None
    tools = a.tools.split(",")
    a.peer_python = peer_python() if {"pytrec_eval", "ranx"} & set(tools) else None
    if a.profile:
        return profile(a.profile, a)
    results: list[dict] = json.loads(a.after.read_text()) if a.after else []
    for size in a.sizes.split(","):
        queries = SIZES[size]
        rows = queries * a.docs
        # data in a child process: this driver stays small
        folder = a.data_dir / f"trec_{queries}x{a.docs}"
        subprocess.run([sys.executable, __file__, "--generate", str(queries), "--docs", str(a.docs),
                        "--data-dir", str(a.data_dir)], check=True)
        run, qrels = folder / "run.txt", folder / "qrels.txt"
        if a.check and size == a.sizes.split(",")[0]:
            notes = check(run, qrels, a)
            print("\n".join(notes))
            results.append({"check": notes, "rows": rows})
        todo = []
        for tool in tools:
            prev = [r for r in results if r.get("tool") == tool and r.get("rows", 0) < rows and "peak_rss_mb" in r]
            if prev:
                p = max(prev, key=lambda r: (r["rows"], r["peak_rss_mb"]))
                need = p["peak_rss_mb"] * rows / p["rows"] / 1024
                if need > a.mem_cap_gb:
                    results.append({"tool": tool, "rows": rows, "skipped": f"does not fit: {p['peak_rss_mb']:.0f} MB "
                                    f"at {p['rows']:,} rows x {rows // p['rows']} = {need:.1f} GB > {a.mem_cap_gb} GB"})
                    print(json.dumps(results[-1]), flush=True)
                    continue
            todo.append(tool)
        for rep in range(a.reps):
            for tool in (todo if rep % 2 == 0 else todo[::-1]):
                res = timed(*command(tool, run, qrels, a), a.lock, a.timeout)
                out = res.pop("stdout", None)  # kept as a digest: the same bytes before and after a change
                res["stdout_sha256"] = hashlib.sha256(out.encode()).hexdigest()[:16] if out else None
                res |= {"tool": tool, "rows": rows, "queries": queries, "rep": rep}
                results.append(res)
                print(json.dumps(res), flush=True)
    path = a.json or HERE / "results" / f"trec_speed_{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(results, indent=1))
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}", file=sys.stderr)
    report(results)


def merge(paths: list[Path]) -> list[dict]:
    """Several runs' JSON as one list; a repetition already present at (rows, tool, rep) is renumbered
    (after every earlier file's repetitions of that size)."""
    out: list[dict] = []
    for path in paths:
        rows = json.loads(path.read_text())
        shift = {}
        for r in rows:
            if "tool" in r and "rep" in r:
                taken = {x["rep"] for x in out if x.get("rows") == r["rows"] and "rep" in x}
                shift.setdefault(r["rows"], (max(taken) + 1) if taken else 0)
                r = r | {"rep": r["rep"] + shift[r["rows"]]}
            if r not in out:
                out.append(r)
    return out


def report(results: list[dict]) -> None:
    """Per (tool, rows): median wall, each run's wall, peak RSS, the load before-after each run, and the
    ratio to the rankwise CLI on Polars of the same repetition (tool / rankwise: below 1 = faster)."""
    cells: dict = {}
    for r in results:
        if "tool" in r:
            cells.setdefault((r["rows"], r["tool"]), []).append(r)
    ref = {(r["rows"], r["rep"]): r["wall_s"] for r in results
           if r.get("tool") == "rankwise-cli-polars" and r.get("rc") == 0 and "wall_s" in r}
    print("\n| tool | rows | wall s: median (each run) | peak RSS MB | inner: read / evaluate s (median) | "
          "load 1 min before-after each run | tool / rankwise CLI polars, each run |")
    print("|---|---:|---:|---:|---|---|---|")
    for rows in sorted({k[0] for k in cells}):
        for tool in TOOLS:
            rs = sorted(cells.get((rows, tool), []), key=lambda r: r.get("rep", 0))
            if not rs:
                continue
            if "skipped" in rs[0]:
                print(f"| {tool} | {rows:,} | {rs[0]['skipped']} | | | | |")
                continue
            if not all("wall_s" in r and r["rc"] == 0 for r in rs):
                print(f"| {tool} | {rows:,} | failed: rc {[r['rc'] for r in rs]} | | | | |")
                continue
            walls = ", ".join(f"{r['wall_s']:.1f}" for r in rs)
            inner = ""
            if "read_run_s" in rs[0]:
                rd = statistics.median(r["read_run_s"] + r["read_qrels_s"] for r in rs)
                ev = statistics.median(r.get("evaluate_s", 0) + r.get("evaluate_main_s", 0)
                                       + r.get("evaluate_params_s", 0) + r.get("aggregate_s", 0) for r in rs)
                inner = f"{rd:.1f} / {ev:.1f}"
            loads = ", ".join(f"{r['load_before']:.1f}-{r['load_after']:.1f}" for r in rs)
            ratios = ", ".join(f"{r['wall_s'] / ref[(rows, r['rep'])]:.2f}" if (rows, r["rep"]) in ref else "-"
                               for r in rs)
            print(f"| {tool} | {rows:,} | {statistics.median(r['wall_s'] for r in rs):.1f} ({walls}) | "
                  f"{max(r['peak_rss_mb'] for r in rs):,.0f} | {inner} | {loads} | {ratios} |")


if __name__ == "__main__":
    main()
