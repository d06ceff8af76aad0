"""Typed errors. Every message names the problem, shows a few offending rows and ends with a hint."""

from __future__ import annotations


class RankwiseError(ValueError):
    """Base class of every error rankwise raises on purpose."""

    def __init__(self, problem: str, *, rows: object = None, hint: str | None = None):
        self.problem, self.rows, self.hint = problem, rows, hint
        parts = [problem]
        if rows is not None:
            parts.append(f"Offending rows (first few):\n{rows}")
        if hint:
            parts.append(f"Hint: {hint}")
        super().__init__("\n".join(parts))


class InputError(RankwiseError):
    """The recommendations or the ground truth are malformed."""


class MissingColumnError(InputError):
    """A required column is not in the input."""


class NullValueError(InputError):
    """A user, item, rank, score or relevance is null."""


class DuplicateItemError(InputError):
    """The same item appears twice in one user's list."""


class DuplicateRankError(InputError):
    """Two items share a rank in one user's list."""


class InvalidRankError(InputError):
    """A rank is below 1."""


class InvalidRelevanceError(InputError):
    """A relevance is NaN, infinite or negative."""


class DtypeMismatchError(InputError):
    """User or item ids have different types in the two inputs."""


class UnsupportedInputError(InputError):
    """The input container is not one rankwise reads."""


class ParameterError(RankwiseError):
    """An argument of evaluate() is invalid: k, metric names, backend, convention."""


class UndefinedValueError(RankwiseError):
    """A user's metric is undefined and the convention says 'error'."""


class MissingDependencyError(RankwiseError, ImportError):
    """An optional dependency is not installed."""
