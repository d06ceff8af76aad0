"""Benchmark harness: each tool runs as its own process; median wall time and peak RSS of its process tree.

  python bench/run.py --sizes 10k,100k --tools rankwise-polars,rankwise-duckdb,ranx,pytrec_eval,spark,floor --reps 3
  python bench/run.py --report bench/results/A.json bench/results/B.json   # only rebuild RESULTS.md + plot

Before timing, each peer's per-user values on a sample of users are compared with rankwise under the
matching preset (ranx -> "ranx", pytrec_eval -> "trec_eval", spark -> "spark"); ranx and pytrec_eval
are also compared with each other. Writes bench/results/<timestamp>.json, bench/RESULTS.md and
bench/time_vs_users.png. Peers run in the venv made by bench/peers/setup_venv.sh.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import psutil

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from generate import data_paths, generate, parse_size, size_label  # noqa: E402

PEERS_PY = Path(os.environ.get("RANKWISE_BENCH_VENV", Path.home() / ".cache/rankwise-bench/venv")) / "bin/python"
MAIN_PY = Path(sys.executable)
PEER_ENV = {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": str(PEERS_PY)}

# name -> interpreter, script + fixed args, configs it runs, sizes it runs at (None = any), preset to check against
TOOLS = {
    "rankwise-polars": dict(py="main", cmd=["rankwise_tool.py", "--backend", "polars"], configs="cli"),
    "rankwise-duckdb": dict(py="main", cmd=["rankwise_tool.py", "--backend", "duckdb"], configs="cli"),
    # rankwise's own Spark backend (shipped SQL on spark.sql); not in the default --tools
    "rankwise-spark": dict(py="main", cmd=["rankwise_tool.py", "--backend", "spark"], configs="cli",
                           only_users=[100_000], env={"SPARK_LOCAL_IP": "127.0.0.1"}),
    "ranx": dict(py="peers", cmd=["peers/ranx_peer.py"], configs=["k10"], max_users=1_000_000, preset="ranx"),
    "pytrec_eval": dict(py="peers", cmd=["peers/pytrec_eval_peer.py"], configs=["k10"], max_users=1_000_000,
                        preset="trec_eval"),
    "spark": dict(py="peers", cmd=["peers/spark_peer.py"], configs=["k10"], only_users=[100_000], preset="spark",
                  check_max=60),  # Spark's check evaluates one single-user frame per user: keep it short
    "floor-polars": dict(py="main", cmd=["peers/floor.py", "--engine", "polars"], configs=["scan"]),
    "floor-duckdb": dict(py="main", cmd=["peers/floor.py", "--engine", "duckdb"], configs=["scan"]),
    # the plainest exact program for precision@10 and its t interval (imports, join, mean): target 3's floor
    "floor-precision-polars": dict(py="main", cmd=["peers/floor.py", "--level", "precision"], configs=["scan"]),
}
ALIASES = {"floor": ["floor-polars", "floor-duckdb"], "rankwise": ["rankwise-polars", "rankwise-duckdb"]}
TOL = 1e-9


# ----------------------------------------------------------------------------------------------- measuring
def measure(cmd: list[str], env: dict, timeout: float, max_rss_gb: float = 1e9, interval: float = 0.02) -> dict:
    """Run cmd; wall time, peak summed RSS of it and all descendants (sampled), rc, parsed RESULT line.
    The tool's process group is killed past `timeout` seconds or `max_rss_gb` of tree RSS."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = psutil.Popen(cmd, stdout=out, stderr=err, env={**os.environ, **env}, cwd=BENCH, start_new_session=True)
        peak, killed = 0, None
        while proc.poll() is None:
            rss = 0
            try:
                for p in [proc, *proc.children(recursive=True)]:
                    try:
                        rss += p.memory_info().rss
                    except psutil.Error:
                        pass
            except psutil.Error:
                pass
            peak = max(peak, rss)
            if time.perf_counter() - t0 > timeout:
                killed = f"TIMEOUT after {timeout:.0f} s"
            elif peak > max_rss_gb * 2**30:
                killed = f"RSS_LIMIT: tree RSS passed {max_rss_gb:g} GB"
            if killed:
                os.killpg(proc.pid, signal.SIGKILL)  # the session we started for this tool only
                proc.wait()
                break
            time.sleep(interval)
        wall = time.perf_counter() - t0
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    result = next((json.loads(line[7:]) for line in stdout.splitlines()[::-1] if line.startswith("RESULT ")), None)
    rec = {"loadavg_1m_after": round(os.getloadavg()[0], 2), "wall_s": round(wall, 3), "peak_rss_mb": round(peak / 2**20, 1), "rc": proc.returncode, "result": result}
    if proc.returncode != 0 or killed:
        rec["error"] = (f"{killed}\n" if killed else "") + stderr[-1500:]
    return rec


