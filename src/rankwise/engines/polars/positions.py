"""The Polars engine's list-form path: one row per user, one column per position of the first K items.

When the recommendations arrive as lists (``Prepared.rec_lists``: positions 1..n, no item repeated),
nothing is exploded or joined row by row. Per user, with K = max(ks), for position j = 1..K:

    h_j = 1 if item_j is a relevant label (relevance > 0 and >= threshold), else 0
    g_j = gain of item_j's label (0 without one earning label)
    C_j = h_1 + ... + h_j                       (running hits)

and at each cutoff k the statistics of ``sql/per_user.sql`` are running sums read at position k:
hits = C_k, precision_sum = sum_{j<=k} h_j C_j / j, hits_sum = sum h_j C_j, r_hits = sum h_j [j <= n_rel],
dcg = sum g_j / log_b(j + 1), rbp_sum = sum h_j p^(j - 1), err_sum = sum R_j / j prod_{i<j} (1 - R_i)
(ERR's R_j from item j's grade), first_hit = the first j <= k with h_j. The sums run in position order,
the order the long-form plan sums its rank-ordered rows in (the ideal DCG adds up per relevance
level instead: equal to the long plan's to 1e-12, tests/test_list_positions.py).

Item j's label is looked up with one ``list.contains`` per relevance level (the distinct positive
relevance values; a binary run has one level) in the user's labels of that level that are among the
first K items (found first: the lists scanned K times shrink to the hits).
This path serves list-form recommendations when ``applies_to`` the convention and cutoffs and the
labels have at most MAX_LEVELS relevance values; otherwise the long-form plan does (the rule is
documented in the README's list-form paragraph).
"""

from __future__ import annotations

import math

import polars as pl

from rankwise.inputs.normalize import ITEM, REL, USER, Prepared
from rankwise.engines.polars import knobs
from rankwise.conventions import Convention
from rankwise.metrics.declarations import REGISTRY, stage_switches

METRICS = [m for m in REGISTRY if m.level == "user"]
RUNNING = ["_c", "_precision_sum", "_hits_sum", "_r_hits", "_dcg", "_rbp_sum", "_err_sum", "_first", "_mult_hits",
           "_iprec_max", "_ipt11_sum"]

INFAP_EPSILON = 0.00001  # trec_eval.h


POOL_RUNNING = ["_nonrel_ret", "_pooled_ret", "_bpref_sum", "_infap_sum"]
MAX_POSITIONS = 100  # K above this: the long-form plan (cost here grows with K x labels per user)
MAX_LEVELS = 8  # distinct positive relevance values above this: the long-form plan


def levels(prep: Prepared) -> list[float] | None:
    """The distinct positive relevance values of the labels, or None when there are too many."""
    values = (prep.truth.filter(pl.col(ITEM).is_not_null() & (pl.col(REL) > 0))
              .select(pl.col(REL).unique().sort().head(MAX_LEVELS + 1)).collect()[REL])
    return None if len(values) > MAX_LEVELS else values.to_list()


def applies_to(conv: Convention, ks, computed=()) -> bool:
    """A cutoff the position columns can hold, RR within k (a first hit anywhere needs the whole list),
    no precision over candidates (it needs the whole list too), no metric of the gain statistics among the
    ``computed`` columns (every judged row and the labels' ideal at each rank, which the positions do not hold), and gain_levels giving no gain to level 0 and no gain <= 0 (the positions hold
    only the labels of positive relevance, and the ideal here keeps every nonzero gain)."""
    return (max(ks) <= MAX_POSITIONS and conv.rr_cutoff and conv.precision_denominator != "min_k_candidates"
            and not stage_switches(computed)["gain_statistics"]
            and not any(level == 0 or gain <= 0 for level, gain in conv.gain_levels))


