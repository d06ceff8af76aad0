#!/usr/bin/env bash
# Create the peers' virtualenv (ranx, pytrec_eval, pyspark, floor deps), apart from rankwise's env.
set -euo pipefail
VENV="${RANKWISE_BENCH_VENV:-$HOME/.cache/rankwise-bench/venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q -r "$(dirname "$0")/requirements.txt"
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md
for p in ["ranx", "pytrec-eval-terrier", "pyspark", "polars", "duckdb", "pyarrow", "psutil", "numpy"]:
    print(f"{p}=={md.version(p)}")
PY
