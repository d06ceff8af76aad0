"""The rendered SQL on real engines (DuckDB, PostgreSQL, Spark local mode, ClickHouse via chdb)
gives the Polars backend's per-user values and summary, to 1e-12 relative.

One generated batch per run holds every edge case (see tests/engines.py); each engine runs the
script ``rankwise.sql`` renders for its dialect, exactly as a user would, over user-shaped tables
(user, item, rank or score; user, item, relevance; an empty list = one row with a NULL item).
"""

from __future__ import annotations

import uuid

import engines as E
import polars as pl
import pytest

from rankwise.engines.polars import beyond as PB
import rankwise

CONVENTIONS = {
    "default": rankwise.Convention(),
    "labels_ideal_linear_log2": rankwise.Convention(ideal="labels", gain="linear", log_base=2.0),
    "threshold_binary": rankwise.Convention(relevance_threshold=2.0, gain="binary", ap_denominator="n_rel"),
    "everything_else": rankwise.Convention(
        users="intersection", empty_labels="zero", empty_predictions="nan", precision_denominator="min_k_len",
        ap_denominator="min_k_nrel", f_aggregation="of_means", zero_ideal="nan", rr_cutoff=False,
        log_base=10.0, ties="item_desc", duplicates="first_shift"),
    "labels_only": rankwise.Convention(users="labels", empty_labels="one", precision_denominator="min_k_nrel",
                                       ap_denominator="k"),
    "predictions_only": rankwise.Convention(users="predictions", ap_denominator="min_k_len"),
}
# (convention, metrics): the last ones request a subset, F2, and a single k beyond every list
CASES = [(name, None) for name in CONVENTIONS] + [("default", ["ndcg", "f2", "mrr"])] + [
    # trec_eval's gain measures and rbp_resid, computed only when named (metrics=None leaves them out)
    ("labels_ideal_linear_log2", ["g", "bin_g", "ndcg_rel", "rndcg", "rbp_resid", "ndcg"])]


@pytest.fixture(scope="module")
def engine(engine_name, request):
    """One engine per module and engine name."""
    if engine_name == "duckdb":
        eng = E.DuckDBEngine()
    elif engine_name == "postgres":
        eng = E.PostgresEngine(request.getfixturevalue("pg_dsn"))
    elif engine_name == "spark":
        eng = E.SparkEngine(request.getfixturevalue("spark"))
    elif engine_name == "clickhouse":
        eng = E.ChdbEngine()
    else:
        pytest.fail(f"unknown engine {engine_name!r}")
    yield eng
    eng.close()


# Spark takes 2-6 s per script: it runs every case with both ranking modes, the id types alternating
# (int ids for one mode, string ids for the other), half the grid the other engines run
ON_SLOW_ENGINE = {"spark": (("test_rendered_sql_equals_polars",),
                            lambda p: p["string_ids"] == ((p["case"] + p["by_score"]) % 2 == 1))}


