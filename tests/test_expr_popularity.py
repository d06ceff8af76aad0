"""rankwise.expr.novelty and arp on list columns, and their DuckDB macros (sql/macros.sql), against
evaluate(..., train=...) under every convention that differs in their knobs: the popularity list is
computed here from the same train rows."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import rankwise
from rankwise import expr
from rankwise.conventions import resolve

CONVENTIONS = ["default", "evidently", "recommenders", "replay", "rectools", "recbole"]


def _every_metric(convention):
    """The preset's knobs on every metric: evaluate() refuses a metric the preset's library lacks
    (novelty under recommenders, ild under rectools), while these tests check each knob set."""
    return resolve(convention).replace(metrics=None)


def _data():
    rng = np.random.default_rng(11)
    lists = [(u, [int(x) for x in rng.choice(30, size=int(rng.integers(0, 9)), replace=False)]) for u in range(120)]
    train = pl.DataFrame({"user": rng.integers(0, 50, 400), "item": rng.integers(0, 24, 400)})  # items 24-29 cold
    recs = pl.DataFrame(lists, schema={"user": pl.Int64, "item": pl.List(pl.Int64)}, orient="row")
    return recs, train


def _with_popularity(recs: pl.DataFrame, train: pl.DataFrame, rule: str) -> pl.DataFrame:
    """(user, pop): each recommended item's train popularity by ``rule``, null for a cold item."""
    pop = (train.group_by("item").agg(pl.col("user").n_unique().alias("pop")) if rule == "users"
           else train.group_by("item").agg(pl.len().alias("pop")))
    lookup = dict(zip(pop["item"].to_list(), pop["pop"].to_list()))
    return recs.select("user", pl.Series("pop", [[lookup.get(i) for i in items] for items in recs["item"]],
                                         dtype=pl.List(pl.Int64)))


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("k", [1, 3, 8])
def test_novelty_and_arp_expressions_equal_evaluate(convention, k):
    recs, train = _data()
    conv = resolve(convention)
    got = rankwise.evaluate(recs, None, k=k, metrics=["novelty", "arp"], train=train, backend="polars",
                            convention=_every_metric(convention)).per_user
    total = train["user"].n_unique() if conv.popularity == "users" else train.height
    nov = _with_popularity(recs, train, conv.popularity).select(
        "user", expr.novelty("pop", k=k, n_users=total, convention=_every_metric(convention)))
    arp = _with_popularity(recs, train, conv.arp_popularity).select("user", expr.arp("pop", k=k, convention=_every_metric(convention)))
    want = got.join(nov, on="user").join(arp, on="user", suffix="_expr")
    for metric in ("novelty", "arp"):
        expected = f"{metric}@{k}"
        column = expected + "_expr" if expected + "_expr" in want.columns else expected + "_right"
        for user, a, b in want.select("user", expected, column).iter_rows():
            same = (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12 * max(1.0, abs(a))
            assert same, (convention, metric, user, a, b)


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_novelty_and_arp_macros_equal_evaluate(convention):
    import duckdb

    recs, train = _data()
    conv, k = resolve(convention), 3
    got = rankwise.evaluate(recs, None, k=k, metrics=["novelty", "arp"], train=train, backend="duckdb",
                            convention=_every_metric(convention)).per_user
    total = train["user"].n_unique() if conv.popularity == "users" else train.height
    knobs = (f"cold_items := '{conv.cold_items}', list_denominator := '{conv.list_denominator}'")
    with duckdb.connect() as con:
        expr.install_duckdb(con)
        con.register("nov", _with_popularity(recs, train, conv.popularity))
        con.register("arp", _with_popularity(recs, train, conv.arp_popularity))
        macros = con.sql(f"""
            SELECT n.user, rankwise_novelty(n.pop, {k}, {total}, {knobs},
                                            novelty_normalize := '{conv.novelty_normalize}',
                                            info_log_base := {conv.info_log_base!r}) AS novelty,
                   rankwise_arp(a.pop, {k}, {knobs}) AS arp
            FROM nov AS n JOIN arp AS a ON a.user = n.user""").pl()
    both = got.join(macros, on="user")
    for metric in ("novelty", "arp"):
        for user, a, b in both.select("user", f"{metric}@{k}", metric).iter_rows():
            same = (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12 * max(1.0, abs(a))
            assert same, (convention, metric, user, a, b)


# -- ild: each recommended item's embedding as a list parallel to recs ---------------------------

ILD_CONVENTIONS = ["default", "evidently", "recommenders", "rectools"]


def _embeddings():
    """(item, embedding) for items 0-23: item 5 a zero vector (no direction), items 24-29 absent."""
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(24, 4)).round(3)
    vectors[5] = 0.0
    return pl.DataFrame({"item": range(24), "embedding": vectors.tolist()})


def _with_vectors(recs: pl.DataFrame, items: pl.DataFrame) -> pl.DataFrame:
    lookup = dict(zip(items["item"].to_list(), items["embedding"].to_list()))
    return recs.select("user", pl.Series("vec", [[lookup.get(i) for i in row] for row in recs["item"]],
                                         dtype=pl.List(pl.List(pl.Float64))))


def _naive_ild(vectors: list, k: int, conv) -> float:
    """The definition, pairs enumerated: mean (or / m) of 1 - cos over the pairs of nonzero vectors."""
    units = [np.asarray(v) / np.linalg.norm(v) for v in vectors[:k] if v is not None and np.linalg.norm(v) > 0]
    m = len(units)
    if m < 2:
        return 0.0 if conv.ild_short == "zero" else math.nan
    dist = sum(1 - float(units[i] @ units[j]) for i in range(m) for j in range(i + 1, m))
    return dist / (m * (m - 1) / 2 if conv.ild_denominator == "pairs" else m)


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12 * max(1.0, abs(a))


@pytest.mark.parametrize("convention", ILD_CONVENTIONS)
@pytest.mark.parametrize("k", [1, 3, 8])
def test_ild_expression_equals_evaluate_and_the_pairs(convention, k):
    recs, _ = _data()
    items, conv = _embeddings(), resolve(convention)
    got = rankwise.evaluate(recs, None, k=k, metrics=["ild"], item_features=items, backend="polars",
                            convention=_every_metric(convention)).per_user
    rows = _with_vectors(recs, items)
    mine = rows.select("user", "vec", expr.ild("vec", k=k, convention=_every_metric(convention)).alias("expr"))
    both = got.join(mine, on="user")
    assert both.height == recs.height
    for user, a, b, vectors in both.select("user", f"ild@{k}", "expr", "vec").iter_rows():
        assert _close(a, b), (convention, user, a, b)
        assert _close(_naive_ild(vectors, k, conv), b), (convention, user, vectors, b)


@pytest.mark.parametrize("convention", ILD_CONVENTIONS)
def test_ild_macro_equals_evaluate(convention):
    import duckdb

    recs, _ = _data()
    items, conv, k = _embeddings(), resolve(convention), 5
    got = rankwise.evaluate(recs, None, k=k, metrics=["ild"], item_features=items, backend="duckdb",
                            convention=_every_metric(convention)).per_user
    with duckdb.connect() as con:
        expr.install_duckdb(con)
        con.register("t", _with_vectors(recs, items))
        macros = con.sql(f"""SELECT user, rankwise_ild(vec, {k}, ild_denominator := '{conv.ild_denominator}',
                                                      ild_short := '{conv.ild_short}') AS macro FROM t""").pl()
    both = got.join(macros, on="user")
    assert both.height == recs.height
    for user, a, b in both.select("user", f"ild@{k}", "macro").iter_rows():
        assert _close(a, b), (convention, user, a, b)


def test_ild_rows_evaluate_would_reject_are_nan():
    rows = pl.DataFrame({"vec": [[[1.0, 0.0], [1.0]], [[1.0, math.inf], [0.0, 1.0]], [[1.0, None], [0.0, 1.0]], None,
                                 [[1.0, 0.0], [0.0, 3.0]]]})
    got = rows.select(expr.ild("vec", k=5)).to_series().to_list()
    assert [math.isnan(v) for v in got] == [True, True, True, True, False] and got[-1] == 1.0


def test_a_preset_whose_library_lacks_the_metric_refuses_it():
    """expr.novelty(convention='recommenders') and expr.ild(convention='replay') computed values their
    libraries never give; evaluate() and expr.mrr(convention='spark') refuse such a metric."""
    import rankwise
    from rankwise import expr

    for call in (lambda: expr.novelty("pop", k=3, n_users=8, convention="recommenders"),
                 lambda: expr.ild("vec", k=3, convention="replay"),
                 lambda: expr.arp("pop", k=3, convention="replay")):
        with pytest.raises(rankwise.ParameterError, match="has no metric"):
            call()
    assert isinstance(expr.arp("pop", k=3, convention="rectools"), pl.Expr)


def test_popularity_rows_evaluate_would_reject_are_nan_and_no_train_users_count_as_one():
    """A negative, NaN or infinite popularity (no train count is) makes its row NaN, as ild's invalid rows;
    the other rows keep their values. U_T = 0 is read as 1, as the engines' max(U_T, 1) does: by hand,
    every item is then cold, counted as one user, -log2(1 / 1) = 0."""
    import duckdb

    rows = pl.DataFrame({"pop": [[-1.0, 2.0], [math.nan, 2.0], [math.inf], [4.0, 1.0, None], [0.0, None]]})
    novelty = rows.select(expr.novelty("pop", k=3, n_users=8)).to_series().to_list()
    arp = rows.select(expr.arp("pop", k=3)).to_series().to_list()
    # row 4 by hand (U_T = 8): (-log2(4/8) - log2(1/8) - log2(1/8)) / 3 = 7/3; arp (4 + 1 + 0) / 3
    assert [math.isnan(v) for v in novelty[:3]] == [True] * 3 and math.isclose(novelty[3], 7 / 3, rel_tol=1e-15)
    assert [math.isnan(v) for v in arp[:3]] == [True] * 3 and arp[3] == 5 / 3
    assert rows.select(expr.novelty("pop", k=3, n_users=0)).to_series()[4] == 0.0
    with duckdb.connect() as con:
        expr.install_duckdb(con)
        con.register("t", rows.with_row_index("i"))
        got = con.sql("SELECT rankwise_novelty(pop, 3, 8), rankwise_arp(pop, 3), rankwise_novelty(pop, 3, 0) "
                      "FROM t ORDER BY i").fetchall()
    assert [math.isnan(n) and math.isnan(a) for n, a, _ in got[:3]] == [True] * 3
    assert math.isclose(got[3][0], 7 / 3, rel_tol=1e-15) and got[3][1] == 5 / 3 and got[4][2] == 0.0


@pytest.mark.parametrize("call", ["novelty", "arp", "ild"])
def test_a_column_of_the_wrong_type_is_a_typed_error_naming_it(call):
    """Text where popularity counts go, numbers where vectors go: a DtypeMismatchError naming the column
    when the query is planned (a raw Polars InvalidOperationError before)."""
    df = pl.DataFrame({"names": [["a", "b"]], "counts": [[3, 1]]})
    build = {"novelty": lambda c: expr.novelty(c, k=3, n_users=8), "arp": lambda c: expr.arp(c, k=3),
             "ild": lambda c: expr.ild(c, k=3)}[call]
    column = "counts" if call == "ild" else "names"
    with pytest.raises(rankwise.DtypeMismatchError, match=repr(column)):
        df.select(build(column))
