"""Per-user metrics as Polars expressions over list columns, for use in your own queries.

One row = one user: ``recs`` is a list column of recommended items in rank order, ``truth`` a list
column of the user's labelled items, ``relevance`` an optional list column parallel to ``truth``
(default: every label has relevance 1). Each function returns a ``pl.Expr`` (named ``"<metric>@<k>"``)
that equals ``rankwise.evaluate(...).per_user`` for that user under the same convention, so it
composes with anything: ``df.group_by("country").agg(expr.ndcg("recs", "truth", k=10).mean())``,
lazy or streaming.

Row rules (the convention's knobs, applied per row; NaN = undefined, left out of means):

* A null list means the user is absent from that input (a left join leaves one); an empty list means
  present with no items. ``users`` picks the rows that are scored (``union``: present in either
  input, ``labels``, ``predictions``, ``intersection``); other rows are NaN. ``unjudged='drop'``
  makes rows without a single label NaN.
* ``empty_labels`` / ``empty_predictions``: the value of a row with no relevant label / no
  recommendation (``'error'`` cannot be raised from inside an expression and is refused).
* An expression cannot raise: a row that ``evaluate`` would reject (a repeated item in ``recs``
  under ``duplicates='error'``, a repeated label, a null item, a relevance list of another length or
  with a null, NaN, infinite or negative value) is NaN. ``check_lists`` raises the typed error.
  ``duplicates='first_shift'`` keeps each item's first occurrence.
* ``ties`` only orders scores (lists are already ranked) and ``f_aggregation`` only changes the
  summary, so neither changes a row. ``min_score`` needs scores and is refused.

>>> import polars as pl
>>> from rankwise import expr
>>> df = pl.DataFrame({"country": ["fr", "fr", "de"],
...                    "recs": [[1, 2, 3], [4, 5, 6], [7, 8, 9]],
...                    "truth": [[2], [9], [7, 9]]})
>>> df.select(expr.precision("recs", "truth", k=2), expr.mrr("recs", "truth", k=3))
shape: (3, 2)
┌─────────────┬───────┐
│ precision@2 ┆ mrr@3 │
│ ---         ┆ ---   │
│ f64         ┆ f64   │
╞═════════════╪═══════╡
│ 0.5         ┆ 0.5   │
│ 0.0         ┆ 0.0   │
│ 0.5         ┆ 1.0   │
└─────────────┴───────┘
>>> (df.lazy().group_by("country").agg(expr.hit_rate("recs", "truth", k=1).mean())
...    .sort("country").collect())
shape: (2, 2)
┌─────────┬────────────┐
│ country ┆ hit_rate@1 │
│ ---     ┆ ---        │
│ str     ┆ f64        │
╞═════════╪════════════╡
│ de      ┆ 1.0        │
│ fr      ┆ 0.0        │
└─────────┴────────────┘
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import polars as pl

from . import metrics as _metrics
from .conventions import Convention, resolve
from .errors import DuplicateItemError, InvalidRelevanceError, NullValueError, ParameterError

__all__ = ["precision", "recall", "fbeta", "f1", "map", "ap", "mar", "ar", "mrr", "rr", "dcg", "ndcg",
           "hit_rate", "r_precision", "metrics", "check_lists", "install_duckdb"]

NAN = float("nan")
Column = str | pl.Expr


# -- the public functions, one per metric -------------------------------------------------------


def precision(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
              convention: str | Convention = "default") -> pl.Expr:
    """Precision@k = hits@k / den, den by ``precision_denominator``.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(precision("r", "t", k=2)).item()
    0.5
    """
    return _Rows(recs, truth, relevance, convention).metric("precision", k)


def recall(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
           convention: str | Convention = "default") -> pl.Expr:
    """Recall@k = hits@k / n_rel.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(recall("r", "t", k=2)).item()
    0.5
    """
    return _Rows(recs, truth, relevance, convention).metric("recall", k)


def fbeta(recs: Column, truth: Column, *, k: int, beta: float = 1.0, relevance: Column | None = None,
          convention: str | Convention = "default") -> pl.Expr:
    """F-beta@k = (1 + b^2) P R / (b^2 P + R), 0 when P = R = 0 (the per-user F).

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3, 4]], "t": [[1]]}).select(fbeta("r", "t", k=4, beta=2.0)).item()
    0.625
    """
    if not (isinstance(beta, (int, float)) and not isinstance(beta, bool) and math.isfinite(beta) and beta > 0):
        raise ParameterError(f"F-beta needs a finite beta > 0, got {beta!r}.", hint="For example beta=1.0 (F1) or 2.0.")
    return _Rows(recs, truth, relevance, convention).metric("fbeta", k, float(beta))


def f1(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
       convention: str | Convention = "default") -> pl.Expr:
    """F1@k: ``fbeta`` with beta = 1 (named ``f1@k``).

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2]], "t": [[1, 3]]}).select(f1("r", "t", k=2)).item()
    0.5
    """
    return fbeta(recs, truth, k=k, beta=1.0, relevance=relevance, convention=convention).alias(f"f1@{k}")


def map(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,  # noqa: A001 (the metric's name)
        convention: str | Convention = "default") -> pl.Expr:
    """AP@k = sum over hit positions i <= k of hits@i / i, divided by ``ap_denominator``.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(map("r", "t", k=3)).item()
    0.8333333333333333
    """
    return _Rows(recs, truth, relevance, convention).metric("map", k)


def mar(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
        convention: str | Convention = "default") -> pl.Expr:
    """AR@k = sum over hit positions i <= k of hits@i / n_rel, divided by ``ap_denominator``.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]}).select(mar("r", "t", k=3)).item()
    0.75
    """
    return _Rows(recs, truth, relevance, convention).metric("mar", k)


def mrr(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
        convention: str | Convention = "default") -> pl.Expr:
    """RR@k = 1 / position of the first relevant item (within k if ``rr_cutoff``), 0 without one.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[3]]}).select(mrr("r", "t", k=3)).item()
    0.3333333333333333
    """
    return _Rows(recs, truth, relevance, convention).metric("mrr", k)


def dcg(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
        convention: str | Convention = "default") -> pl.Expr:
    """DCG@k = sum_{i <= k} gain(rel_i) / log_b(i + 1), gain and b by ``gain`` and ``log_base``.

    >>> import polars as pl
    >>> df = pl.DataFrame({"r": [[1, 2]], "t": [[2, 1]], "rel": [[3.0, 1.0]]})
    >>> round(df.select(dcg("r", "t", k=2, relevance="rel", convention="trec_eval")).item(), 6)
    2.892789
    """
    return _Rows(recs, truth, relevance, convention).metric("dcg", k)


def ndcg(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
         convention: str | Convention = "default") -> pl.Expr:
    """NDCG@k = DCG@k / IDCG@k, the ideal by ``ideal``; IDCG = 0 gives ``zero_ideal``.

    >>> import polars as pl
    >>> df = pl.DataFrame({"r": [[1, 2]], "t": [[2, 1]], "rel": [[3.0, 1.0]]})
    >>> round(df.select(ndcg("r", "t", k=2, relevance="rel", convention="trec_eval")).item(), 6)
    0.796708
    """
    return _Rows(recs, truth, relevance, convention).metric("ndcg", k)


def hit_rate(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
             convention: str | Convention = "default") -> pl.Expr:
    """1 if any of the top k is relevant, else 0.

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[3]]}).select(hit_rate("r", "t", k=2)).item()
    0.0
    """
    return _Rows(recs, truth, relevance, convention).metric("hit_rate", k)


def r_precision(recs: Column, truth: Column, *, k: int, relevance: Column | None = None,
                convention: str | Convention = "default") -> pl.Expr:
    """hits within the top m / m, m = min(k, n_rel).

    >>> import polars as pl
    >>> pl.DataFrame({"r": [[1, 2, 3]], "t": [[2, 3]]}).select(r_precision("r", "t", k=10)).item()
    0.5
    """
    return _Rows(recs, truth, relevance, convention).metric("r_precision", k)


ap, ar, rr = map, mar, mrr


def metrics(recs: Column, truth: Column, *, k: int | Iterable[int], metrics: Iterable[str] | None = None,
            relevance: Column | None = None, convention: str | Convention = "default",
            beta: float | None = None) -> list[pl.Expr]:
    """Several metrics at several cutoffs, named ``"<metric>@<k>"`` (``f2@10`` for F-beta 2), the
    columns ``evaluate(...).per_user`` has. Polars computes the parts they share once.

    >>> import polars as pl
    >>> df = pl.DataFrame({"r": [[1, 2, 3]], "t": [[2]]})
    >>> df.select(metrics("r", "t", k=[1, 3], metrics=["precision", "mrr"])).row(0)
    (0.0, 0.3333333333333333, 0.0, 0.5)
    """
    conv = resolve(convention)
    request = _metrics.parse_request(metrics, k)
    if beta is not None:
        request = _metrics.MetricRequest(request.names, request.ks, float(beta))
    _metrics.check_cutoffs(conv, request.ks)
    rows = _Rows(recs, truth, relevance, conv)
    return [rows.metric(_metrics.internal_name(name), kk, request.beta).alias(request.column(name, kk))
            for name in request.names for kk in request.ks]


# -- the row model --------------------------------------------------------------------------------


def _as_expr(value, what: str) -> pl.Expr:
    if isinstance(value, str):
        return pl.col(value)
    if isinstance(value, pl.Expr):
        return value
    raise ParameterError(f"{what} must be a column name or a Polars expression of list type, got {value!r}.",
                         hint=f'For example {what}="items" or {what}=pl.col("items").')


def _check_k(k) -> int:
    (value,) = _metrics._parse_k(k) if _metrics._is_integer(k) else (None,)
    if value is None:
        raise ParameterError(f"k must be one positive integer here, got {k!r}.",
                             hint="Call the function once per cutoff, or use rankwise.expr.metrics(k=[...]).")
    return value


def _per_row(conv: Convention) -> Convention:
    """Refuse the knobs a single row cannot honour."""
    refused = {
        "empty_labels": (conv.empty_labels == "error",
                         "an expression cannot raise per row: use 'nan' and check for NaN, or evaluate()."),
        "empty_predictions": (conv.empty_predictions == "error",
                              "an expression cannot raise per row: use 'nan' and check for NaN, or evaluate()."),
        "min_score": (conv.min_score is not None,
                      "lists carry no scores: drop the items below the threshold from the list first, "
                      "e.g. with list.filter, and use convention.replace(min_score=None)."),
    }
    for knob, (bad, hint) in refused.items():
        if bad:
            raise ParameterError(
                f"rankwise.expr cannot apply {knob}={getattr(conv, knob)!r} (convention {conv.name!r}) to one row.",
                hint=hint)
    return conv


def _discount(i: int, base: float) -> float:
    """1 / log_b(i + 1) for the 1-based position i (the same arithmetic as sql/per_user.sql)."""
    return 1.0 / (math.log(i + 1.0) / math.log(base))


class _Rows:
    """The building blocks of every metric for one (recs, truth, relevance, convention).

    Each per-position piece is built the same way for every metric and cutoff, so Polars' common
    subexpression elimination computes it once per query.
    """

    def __init__(self, recs, truth, relevance, convention):
        self.conv = _per_row(resolve(convention))
        self.raw_recs = _as_expr(recs, "recs")
        self.raw_truth = _as_expr(truth, "truth")
        self.rel = None if relevance is None else _as_expr(relevance, "relevance").cast(pl.List(pl.Float64))
        self.recs = self.raw_recs.fill_null(pl.lit([]))
        if self.conv.duplicates == "first_shift":
            self.recs = self.recs.list.unique(maintain_order=True)
        self.truth = self.raw_truth
        thr = self.conv.relevance_threshold
        if self.rel is None:
            # every label has relevance 1: all relevant unless the threshold is above 1
            self.relevant = self.truth if 1.0 >= thr else self.truth.list.head(0)
        else:
            keep = self.rel.list.eval(((pl.element() > 0) & (pl.element() >= thr)).arg_true())
            self.relevant = self.truth.list.gather(keep)
        self.relevant = self.relevant.fill_null(pl.lit([]))
        self.n_recs = self.recs.list.len()
        self.n_rel = self.relevant.list.len()

    # -- per position (0-based i) --
    def item(self, i):
        return self.recs.list.get(i, null_on_oob=True)

    def flag(self, i):
        """1 if the item at position i + 1 is relevant, else 0."""
        return self.relevant.list.contains(self.item(i)).fill_null(False).cast(pl.Int32)

    def hits_to(self, i):
        """hits@(i + 1), one flat sum (Polars' CSE shares the flags; a chain of sums it does not)."""
        return pl.sum_horizontal([self.flag(j) for j in range(i + 1)])

    def gain(self, i):
        """gain(relevance of the item at position i + 1); labels with relevance 0 earn 0."""
        if self.conv.gain == "binary" or (self.rel is None and 1.0 >= self.conv.relevance_threshold):
            return self.flag(i).cast(pl.Float64)  # every relevant label earns 1 (relevance 1: 2^1 - 1 = 1)
        if self.rel is None:  # relevance 1 below the threshold: not relevant, but it still earns 1
            return self.truth.fill_null(pl.lit([])).list.contains(self.item(i)).fill_null(False).cast(pl.Float64)
        found = pl.concat_list([self.truth, self.item(i)]).list.eval(
            pl.element().head(pl.len() - 1).index_of(pl.element().last())).list.first()
        return self._gain_of(self.rel.list.get(found, null_on_oob=True)).fill_null(0.0)

    def _gain_of(self, r: pl.Expr) -> pl.Expr:
        thr = self.conv.relevance_threshold
        return {"binary": ((r > 0) & (r >= thr)).cast(pl.Float64), "linear": r,
                "exp2": pl.lit(2.0).pow(r) - 1.0}[self.conv.gain]

    # -- the per-(user, k) statistics of sql/per_user.sql, from the lists --
    def first_hit(self, k):
        if self.conv.rr_cutoff:  # the largest f_i (k - i) marks the first hit
            marks = pl.max_horizontal([self.flag(i) * (k - i) for i in range(k)])
            return pl.when(marks > 0).then(k + 1 - marks).otherwise(0)
        # the first hit anywhere in the list
        hit = pl.concat_list([self.relevant, self.recs]).list.eval(
            pl.element().is_first_distinct().not_()).list.slice(self.n_rel)
        return pl.when(hit.list.any()).then(hit.list.arg_max() + 1).otherwise(0)

    def dcg(self, k):
        b = self.conv.log_base
        return pl.sum_horizontal([self.gain(i) * _discount(i + 1, b) for i in range(k)])

    def _ideal_sum(self, n: pl.Expr, k: int) -> pl.Expr:
        """sum_{i <= min(n, k)} 1 / log_b(i + 1): the IDCG of n slots of gain 1."""
        b = self.conv.log_base
        return pl.sum_horizontal([pl.when(n > i).then(_discount(i + 1, b)).otherwise(0.0) for i in range(k)])

    def idcg(self, k):
        conv, b = self.conv, self.conv.log_base
        if conv.ideal == "k_ones":
            return pl.lit(sum(_discount(i, b) for i in range(1, k + 1)))
        binary_gains = conv.gain == "binary" or self.rel is None
        if conv.ideal == "predictions_topk":
            if binary_gains:  # gains are 0/1: the ideal puts the earning ones first
                return self._ideal_sum(pl.sum_horizontal([self.gain(i) for i in range(k)]), k)
            ordered = pl.concat_list([self.gain(i) for i in range(k)]).list.sort(descending=True)
        elif self.rel is None:  # ideal='labels', every label relevance 1
            earn = conv.gain != "binary" or 1.0 >= conv.relevance_threshold
            return self._ideal_sum(self.truth.list.len(), k) if earn else pl.lit(0.0)
        else:
            ordered = self.rel.list.eval(self._gain_of(pl.element())).list.sort(descending=True)
        return pl.sum_horizontal([ordered.list.get(i, null_on_oob=True).fill_null(0.0) * _discount(i + 1, b)
                                  for i in range(k)])

    def stats(self, k: int) -> dict[str, pl.Expr]:
        """The statistics the metric registry's formulas read (rankwise._expressions)."""
        flags, hits_to = [self.flag(i) for i in range(k)], [self.hits_to(i) for i in range(k)]
        hits_all = self.recs.list.set_intersection(self.relevant).list.len()
        return {
            "k": pl.lit(k, dtype=pl.Int64), "n_recs": self.n_recs, "n_rel": self.n_rel,
            "n_candidates": self.n_recs + self.n_rel - hits_all,
            "hits": hits_to[-1].cast(pl.Float64),
            "precision_sum": pl.sum_horizontal([f * h / (i + 1.0) for i, (f, h) in enumerate(zip(flags, hits_to))]),
            "hits_sum": pl.sum_horizontal([f * h for f, h in zip(flags, hits_to)]).cast(pl.Float64),
            "r_hits": pl.sum_horizontal([pl.when(self.n_rel > i).then(f).otherwise(0)
                                         for i, f in enumerate(flags)]).cast(pl.Float64),
            "first_hit": self.first_hit(k), "dcg": self.dcg(k), "idcg": self.idcg(k),
        }

    def defined(self, name: str, k: int, beta: float) -> pl.Expr:
        """The metric's formula from the registry over this row's statistics (null = undefined)."""
        if name not in _metrics.BY_NAME:
            raise ParameterError(f"Unknown metric {name!r}.", hint=f"Known: {', '.join(_metrics.USER_LEVEL)}.")
        stats = self.stats(k)
        return _metrics.BY_NAME[name].build(self.conv, beta, stats.__getitem__)

    def scored(self) -> pl.Expr:
        """The row is in the convention's users and is a valid input (else the metric is NaN)."""
        in_recs, in_truth = self.raw_recs.is_not_null(), self.raw_truth.is_not_null()
        rule = {"union": in_recs | in_truth, "labels": in_truth, "predictions": in_recs,
                "intersection": in_recs & in_truth}[self.conv.users]
        if self.conv.unjudged == "drop":
            rule = rule & (self.raw_truth.list.len().fill_null(0) > 0)
        truth = self.raw_truth.fill_null(pl.lit([]))
        valid = truth.list.n_unique() == truth.list.len()  # a repeated label (or two nulls)
        valid = valid & (truth.list.drop_nulls().list.len() == truth.list.len())
        recs = self.raw_recs.fill_null(pl.lit([]))
        valid = valid & (recs.list.drop_nulls().list.len() == recs.list.len())
        if self.conv.duplicates == "error":
            valid = valid & (recs.list.n_unique() == recs.list.len())
        if self.rel is not None:
            rel = self.rel.fill_null(pl.lit([]))
            valid = valid & (rel.list.len() == truth.list.len()) & (
                rel.list.drop_nulls().list.len() == rel.list.len())
            low = rel.list.min().fill_null(0.0)
            valid = valid & (low >= 0) & rel.list.sum().is_finite()
        return rule & valid

    def metric(self, name: str, k: int, beta: float = 1.0) -> pl.Expr:
        k = _check_k(k)
        _metrics.check_cutoffs(self.conv, (k,))
        conv = self.conv
        const = {"zero": pl.lit(0.0), "one": pl.lit(1.0), "nan": pl.lit(NAN)}
        value = (pl.when(~self.scored()).then(pl.lit(NAN))
                 .when(self.n_rel == 0).then(const[conv.empty_labels])
                 .when(self.n_recs == 0).then(const[conv.empty_predictions])
                 .otherwise(self.defined(name, k, beta).fill_null(NAN)))
        return value.cast(pl.Float64).alias(f"{name}@{k}")


# -- checks and DuckDB --------------------------------------------------------------------------


def check_lists(frame, recs: str, truth: str, relevance: str | None = None,
                convention: str | Convention = "default") -> None:
    """Raise the typed error ``evaluate`` would raise for rows the expressions score NaN: a null
    item, a repeated item (``duplicates='error'``) or label, a bad relevance list.

    >>> import polars as pl
    >>> check_lists(pl.DataFrame({"r": [[1, 1]], "t": [[1]]}), "r", "t")
    Traceback (most recent call last):
    ...
    rankwise.errors.DuplicateItemError: r: 1 lists repeat an item.
    Offending rows (first few):
    ...
    """
    conv = resolve(convention)
    lf = frame.lazy() if hasattr(frame, "lazy") else pl.LazyFrame(frame)
    cols = [recs, truth] + ([relevance] if relevance else [])
    df = lf.select(cols).with_row_index("row").collect()

    def fail(error, column, mask, problem, hint):
        bad = df.filter(mask)
        if bad.height:
            raise error(f"{column}: {bad.height} lists {problem}.", rows=bad.head(5), hint=hint)

    for column in (recs, truth):
        c = pl.col(column)
        fail(NullValueError, column, c.list.drop_nulls().list.len() != c.list.len(), "hold a null item",
             f"Drop nulls from the lists: pl.col({column!r}).list.drop_nulls().")
    if conv.duplicates == "error":
        fail(DuplicateItemError, recs, pl.col(recs).list.n_unique() != pl.col(recs).list.len(), "repeat an item",
             "De-duplicate the lists, or choose Convention(duplicates='first_shift') to keep each item's "
             "first occurrence.")
    fail(DuplicateItemError, truth, pl.col(truth).list.n_unique() != pl.col(truth).list.len(), "repeat a label",
         "Keep one label per item, e.g. the maximum relevance.")
    if relevance:
        r, t = pl.col(relevance).cast(pl.List(pl.Float64)), pl.col(truth)
        fail(InvalidRelevanceError, relevance, r.list.len() != t.list.len(),
             f"differ in length from {truth!r}", "Give one relevance per label, in the same order.")
        fail(InvalidRelevanceError, relevance,
             (r.list.drop_nulls().list.len() != r.list.len()) | (r.list.min() < 0) | ~r.list.sum().is_finite(),
             "hold a null, NaN, infinite or negative relevance", "Relevance must be a finite number >= 0.")


def install_duckdb(con) -> None:
    """Create the ``rankwise_<metric>`` macros (``sql/macros.sql``) in a DuckDB connection.

    >>> import duckdb
    >>> con = duckdb.connect()
    >>> install_duckdb(con)
    >>> con.execute("SELECT rankwise_precision([1, 2, 3], [1, 3], 2)").fetchone()[0]
    0.5
    """
    from . import _sql_files

    con.execute(_sql_files.read("macros"))