@pytest.mark.parametrize("string_ids", [False, True], ids=["int_ids", "str_ids"])
@pytest.mark.parametrize("by_score", [False, True], ids=["ranks", "scores"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{c}-{','.join(m or ['all'])}" for c, m in CASES])
def test_rendered_sql_equals_polars(engine, case, string_ids, by_score):
    name, metrics = CASES[case]
    conv = CONVENTIONS[name]
    ks = E.KS if metrics is None else (20,)
    recs, truth, scores = E.generate(seed=case * 4 + 2 * string_ids + by_score, string_ids=string_ids,
                                     by_score=by_score)
    r, t = E.api_frames(recs, truth, scores, string_ids, by_score)
    expected = rankwise.evaluate(r, t, k=list(ks), metrics=metrics, convention=conv, backend="polars")
    wr, wt = E.warehouse_frames(r, t)
    per_user, summary = engine.run(wr, wt, ks=ks, metrics=metrics, convention=conv,
                                   **({"score_col": "score", "rank_col": None} if by_score else {}))
    E.assert_same(expected, per_user, summary, ks, f_name="f2" if metrics else "f1")
    if metrics and "f2" in metrics:
        assert set(per_user.columns) >= {"ndcg", "fbeta", "mrr"}
        assert "map" not in per_user.columns


def test_relevance_defaults_to_one(engine):
    """Without a relevance column every label has relevance 1 (as evaluate() without one)."""
    recs, truth, scores = E.generate(seed=99, string_ids=False, by_score=False)
    truth = {u: {i: 1.0 for i in lab} for u, lab in truth.items()}
    r, t = E.api_frames(recs, truth, scores, False, False)
    expected = rankwise.evaluate(r, t.drop("relevance"), k=[3], backend="polars", metrics="all")
    wr, wt = E.warehouse_frames(r, t)
    per_user, summary = engine.run(wr, wt.drop("relevance"), ks=(3,), relevance_col=None)
    E.assert_same(expected, per_user, summary, (3,))


def test_null_means_undefined(engine):
    """The SQL's NULL is the API's NaN: a user with no relevant label has NULL metrics under
    empty_labels='nan', and the summary leaves them out of n_users. User 3's only label row is the
    no-labels marker (a NULL item) carrying a relevance: still no relevant label."""
    r, t = E.api_frames({1: [10, 11], 2: [10], 3: [10]}, {1: {11: 1.0}, 2: {10: 0.0}, 3: {}}, {}, False, False)
    wr, wt = E.warehouse_frames(r, t)
    wt = wt.with_columns(pl.col("relevance").fill_null(1.0))  # the marker row of user 3
    per_user, summary = engine.run(wr, wt, ks=(2,), metrics=["precision", "recall"],
                                   convention=rankwise.Convention(empty_labels="nan"))
    values = {row["user_id"]: (row["precision"], row["recall"]) for row in per_user.iter_rows(named=True)}
    assert values[1] == (pytest.approx(0.5), pytest.approx(1.0))
    assert values[2] == values[3] == (None, None)
    assert summary.filter(pl.col("metric") == "precision").row(0)[2:] == (pytest.approx(0.5), 1)


def test_the_scripts_summary_has_every_metric_and_k_when_no_user_is_evaluated(engine):
    """users='intersection' and no user in both tables: evaluate() gives a row per metric and k (value
    NaN, n_users 0); the script's summary had no row at all."""
    recs = pl.DataFrame({"user": [1], "item": [10], "rank": [1]})
    truth = pl.DataFrame({"user": [2], "item": [10], "relevance": [1.0]})
    conv = rankwise.Convention(users="intersection")
    per_user, summary = engine.run(recs, truth, ks=(1, 3), metrics=["precision", "f1"], convention=conv)
    assert per_user.height == 0
    rows = sorted(summary.select("metric", "k", "value", "n_users").rows())
    assert rows == [("f1", 1, None, 0), ("f1", 3, None, 0), ("precision", 1, None, 0), ("precision", 3, None, 0)]


# (what is wrong, the text the error must hold, recommendations rows, ground-truth rows)
MALFORMED = [
    ("a repeated item", "recommendations: an item repeated in one user's list",
     [(1, 10, 1), (1, 10, 2), (2, 11, 1)], [(1, 10, 1.0), (2, 11, 1.0)]),
    ("a repeated label", "ground truth: an item labelled twice for one user",
     [(1, 10, 1), (2, 11, 1)], [(1, 10, 1.0), (1, 10, 2.0), (2, 11, 1.0)]),
    ("a negative relevance", "ground truth: NULL, NaN, infinite or negative relevance",
     [(1, 10, 1), (2, 11, 1)], [(1, 10, -1.0), (2, 11, 1.0)]),
    ("a NULL user", "recommendations: NULL user, item, rank or score",
     [(1, 10, 1), (None, 11, 1)], [(1, 10, 1.0), (2, 11, 1.0)]),
    ("a rank below 1", "recommendations: rank below 1", [(1, 10, 0), (2, 11, 1)], [(1, 10, 1.0), (2, 11, 1.0)]),
    ("a repeated rank", "recommendations: a rank repeated in one user's list",
     [(1, 10, 1), (1, 12, 1), (2, 11, 1)], [(1, 10, 1.0), (2, 11, 1.0)]),
    # a NULL item marks an empty list only as its user's one row: in a list it would take a rank (and
    # shift the items after it), among labels it would be dropped; evaluate() refuses both
    ("a NULL item in a list", "recommendations: a NULL item next to other rows of its user",
     [(1, 10, 1), (1, None, None), (1, 12, 2), (2, 11, 1)], [(1, 10, 1.0), (2, 11, 1.0)]),
    ("a NULL item among labels", "ground truth: a NULL item next to other rows of its user",
     [(1, 10, 1), (2, 11, 1)], [(1, 10, 1.0), (1, None, 1.0), (2, 11, 1.0)]),
]


RECS_SCHEMA = {"user": pl.Int64, "item": pl.Int64, "rank": pl.Int64}
TRUTH_SCHEMA = {"user": pl.Int64, "item": pl.Int64, "relevance": pl.Float64}


def _failed_check(engine, recs: list, truth: list):
    """Load the rows as rw_recs and rw_truth, run the script up to its check, which must fail:
    (the script, the error's text)."""
    engine.load("rw_recs", pl.DataFrame(recs, schema=RECS_SCHEMA, orient="row"))
    engine.load("rw_truth", pl.DataFrame(truth, schema=TRUTH_SCHEMA, orient="row"))
    script = rankwise.sqlgen.render.render(None, [1], "default", engine.dialect,
                                    {"recommendations": engine.qualified("rw_recs"),
                                     "ground_truth": engine.qualified("rw_truth")}, schema=engine.schema)
    statements = script.statements()
    for statement in statements[:statements.index(script.check)]:
        engine.execute(statement)
    with pytest.raises(Exception) as failure:
        engine.query(script.check)
    return script, str(failure.value).replace("\\'", "'")  # ClickHouse escapes the quote in user's


def test_a_failed_input_check_stops_the_script(engine):
    """The script refuses what evaluate() refuses: the check statement fails with a message naming
    the problem and the tables, before the per-user table exists (a previous run's is dropped first);
    valid tables (an empty list as a NULL-item row included) pass the same check."""
    good_recs = pl.DataFrame([(1, 10, 1), (2, None, None)], schema=RECS_SCHEMA, orient="row")
    good_truth = pl.DataFrame([(1, 10, 1.0), (2, 11, 1.0)], schema=TRUTH_SCHEMA, orient="row")
    per_user, _ = engine.run(good_recs, good_truth, ks=(1,))
    assert per_user.height == 2  # the check passed; this run's per-user table is there
    for what, message, recs, truth in MALFORMED:
        script, text = _failed_check(engine, recs, truth)
        assert f"rankwise: {message}" in text, (what, text)
        if engine.dialect != "clickhouse":  # it cuts the message in its error at ~70 characters
            assert "input check failed" in text and "rw_recs" in text, (what, text)
        with pytest.raises(Exception):  # dropped before the check: nothing of the last good run is left
            engine.query(f"SELECT COUNT(*) AS n FROM {script.names['per_user']}")


# (the error's text, recommendations rows, ground-truth rows, the offending (user, item) rows): the
# smallest offending user and the smallest offending item come from two rows, neither offending
EXAMPLE_TRAPS = [
    ("an item repeated", [(1, 50, 1), (1, 50, 2), (1, 10, 3), (2, 10, 1), (2, 10, 2)], [(1, 10, 1.0)],
     [(1, 50), (2, 10)]),
    ("an item labelled twice", [(1, 10, 1)], [(1, 50, 1.0), (1, 50, 2.0), (1, 10, 1.0), (2, 10, 1.0), (2, 10, 3.0)],
     [(1, 50), (2, 10)]),
    ("NULL user, item, rank or score", [(1, 10, 1), (2, 12, None), (None, 11, 1)], [(1, 10, 1.0)],
     [(2, 12), (None, 11)]),
    ("rank below 1", [(1, 10, 1), (1, 12, 0), (2, 11, 0), (2, 10, 1)], [(1, 10, 1.0)], [(1, 12), (2, 11)]),
    ("a rank repeated", [(1, 20, 1), (1, 30, 1), (2, 11, 1), (2, 12, 1), (1, 5, 2)], [(1, 10, 1.0)],
     [(1, 20), (1, 30), (2, 11), (2, 12)]),
    ("negative relevance", [(1, 10, 1)], [(1, 50, -1.0), (1, 10, 1.0), (2, 10, -1.0)], [(1, 50), (2, 10)]),
]


def test_a_failed_check_shows_an_offending_row(engine):
    """The example of a failed check is one offending row, its user and item from that row: the
    smallest user and the smallest item of the offending rows named a row that did not offend."""
    for message, recs, truth, offending in EXAMPLE_TRAPS:
        _, text = _failed_check(engine, recs, truth)
        assert message in text, (message, text)
        if engine.dialect != "clickhouse":  # it cuts the message in its error at ~70 characters
            shown = [f"e.g. user {'NULL' if u is None else u}, item {i}" for u, i in offending]
            assert any(example in text for example in shown), (message, text)


def test_text_ranks_and_scores_rank_as_numbers(engine):
    """A text rank or score column is ranked by its numbers, as the checks read it (CAST), not as words
    ('10' sorts before '2' as text). User 1's ranks 2, 10, 1 put items 12, 10, 11 in that order; its
    scores 9, 10, 1.5 put 11, 10, 12. Expected: evaluate() on the same rows with numeric columns, and by
    hand (precision@2 = 1/2: one of the top two is relevant; MRR = 1/2: the relevant item is second)."""
    truth = pl.DataFrame({"user": [1], "item": [10], "relevance": [1.0]})
    ranked = pl.DataFrame({"user": [1, 1, 1], "item": [10, 11, 12], "rank": ["2", "10", "1"]})
    scored = pl.DataFrame({"user": [1, 1, 1], "item": [10, 11, 12], "score": ["9", "10", "1.5"]})
    for recs, kw in ((ranked, {}), (scored, {"score_col": "score", "rank_col": None})):
        numeric = recs.with_columns(pl.col("rank").cast(pl.Int64) if "rank" in recs.columns
                                    else pl.col("score").cast(pl.Float64))
        want = rankwise.evaluate(numeric, truth, k=2, metrics=["precision", "mrr"], backend="polars",
                                 **({"score_col": "score"} if kw else {}))
        per_user, _ = engine.run(recs, truth, ks=(2,), metrics=["precision", "mrr"], **kw)
        got = per_user.row(0, named=True)
        assert (got["precision"], got["mrr"]) == pytest.approx((0.5, 0.5)), kw
        assert (got["precision"], got["mrr"]) == pytest.approx(want.per_user.select("precision@2", "mrr@2").row(0))


def test_a_rank_that_is_not_an_integer_stops_the_script(engine):
    """A fractional rank is refused as evaluate() refuses a float rank column (InvalidRankError), with
    the other rank problems: 0.6 would pass "rank below 1" once cast to an integer (1)."""
    recs = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 11], "rank": [0.6, 2.0, 1.0]})
    truth = pl.DataFrame({"user": [1, 2], "item": [10, 11], "relevance": [1.0, 1.0]})
    with pytest.raises(rankwise.InvalidRankError):
        rankwise.evaluate(recs, truth, k=1, backend="polars")
    with pytest.raises(Exception) as failure:
        engine.run(recs, truth, ks=(1,))
    assert "rankwise: recommendations: rank below 1 or not an integer" in str(failure.value)
    whole = recs.with_columns(rank=pl.Series([3.0, 2.0, 1.0]))  # whole numbers in a float column: ranks
    per_user, _ = engine.run(whole, truth, ks=(1,), metrics=["precision"])
    assert dict(per_user.select("user_id", "precision").iter_rows()) == {1: 0.0, 2: 1.0}  # 11 then 10 for user 1


