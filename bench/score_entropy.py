"""score_entropy over the pooled top-k scores: the evaluate timed on each engine, and its values beside the
exact ones (math.fsum over the same terms). Synthetic lists: --users users x --length items, ranks 1..n, normal
scores (seed 5), so the input is already canonical (the scores go beside the rows); --shuffle shuffles the rows
first (the sorted path of rankwise.engines.beyond.with_scores).

Usage: flock /tmp/rankwise-cpu.lock python bench/score_entropy.py [--users 1M] [--length 20] [--reps 3] [--shuffle]
(prints one line per engine; run a fresh process per version, e.g. PYTHONPATH=<checkout>/src for "before")
"""
from __future__ import annotations

import argparse
import math
import time

KS = [5, 10, 20]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", default="1M")
    ap.add_argument("--length", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--engines", default="polars,duckdb")
    ap.add_argument("--shuffle", action="store_true")
    a = ap.parse_args()
    import numpy as np
    import polars as pl

    import rankwise

    n = int(float(a.users.upper().replace("K", "e3").replace("M", "e6")))
    rng = np.random.default_rng(5)
    recs = pl.DataFrame({"user": np.repeat(np.arange(n), a.length), "item": np.tile(np.arange(a.length), n),
                         "rank": np.tile(np.arange(1, a.length + 1), n), "score": rng.normal(0.0, 3.0, n * a.length)})
    if a.shuffle:
        recs = recs.sample(fraction=1.0, shuffle=True, seed=1)
    exact = []
    for k in KS:
        s = recs.filter(pl.col("rank") <= k)["score"].to_numpy()
        d = s - s.max()
        z, zd = math.fsum(np.exp(d)), math.fsum(np.exp(d) * d)
        exact.append(math.log(z) - zd / z)
    print(f"exact (math.fsum): {exact}")
    for engine in a.engines.split(","):
        times = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            values = rankwise.evaluate(recs, None, k=KS, metrics=["score_entropy"], backend=engine).summary["value"]
            times.append(time.perf_counter() - t0)
        print(f"{engine}: {' '.join(f'{t:.2f}' for t in times)} s  values {values.to_list()}")


if __name__ == "__main__":
    main()
