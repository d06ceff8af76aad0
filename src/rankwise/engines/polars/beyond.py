"""Beyond-accuracy metrics as Polars lazy plans (the formulas: :mod:`rankwise.engines.beyond`): per user
(``polars_user``), per catalog (``polars_catalog``) and per item (``per_item``), over the canonical
recommendations and the side inputs."""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from rankwise.conventions import Convention
from rankwise.engines.beyond import ids as _ids
from rankwise.metrics.beyond import CATALOG_METRICS, USER_COLUMNS
from rankwise.metrics.declarations import BEYOND
from rankwise.metrics.formulas import BEYOND_CATALOG_TERMS, BEYOND_TERMS, reads

_DECLARED = {m.name: m for m in BEYOND}  # the values: their formulas, as Polars
from rankwise.inputs.normalize import ITEM, USER
from rankwise.inputs.side import FEATURE, VALUE, SideInputs

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


def _per_bucket(rows: pl.LazyFrame, keys: list, ks, aggs: dict, items: pl.DataFrame | None = None,
                fill=()) -> list[pl.LazyFrame]:
    """One frame per rank bucket of :func:`_buckets` (in bucket order): ``aggs`` ({name: expression}) over its rows,
    grouped on ``keys`` alone (with the bucket as a second key the group-by of 10M rows took twice as long).
    ``items``: per-item values each bucket's rows are given (:func:`_item_values`, then ``fill``), one bucket at a
    time (joined before the split, Polars held every bucket's joined rows at once). The aggregates add up values
    computed before the plan: a float term computed inside each bucket's plan may round otherwise in the last bit."""
    attach = None if items is None else _item_values(rows, items)

    def bucket(j: int) -> pl.LazyFrame:
        part = rows.filter(pl.col("ix") == j)
        return part if attach is None else attach(part).with_columns(fill)

    return [bucket(j).group_by(*keys).agg(term.alias(name) for name, term in aggs.items()) for j in range(len(ks))]


DENSE_SLOTS = 1 << 20  # an integer id range this wide (or up to 4x the items) is looked up by position


def _item_values(rows: pl.LazyFrame, items: pl.DataFrame):
    """A function that gives a frame of ``rows`` the columns of ``items`` (one row per item; null for an item not in
    it), as a left join on the item would. Integer ids within a compact range (the rows' and the items' together: up
    to DENSE_SLOTS or 4x the items) are looked up by position in a table of the range instead of joined (1M lists
    of 100, the per-user sums at k = 10 and 100: 3.2-3.5 -> 2.1-2.2 s)."""
    columns = [c for c in items.columns if c != ITEM]

    def joined(part: pl.LazyFrame) -> pl.LazyFrame:
        return part.join(items.lazy(), on=ITEM, how="left")

    if not (items.schema[ITEM].is_integer() and rows.collect_schema()[ITEM].is_integer()):
        return joined
    span = (pl.col(ITEM).min().alias("lo"), pl.col(ITEM).max().alias("hi"))
    ends = [v for v in (*rows.select(span).collect().row(0), *items.select(span).row(0)) if v is not None]
    if not ends:
        return joined
    lo, hi = min(ends), max(ends)
    if hi >= 2**63 or hi - lo + 1 > max(DENSE_SLOTS, 4 * items.height):
        return joined
    slots = pl.DataFrame({"_slot": pl.int_range(hi - lo + 1, eager=True, dtype=pl.Int64)})
    table = slots.join(items.select((pl.col(ITEM).cast(pl.Int64) - lo).alias("_slot"), *columns), on="_slot",
                       how="left", maintain_order="left")
    position = pl.col(ITEM).cast(pl.Int64) - lo

    def looked_up(part: pl.LazyFrame) -> pl.LazyFrame:
        return part.with_columns(pl.lit(table[c]).gather(position).alias(c) for c in columns)

    return looked_up


