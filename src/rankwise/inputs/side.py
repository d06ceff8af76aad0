"""The beyond-accuracy metrics' side inputs, checked and canonicalised once for every engine: ``train``
(user_id, item_id), ``items`` (the catalog), ``item_features`` (long item_id, feature, value, or one
embedding list per item).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import polars as pl

from rankwise.errors import (
    DtypeMismatchError,
    DuplicateItemError,
    InputError,
    MissingColumnError,
    NullValueError,
    ParameterError,
)
from rankwise.inputs.normalize import CSV_IDS, ITEM, USER, id_kind, is_spark_dataframe, to_lazyframe

FEATURE, VALUE = "feature", "value"
_SHOW = 5

@dataclass(frozen=True)
class SideInputs:
    """Validated side inputs. ``train`` (user_id, item_id), one row per interaction; ``items``
    (item_id), distinct; item features either ``features`` long (item_id, feature: String, value:
    Float64), one row per (item, feature), or ``embeddings`` (item ids, an items x d float matrix).
    Any of them may be None."""

    train: pl.DataFrame | None = None
    items: pl.DataFrame | None = None
    features: pl.DataFrame | None = None
    embeddings: tuple[pl.Series, np.ndarray] | None = None
    # with_item_type's result per item type: made once, so its popularity is computed once too
    _typed: dict = field(default_factory=dict, compare=False, repr=False)
    # the popularity frames computed so far, by their columns (see popularity())
    _popular: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def has_features(self) -> bool:
        return self.features is not None or self.embeddings is not None

    @cached_property
    def long_features(self) -> pl.DataFrame | None:
        """The item features as long rows (what the SQL reads): embeddings become features "0".."d-1"."""
        if self.embeddings is None:
            return self.features
        ids, matrix = self.embeddings
        n, d = matrix.shape
        return pl.DataFrame({ITEM: ids.gather(np.repeat(np.arange(n), d)),
                             FEATURE: pl.Series([str(j) for j in range(d)] * n, dtype=pl.String),
                             VALUE: matrix.ravel()})

    def popularity(self, *columns: str) -> pl.DataFrame | None:
        """(item_id, *columns) per train item, None without train. The columns: ``pop_users``, the
        distinct train users of the item (a distinct count per item: the costly one), and ``pop_rows``,
        its train rows; none: the train items alone. Each is computed once, and only when a metric reads
        it (a frame computed earlier with the columns asked is reused)."""
        if self.train is None:
            return None
        for have, frame in self._popular.items():
            if set(columns) <= have:
                return frame.select(ITEM, *columns)
        count = {"pop_users": pl.col(USER).n_unique(), "pop_rows": pl.len()}
        computed = columns or ("pop_rows",)  # the train items: grouped anyway, their row counts cost nothing more
        frame = self.train.lazy().group_by(ITEM).agg(count[c].cast(pl.Int64).alias(c) for c in computed).collect()
        self._popular[frozenset(computed)] = frame
        return frame.select(ITEM, *columns)

    @cached_property
    def train_users(self) -> int:
        """U_T: the distinct users of train (0 without train)."""
        return 0 if self.train is None else self.train[USER].n_unique()


def prepare_side_inputs(train=None, items=None, item_features=None, item_col: str = "item",
                        user_col: str = "user", feature_col: str = FEATURE, value_col: str = VALUE,
                        embedding_col: str = "embedding") -> SideInputs:
    """Validate and canonicalise train / items / item_features (any container evaluate accepts; items
    may also be a sequence of ids). item_features is long (item, feature[, value = 1]) or (item,
    embedding) with a list/array column. Raises typed errors naming the column, rows and a hint."""
    features = None if item_features is None else _features(item_features, item_col, feature_col, value_col,
                                                            embedding_col)
    return SideInputs(
        train=None if train is None else _train(train, item_col, user_col),
        items=None if items is None else _items(items, item_col),
        features=features if isinstance(features, pl.DataFrame) else None,
        embeddings=features if isinstance(features, tuple) else None,
    )


def with_item_type(side: SideInputs, item_dtype) -> SideInputs:
    """``side`` with the recommendations' item id type (the side inputs are joined with them on items):
    integer ids are cast to the recommendations' integer type; text ids stay String (:func:`run` casts
    categorical recommendations to String); integer ids on one side and text on the other are a
    DtypeMismatchError, as between recommendations and ground truth."""
    import dataclasses

    if item_dtype in side._typed:
        return side._typed[item_dtype]
    text = id_kind(item_dtype) == "text"
    ids = {"train": side.train, "items": side.items, "item_features": side.features,
           "item_features (embeddings)": None if side.embeddings is None else side.embeddings[0].to_frame(ITEM)}
    changed = {}
    for what, frame in ids.items():
        dtype = None if frame is None else frame.schema[ITEM]
        if dtype is None or item_dtype == pl.Null or dtype == item_dtype or (text and dtype == pl.String):
            continue
        if not id_kind(dtype) == id_kind(item_dtype) == "integer":
            raise DtypeMismatchError(
                f"{what}: the item ids are {dtype}, but {item_dtype} in the recommendations.",
                rows=frame.select(ITEM).head(_SHOW),
                hint="Give both the same type. " + CSV_IDS)
        cast = frame.with_columns(pl.col(ITEM).cast(item_dtype, strict=False))
        outside = frame.filter(cast[ITEM].is_null() & frame[ITEM].is_not_null())
        if outside.height:
            raise DtypeMismatchError(f"{what}: {outside.height} item ids do not fit {item_dtype}, the "
                                     "recommendations' item type.", rows=outside.select(ITEM).head(_SHOW),
                                     hint="Cast the ids of every input to text (pl.col('item').cast(pl.String)).")
        changed[what] = cast
    typed = side
    if changed:
        embeddings = side.embeddings if "item_features (embeddings)" not in changed else \
            (changed["item_features (embeddings)"][ITEM], side.embeddings[1])
        typed = dataclasses.replace(side, train=changed.get("train", side.train),
                                    items=changed.get("items", side.items),
                                    features=changed.get("item_features", side.features), embeddings=embeddings,
                                    _typed={}, _popular={})
    side._typed[item_dtype] = typed
    return typed


def _frame(data, what: str) -> pl.DataFrame:
    if is_spark_dataframe(data):  # as for the recommendations: beyond-accuracy inputs are read on this machine
        raise ParameterError(f"{what}: a Spark DataFrame; the beyond-accuracy inputs are DataFrames or files.",
                             hint=f"Write it to Parquet and pass the path, or pass {what}.toPandas() if it is small.")
    return to_lazyframe(data, what).collect()


def _require(df: pl.DataFrame, names: list[str], what: str, hint: str) -> None:
    missing = [n for n in names if n not in df.columns]
    if missing:
        raise MissingColumnError(f"{what}: missing column(s) {missing}; found {df.columns}.", hint=hint)


def _no_nulls(df: pl.DataFrame, names: list[str], what: str) -> None:
    for name in names:
        bad = df.filter(pl.col(name).is_null())
        if bad.height:
            raise NullValueError(f"{what}: column {name!r} has {bad.height} null values.",
                                 rows=bad.head(_SHOW), hint="Drop or fill the nulls before evaluating.")


def _id_column(df: pl.DataFrame, name: str, what: str) -> pl.Expr:
    """Ids are integers (widened to Int64; UInt64 kept: its ids past 2^63 fit no Int64) or text (String),
    as in the recommendations."""
    dtype = df.schema[name]
    if dtype.is_integer():
        return pl.col(name).cast(pl.UInt64 if dtype == pl.UInt64 else pl.Int64)
    if dtype in (pl.String, pl.Categorical, pl.Null):
        return pl.col(name).cast(pl.String)
    raise DtypeMismatchError(f"{what}: column {name!r} is {dtype}; ids are integers or text.",
                             rows=df.select(name).head(_SHOW),
                             hint=f"Cast it, e.g. pl.col({name!r}).cast(pl.String) or .cast(pl.Int64), "
                                  "to the type of the recommendations' ids.")


def _train(data, item_col: str, user_col: str) -> pl.DataFrame:
    df = _frame(data, "train")
    _require(df, [user_col, item_col], "train", "Pass the names with user_col= and item_col=.")
    _no_nulls(df, [user_col, item_col], "train")
    return df.select(_id_column(df, user_col, "train").alias(USER), _id_column(df, item_col, "train").alias(ITEM))


def _items(data, item_col: str) -> pl.DataFrame:
    if isinstance(data, (list, tuple, set, frozenset, range, np.ndarray, pl.Series)) or \
            type(data).__name__ == "Series":
        df = pl.DataFrame({item_col: pl.Series(list(data) if isinstance(data, (set, frozenset)) else data)})
    else:
        df = _frame(data, "items")
    if df.height == 0:  # one rule on every engine, before any runs
        raise ParameterError("items is an empty catalog: no item to cover or to spread exposure over.",
                             hint="Pass the catalog's item ids, or leave items out (items=None): the catalog "
                                  "is then the train items (knob catalog).")
    _require(df, [item_col], "items", "Pass a table with the item column (item_col=) or a sequence of ids.")
    _no_nulls(df, [item_col], "items")
    return df.select(_id_column(df, item_col, "items").alias(ITEM)).unique(maintain_order=True)


def _features(data, item_col: str, feature_col: str, value_col: str,
              embedding_col: str) -> pl.DataFrame | tuple[pl.Series, np.ndarray]:
    what = "item_features"
    df = _frame(data, what)
    hint = (f"Give long rows ({item_col}, {feature_col}[, {value_col}]) or ({item_col}, {embedding_col}) "
            "with a list column (feature_col=, value_col=, embedding_col= name them).")
    if embedding_col in df.columns and feature_col not in df.columns:
        return _embeddings(df, item_col, embedding_col)
    _require(df, [item_col, feature_col], what, hint)
    if value_col not in df.columns:
        df = df.with_columns(pl.lit(1.0).alias(value_col))  # categorical features
    _no_nulls(df, [item_col, feature_col, value_col], what)
    dtype = df.schema[value_col]
    if not dtype.is_numeric() or dtype == pl.Boolean:
        raise DtypeMismatchError(f"{what}: column {value_col!r} is {dtype}; feature values are numbers.",
                                 rows=df.head(_SHOW), hint=f"Cast {value_col!r} to a float.")
    out = df.select(_id_column(df, item_col, what).alias(ITEM), pl.col(feature_col).cast(pl.String).alias(FEATURE),
                    pl.col(value_col).cast(pl.Float64).alias(VALUE))
    bad = out.filter(~pl.col(VALUE).is_finite())
    if bad.height:
        raise InputError(f"{what}: column {value_col!r} has {bad.height} NaN or infinite values.",
                         rows=bad.head(_SHOW), hint="Replace them with finite numbers, or drop those rows.")
    dup = out.filter(pl.struct(ITEM, FEATURE).is_duplicated())
    if dup.height:
        raise DuplicateItemError(f"{what}: {dup.height} rows repeat an ({item_col}, {feature_col}) pair.",
                                 rows=dup.sort(ITEM, FEATURE).head(_SHOW),
                                 hint="Keep one value per item and feature (aggregate or drop the repeats).")
    return out


def _embeddings(df: pl.DataFrame, item_col: str, col: str) -> tuple[pl.Series, np.ndarray]:
    what = "item_features"
    dtype = df.schema[col]
    if not isinstance(dtype, (pl.Array, pl.List)):
        raise DtypeMismatchError(f"{what}: column {col!r} is {dtype}; an embedding is a list or array of numbers.",
                                 rows=df.head(_SHOW), hint="Give one list of floats per item.")
    inner = dtype.inner
    if not inner.is_numeric() or inner == pl.Boolean:
        raise DtypeMismatchError(f"{what}: column {col!r} holds {inner}; embeddings are numbers.",
                                 rows=df.head(_SHOW), hint="Cast the lists to floats.")
    _no_nulls(df, [item_col, col], what)
    values = df.get_column(col)
    if isinstance(dtype, pl.List):
        lengths = values.list.len()
        if lengths.n_unique() > 1:
            common = lengths.mode().sort()[0]
            raise InputError(f"{what}: embeddings in {col!r} have different lengths ({sorted(lengths.unique())[:5]}).",
                             rows=df.filter(lengths != common).head(_SHOW),
                             hint=f"Give every item an embedding of the same dimension (most have {common}).")
        dim = int(lengths[0]) if lengths.len() else 0
    else:
        dim = dtype.size
    # one float matrix: a null inside a vector becomes NaN, so one finiteness test finds both
    if dim == 0:
        matrix = np.zeros((df.height, 0))
    else:
        if isinstance(dtype, pl.List):
            values = values.list.to_array(dim)
        matrix = np.asarray(values.cast(pl.Array(pl.Float64, dim)).to_numpy(), dtype=np.float64).reshape(df.height, dim)
    bad = ~np.isfinite(matrix).all(axis=1)
    if bad.any():
        raise InputError(f"{what}: {int(bad.sum())} embeddings in {col!r} hold null, NaN or infinite values.",
                         rows=df.filter(pl.Series(bad)).head(_SHOW),
                         hint="Replace them with finite numbers, or drop those items.")
    ids = df.select(_id_column(df, item_col, what).alias(ITEM), pl.col(col))
    dup = ids.filter(pl.col(ITEM).is_duplicated())
    if dup.height:
        raise DuplicateItemError(f"{what}: {dup.height} rows repeat an item in {item_col!r}.",
                                 rows=dup.sort(ITEM).head(_SHOW), hint="Keep one embedding per item.")
    return ids.get_column(ITEM), matrix


