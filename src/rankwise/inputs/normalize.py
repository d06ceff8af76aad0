"""Input normalisation: any container, long or list form -> the two canonical long tables.

    recommendations (user_id, rank, item_id)        rank = position 1..n, no gaps, no repeats
    ground_truth    (user_id, item_id, relevance)   relevance Float64 >= 0, one row per label

A user given with an empty list keeps one row whose item_id (and rank / relevance) is null: the user
exists in that input with nothing in it. Both engines read exactly these tables; every input rule
(how ranks come from scores, ties, duplicates, validation) lives here and nowhere else.
"""

from __future__ import annotations

import csv
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path

import polars as pl

from rankwise.inputs.layout import grouped_runs, pair_key
from rankwise.conventions.knobs import INPUT_KNOBS, Convention
from rankwise.errors import (
    DtypeMismatchError,
    DuplicateItemError,
    DuplicateRankError,
    DuplicateUserError,
    InputFileError,
    InvalidRankError,
    InvalidRelevanceError,
    InvalidScoreError,
    MissingColumnError,
    NullValueError,
    ParameterError,
    RankwiseError,
    UnsupportedInputError,
)

USER, ITEM, RANK, SCORE, REL = "user_id", "item_id", "rank", "score", "relevance"
NARROW_IDS = 2**32  # ids in [0, NARROW_IDS): a (user, item) pair packs into one UInt64 (RecCounts.narrow)
_SHOW = 5  # offending rows shown in an error


@dataclass(frozen=True)
class Columns:
    """The caller's column names."""

    user: str = "user"
    item: str = "item"
    rank: str | None = "rank"  # None: rank by the score column even where the table has a rank column
    score: str = "score"
    relevance: str = "relevance"

    def __post_init__(self):
        check_roles({f"{f.name}_col": getattr(self, f.name) for f in fields(self)
                     if not (f.name == "rank" and self.rank is None)})


def check_roles(names: dict) -> None:
    """One column, one role: each value of ``names`` (the parameter naming a role -> the column it
    names; the caller passes the roles in play) is a column name, and no two are the same column,
    else a ParameterError. evaluate(), rankwise.sql and rankwise.expr all check their names here."""
    for role, name in names.items():
        if not isinstance(name, str):
            raise ParameterError(f"{role} must be a column name (a string), got {name!r}.",
                                 hint=f"Pass {role}='...'.")
    for column in dict.fromkeys(names.values()):
        sharing = [role for role, name in names.items() if name == column]
        if len(sharing) > 1:
            raise ParameterError(
                f"{' and '.join(sharing)} name the same column {column!r}: each role needs its own column.",
                hint=f"Give each of {', '.join(f'{role}=' for role in names)} a different name "
                "(rename the input's columns if one column would serve two roles).",
            )


@dataclass(frozen=True)
class RecCounts:
    """The recommendations' rows per user, as the layout check counted them."""

    rows: pl.DataFrame  # (user_id, n_recs)
    narrow: bool  # every user and item id is an integer in [0, NARROW_IDS)


