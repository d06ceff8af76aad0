"""Conventions: every definitional choice a ranking metric makes, as one named field.

A :class:`Convention` is a frozen bundle of knob values (defined in ``rankwise.conventions.knobs``).
``Convention()`` is the ``default`` preset: for each knob, the value most of the libraries the presets
reproduce use (``_presets.vote``; the vote per knob is in docs/metrics.md). Derive variants with
``conv.replace(field=value)``; :data:`PRESETS` holds the named ones, :func:`resolve` turns a name or a
Convention into a Convention.

Both engines read the same knobs: the Polars plan branches on them in Python, the SQL receives them
as bound parameters (see :meth:`Convention.sql_parameters`), so one convention means one thing.
"""

from __future__ import annotations

from rankwise.conventions.knobs import INPUT_KNOBS, Convention, knob_documentation
from rankwise.conventions.presets import PRESETS
from rankwise.errors import ParameterError, did_you_mean

__all__ = ["Convention", "INPUT_KNOBS", "PRESETS", "knob_documentation", "resolve"]


def resolve(convention: str | Convention) -> Convention:
    """A preset name or a Convention -> a Convention."""
    if isinstance(convention, Convention):
        return convention
    if isinstance(convention, str) and convention in PRESETS:
        return PRESETS[convention]
    raise ParameterError(
        f"Unknown convention {convention!r}.",
        hint=did_you_mean(convention, PRESETS) + f"Use a Convention object or one of the presets: "
             f"{', '.join(sorted(PRESETS))}.",
    )