def test_rendered_score_entropy_equals_evaluate(engine):
    """score_entropy in a script that ranks by score_col: Evidently's entropy (nats) of the softmax of
    the pooled top-k scores, as evaluate() gives it, and by hand at k = 1 (top scores 0.9, 2.0, 0.0).
    User 4's list is empty (a NULL-item row); user 1's tie at 0.5 straddles k = 2."""
    import math

    from rankwise.sqlgen.beyond import render_beyond

    rows = [(1, 5, 0.9), (1, 6, 0.5), (1, 7, 0.5), (2, 5, 2.0), (2, 8, -1.0), (3, 9, 0.0), (4, None, None)]
    recs = pl.DataFrame(rows, schema={"user": pl.Int64, "item": pl.Int64, "score": pl.Float64}, orient="row")
    engine.load("rw_scored", recs)
    script = render_beyond(["score_entropy", "personalization"], [1, 2, 3], "default", engine.dialect,
                           {"recommendations": engine.qualified("rw_scored")}, score_col="score",
                           schema=engine.schema)
    for statement in script.statements()[:-3]:
        engine.execute(statement)
    got = {r["k"]: r["value"] for r in engine.query(script.catalog).iter_rows(named=True)
           if r["metric"] == "score_entropy"}
    want = rankwise.evaluate(recs.drop_nulls(), None, k=[1, 2, 3], metrics=["score_entropy"], backend="polars")
    assert got == pytest.approx({r["k"]: r["value"] for r in want.summary.iter_rows(named=True)}, rel=1e-12)
    weights = [math.exp(x) for x in (0.9, 2.0, 0.0)]
    assert got[1] == pytest.approx(-sum(w / sum(weights) * math.log(w / sum(weights)) for w in weights), rel=1e-12)


