"""Input normalisation: any container, long or list form -> the two canonical long tables.

    recommendations (user_id, rank, item_id)        rank = position 1..n, no gaps, no repeats
    ground_truth    (user_id, item_id, relevance)   relevance Float64 >= 0, one row per label

A user given with an empty list keeps one row whose item_id (and rank / relevance) is null: the user
exists in that input with nothing in it. Both engines read exactly these tables; every input rule
(how ranks come from scores, ties, duplicates, validation) lives here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import polars as pl

from ._runs import grouped_runs
from .conventions import Convention
from .errors import (
    DtypeMismatchError,
    DuplicateItemError,
    DuplicateRankError,
    InvalidRankError,
    InvalidRelevanceError,
    MissingColumnError,
    NullValueError,
    ParameterError,
    UnsupportedInputError,
)

USER, ITEM, RANK, SCORE, REL = "user_id", "item_id", "rank", "score", "relevance"
_SHOW = 5  # offending rows shown in an error


@dataclass(frozen=True)
class Columns:
    """The caller's column names."""

    user: str = "user"
    item: str = "item"
    rank: str = "rank"
    score: str = "score"
    relevance: str = "relevance"


@dataclass(frozen=True)
class Prepared:
    """The canonical tables, ready for either engine.

    ``recs`` / ``truth`` are lazy: when a file input already satisfies every rule (checked exactly,
    see ``_runs.grouped_runs``) they are plain scans, so a 100M-row input is never held in
    memory. ``recommendations`` / ``ground_truth`` collect them on first use (writers, Spark).
    ``sources`` holds, per table, a DuckDB SELECT that reads the same file with the same renames and
    casts, so DuckDB scans the Parquet itself. ``rec_users`` / ``truth_users`` are each input's
    distinct users when the checks already produced them (else None).
    """

    recs: pl.LazyFrame
    truth: pl.LazyFrame
    user_dtype: pl.DataType
    sources: dict = field(default_factory=dict)
    rec_users: pl.Series | None = None
    truth_users: pl.Series | None = None

    @cached_property
    def recommendations(self) -> pl.DataFrame:
        return self.recs.collect()

    @cached_property
    def ground_truth(self) -> pl.DataFrame:
        return self.truth.collect()

    def n_users_either(self) -> int:
        """Distinct users over both inputs (from the users the checks saw, without a rescan)."""
        recs = self.rec_users if self.rec_users is not None else self.recs.select(USER).unique().collect()[USER]
        truth = self.truth_users if self.truth_users is not None else self.truth.select(USER).unique().collect()[USER]
        return pl.concat([recs.cast(self.user_dtype), truth.cast(self.user_dtype)]).n_unique()


def to_lazyframe(data, what: str) -> pl.LazyFrame:
    """Polars (eager/lazy), pandas, PyArrow, DuckDB relation, or a Parquet/CSV path -> LazyFrame."""
    if isinstance(data, pl.LazyFrame):
        return data
    if isinstance(data, pl.DataFrame):
        return data.lazy()
    if isinstance(data, (str, Path)):
        path = Path(data)
        suffix = path.suffix.lower()
        if suffix in (".parquet", ".pq") or path.is_dir():
            return pl.scan_parquet(path)
        if suffix in (".csv", ".tsv"):
            return pl.scan_csv(path, separator="\t" if suffix == ".tsv" else ",")
        raise UnsupportedInputError(
            f"{what}: cannot tell the format of {str(path)!r}.",
            hint="Pass a .parquet or .csv path, or a DataFrame.",
        )
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        return pl.from_pandas(data).lazy()
    if module == "pyarrow":
        return pl.from_arrow(data).lazy()
    if module in ("duckdb", "_duckdb"):
        return data.pl().lazy()
    raise UnsupportedInputError(
        f"{what}: unsupported input type {type(data).__name__}.",
        hint="Use a Polars DataFrame/LazyFrame, a pandas DataFrame, a PyArrow Table, a DuckDB "
        "relation, or a path to a Parquet or CSV file.",
    )


