"""Progress bars on long runs: tqdm (the ``rankwise[progress]`` extra) on a terminal, else nothing.

    with progress(total=len(runs), desc="runs") as bar:
        for run in runs:
            ...
            bar.update()
    for run in progress(runs, desc="runs"): ...

A bar shows only when enabled (default: stderr is a terminal; ``enabled=False`` or the environment
variable ``RANKWISE_PROGRESS=0`` turns it off) and tqdm is importable, and only after ``delay``
seconds, so short evaluations print nothing. Otherwise a no-op with the same methods: progress
never raises because of its own setup.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

DELAY = 2.0  # seconds before a bar appears


class NoProgress:
    """What ``progress`` returns when off: iterates the iterable, ignores updates."""

    def __init__(self, iterable: Iterable | None = None, total: int | None = None):
        self.iterable, self.total, self.n = iterable, total, 0

    def __iter__(self):
        for item in self.iterable or ():
            yield item
            self.n += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


def enabled_by_default(stream=None) -> bool:
    """On when the stream (stderr) is a terminal and RANKWISE_PROGRESS is not 0/false/off."""
    if os.environ.get("RANKWISE_PROGRESS", "").strip().lower() in ("0", "false", "no", "off"):
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def progress(iterable: Iterable | None = None, *, total: int | None = None, desc: str | None = None,
             unit: str = "it", enabled: bool | None = None, delay: float = DELAY):
    """A tqdm bar on stderr (a context manager and an iterator, ``.update(n)``), or a NoProgress."""
    if enabled is None:
        enabled = enabled_by_default()
    if not enabled:
        return NoProgress(iterable, total)
    try:
        from tqdm import tqdm
    except ImportError:  # the progress extra is not installed: no bar, never an error
        return NoProgress(iterable, total)
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)
    return tqdm(iterable, total=total, desc=desc, unit=unit, file=sys.stderr, delay=delay, leave=False,
                dynamic_ncols=True)