def _cumulative(buckets: list[pl.LazyFrame], keys: list, ks, sums: dict) -> pl.LazyFrame:
    """Per (keys, k): ``sums`` ({name: column of the buckets' frames}) added up over the buckets up to k (``buckets``:
    :func:`_per_bucket`'s frames, computed here together). Each cutoff adds its bucket to the one before by a join on
    the keys (a key absent on one side adds 0): at 1M users one cross join and group-by of every (user, bucket) row
    took 0.21-0.28 s at two cutoffs and 1.6-1.9 s at six, the joins 0.06 and 0.7 s. The sums are of integers and
    exact decimals: the same in any order."""
    frames = pl.collect_all([b.select(*keys, *(pl.col(column).alias(name) for name, column in sums.items()))
                             for b in buckets])
    out, running = [], None
    added = [(pl.col(n).fill_null(0) + pl.col(f"{n}_next").fill_null(0)).alias(n) for n in sums]
    for k, frame in zip(sorted(ks), frames):
        running = frame if running is None else running.join(frame, on=keys, how="full", coalesce=True,
                                                             suffix="_next").select(*keys, *added)
        out.append(running.with_columns(pl.lit(k, pl.Int64).alias("k")))
    return pl.concat(out).lazy()


def _users(recs: pl.LazyFrame, ks) -> pl.LazyFrame:
    """(user_id, k) for every user of ``recs``: a user with items has one at rank 1 (canonical ranks),
    a user with an empty list one null-item row; no pass over every row."""
    users = recs.filter(pl.col(ITEM).is_null() | (pl.col("rank") == 1)).select(USER).unique()
    return users.join(pl.LazyFrame({"k": list(ks)}, schema={"k": pl.Int64}), how="cross")


def _popularity(side: SideInputs, columns, item_dtype=pl.Int64) -> pl.LazyFrame:
    """Per train item: the popularity ``columns`` (pop_users, pop_rows; SideInputs.popularity)."""
    if side.train is None:
        return pl.LazyFrame(schema={ITEM: item_dtype, **{c: pl.Int64 for c in columns}})
    return side.popularity(*columns).lazy()


def _pop_column(knob: str) -> str:
    """The popularity column a popularity knob's value reads ("users" or "rows")."""
    return "pop_users" if knob == "users" else "pop_rows"


def _tail_items(pop: pl.LazyFrame, conv: Convention) -> pl.LazyFrame:
    """(item_id, is_tail) for the train items, by the long_tail rule."""
    p = pl.col(_pop_column(conv.popularity)).cast(pl.Float64)
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
        base = side.popularity().lazy()
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
        out = _list_values(out, recs, side, ks, conv, truth, expo, names)
    else:
        out = out.with_columns(pl.lit(None, pl.Int64).alias("n_items"),
                               *(pl.lit(None, pl.Float64).alias(c) for c in _LIST_SUMS))
    if "ild" in names:
        out = _with_ild(out, recs, side, ks, conv)
    else:
        out = out.with_columns(pl.lit(None, pl.Float64).alias("ild"))
    return out.select(USER, "k", "n_items", *[pl.col(c).cast(pl.Float64).fill_nan(None) for c in USER_COLUMNS]) \
        .sort("k", USER)


def _statistics(names, terms=BEYOND_TERMS) -> set[str]:
    """The statistics the declared values of ``names`` read, through the ``terms`` they share
    (rankwise.metrics.formulas.BEYOND_TERMS per user, BEYOND_CATALOG_TERMS per k)."""
    out, todo = set(), [_DECLARED[n].sql for n in names]
    while todo:
        for name in reads(todo.pop()) - out:
            out.add(name)
            if name in terms:
                todo.append(terms[name])
    return out