# (what is wrong, the text the error must hold, the table it replaces, its rows): the beyond-accuracy
# script checks the recommendations as the accuracy script does and its side inputs as evaluate() does
BEYOND_MALFORMED = [
    ("a repeated item", "recommendations: an item repeated in one user's list", "recommendations",
     [(1, 10, 1), (1, 10, 2)]),
    # the example is one row, (8, NULL) or (NULL, 5), not user 8 with item 5
    ("a NULL train item", "train: NULL user or item", "train", [(7, 10), (8, None), (None, 5)]),
    ("a NULL catalog item", "items: NULL item", "items", [(10,), (None,)]),
    ("a repeated feature", "item_features: a feature repeated for one item", "item_features",
     [(10, "a", 1.0), (10, "a", 2.0)]),
    ("a NaN feature value", "item_features: NaN or infinite value", "item_features",
     [(10, "a", float("nan")), (11, "a", 1.0)]),
]
BEYOND_SCHEMAS = {"recommendations": {"user": pl.Int64, "item": pl.Int64, "rank": pl.Int64},
                  "train": {"user": pl.Int64, "item": pl.Int64}, "items": {"item": pl.Int64},
                  "item_features": {"item": pl.Int64, "feature": pl.String, "value": pl.Float64}}
BEYOND_GOOD = {"recommendations": [(1, 10, 1), (1, 11, 2), (2, None, None)], "train": [(7, 10), (8, 11)],
               "items": [(10,), (11,), (12,)], "item_features": [(10, "a", 1.0), (11, "b", 1.0)]}