def prepare(recommendations, ground_truth, columns: Columns, convention: Convention) -> Prepared:
    """Validate both inputs and normalise them to the canonical long tables."""
    recs_raw = to_lazyframe(recommendations, "recommendations")
    truth_raw = to_lazyframe(ground_truth, "ground truth")
    recs, rec_users = _recommendations(recs_raw, columns, convention)
    truth, truth_users = _ground_truth(truth_raw, columns)
    recs, truth = _align_dtypes(recs, truth, columns)
    sources = {}
    if rec_users is not None and _parquet_file(recommendations):
        sources["recommendations"] = _duckdb_select(
            recommendations, recs.collect_schema(), {USER: columns.user, RANK: columns.rank, ITEM: columns.item})
    if truth_users is not None and _parquet_file(ground_truth):
        sources["ground_truth"] = _duckdb_select(
            ground_truth, truth.collect_schema(), {USER: columns.user, ITEM: columns.item, REL: columns.relevance},
            has=truth_raw.collect_schema())
    sources = {k: v for k, v in sources.items() if v is not None}
    return Prepared(recs, truth, recs.collect_schema()[USER], sources, rec_users, truth_users)


# -- file inputs read by DuckDB directly -----------------------------------------------------------

_DUCKDB_TYPES = {pl.Int8: "TINYINT", pl.Int16: "SMALLINT", pl.Int32: "INTEGER", pl.Int64: "BIGINT",
                 pl.UInt8: "UTINYINT", pl.UInt16: "USMALLINT", pl.UInt32: "UINTEGER", pl.UInt64: "UBIGINT",
                 pl.Float32: "FLOAT", pl.Float64: "DOUBLE", pl.String: "VARCHAR"}


def _parquet_file(data) -> bool:
    return isinstance(data, (str, Path)) and Path(data).suffix.lower() in (".parquet", ".pq") and Path(data).is_file()


def _duckdb_select(path, schema, names: dict, has=None) -> str | None:
    """The DuckDB twin of the canonical lazy scan: same file, same renames, same target types.

    A column missing from the file (relevance) is the constant the Polars side uses (1.0). None when
    a type has no plain DuckDB equivalent (the engine then reads the collected frame instead).
    """
    parts = []
    for out, dtype in schema.items():
        sql_type = _DUCKDB_TYPES.get(dtype)
        if sql_type is None:
            return None
        source = names[out]
        if has is not None and source not in has:
            parts.append(f"CAST(1.0 AS {sql_type}) AS {out}")
        else:
            quoted = source.replace('"', '""')
            parts.append(f'CAST("{quoted}" AS {sql_type}) AS {out}')
    literal = str(Path(path)).replace("'", "''")
    return f"SELECT {', '.join(parts)} FROM read_parquet('{literal}')"


# -- recommendations -------------------------------------------------------------------------------