def _list_values(users: pl.LazyFrame, recs: pl.LazyFrame, side: SideInputs, ks, conv: Convention,
                 truth, expo: pl.LazyFrame | pl.DataFrame | None = None, names=_LIST_SUMS) -> pl.LazyFrame:
    """``users`` (user_id, k) with n_items and the values of ``names`` among _LIST_SUMS (the others null),
    from the sums their declared formulas read: per (user, rank bucket), added up per k. Only those sums
    are computed, and only the popularity columns they read."""
    ids = _ids(recs)
    wanted = [n for n in _LIST_SUMS if n in names]
    stats = _statistics(wanted)
    pcol, acol, scol = (_pop_column(k) for k in (conv.popularity, conv.arp_popularity, conv.serendipity_popularity))
    reading = {"info_sum": pcol, "tail_sum": pcol, "apop_sum": acol}  # a list row's term: the column it reads
    row_cols = sorted({col for stat, col in reading.items() if stat in stats})
    drop_cold = conv.cold_items == "drop" and "n_counted" in stats
    if drop_cold and not row_cols:
        row_cols = ["pop_rows"]  # whether the item is in train
    pop = _popularity(side, sorted(set(row_cols) | ({scol} if "seren_sum" in stats else set())), ids[1])
    total = 0.0
    if "info_sum" in stats or "total" in stats:
        total = float(side.train_users if conv.popularity == "users" else
                      0 if side.train is None else side.train.height)
    # each train item's terms (a null popularity column: a cold item), computed once on the item table
    terms = {}
    if "info_sum" in stats:
        log_den = math.log(total) if conv.novelty_normalize == "log_users" else math.log(conv.info_log_base)
        if conv.novelty_normalize == "log_users" and total <= 1:  # log U_T = 0
            log_den = 1.0  # finite terms for the sums; the declared formula makes novelty undefined
        info = -((pl.max_horizontal(pl.col(pcol).fill_null(0), pl.lit(1)).cast(pl.Float64) / (total or 1.0)).log()) \
            / log_den
        if conv.cold_items == "zero_novelty":
            info = pl.when(pl.col(pcol).is_null()).then(0.0).otherwise(info)
        terms["info_sum"] = info.cast(EXACT)
    if "apop_sum" in stats:
        terms["apop_sum"] = pl.col(acol).fill_null(0).cast(pl.Float64)
    if "tail_sum" in stats:
        cold_tail = conv.long_tail == "head_share"  # a cold item is outside the short head
        terms["tail_sum"] = pl.col("is_tail").fill_null(cold_tail).cast(pl.Float64)
    sums, per_item, fill = {"n_items": pl.len().cast(pl.Int64)}, None, []
    if row_cols:
        values = pop.select(ITEM, *row_cols)
        if "tail_sum" in stats:
            values = values.join(_tail_items(pop, conv), on=ITEM, how="left")
        # collected, so that the list rows only add up values (a float term computed inside the large plan may round
        # otherwise in the last bit from one plan to another: a request's, a bucket's)
        values = values.collect()
        per_item = values.select(ITEM, pl.lit(True).alias("_train"), *(t.alias(n) for n, t in terms.items()))
        cold = values.clear(1).select(*(t.alias(n) for n, t in terms.items()))  # an item without train rows
        # a cold item's row counts with its terms unless cold_items='drop' (then it adds nothing but n_items); its
        # long-tail term counts either way (as sql/beyond_user.sql)
        fill = [pl.col(n).fill_null(pl.lit(cold[n][0], per_item.schema[n])) for n in terms
                if n == "tail_sum" or conv.cold_items != "drop"]
    if "n_counted" in stats:
        sums["n_counted"] = pl.col("_train").is_not_null().cast(pl.Int64).sum() if drop_cold else pl.len().cast(pl.Int64)
    sums |= {n: pl.col(n).sum() for n in terms}
    per_bucket = _per_bucket(_buckets(recs, ks), [USER], ks, sums, per_item, fill)
    per = _cumulative(per_bucket, [USER], ks, {c: c for c in sums})
    out = users.join(per, on=[USER, "k"], how="left").with_columns(
        pl.col(c).fill_null(0) for c in sums if c.startswith("n_")).with_columns(
        pl.col(c).cast(pl.Float64).fill_null(0.0) for c in sums if c.endswith("_sum"))
    if "seren_sum" in stats:
        out = out.join(_serendipity_sums(recs, side, ks, conv, truth, expo, pop, scol, ids), on=[USER, "k"],
                       how="left").with_columns(pl.col("seren_sum").cast(pl.Float64).fill_null(0.0))
    # the values: the declared formulas (rankwise.metrics.declarations.BEYOND) over the sums
    out = out.with_columns(pl.lit(total, pl.Float64).alias("total"))
    return out.with_columns(_DECLARED[n].build(conv).alias(n) if n in wanted else pl.lit(None, pl.Float64).alias(n)
                            for n in _LIST_SUMS)


