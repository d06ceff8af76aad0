"""Issue 39, target 2 (fixed cost): a tiny evaluate (10 users) after import, both engines, and where its
time goes, measured from outside the package (timers wrapped around functions found by name, and a
DuckDB connection proxy that times every statement; cProfile for the rest).

Each engine in a fresh process: import rankwise (timed apart), build the tiny frames (10 users x 10
items, 5 labels each, Polars DataFrames), then
  first   the first evaluate() call of the process
  warm    --reps more calls: median (min, max)
  stages  --reps instrumented calls: median time per stage (the wrappers add a few microseconds each):
          DuckDB: connect, per_user.sql, summary.sql, counts/examples, per_user fetch, other statements;
          both: input checks (prepare), shaping (_shape.*), the rest of evaluate ("other")
  profile cProfile over --reps calls: the top functions by cumulative time per call
Goal (issue 39): <= 30 ms on either engine after import.

Usage: python bench/fixed_cost.py [--reps 30] [--engines polars,duckdb] [--metrics all|accuracy6] [--top 25]
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections import defaultdict

_CALL: dict[str, float] = defaultdict(float)  # stage -> seconds (a stage inside another counts in both)
_DEPTH = [0]
_TOP = [0.0]  # seconds in outermost stages only: evaluate minus this is "other"


class clock:
    """Adds the time of its block to stage ``name`` (and to _TOP when no other stage encloses it)."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.t0 = time.perf_counter()
        _DEPTH[0] += 1

    def __exit__(self, *exc):
        dt = time.perf_counter() - self.t0
        _DEPTH[0] -= 1
        _CALL[self.name] += dt
        if _DEPTH[0] == 0:
            _TOP[0] += dt
        return False


def reset() -> None:
    _CALL.clear()
    _TOP[0] = 0.0


def tiny():
    import polars as pl

    recs = pl.DataFrame({"user": [u for u in range(10) for _ in range(10)],
                         "item": [(u * 7 + j * 13) % 50 for u in range(10) for j in range(10)],
                         "rank": [j + 1 for _ in range(10) for j in range(10)]})
    truth = pl.DataFrame({"user": [u for u in range(10) for _ in range(5)],
                          "item": [(u * 7 + j * 26) % 50 for u in range(10) for j in range(5)],
                          "relevance": [float(j % 3) for _ in range(10) for j in range(5)]})
    return recs, truth


def timed(name, fn):
    def wrapper(*args, **kwargs):
        with clock(name):
            return fn(*args, **kwargs)
    wrapper.__wrapped__ = fn
    return wrapper


def wrap_by_name(names: dict[str, str]) -> None:
    """Wrap every rankwise function called ``qualname`` (module-level), in every rankwise module that
    holds it (a ``from x import f`` copies the reference): {attribute name: stage name}."""
    mods = [m for n, m in list(sys.modules.items()) if n.startswith("rankwise") and m is not None]
    for attr, stage in names.items():
        owners = {}
        for m in mods:
            f = getattr(m, attr, None)
            if callable(f) and getattr(f, "__module__", "").startswith("rankwise"):
                owners.setdefault(id(f), (f, []))[1].append(m)
        for f, holders in owners.values():
            w = timed(stage, f)
            for m in holders:
                setattr(m, attr, w)


def _sql_files() -> dict[str, str]:
    """{normalised first line: file name} of the shipped SQL files (sql/ of the repository or the package)."""
    from pathlib import Path

    import rankwise

    out = {}
    package = Path(rankwise.__file__).resolve().parent  # the rankwise imported (a snapshot on PYTHONPATH too)
    for d in (package / "_sql", package / "sql", package.parents[1] / "sql"):
        for f in d.glob("*.sql") if d.is_dir() else ():
            # the first line names the file: the engine runs per_user.sql and summary.sql restricted to a
            # request's metrics, so the whole text is not in the statement
            out[" ".join(f.read_text().split("\n", 1)[0].split())] = f.name
    return out


_FILES: dict[str, str] = {}


def tag(sql: str) -> str:
    """The stage a DuckDB statement belongs to: the shipped SQL file it is, or its kind."""
    if not _FILES:
        _FILES.update(_sql_files())
    s = " ".join(str(sql).split())
    if "CREATE TEMP TABLE per_user" in s:
        return "duckdb per_user.sql (CREATE TEMP TABLE per_user)"
    for text, name in _FILES.items():
        if text and text in s:
            return f"duckdb {name}"
    low = s.lower()
    if low.startswith("set ") or "current_setting" in low:
        return "duckdb settings (SET / current_setting)"
    if low.startswith("select * from per_user"):
        return "duckdb per_user fetch"
    return "duckdb: " + s[:60]