def _recommendations(lf: pl.LazyFrame, c: Columns, conv: Convention) -> tuple[pl.LazyFrame, pl.Series | None]:
    """The canonical recommendations, and their distinct users when the streaming checks found them."""
    schema = lf.collect_schema()
    _require(schema, [c.user, c.item], "recommendations")
    if (not isinstance(schema[c.item], pl.List) and c.rank in schema and schema[c.rank].is_integer()
            and conv.min_score is None):
        users = grouped_runs(lf, c.user, c.item, c.rank)
        if users is not None:
            # every rule holds and ranks are already 1..n: a plain lazy scan, nothing renumbered
            canonical = lf.select(pl.col(c.user).alias(USER), pl.col(c.rank).cast(pl.Int64).alias(RANK),
                                  pl.col(c.item).alias(ITEM))
            return canonical, users
    if isinstance(schema[c.item], pl.List):
        df = _explode_lists(lf, c, "recommendations").collect()
        df = df.with_columns(pl.when(pl.col(ITEM).is_not_null()).then(pl.col(RANK)).alias(RANK))
    elif c.rank in schema:
        df = lf.select(pl.col(c.user).alias(USER), pl.col(c.item).alias(ITEM), pl.col(c.rank).alias(RANK)).collect()
        _check_nulls(df, [USER, ITEM, RANK], "recommendations", c)
        _check_ranks(df, c)
    elif c.score in schema:
        df = lf.select(pl.col(c.user).alias(USER), pl.col(c.item).alias(ITEM), pl.col(c.score).alias(SCORE)).collect()
        _check_nulls(df, [USER, ITEM, SCORE], "recommendations", c)
        df = _rank_by_score(df, conv.ties, conv.min_score)
    else:
        raise MissingColumnError(
            f"recommendations: need a {c.rank!r} or a {c.score!r} column (or list-form items); "
            f"found {list(schema)}.",
            hint="Name the columns with rank_col= / score_col=, or pass items as a list column.",
        )
    if conv.min_score is not None and c.score not in schema:
        raise ParameterError(
            f"The convention sets min_score={conv.min_score}, but the recommendations have no "
            f"{c.score!r} column to compare it with.",
            hint="Pass scores (score_col=...), or use a convention with min_score=None.",
        )
    df = _handle_duplicates(df, conv.duplicates, c)
    return _positions(df).lazy(), None


def _explode_lists(lf: pl.LazyFrame, c: Columns, what: str, with_relevance: bool = False) -> pl.LazyFrame:
    """One row per user with a list of items -> one row per (user, position, item)."""
    schema = lf.collect_schema()
    cols = [pl.col(c.user).alias(USER), pl.col(c.item).alias(ITEM)]
    if with_relevance and c.relevance in schema:
        cols.append(pl.col(c.relevance).alias(REL))
    df = lf.select(cols).collect()
    _check_nulls(df, [USER, ITEM], what, c)
    repeated = df.filter(pl.col(USER).is_duplicated())
    if repeated.height:
        raise DuplicateItemError(
            f"{what}: in list form each user has one row, but some users have several.",
            rows=_show(repeated, c),
            hint="Concatenate each user's lists, or pass the long form (one row per item).",
        )
    df = df.with_columns(pl.col(ITEM).list.len().alias("_n"))
    if REL in df.columns:
        bad = df.filter(pl.col(REL).list.len() != pl.col("_n"))
        if bad.height:
            raise InvalidRelevanceError(
                f"{what}: the {c.relevance!r} list and the {c.item!r} list differ in length.",
                rows=_show(bad.drop("_n"), c),
                hint="Give one relevance per item, in the same order.",
            )
        df = df.explode([ITEM, REL], empty_as_null=True)
    else:
        df = df.explode(ITEM, empty_as_null=True)
    out = df.with_columns(
        (pl.int_range(pl.len(), dtype=pl.Int64).over(USER) + 1).alias(RANK)
    ).drop("_n")
    items_null = out.filter(pl.col(ITEM).is_null() & (pl.col(USER).is_duplicated()))
    if items_null.height:
        raise NullValueError(
            f"{what}: a list holds a null item.", rows=_show(items_null, c),
            hint="Drop nulls from the lists: pl.col(item).list.drop_nulls().",
        )
    return out.lazy()


def _check_ranks(df: pl.DataFrame, c: Columns) -> None:
    if not df.schema[RANK].is_integer():
        raise InvalidRankError(
            f"recommendations: {c.rank!r} must be integer, got {df.schema[RANK]}.",
            hint="Cast the rank column to an integer type, or pass scores as score_col.",
        )
    low = df.filter(pl.col(RANK) < 1)
    if low.height:
        raise InvalidRankError(
            f"recommendations: {c.rank!r} must be >= 1 ({low.height} rows are not).",
            rows=_show(low, c), hint="Ranks are 1-based positions: the top item has rank 1.",
        )
    dup = df.filter(pl.struct(USER, RANK).is_duplicated())
    if dup.height:
        raise DuplicateRankError(
            f"recommendations: {dup.height} rows share a {c.rank!r} with another item of the same user.",
            rows=_show(dup.sort(USER, RANK), c),
            hint="Give each item of a list its own rank, or pass scores (score_col) and choose a ties rule.",
        )