def _serendipity_sums(recs: pl.LazyFrame, side: SideInputs, ks, conv: Convention, truth, expo,
                      pop: pl.LazyFrame, scol: str, ids: tuple) -> pl.LazyFrame:
    """(user_id, k, seren_sum): only the list rows with a relevant label count (the term is 0 elsewhere;
    without ground truth no row has one, and the catalog size N, an exposure pass, is not needed)."""
    if truth is None:
        return pl.LazyFrame(schema={USER: ids[0], "k": pl.Int64, "seren_sum": EXACT})
    poprank = pop.select(ITEM, pl.col(scol).rank("dense", descending=True).cast(pl.Float64).alias("poprank"))
    expo = exposure(recs, ks) if expo is None else expo.lazy()
    catalog_n = _catalog(expo, side, conv, ks).group_by("k").agg(pl.len().cast(pl.Float64).alias("N"))
    relevant = _top(recs.join(_relevant(truth, conv, ids), on=[USER, ITEM], how="inner"), ks)
    return (relevant.join(poprank, on=ITEM, how="left").join(catalog_n, on="k", how="left")
            .group_by(USER, "k").agg((pl.max_horizontal(
                (pl.col("N") + 1 - pl.col("rank")) / pl.col("N")
                - ((pl.col("N") + 1 - pl.col("poprank")) / pl.col("N")).fill_null(0.0), pl.lit(0.0))
                * pl.col("rel")).cast(EXACT).sum().alias("seren_sum")))


def _with_ild(out: pl.LazyFrame, recs: pl.LazyFrame, side: SideInputs, ks, conv: Convention) -> pl.LazyFrame:
    """``out`` (user_id, k, ...) with ild, its declared formula over m and q (:func:`_ild_polars`)."""
    out = out.join(_ild_polars(_top(recs, ks), side, conv), on=[USER, "k"], how="left")
    sums = out.with_columns(pl.col("m").fill_null(0).cast(pl.Float64), pl.col("q").fill_null(0.0),
                            pl.lit(int(side.has_features), pl.Int64).alias("n_features"))
    return sums.with_columns(_DECLARED["ild"].build(conv).alias("ild")).drop("n_features")


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
    f = f.filter(peak > 0).with_columns((pl.col(VALUE) / peak).alias("x"))
    # numbered in sorted order: unique() gives the ids in the threads' order, and the numbering orders the terms
    # of each list's vector sum (A @ U), whose last bit would then move from run to run
    item_ix = f.select(ITEM).unique().sort(ITEM).with_row_index("ii").collect()
    feat_ix = f.select(FEATURE).unique().sort(FEATURE).with_row_index("fi").collect()
    f = f.join(item_ix.lazy(), on=ITEM).join(feat_ix.lazy(), on=FEATURE).select("ii", "fi", "x").collect()
    n_items, n_feats = item_ix.height, feat_ix.height
    U = sparse.csr_matrix((f["x"].to_numpy(), (f["ii"].to_numpy(), f["fi"].to_numpy())), shape=(n_items, n_feats))
    # each row over its norm, summed in the order of the feature numbers (a window sum in Polars adds them in the
    # threads' order)
    U.sort_indices()
    U.data /= np.repeat(np.sqrt(np.asarray(U.multiply(U).sum(axis=1)).ravel()), np.diff(U.indptr))
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
    per_bucket = _per_bucket(_buckets(recs.lazy(), ks), [ITEM], ks, {"n": pl.len().cast(pl.Int64)})
    return _cumulative(per_bucket, [ITEM], ks, {"exposure": "n"}).select("k", ITEM, "exposure")


