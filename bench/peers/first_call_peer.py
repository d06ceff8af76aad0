"""One tool's FIRST call on in-memory frames, for bench/peers_first_call.py (issue 39, target 2).

Runs in the tool's own interpreter (rankwise: rankwise's env; rectools / replay / ranx: their conformance
venvs). Needs only numpy and pandas before the clock (polars for rankwise: its input frame is a Polars
DataFrame). Steps, each timed apart:
  load    the .npz arrays written by peers_first_call.py -> the tool's input frames (not part of the call)
  import  the library (rankwise: ``import rankwise``; the peers: their metric modules)
  call    the FIRST call computing the group's values from the frames (ranx: building Qrels/Run from the
          frame is part of it and also reported alone as ``build``)
Prints one ``RESULT {json}`` line: tool, group, k, values (rankwise names), import_s, call_s, load_s, version.

Usage: python first_call_peer.py --tool rectools|replay|ranx|rankwise-polars|rankwise-duckdb
                                 --group accuracy|novelty|arp|item_coverage|serendipity|all --k 10
                                 --data DIR [--preset rectools|replay|ranx]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

ACCURACY = ["precision", "recall", "map", "ndcg", "mrr", "hit_rate"]
# group -> rankwise metric names (beyond groups per library)
BEYOND = {"rectools": {"novelty": ["novelty"], "arp": ["arp"], "item_coverage": ["item_coverage"],
                       "serendipity": ["serendipity"],
                       "all": ["novelty", "arp", "item_coverage", "serendipity"]},
          "replay": {"novelty": ["novelty"], "item_coverage": ["item_coverage"], "all": ["novelty", "item_coverage"]}}


def metrics_of(preset: str, group: str) -> list[str]:
    return ACCURACY if group == "accuracy" else BEYOND[preset][group]


def arrays(data: str, name: str) -> dict:
    with np.load(f"{data}/{name}.npz") as z:
        return {key: z[key] for key in z.files}


def inputs(data: str, group: str, k: int) -> dict:
    """The group's arrays: accuracy: recs (top-k of the accuracy file) and truth; beyond: the beyond recs
    (top-k), train, and Serendipity's ground truth (the train pairs, each once)."""
    if group == "accuracy":
        return {"recs": arrays(data, f"acc_recs_{k}"), "truth": arrays(data, "acc_truth")}
    return {"recs": arrays(data, f"beyond_recs_{k}"), "train": arrays(data, "beyond_train"),
            "truth": arrays(data, "beyond_truth")}


# ----------------------------------------------------------------------------------------------- rankwise
def rankwise_tool(backend: str, preset: str, group: str, k: int, data: str) -> dict:
    """``backend`` "polars+scipy": the Polars engine with scipy.special imported before the clock (with
    rankwise, in the import time): what the first call costs without scipy's first import (the t quantile
    of the summary's intervals), a diagnostic row."""
    t0 = time.perf_counter()
    import polars as pl

    a = inputs(data, group, k)
    recs = pl.DataFrame(a["recs"])
    other = pl.DataFrame(a["truth"] if group == "accuracy" else a["train"])
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    import rankwise

    if backend.endswith("+scipy"):
        import scipy.special  # noqa: F401

        backend = backend.removesuffix("+scipy")
    imp = time.perf_counter() - t0
    names = metrics_of(preset, group)
    t0 = time.perf_counter()
    if group == "accuracy":
        res = rankwise.evaluate(recs, other, k=k, metrics=names, convention=preset, backend=backend)
    else:  # only serendipity reads the ground truth
        truth = pl.DataFrame(a["truth"]) if "serendipity" in names else None
        res = rankwise.evaluate(recs, truth, k=k, metrics=names, train=other, convention=preset, backend=backend)
    summary = res.summary
    call = time.perf_counter() - t0
    values = {r["metric"]: r["value"] for r in summary.iter_rows(named=True) if r["k"] == k}
    return {"values": values, "load_s": load, "import_s": imp, "call_s": call, "version": rankwise.__version__,
            "rankwise_file": _where(rankwise.__file__)}


