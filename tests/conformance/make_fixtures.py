"""Build one virtualenv per reference library, run its runner on every dataset, write the fixtures.

    python tests/conformance/make_fixtures.py [--libraries ranx,pytrec_eval] [--datasets doc000,clean]
                                              [--venv-root DIR] [--k 1,3,5,10]

Virtualenvs live outside the repo, in ``~/.cache/rankwise-conformance/venvs/<name>`` by default, built from
Python 3.11 (``RANKWISE_CONFORMANCE_PYTHON``, default: this interpreter). A venv is reused when its recorded
pip steps match (``rankwise-venv.json`` inside it), otherwise rebuilt.
The shared venv ``live`` holds ranx, pytrec-eval-terrier, scikit-learn and torchmetrics (+ CPU torch);
CI builds it and runs those four libraries live (see ``run_library``).

Output: ``fixtures/<library>/<dataset>.json`` (format in README.md). The beyond-accuracy dataset ``beyond`` runs
``runners/run_<library>_beyond.py`` (evidently, recommenders, replay, rectools, recbole; others skip it).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNNERS = HERE / "runners"
FIXTURES = HERE / "fixtures"
DEFAULT_VENV_ROOT = Path(os.environ.get("RANKWISE_CONFORMANCE_VENVS",
                                        Path.home() / ".cache" / "rankwise-conformance" / "venvs"))
DEFAULT_KS = "1,3,5,10"
# Interpreter the venvs are built from. Must be CPython 3.11: the local CPU torch 2.13.0 wheel is cp311, and on
# any other version ``pip install torch==2.13.0`` would download the multi-GB CUDA build instead.
BASE_PYTHON = os.environ.get("RANKWISE_CONFORMANCE_PYTHON", sys.executable)

# venv name -> pip steps (each a list of pip install arguments, run in order)
VENVS = {
    "live": [["ranx==0.3.21", "pytrec-eval-terrier==0.5.11", "scikit-learn==1.9.1", "torchmetrics==1.9.0",
              "torch==2.13.0", "ir-measures==0.4.3", "cwl-eval==1.0.12"]],
    "evidently": [["evidently==0.7.23", "pandas<3"]],
    "recommenders": [["recommenders==1.2.1"]],
    "replay": [["replay-rec==0.22.0"]],
    "rectools": [["rectools==0.19.0"]],
    # ml_metrics 0.1.4 is an sdist using use_2to3: needs setuptools<58 and no build isolation
    "ml_metrics": [["setuptools<58", "wheel"], ["--no-build-isolation", "ml_metrics==0.1.4"]],
    # torch pinned in the same resolve so that recbole's torch requirement takes the local CPU wheel
    "recbole": [["torch==2.13.0", "recbole==1.2.1"]],
    "pyspark": [["pyspark==4.3.0", "numpy"]],  # numpy: pyspark.ml needs it
}

# library -> (venv name, runner script)
LIBRARIES = {
    "ranx": ("live", "run_ranx.py"),
    "pytrec_eval": ("live", "run_pytrec_eval.py"),
    "sklearn": ("live", "run_sklearn.py"),
    "torchmetrics": ("live", "run_torchmetrics.py"),
    "evidently": ("evidently", "run_evidently.py"),
    "recommenders": ("recommenders", "run_recommenders.py"),
    "replay": ("replay", "run_replay.py"),
    "rectools": ("rectools", "run_rectools.py"),
    "ml_metrics": ("ml_metrics", "run_ml_metrics.py"),
    "recbole": ("recbole", "run_recbole.py"),
    "pyspark": ("pyspark", "run_pyspark.py"),
}
LIVE_LIBRARIES = ["ranx", "pytrec_eval", "sklearn", "torchmetrics"]
# the beyond-accuracy dataset(s) run each library's beyond runner instead (same venv); libraries without one skip them
BEYOND_DATASETS = ("beyond",)
BEYOND_RUNNERS = {
    "evidently": "run_evidently_beyond.py",
    "recommenders": "run_recommenders_beyond.py",
    "replay": "run_replay_beyond.py",
    "rectools": "run_rectools_beyond.py",
    "recbole": "run_recbole_beyond.py",
}


def runner_for(library, dataset_name):
    """The runner script of ``library`` for a dataset, or None (no beyond-accuracy runner)."""
    if dataset_name in BEYOND_DATASETS:
        return BEYOND_RUNNERS.get(library)
    return LIBRARIES[library][1]


def venv_python(name, venv_root=DEFAULT_VENV_ROOT):
    return Path(venv_root) / name / "bin" / "python"


# venv name -> the modules whose import proves the venv is whole (a half-built one fails this and is rebuilt)
IMPORTS = {"live": ["ranx", "pytrec_eval", "sklearn", "torchmetrics", "ir_measures", "cwl"]}


def _venv_works(path, name):
    """True when ``path``'s recorded steps are today's and its libraries import."""
    marker, python_bin = path / "rankwise-venv.json", path / "bin" / "python"
    try:
        if json.loads(marker.read_text()).get("steps") != VENVS[name] or not python_bin.exists():
            return False
    except (OSError, ValueError):
        return False
    modules = IMPORTS.get(name)
    if not modules:
        return True
    return subprocess.run([str(python_bin), "-c", "import " + ", ".join(modules)],
                          capture_output=True).returncode == 0


def ensure_venv(name, venv_root=DEFAULT_VENV_ROOT, python=None, log=print):
    """Create (or reuse) venv ``name``; return its python. Records the build time in rankwise-venv.json.

    Built atomically: in a temporary folder beside it, checked by importing its libraries, then renamed
    into place, all under a file lock (two test runs at once on one machine build it once). A venv whose
    libraries do not import is rebuilt."""
    import fcntl

    python = python or BASE_PYTHON
    root = Path(venv_root)
    path = root / name
    python_bin = venv_python(name, venv_root)
    if _venv_works(path, name):
        return python_bin
    root.mkdir(parents=True, exist_ok=True)
    with open(root / (".%s.lock" % name), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if _venv_works(path, name):  # built by another run while we waited
            return python_bin
        version = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 check=True, capture_output=True, text=True).stdout.strip()
        if version != "3.11":
            raise RuntimeError("venvs must be built with Python 3.11 (got %s from %s); set "
                               "RANKWISE_CONFORMANCE_PYTHON" % (version, python))
        log("building venv %s in %s ..." % (name, path))
        start = time.time()
        # built beside its final path and renamed into place: only bin/python is ever run, and it finds
        # its site-packages relative to itself (the console scripts' shebangs name the staging path)
        staging = root / (".%s.building" % name)
        subprocess.run(["rm", "-rf", str(staging)], check=True)
        subprocess.run([python, "-m", "venv", str(staging)], check=True)
        for step in VENVS[name]:
            subprocess.run([str(staging / "bin" / "python"), "-m", "pip", "install", "-q", *step], check=True)
        seconds = round(time.time() - start, 1)
        (staging / "rankwise-venv.json").write_text(json.dumps({"steps": VENVS[name], "build_seconds": seconds}) + "\n")
        old = root / (".%s.old" % name)
        subprocess.run(["rm", "-rf", str(old)], check=True)
        if path.exists():
            path.rename(old)
        staging.rename(path)
        subprocess.run(["rm", "-rf", str(old)], check=True)
        if not _venv_works(path, name):
            raise RuntimeError("venv %s was built but its libraries do not import: %s" % (name, IMPORTS.get(name)))
        log("built venv %s in %.0f s" % (name, seconds))
    return python_bin


def run_library(library, dataset_path, venv_root=DEFAULT_VENV_ROOT, ks=DEFAULT_KS, timeout=1800):
    """Run ``library``'s runner live on one dataset (building its venv if needed); return the fixture dict.
    The beyond-accuracy datasets (``BEYOND_DATASETS``) run the library's ``run_<lib>_beyond.py``.

    ``dataset_path`` is a dataset JSON path or a bare dataset name (``"doc000"`` -> ``datasets/doc000.json``).
    """
    return run_library_on(library, [dataset_path], venv_root, ks, timeout)[0]


def run_library_on(library, dataset_paths, venv_root=DEFAULT_VENV_ROOT, ks=DEFAULT_KS, timeout=1800):
    """``run_library`` on several datasets: one process per runner script (``runners/_batch.py``), so the
    library is imported and compiled once; returns the fixture dicts in the order of ``dataset_paths``."""
    paths = [_dataset_path(p) for p in dataset_paths]
    scripts = [runner_for(library, p.stem) for p in paths]
    if None in scripts:
        raise ValueError("%s has no runner for dataset %s" % (library, paths[scripts.index(None)].stem))
    python = ensure_venv(LIBRARIES[library][0], venv_root)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")  # keep runners/__pycache__ out of the repo
    with tempfile.TemporaryDirectory() as tmp:
        outs = [Path(tmp) / ("%d.json" % n) for n in range(len(paths))]
        for script in dict.fromkeys(scripts):
            pairs = [str(x) for p, o, s in zip(paths, outs, scripts) if s == script for x in (p, o)]
            subprocess.run([str(python), str(RUNNERS / "_batch.py"), str(RUNNERS / script), "--k", ks, *pairs],
                           check=True, cwd=str(RUNNERS), timeout=timeout, env=env)
        return [json.loads(o.read_text()) for o in outs]


def _dataset_path(dataset_path):
    dataset_path = Path(dataset_path)
    if not dataset_path.suffix and not dataset_path.exists():
        dataset_path = HERE / "datasets" / (dataset_path.name + ".json")
    return dataset_path.resolve()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--libraries", default=",".join(LIBRARIES), help="comma-separated (default: all)")
    ap.add_argument("--datasets", default=None, help="comma-separated dataset names (default: all)")
    ap.add_argument("--venv-root", default=str(DEFAULT_VENV_ROOT))
    ap.add_argument("--k", default=DEFAULT_KS)
    args = ap.parse_args(argv)

    sys.path.insert(0, str(HERE))
    import datasets  # the sibling generator module
    sys.path.insert(0, str(RUNNERS))
    from _common import dumps  # stdlib-only helper shared with the runners

    paths = datasets.write_all()
    if args.datasets:
        wanted = set(args.datasets.split(","))
        paths = [p for p in paths if p.stem in wanted]
    failures = []
    for library in args.libraries.split(","):
        try:
            ensure_venv(LIBRARIES[library][0], args.venv_root)
        except (subprocess.CalledProcessError, RuntimeError) as exc:
            failures.append((library, "venv", str(exc)))
            print("FAILED to build venv for %s: %s" % (library, exc))
            continue
        for path in paths:
            if runner_for(library, path.stem) is None:
                continue
            start = time.time()
            try:
                doc = run_library(library, path, args.venv_root, args.k)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
                failures.append((library, path.stem, str(exc)))
                print("FAILED %s on %s: %s" % (library, path.stem, exc))
                continue
            out = FIXTURES / library / path.name
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(dumps(doc))
            print("%-13s %-11s %5.1fs -> %s" % (library, path.stem, time.time() - start, out.relative_to(HERE)))
    if failures:
        print("%d failure(s): %s" % (len(failures), ", ".join("%s/%s" % f[:2] for f in failures)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