def polars_catalog(recs: pl.LazyFrame, side: SideInputs, ks, conv: Convention,
                   expo: pl.DataFrame | None = None, names=CATALOG_METRICS) -> pl.DataFrame:
    """(metric, k, value, n_users) for the catalog metrics ``names`` (item_coverage, gini, exposure_entropy,
    personalization, score_entropy: NaN without a score column); n_users = users with n_u > 0. Only the
    statistics their declared formulas read are computed. ``expo``: the :func:`exposure` frame when
    already computed."""
    recs = recs.lazy()
    names = [n for n in CATALOG_METRICS if n in names]
    stats = _statistics(names, BEYOND_CATALOG_TERMS)
    expo = (exposure(recs, ks).collect() if expo is None else expo).lazy()  # read up to three times below
    if stats & {"n_c", "covered_in", "n_all"}:  # the catalog's items too
        cat = _catalog(expo, side, conv, ks).with_columns(pl.lit(True).alias("in_c"))
        both = expo.join(cat, on=["k", ITEM], how="full", coalesce=True).with_columns(
            pl.col("exposure").fill_null(0), pl.col("in_c").fill_null(False))
    else:  # the exposed items alone (an unexposed item adds 0 to every other sum)
        both = expo.with_columns(pl.lit(False).alias("in_c"))
    per_k = pl.LazyFrame({"k": list(ks)}, schema={"k": pl.Int64})
    # a user with items has one at rank 1, inside every cutoff (canonical ranks): U = those users;
    # sum n_u = sum c
    n_lists = recs.filter((pl.col("rank") == 1) & pl.col(ITEM).is_not_null()).select(pl.len()).collect().item()
    c = pl.col("exposure").cast(pl.Float64)
    sums = {
        "n_c": pl.col("in_c").sum().cast(pl.Float64),
        "covered_in": ((c > 0) & pl.col("in_c")).sum().cast(pl.Float64),
        "n_exposed": (c > 0).sum().cast(pl.Float64),
        "n_all": pl.len().cast(pl.Float64),
        "c_sum": c.sum(),
        "c2_sum": (pl.col("exposure").cast(pl.Int64) ** 2).sum().cast(pl.Float64),  # exact sums (any order)
        "clogc": pl.when(c > 0).then(c * c.log()).otherwise(0.0).cast(EXACT).sum().cast(pl.Float64),
    }
    sums = {name: term for name, term in sums.items() if name in stats}
    s = per_k
    if sums:
        s = s.join(both.group_by("k").agg(term.alias(name) for name, term in sums.items()), on="k", how="left")
    if "rc_sum" in stats:
        # gini's sum_r r c_(r) over the exposed items ascending (ties: equal c, any order gives the same sum);
        # r and c_(r) come from a sort of the exposed items per k
        ranked = expo.sort("k", "exposure").with_columns(
            (pl.int_range(pl.len()).over("k") + 1).cast(pl.Int64).alias("r"))
        s = s.join(ranked.group_by("k").agg((pl.col("r") * pl.col("exposure")).sum().cast(pl.Float64).alias("rc_sum")),
                   on="k", how="left")
    if "score_z" in stats:
        s = s.join(_score_entropy_polars(recs, ks), on="k", how="left")
    # the per-k statistics (rankwise.metrics.formulas.BEYOND_CATALOG_STATISTICS), 0 where nothing was counted
    # (the score sums stay null without scores), then the declared formulas (rankwise.metrics.declarations.BEYOND)
    counted = [*sums, *(["rc_sum"] if "rc_sum" in stats else [])]
    s = s.with_columns(pl.col(counted).fill_null(0.0), pl.lit(float(n_lists)).alias("n_users"))
    values = s.select("k", pl.col("n_users").cast(pl.Int64),
                      *(_DECLARED[name].build(conv).cast(pl.Float64).alias(name) for name in names))
    return (values.unpivot(names, index=["k", "n_users"], variable_name="metric", value_name="value")
            .select("metric", "k", pl.col("value").fill_nan(None), "n_users").sort("metric", "k").collect())


