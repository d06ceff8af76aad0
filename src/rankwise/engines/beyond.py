"""Beyond-accuracy metrics (issue 10): the engine-level computation core, in Polars and in shipped SQL.

Notation (per cutoff k): L_u = u's items with rank <= k, n_u = |L_u|; pop(i) = distinct train users
of i (knob ``popularity``: or train rows); U_T = distinct train users (rows: #train rows); c(i) =
exposure = users whose L_u holds i; C = the catalog (knob ``catalog``). Every knob is documented on
:class:`rankwise.Convention` and in docs/metrics.md (generated from the registry, rankwise.metrics.declarations.BEYOND).

Per user (``polars_user`` / ``duckdb_user`` -> user_id, k, n_items, novelty, arp, long_tail_share,
ild, serendipity):
    novelty          mean over L_u of -log_b(max(pop(i), 1) / U_T)      [cold_items, list_denominator,
                                                                        novelty_normalize, info_log_base]
    arp              mean over L_u of pop(i), cold items 0              [arp_popularity, cold_items]
    long_tail_share  share of L_u in the long tail                      [long_tail, long_tail_ratio]
    ild              sum over pairs of (1 - cos) / pairs, from |sum of unit vectors|^2:
                     sum_{i<j} cos = (|sum_i f_i/|f_i||^2 - m) / 2      [ild_denominator, ild_short]
    serendipity      mean over L_u of max(p_rank - p_pop, 0) * rel     [serendipity_popularity, catalog]
Catalog (``polars_catalog`` / ``duckdb_catalog`` -> metric, k, value, n_users; n_users = users with
n_u > 0): item_coverage, gini, exposure_entropy, personalization (1 - (sum c^2 - sum n_u) /
(k U_R (U_R - 1)), linear time), score_entropy (Shannon entropy in nats of the softmax of all
pooled top-k scores: ln Z - sum e^(s - M) (s - M) / Z, M = max s, Z = sum e^(s - M)).
``per_item`` -> item_id, k, exposure, popularity over C ∪ recommended items.

Inputs are canonical: ``recs`` (user_id, rank, item_id[, score]) with rank 1..n per user (a row with
a null item_id is a user with an empty list), ``truth`` (user_id, item_id, relevance) for serendipity,
and :class:`SideInputs` from :func:`prepare_side_inputs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import polars as pl

from rankwise.sqlgen import files as _sql_files
from rankwise.inputs.normalize import CSV_IDS, ITEM, USER, id_kind, is_spark_dataframe, to_lazyframe
from rankwise.conventions import Convention
from rankwise.errors import (
    DtypeMismatchError,
    DuplicateItemError,
    InputError,
    MissingColumnError,
    NullValueError,
    ParameterError,
)
from rankwise.metrics.beyond import CATALOG_METRICS, METRICS, NEEDS, STAGES, USER_COLUMNS  # noqa: F401  (METRICS: rankwise.engines.beyond.METRICS)

FEATURE, VALUE = "feature", "value"
NO_CATALOG = pl.DataFrame(schema={"metric": pl.String, "k": pl.Int64, "value": pl.Float64, "n_users": pl.Int64})
_SHOW = 5


# --------------------------------------------------------------------------------------------------
# side inputs


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

    @cached_property
    def popularity(self) -> pl.DataFrame | None:
        """(item_id, pop_users, pop_rows) per train item, computed once (None without train)."""
        if self.train is None:
            return None
        return self.train.lazy().group_by(ITEM).agg(pl.col(USER).n_unique().cast(pl.Int64).alias("pop_users"),
                                                    pl.len().cast(pl.Int64).alias("pop_rows")).collect()


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
                                    _typed={})
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


# --------------------------------------------------------------------------------------------------
# Polars engine


def _top(recs: pl.LazyFrame, ks) -> pl.LazyFrame:
    """(user_id, k, item_id, rank[, score]): the items with rank <= k, one block per k."""
    rows = recs.filter(pl.col(ITEM).is_not_null())
    return pl.concat([rows.filter(pl.col("rank") <= k).with_columns(pl.lit(k, pl.Int64).alias("k")) for k in ks])


def _buckets(recs: pl.LazyFrame, ks) -> pl.LazyFrame:
    """The items with rank <= max(k), each once, with ``ix``: the position among the sorted cutoffs of
    the smallest k >= rank. Cutoff number j sums the buckets 0..j (:func:`_cumulative`), so a list row
    is read once whatever the number of cutoffs (as sql/beyond_ranks.sql)."""
    ks = sorted(ks)
    ix = pl.sum_horizontal([(pl.col("rank") > k).cast(pl.Int32) for k in ks[:-1]]) if len(ks) > 1 else pl.lit(0)
    return recs.filter(pl.col(ITEM).is_not_null() & (pl.col("rank") <= ks[-1])).with_columns(
        ix.cast(pl.Int32).alias("ix"))


def _cumulative(per_bucket: pl.LazyFrame, keys: list, ks, aggs: list) -> pl.LazyFrame:
    """Per (keys, k): ``aggs`` over the buckets up to k (``per_bucket`` holds keys, ix and the sums)."""
    cut = pl.LazyFrame({"k": sorted(ks), "kx": range(len(ks))}, schema={"k": pl.Int64, "kx": pl.Int32})
    return per_bucket.join(cut, how="cross").filter(pl.col("ix") <= pl.col("kx")).group_by(*keys, "k").agg(aggs)


def _users(recs: pl.LazyFrame, ks) -> pl.LazyFrame:
    """(user_id, k) for every user of ``recs``: a user with items has one at rank 1 (canonical ranks),
    a user with an empty list one null-item row; no pass over every row."""
    users = recs.filter(pl.col(ITEM).is_null() | (pl.col("rank") == 1)).select(USER).unique()
    return users.join(pl.LazyFrame({"k": list(ks)}, schema={"k": pl.Int64}), how="cross")


def _ids(recs: pl.LazyFrame) -> tuple:
    """(user dtype, item dtype) of the recommendations, for the empty stand-ins of missing inputs."""
    schema = recs.collect_schema()
    return schema[USER], (pl.Int64 if schema[ITEM] == pl.Null else schema[ITEM])


def _popularity(side: SideInputs, item_dtype=pl.Int64) -> tuple[pl.LazyFrame, dict]:
    """Per train item: pop_users, pop_rows; totals: users (U_T), rows (#train)."""
    if side.train is None:
        empty = pl.LazyFrame(schema={ITEM: item_dtype, "pop_users": pl.Int64, "pop_rows": pl.Int64})
        return empty, {"users": 0, "rows": 0}
    return side.popularity.lazy(), {"users": side.train[USER].n_unique(), "rows": side.train.height}


def _tail_items(pop: pl.LazyFrame, conv: Convention) -> pl.LazyFrame:
    """(item_id, is_tail) for the train items, by the long_tail rule."""
    p = pl.col("pop_users" if conv.popularity == "users" else "pop_rows").cast(pl.Float64)
    if conv.long_tail == "head_share":
        ordered = pop.with_columns(p.alias("p")).sort(["p", ITEM], descending=[True, False])
        before = pl.col("p").cum_sum() - pl.col("p")
        return ordered.select(ITEM, (before >= conv.long_tail_ratio * pl.col("p").sum()).alias("is_tail"))
    if conv.long_tail_ratio > 1:
        return pop.select(ITEM, (p <= conv.long_tail_ratio).alias("is_tail"))
    ordered = pop.with_columns(p.alias("p")).sort(["p", ITEM])
    n_tail = pl.max_horizontal((conv.long_tail_ratio * pl.len().cast(pl.Float64)).floor(), pl.lit(1.0))
    return ordered.select(ITEM, ((pl.int_range(pl.len()) + 1).cast(pl.Float64) <= n_tail).alias("is_tail"))


def _catalog(expo: pl.LazyFrame, side: SideInputs, conv: Convention, ks) -> pl.LazyFrame:
    """(k, item_id) of C at each k (``expo``: the exposure, :func:`exposure`)."""
    if conv.catalog == "recommended":
        return expo.select("k", ITEM)
    if conv.catalog == "items" and side.items is not None:
        base = side.items.lazy()
    elif side.train is not None:
        base = side.popularity.lazy().select(ITEM)
    else:
        base = pl.LazyFrame(schema={ITEM: expo.collect_schema()[ITEM]})
    return base.join(pl.LazyFrame({"k": list(ks)}, schema={"k": pl.Int64}), how="cross")


def _relevant(truth, conv: Convention, ids: tuple) -> pl.LazyFrame:
    if truth is None:
        return pl.LazyFrame(schema={USER: ids[0], ITEM: ids[1], "rel": pl.Float64})
    t = truth.lazy() if isinstance(truth, pl.DataFrame) else truth
    ok = (pl.col("relevance") > 0) & (pl.col("relevance") >= conv.relevance_threshold)
    return t.filter(pl.col(ITEM).is_not_null() & ok).select(USER, ITEM, pl.lit(1.0).alias("rel")).unique()


_LIST_SUMS = ("novelty", "arp", "long_tail_share", "serendipity")  # from one pass of sums per (user, bucket)
# float terms are summed as exact decimals (sql/beyond_user.sql: the same terms in integer units of 1e-18):
# the same sum in any order, so the values do not depend on how the threads split the rows
EXACT = pl.Decimal(38, 18)


def polars_user(recs: pl.LazyFrame, side: SideInputs, ks, conv: Convention, truth=None,
                names=USER_COLUMNS, expo: pl.DataFrame | None = None) -> pl.LazyFrame:
    """(user_id, k, n_items, novelty, arp, long_tail_share, ild, serendipity): one row per user of
    ``recs`` and k; NaN = undefined. ild is NaN without features, serendipity 0 without truth. Only
    the metrics in ``names`` are computed: the others are null (n_items too without one of _LIST_SUMS).
    ``expo``: the :func:`exposure` frame when already computed."""
    recs = recs.lazy()
    out = _users(recs, ks)
    if set(names) & set(_LIST_SUMS):
        out = _list_values(out, recs, side, ks, conv, truth, expo)
    else:
        out = out.with_columns(pl.lit(None, pl.Int64).alias("n_items"),
                               *(pl.lit(None, pl.Float64).alias(c) for c in _LIST_SUMS))
    if "ild" in names:
        out = _with_ild(out, recs, side, ks, conv)
    else:
        out = out.with_columns(pl.lit(None, pl.Float64).alias("ild"))
    return out.select(USER, "k", "n_items", *[pl.col(c).cast(pl.Float64).fill_nan(None) for c in USER_COLUMNS]) \
        .sort("k", USER)


def _list_values(users: pl.LazyFrame, recs: pl.LazyFrame, side: SideInputs, ks, conv: Convention,
                 truth, expo: pl.DataFrame | None = None) -> pl.LazyFrame:
    """``users`` (user_id, k) with n_items and _LIST_SUMS: sums per (user, rank bucket), added up per k."""
    ids = _ids(recs)
    pop, totals = _popularity(side, ids[1])
    pcol = "pop_users" if conv.popularity == "users" else "pop_rows"
    acol = "pop_users" if conv.arp_popularity == "users" else "pop_rows"
    total = float(totals[conv.popularity])
    log_den = math.log(total) if conv.novelty_normalize == "log_users" else math.log(conv.info_log_base)
    undefined = conv.novelty_normalize == "log_users" and total <= 1  # log U_T = 0
    if undefined:
        log_den = 1.0  # finite terms for the sums; novelty is NaN below
    cold = pl.col(pcol).is_null()
    info = -((pl.max_horizontal(pl.col(pcol).fill_null(0), pl.lit(1)).cast(pl.Float64) / (total or 1.0)).log()) / log_den
    if conv.cold_items == "zero_novelty":
        info = pl.when(cold).then(0.0).otherwise(info)
    counted = (~cold) if conv.cold_items == "drop" else pl.lit(True)
    tail = _tail_items(pop, conv)
    cold_tail = conv.long_tail == "head_share"  # a cold item is outside the short head
    spop = pl.col("pop_users" if conv.serendipity_popularity == "users" else "pop_rows")
    poprank = pop.select(ITEM, spop.rank("dense", descending=True).cast(pl.Float64).alias("poprank"))
    item_values = pop.join(tail, on=ITEM, how="left").join(poprank, on=ITEM, how="left")  # train items
    rows = _buckets(recs, ks).join(item_values, on=ITEM, how="left").with_columns(
        pl.when(counted).then(info).cast(EXACT).alias("info"),
        pl.when(counted).then(pl.col(acol).fill_null(0).cast(pl.Float64)).alias("apop"),
        pl.col("is_tail").fill_null(cold_tail).cast(pl.Float64).alias("tail"),
        counted.cast(pl.Int64).alias("counted"))
    per_bucket = rows.group_by(USER, "ix").agg(
        pl.len().cast(pl.Int64).alias("n_items"), pl.col("counted").sum().alias("n_counted"),
        pl.col("info").sum().alias("info_sum"), pl.col("apop").sum().alias("apop_sum"),
        pl.col("tail").sum().alias("tail_sum"))
    per = _cumulative(per_bucket, [USER], ks, [pl.col(c).sum() for c in ("n_items", "n_counted", "info_sum",
                                                                        "apop_sum", "tail_sum")])
    # serendipity: only the list rows with a relevant label count (the term is 0 elsewhere; without
    # ground truth no row has one, and the catalog size N, an exposure pass, is not needed)
    if truth is None:
        seren = pl.LazyFrame(schema={USER: ids[0], "k": pl.Int64, "seren_sum": EXACT})
    else:
        expo = exposure(recs, ks) if expo is None else expo.lazy()
        catalog_n = _catalog(expo, side, conv, ks).group_by("k").agg(pl.len().cast(pl.Float64).alias("N"))
        relevant = _top(recs.join(_relevant(truth, conv, ids), on=[USER, ITEM], how="inner"), ks)
        seren = (relevant.join(poprank, on=ITEM, how="left").join(catalog_n, on="k", how="left")
                 .group_by(USER, "k").agg((pl.max_horizontal(
                     (pl.col("N") + 1 - pl.col("rank")) / pl.col("N")
                     - ((pl.col("N") + 1 - pl.col("poprank")) / pl.col("N")).fill_null(0.0), pl.lit(0.0))
                     * pl.col("rel")).cast(EXACT).sum().alias("seren_sum")))
    out = (users.join(per, on=[USER, "k"], how="left").join(seren, on=[USER, "k"], how="left")
           .with_columns(pl.col("n_items", "n_counted").fill_null(0),
                         pl.col("info_sum", "apop_sum", "tail_sum", "seren_sum").cast(pl.Float64).fill_null(0.0)))
    kf = pl.col("k").cast(pl.Float64)
    if conv.list_denominator == "k":
        den_all = den_counted = kf
    else:
        den_all = pl.when(pl.col("n_items") > 0).then(pl.col("n_items").cast(pl.Float64))
        den_counted = pl.when(pl.col("n_counted") > 0).then(pl.col("n_counted").cast(pl.Float64))
    return out.with_columns(
        (pl.lit(float("nan")) if undefined else pl.col("info_sum") / den_counted).alias("novelty"),
        (pl.col("apop_sum") / den_counted).alias("arp"),
        (pl.col("tail_sum") / den_all).alias("long_tail_share"),
        (pl.col("seren_sum") / den_all).alias("serendipity"),
    )


def _with_ild(out: pl.LazyFrame, recs: pl.LazyFrame, side: SideInputs, ks, conv: Convention) -> pl.LazyFrame:
    """``out`` (user_id, k, ...) with ild = (pairs - (q - m) / 2) / (pairs or m), from :func:`_ild_polars`."""
    out = out.join(_ild_polars(_top(recs, ks), side, conv), on=[USER, "k"], how="left")
    m, q = pl.col("m").fill_null(0).cast(pl.Float64), pl.col("q").fill_null(0.0)
    pairs = m * (m - 1) / 2
    dist = (pairs - (q - m) / 2).clip(0.0, 2 * pairs)  # sum over pairs of 1 - cos (in [0, 2] each: rounding)
    ild = dist / (pairs if conv.ild_denominator == "pairs" else m)
    short = pl.lit(0.0) if conv.ild_short == "zero" else pl.lit(None, pl.Float64)
    no_features = not side.has_features
    return out.with_columns((pl.lit(None, pl.Float64) if no_features else pl.when(m < 2).then(short).otherwise(ild))
                            .alias("ild"))


def _ild_polars(top: pl.LazyFrame, side: SideInputs, conv: Convention) -> pl.LazyFrame:
    """(user_id, k, m, q): m = items of L_u with a nonzero feature vector, q = |sum of their unit
    vectors|^2 (a sparse product: lists x unit item vectors; no pairs)."""
    from scipy import sparse

    schema = {USER: top.collect_schema()[USER], "k": pl.Int64, "m": pl.Int64, "q": pl.Float64}
    if not side.has_features:
        return pl.LazyFrame(schema=schema)
    if side.embeddings is not None:  # dense vectors: lists x unit vectors, a sparse x dense product
        ids, matrix = side.embeddings
        peak = np.abs(matrix).max(axis=1) if matrix.shape[1] else np.zeros(len(matrix))
        keep = peak > 0  # a zero vector has no direction: the item counts as featureless
        if not keep.all():
            ids, matrix, peak = ids.filter(pl.Series(keep)), matrix[keep], peak[keep]
        unit = matrix / peak[:, None]  # components in [-1, 1]: the squared norm neither overflows nor underflows
        unit /= np.sqrt(np.einsum("ij,ij->i", unit, unit))[:, None]
        item_ix = pl.DataFrame({ITEM: ids}).with_row_index("ii")
        return _ild_sums(top, item_ix, unit, schema)
    f = side.features.lazy()
    # each vector over its largest |value| first (as sql/beyond_user.sql): no overflow or underflow in sq
    peak = pl.col(VALUE).abs().max().over(ITEM)
    f = (f.filter(peak > 0).with_columns((pl.col(VALUE) / peak).alias("x"))
         .with_columns((pl.col("x") ** 2).sum().over(ITEM).alias("sq"))
         .with_columns((pl.col("x") / pl.col("sq").sqrt()).alias("u")))
    # collected once: a lazy unique() may number the ids differently each time it runs
    item_ix = f.select(ITEM).unique().with_row_index("ii").collect()
    feat_ix = f.select(FEATURE).unique().with_row_index("fi").collect()
    f = f.join(item_ix.lazy(), on=ITEM).join(feat_ix.lazy(), on=FEATURE).select("ii", "fi", "u").collect()
    n_items, n_feats = item_ix.height, feat_ix.height
    U = sparse.csr_matrix((f["u"].to_numpy(), (f["ii"].to_numpy(), f["fi"].to_numpy())), shape=(n_items, n_feats))
    # dense item vectors (long rows of embeddings): a fast sparse x dense product
    return _ild_sums(top, item_ix, U.toarray() if n_items * n_feats <= 50_000_000 else U, schema)


def _ild_sums(top: pl.LazyFrame, item_ix: pl.DataFrame, unit, schema: dict) -> pl.LazyFrame:
    """(user_id, k, m, q) from the unit item vectors ``unit`` (row ii of item_ix; dense or sparse):
    S = lists x unit vectors, q = |S row|^2."""
    from scipy import sparse

    lists = top.select(USER, "k", ITEM).join(item_ix.lazy(), on=ITEM, how="inner")
    # one aggregation: each (user, k) row of A lists its items' rows ii, so A is built as CSR directly
    groups = lists.group_by(USER, "k").agg(pl.col("ii").sort()).with_columns(  # a fixed order of the terms
        pl.col("ii").list.len().cast(pl.Int64).alias("m")).collect()
    if groups.height == 0:
        return pl.LazyFrame(schema=schema)
    indptr = np.concatenate([[0], np.cumsum(groups["m"].to_numpy())])
    indices = groups["ii"].explode().to_numpy()
    A = sparse.csr_matrix((np.ones(len(indices)), indices, indptr), shape=(groups.height, item_ix.height))
    S = A @ unit
    q = np.einsum("ij,ij->i", S, S) if isinstance(S, np.ndarray) else np.asarray(S.multiply(S).sum(axis=1)).ravel()
    return groups.with_columns(pl.Series("q", q, pl.Float64)).select(USER, "k", "m", "q").lazy()


def exposure(recs: pl.LazyFrame, ks) -> pl.LazyFrame:
    """(k, item_id, exposure): c(i), the users whose top k holds i (counted per rank bucket)."""
    per_bucket = _buckets(recs.lazy(), ks).group_by("ix", ITEM).agg(pl.len().cast(pl.Int64).alias("n"))
    return _cumulative(per_bucket, [ITEM], ks, [pl.col("n").sum().alias("exposure")]).select("k", ITEM, "exposure")


def polars_catalog(recs: pl.LazyFrame, side: SideInputs, ks, conv: Convention,
                   expo: pl.DataFrame | None = None) -> pl.DataFrame:
    """(metric, k, value, n_users) for item_coverage, gini, exposure_entropy, personalization,
    score_entropy (NaN without a score column); n_users = users with n_u > 0. ``expo``: the
    :func:`exposure` frame when already computed."""
    recs = recs.lazy()
    expo = (exposure(recs, ks).collect() if expo is None else expo).lazy()  # read three times below
    cat = _catalog(expo, side, conv, ks).with_columns(pl.lit(True).alias("in_c"))
    both = expo.join(cat, on=["k", ITEM], how="full", coalesce=True).with_columns(
        pl.col("exposure").fill_null(0), pl.col("in_c").fill_null(False))
    per_k = pl.LazyFrame({"k": list(ks)}, schema={"k": pl.Int64})
    # a user with items has one at rank 1, inside every cutoff (canonical ranks): U = those users;
    # sum n_u = sum c
    n_lists = recs.filter((pl.col("rank") == 1) & pl.col(ITEM).is_not_null()).select(pl.len()).collect().item()
    users = expo.group_by("k").agg(pl.lit(float(n_lists)).alias("U"), pl.col("exposure").sum().cast(pl.Float64)
                                   .alias("sum_n"))
    pad = float(conv.catalog_padding)
    c = pl.col("exposure").cast(pl.Float64)
    stats = both.group_by("k").agg(
        pl.col("in_c").sum().cast(pl.Float64).alias("n_c"),
        ((c > 0) & pl.col("in_c")).sum().cast(pl.Float64).alias("covered_in"),
        (c > 0).sum().cast(pl.Float64).alias("E"),
        pl.len().cast(pl.Float64).alias("N_all"),
        c.sum().alias("C"),
        (pl.col("exposure").cast(pl.Int64) ** 2).sum().cast(pl.Float64).alias("sum_c2"),  # exact sums (any order)
        pl.when(c > 0).then(c * c.log()).otherwise(0.0).cast(EXACT).sum().cast(pl.Float64).alias("clogc"),
    )
    # gini numerator sum_r (2 (Z + r) - N - 1) c_(r) over the exposed items ascending (ties: equal c,
    # any order gives the same sum); r and c_(r) come from a sort of the exposed items per k
    ranked = expo.sort("k", "exposure").with_columns(
        (pl.int_range(pl.len()).over("k") + 1).cast(pl.Int64).alias("r"))
    gsum = ranked.group_by("k").agg((pl.col("r") * pl.col("exposure")).sum().cast(pl.Float64)
                                    .alias("sum_rc"))
    sc = _score_entropy_polars(recs, ks)
    s = (per_k.join(stats, on="k", how="left").join(users, on="k", how="left").join(gsum, on="k", how="left")
         .join(sc, on="k", how="left").with_columns(pl.col("U", "sum_n", "C", "sum_rc", "E").fill_null(0.0))
         .collect())
    rows = []
    for r in s.iter_rows(named=True):
        rows += _catalog_values(r, conv, pad)
    return pl.DataFrame(rows, schema={"metric": pl.String, "k": pl.Int64, "value": pl.Float64, "n_users": pl.Int64},
                        orient="row").with_columns(pl.col("value").fill_nan(None)).sort("metric", "k")


def _catalog_values(r: dict, conv: Convention, pad: float) -> list[tuple]:
    """The catalog formulas, from per-k aggregates (shared by no SQL: sql/beyond_catalog.sql has its own)."""
    nan = float("nan")
    k, U, C, E = r["k"], r["U"], r["C"], r["E"]
    n_c = (r["n_c"] or 0.0) + pad
    covered = (r["covered_in"] or 0.0) if conv.catalog_outside == "ignore" else E
    coverage = {"count": covered, "ratio": covered / n_c if n_c else nan,
                "percent": 100.0 * covered / n_c if n_c else nan}[conv.coverage_scale]
    if conv.gini == "recommended_n1":
        N, den = E, E - 1
    else:
        N = (r["N_all"] or 0.0) + pad
        den = N if conv.gini == "catalog" else N - 1
    Z = N - E
    num = 2 * (Z * C + r["sum_rc"]) - (N + 1) * C  # sum_r (2 (Z + r) - N - 1) c_(r)
    gini = num / (den * C) if den > 0 and C > 0 else nan
    if conv.gini == "catalog_n1_complement":
        gini = 1 - gini
    entropy = (math.log(C) - r["clogc"] / C) / math.log(conv.info_log_base) if C > 0 else nan
    if conv.entropy_normalize == "distinct":
        entropy = entropy / E if E > 0 else nan
    sub = U * k if conv.personalization_lists == "full" else r["sum_n"]
    pers = 1 - (r["sum_c2"] - sub) / (k * U * (U - 1)) if U >= 2 else nan
    score = r.get("score_entropy")
    n = int(U)
    return [("item_coverage", k, coverage, n), ("gini", k, gini, n), ("exposure_entropy", k, entropy, n),
            ("personalization", k, pers, n), ("score_entropy", k, nan if score is None else score, n)]


def _score_entropy_polars(recs: pl.LazyFrame, ks) -> pl.LazyFrame:
    if "score" not in recs.collect_schema():
        return pl.LazyFrame(schema={"k": pl.Int64, "score_entropy": pl.Float64})
    s = pl.col("score").cast(pl.Float64)
    # d = s - max(s) from the halves, at least -2000 (as sql/beyond_catalog.sql): no overflow, d * exp(d) = 0
    half = s * 0.5 - (s * 0.5).max().over("k")
    d = _top(recs.filter(pl.col("score").is_not_null()), ks).with_columns(
        (half.clip(lower_bound=-1000.0) * 2.0).alias("d"))
    z = pl.col("d").exp().sum()
    return d.group_by("k").agg((z.log() - (pl.col("d").exp() * pl.col("d")).sum() / z).alias("score_entropy"))


def per_item(recs: pl.LazyFrame, side: SideInputs, ks, conv: Convention,
             expo: pl.DataFrame | None = None) -> pl.DataFrame:
    """(item_id, k, exposure, popularity) over C ∪ the recommended items; popularity by the
    ``popularity`` knob (0 for an item with no train row)."""
    recs = recs.lazy()
    pop, _ = _popularity(side, _ids(recs)[1])
    expo = (exposure(recs, ks).collect() if expo is None else expo).lazy()
    cat = _catalog(expo, side, conv, ks).select("k", ITEM)
    both = expo.join(cat, on=["k", ITEM], how="full", coalesce=True)
    pcol = "pop_users" if conv.popularity == "users" else "pop_rows"
    return (both.join(pop.select(ITEM, pl.col(pcol).alias("popularity")), on=ITEM, how="left")
            .select(ITEM, "k", pl.col("exposure").fill_null(0), pl.col("popularity").fill_null(0))
            .sort("k", ITEM).collect())


# --------------------------------------------------------------------------------------------------
# DuckDB (the shipped SQL)


def register(con, recs, side: SideInputs, ks, truth=None, source: str | None = None,
             empty: pl.DataFrame | None = None) -> None:
    """Register the relations sql/beyond_*.sql read: recommendations(user_id, rank, item_id, score),
    train, items, item_features, ground_truth, cutoffs (missing side inputs become empty tables), then
    compute the :data:`STAGES` once. ``source``: a DuckDB SELECT of the canonical recommendations
    (``Prepared.sources``), scanned by DuckDB instead of ``recs``, with the empty-list rows ``empty``
    (user_id, rank, item_id) added."""
    if source is not None:  # a validated Parquet file, scanned by DuckDB itself
        top = int(max(ks))
        rows = f"SELECT s.user_id, s.rank, s.item_id FROM ({source}) AS s"
        longest = con.execute(f"SELECT MAX(s.rank) FROM ({source}) AS s").fetchall()[0][0]  # the file's statistics
        if longest is not None and longest > top:
            # rows past max(k): read the file once and keep only the top max(k) of each list. Without
            # them every query scans the file (1M lists x 100 at k = 100: 2.5 GB less memory, ~0.6 s
            # faster than copying all 100M rows into a table; at k = 10 the table is faster)
            con.execute(f"CREATE OR REPLACE TEMP TABLE recommendation_rows AS {rows} WHERE s.rank <= {top}")
            rows = "SELECT t.user_id, t.rank, t.item_id FROM recommendation_rows AS t"
        if empty is not None and empty.height:
            con.register("empty_lists", empty)
            rows += " UNION ALL SELECT e.user_id, e.rank, e.item_id FROM empty_lists AS e"
        # no score in a file's scan: a constant in a view, not a stored column of NULLs
        con.execute("CREATE OR REPLACE TEMP VIEW recommendations AS SELECT r.user_id, r.rank, r.item_id, "
                    f"CAST(NULL AS DOUBLE) AS score FROM ({rows}) AS r")
        schema = recs.collect_schema()  # the types the source casts to
        uid, iid = schema[USER], schema[ITEM]
    else:
        # only the top max(k) of a list counts; a user's empty-list row (null rank) stays
        top = pl.col("rank").is_null() | (pl.col("rank") <= max(ks))
        recs = recs.lazy().filter(top).collect()
        if "score" not in recs.columns:
            recs = recs.with_columns(pl.lit(None, pl.Float64).alias("score"))
        uid, iid = recs.schema[USER], recs.schema[ITEM]
        con.register("recommendations", recs.select(USER, "rank", ITEM, pl.col("score").cast(pl.Float64)))
    iid = pl.Int64 if iid == pl.Null else iid
    con.register("train", side.train if side.train is not None else pl.DataFrame(schema={USER: uid, ITEM: iid}))
    con.register("items", side.items if side.items is not None else pl.DataFrame(schema={ITEM: iid}))
    con.register("item_features", side.long_features if side.has_features else
                 pl.DataFrame(schema={ITEM: iid, FEATURE: pl.String, VALUE: pl.Float64}))
    truth = truth.lazy().collect() if isinstance(truth, pl.LazyFrame) else truth
    con.register("ground_truth", truth.select(USER, ITEM, "relevance") if truth is not None else
                 pl.DataFrame(schema={USER: uid, ITEM: iid, "relevance": pl.Float64}))
    con.register("cutoffs", pl.DataFrame({"k": list(ks)}, schema={"k": pl.Int64}))
    # DuckDB would pre-aggregate the item side of the per-user join and merge aggregate states per list
    # row: 3.6 s of CPU at 10M rows against about 1 s for plain sums
    con.execute("SET disabled_optimizers = 'partial_aggregate_pushdown'")
    for name, table in STAGES.items():
        # exposure: (bucket, item) keys in a range of up to 2^24 are counted in an array, not a hash table
        # (2-3x faster; slower for the per-user sums, so only here)
        con.execute(f"SET perfect_ht_threshold = {24 if name == 'beyond_exposure' else 12}")
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {_sql_files.read(name)}")
    con.execute("RESET perfect_ht_threshold")


def _run(con, name: str, conv: Convention) -> pl.DataFrame:
    sql = _sql_files.read(name)
    return con.sql(sql, params=_sql_files.bind(sql, conv)).pl()


def duckdb_user(con, conv: Convention) -> pl.DataFrame:
    """sql/beyond_user.sql over the registered relations (see :func:`register`)."""
    return _run(con, "beyond_user", conv).sort("k", USER)


def duckdb_catalog(con, conv: Convention) -> pl.DataFrame:
    """sql/beyond_catalog.sql over the registered relations."""
    return _run(con, "beyond_catalog", conv).sort("metric", "k")


def duckdb_per_item(con, conv: Convention) -> pl.DataFrame:
    """sql/beyond_items.sql over the registered relations."""
    return _run(con, "beyond_items", conv).sort("k", ITEM)


# --------------------------------------------------------------------------------------------------
# what evaluate() asks for

_UNDEFINED = {"novelty": "no recommended item at k", "arp": "no recommended item at k",
              "long_tail_share": "no recommended item at k", "serendipity": "no recommended item at k",
              "ild": "fewer than 2 items with features at k"}


def with_scores(prep, recommendations, columns):
    """``prep`` (a :class:`rankwise.inputs.normalize.Prepared`) whose ``recs`` carry the recommendations' score
    column, for score_entropy: each canonical (user, item) row gets the score of the input row the
    input rules keep (the best-ranked occurrence: by rank when there is a rank column, else by score
    descending). A missing score column is a ParameterError naming it; null, NaN or non-numeric
    scores are typed errors with the rows."""
    import dataclasses

    from rankwise.inputs.normalize import RANK, SCORE, to_lazyframe
    from rankwise.errors import InvalidScoreError

    raw = to_lazyframe(recommendations, "recommendations", columns)
    schema = raw.collect_schema()
    c = columns
    if c.score not in schema or isinstance(schema.get(c.item), pl.List):
        raise ParameterError(
            f"Metric 'score_entropy' needs a score column {c.score!r} in long recommendations; they have "
            f"columns {list(schema)}.",
            hint="Pass the recommendations with one score per (user, item) row, naming it with score_col=, "
                 "or leave score_entropy out of metrics.")
    if not schema[c.score].is_numeric():
        raise InvalidScoreError(f"recommendations: {c.score!r} must be numeric for score_entropy, got "
                                f"{schema[c.score]}.", rows=raw.head(_SHOW).collect(),
                                hint=f"Cast it, e.g. pl.col({c.score!r}).cast(pl.Float64).")
    order = [pl.col(c.rank)] if c.rank in schema else [-pl.col(c.score)]
    scores = (raw.filter(pl.col(c.item).is_not_null()).sort([pl.col(c.user), *order], maintain_order=True)
              .select(pl.col(c.user).alias(USER), pl.col(c.item).alias(ITEM),
                      pl.col(c.score).cast(pl.Float64).alias(SCORE))
              .unique([USER, ITEM], keep="first", maintain_order=True).collect())
    bad = scores.filter(pl.col(SCORE).is_null() | ~pl.col(SCORE).is_finite())
    if bad.height:
        raise InvalidScoreError(f"recommendations: {bad.height} values of {c.score!r} are null, NaN or infinite "
                                "(score_entropy pools the scores).", rows=bad.head(_SHOW),
                                hint="Drop or fill those rows, or leave score_entropy out of metrics.")
    recs = prep.recs.lazy()
    key = recs.collect_schema()
    scores = scores.lazy().with_columns(pl.col(USER).cast(key[USER]), pl.col(ITEM).cast(key[ITEM]))
    recs = recs.join(scores, on=[USER, ITEM], how="left", maintain_order="left").select(USER, RANK, ITEM, SCORE)
    return dataclasses.replace(prep, recs=recs)  # the accuracy engines ignore the extra column


def check_inputs(names, side: SideInputs, conv: Convention | None, has_truth: bool) -> None:
    """A metric whose input was not given is a ParameterError naming the argument (``conv`` None: only
    the inputs a metric needs under every convention; the catalog's source depends on it)."""
    given = {"train": side.train is not None and side.train.height > 0, "items": side.items is not None,
             "item_features": side.has_features, "ground_truth": has_truth}
    for name in names:
        needs = list(NEEDS.get(name, ()))
        if name in ("item_coverage", "gini") and conv is not None and conv.catalog != "recommended" and not (
                given["train"] or (conv.catalog == "items" and given["items"])):
            needs.append("items or train" if conv.catalog == "items" else "train")  # the catalog
        missing = [n.split(" or ") for n in needs if " or " in n or not given[n]]
        if missing:
            flags = {"ground_truth": "the TRUTH argument"}  # (a train of no rows counts as not given)
            raise ParameterError(
                f"Metric {name!r} needs {' and '.join(' or '.join(m) for m in missing)}, which "
                f"{'was' if len(missing) == 1 else 'were'} not given{' (or empty)' if ['train'] in missing else ''}.",
                hint=f"Pass evaluate(..., {', '.join(' or '.join(f'{n}=...' for n in m) for m in missing)}) (CLI: "
                     f"{', '.join(' or '.join(flags.get(n, '--' + n.replace('_', '-')) for n in m) for m in missing)}).")


def run(recs: pl.LazyFrame, truth, names, side: SideInputs, ks, conv: Convention, engine: str,
        source: str | None = None, script_engine=None, memory_limit: int | None = None,
        evaluated: pl.Series | None = None):
    """The beyond-accuracy values of one run: (user rows (user_id, k, n_items, *user metrics), catalog
    rows (metric, k, value, n_users), per_item (item_id, k, exposure, popularity)), by the shipped SQL
    in DuckDB (engine="duckdb"; ``source``: see :func:`register`), the rendered script in PostgreSQL
    or Spark (engine="postgres" or "spark"; ``script_engine``: that engine, which runs it), or the Polars
    expressions (every other engine). ``memory_limit`` (bytes) caps DuckDB's memory as in the accuracy
    engine: beyond it DuckDB spills to a temporary directory (removed afterwards). ``evaluated``: the
    user rows are those users' (the accuracy users of the convention), one without recommendations
    being a user with an empty list; None: the recommendations' users. The catalog rows read every list."""
    truth = truth if "serendipity" in names else None
    recs, truth = _text_items(recs), None if truth is None else _text_items(truth)
    # only the DuckDB engine scans the file itself, and not for scores (joined in Python by with_scores)
    if "score" in recs.collect_schema() or engine != "duckdb":
        source = None
    if _side_ids_overflow(side, recs.collect_schema()[ITEM]):  # e.g. Int16 lists, a train item past 32767
        recs, source = recs.lazy().with_columns(pl.col(ITEM).cast(pl.Int64)), None
        truth = None if truth is None else truth.lazy().with_columns(pl.col(ITEM).cast(pl.Int64))
    empty = None if evaluated is None else _empty_lists(recs, evaluated)
    if empty is not None and empty.height and source is None:  # (a file's scan gets them in register())
        recs = pl.concat([recs.lazy(), empty.lazy()], how="diagonal")
    side = with_item_type(side, recs.collect_schema()[ITEM])
    want_catalog = bool(set(names) & set(CATALOG_METRICS))  # else no catalog query (its rows would be dropped)
    if engine in ("postgres", "spark"):  # the engine runs the rendered script (script_inputs, script, typed)
        users, catalog, items = script_engine.run_beyond_script(recs, truth, names, side, ks, conv)
    elif engine == "duckdb":
        import tempfile
        from contextlib import ExitStack

        import duckdb

        from rankwise import _duckdb_connect
        from rankwise.errors import RankwiseError

        with ExitStack() as stack:
            spill = None if memory_limit is None else stack.enter_context(
                tempfile.TemporaryDirectory(prefix="rankwise-duckdb-"))  # removed after the connection closes
            con = stack.enter_context(_duckdb_connect.connect())
            if memory_limit is not None:
                con.execute("SET memory_limit = ?", [f"{memory_limit}B"])
                con.execute("SET temp_directory = ?", [spill])
            try:
                register(con, recs, side, ks, truth, source, empty)
                users = duckdb_user(con, conv)
                catalog = duckdb_catalog(con, conv) if want_catalog else NO_CATALOG
                items = duckdb_per_item(con, conv)
            except duckdb.OutOfMemoryException as error:
                raise RankwiseError(f"DuckDB ran out of memory: {str(error).splitlines()[0]}",
                                    hint="Raise memory_limit, or free memory.") from error
    else:
        # every pass below reads only the top max(k) of each list: read the input once, keep those rows
        recs = recs.lazy().filter(pl.col("rank").is_null() | (pl.col("rank") <= max(ks))).collect().lazy()
        expo = exposure(recs, ks).collect()
        users = polars_user(recs, side, ks, conv, truth=truth, names=names, expo=expo).collect()
        catalog = polars_catalog(recs, side, ks, conv, expo) if want_catalog else NO_CATALOG
        items = per_item(recs, side, ks, conv, expo)
    wanted = [n for n in names if n in USER_COLUMNS]
    rows = users.select(USER, pl.col("k").cast(pl.Int64),
                        *[pl.col(n).cast(pl.Float64).fill_null(float("nan")) for n in wanted])
    if evaluated is not None:  # those users only (the others' lists still count in the catalog rows)
        rows = rows.filter(pl.col(USER).is_in(evaluated.cast(rows.schema[USER]).implode()))
    catalog = catalog.filter(pl.col("metric").is_in([n for n in names if n not in USER_COLUMNS]))
    return rows, catalog, items


def _side_ids_overflow(side: SideInputs, item_dtype) -> bool:
    """Whether a side input holds integer item ids outside the recommendations' narrower integer type
    (items never recommended, but they count in popularity and the catalog): then the recommendations'
    ids are widened to Int64, as the accuracy path widens them to the ground truth's."""
    if not item_dtype.is_integer() or item_dtype in (pl.Int64, pl.UInt64):
        return False
    frames = [side.train, side.items, side.features] + ([side.embeddings[0].to_frame(ITEM)] if side.embeddings else [])
    return any(f is not None and f.schema[ITEM].is_integer() and
               f[ITEM].cast(item_dtype, strict=False).null_count() > f[ITEM].null_count() for f in frames)


def _empty_lists(recs: pl.LazyFrame, users: pl.Series) -> pl.DataFrame:
    """An empty-list row (user_id, rank, item_id: null) for each of ``users`` without recommendations."""
    schema = recs.collect_schema()
    missing = users.cast(schema[USER]).unique().to_frame(USER).lazy().join(
        recs.select(USER).unique(), on=USER, how="anti")
    return missing.select(USER, pl.lit(None, schema["rank"]).alias("rank"),
                          pl.lit(None, schema[ITEM]).alias(ITEM)).collect()


def _text_items(frame):
    """Categorical or Enum item ids as String, the type of the side inputs' text ids: Polars joins a
    categorical column with no other type (DuckDB compares them as text)."""
    if isinstance(frame.collect_schema()[ITEM], (pl.Categorical, pl.Enum)):
        return frame.with_columns(pl.col(ITEM).cast(pl.String))
    return frame


def script_inputs(recs: pl.LazyFrame, truth, side: SideInputs, prefix: str):
    """({table name: canonical frame}, tables argument of render_beyond, (user, item) dtypes) for
    running the rendered script over the canonical inputs (train given as an empty frame if missing)."""
    recs = recs.lazy().collect()
    ids = _ids(recs.lazy())
    frames = {"recommendations": recs.select(USER, "rank", ITEM, *(["score"] if "score" in recs.columns else [])),
              "train": side.train if side.train is not None else pl.DataFrame(schema={USER: ids[0], ITEM: ids[1]}),
              "items": side.items, "item_features": side.long_features,
              "ground_truth": None if truth is None else truth.lazy().collect().select(USER, ITEM, "relevance")}
    tables = {name: f"{prefix}in_{name}" for name, frame in frames.items() if frame is not None}
    return {tables[name]: frame for name, frame in frames.items() if frame is not None}, tables, ids


def script(tables: dict, names, ks, conv: Convention, dialect: str, prefix: str):
    """The script of the metrics ``names`` over the canonical frames (ranks 1..n; for score_entropy
    their joined score column too, see :func:`with_scores`): the input rules have run, min_score among
    them (the script's SQL gap), so the script renders without it."""
    from rankwise.sqlgen.beyond import render_beyond

    return render_beyond(list(names), list(ks), conv.replace(min_score=None), dialect, tables, user_col=USER,
                         item_col=ITEM, prefix=prefix, keep_score="score" if "score_entropy" in names else None)


def typed(users: pl.DataFrame, catalog: pl.DataFrame, items: pl.DataFrame, ids: tuple):
    users = users.with_columns(pl.col(USER).cast(ids[0]), pl.col("k", "n_items").cast(pl.Int64))
    catalog = catalog.with_columns(pl.col("k", "n_users").cast(pl.Int64), pl.col("value").cast(pl.Float64))
    items = items.with_columns(pl.col(ITEM).cast(ids[1]), pl.col("k", "exposure", "popularity").cast(pl.Int64))
    return users.sort("k", USER), catalog.sort("metric", "k"), items.sort("k", ITEM)


def summary_rows(users: pl.DataFrame, catalog: pl.DataFrame, names) -> pl.DataFrame:
    """Engine-style raw summary rows (metric, k, value, n_users, sd): user metrics are means over the
    users with a defined value; catalog metrics are one value per k (sd NaN: no t interval)."""
    parts = [users.group_by("k").agg(
        pl.lit(n).alias("metric"), pl.col(n).filter(~pl.col(n).is_nan()).mean().alias("value"),
        (~pl.col(n).is_nan()).sum().cast(pl.Int64).alias("n_users"),
        pl.col(n).filter(~pl.col(n).is_nan()).std().alias("sd")) for n in names if n in USER_COLUMNS]
    parts.append(catalog.select("metric", pl.col("k").cast(pl.Int64), pl.col("value").cast(pl.Float64),
                                pl.col("n_users").cast(pl.Int64), pl.lit(None, pl.Float64).alias("sd")))
    return pl.concat([p.select("metric", "k", "value", "n_users", "sd") for p in parts])


def excluded_rows(users: pl.DataFrame, names) -> list[tuple[str, str, int]]:
    """(code, reason, n_users) for each user metric: the users whose value is undefined at some k (each
    is left out of that k's mean; at the largest k alone, ild's short lists at a small k went uncounted)."""
    return [(f"undefined_{n}", f"{n} only: {_UNDEFINED[n]}", users.filter(pl.col(n).is_nan())[USER].n_unique())
            for n in names if n in USER_COLUMNS]