def test_a_failed_input_check_stops_the_beyond_script(engine):
    """The beyond-accuracy script refuses what evaluate() refuses, in the recommendations and in train,
    items and item_features: a check statement fails with a message naming the problem and the tables
    before any stage is made (an earlier run's stages are dropped first); valid tables pass. Spark
    plans every statement for a second or more: one side-input case there (its recommendations checks
    are sql/checks.sql, run there by test_a_failed_input_check_stops_the_script)."""
    from rankwise.sqlgen.beyond import render_beyond

    def load(rows_by_table):
        for name, rows in rows_by_table.items():
            engine.load(f"rw_b_{name}", pl.DataFrame(rows, schema=BEYOND_SCHEMAS[name], orient="row"))
        return render_beyond(["novelty", "item_coverage", "ild"], [2], "default", engine.dialect,
                             {name: engine.qualified(f"rw_b_{name}") for name in BEYOND_SCHEMAS}, schema=engine.schema)

    script = load(BEYOND_GOOD)
    for statement in script.statements()[:-3]:  # views, checks (they pass), stages
        engine.execute(statement)
    if engine.dialect != "spark":
        assert engine.query(script.per_user).height == 2  # user 2's list is empty
    cases = BEYOND_MALFORMED[3:4] if engine.dialect == "spark" else BEYOND_MALFORMED
    for what, message, table, rows in cases:
        script = load({**BEYOND_GOOD, table: rows})
        statements = script.statements()
        first_check = statements.index(script.checks[0])
        for statement in statements[:first_check]:
            engine.execute(statement)
        with pytest.raises(Exception) as failure:
            for check in script.checks:
                engine.query(check)
        text = str(failure.value).replace("\\'", "'")  # ClickHouse escapes the quote in user's
        assert f"rankwise: {message}" in text, (what, text)
        if engine.dialect != "clickhouse":  # it cuts the message in its error at ~70 characters
            assert "input check failed" in text and f"rw_b_{table}" in text, (what, text)
            if table == "train":
                assert "e.g. user 8, item NULL" in text or "e.g. user NULL, item 5" in text, text
        with pytest.raises(Exception):  # dropped before the checks: no stage of the good run is left
            engine.query(f"SELECT COUNT(*) AS n FROM {script.names['exposure']}")


@pytest.mark.engines("duckdb", "postgres")  # the UUID tables are created in these two
def test_uuid_ids(engine):
    """Ids of a type without MIN (PostgreSQL has no min(uuid)): the checks take every example as text, so
    a repeated rank is reported as such, and valid tables run (by hand: user 1's list a, b with b
    relevant, precision@2 = MRR@2 = 1/2)."""
    recs, truth = engine.qualified("rw_uuid_recs"), engine.qualified("rw_uuid_truth")
    a, b, c = (f"CAST('00000000-0000-0000-0000-00000000000{x}' AS UUID)" for x in "abc")
    engine.execute(f"DROP TABLE IF EXISTS {recs}")
    engine.execute(f"DROP TABLE IF EXISTS {truth}")
    engine.execute(f'CREATE TABLE {recs} ("user" BIGINT, item UUID, "rank" BIGINT)')
    engine.execute(f'CREATE TABLE {truth} ("user" BIGINT, item UUID, relevance DOUBLE PRECISION)')
    engine.execute(f"INSERT INTO {recs} VALUES (1, {a}, 1), (1, {b}, 2)")
    engine.execute(f"INSERT INTO {truth} VALUES (1, {b}, 1.0)")
    script = rankwise.sqlgen.render.render(["precision", "mrr"], [2], "default", engine.dialect,
                                    {"recommendations": recs, "ground_truth": truth}, schema=engine.schema)
    for statement in script.statements()[:-1]:
        engine.execute(statement)
    row = engine.query(f"SELECT * FROM {script.names['per_user']}").row(0, named=True)
    assert (row["precision"], row["mrr"]) == pytest.approx((0.5, 0.5))
    engine.execute(f"INSERT INTO {recs} VALUES (1, {c}, 2)")
    with pytest.raises(Exception, match="rankwise: recommendations: a rank repeated in one user's list"):
        engine.query(script.check)