def _rank_by_score(df: pl.DataFrame, ties: str, min_score: float | None) -> pl.DataFrame:
    """Rank = position by score descending; equal scores ordered by the ``ties`` rule.

    With ``min_score``, items scored below it are dropped; a user left with nothing keeps a
    null-item row (present, empty list).
    """
    df = df.with_row_index("_order")
    if df.schema[SCORE].is_float():
        bad = df.filter(pl.col(SCORE).is_nan())
        if bad.height:
            raise NullValueError("recommendations: a score is NaN.", rows=bad.head(_SHOW),
                                 hint="Drop or fill NaN scores.")
    if min_score is not None:
        kept = df.filter(pl.col(SCORE) >= min_score)
        emptied = df.select(USER).unique().join(kept.select(USER), on=USER, how="anti")
        df = pl.concat([kept, emptied.with_columns(pl.lit(None, dtype=df.schema[ITEM]).alias(ITEM))],
                       how="diagonal")
    tie_key = {"item_asc": (ITEM, False), "item_desc": (ITEM, True), "input_order": ("_order", False)}[ties]
    df = df.sort([USER, SCORE, tie_key[0]], descending=[False, True, tie_key[1]], nulls_last=True)
    ranks = pl.when(pl.col(ITEM).is_not_null()).then(pl.int_range(pl.len(), dtype=pl.Int64).over(USER) + 1)
    return df.with_columns(ranks.alias(RANK)).select(USER, RANK, ITEM)


def _handle_duplicates(df: pl.DataFrame, rule: str, c: Columns) -> pl.DataFrame:
    present = df.filter(pl.col(ITEM).is_not_null())
    dup_mask = pl.struct(USER, ITEM).is_duplicated()
    if not present.select(dup_mask.any()).item():
        return df
    if rule == "error":
        dup = present.filter(dup_mask).sort(USER, RANK)
        raise DuplicateItemError(
            f"recommendations: {dup.height} rows repeat an item already in the same user's list.",
            rows=_show(dup, c),
            hint="De-duplicate the lists, or choose Convention(duplicates='first_shift') to keep "
            "each item's first occurrence.",
        )
    # first_shift: keep the best-ranked occurrence; _positions() then closes the gaps.
    keep = df.sort(USER, RANK).filter(pl.col(ITEM).is_null() | pl.struct(USER, ITEM).is_first_distinct())
    return keep


def _positions(df: pl.DataFrame) -> pl.DataFrame:
    """Ranks become positions 1..n in rank order (gaps close); null-item rows keep a null rank."""
    df = df.select(USER, RANK, ITEM).sort(USER, RANK, nulls_last=True)
    pos = pl.when(pl.col(ITEM).is_not_null()).then(pl.int_range(pl.len(), dtype=pl.Int64).over(USER) + 1)
    return df.with_columns(pos.alias(RANK))


# -- ground truth ----------------------------------------------------------------------------------