def _score_entropy_polars(recs: pl.LazyFrame, ks) -> pl.LazyFrame:
    """(k, score_z, score_zd): over the pooled top-k scores, d = score - max, sum e^d and sum e^d d."""
    if "score" not in recs.collect_schema():
        return pl.LazyFrame(schema={"k": pl.Int64, "score_z": pl.Float64, "score_zd": pl.Float64})
    s = pl.col("score").cast(pl.Float64)
    # d = s - max(s) from the halves, at least -2000 (as sql/beyond_catalog.sql): no overflow, d * exp(d) = 0
    half = s * 0.5 - (s * 0.5).max().over("k")
    d = _top(recs.filter(pl.col("score").is_not_null()), ks).with_columns(
        (half.clip(lower_bound=-1000.0) * 2.0).alias("d"))
    e = pl.col("d").exp()
    terms = pl.concat([d.filter(e > 0).select("k", pl.lit("z").alias("part"), e.alias("x")),
                       d.filter((e > 0) & (pl.col("d") < 0)).select("k", pl.lit("zd").alias("part"),
                                                                    (-(e * pl.col("d"))).alias("x"))])
    totals = _exact_sums(terms, ["k", "part"])
    return totals.group_by("k").agg(pl.col("total").filter(pl.col("part") == "z").first().alias("score_z"),
                                    (0.0 - pl.col("total").filter(pl.col("part") == "zd").first().fill_null(0.0))
                                    .alias("score_zd"))


def _exact_sums(terms: pl.LazyFrame, keys: list) -> pl.LazyFrame:
    """(keys, total): the sum of the positive terms ``x`` per ``keys``, the same in any row order, with a
    tiny sum's relative precision (as sql/beyond_catalog.sql): with b = floor(log2 x) (up to 1 off), x 2^(60 - b)
    is an integer below 2^62 (two exact scalings); each exponent's integers are summed exactly, and the
    exponents' totals added in order of b."""
    two = pl.lit(2.0)
    b = (pl.col("x").log() / math.log(2.0)).floor()
    units = (pl.col("x") * two.pow(60.0 - b - 600.0) * two.pow(600.0)).cast(pl.Int64).cast(pl.Int128)
    per_b = terms.with_columns(b.alias("b")).group_by(*keys, "b").agg(units.sum().alias("units"))
    value = pl.col("units").cast(pl.Float64) * two.pow(pl.col("b") - 60.0 + 600.0) * two.pow(-600.0)
    return per_b.group_by(*keys).agg(value.sort_by("b").cum_sum().last().alias("total"))


def per_item(recs: pl.LazyFrame, side: SideInputs, ks, conv: Convention,
             expo: pl.DataFrame | None = None) -> pl.LazyFrame:
    """(item_id, k, exposure, popularity) over C ∪ the recommended items; popularity by the
    ``popularity`` knob (0 for an item with no train row). Deferred: computed when collected (when
    Result.per_item is first read), so a request that never reads it does not pay for its popularity
    column (pop_users is a distinct count per train item). The plan keeps the exposure frame (items x k)
    and the side inputs, not the lists."""
    item_dtype = _ids(recs.lazy())[1]
    expo = exposure(recs.lazy(), ks).collect() if expo is None else expo
    schema = {ITEM: item_dtype, "k": pl.Int64, "exposure": pl.Int64, "popularity": pl.Int64}

    def rows() -> pl.DataFrame:
        pcol = _pop_column(conv.popularity)
        pop = _popularity(side, [pcol], item_dtype).select(ITEM, pl.col(pcol).alias("popularity"))
        both = expo.lazy().join(_catalog(expo.lazy(), side, conv, ks).select("k", ITEM), on=["k", ITEM], how="full",
                                coalesce=True)
        return (both.join(pop, on=ITEM, how="left")
                .select(pl.col(ITEM).cast(item_dtype), "k", pl.col("exposure").fill_null(0).cast(pl.Int64),
                        pl.col("popularity").fill_null(0).cast(pl.Int64))
                .sort("k", ITEM).collect())

    return pl.defer(rows, schema=schema)