def _labels(prep: Prepared, rel_levels: list[float], relevant_level: list[bool], thr: float) -> pl.LazyFrame:
    """Per user of the ground truth: n_rel, n_judged and the labels of each level (lists _level0, ...).
    Ground truth given as lists whose labels all share one relevance: those lists as they are."""
    one_level = (prep.truth_lists is not None and len(rel_levels) == 1 and prep.truth.filter(
        pl.col(ITEM).is_not_null() & (pl.col(REL) != rel_levels[0])).head(1).collect().height == 0)
    if one_level:
        n = pl.col(ITEM).list.len().cast(pl.Int64)
        none = pl.col(ITEM).list.head(0)
        return prep.truth_lists.lazy().select(
            USER, (n if relevant_level[0] else pl.lit(0, dtype=pl.Int64)).alias("n_rel"), n.alias("n_judged"),
            pl.col(ITEM).alias("_level0"), pl.lit(1).alias("in_truth"),
            # the judged-aware statistics' kinds: judged non-relevant (relevance >= 0, not relevant), pooled (< 0)
            (none if relevant_level[0] else pl.col(ITEM)).alias("_nonrel"), none.alias("_pool"),
            (pl.lit(0, dtype=pl.Int64) if relevant_level[0] else n).alias("n_nonrel"))
    is_rel = ((pl.col(REL) > 0) & (pl.col(REL) >= thr)).fill_null(False)
    # in input order: ground truth ordered like the recommendations then needs no join (_everyone)
    return prep.truth.group_by(USER, maintain_order=True).agg(
        is_rel.sum().cast(pl.Int64).alias("n_rel"), pl.col(ITEM).count().cast(pl.Int64).alias("n_judged"),
        *[pl.col(ITEM).filter(pl.col(REL) == v).alias(f"_level{i}") for i, v in enumerate(rel_levels)],
        pl.lit(1).alias("in_truth"),
        pl.col(ITEM).filter((pl.col(REL) >= 0) & ~is_rel).alias("_nonrel"), pl.col(ITEM).filter(pl.col(REL) < 0).alias("_pool"),
        ((pl.col(REL) >= 0) & ~is_rel & pl.col(ITEM).is_not_null()).sum().cast(pl.Int64).alias("n_nonrel"))


def _everyone(recs: pl.DataFrame, labels: pl.DataFrame, big_k: int) -> pl.LazyFrame:
    """recommendations (their first big_k items and n_recs) beside the labels, one row per user of
    either: the recommended users in their order, then the users only in the labels. The lists are never
    gathered: the labels are set beside them (by a join of the users alone when the two differ), so the
    1M lists of 100 are not copied (a full join and a sort copied them: 1.3 GB more at 1M users)."""
    rec_stats = recs.lazy().select(
        USER, pl.col(ITEM).list.head(big_k).alias("_top"), pl.col(ITEM).list.len().cast(pl.Int64).alias("n_recs"),
        pl.lit(1).alias("in_recs"))
    if labels.get_column(USER).equals(recs.get_column(USER)):
        return pl.concat([rec_stats, labels.lazy().drop(USER)], how="horizontal")
    beside = recs.lazy().select(USER).join(labels.lazy(), on=USER, how="left", nulls_equal=True,
                                           maintain_order="left").drop(USER)
    only_labels = labels.lazy().join(recs.lazy().select(USER), on=USER, how="anti", nulls_equal=True)
    return pl.concat([pl.concat([rec_stats, beside], how="horizontal"), only_labels], how="diagonal").with_columns(
        pl.col("n_recs", "n_rel", "n_judged", "in_recs", "in_truth", "n_nonrel").fill_null(0).cast(pl.Int64))