def status_of(rec: dict) -> str:
    """Short status of a failed repetition for the report."""
    err = rec.get("error", "")
    return next((w.lower().replace("_", "-") for w in ("RSS_LIMIT", "TIMEOUT") if err.startswith(w)), "failed")


def portable(cmd: list) -> str:
    """The command as recorded in results: paths relative to the repo, interpreters by role (a
    results file never holds a path of the machine it was made on)."""
    root, home = BENCH.parent, Path.home()
    names = {str(MAIN_PY): "python", str(PEERS_PY): "$RANKWISE_BENCH_VENV/bin/python"}
    parts = []
    for part in map(str, cmd):
        if part in names:
            parts.append(names[part])
        elif part.startswith(str(root) + os.sep):
            parts.append(os.path.relpath(part, root))
        elif part.startswith(str(home) + os.sep):
            parts.append("~/" + os.path.relpath(part, home))
        else:
            parts.append(part)
    return shlex.join(parts)


def tool_cmd(name: str, recs: Path, truth: Path, config: str, memory_limit: str | None = None) -> tuple[list, dict]:
    spec = TOOLS[name]
    py, env = (PEERS_PY, PEER_ENV) if spec["py"] == "peers" else (MAIN_PY, spec.get("env", {}))
    cmd = [str(py), *spec["cmd"], "--recs", str(recs), "--truth", str(truth)]
    if name.startswith("rankwise"):
        cmd += ["--config", config]
        if memory_limit:  # rankwise_tool passes it to rankwise.evaluate(memory_limit=...)
            cmd += ["--memory-limit", memory_limit]
    return cmd, env


def runs_at(name: str, n: int) -> bool:
    spec = TOOLS[name]
    return n in spec.get("only_users", [n]) and n <= spec.get("max_users", n)


def rankwise_available() -> bool:
    code = "import rankwise; rankwise.evaluate"
    return subprocess.run([str(MAIN_PY), "-c", code], capture_output=True).returncode == 0


