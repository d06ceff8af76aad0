"""rankwise: ranking and recommendation metrics with every convention explicit, on Polars and DuckDB."""

from ._sql_files import bind as bind_parameters
from ._sql_files import read as shipped_sql
from .api import BACKENDS, Result, evaluate
from .compare import Explanation, compare_conventions, explain
from .conventions import PRESETS, Convention, knob_documentation
from .errors import (
    DtypeMismatchError,
    DuplicateItemError,
    DuplicateRankError,
    DuplicateUserError,
    InputError,
    InputFileError,
    InvalidIdentifierError,
    InvalidRankError,
    InvalidRelevanceError,
    InvalidScoreError,
    MissingColumnError,
    MissingDependencyError,
    NullValueError,
    NumericOverflowError,
    ParameterError,
    RankwiseError,
    UndefinedValueError,
    UnsupportedInputError,
    UnsupportedSQLError,
    WriteError,
    WriteLockedError,
    WriteSchemaError,
)
from ._beyond_spec import METRICS as BEYOND_METRICS
from .metrics import METRICS
from .render import sql
from ._postgres_backend import PostgresTable
from ._version import __version__
from . import expr, report, stats  # noqa: E402  (list-form expressions; HTML report and plots; statistics)


__all__ = [
    "BACKENDS", "METRICS", "BEYOND_METRICS", "PRESETS", "Convention", "Result", "evaluate", "knob_documentation", "expr", "report", "stats",
    "bind_parameters", "shipped_sql", "sql", "compare_conventions", "explain", "Explanation",
    "DtypeMismatchError", "DuplicateItemError", "DuplicateRankError", "DuplicateUserError", "InputError",
    "InputFileError", "InvalidIdentifierError", "InvalidRankError", "InvalidRelevanceError", "InvalidScoreError",
    "MissingColumnError", "MissingDependencyError", "NullValueError", "NumericOverflowError", "ParameterError",
    "RankwiseError", "UndefinedValueError", "UnsupportedInputError", "UnsupportedSQLError", "WriteError",
    "WriteLockedError", "WriteSchemaError", "PostgresTable",
]
