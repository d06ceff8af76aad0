"""Run one runner script on several datasets in one process, so its library is imported (and, for ranx,
JIT-compiled by numba) once instead of once per dataset.

Usage: python _batch.py RUNNER.py --k 1,3,5,10 DATASET.json OUT.json [DATASET.json OUT.json ...]
"""

import runpy
import sys


def main():
    script, flag, ks, *pairs = sys.argv[1:]
    if flag != "--k" or not pairs or len(pairs) % 2:
        sys.exit(__doc__)
    for dataset, out in zip(pairs[::2], pairs[1::2]):
        sys.argv = [script, dataset, out, "--k", ks]
        runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