@pytest.mark.engines("duckdb", "postgres")  # the dialects with a temporary schema to qualify drops with
def test_the_script_drops_only_its_own_temporary_objects(engine):
    """A persistent view or table named as one of the scripts' temporary views or stages, where an
    unqualified name resolves to it, survives both scripts: they drop their own temporary objects (in
    DuckDB's temp, PostgreSQL's pg_temp), never a caller's of the same name."""
    from rankwise.sqlgen.beyond import render_beyond

    home = "memory.main" if engine.dialect == "duckdb" else engine.schema  # main alone finds temp.main first
    if engine.dialect == "postgres":  # unqualified names resolve to the engine's own schema (not public)
        engine.execute(f"SET search_path TO {home}")
    prefix = f"rw{uuid.uuid4().hex[:8]}_"  # a fresh name: no temporary object of an earlier test has it
    mine = (f"{prefix}cutoffs", f"{prefix}recommendations_input", f"{prefix}beyond_recommendations")
    stage = f"{prefix}beyond_exposure"
    try:
        for name in mine:
            engine.execute(f"CREATE VIEW {home}.{name} AS SELECT 42 AS k")
        engine.execute(f"CREATE TABLE {home}.{stage} AS SELECT 42 AS k")
        good_recs = pl.DataFrame({"user": [1, 1], "item": [10, 11], "rank": [1, 2]})
        per_user, _ = engine.run(good_recs, pl.DataFrame({"user": [1], "item": [11], "relevance": [1.0]}),
                                 ks=(2,), metrics=["precision"], prefix=prefix)
        assert per_user["precision"].to_list() == [0.5]
        engine.load("rw_b_train", pl.DataFrame({"user": [7], "item": [10]}))
        script = render_beyond(["novelty"], [2], "default", engine.dialect,
                               {"recommendations": engine.qualified("rw_recs"),
                                "train": engine.qualified("rw_b_train")}, schema=engine.schema, prefix=prefix)
        for statement in script.statements()[:-3]:
            engine.execute(statement)
        assert engine.query(script.per_user).height == 1
        for name in (*mine, stage):
            assert engine.query(f"SELECT k FROM {home}.{name}")["k"].to_list() == [42], name
    finally:
        for name in mine:
            engine.execute(f"DROP VIEW IF EXISTS {home}.{name}")
        engine.execute(f"DROP TABLE IF EXISTS {home}.{stage}")
        engine.execute(f"DROP TABLE IF EXISTS {engine.qualified(prefix + 'per_user')}")
        if engine.dialect == "postgres":
            engine.execute("RESET search_path")


# -- the Spark backend beyond the cross-backend tests ---------------------------------------------------


@pytest.fixture(scope="module")
def spark_session(request):
    """The shared session, unless Spark was deselected with --engines."""
    if "spark" not in [e.strip() for e in request.config.getoption("--engines").split(",")]:
        pytest.skip("spark deselected with --engines")
    return request.getfixturevalue("spark")


def test_spark_inputs_and_uncollected_per_user(spark_session):
    """Spark DataFrames are accepted by every backend; collect=False keeps per_user in Spark with the
    same values, columns and exclusion counts as the collected result."""
    from polars.testing import assert_frame_equal

    conv = CONVENTIONS["everything_else"].replace(empty_predictions="nan", users="union")
    recs, truth, scores = E.generate(seed=7, string_ids=True, by_score=True)
    r, t = E.api_frames(recs, truth, scores, True, True)
    sr, st = spark_session.createDataFrame(r.to_pandas()), spark_session.createDataFrame(t.to_pandas())
    expected = rankwise.evaluate(r, t, k=[2, 20], convention=conv, backend="polars")
    for backend in ("polars", "spark"):
        got = rankwise.evaluate(sr, st, k=[2, 20], convention=conv, backend=backend)
        assert_frame_equal(got.per_user, expected.per_user, rel_tol=1e-12, abs_tol=1e-13)
    lazy = rankwise.evaluate(sr, st, k=[2, 20], convention=conv, backend="spark", collect=False)
    assert type(lazy.per_user).__module__.startswith("pyspark")
    collected = pl.from_arrow(lazy.per_user.toArrow()).sort("user")
    assert_frame_equal(collected.select(expected.per_user.columns), expected.per_user.sort("user"),
                       rel_tol=1e-12, abs_tol=1e-13)
    assert_frame_equal(lazy.summary, expected.summary, rel_tol=1e-12, abs_tol=1e-13)
    assert_frame_equal(lazy.excluded, expected.excluded)
    # the long rows kept in Spark have the collected long frame's names (user, f1, the asked metrics only)
    long = pl.from_arrow(lazy.long.toArrow()).sort("k", "user")
    assert_frame_equal(long, expected.long, rel_tol=1e-12, abs_tol=1e-13)
    with pytest.raises(rankwise.ParameterError, match="collect=False"):
        rankwise.evaluate(r, t, k=2, backend="polars", collect=False)
    with pytest.raises(rankwise.ParameterError, match="Spark"):
        lazy.write("x.parquet")


