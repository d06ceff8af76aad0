"""Before/after table of the A/B peers_first_call runs: python summarize.py peers|final [dir] (base = before, new = after)."""
import json, glob, statistics as st, sys
res = {"base": [], "new": []}
for t in res:
    for f in sorted(glob.glob(f"{sys.argv[2] if len(sys.argv) > 2 else '.'}/{sys.argv[1]}_{t}_*.json")):
        res[t] += json.load(open(f))
files = {t: {r.get("rankwise_file") for r in rs if r["tool"].startswith("rankwise")} for t, rs in res.items()}
print("files:", files)
cells = {}
for t, rs in res.items():
    for r in rs:
        tool = r["tool"] if r["tool"].startswith("rankwise") else "rectools"
        cells.setdefault((r["group"], tool, t), []).append(r)
groups = sorted({k[0] for k in cells}, key=lambda g: (g != "accuracy", g))
print("| group | RecTools 0.19.0 s | rankwise Polars before s | after s | DuckDB before s | after s | best rankwise / RecTools before | after | peak RSS before / after GB |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for g in groups:
    rt = [r["call_s"] for t in res for r in cells.get((g, "rectools", t), [])]
    m = lambda tool, t: st.median(r["call_s"] for r in cells[(g, tool, t)])
    runs = lambda tool, t: ", ".join(f"{r['call_s']:.2f}" for r in cells[(g, tool, t)])
    pb, pa, db, da = m("rankwise-polars", "base"), m("rankwise-polars", "new"), m("rankwise-duckdb", "base"), m("rankwise-duckdb", "new")
    rts = st.median(rt)
    rss = lambda t: max(r["peak_rss_gb"] for tool in ("rankwise-polars", "rankwise-duckdb") for r in cells[(g, tool, t)])
    print(f"| {g} | {rts:.3f} | {pb:.3f} ({runs('rankwise-polars','base')}) | {pa:.3f} ({runs('rankwise-polars','new')}) | "
          f"{db:.3f} ({runs('rankwise-duckdb','base')}) | {da:.3f} ({runs('rankwise-duckdb','new')}) | {min(pb,db)/rts:.2f} | {min(pa,da)/rts:.2f} | {rss('base'):.2f} / {rss('new'):.2f} |")
loads = [r["load_1m_before"] for t in res for r in res[t]]
print(f"load (1 min) before each process: min {min(loads)}, median {st.median(loads)}, max {max(loads)}; n processes {len(loads)}")
for t in res:
    vals = {}
    for r in res[t]:
        vals.setdefault((r["group"]), set()).add(json.dumps({k: round(v, 9) for k, v in r["values"].items()}, sort_keys=True))
    print(t, "distinct value sets per group:", {g: len(v) for g, v in vals.items()})
