"""Typed errors. Every message names the problem, shows a few offending rows and ends with a hint.

    RankwiseError
    ├── InputError (also ValueError)         the recommendations, ground truth or side inputs
    │   ├── MissingColumnError, NullValueError, DuplicateItemError, DuplicateUserError,
    │   ├── DuplicateRankError, InvalidRankError, InvalidRelevanceError, InvalidScoreError,
    │   ├── DtypeMismatchError, UnsupportedInputError, InputFileError
    ├── ParameterError (also ValueError)     an argument: k, metrics, backend, convention, names
    │   └── InvalidIdentifierError           a table/column/prefix name that is not a plain identifier
    ├── UndefinedValueError (also ValueError)  a value the convention says is an error
    ├── NumericOverflowError (also ValueError) a metric value is not finite (e.g. 2^relevance overflows)
    ├── UnsupportedSQLError                  a declared gap of a SQL dialect (rankwise.sqlgen.render.GAPS)
    ├── WriteError                           Result.write could not write
    │   ├── WriteSchemaError                 the target holds other columns
    │   └── WriteLockedError                 another writer holds the target
    └── MissingDependencyError (also ImportError)  an optional extra is not installed

Warnings (``warnings.warn``; the CLI prints them as notes):

    RankwiseWarning (also UserWarning)
    ├── CutoffWarning        a k above every recommendation list's length
    └── LeftOutWarning       Result.compare left some metrics out (one value per run: nothing to pair)
"""

from __future__ import annotations

import difflib
import os
import sys
import warnings
from contextlib import contextmanager


class RankwiseError(Exception):
    """Base class of every error rankwise raises on purpose."""

    def __init__(self, problem: str, *, rows: object = None, hint: str | None = None):
        self.problem, self.rows, self.hint = problem, rows, hint
        parts = [problem]
        if rows is not None:
            parts.append(f"Offending rows (first few):\n{rows}")
        if hint:
            parts.append(f"Hint: {hint}")
        super().__init__("\n".join(parts))


class InputError(RankwiseError, ValueError):
    """The recommendations or the ground truth are malformed."""


class MissingColumnError(InputError):
    """A required column is not in the input."""


class NullValueError(InputError):
    """A user, item, rank, score or relevance is null."""


class DuplicateItemError(InputError):
    """The same item appears twice in one user's list (or one label twice)."""


class DuplicateUserError(InputError):
    """In list form, a user has more than one row."""


class DuplicateRankError(InputError):
    """Two items share a rank in one user's list."""


class InvalidRankError(InputError):
    """A rank is below 1 or not an integer."""


class InvalidRelevanceError(InputError):
    """A relevance is NaN, infinite or negative."""


class InvalidScoreError(InputError):
    """A score column is not numeric (text, boolean, date), so ranking by it would be wrong."""


class DtypeMismatchError(InputError):
    """User or item ids have different or unusable types."""


class UnsupportedInputError(InputError):
    """The input container is not one rankwise reads."""


class InputFileError(InputError):
    """An input path is missing, a directory of the wrong kind, empty, truncated or unreadable."""


class ParameterError(RankwiseError, ValueError):
    """An argument of evaluate() is invalid: k, metric names, backend, convention."""


class InvalidIdentifierError(ParameterError):
    """A name that reaches SQL (table, schema, prefix, column) is not a plain identifier."""


class UndefinedValueError(RankwiseError, ValueError):
    """A user's metric is undefined and the convention says 'error'."""


class NumericOverflowError(RankwiseError, ValueError):
    """A metric value is infinite or NaN where the convention defines it (an overflow)."""


class UnsupportedSQLError(RankwiseError):
    """A convention or option has no faithful SQL in the requested dialect (see ``render.GAPS``)."""


class WriteError(RankwiseError):
    """Result.write could not write to the target (unwritable, corrupt, unreachable)."""


class WriteSchemaError(WriteError):
    """The existing table or file has other columns or types than rankwise writes."""


class WriteLockedError(WriteError):
    """Another process holds the target (a DuckDB file lock) and did not release it in time."""


class MissingDependencyError(RankwiseError, ImportError):
    """An optional dependency is not installed."""


class RankwiseWarning(UserWarning):
    """Base class of every warning rankwise gives: a result that is computed but likely not what was meant."""


class CutoffWarning(RankwiseWarning):
    """A cutoff k is above every recommendation list's length: metrics that divide by k shrink with it."""


class LeftOutWarning(RankwiseWarning):
    """Result.compare left out metrics that have one value per run (catalog-level, an F of the means)."""


def warn(message: str, category: type[RankwiseWarning]) -> None:
    """``warnings.warn`` pointing at the caller's first line outside rankwise (the user's call), however
    deep inside rankwise the warning is given."""
    here, frame, level = os.path.dirname(os.path.abspath(__file__)), sys._getframe(0), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here + os.sep):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def did_you_mean(name, known) -> str:
    """"Did you mean 'ndcg'? " when ``name`` is close to some of ``known`` (difflib, case-insensitive),
    else "": the start of a hint, for every lookup of a name (metric, preset, knob, backend, option)."""
    if not isinstance(name, str):
        return ""
    by_lower = {str(k).lower(): k for k in known}
    close = difflib.get_close_matches(name.strip().lower(), list(by_lower), n=3, cutoff=0.6)
    return f"Did you mean {' or '.join(repr(by_lower[c]) for c in close)}? " if close else ""


@contextmanager
def naming_run(name):
    """A rankwise error raised inside names the run it belongs to (``name`` None: one run, unnamed)."""
    try:
        yield
    except RankwiseError as error:
        if name is None or getattr(error, "run", None) is not None:
            raise
        named = type(error)(f"run {name!r}: {error.problem}", rows=error.rows, hint=error.hint)
        named.run = name
        raise named.with_traceback(error.__traceback__) from None