@dataclass(frozen=True)
class Prepared:
    """The canonical tables, ready for either engine.

    ``recs`` / ``truth`` are lazy: when a file input already satisfies every rule (checked exactly,
    see ``_runs.grouped_runs``) they are plain scans, so a 100M-row input is never held in
    memory. ``recommendations`` / ``ground_truth`` collect them on first use (writers, Spark).
    ``sources`` holds, per table, the :class:`FileSource` of a validated long Parquet file, so an
    engine that ``reads_files`` (DuckDB) scans it itself (a list-form file is read through Polars).
    ``rec_users`` / ``truth_users`` are each input's distinct users when the checks already produced them
    (else None); ``rec_counts`` the recommendations' rows per user when the layout check counted them (the
    Polars plan then needs no group-by over every row, and packs its join key into 64 bits when it may).
    """

    recs: pl.LazyFrame
    truth: pl.LazyFrame
    user_dtype: pl.DataType
    sources: dict = field(default_factory=dict)
    rec_users: pl.Series | None = None
    truth_users: pl.Series | None = None
    rec_lists: pl.DataFrame | None = None  # list-form recommendations (user_id, item_id: list), checked
    truth_lists: pl.DataFrame | None = None  # list-form ground truth (user_id, item_id: list), checked
    rec_counts: RecCounts | None = None  # each user's rows, as the layout check counted them
    # how each input (recommendations, ground truth) gives a range of users' rows again cheaply when its rows are in
    # user order: "filter" a Parquet file (a range reads only the row groups that can hold it), "slice" rows in memory
    # (no copy), "lists" list-form recommendations in memory (a user's row, its list exploded per range); None: no
    # cheap way (a CSV file would be parsed whole again, a caller's LazyFrame run again)
    cuts: tuple[str | None, str | None] = (None, None)

    @cached_property
    def recommendations(self) -> pl.DataFrame:
        return self.recs.collect()

    @property
    def narrow_ids(self) -> bool:
        """Every recommended user and item id is an integer in [0, NARROW_IDS), as the layout check found."""
        return self.rec_counts is not None and self.rec_counts.narrow

    @cached_property
    def ground_truth(self) -> pl.DataFrame:
        return self.truth.collect()

    def _distinct_users(self) -> tuple[pl.Series, pl.Series]:
        """Each input's distinct users (from the users the checks saw, without a rescan)."""
        recs = self.rec_users if self.rec_users is not None else self.recs.select(USER).unique().collect()[USER]
        truth = self.truth_users if self.truth_users is not None else self.truth.select(USER).unique().collect()[USER]
        return recs.cast(self.user_dtype).unique(), truth.cast(self.user_dtype).unique()

    @cached_property
    def _rows_per_user(self) -> pl.DataFrame | None:
        """(user_id, n_recs): the recommended rows of each user in input order, as the checks counted them (a
        list's length; None: not counted)."""
        if self.rec_lists is not None:
            return self.rec_lists.select(USER, pl.col(ITEM).list.len().cast(pl.Int64).alias("n_recs"))
        return None if self.rec_counts is None else self.rec_counts.rows

    def user_ranges(self, rows_per_range: int, reach: int | None = None) -> list[tuple[object, object]]:
        """Ranges of user ids (low inclusive, high exclusive; None: unbounded) that cover every user, each holding
        about ``rows_per_range`` recommended rows within rank ``reach`` (None: every row), in user order:
        [(None, None)] (every user at once) unless each input has a cheap ``cuts`` way and rows the checks found in
        user order (each user's rows counted) and the ids are integers or strings (ordered as Polars sorts them)."""
        counts = self._rows_per_user if None not in self.cuts else None
        if (counts is None or self.truth_users is None
                or not (self.user_dtype.is_integer() or self.user_dtype == pl.String)
                or not (counts.get_column(USER).is_sorted() and self.truth_users.is_sorted())):
            return [(None, None)]
        read = pl.col("n_recs") if reach is None else pl.min_horizontal("n_recs", pl.lit(reach, dtype=pl.Int64))
        total = int(counts.select(read.sum()).item())
        n = -(-total // rows_per_range)
        if n <= 1:
            return [(None, None)]
        rows = counts.select(USER, read.alias("n_read"))  # in user order (checked above)
        # the first user past each multiple of total / n rows (users past the last one: the last range)
        after = rows.get_column("n_read").cum_sum().search_sorted(
            pl.Series([total * i // n for i in range(1, n)], dtype=pl.Int64), side="right")
        cuts = rows.get_column(USER).gather(after.filter(after < rows.height)).unique(maintain_order=True).to_list()
        bounds = [None, *cuts, None]
        return list(zip(bounds, bounds[1:]))

    def of_users(self, low, high) -> Prepared:
        """The same inputs limited to a range of :meth:`user_ranges`: the users from ``low`` (inclusive) to ``high``
        (exclusive; None: unbounded), each input cut its ``cuts`` way."""
        if low is None and high is None:
            return self
        (u0, u1), changes = self._span(self._rows_per_user.get_column(USER), low, high), {}
        if self.cuts[0] == "lists":  # a user's row: its list, exploded as prepare did
            lists = changes["rec_lists"] = self.rec_lists.slice(u0, u1 - u0)
            changes["recs"] = _exploded(lists).cast(dict(self.recs.collect_schema()))
        elif self.cuts[0] == "slice":  # the rows from the first user's, as many as the users' counts
            r0, r1 = int(self._rec_starts[u0]), int(self._rec_starts[u1])
            changes["recs"] = self.recs.slice(r0, r1 - r0)
        else:
            changes["recs"] = self.recs.filter(self._between(low, high))
        if self.rec_counts is not None:
            changes["rec_counts"] = replace(self.rec_counts, rows=self.rec_counts.rows.slice(u0, u1 - u0))
        if self.cuts[1] == "slice":
            t0, t1 = self._span(self._truth_user_column, low, high)
            changes["truth"] = self.truth.slice(t0, t1 - t0)
        else:
            changes["truth"] = self.truth.filter(self._between(low, high))
        if self.truth_lists is not None:
            l0, l1 = self._span(self.truth_lists.get_column(USER), low, high)
            changes["truth_lists"] = self.truth_lists.slice(l0, l1 - l0)
        return replace(self, sources={}, rec_users=None, truth_users=None, **changes)

    def _between(self, low, high) -> pl.Expr:
        """user_id in [low, high) (None: unbounded)."""
        user, where = pl.col(USER), pl.lit(True)
        if low is not None:
            where = where & (user >= pl.lit(low, dtype=self.user_dtype))
        if high is not None:
            where = where & (user < pl.lit(high, dtype=self.user_dtype))
        return where

    @staticmethod
    def _span(users: pl.Series, low, high) -> tuple[int, int]:
        """The rows of a sorted user column from ``low`` (inclusive) to ``high`` (exclusive; None: unbounded)."""
        return (0 if low is None else int(users.search_sorted(low)),
                users.len() if high is None else int(users.search_sorted(high)))

    @cached_property
    def _rec_starts(self) -> pl.Series:
        """Recommendations in memory in user order: the row each counted user's rows start at, then the row count."""
        return pl.concat([pl.Series([0], dtype=pl.Int64),
                          self.rec_counts.rows.get_column("n_recs").cast(pl.Int64).cum_sum()])

    @cached_property
    def _truth_user_column(self) -> pl.Series:
        """The labels' user column in row order (ground truth in memory in user order)."""
        return self.truth.select(USER).collect().get_column(USER)

    def largest_relevance(self) -> float | None:
        """The largest relevance of a label (None: no label): ERR's g_max unless err_max_grade gives it."""
        return self.truth.filter(pl.col(ITEM).is_not_null()).select(pl.col(REL).cast(pl.Float64).max()).collect().item()

    def n_users_either(self) -> int:
        """Distinct users over both inputs."""
        return pl.concat(self._distinct_users()).n_unique()

    def user_counts(self, users: str) -> tuple[int, int]:
        """(users in either input, users the ``users`` rule evaluates before ``unjudged``)."""
        recs, truth = self._distinct_users()
        either = pl.concat([recs, truth]).n_unique()
        both = int(recs.is_in(truth.implode()).sum())
        return either, {"union": either, "labels": truth.len(), "predictions": recs.len(), "intersection": both}[users]


def to_lazyframe(data, what: str, columns: Columns | None = None) -> pl.LazyFrame:
    """Polars (eager/lazy), pandas, PyArrow, DuckDB relation, or a Parquet/CSV path -> LazyFrame.

    A path is read literally (no glob); a CSV file's user and item columns are read as text, so
    ids such as ``007`` and ``7`` stay two ids (the other columns' types are inferred). A fixed-size
    array of items (a 2-D numpy array's rows) is list form, as a list column is. A pandas DataFrame's
    named index (``df.set_index("user")``) is read as columns, as if reset.
    """
    lf, c = _lazy(data, what, columns), columns or Columns()
    schema = lf.collect_schema()
    arrays = [name for name in (c.item, c.relevance) if isinstance(schema.get(name), pl.Array)]
    return lf.with_columns(pl.col(name).arr.to_list() for name in arrays) if arrays else lf


def is_spark_dataframe(obj) -> bool:
    """True for a pyspark (classic or Connect) DataFrame, without importing pyspark."""
    return type(obj).__module__.startswith("pyspark.") and type(obj).__name__ == "DataFrame"


def spark_to_polars(frame) -> pl.DataFrame:
    """A Spark DataFrame collected to Polars through Arrow."""
    return pl.from_arrow(frame.toArrow())


def local(data):
    """A Spark DataFrame an engine does not take as it is (another backend, list form, min_score)
    collected to Polars; anything else as it is."""
    return spark_to_polars(data) if is_spark_dataframe(data) else data


def _lazy(data, what: str, columns: Columns | None) -> pl.LazyFrame:
    if isinstance(data, pl.LazyFrame):
        return data
    if isinstance(data, pl.DataFrame):
        return data.lazy()
    if isinstance(data, (str, Path)):
        return _scan_file(data, what, columns or Columns())
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        _unique_names(list(data.columns), what)
        levels = list(data.index.names)  # a named index holds columns (after set_index or a groupby)
        named = all(n is not None for n in levels) and not set(levels) & set(data.columns)
        try:
            return pl.from_pandas(data, include_index=named).lazy()
        except (TypeError, ValueError) as error:  # pyarrow.ArrowInvalid is a ValueError
            _raise_mixed_object_column(data, what, error)
    if module == "pyarrow":
        if hasattr(data, "read_all"):  # a RecordBatchReader: read once, into a table
            data = data.read_all()
        elif hasattr(data, "to_table") and not hasattr(data, "column_names"):  # a pyarrow.dataset.Dataset
            data = data.to_table()
        if not hasattr(data, "column_names"):  # an Array, a ChunkedArray, a scalar: not a table
            raise UnsupportedInputError(f"{what}: a pyarrow {type(data).__name__} is not a table.",
                                        hint="Pass a pyarrow.Table (pa.table({...})) or a RecordBatch.")
        _unique_names(list(data.column_names), what)
        return pl.from_arrow(data).lazy()
    if module in ("duckdb", "_duckdb"):
        return data.pl().lazy()
    raise UnsupportedInputError(
        f"{what}: unsupported input type {type(data).__name__}.",
        hint="Use a Polars DataFrame/LazyFrame, a pandas DataFrame, a PyArrow Table, a DuckDB "
        "relation, or a path to a Parquet or CSV file.",
    )


def _unique_names(names: list, what: str) -> None:
    repeated = sorted({str(n) for n in names if names.count(n) > 1})
    if repeated:
        raise UnsupportedInputError(
            f"{what}: column name(s) {repeated} appear more than once.",
            hint="Rename or drop the repeated columns so that every column name is unique.",
        )


def _raise_mixed_object_column(df, what: str, error: Exception):
    """A pandas object column holding several Python types (``[1, "1"]``): name it, show the rows."""
    for name in df.columns:
        column = df[name].reset_index(drop=True)
        if column.dtype == object:
            kinds = column.dropna().map(lambda v: type(v).__name__)
            if kinds.nunique() > 1:
                first = kinds.drop_duplicates().index[:_SHOW]
                rows = pl.DataFrame({str(name): [repr(v) for v in column[first]],
                                     "python type": kinds[first].tolist()})
                raise DtypeMismatchError(
                    f"{what}: pandas column {name!r} mixes Python types ({', '.join(sorted(set(kinds)))}), so "
                    "equal-looking values such as 1 and '1' would be different ids.",
                    rows=rows, hint=f"Convert the column to one type first, e.g. df[{name!r}].astype(str).",
                ) from error
    raise UnsupportedInputError(
        f"{what}: the pandas DataFrame cannot be converted: {error}",
        hint="Convert it with polars.from_pandas() yourself to see which column fails.") from error


# -- file inputs -----------------------------------------------------------------------------------

_PARQUET, _CSV, _HIDDEN = (".parquet", ".pq"), (".csv", ".tsv"), (".", "_")


def _scan_file(data, what: str, c: Columns) -> pl.LazyFrame:
    """A Parquet file or directory of Parquet files, or a CSV/TSV file, scanned lazily and literally."""
    path = Path(data)
    suffix = path.suffix.lower()
    if not path.exists():
        raise InputFileError(f"{what}: {str(data)!r} does not exist.",
                             hint="Check the path (a relative path starts at the current directory).")
    if path.is_dir():  # its Parquet files, hidden ones (.crc, _SUCCESS) skipped as Spark and Hive write them
        files = [p for p in path.rglob("*") if p.is_file() and not p.name.startswith(_HIDDEN)]
        if not any(p.suffix.lower() in _PARQUET for p in files):
            raise InputFileError(f"{what}: the directory {str(data)!r} holds no Parquet files.",
                                 hint="Point to a .parquet file, or to a directory of .parquet files.")
        with reading(data, what):
            widened = _widened_schema([p for p in files if p.suffix.lower() in _PARQUET])
            lf = pl.scan_parquet(path, glob=False, hidden_file_prefix=_HIDDEN, **({} if widened is None else {
                "schema": widened, "cast_options": pl.ScanCastOptions(integer_cast="upcast", float_cast="upcast")}))
            lf.collect_schema()
        return lf
    if suffix not in _PARQUET + _CSV:
        raise UnsupportedInputError(
            f"{what}: cannot tell the format of {str(data)!r}.",
            hint="Pass a .parquet or .csv path, or a DataFrame.",
        )
    with reading(data, what):
        if suffix in _PARQUET:
            lf = pl.scan_parquet(path, glob=False)
            lf.collect_schema()
            return lf
        # ids as text (types are aligned later); scores and relevances as numbers whatever the first
        # rows look like (Polars infers a type from the first 100 rows: 1, 1, ... then 0.5 failed)
        lf = pl.scan_csv(path, separator="\t" if suffix == ".tsv" else ",", glob=False,
                         schema_overrides={c.user: pl.String, c.item: pl.String, c.score: pl.Float64,
                                           c.relevance: pl.Float64})
        with open(path, newline="", encoding="utf-8", errors="replace") as handle:  # Polars renames a repeat
            _unique_names(next(csv.reader(handle, delimiter="\t" if suffix == ".tsv" else ","), []), what)
        if lf.head(1).collect().height == 0:
            raise InputFileError(f"{what}: the CSV file {str(data)!r} has a header but no rows.",
                                 hint="Write at least one row, or pass an empty DataFrame with typed columns.")
    return lf


def _widened_schema(files: list[Path]) -> pl.Schema | None:
    """One schema for Parquet files whose columns differ only in integer or float width (Int32 in one
    file, Int64 in another: Polars' scan takes the first file's type and fails on the next), the widest
    of each; None when the files agree, or differ otherwise (the scan then says how)."""
    schemas = [_parquet_schema(f) for f in files]
    if len({tuple(s.items()) for s in schemas}) <= 1 or len({tuple(s) for s in schemas}) > 1:
        return None
    for name in schemas[0]:  # widths only: every file's type of a column is of one kind
        dtypes = {s[name] for s in schemas}
        if not (len(dtypes) == 1 or all(d.is_signed_integer() for d in dtypes)
                or all(d.is_unsigned_integer() for d in dtypes) or all(d.is_float() for d in dtypes)):
            return None
    # the widest of each column: Polars' own supertype rule
    return pl.concat([pl.DataFrame(schema=s) for s in schemas], how="vertical_relaxed").schema


def _parquet_schema(path: Path) -> pl.Schema:
    with open(path, "rb") as file:  # an open file: Polars expands [ ] * ? in a path given as text
        return pl.read_parquet_schema(file)


@contextmanager
def reading(data, what: str):
    """Turn a read error of a file input (at scan or at collect time) into an InputFileError naming it;
    likewise a caller's LazyFrame whose own scan cannot read its file."""
    if isinstance(data, pl.LazyFrame):
        try:
            yield
        except OSError as error:
            raise InputFileError(f"{what}: the LazyFrame's scan cannot read its file ({error}).",
                                 hint="Check the path given to pl.scan_parquet / pl.scan_csv.") from error
        return
    if not isinstance(data, (str, Path)):
        yield
        return
    try:
        yield
    except RankwiseError:
        raise
    except (pl.exceptions.PolarsError, OSError) as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        csv = Path(data).suffix.lower() in _CSV
        if isinstance(error, OSError):  # removed or unreadable since the path was checked
            problem, hint = f"cannot be read ({message})", "Check that the file exists and is readable."
        elif isinstance(error, pl.exceptions.NoDataError) or message == "empty CSV":
            problem, hint = "is empty", "Write a header row and at least one row."
        elif "more fields" in message:
            problem = "has a row with more fields than the header (a ragged CSV)"
            hint = "Every row needs as many fields as the header: check the separator and the quoting."
        elif csv:
            problem, hint = f"cannot be parsed ({message})", "Check the file's separator, quoting and column types."
        elif Path(data).is_dir():
            problem = f"is a directory whose Parquet files cannot be read as one table ({message})"
            hint = "Every file needs the same columns; move other files out, or pass one file."
        else:
            problem = f"is not a readable Parquet file, truncated or corrupt ({message})"
            hint = "Rewrite the file (an interrupted write truncates it), or point to another one."
        raise InputFileError(f"{what}: {str(data)!r} {problem}.", hint=hint) from error


def input_key(conv: Convention) -> tuple:
    """Conventions with the same key prepare the same canonical tables from the same inputs (the
    input-rule knobs, _knobs.INPUT_KNOBS)."""
    return tuple(getattr(conv, knob) for knob in INPUT_KNOBS)


@dataclass(frozen=True)
class Truth:
    """The ground truth, validated once (several runs are evaluated against it)."""

    frame: pl.LazyFrame
    users: pl.Series | None
    raw_schema: pl.Schema
    data: object  # what the caller passed (a path is also read by DuckDB directly)
    lists: pl.DataFrame | None = None  # the checked lists (user_id, item_id[, relevance]) when it came in list form
    negatives: pl.DataFrame | None = None  # the rows with a relevance below 0 (None: none): see refuse_negative


def prepare_truth(ground_truth, columns: Columns) -> Truth:
    """Validate the ground truth and normalise it to the canonical long table (user, item, relevance)."""
    with reading(ground_truth, "ground truth"):
        raw = to_lazyframe(ground_truth, "ground truth", columns)
        truth, users, lists, negatives = _ground_truth(raw, columns)
    return Truth(truth, users, raw.collect_schema(), ground_truth, lists, negatives)


def prepare(recommendations, ground_truth, columns: Columns, convention: Convention, scores: bool = False) -> Prepared:
    """Validate both inputs and normalise them to the canonical long tables. ``scores``: the canonical rows of the
    general path keep the numeric score column of the input row the rules keep (score_entropy reads it; see
    rankwise.engines.beyond.with_scores, which checks it).

    Every read of a file input happens here (the checks read each file once in full), so a file
    that fails to parse fails here, as an InputFileError naming it. ``ground_truth`` may be a
    :class:`Truth` already validated.
    """
    with reading(recommendations, "recommendations"):
        recs_raw = to_lazyframe(recommendations, "recommendations", columns)
        recs, rec_users, rec_lists, rec_counts = _recommendations(recs_raw, columns, convention, scores)
    gt = ground_truth if isinstance(ground_truth, Truth) else prepare_truth(ground_truth, columns)
    refuse_negative(gt, convention, columns)
    csv = [what for what, data in (("recommendations", recommendations), ("ground truth", gt.data))
           if isinstance(data, (str, Path)) and Path(data).suffix.lower() in _CSV]
    recs, truth = _align_dtypes(recs, gt.frame, columns, csv)
    sources = {}  # long Parquet files only: a list-form file has no rank or scalar item column to SELECT
    if rec_users is not None and rec_lists is None and _parquet_file(recommendations):
        sources["recommendations"] = _file_source(
            recommendations, recs.collect_schema(), {USER: columns.user, RANK: columns.rank, ITEM: columns.item},
            has=recs_raw.collect_schema())
    if gt.users is not None and gt.lists is None and _parquet_file(gt.data):
        sources["ground_truth"] = _file_source(
            gt.data, truth.collect_schema(), {USER: columns.user, ITEM: columns.item, REL: columns.relevance},
            has=gt.raw_schema)
    sources = {k: v for k, v in sources.items() if v is not None}
    rec_lists, truth_lists = (_typed_lists(lists, recs.collect_schema()) for lists in (rec_lists, gt.lists))
    user_dtype = recs.collect_schema()[USER]
    if rec_counts is not None:
        rec_counts = replace(rec_counts, rows=rec_counts.rows.with_columns(pl.col(USER).cast(user_dtype)))
    cuts = ("lists" if rec_lists is not None else _cut(recommendations, rec_counts is not None),
            "slice" if gt.lists is not None else _cut(gt.data, gt.users is not None))
    return Prepared(recs, truth, user_dtype, sources, rec_users, gt.users, rec_lists, truth_lists, rec_counts, cuts)


def _cut(data, checked: bool) -> str | None:
    """How a range of users' rows of a long input the layout check passed (``checked``: its rows are read as they
    are) is read again (Prepared.cuts): "filter" a Parquet file, "slice" a frame in memory, else None."""
    if not checked:
        return None
    if _parquet_file(data):
        return "filter"
    return None if isinstance(data, (str, Path, pl.LazyFrame)) else "slice"


def _typed_lists(lists: pl.DataFrame | None, schema: pl.Schema) -> pl.DataFrame | None:
    """(user_id, item_id: list) in the canonical types (_align_dtypes may have widened them)."""
    if lists is None:
        return None
    return lists.select(pl.col(USER).cast(schema[USER]), pl.col(ITEM).cast(pl.List(schema[ITEM])))


# -- file inputs an engine may scan itself ----------------------------------------------------------


@dataclass(frozen=True)
class FileSource:
    """A validated long-form Parquet file as an engine that ``reads_files`` scans it: the canonical
    column ``name`` read from the file's column ``source`` (None: not in the file, the constant 1.0 the
    Polars scan uses) as ``dtype``. The file is read literally (no Hive partition columns)."""

    path: str
    columns: tuple  # ((name, source | None, dtype), ...) in the canonical order


def _parquet_file(data) -> bool:
    return isinstance(data, (str, Path)) and Path(data).suffix.lower() in (".parquet", ".pq") and Path(data).is_file()


def _file_source(path, schema, names: dict, has=None) -> FileSource | None:
    """The twin of the canonical lazy scan of a Parquet file: same file, same renames, same target
    types. None when an engine that binds names without regard to case (DuckDB) could take another
    column (``Relevance`` beside ``relevance``), or a name is empty: the engine then reads the frame."""
    folded = [name.casefold() for name in has or ()]
    if any(folded.count(source.casefold()) > 1 for source in names.values() if source):
        return None
    if any(names[out] == "" for out in schema):
        return None
    return FileSource(str(Path(path)), tuple((out, names[out] if has is None or names[out] in has else None, dtype)
                                             for out, dtype in schema.items()))




# -- recommendations -------------------------------------------------------------------------------


def _recommendations(lf: pl.LazyFrame, c: Columns, conv: Convention, scores: bool = False
                     ) -> tuple[pl.LazyFrame, pl.Series | None, pl.DataFrame | None, RecCounts | None]:
    """The canonical recommendations; their distinct users when the checks found them; the checked
    lists when they came in list form; each user's row count when the layout check counted them. ``scores``:
    the general path's rows keep a numeric score column (as SCORE, unchecked)."""
    schema = lf.collect_schema()
    require(schema, [c.user, c.item], "recommendations", c, optional=("rank", "score"))
    if (not isinstance(schema[c.item], pl.List) and c.rank in schema and schema[c.rank].is_integer()
            and conv.min_score is None):
        layout = grouped_runs(lf, c.user, c.item, c.rank)
        if layout is not None:
            # every rule holds and ranks are already 1..n: a plain lazy scan, nothing renumbered
            canonical = lf.select(pl.col(c.user).alias(USER), pl.col(c.rank).cast(pl.Int64).alias(RANK),
                                  pl.col(c.item).alias(ITEM))
            users = layout.runs["user"]
            narrow = (layout.item_range is not None and users.dtype.is_integer() and users.len() > 0
                      and all(0 <= v < NARROW_IDS for v in (*layout.item_range, users.min(), users.max())))
            counts = RecCounts(layout.runs.rename({"user": USER, "n_rows": "n_recs"}), narrow)
            return canonical, users.alias(c.user), None, counts
    if isinstance(schema[c.item], pl.List):
        # a rank or score list parallel to the items orders them (and feeds min_score) as in the long form
        order = {RANK: c.rank, SCORE: c.score}
        order = {name: col for name, col in order.items() if col is not None and isinstance(schema.get(col), pl.List)}
        lists, repeats, users = _checked_lists(lf, c, "recommendations", parallel=order)
        if order:
            return _ordered_lists(lists, c, conv), users, None, None
        if not repeats and conv.min_score is None:  # positions 1..n, no item repeated: already canonical
            return _exploded(lists), users, lists, None
        if conv.min_score is not None:
            raise ParameterError(
                f"The convention sets min_score={conv.min_score}, but the list-form recommendations have no "
                f"{c.score!r} list parallel to {c.item!r} to compare it with.",
                hint="Pass each user's scores as a list column (score_col=...), or use a convention with "
                "min_score=None.")
        df = _by_user(_exploded(lists).collect(), [RANK], [False])
    elif c.rank in schema:
        # min_score drops the items scored below it whatever ranks them: with a rank column too
        scored = [SCORE] if conv.min_score is not None and c.score in schema else []
        if scored:
            _numeric_score(lf, schema, c, "to compare it with min_score")
        carried = bool(scored) or (scores and c.score in schema and schema[c.score].is_numeric())
        df = lf.select(pl.col(c.user).alias(USER), pl.col(c.item).alias(ITEM), pl.col(c.rank).alias(RANK),
                       *([pl.col(c.score).alias(SCORE)] if carried else [])).collect()
        _check_nulls(df, [USER, ITEM, RANK, *scored], "recommendations", c)
        df = _check_ranks(df, c)  # sorted by (user, rank)
        if scored:
            df = _by_user(_drop_below(_finite_scores(df, c), conv.min_score), [RANK], [False])
    elif c.score in schema:
        _numeric_score(lf, schema, c, "to rank by it")
        df = lf.select(pl.col(c.user).alias(USER), pl.col(c.item).alias(ITEM), pl.col(c.score).alias(SCORE)).collect()
        _check_nulls(df, [USER, ITEM, SCORE], "recommendations", c)
        df = _rank_by_score(_finite_scores(df, c), conv.ties, conv.min_score, keep_score=scores)
    else:
        raise no_order_column(c, list(schema))
    if conv.min_score is not None and c.score not in schema:
        raise ParameterError(
            f"The convention sets min_score={conv.min_score}, but the recommendations have no "
            f"{c.score!r} column to compare it with.",
            hint="Pass scores (score_col=...), or use a convention with min_score=None.",
        )
    df = _handle_duplicates(df, conv.duplicates, c)  # every path's rows are sorted by (user, rank) here
    return _positions(df, scores).lazy(), None, None, None


def _ordered_lists(lists: pl.DataFrame, c: Columns, conv: Convention) -> pl.LazyFrame:
    """List form with a parallel rank or score list: the non-empty lists exploded to the long form
    and ranked by its rules; a user with an empty list keeps one null-item row."""
    names = {USER: c.user, ITEM: c.item, RANK: c.rank, SCORE: c.score}
    filled = lists.filter(pl.col(ITEM).list.len() > 0)
    long = filled.explode([n for n in lists.columns if n != USER]).rename({n: names[n] for n in lists.columns})
    ranked, *_ = _recommendations(long.lazy(), c, conv)
    empty = lists.filter(pl.col(ITEM).list.len() == 0).select(
        USER, pl.lit(None, dtype=pl.Int64).alias(RANK), pl.col(ITEM).list.first())
    return pl.concat([ranked.select(USER, RANK, ITEM), empty.lazy()])


def _checked_lists(lf: pl.LazyFrame, c: Columns, what: str, with_relevance: bool = False,
                   parallel: dict[str, str] | None = None) -> tuple[pl.DataFrame, bool, pl.Series]:
    """Check list-form input (one row per user, a list of items[, a parallel list of relevances, or
    the ``parallel`` {canonical name: column} rank / score lists]): the lists (user_id, item_id[,
    relevance | rank, score]), whether some list repeats an item, and the users.

    One select computes every check's flag (Polars runs its expressions side by side); the offending
    rows are looked for only when a flag is set, in the order the checks are stated below."""
    schema = lf.collect_schema()
    cols = [pl.col(c.user).alias(USER), pl.col(c.item).alias(ITEM)]
    parallel = dict(parallel or {})
    if with_relevance and c.relevance in schema:
        parallel[REL] = c.relevance
    cols += [pl.col(col).alias(name) for name, col in parallel.items()]
    df = lf.select(cols).collect()
    items = pl.col(ITEM)
    if REL in df.columns and not isinstance(df.schema[REL], pl.List):
        raise InvalidRelevanceError(
            f"{what}: with list-form items, {c.relevance!r} must be a list parallel to {c.item!r}, got "
            f"{df.schema[REL]}.", rows=_show(df.head(_SHOW), c),
            hint="Give one relevance per item in a list column, or leave the relevance column out (every label 1).")
    # a null parallel list differs too (ne_missing: null vs a length is True, not null)
    lengths = {name: pl.col(name).list.len().ne_missing(items.list.len()) for name in parallel}
    # (streaming, a morsel at a time: at 1M lists of 100 the whole-frame temporaries of the explode and the
    # per-list n_unique peaked at 2.19 GB RSS beside the 0.71 GB lists, streaming 1.03 GB; 1.11 -> 0.51 s)
    flags = df.lazy().select(
        null_user=pl.col(USER).null_count() > 0,
        null_list=items.null_count() > 0,
        repeated_user=pl.col(USER).n_unique() < pl.len(),
        # a null inside a list, [None] too: only an empty list means "no items"
        hole=items.list.explode(empty_as_null=False, keep_nulls=False).null_count() > 0,
        rel_length=pl.any_horizontal(False, *lengths.values()).any(),
        repeats=(items.list.n_unique() < items.list.len()).any(),
    ).collect(engine="streaming").row(0, named=True)
    if flags["null_user"] or flags["null_list"]:
        _check_nulls(df, [USER, ITEM], what, c)
    if flags["repeated_user"]:
        repeated = df.filter(pl.col(USER).is_duplicated())
        raise DuplicateUserError(
            f"{what}: in list form each user has one row, but some users have several.",
            rows=_show(repeated.sort(USER), c),
            hint="Concatenate each user's lists, or pass the long form (one row per item).",
        )
    if flags["hole"]:
        holes = df.filter(items.list.drop_nulls().list.len() < items.list.len())
        raise NullValueError(
            f"{what}: {holes.height} lists in {c.item!r} hold a null item.", rows=_show(holes, c),
            hint=f"Drop nulls from the lists: pl.col({c.item!r}).list.drop_nulls() (an empty list is a user "
            "with no items).",
        )
    for name, differs in lengths.items() if flags["rel_length"] else ():
        bad = df.filter(differs)
        if bad.height:
            error, role = {REL: (InvalidRelevanceError, "relevance"), RANK: (InvalidRankError, "rank"),
                           SCORE: (InvalidScoreError, "score")}[name]
            raise error(
                f"{what}: the {parallel[name]!r} list and the {c.item!r} list differ in length (or the {role} "
                "list is null).", rows=_show(bad, c), hint=f"Give one {role} per item, in the same order.")
    return df, bool(flags["repeats"]), df.get_column(USER).alias(c.user)


def _exploded(lists: pl.DataFrame, ranks: bool = True) -> pl.LazyFrame:
    """(user, items[, relevances]) lists -> (user, position, item[, relevance]) rows, positions 1..n
    (left out with ``ranks=False``); an empty list keeps one row with nulls (the user is present with
    no items)."""
    rel = [REL] if REL in lists.columns else []
    rank = [RANK] if ranks else []
    lf = lists.lazy()
    if ranks:
        lf = lf.with_columns(pl.int_ranges(1, pl.col(ITEM).list.len() + 1, dtype=pl.Int64).alias(RANK))
    return lf.explode([ITEM, *rank, *rel], empty_as_null=True).select(USER, *rank, ITEM, *rel)


def _check_ranks(df: pl.DataFrame, c: Columns) -> pl.DataFrame:
    """``df`` sorted by (user, rank), when every rank is a whole number >= 1 and no user has one twice."""
    if not df.schema[RANK].is_integer():
        # the rows to show: those that are not whole numbers (e.g. 'x' in a CSV), else the first few
        whole = pl.col(RANK).cast(pl.Float64, strict=False)
        bad = df.filter(whole.is_null() | ~whole.is_finite() | (whole != whole.floor()))
        empty = " No row has a rank: an empty pandas column is float64 unless typed (.astype({...}))." \
            if not df.height else ""
        raise InvalidRankError(
            f"recommendations: {c.rank!r} must be integer, got {df.schema[RANK]}.",
            rows=_show((bad if bad.height else df).head(_SHOW), c),
            hint="Cast the rank column to an integer type, or pass scores as score_col." + empty,
        )
    low = df.filter(pl.col(RANK) < 1)
    if low.height:
        raise InvalidRankError(
            f"recommendations: {c.rank!r} must be >= 1 ({low.height} rows are not).",
            rows=_show(low, c), hint="Ranks are 1-based positions: the top item has rank 1.",
        )
    df = _by_user(df, [RANK], [False])
    repeated = (pl.col(USER) == pl.col(USER).shift(1)) & (pl.col(RANK) == pl.col(RANK).shift(1))
    if df.select(repeated.any()).item():  # sorted: a repeated (user, rank) is the row before
        dup = df.filter(pl.struct(USER, RANK).is_duplicated())
        raise DuplicateRankError(
            f"recommendations: {dup.height} rows share a {c.rank!r} with another item of the same user.",
            rows=_show(dup.sort(USER, RANK), c),
            hint="Give each item of a list its own rank, or pass scores (score_col) and choose a ties rule.",
        )
    return df


def _numeric_score(lf: pl.LazyFrame, schema, c: Columns, purpose: str) -> None:
    if not schema[c.score].is_numeric():
        raise InvalidScoreError(
            f"recommendations: {c.score!r} must be numeric {purpose}, got {schema[c.score]} "
            "(text sorts '9' above '10'; booleans and dates are not scores).",
            rows=_show(lf.select(pl.col(c.user).alias(USER), pl.col(c.item).alias(ITEM), c.score).head(_SHOW)
                       .collect(), c),
            hint=f"Cast the score to a number, e.g. pl.col({c.score!r}).cast(pl.Float64), or pass ranks "
            "(rank_col=).",
        )


def _finite_scores(df: pl.DataFrame, c: Columns) -> pl.DataFrame:
    """A NaN or infinite score orders nothing: an InvalidScoreError, the rule of sql/checks.sql (so the
    same error on every engine and in the rendered scripts)."""
    if df.schema[SCORE].is_float():
        bad = df.filter(~pl.col(SCORE).is_finite())
        if bad.height:
            raise InvalidScoreError(f"recommendations: {bad.height} values of {c.score!r} are NaN or infinite.",
                                    rows=_show(bad.head(_SHOW), c),
                                    hint=f"Drop or fill those values of {c.score!r}.")
    return df


def _drop_below(df: pl.DataFrame, min_score: float) -> pl.DataFrame:
    """The items scored below ``min_score`` are not recommended; a user left with nothing keeps a
    null-item row (present, empty list)."""
    kept = df.filter(pl.col(SCORE) >= min_score)
    emptied = df.select(USER).unique().join(kept.select(USER), on=USER, how="anti")
    return pl.concat([kept, emptied.with_columns(pl.lit(None, dtype=df.schema[ITEM]).alias(ITEM))], how="diagonal")


def _rank_by_score(df: pl.DataFrame, ties: str, min_score: float | None, keep_score: bool = False) -> pl.DataFrame:
    """Rank = position by score descending; equal scores ordered by the ``ties`` rule; with
    ``min_score``, :func:`_drop_below` first."""
    df = df.with_row_index("_order")
    if min_score is not None:
        df = _drop_below(df, min_score)
    tie_key = {"item_asc": (ITEM, False), "item_desc": (ITEM, True), "input_order": ("_order", False)}[ties]
    df = _by_user(df, [SCORE, tie_key[0]], descending=[True, tie_key[1]])
    ranks = pl.when(pl.col(ITEM).is_not_null()).then(_position_in_run() + 1)
    return df.with_columns(ranks.alias(RANK)).select(USER, RANK, ITEM, *([SCORE] if keep_score else []))


def _by_user(df: pl.DataFrame, keys: list[str], descending: list[bool]) -> pl.DataFrame:
    """``df`` sorted by user, then by ``keys`` (nulls last; rows equal in every key keep their order). Polars'
    sort by several columns of shuffled rows is 5-10x slower than by one (1M users x 20 rows: 14 s): integer keys
    are packed into one Int64 (:func:`_packed`, 1.5 s), others sorted one column at a time, the last key first,
    each sort stable (2.6 s). Users that are not integers are sorted by their number in the sorted list of
    distinct users (the same order; a text sort of every row is 14 s, the numbering 2.2 s: :func:`_sorted_numbers`)."""
    user = USER
    if not df.schema[USER].is_integer():
        df, user = df.with_columns(_sorted_numbers(df.get_column(USER)).alias("_user")), "_user"
    packed = _packed(df, [user, *keys], [False, *descending])
    if packed is not None:
        df = df.sort(packed, maintain_order=True)
    else:
        for key, desc in reversed(list(zip([user, *keys], [False, *descending], strict=True))):
            df = df.sort(key, descending=desc, nulls_last=True, maintain_order=True)
    return df.drop("_user") if user == "_user" else df


def _packed(df: pl.DataFrame, keys: list[str], descending: list[bool]) -> pl.Expr | None:
    """One Int64 that orders the rows as the integer ``keys`` do (nulls last), when their ranges multiply to
    less than 2^62: each key becomes its offset from its smallest value (from its largest when descending),
    a null one past the largest offset. None when a key is not an integer or the ranges do not fit."""
    if not df.height or not all(df.schema[k].is_integer() for k in keys):
        return None
    bounds = df.select(*(pl.col(k).min().alias(f"lo{i}") for i, k in enumerate(keys)),
                       *(pl.col(k).max().alias(f"hi{i}") for i, k in enumerate(keys))).row(0)
    los, his = bounds[:len(keys)], bounds[len(keys):]
    if any(v is None or abs(v) >= 2**61 for v in (*los, *his)):
        return None
    packed, size = pl.lit(0, pl.Int64), 1
    for key, desc, lo, hi in zip(keys, descending, los, his, strict=True):
        span = hi - lo + 2  # the values' offsets, and one for null
        size *= span
        if size >= 2**62:
            return None
        value = pl.col(key).cast(pl.Int64)
        offset = (pl.lit(hi, pl.Int64) - value) if desc else (value - pl.lit(lo, pl.Int64))
        packed = packed * span + offset.fill_null(span - 1)
    return packed


def _sorted_numbers(values: pl.Series) -> pl.Series:
    """Each value's number (0, 1, ...) in the sorted list of the distinct values. The distinct values are found
    on a 64-bit hash and the numbers joined on it (2.2 s at 20M text values against 5.5 s for a unique of the
    text and a join on it); the numbers are checked against the values themselves, and two values that share a
    hash take the exact way."""
    hashes = values.hash(seed=0)
    firsts = hashes.arg_unique()
    distinct = values.gather(firsts)
    order = distinct.arg_sort()
    numbered = pl.DataFrame({"h": hashes.gather(firsts).gather(order)}).with_row_index("n")
    numbers = pl.DataFrame({"h": hashes}).join(numbered, on="h", how="left", maintain_order="left").get_column("n")
    if (distinct.gather(order).gather(numbers) == values).all():
        return numbers
    exact = values.unique().sort().to_frame("v").with_row_index("n")
    return values.to_frame("v").join(exact, on="v", how="left", maintain_order="left").get_column("n")


def _position_in_run() -> pl.Expr:
    """Each row's 0-based position among its user's rows, the frame sorted by user (a run per user): the row's
    index less the index of its run's first row (Polars' ``over(user)`` groups the rows again: 3x slower)."""
    row = pl.int_range(pl.len(), dtype=pl.Int64)
    return row - pl.when(pl.col(USER) != pl.col(USER).shift(1)).then(row).forward_fill().fill_null(0)


def _handle_duplicates(df: pl.DataFrame, rule: str, c: Columns) -> pl.DataFrame:
    present = df.filter(pl.col(ITEM).is_not_null())
    # pair_key packs integer ids (hashes others): fewer distinct keys than rows is checked on the pairs themselves
    if present.select(pair_key(present.schema, USER, ITEM).n_unique()).item() == present.height:
        return df
    dup_mask = pl.struct(USER, ITEM).is_duplicated()
    if not present.select(dup_mask.any()).item():  # two pairs shared a hash
        return df
    if rule == "error":
        dup = present.filter(dup_mask).sort(USER, RANK)
        raise DuplicateItemError(
            f"recommendations: {dup.height} rows repeat an item already in the same user's list.",
            rows=_show(dup, c),
            hint="De-duplicate the lists, or choose Convention(duplicates='first_shift') to keep "
            "each item's first occurrence.",
        )
    # first_shift: keep the best-ranked occurrence (the rows are in rank order); _positions() then closes the gaps
    return df.filter(pl.col(ITEM).is_null() | pl.struct(USER, ITEM).is_first_distinct())


def _positions(df: pl.DataFrame, scores: bool = False) -> pl.DataFrame:
    """Ranks become positions 1..n in rank order (gaps close); null-item rows keep a null rank. ``scores``: the
    score column stays, where there is one."""
    df = df.select(USER, RANK, ITEM, *([SCORE] if scores and SCORE in df.columns else []))  # sorted by (user, rank)
    pos = pl.when(pl.col(ITEM).is_not_null()).then(_position_in_run() + 1)
    return df.with_columns(pos.alias(RANK))


# -- ground truth ----------------------------------------------------------------------------------


def _ground_truth(lf: pl.LazyFrame, c: Columns) -> tuple:
    """The canonical ground truth, its distinct users when the checks found them, the checked
    lists (user_id, item_id[, relevance]) when it came in list form, and its rows with a negative
    relevance (None: none; the fast path's check allows none)."""
    schema = lf.collect_schema()
    require(schema, [c.user, c.item], "ground truth", c, optional=("relevance",))
    has_rel = c.relevance in schema
    if not isinstance(schema[c.item], pl.List) and (
            not has_rel or schema[c.relevance].is_numeric() or schema[c.relevance] == pl.Boolean):
        layout = grouped_runs(lf, c.user, c.item, relevance=c.relevance if has_rel else None)
        if layout is not None:
            users = layout.runs["user"].alias(c.user)
            relevance = pl.col(c.relevance).cast(pl.Float64) if has_rel else pl.lit(1.0, dtype=pl.Float64)
            canonical = lf.select(pl.col(c.user).alias(USER), pl.col(c.item).alias(ITEM), relevance.alias(REL))
            return canonical, users, None, None
    lists = None
    if isinstance(schema[c.item], pl.List):
        lists, repeats, users = _checked_lists(lf, c, "ground truth", with_relevance=True)
        df = _exploded(lists, ranks=False).collect()
    else:
        repeats, users = True, None  # not known without the check below
        cols = [pl.col(c.user).alias(USER), pl.col(c.item).alias(ITEM)]
        if c.relevance in schema:
            cols.append(pl.col(c.relevance).alias(REL))
        df = lf.select(cols).collect()
        _check_nulls(df, [USER, ITEM], "ground truth", c)
    if REL not in df.columns:
        df = df.with_columns(pl.when(pl.col(ITEM).is_not_null()).then(1.0).alias(REL))
    if not (df.schema[REL].is_numeric() or df.schema[REL] == pl.Boolean):
        raise InvalidRelevanceError(
            f"ground truth: {c.relevance!r} must be numeric, got {df.schema[REL]}.",
            hint="Relevance is a number >= 0 (1 = relevant, 0 = judged not relevant).",
        )
    df = df.with_columns(pl.col(REL).cast(pl.Float64))
    present = pl.col(ITEM).is_not_null()
    bad = df.filter(present & (pl.col(REL).is_null() | pl.col(REL).is_nan() | pl.col(REL).is_infinite()))
    if bad.height:
        raise InvalidRelevanceError(
            f"ground truth: {bad.height} relevance values are null, NaN or infinite.",
            rows=_show(bad, c), hint="Relevance must be a finite number (>= 0; a negative one is trec_eval's "
                                     "pooled-but-unjudged label under Convention(negative_relevance='unjudged')).",
        )
    dup = df.filter(present & pl.struct(USER, ITEM).is_duplicated()) if repeats else df.clear()
    if dup.height:
        raise DuplicateItemError(
            f"ground truth: {dup.height} rows repeat a (user, item) label.",
            rows=_show(dup.sort(USER, ITEM), c),
            hint="Keep one label per (user, item), e.g. the maximum relevance.",
        )
    return df.select(USER, ITEM, REL).lazy(), users, lists, _negative_rows(df, c)


def _negative_rows(df: pl.DataFrame, c: Columns) -> pl.DataFrame | None:
    """The ground truth's rows with a relevance below 0 (None: none), as an error shows them; whether they are
    refused is the convention's rule (negative_relevance), applied by :func:`prepare`."""
    negative = df.filter(pl.col(ITEM).is_not_null() & (pl.col(REL) < 0))
    return None if negative.height == 0 else negative


def refuse_negative(truth: Truth, conv: Convention, c: Columns) -> None:
    """negative_relevance='error': a relevance below 0 is an InvalidRelevanceError (every row counted, a few shown)."""
    if conv.negative_relevance == "error" and truth.negatives is not None:
        bad = truth.negatives
        raise InvalidRelevanceError(
            f"ground truth: {bad.height} relevance values are negative.", rows=_show(bad, c),
            hint="Relevance must be a number >= 0 (0 = judged not relevant). A negative level is trec_eval's "
                 "pooled-but-unjudged label (qrels -1): Convention(negative_relevance='unjudged') reads it so "
                 "(the trec_eval preset does).")


# -- shared checks ---------------------------------------------------------------------------------


_DEFAULT_NAMES = {f.name: f.default for f in fields(Columns)}


def require(schema, names: list[str], what: str, c: Columns | None = None, optional: tuple[str, ...] = ()) -> None:
    """``names`` must be columns; so must each ``optional`` role (rank, score, relevance) that the
    caller named other than its default (a misspelt relevance_col scored every label 1)."""
    missing = [n for n in names if n not in schema]
    renamed = [f"{role}_col={getattr(c, role)!r}" for role in optional
               if getattr(c, role) not in (None, _DEFAULT_NAMES[role]) and getattr(c, role) not in schema]
    if missing or renamed:
        raise MissingColumnError(
            f"{what}: missing column(s) {missing + renamed}; found {list(schema)}.",
            hint="Pass the names with user_col=, item_col=, rank_col=, score_col=, relevance_col= "
                 "(a rank, score or relevance column you name must exist; leave the option out if there is none).",
        )


def no_order_column(c: Columns, found: list, lists: bool = True) -> MissingColumnError:
    """The error for recommendations with neither the rank nor the score column (every engine's)."""
    wanted = " or a ".join(repr(name) for name in (c.rank, c.score) if name is not None)  # rank_col=None: scores
    return MissingColumnError(
        f"recommendations: need a {wanted} column{' (or list-form items)' if lists else ''}; found {found}.",
        hint="Name the columns with rank_col= / score_col=" + (", or pass items as a list column." if lists else "."),
    )


def _check_nulls(df: pl.DataFrame, names: list[str], what: str, c: Columns) -> None:
    for name in names:
        bad = df.filter(pl.col(name).is_null())
        if bad.height:
            raise NullValueError(
                f"{what}: column {_public(name, c)!r} has {bad.height} null values.",
                rows=_show(bad, c), hint="Drop or fill the nulls before evaluating.",
            )


_INT64 = (-(2**63), 2**63 - 1)


# why integer and text ids meet, and the ways out (Python and the command line)
CSV_IDS = ("A CSV file's user and item ids are read as text (so '007' and '7' stay two ids): give the other input "
           "text ids too (pl.col(...).cast(pl.String)), or read the CSV yourself with the types you want, e.g. "
           "pl.read_csv(path, schema_overrides={...: pl.Int64}), and pass the DataFrame; on the command line, "
           "write the CSV as Parquet with integer ids first (a Parquet file's types are read as they are).")


def id_kind(dtype) -> str:
    """What an id column holds, for matching ids across inputs: "integer" (any width), "text" (String,
    Categorical, Enum), or the type's own name (never matched to another kind)."""
    if dtype.is_integer():
        return "integer"
    if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum):
        return "text"
    return str(dtype)


def common_integer(a, b):
    """The one integer type two integer id columns are compared in: UInt64 when both are unsigned, else Int64."""
    return pl.Int64 if (a.is_signed_integer() or b.is_signed_integer()) else pl.UInt64


def _align_dtypes(recs: pl.LazyFrame, truth: pl.LazyFrame, c: Columns, csv: list[str] = ()):
    """Ids must be of one kind in both inputs, the same rule on every backend:

    - integer widths are widened to a common type: UInt64 when both are unsigned, else Int64;
    - Int128/UInt128 ids (no DuckDB or Spark type) are narrowed to Int64 when every value fits;
    - String and Categorical are both text;
    - anything else, or values that do not fit the common type, is a DtypeMismatchError.
    """
    for col in (USER, ITEM):
        recs = _narrow_int128(recs, col, c, "recommendations")
        truth = _narrow_int128(truth, col, c, "ground truth")
        a, b = recs.collect_schema()[col], truth.collect_schema()[col]
        if isinstance(a, pl.Duration) or isinstance(b, pl.Duration):  # (DuckDB returns intervals Polars cannot read)
            raise DtypeMismatchError(f"{_public(col, c)!r} holds durations ({a if isinstance(a, pl.Duration) else b}): "
                                     "not an id type rankwise takes.",
                                     hint=f"Cast them, e.g. pl.col({_public(col, c)!r}).dt.total_microseconds() "
                                          "or .cast(pl.String).")
        if a == b or a == pl.Null or b == pl.Null:
            if a == pl.Null and b != pl.Null:
                recs = recs.with_columns(pl.col(col).cast(b))
            elif b == pl.Null and a != pl.Null:
                truth = truth.with_columns(pl.col(col).cast(a))
            continue
        if id_kind(a) == id_kind(b) == "integer":
            common = common_integer(a, b)
            for frame, dtype, what in ((recs, a, "recommendations"), (truth, b, "ground truth")):
                if dtype == pl.UInt64 and common == pl.Int64:
                    _check_fits(frame, col, c, what, f"{_public(col, c)!r} is UInt64 in the {what} and signed in the "
                                f"other input, and some ids are above the Int64 range")
            recs, truth = recs.with_columns(pl.col(col).cast(common)), truth.with_columns(pl.col(col).cast(common))
            continue
        if id_kind(a) == id_kind(b) == "text":
            recs, truth = recs.with_columns(pl.col(col).cast(pl.String)), truth.with_columns(pl.col(col).cast(pl.String))
            continue
        recs_head, truth_head = recs.select(col).head(3).collect()[col], truth.select(col).head(3).collect()[col]
        hint = f"Cast both to the same type, e.g. pl.col({_public(col, c)!r}).cast(pl.String)."
        if csv:
            hint = (f"The {' and '.join(csv)} {'input is' if len(csv) == 1 else 'inputs are'} CSV. " + CSV_IDS)
        raise DtypeMismatchError(
            f"{_public(col, c)!r} is {a} in the recommendations but {b} in the ground truth.",
            rows=pl.DataFrame({"recommendations": [str(v) for v in recs_head],
                               "ground truth": [str(v) for v in truth_head]}, strict=False)
            if recs_head.len() >= 3 and truth_head.len() >= 3 else None,
            hint=hint,
        )
    return recs, truth


def _narrow_int128(lf: pl.LazyFrame, col: str, c: Columns, what: str) -> pl.LazyFrame:
    if lf.collect_schema()[col] not in (pl.Int128, pl.UInt128):
        return lf
    _check_fits(lf, col, c, what, f"{what}: {_public(col, c)!r} is {lf.collect_schema()[col]} and some ids are "
                "outside the Int64 range (no DuckDB or Spark type holds them)")
    return lf.with_columns(pl.col(col).cast(pl.Int64))


def _check_fits(lf: pl.LazyFrame, col: str, c: Columns, what: str, problem: str) -> None:
    """Raise DtypeMismatchError unless every id fits Int64."""
    outside = (pl.col(col) < _INT64[0]) | (pl.col(col) > _INT64[1])
    bad = lf.filter(outside).select(pl.col(col).cast(pl.String)).unique(maintain_order=True).head(_SHOW).collect()
    if bad.height:
        raise DtypeMismatchError(
            problem + ".", rows=bad.rename({col: _public(col, c)}),
            hint="Cast the ids of both inputs to text (pl.col(...).cast(pl.String)); ids are compared, never "
            "summed, so text ids give the same results.",
        )


def _public(name: str, c: Columns) -> str:
    return {USER: c.user, ITEM: c.item, RANK: c.rank, SCORE: c.score, REL: c.relevance}.get(name, name)


def _show(df: pl.DataFrame, c: Columns) -> pl.DataFrame:
    shown = df.head(_SHOW).select([n for n in df.columns if not n.startswith("_")])
    return shown.rename({n: _public(n, c) for n in shown.columns})