def _where(path: str) -> str:
    """A module's file relative to this repository (results are committed: no machine's absolute path), or the
    part from site-packages on for an installed copy."""
    file = Path(path).resolve()
    try:
        return str(file.relative_to(Path(__file__).resolve().parents[2]))
    except ValueError:
        parts = file.parts
        return str(Path(*parts[parts.index("site-packages"):])) if "site-packages" in parts else file.name


# ----------------------------------------------------------------------------------------------- RecTools
def rectools_tool(group: str, k: int, data: str) -> dict:
    t0 = time.perf_counter()
    import pandas as pd

    a = inputs(data, group, k)
    if group == "accuracy":
        r, t = a["recs"], a["truth"]
        reco = pd.DataFrame({"user_id": r["user"], "item_id": r["item"], "rank": r["rank"]})
        keep = t["relevance"] > 0  # RecTools' interactions are the relevant labels (binary relevance)
        inter = pd.DataFrame({"user_id": t["user"][keep], "item_id": t["item"][keep]})
    else:
        r, tr = a["recs"], a["train"]
        reco = pd.DataFrame({"user_id": r["user"], "item_id": r["item"], "rank": r["rank"]})
        prev = pd.DataFrame({"user_id": tr["user"], "item_id": tr["item"]})
        catalog = prev["item_id"].unique()
        inter = pd.DataFrame({"user_id": a["truth"]["user"], "item_id": a["truth"]["item"]})
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    import rectools
    from rectools.metrics import (MAP, MRR, NDCG, AvgRecPopularity, CatalogCoverage, HitRate, MeanInvUserFreq,
                                  Precision, Recall, Serendipity, calc_metrics)

    imp = time.perf_counter() - t0
    t0 = time.perf_counter()
    if group == "accuracy":
        spec = {"precision": Precision(k=k), "recall": Recall(k=k), "map": MAP(k=k), "ndcg": NDCG(k=k),
                "mrr": MRR(k=k), "hit_rate": HitRate(k=k)}
        out = calc_metrics(spec, reco, inter)
    else:
        cls = {"novelty": MeanInvUserFreq, "arp": AvgRecPopularity, "item_coverage": CatalogCoverage,
               "serendipity": Serendipity}
        spec = {name: cls[name](k=k) for name in BEYOND["rectools"][group]}
        # calc_metrics: RecTools' one call for several metrics (it shares the merged tables among them)
        out = calc_metrics(spec, reco, interactions=inter if "serendipity" in spec else None,
                           prev_interactions=prev, catalog=catalog)
    call = time.perf_counter() - t0
    return {"values": {name: float(out[name]) for name in spec}, "load_s": load, "import_s": imp, "call_s": call,
            "version": rectools.__version__}


