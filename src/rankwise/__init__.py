"""rankwise: ranking and recommendation metrics with every convention explicit, on Polars and DuckDB."""

from rankwise.sqlgen.files import bind as bind_parameters
from rankwise.sqlgen.files import read as shipped_sql
from rankwise.api import BACKENDS, Result, evaluate
from rankwise.explain import Explanation, compare_conventions, explain
from rankwise.conventions import PRESETS, Convention, knob_documentation
from rankwise.errors import (
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
from rankwise.metrics.beyond import METRICS as BEYOND_METRICS
from rankwise.metrics.declarations import DEFAULT_METRICS, METRICS
from rankwise.inputs.trec import read_qrels, read_trec_run
from rankwise.sqlgen.render import sql
from rankwise.engines.postgres import PostgresTable
from rankwise._version import __version__
from rankwise import expr
from rankwise import report
from rankwise.inference import stats  # noqa: E402  (list-form expressions; HTML report and plots; statistics)


__all__ = [
    "BACKENDS", "METRICS", "DEFAULT_METRICS", "BEYOND_METRICS", "PRESETS", "Convention", "Result", "evaluate", "knob_documentation", "expr", "report", "stats",
    "bind_parameters", "shipped_sql", "sql", "read_trec_run", "read_qrels", "compare_conventions", "explain", "Explanation",
    "DtypeMismatchError", "DuplicateItemError", "DuplicateRankError", "DuplicateUserError", "InputError",
    "InputFileError", "InvalidIdentifierError", "InvalidRankError", "InvalidRelevanceError", "InvalidScoreError",
    "MissingColumnError", "MissingDependencyError", "NullValueError", "NumericOverflowError", "ParameterError",
    "RankwiseError", "UndefinedValueError", "UnsupportedInputError", "UnsupportedSQLError", "WriteError",
    "WriteLockedError", "WriteSchemaError", "PostgresTable",
]