class Rel:
    """A DuckDB relation whose materialising calls are timed under the statement's tag."""

    def __init__(self, rel, name):
        self._rel, self._name = rel, name

    def __getattr__(self, attr):
        v = getattr(self._rel, attr)
        if callable(v) and attr in ("pl", "fetchall", "fetchone", "arrow", "df", "fetch_arrow_table", "to_arrow_table"):
            return timed(self._name, v)
        return v


class Con:
    """A DuckDB connection proxy: every execute / sql / register timed, by statement kind."""

    def __init__(self, con):
        self._con = con

    def execute(self, sql, *a, **k):
        name = tag(sql)
        with clock(name):
            r = self._con.execute(sql, *a, **k)
        return Rel(r, name)

    def sql(self, sql, *a, **k):
        name = tag(sql)
        with clock(name):
            r = self._con.sql(sql, *a, **k)
        return Rel(r, name)

    def cursor(self):  # the engine's session: a cursor on the process's one database
        return Con(self._con.cursor())

    def register(self, *a, **k):
        with clock("duckdb register inputs"):
            return self._con.register(*a, **k)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        with clock("duckdb close"):
            self._con.close()
        return False

    def close(self):
        self.__exit__(None, None, None)

    def __getattr__(self, attr):
        return getattr(self._con, attr)


def instrument() -> None:
    import duckdb

    real = duckdb.connect

    def connect(*a, **k):
        with clock("duckdb connect"):
            con = real(*a, **k)
        return Con(con)

    duckdb.connect = connect
    import rankwise.engines.duckdb as engine

    engine._SHARED.clear()  # the process's database, opened by the calls before: opened again, through the proxy
    wrap_by_name({"prepare": "input checks (prepare)", "prepare_truth": "input checks (truth)",
                  "read": "sql file read + bind", "bind": "sql file read + bind",
                  "resolve": "convention resolve", "_plan": "plan (incl. side inputs)"})
    import rankwise

    shape = [m for n, m in sys.modules.items() if n.startswith("rankwise") and n.endswith(("_shape", "engines.shape"))]
    for m in shape:  # module-qualified: other modules have functions called long / summary / check
        for attr in ("check", "raise_on_non_finite", "long", "summary", "excluded", "wide"):
            f = getattr(m, attr, None)
            if callable(f):
                setattr(m, attr, timed(f"shape {attr}", f))
    for n, m in list(sys.modules.items()):
        if not n.startswith("rankwise") or m is None:
            continue
        for cname, cls in list(vars(m).items()):  # the engines' run(): the accuracy engine as a whole
            if isinstance(cls, type) and cname.endswith("Engine") and "run" in vars(cls) \
                    and cls.__module__ == n and not hasattr(cls.run, "__wrapped__"):
                cls.run = timed(f"engine run ({cname}, outermost; the duckdb / polars rows are inside it)", cls.run)
        if n.endswith(("_polars_backend", "engines.polars")):
            for attr in ("per_user", "summary"):
                f = getattr(m, attr, None)
                if callable(f):
                    setattr(m, attr, timed(f"polars {attr}", f))
    return rankwise


def top_rows(prof: cProfile.Profile, calls: int, top: int) -> list:
    rows = []
    for (file, line, fn), (cc, nc, tt, ct, callers) in pstats.Stats(prof).stats.items():
        if "fixed_cost.py" in file:
            continue
        rows.append((ct / calls, tt / calls, nc / calls, f"{os.path.basename(file)}:{line}({fn})"))
    rows.sort(reverse=True)
    return rows[:top]


