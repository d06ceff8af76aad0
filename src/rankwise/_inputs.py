"""Input normalisation: any container, long or list form -> the two canonical long tables.

    recommendations (user_id, rank, item_id)        rank = position 1..n, no gaps, no repeats
    ground_truth    (user_id, item_id, relevance)   relevance Float64 >= 0, one row per label

A user given with an empty list keeps one row whose item_id (and rank / relevance) is null: the user
exists in that input with nothing in it. Both engines read exactly these tables; every input rule
(how ranks come from scores, ties, duplicates, validation) lives here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

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
    """The canonical tables, ready for either engine."""

    recommendations: pl.DataFrame
    ground_truth: pl.DataFrame
    user_dtype: pl.DataType


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
    recs = _recommendations(recs_raw, columns, convention)
    truth = _ground_truth(truth_raw, columns)
    recs, truth = _align_dtypes(recs, truth, columns)
    return Prepared(recs, truth, recs.schema[USER])


# -- recommendations -------------------------------------------------------------------------------


def _recommendations(lf: pl.LazyFrame, c: Columns, conv: Convention) -> pl.DataFrame:
    schema = lf.collect_schema()
    _require(schema, [c.user, c.item], "recommendations")
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
    return _positions(df)


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


def _ground_truth(lf: pl.LazyFrame, c: Columns) -> pl.DataFrame:
    schema = lf.collect_schema()
    _require(schema, [c.user, c.item], "ground truth")
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
    return df.select(USER, ITEM, REL)


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


def _align_dtypes(recs: pl.DataFrame, truth: pl.DataFrame, c: Columns):
    """Ids must be of one kind in both inputs; integer widths are widened to a common type."""
    for col in (USER, ITEM):
        a, b = recs.schema[col], truth.schema[col]
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
        raise DtypeMismatchError(
            f"{_public(col, c)!r} is {a} in the recommendations but {b} in the ground truth.",
            rows=pl.DataFrame({"recommendations": [str(v) for v in recs[col].head(3)],
                               "ground truth": [str(v) for v in truth[col].head(3)]}, strict=False)
            if recs.height >= 3 and truth.height >= 3 else None,
            hint="Cast both to the same type, e.g. pl.col(...).cast(pl.String).",
        )
    return recs, truth


def _public(name: str, c: Columns) -> str:
    return {USER: c.user, ITEM: c.item, RANK: c.rank, SCORE: c.score, REL: c.relevance}.get(name, name)


def _show(df: pl.DataFrame, c: Columns) -> pl.DataFrame:
    shown = df.head(_SHOW).select([n for n in df.columns if not n.startswith("_")])
    return shown.rename({n: _public(n, c) for n in shown.columns})
