"""The DuckDB engine's per-process database (engines/duckdb.py ``_session``, issue 39): sessions leave
nothing behind (temporary tables, registered frames, global settings), threads do not share one, and
an error drops it."""

from __future__ import annotations

import threading

import polars as pl
import pytest

import rankwise
from rankwise.engines import duckdb as engine

pytest.importorskip("duckdb")


def _inputs(n: int = 30, shift: int = 0):
    recs = pl.DataFrame({"user": [u for u in range(n) for _ in range(10)],
                         "item": [(u * 7 + j * 13 + shift) % 50 for u in range(n) for j in range(10)],
                         "rank": [j + 1 for _ in range(n) for j in range(10)]})
    truth = pl.DataFrame({"user": [u for u in range(n) for _ in range(5)],
                          "item": [(u * 7 + j * 26) % 50 for u in range(n) for j in range(5)],
                          "relevance": [float(j % 3) for _ in range(n) for j in range(5)]})
    train = pl.DataFrame({"user": [u % 17 for u in range(400)], "item": [(u * 11) % 60 for u in range(400)]})
    return recs, truth, train


def _fresh(monkeypatch, fn):
    """``fn()`` with every session on its own database (the behaviour before the shared one)."""
    with monkeypatch.context() as m:
        m.setattr(engine, "_SHARED_LOCK", threading.Lock())
        engine._SHARED_LOCK.acquire()  # held: every session opens its own database
        try:
            return fn()
        finally:
            engine._SHARED_LOCK.release()


def test_shared_database_gives_the_fresh_values_and_leaves_nothing(monkeypatch):
    recs, truth, train = _inputs()
    metrics = ["ndcg", "precision", "map", "novelty", "arp", "item_coverage", "gini"]

    def run():
        return rankwise.evaluate(recs, truth, k=[5, 10], metrics=metrics, train=train, backend="duckdb")

    fresh = _fresh(monkeypatch, run)
    for _ in range(3):  # beyond (sets disabled_optimizers) then accuracy, on the same database
        shared = run()
        assert shared.per_user.equals(fresh.per_user)
        assert shared.summary.equals(fresh.summary)
        acc = rankwise.evaluate(recs, truth, k=[5, 10], metrics=["ndcg", "map"], backend="duckdb")
        acc_fresh = _fresh(monkeypatch, lambda: rankwise.evaluate(recs, truth, k=[5, 10], metrics=["ndcg", "map"],
                                                                 backend="duckdb"))
        assert acc.per_user.equals(acc_fresh.per_user) and acc.summary.equals(acc_fresh.summary)
    con = engine._SHARED["db"].cursor()
    assert con.execute("SELECT COUNT(*) FROM duckdb_tables() WHERE temporary").fetchall() == [(0,)]
    assert con.execute("SELECT COUNT(*) FROM duckdb_views() WHERE temporary AND NOT internal").fetchall() == [(0,)]
    assert con.execute("SELECT current_setting('disabled_optimizers')").fetchall()[0][0] in ("", None)
    assert con.execute("SELECT current_setting('threads')").fetchall() == \
        engine._duckdb_connect.connect().execute("SELECT current_setting('threads')").fetchall()


def test_threads_and_errors():
    results, errors = {}, []

    def run(i):
        try:
            recs, truth, _ = _inputs(20 + i, shift=i)
            results[i] = rankwise.evaluate(recs, truth, k=10, metrics=["ndcg", "recall"], backend="duckdb")
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, res in results.items():
        recs, truth, _ = _inputs(20 + i, shift=i)
        again = rankwise.evaluate(recs, truth, k=10, metrics=["ndcg", "recall"], backend="duckdb")
        assert again.per_user.equals(res.per_user) and again.summary.equals(res.summary)
    before = engine._SHARED.get("db")
    with pytest.raises(Exception):
        with engine._session(None) as con:
            con.execute("SET threads = 1")
            con.execute("SELECT * FROM no_such_table")
    assert engine._SHARED.get("db") is not before  # dropped after the error
    recs, truth, _ = _inputs()
    rankwise.evaluate(recs, truth, k=10, metrics=["ndcg"], backend="duckdb")
    con = engine._SHARED["db"].cursor()
    assert con.execute("SELECT current_setting('threads')").fetchall() == \
        engine._duckdb_connect.connect().execute("SELECT current_setting('threads')").fetchall()