def test_spark_error_values_uncollected(spark_session):
    r, t = E.api_frames({1: [10]}, {1: {}, 2: {10: 1.0}}, {}, False, False)
    with pytest.raises(rankwise.UndefinedValueError, match="empty_labels='error'"):
        rankwise.evaluate(r, t, k=1, backend="spark", collect=False,
                          convention=rankwise.Convention(empty_labels="error"))


def test_missing_pyspark_says_how_to_install(monkeypatch):
    import builtins

    from rankwise.engines import spark as _spark_backend

    real_import = builtins.__import__

    def no_pyspark(name, *args, **kwargs):
        if name.split(".")[0] == "pyspark":
            raise ImportError("No module named 'pyspark'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyspark)
    with pytest.raises(rankwise.MissingDependencyError, match="pyspark") as info:
        _spark_backend.session()
    assert 'Hint: pip install "rankwise[spark]"' in str(info.value)


def test_importing_rankwise_does_not_import_pyspark():
    import subprocess
    import sys

    code = "import sys, rankwise; rankwise.sql(k=3); print('pyspark' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


# -- beyond-accuracy metrics: the rendered sql/beyond_*.sql on every engine ------------------------------

# the presets' knobs for every metric (metrics=None lifts the limit to their libraries' metrics)
BEYOND_CONVENTIONS = {
    "default": rankwise.Convention(),
    "recbole": rankwise.PRESETS["recbole"].replace(metrics=None),      # rows, padding, tail_items, entropy / ...
    "evidently": rankwise.PRESETS["evidently"].replace(metrics=None),  # drop cold items, recommended_n1 gini, ...
    "replay": rankwise.PRESETS["replay"].replace(metrics=None),        # log_users novelty / k
    "knobs": rankwise.Convention(catalog="recommended", gini="catalog_n1_complement", coverage_scale="percent",
                                 cold_items="zero_novelty", long_tail="tail_items", long_tail_ratio=2.0,
                                 ild_short="zero", personalization_lists="full", serendipity_popularity="rows"),
}


@pytest.mark.parametrize("seed", [1, 3], ids=["int_ids", "str_ids"])  # _dataset: seed % 3 == 0 -> text ids
def test_rendered_beyond_sql_equals_polars(engine, seed):
    """Every beyond-accuracy metric but score_entropy (a declared gap), per user, per catalog and per
    item, from the script rankwise.sql renders, equals the Polars engine to 1e-9 under presets and knobs."""
    import math

    from test_beyond import _dataset, _frames

    from rankwise.engines import beyond as B
    from rankwise.sqlgen.beyond import render_beyond

    # Spark plans each of the ~20 statements for seconds: one case there (integer ids run through
    # backend="spark" in test_spark_backend_beyond_metrics_equal_polars)
    if engine.dialect == "spark" and seed != 3:
        pytest.skip("Spark: text ids here, integer ids in test_spark_backend_beyond_metrics_equal_polars")
    recs, scores, truth, train, items, features, ks = _dataset(seed)
    recs_df, truth_df, side = _frames(recs, scores, truth, train, items, features, False)
    loaded = {"recommendations": recs_df.select(pl.col("user_id").alias("user"), pl.col("item_id").alias("item"),
                                                "rank"),
              "train": side.train.rename({"user_id": "user", "item_id": "item"}),
              "item_features": side.long_features.rename({"item_id": "item"}),
              "ground_truth": truth_df.rename({"user_id": "user", "item_id": "item"})}
    if side.items is not None:
        loaded["items"] = side.items.rename({"item_id": "item"})
    for name, frame in loaded.items():
        engine.load(f"rw_{name}", frame)
    tables = {name: engine.qualified(f"rw_{name}") for name in loaded}
    metrics = [m for m in B.METRICS if m != "score_entropy"]

    def same(a, b):
        a = float("nan") if a is None else float(a)
        b = float("nan") if b is None else float(b)
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)

    chosen = ["default"] if engine.dialect == "spark" else list(BEYOND_CONVENTIONS)
    for label in chosen:
        conv = BEYOND_CONVENTIONS[label]
        script = render_beyond(metrics, list(ks), conv, engine.dialect, tables, schema=engine.schema)
        for statement in (*script.setup, *script.stages):  # the checks: test_a_failed_check_stops_the_beyond_script
            engine.execute(statement)
        users = engine.query(script.per_user)
        catalog, per_item = engine.query(script.catalog), engine.query(script.per_item)
        want_users = PB.polars_user(recs_df.lazy(), side, ks, conv, truth=truth_df).collect()
        want_catalog = PB.polars_catalog(recs_df.lazy(), side, ks, conv)
        want_items = PB.per_item(recs_df.lazy(), side, ks, conv).collect()
        got = {(r["user_id"], r["k"]): r for r in users.iter_rows(named=True)}
        assert len(got) == want_users.height, label
        for row in want_users.iter_rows(named=True):
            other = got[(row["user_id"], row["k"])]
            for col in ("n_items", *B.USER_COLUMNS):
                assert same(row[col], other[col]), (label, engine.dialect, row["user_id"], row["k"], col)
        got = {(r["metric"], r["k"]): r for r in catalog.iter_rows(named=True)}
        for row in want_catalog.filter(pl.col("metric") != "score_entropy").iter_rows(named=True):
            assert same(row["value"], got[(row["metric"], row["k"])]["value"]), (label, engine.dialect, row)
            assert got[(row["metric"], row["k"])]["n_users"] == row["n_users"], (label, row)
        assert {(r["item_id"], r["k"]): (r["exposure"], r["popularity"]) for r in per_item.iter_rows(named=True)} == \
            {(r["item_id"], r["k"]): (r["exposure"], r["popularity"]) for r in want_items.iter_rows(named=True)}, label