# ----------------------------------------------------------------------------------------------- RePlay
def replay_tool(group: str, k: int, data: str) -> dict:
    t0 = time.perf_counter()
    import pandas as pd

    a = inputs(data, group, k)
    r = a["recs"]
    # rating: any score falling along the list (RePlay sorts by it); 1 / rank
    recs = pd.DataFrame({"query_id": r["user"], "item_id": r["item"], "rating": 1.0 / r["rank"]})
    if group == "accuracy":
        t = a["truth"]
        keep = t["relevance"] > 0
        gt = pd.DataFrame({"query_id": t["user"][keep], "item_id": t["item"][keep]})
        train = None
    else:
        tr = a["train"]
        train = pd.DataFrame({"query_id": tr["user"], "item_id": tr["item"]})
        gt = train
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    import replay
    from replay.metrics import MAP, MRR, NDCG, Coverage, HitRate, OfflineMetrics, Precision, Recall, Surprisal

    imp = time.perf_counter() - t0
    t0 = time.perf_counter()
    if group == "accuracy":
        cls = {"precision": Precision, "recall": Recall, "map": MAP, "ndcg": NDCG, "mrr": MRR, "hit_rate": HitRate}
    else:
        cls = {"novelty": Surprisal, "item_coverage": Coverage}
        cls = {name: cls[name] for name in BEYOND["replay"][group]}
    objs = {name: c(topk=k) for name, c in cls.items()}
    if len(objs) == 1:  # one metric: its own call, as a user asking for it alone would
        (name, obj), = objs.items()
        out = obj(recs, gt) if train is None else obj(recs, train)
    else:  # OfflineMetrics: RePlay's one call for several metrics (shares their common part)
        out = OfflineMetrics(list(objs.values()))(recs, gt, train)
    call = time.perf_counter() - t0
    key = {name: f"{obj.__class__.__name__}@{k}" for name, obj in objs.items()}
    return {"values": {name: float(out[key[name]]) for name in objs}, "load_s": load, "import_s": imp,
            "call_s": call, "version": replay.__version__}


# ----------------------------------------------------------------------------------------------- ranx
def ranx_tool(group: str, k: int, data: str) -> dict:
    """ranx (preset ranx): qrels = every truth row (int relevance, 0 kept), run = recs scored 1 / rank,
    string ids, make_comparable(qrels) (bench/peers/ranx_peer.py's encoding). The frame -> dict conversion
    is the cheapest we found (numpy sort + split, then dict(zip)): ranx takes dicts (its from_df wants
    object-dtype ids and is slower)."""
    assert group == "accuracy"
    t0 = time.perf_counter()
    import pandas as pd

    a = inputs(data, group, k)
    r, t = a["recs"], a["truth"]
    recs = pd.DataFrame({"user": r["user"], "item": r["item"], "score": 1.0 / r["rank"]})
    truth = pd.DataFrame({"user": t["user"], "item": t["item"], "relevance": t["relevance"].astype(np.int64)})
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    import ranx

    imp = time.perf_counter() - t0

    def nested(df, value):
        users = df["user"].to_numpy()
        order = np.argsort(users, kind="stable")
        u = users[order]
        items = df["item"].to_numpy()[order].astype(str).tolist()
        vals = df[value].to_numpy()[order].tolist()
        cuts = np.flatnonzero(np.diff(u)) + 1
        starts, ends = np.r_[0, cuts], np.r_[cuts, len(u)]
        return {str(u[s]): dict(zip(items[s:e], vals[s:e])) for s, e in zip(starts.tolist(), ends.tolist())}

    t0 = time.perf_counter()
    qrels = ranx.Qrels(nested(truth, "relevance"))
    run = ranx.Run(nested(recs, "score")).make_comparable(qrels)
    build = time.perf_counter() - t0
    names = {f"{m}@{k}": m for m in ACCURACY}
    out = ranx.evaluate(qrels, run, list(names))
    call = time.perf_counter() - t0
    import importlib.metadata as md

    return {"values": {names[key]: float(v) for key, v in out.items()}, "load_s": load, "import_s": imp,
            "call_s": call, "build_s": build, "version": md.version("ranx")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--k", type=int, required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--preset", help="rankwise only: the convention (rectools, replay, ranx)")
    a = ap.parse_args()
    if a.tool.startswith("rankwise-"):
        out = rankwise_tool(a.tool.split("-", 1)[1], a.preset, a.group, a.k, a.data)
    else:
        out = {"rectools": rectools_tool, "replay": replay_tool, "ranx": ranx_tool}[a.tool](a.group, a.k, a.data)
    out = {key: round(v, 4) if isinstance(v, float) and key.endswith("_s") else v for key, v in out.items()}
    print("RESULT " + json.dumps({"tool": a.tool, "preset": a.preset, "group": a.group, "k": a.k} | out), flush=True)


if __name__ == "__main__":
    main()