def per_user(prep: Prepared, ks: tuple[int, ...], conv: Convention, beta: float,
             rel_levels: list[float], engine: str = "auto", computed: set[str] | None = None) -> pl.LazyFrame:
    """Long per-user frame (user_id, k, n_recs, n_rel, one column per metric), rows in (k, user) order.
    The rules (gain, discount, users, empty lists) are the long-form plan's own."""
    discount, gain, empty = knobs.discount(conv.log_base), knobs.gain, knobs.empty_value(conv)
    big_k = max(ks)
    thr = conv.relevance_threshold
    relevant_level = [(v > 0) and (v >= thr) for v in rel_levels]
    level_gain = pl.DataFrame({REL: rel_levels}, schema={REL: pl.Float64}).with_columns(
        is_rel=((pl.col(REL) > 0) & (pl.col(REL) >= thr)).cast(pl.Int64)).select(gain(conv)).to_series()
    everyone = _everyone(prep.rec_lists, _labels(prep, rel_levels, relevant_level, thr).collect(), big_k)
    judged_users = pl.lit(True) if conv.unjudged == "keep" else pl.col("n_judged") > 0
    users = everyone.filter(knobs.in_universe(conv.users) & judged_users)

    positions = range(1, big_k + 1)
    d = pl.DataFrame({"p": list(positions)}, schema={"p": pl.Int64}).select(discount(pl.col("p"))).to_series()
    # item j's label at each level (levels that neither count as relevant nor earn a gain are skipped)
    # (every positive level: ERR's R reads the grade of any label that earns, relevant or not)
    used = [i for i in range(len(rel_levels)) if relevant_level[i] or level_gain[i] != 0 or rel_levels[i] > 0]
    # ERR's R per level, g_max the knob or the largest level (sql: err_scale, judged.err_r)
    g_max = float(conv.err_max_grade) if conv.err_max_grade > 0 else (max(rel_levels) if rel_levels else 1.0)
    level_r = pl.DataFrame({REL: rel_levels}, schema={REL: pl.Float64}).select(
        knobs.err_stop(pl.col(REL), g_max)).to_series()
    top = pl.col("_top")
    # the labels among the first K items (about 2 of 12 here): each position then scans only those
    # (cutting all levels' labels at once first, then each level to those, measured slower)
    users = users.with_columns(**{f"_found{i}": _within(pl.col(f"_level{i}"), top) for i in used})
    frame = users.with_columns(**{
        f"_f{i}_{j}": pl.col(f"_found{i}").list.contains(top.list.get(j - 1, null_on_oob=True)).fill_null(False)
        for i in used for j in positions})
    pool = bool(stage_switches(computed)["pool_statistics"])
    if pool:  # item j judged non-relevant / pooled (sql: pool_labels), looked up among those within the first K
        frame = frame.with_columns(_found_nonrel=_within(pl.col("_nonrel"), top),
                                   _found_pool=_within(pl.col("_pool"), top))
        frame = frame.with_columns(**{
            f"_{kind}_{j}": pl.col(f"_found_{kind}").list.contains(top.list.get(j - 1, null_on_oob=True)).fill_null(False)
            .cast(pl.Int64) for kind in ("nonrel", "pool") for j in positions})

    def hit(j: int) -> pl.Expr:
        flags = [pl.col(f"_f{i}_{j}") for i in used if relevant_level[i]]
        return (pl.any_horizontal(flags) if flags else pl.lit(False)).cast(pl.Int64)

    def err_r_at(j: int) -> pl.Expr:
        terms = [pl.when(pl.col(f"_f{i}_{j}")).then(level_r[i]).otherwise(0.0) for i in used if level_r[i] != 0]
        return pl.sum_horizontal(terms) if terms else pl.lit(0.0)

    def gain_at(j: int) -> pl.Expr:
        terms = [pl.when(pl.col(f"_f{i}_{j}")).then(level_gain[i]).otherwise(0.0) for i in used if level_gain[i] != 0]
        return pl.sum_horizontal(terms) if terms else pl.lit(0.0)

    # position by position, every running sum adds its term (in position order: the long-form plan's
    # order); at each cutoff the sums are kept as <name>@k
    counted = [i for i in used if level_gain[i] != 0] if conv.ideal == "predictions_topk" else []
    zero_int, zero = pl.lit(0, dtype=pl.Int64), pl.lit(0.0)
    frame = frame.with_columns(_c=zero_int, _hits_sum=zero_int, _r_hits=zero_int, _first=zero_int,
                               _precision_sum=zero, _dcg=zero, _rbp_sum=zero, _err_logs=zero, _err_sum=zero,
                               _mult_hits=zero_int, _iprec_max=zero, _nonrel_ret=zero_int, _pooled_ret=zero_int,
                               _bpref_sum=zero, _infap_sum=zero,
                               **{f"_ipt{i}": zero for i in range(len(knobs.IPT11_LEVELS))},
                               **{f"_n{i}": zero_int for i in counted})
    cuts = set(ks)
    mult_cut, iprec_count = knobs.rprec_cut(pl.col("n_rel"), conv), knobs.iprec_count(pl.col("n_rel"), conv)
    ipt_counts = [knobs.iprec_count(pl.col("n_rel"), conv, level) for level in knobs.IPT11_LEVELS]
    for j in positions:
        h = hit(j)
        c = pl.col("_c") + h  # the hits within the first j
        frame = frame.with_columns(
            _c=c,
            _precision_sum=pl.col("_precision_sum") + pl.when(h == 1).then(c.cast(pl.Float64) / j).otherwise(0.0),
            _hits_sum=pl.col("_hits_sum") + pl.when(h == 1).then(c).otherwise(0),
            _r_hits=pl.col("_r_hits") + h * (pl.col("n_rel") >= j).cast(pl.Int64),
            _dcg=pl.col("_dcg") + gain_at(j) / d[j - 1],
            _rbp_sum=pl.col("_rbp_sum") + pl.when(h == 1).then(math.pow(conv.rbp_persistence, j - 1)).otherwise(0.0),
            _err_logs=pl.col("_err_logs") + knobs.err_log_complement(err_r_at(j), g_max),
            _mult_hits=pl.col("_mult_hits") + h * (mult_cut >= j).cast(pl.Int64),
            # the largest precision at a hit from the iprec_count-th hit on (sql: running.iprec_max)
            _iprec_max=pl.when((h == 1) & (c >= iprec_count))
            .then(pl.max_horizontal(pl.col("_iprec_max"), c.cast(pl.Float64) / j)).otherwise(pl.col("_iprec_max")),
            **{f"_ipt{i}": pl.when((h == 1) & (c >= count)).then(pl.max_horizontal(pl.col(f"_ipt{i}"), c.cast(pl.Float64) / j))
               .otherwise(pl.col(f"_ipt{i}")) for i, count in enumerate(ipt_counts)},
        )
        frame = frame.with_columns(_ipt11_sum=pl.sum_horizontal(f"_ipt{i}" for i in range(len(ipt_counts))))
        if pool:  # bpref's and infAP's terms at a relevant item j (sql: pooled_running), the kinds above it counted
            nonrel, pooled, n_rel = pl.col("_nonrel_ret"), pl.col("_pooled_ret"), pl.col("n_rel")
            bpref_term = pl.when(nonrel > 0).then(
                1.0 - pl.min_horizontal(nonrel, n_rel).cast(pl.Float64)
                / pl.min_horizontal(pl.col("n_nonrel"), n_rel).cast(pl.Float64)).otherwise(1.0)
            above = pl.col("_c") - 1  # relevant items above j (_c already counts j)
            infap_term = pl.lit(1.0) if j == 1 else (
                1.0 / j + (j - 1) / j * ((above + nonrel + pooled).cast(pl.Float64) / float(j - 1))
                * ((above.cast(pl.Float64) + INFAP_EPSILON) / ((above + nonrel).cast(pl.Float64) + 2 * INFAP_EPSILON)))
            frame = frame.with_columns(
                _bpref_sum=pl.col("_bpref_sum") + pl.when(h == 1).then(bpref_term).otherwise(0.0),
                _infap_sum=pl.col("_infap_sum") + pl.when(h == 1).then(infap_term).otherwise(0.0),
            ).with_columns(_nonrel_ret=nonrel + pl.col(f"_nonrel_{j}"), _pooled_ret=pooled + pl.col(f"_pool_{j}"))
        # ERR: R_j / j times the product of 1 - R above j (the long plan's exp(logs so far - this row's log))
        r = err_r_at(j)
        frame = frame.with_columns(
            _err_sum=pl.col("_err_sum") + r / j * (pl.col("_err_logs") - knobs.err_log_complement(r, g_max)).exp(),
            _first=pl.when((pl.col("_first") == 0) & (h == 1)).then(pl.lit(j, dtype=pl.Int64)).otherwise("_first"),
            **{f"_n{i}": pl.col(f"_n{i}") + pl.col(f"_f{i}_{j}").cast(pl.Int64) for i in counted},
        )
        if j in cuts:
            frame = frame.with_columns(pl.col(RUNNING + [f"_n{i}" for i in counted]
                                              + (POOL_RUNNING if pool else [])).name.suffix(f"@{j}"))
    ideal = _Ideal(conv, [(level_gain[i], i) for i in used if level_gain[i] != 0], d)

    def at(k: int) -> list[pl.Expr]:
        def field(name: str) -> pl.Expr:
            return pl.col(f"_{name}@{k}")

        stat = {
            "k": pl.lit(k, dtype=pl.Int64), "n_recs": pl.col("n_recs"), "n_rel": pl.col("n_rel"),
            "hits": field("c").cast(pl.Float64), "precision_sum": field("precision_sum"),
            "hits_sum": field("hits_sum").cast(pl.Float64), "r_hits": field("r_hits").cast(pl.Float64),
            "dcg": field("dcg"), "first_hit": field("first"), "rbp_sum": field("rbp_sum"),
            "err_sum": field("err_sum"), "mult_hits": field("mult_hits").cast(pl.Float64),
            "iprec_max": field("iprec_max"), "ipt11_sum": field("ipt11_sum"),
            "idcg": ideal.at(k, field),
            **({"nonrel_ret": field("nonrel_ret").cast(pl.Float64), "pooled_ret": field("pooled_ret").cast(pl.Float64),
                "bpref_sum": field("bpref_sum"), "infap_sum": field("infap_sum")} if pool else {}),
            "n_candidates": pl.lit(None, dtype=pl.Int64),  # not served here (see applies_to)
        }
        return [(empty if m.empty_rules else (lambda value: value))(m.build(conv, beta, stat.__getitem__))
                .alias(f"{m.name}@{k}") for m in wanted]

    # only the metrics computed are columns (a column of NULLs per metric not asked for cost 48 MB per
    # 6M rows); one pass computes every cutoff's values side by side; then one block of rows per cutoff
    wanted = [m for m in METRICS if computed is None or m.name in computed]
    wide = frame.select(USER, "n_recs", "n_rel", *[e for k in ks for e in at(k)]).collect(engine=engine)
    # users only in the labels come after the others, and lists may be out of user order: then each cutoff's rows are
    # gathered in user order, and its columns dropped from the wide frame once gathered (a sort of the wide frame held
    # it twice); in user order, each cutoff's columns as they are (no copy)
    users = wide.get_column(USER)
    if users.dtype.is_nested():  # (struct and list ids: sorted as before)
        wide, order = wide.sort(USER), None
    else:
        order = None if users.is_sorted() else users.arg_sort()
    parts = []
    for k in ks:
        columns = [f"{m.name}@{k}" for m in wanted]
        part = wide.select(USER, pl.lit(k, dtype=pl.Int64).alias("k"), "n_recs", "n_rel",
                           *[pl.col(c).alias(m.name) for c, m in zip(columns, wanted)])
        if order is not None:
            part, wide = part.select(pl.all().gather(order)), wide.drop(columns)
        parts.append(part)
    return pl.concat(parts, rechunk=False).lazy()