def child(engine: str, reps: int, metrics, top: int, profile_first: bool = False) -> dict:
    t0 = time.perf_counter()
    import rankwise

    imp = time.perf_counter() - t0
    recs, truth = tiny()
    kw = dict(k=10, metrics=metrics, backend=engine)
    if profile_first:  # the first call of a fresh process under cProfile (what makes it slower than the next)
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        rankwise.evaluate(recs, truth, **kw)
        prof.disable()
        return {"engine": engine, "first_profiled_s": time.perf_counter() - t0, "first_profile_top": top_rows(prof, 1, top)}
    t0 = time.perf_counter()
    rankwise.evaluate(recs, truth, **kw)
    first = time.perf_counter() - t0
    warm = []
    for _ in range(reps):
        t0 = time.perf_counter()
        rankwise.evaluate(recs, truth, **kw)
        warm.append(time.perf_counter() - t0)
    instrument()
    totals, per_stage = [], defaultdict(list)
    for _ in range(reps):
        reset()
        t0 = time.perf_counter()
        rankwise.evaluate(recs, truth, **kw)
        total = time.perf_counter() - t0
        totals.append(total)
        for name, v in _CALL.items():
            per_stage[name].append(v)
        per_stage["other (evaluate minus the outermost stages)"].append(total - _TOP[0])
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(reps):
        rankwise.evaluate(recs, truth, **kw)
    prof.disable()
    rows = top_rows(prof, reps, top)
    return {"engine": engine, "import_s": imp, "first_s": first, "warm_median_s": statistics.median(warm),
            "warm_min_s": min(warm), "warm_max_s": max(warm), "instrumented_median_s": statistics.median(totals),
            "stages_median_s": {k: statistics.median(v + [0.0] * (reps - len(v))) for k, v in per_stage.items()},
            "profile_top": rows, "load_1m": os.getloadavg()[0], "rankwise": rankwise.__version__}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--engines", default="polars,duckdb")
    ap.add_argument("--metrics", default="all", help="all (every metric) or accuracy6")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--procs", type=int, default=3, help="fresh processes per engine (first call: their median)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--profile-first", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    metrics = None if a.metrics == "all" else ["precision", "recall", "map", "ndcg", "mrr", "hit_rate"]
    if a.child:
        print("RESULT " + json.dumps(child(a.child, a.reps, metrics, a.top, a.profile_first)))
        return

    def spawn(engine, *extra):
        out = subprocess.run([sys.executable, __file__, "--child", engine, "--reps", str(a.reps), "--metrics",
                              a.metrics, "--top", str(a.top), *extra], capture_output=True, text=True, check=True).stdout
        return json.loads([x for x in out.splitlines() if x.startswith("RESULT ")][-1][7:])

    for engine in a.engines.split(","):
        runs = [spawn(engine) for _ in range(a.procs)]
        r = runs[-1]
        firsts = [x["first_s"] for x in runs]
        imports = [x["import_s"] for x in runs]
        warms = [x["warm_median_s"] for x in runs]
        print(f"\n## {engine}: {a.procs} fresh processes: import median {statistics.median(imports) * 1e3:.0f} ms, "
              f"first call median {statistics.median(firsts) * 1e3:.1f} ms ({', '.join('%.1f' % (f * 1e3) for f in firsts)}), "
              f"warm medians {', '.join('%.1f' % (w * 1e3) for w in warms)} ms, loads "
              f"{', '.join('%.2f' % x['load_1m'] for x in runs)}")
        print(f"last process: import {r['import_s'] * 1e3:.0f} ms, first call {r['first_s'] * 1e3:.1f} ms, warm median "
              f"{r['warm_median_s'] * 1e3:.1f} ms ({r['warm_min_s'] * 1e3:.1f}-{r['warm_max_s'] * 1e3:.1f}), "
              f"instrumented {r['instrumented_median_s'] * 1e3:.1f} ms, load {r['load_1m']:.2f}, "
              f"metrics={a.metrics}")
        print("| stage | median ms |\n|---|---:|")
        for name, v in sorted(r["stages_median_s"].items(), key=lambda x: -x[1]):
            print(f"| {name} | {v * 1e3:.2f} |")
        print("\ncProfile, warm calls, per call: cumulative ms | own ms | calls | function")
        for ct, tt, nc, fn in r["profile_top"]:
            print(f"  {ct * 1e3:8.2f} {tt * 1e3:8.2f} {nc:7.1f}  {fn}")
        p = spawn(engine, "--profile-first")
        print(f"\ncProfile, the FIRST call of a fresh process ({p['first_profiled_s'] * 1e3:.0f} ms profiled): "
              "cumulative ms | own ms | calls | function")
        for ct, tt, nc, fn in p["first_profile_top"]:
            print(f"  {ct * 1e3:8.2f} {tt * 1e3:8.2f} {nc:7.0f}  {fn}")


if __name__ == "__main__":
    main()