def rankwise_origin() -> str:
    """The path of the rankwise/__init__.py the tool processes import."""
    code = "import rankwise; print(rankwise.__file__)"
    return subprocess.run([str(MAIN_PY), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


# ------------------------------------------------------------------------------------------------ checking
def sample_users(recs: Path, truth: Path, n: int = 400, seed: int = 7) -> list[int]:
    """Edge users first (no recs, no truth, only relevance-0 truth), then a random sample of the rest."""
    r = pl.scan_parquet(recs).select("user").unique().collect()["user"]
    t = pl.scan_parquet(truth).group_by("user").agg(pl.col("relevance").max()).collect()
    no_recs = t.filter(~pl.col("user").is_in(r.implode()))["user"]
    no_truth = r.filter(~r.is_in(t["user"].implode()))
    zero_rel = t.filter(pl.col("relevance") <= 0)["user"]
    edges = [s.sort().head(10).to_list() for s in (no_recs, no_truth, zero_rel)]
    firsts = [u for group in zip(*[e + [None] * (10 - len(e)) for e in edges]) for u in group if u is not None]
    rest = pl.concat([r, t["user"]]).unique().sort().sample(n, seed=seed, shuffle=True).to_list()
    return list(dict.fromkeys(firsts + rest))[:n]


def compare(a: pl.DataFrame, b: pl.DataFrame) -> dict:
    """Compare long per-user values of a and b on the (metric, k) pairs b has. NaN counts as 'not scored'."""
    keys = b.select("metric", "k").unique()
    a = a.join(keys, on=["metric", "k"]).filter(pl.col("value").is_not_nan())
    b = b.filter(pl.col("value").is_not_nan())
    j = a.join(b, on=["user", "metric", "k"], how="full", suffix="_b", coalesce=True)
    both = j.filter(pl.col("value").is_not_null() & pl.col("value_b").is_not_null())
    per_metric = both.group_by("metric", "k").agg(
        max_abs_diff=(pl.col("value") - pl.col("value_b")).abs().max(), n=pl.len()).sort("metric", "k")
    only_a = j.filter(pl.col("value_b").is_null())["user"].unique().sort().to_list()
    only_b = j.filter(pl.col("value").is_null())["user"].unique().sort().to_list()
    worst = per_metric["max_abs_diff"].max() if per_metric.height else None
    status = "ok" if worst is not None and worst <= TOL and not only_a and not only_b else (
        "values-differ" if worst is None or worst > TOL else "users-differ")
    return {
        "status": status,
        "n_users_both": both["user"].n_unique(),
        "only_first": only_a[:20], "n_only_first": len(only_a),
        "only_second": only_b[:20], "n_only_second": len(only_b),
        "per_metric": {f"{m}@{k}": {"max_abs_diff": d, "n": c} for m, k, d, c in per_metric.iter_rows()},
    }


def run_checks(n: int, tools: list[str], recs: Path, truth: Path, workdir: Path, have_rankwise: bool,
               timeout: float, max_rss_gb: float) -> list[dict]:
    sample = sample_users(recs, truth)
    peer_vals: dict[str, pl.DataFrame] = {}
    checks = []
    for name in tools:
        spec = TOOLS[name]
        if "preset" not in spec or not runs_at(name, n) or not (have_rankwise or name in ("ranx", "pytrec_eval")):
            continue
        out = workdir / f"{name}_{size_label(n)}.parquet"
        users_file = workdir / f"users_{name}_{size_label(n)}.json"
        users_file.write_text(json.dumps(sample[: spec.get("check_max")]))
        cmd, env = tool_cmd(name, recs, truth, "k10")
        rec = measure(cmd + ["--check-users", str(users_file), "--check-out", str(out)], env, timeout, max_rss_gb)
        if rec["rc"] != 0:
            checks.append({"size": n, "first": "-", "second": name, "status": "peer-failed", "error": rec["error"]})
            continue
        peer_vals[name] = pl.read_parquet(out).drop("native")
        for backend in [t for t in tools if t.startswith("rankwise")] if have_rankwise else []:
            rw_out = workdir / f"{backend}_{spec['preset']}_{size_label(n)}.parquet"
            cmd, env = tool_cmd(backend, recs, truth, "k10")
            wanted = peer_vals[name]
            cmd += ["--convention", spec["preset"], "--check-users", str(users_file), "--check-out", str(rw_out),
                    "--check-metrics", ",".join(wanted["metric"].unique().sort()),
                    "--check-k", ",".join(map(str, wanted["k"].unique().sort()))]
            rec = measure(cmd, env, timeout, max_rss_gb)
            if rec["rc"] != 0:
                checks.append({"size": n, "first": f"{backend}[{spec['preset']}]", "second": name,
                               "status": "rankwise-failed", "error": rec["error"]})
                continue
            checks.append({"size": n, "first": f"{backend}[{spec['preset']}]", "second": name,
                           **compare(pl.read_parquet(rw_out), peer_vals[name])})
    if "ranx" in peer_vals and "pytrec_eval" in peer_vals:  # same conventions except the MRR cutoff
        checks.append({"size": n, "first": "ranx", "second": "pytrec_eval",
                       **compare(peer_vals["ranx"], peer_vals["pytrec_eval"].filter(pl.col("metric") != "mrr"))})
    for c in checks:
        print(f"  check {size_label(n)} {c['first']} vs {c['second']}: {c['status']}"
              + (f" (only first {c.get('n_only_first')}, only second {c.get('n_only_second')})"
                 if c["status"] == "users-differ" else ""), flush=True)
    return checks


# ------------------------------------------------------------------------------------------- environment
def machine() -> dict:
    cpu = Path("/proc/cpuinfo").read_text().splitlines()
    model = next((line.split(":", 1)[1].strip() for line in cpu if line.startswith("model name")), "?")
    free = subprocess.run(["free", "-h"], capture_output=True, text=True).stdout.strip()
    return {"cpu": model, "logical_cpus": os.cpu_count(), "free_h": free, "kernel": platform.release(),
            "platform": platform.platform(), "loadavg_start": os.getloadavg()}


def versions() -> dict:
    code = ("import importlib.metadata as m, json, sys\n"
            "def v(p):\n  try: return m.version(p)\n  except Exception: return None\n"
            "print(json.dumps({'python': sys.version.split()[0], **{p: v(p) for p in sys.argv[1:]}}))")
    out = {}
    for label, py, pkgs in [("main", MAIN_PY, ["rankwise", "polars", "duckdb", "pyarrow", "numpy", "psutil"]),
                            ("peers", PEERS_PY, ["ranx", "pytrec-eval-terrier", "pyspark", "numba", "polars",
                                                 "pandas", "numpy", "psutil"])]:
        r = subprocess.run([str(py), "-c", code, *pkgs], capture_output=True, text=True)
        out[label] = json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr[-300:]}
    java = subprocess.run(["java", "-version"], capture_output=True, text=True)
    out["java"] = (java.stderr or java.stdout).splitlines()[0] if java.returncode == 0 else None
    return out


# ------------------------------------------------------------------------------------------------ reporting
def merge(files: list[Path]) -> dict:
    """Later files win for the same (tool, size, config); checks likewise per (size, first, second)."""
    docs = [json.loads(f.read_text()) for f in files]
    runs = {(r["tool"], r["n_users"], r["config"]): r for d in docs for r in d["runs"]}
    checks = {(c["size"], c["first"], c["second"]): c for d in docs for c in d.get("checks", [])}
    last = docs[-1]
    return {**last, "runs": list(runs.values()), "checks": list(checks.values()),
            "commands": [d["command"] for d in docs], "sources": [str(f) for f in files]}


def fmt_ratio(x, ref):
    return f"{x / ref:.2f}" if x and ref else "–"


def write_report(doc: dict, md_path: Path, png_path: Path) -> None:
    runs = sorted(doc["runs"], key=lambda r: (r["n_users"], r["tool"], r["config"]))
    med = {(r["tool"], r["n_users"]): r.get("median_wall_s") for r in runs if r["config"] in ("k10", "scan")}
    m, v = doc["machine"], doc["versions"]
    lines = [
        "# rankwise benchmarks", "",
        f"Generated {doc['timestamp']} by `bench/run.py` from {', '.join(f'`{s}`' for s in doc.get('sources', []))}.",
        "", "Command(s):", "", *[f"    {c}" for c in doc.get("commands", [doc["command"]])], "",
        "## Machine", "", f"- CPU: {m['cpu']} ({m['logical_cpus']} logical CPUs); kernel {m['kernel']}",
        "- Memory (`free -h` at run time):", "", *[f"      {line}" for line in m["free_h"].splitlines()], "",
        "## Versions", "",
        f"- rankwise env: {', '.join(f'{k} {x}' for k, x in v['main'].items())}",
        f"- peers venv: {', '.join(f'{k} {x}' for k, x in v['peers'].items())}",
        f"- {v.get('java')}", "",
        "## Results", "",
        "Wall time = whole process, end to end from Parquet (interpreter start, imports, read, build inputs, "
        "evaluate). Peak RSS = summed RSS of the process tree sampled every 20 ms (Spark's JVM included). "
        "Medians over the repetitions; files are in the page cache after the first run. Ratios are this row's "
        "time / the reference's time at the same size (floor = floor-polars, ranx/pytrec_eval rows at k=10). "
        "Configs: `all` = every metric at k=1,5,10,20,50,100; `all-k10` = every metric at k=10; `k10` = precision, recall, map, mrr, ndcg, hit_rate "
        "at k=10 (Spark: no mrr/hit_rate); `scan` = read both files and count rows per user. `rss-limit` = killed "
        "when the tree's RSS passed `--max-rss-gb` (peak shown as >N). `load` = median 1-minute load average "
        "right after each repetition (2 CPUs: above ~2 means other work shared the machine).", "",
        "| users | tool | config | median wall s | peak RSS MB | × floor | × ranx | × pytrec_eval | inner timings (median, s) | reps | load |",
        "|---:|---|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in runs:
        n, t = r["n_users"], r.get("median_wall_s")
        inner = ", ".join(f"{k} {x:.2f}" for k, x in (r.get("median_timings") or {}).items())
        wall = f"{t:.2f}" if t is not None else r.get("status", "failed")
        peaks = [x["peak_rss_mb"] for x in r["reps"]]
        rss = f"{r['median_peak_rss_mb']:.0f}" if r.get("median_peak_rss_mb") is not None else f">{max(peaks):.0f}"
        loads = [x["loadavg_1m_after"] for x in r["reps"] if "loadavg_1m_after" in x]
        load = f"{statistics.median(loads):.1f}" if loads else "–"
        lines.append(f"| {size_label(n)} | {r['tool']} | {r['config']} | {wall} | {rss} | "
                     f"{fmt_ratio(t, med.get(('floor-polars', n)))} | {fmt_ratio(t, med.get(('ranx', n)))} | "
                     f"{fmt_ratio(t, med.get(('pytrec_eval', n)))} | {inner} | {len(r['reps'])} | {load} |")
    lines += ["", "## Agreement checks (per-user values on a sample of users, before timing)", "",
              f"Tolerance {TOL:g} absolute. 'only first/second' = sampled users scored by one side only. "
              "`users-differ` = every common user agrees but the two score different sets of users (see "
              "bench/README.md, 'How the peers are fed').", "",
              "| users | first | second | status | users compared | only first | only second | worst metric (max abs diff) |",
              "|---:|---|---|---|---:|---:|---:|---|"]
    for c in sorted(doc.get("checks", []), key=lambda c: (c["size"], c["first"], c["second"])):
        pm = c.get("per_metric") or {}
        worst = max(pm.items(), key=lambda kv: kv[1]["max_abs_diff"] or 0, default=None)
        w = f"{worst[0]} {worst[1]['max_abs_diff']:.2g}" if worst else c.get("error", "")[-120:].replace("\n", " ")
        lines.append(f"| {size_label(c['size'])} | {c['first']} | {c['second']} | {c['status']} | "
                     f"{c.get('n_users_both', '–')} | {c.get('n_only_first', '–')} | {c.get('n_only_second', '–')} | {w} |")
    lines += ["", "![time vs users](time_vs_users.png)", "", *targets(runs, md_path.parent / "results"), ""]
    other = md_path.parent / "results" / "other_benchmarks.md"  # hand-run scripts' rows, kept across rebuilds
    if other.exists():
        lines += [other.read_text()]
    md_path.write_text("\n".join(lines))
    plot(runs, png_path)


def targets(runs: list[dict], results_dir: Path) -> list[str]:
    """Issue 5's targets, each computed from the runs above (and the memory-cap run, if any)."""
    wall = {(r["tool"], r["n_users"], r["config"]): r.get("median_wall_s") for r in runs}
    rss = {(r["tool"], r["n_users"], r["config"]): r.get("median_peak_rss_mb") for r in runs}
    inner = {(r["tool"], r["n_users"]): r.get("median_timings") or {} for r in runs}
    backends = ("rankwise-duckdb", "rankwise-polars")
    rows = []

    def row(target, measured, met):
        rows.append(f"| {target} | {measured} | {'met' if met else '**missed**'} |")

    def best(n, config):
        timed = [(wall[(b, n, config)], b) for b in backends if wall.get((b, n, config))]
        return min(timed) if timed else (None, None)

    t, b = best(1_000_000, "all")
    if t:
        floors = [(wall[(f, 1_000_000, "scan")], f) for f in ("floor-duckdb", "floor-polars")
                  if wall.get((f, 1_000_000, "scan"))]
        row("1M x 100, all metrics at six k, both frames: < 10 s on the faster backend", f"{b} {t:.2f} s", t < 10)
        peak = rss.get((b, 1_000_000, "all"))
        row("same run: peak memory < 3 GB", f"{peak / 1000:.2f} GB", peak and peak < 3000)
        if floors:
            floor, name = min(floors)
            row("same run: within 3x of the scan floor", f"{t:.2f} / {floor:.2f} ({name}) = {t / floor:.1f}x",
                t <= 3 * floor)
        t1 = wall.get((b, 1_000_000, "all-k10"))
        if t1:
            row("a second k costs far less than a second pass", f"{b}, every metric: k = 10 alone {t1:.2f} s, six k "
                f"{t:.2f} s (each extra k +{(t - t1) / 5 / t1:.0%} of a one-k run)", (t - t1) / 5 < 0.25 * t1)
    t, b = best(100_000, "k10")
    ranx, trec = wall.get(("ranx", 100_000, "k10")), wall.get(("pytrec_eval", 100_000, "k10"))
    if t and ranx:
        row("100k x 100, k = 10: >= 50x faster than ranx end to end", f"{ranx:.2f} / {t:.2f} ({b}) = {ranx / t:.1f}x",
            ranx / t >= 50)
        warm = inner.get(("ranx", 100_000), {}).get("eval_warm")
        if warm:
            row("faster than ranx's compiled evaluation alone (pre-built objects)",
                f"rankwise end to end {t:.2f} s vs ranx evaluate {warm:.2f} s", t < warm)
    if t and trec:
        row("100k x 100, k = 10: >= 10x faster than pytrec_eval end to end", f"{trec:.2f} / {t:.2f} = {trec / t:.1f}x",
            trec / t >= 10)
    for b in backends:
        sizes = [(n, rss[(b, n, "all")]) for n in (10_000, 100_000, 1_000_000) if rss.get((b, n, "all"))]
        if len(sizes) >= 2:
            (n0, m0), (n1, m1) = sizes[-2], sizes[-1]
            per_user = (m1 - m0) / (n1 - n0) * 1e3
            row(f"memory grows linearly with users ({b}, all)",
                ", ".join(f"{size_label(n)} {m:.0f} MB" for n, m in sizes) + f"; {per_user:.1f} KB per added user",
                m1 / m0 <= 1.2 * n1 / n0)
    caps = sorted(results_dir.glob("memory_cap_*.json"))
    for cap in caps:
        c = json.loads(cap.read_text())
        row(f"larger than memory: {c['size']} x 100 with {c['backend']} capped at {c['limit']}",
            f"completes in {c['wall_s']:.0f} s (`{c['command']}`, {c['timestamp']}); a {c['sample_users_identical']:,}-user "
            f"sample identical to an uncapped run; process peak {c['process_peak_rss_gb']:.1f} GB (the result frames "
            f"live in Python, outside the engine's cap)", c["sample_users_identical"] > 0)
    if not rows:
        return []
    return ["## Targets (issue 5)", "", "Computed from the medians above. Why a missed target is missed, and the "
            "profile: bench/README.md, 'Where the time goes'.", "", "| target | measured | |", "|---|---|---|", *rows]


def plot(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.8))
    series: dict[str, list] = {}
    for r in runs:
        if r.get("median_wall_s") is not None:
            series.setdefault(f"{r['tool']} [{r['config']}]", []).append((r["n_users"], r["median_wall_s"]))
    for label, pts in sorted(series.items()):
        pts.sort()
        ax.plot(*zip(*pts), marker="o", label=label)
    ax.set(xscale="log", yscale="log", xlabel="users", ylabel="median wall time (s), end to end",
           title="rankwise benchmark: time vs users")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------------------------------------ main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10k,100k")
    ap.add_argument("--tools", default="rankwise-polars,rankwise-duckdb,ranx,pytrec_eval,spark,floor")
    ap.add_argument("--configs", default="all,all-k10,k10", help="rankwise configs: all, all-k10, k10")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--memory-limit", help="also run rankwise capped, e.g. 2GB")
    ap.add_argument("--data-dir", type=Path, default=BENCH / "data")
    ap.add_argument("--results-dir", type=Path, default=BENCH / "results")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per process")
    ap.add_argument("--max-rss-gb", type=float, default=round(psutil.virtual_memory().total / 2**30 * 0.6, 1),
                    help="kill a tool whose process-tree RSS passes this (default 60%% of RAM)")
    ap.add_argument("--no-check", action="store_true", help="skip the agreement checks")
    ap.add_argument("--any-size", action="store_true", help="ignore the per-tool size limits (ranx/pytrec<=1M, spark=100k)")
    ap.add_argument("--report", nargs="+", type=Path, help="only rebuild RESULTS.md and the plot from these JSONs")
    a = ap.parse_args()
    md, png = BENCH / "RESULTS.md", BENCH / "time_vs_users.png"
    if a.report:
        write_report(merge(a.report), md, png)
        print(f"wrote {md} and {png}")
        return

    tools = [t for name in a.tools.split(",") for t in ALIASES.get(name, [name])]
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        sys.exit(f"unknown tools {unknown}; known: {list(TOOLS)} and aliases {list(ALIASES)}")
    have_rankwise = rankwise_available()
    if not have_rankwise and any(t.startswith("rankwise") for t in tools):
        print("rankwise is not importable here (pip install -e .): skipping rankwise tools and checks", flush=True)
        tools = [t for t in tools if not t.startswith("rankwise")]
    if have_rankwise:
        # rankwise's modules as an installed wheel has them, compiled: with PYTHONDONTWRITEBYTECODE set (as on the
        # bench machine) an editable install would otherwise compile its source in every timed process (~0.08 s)
        subprocess.run([str(MAIN_PY), "-m", "compileall", "-q", str(Path(rankwise_origin()).parent)], check=True)
    if any(TOOLS[t]["py"] == "peers" for t in tools) and not PEERS_PY.exists():
        sys.exit(f"no peers venv at {PEERS_PY}: run bash bench/peers/setup_venv.sh")
    if a.any_size:
        for spec in TOOLS.values():
            spec.pop("only_users", None), spec.pop("max_users", None)

    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    doc = {"timestamp": stamp, "command": shlex.join([Path(sys.executable).name, *sys.argv]),
           "machine": machine(), "versions": versions(), "runs": [], "checks": []}
    a.results_dir.mkdir(parents=True, exist_ok=True)
    out_json = a.results_dir / f"{stamp}.json"

    def save() -> None:
        out_json.write_text(json.dumps(doc, indent=1, default=str))

    workdir = Path(tempfile.mkdtemp(prefix="rankwise-bench-"))
    for n in map(parse_size, a.sizes.split(",")):
        recs, truth = data_paths(a.data_dir, n)
        if not (recs.exists() and truth.exists()):
            print(f"generating {size_label(n)} ...", flush=True)
            generate(n, a.data_dir)
        if not a.no_check:
            doc["checks"] += run_checks(n, tools, recs, truth, workdir, have_rankwise, a.timeout, a.max_rss_gb)
            save()
        for name in tools:
            if not runs_at(name, n):
                continue
            configs = a.configs.split(",") if TOOLS[name]["configs"] == "cli" else TOOLS[name]["configs"]
            limits = [None] + ([a.memory_limit] if a.memory_limit and name.startswith("rankwise") else [])
            for config in configs:
                for limit in limits:
                    cmd, env = tool_cmd(name, recs, truth, config, limit)
                    reps = []
                    for i in range(a.reps):
                        rec = measure(cmd, env, a.timeout, a.max_rss_gb)
                        reps.append(rec)
                        print(f"{size_label(n):>5} {name:16} {config:4} rep {i + 1}: {rec['wall_s']:8.2f} s "
                              f"{rec['peak_rss_mb']:8.0f} MB rc={rec['rc']}", flush=True)
                        if rec["rc"] != 0:
                            print("    " + rec["error"].strip().splitlines()[-1] if rec["error"].strip() else "", flush=True)
                            break
                    ok = [r for r in reps if r["rc"] == 0]
                    timings = [r["result"]["timings"] for r in ok if r["result"]]
                    doc["runs"].append({
                        "tool": name, "n_users": n, "config": config + (f"+mem{limit}" if limit else ""),
                        "cmd": portable(cmd), "reps": reps,
                        "status": "ok" if len(ok) == len(reps) else status_of(reps[-1]),
                        "median_wall_s": statistics.median(r["wall_s"] for r in ok) if ok else None,
                        "median_peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in ok) if ok else None,
                        "median_timings": {k: statistics.median(t[k] for t in timings) for k in timings[0]} if timings else None,
                    })
                    save()
    shutil.rmtree(workdir, ignore_errors=True)
    doc["machine"]["loadavg_end"] = os.getloadavg()
    save()
    write_report(merge([out_json]), md, png)
    print(f"wrote {out_json}, {md}, {png}")


if __name__ == "__main__":
    main()