def test_spark_backend_beyond_metrics_equal_polars(spark_session):
    """backend='spark' runs the rendered beyond-accuracy script by spark.sql: the same per-user
    values, summary and per_item as the Polars engine (to 1e-9); score_entropy from a score column too."""
    import math

    from test_beyond import _dataset, _frames

    recs, scores, truth, train, items, features, ks = _dataset(1)  # integer ids
    recs_df, truth_df, side = _frames(recs, scores, truth, train, items, features, False)
    recs_in = recs_df.filter(pl.col("item_id").is_not_null()).select(
        pl.col("user_id").alias("user"), pl.col("item_id").alias("item"), "rank")
    kwargs = dict(k=list(ks), convention=rankwise.PRESETS["recbole"].replace(metrics=None),  # its knobs, every metric
                  metrics=["novelty", "arp", "long_tail_share", "ild", "serendipity", "item_coverage", "gini",
                           "exposure_entropy", "personalization"],
                  train=side.train.rename({"user_id": "user", "item_id": "item"}),
                  items=None if side.items is None else side.items.rename({"item_id": "item"}),
                  item_features=side.long_features.rename({"item_id": "item"}))
    truth_in = truth_df.rename({"user_id": "user", "item_id": "item"})
    want = rankwise.evaluate(recs_in, truth_in, backend="polars", **kwargs)
    got = rankwise.evaluate(recs_in, truth_in, backend="spark", **kwargs)

    def same(a, b):
        if isinstance(a, float) or isinstance(b, float):
            a, b = (float("nan") if v is None else v for v in (a, b))
            return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
        return a == b

    for a, b in zip(want.per_user.iter_rows(), got.per_user.iter_rows(), strict=True):
        assert all(same(x, y) for x, y in zip(a, b)), (a, b)
    for a, b in zip(want.summary.iter_rows(), got.summary.iter_rows(), strict=True):
        assert a[:2] == b[:2] and same(a[2], b[2]) and a[3] == b[3], (a, b)
    assert want.per_item.equals(got.per_item)
    from test_beyond import _only_what_was_asked

    _only_what_was_asked(recs_in, list(ks), side, "spark")


@pytest.mark.engines("duckdb", "postgres", "spark")  # the engines evaluate() runs COUNTS_SQL on
def test_the_user_counts_hold_the_longest_list(engine):
    """evaluate() warns when k is above every list: the engines count the longest list (the largest
    n_recs) with the users, in the same query, also for rows left in the engine (collect=False)."""
    from rankwise.engines.protocol import COUNTS, COUNTS_SQL

    rows = pl.DataFrame({"user_id": [1, 1, 2, 2, 3, 3], "k": [1, 5] * 3, "n_recs": [4, 4, 0, 0, 7, 7],
                         "n_rel": [1, 1, 2, 2, 0, 0], "ndcg": [0.5, 0.6, 0.0, 0.0, None, None]},
                        schema_overrides={"ndcg": pl.Float64})
    for name, frame, expected in (("rw_counts", rows, (3, 1, 1, 0, 7)), ("rw_none", rows.head(0), (0, 0, 0, 0, 0))):
        engine.load(name, frame)
        got = engine.query(COUNTS_SQL.format(per_user=engine.qualified(name)))
        assert dict(zip(got.columns, got.row(0))) == dict(zip(COUNTS, expected))  # by hand: user 3 has 7 items
