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
                            convention=convention).per_user
    total = train["user"].n_unique() if conv.popularity == "users" else train.height
    nov = _with_popularity(recs, train, conv.popularity).select(
        "user", expr.novelty("pop", k=k, n_users=total, convention=convention))
    arp = _with_popularity(recs, train, conv.arp_popularity).select("user", expr.arp("pop", k=k, convention=convention))
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
                            convention=convention).per_user
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