def _within(labels: pl.Expr, items: pl.Expr) -> pl.Expr:
    """The labels that are among the items, as labels - (labels - items): two set differences took
    1.0 s where set_intersection took 1.4 s (1M users, 12 labels and 100 items each)."""
    return labels.list.set_difference(labels.list.set_difference(items))


class _Ideal:
    """IDCG@k of a row by the ``ideal`` rule. T[n] = sum_{i <= n} 1 / log_b(i + 1) (T[0] = 0): n slots
    of gain g give g T[n]; gains g_1 > g_2 > ... held by N_1, N_2, ... items give
    sum_v g_v (T[N_1 + ... + N_v] - T[N_1 + ... + N_{v-1}]), each cut at k."""

    def __init__(self, conv: Convention, gains: list[tuple[float, int]], d: pl.Series):
        self.conv = conv
        self.gains = sorted(gains, key=lambda g: -g[0])  # (gain, level), largest gain first
        self.table = pl.concat([pl.Series([0.0]), (1.0 / d).cum_sum()])

    def _sum(self, counts: list[pl.Expr], k: int) -> pl.Expr:
        total, before, end = pl.lit(0.0), pl.lit(0, dtype=pl.Int64), pl.lit(0, dtype=pl.Int64)
        for (g, _), n in zip(self.gains, counts):
            end = end + n
            span = self._t(pl.min_horizontal(end, k)) - self._t(pl.min_horizontal(before, k))
            total = total + (span if g == 1.0 else g * span)
            before = end
        return total

    def _t(self, n: pl.Expr) -> pl.Expr:
        return pl.lit(self.table).gather(n)

    def at(self, k: int, field) -> pl.Expr:
        if self.conv.ideal == "k_ones":
            return pl.lit(self.table[k])
        if self.conv.ideal == "labels":
            return self._sum([pl.col(f"_level{i}").list.len().fill_null(0).cast(pl.Int64) for _, i in self.gains], k)
        return self._sum([field(f"n{i}") for _, i in self.gains], k)