def _ground_truth(lf: pl.LazyFrame, c: Columns) -> tuple[pl.LazyFrame, pl.Series | None]:
    """The canonical ground truth, and its distinct users when the streaming checks found them."""
    schema = lf.collect_schema()
    _require(schema, [c.user, c.item], "ground truth")
    has_rel = c.relevance in schema
    if not isinstance(schema[c.item], pl.List) and (
            not has_rel or schema[c.relevance].is_numeric() or schema[c.relevance] == pl.Boolean):
        users = grouped_runs(lf, c.user, c.item, relevance=c.relevance if has_rel else None)
        if users is not None:
            relevance = pl.col(c.relevance).cast(pl.Float64) if has_rel else pl.lit(1.0, dtype=pl.Float64)
            return lf.select(pl.col(c.user).alias(USER), pl.col(c.item).alias(ITEM), relevance.alias(REL)), users
    if isinstance(schema[c.item], pl.List):
        df = _explode_lists(lf, c, "ground truth", with_relevance=True).drop(RANK).collect()
    else:
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
    bad = df.filter(present & (pl.col(REL).is_null() | pl.col(REL).is_nan() | pl.col(REL).is_infinite() | (pl.col(REL) < 0)))
    if bad.height:
        raise InvalidRelevanceError(
            f"ground truth: {bad.height} relevance values are null, NaN, infinite or negative.",
            rows=_show(bad, c), hint="Relevance must be a finite number >= 0.",
        )
    dup = df.filter(present & pl.struct(USER, ITEM).is_duplicated())
    if dup.height:
        raise DuplicateItemError(
            f"ground truth: {dup.height} rows repeat a (user, item) label.",
            rows=_show(dup.sort(USER, ITEM), c),
            hint="Keep one label per (user, item), e.g. the maximum relevance.",
        )
    return df.select(USER, ITEM, REL).lazy(), None


# -- shared checks ---------------------------------------------------------------------------------


def _require(schema, names: list[str], what: str) -> None:
    missing = [n for n in names if n not in schema]
    if missing:
        raise MissingColumnError(
            f"{what}: missing column(s) {missing}; found {list(schema)}.",
            hint="Pass the names with user_col=, item_col=, rank_col=, score_col=, relevance_col=.",
        )


def _check_nulls(df: pl.DataFrame, names: list[str], what: str, c: Columns) -> None:
    for name in names:
        bad = df.filter(pl.col(name).is_null())
        if bad.height:
            raise NullValueError(
                f"{what}: column {_public(name, c)!r} has {bad.height} null values.",
                rows=_show(bad, c), hint="Drop or fill the nulls before evaluating.",
            )


def _align_dtypes(recs: pl.LazyFrame, truth: pl.LazyFrame, c: Columns):
    """Ids must be of one kind in both inputs; integer widths are widened to a common type."""
    for col in (USER, ITEM):
        a, b = recs.collect_schema()[col], truth.collect_schema()[col]
        if a == b or a == pl.Null or b == pl.Null:
            if a == pl.Null and b != pl.Null:
                recs = recs.with_columns(pl.col(col).cast(b))
            elif b == pl.Null and a != pl.Null:
                truth = truth.with_columns(pl.col(col).cast(a))
            continue
        if a.is_integer() and b.is_integer():
            common = pl.Int64 if (a.is_signed_integer() or b.is_signed_integer()) else pl.UInt64
            recs, truth = recs.with_columns(pl.col(col).cast(common)), truth.with_columns(pl.col(col).cast(common))
            continue
        if a in (pl.String, pl.Categorical) and b in (pl.String, pl.Categorical):
            recs, truth = recs.with_columns(pl.col(col).cast(pl.String)), truth.with_columns(pl.col(col).cast(pl.String))
            continue
        recs_head, truth_head = recs.select(col).head(3).collect()[col], truth.select(col).head(3).collect()[col]
        raise DtypeMismatchError(
            f"{_public(col, c)!r} is {a} in the recommendations but {b} in the ground truth.",
            rows=pl.DataFrame({"recommendations": [str(v) for v in recs_head],
                               "ground truth": [str(v) for v in truth_head]}, strict=False)
            if recs_head.len() >= 3 and truth_head.len() >= 3 else None,
            hint="Cast both to the same type, e.g. pl.col(...).cast(pl.String).",
        )
    return recs, truth


def _public(name: str, c: Columns) -> str:
    return {USER: c.user, ITEM: c.item, RANK: c.rank, SCORE: c.score, REL: c.relevance}.get(name, name)


def _show(df: pl.DataFrame, c: Columns) -> pl.DataFrame:
    shown = df.head(_SHOW).select([n for n in df.columns if not n.startswith("_")])
    return shown.rename({n: _public(n, c) for n in shown.columns})
