"""Beyond-accuracy metrics (issue 10): Polars == shipped SQL (DuckDB) == the naive oracle on seeded
random data under every knob value and preset; hand-computed cases (document 003's coverage, document
001's score entropy); the shared note's worked Gini/entropy fixture for every variant; each library's
own test or docstring values through its preset; side-input validation."""

from __future__ import annotations

import dataclasses
import math
import random

import duckdb
import oracle_beyond as oracle
import polars as pl
import pytest

from rankwise.inputs.side import prepare_side_inputs
from rankwise.engines.polars import beyond as PB
from rankwise.engines import duckdb as D
import rankwise
from rankwise.engines import beyond as B
from rankwise.conventions import Convention, knob_documentation
from rankwise.errors import DtypeMismatchError, DuplicateItemError, InputError, MissingColumnError, NullValueError

BEYOND_KNOBS = ("popularity", "arp_popularity", "serendipity_popularity", "cold_items", "list_denominator",
                "novelty_normalize", "info_log_base", "catalog", "catalog_outside", "catalog_padding",
                "coverage_scale", "gini", "entropy_normalize", "ild_denominator", "ild_short", "long_tail",
                "long_tail_ratio", "personalization_lists", "serendipity")


def _variants():
    numeric = {"info_log_base": [math.e, 10.0], "long_tail_ratio": [0.5, 0.1, 2.0]}
    for knob in BEYOND_KNOBS:
        values, _ = knob_documentation()[knob]
        for value in numeric.get(knob, values):
            if value != getattr(Convention(), knob):
                yield f"{knob}={value}", Convention().replace(**{knob: value})
    yield "tail_items 0.1", Convention(long_tail="tail_items", long_tail_ratio=0.1)
    yield "tail_items 2", Convention(long_tail="tail_items", long_tail_ratio=2.0)
    for name, preset in rankwise.PRESETS.items():  # the library presets with beyond-accuracy metrics
        if name != "default" and set(preset.metrics) & set(B.METRICS):
            yield name, preset


CONVENTIONS = {"default": Convention(), **dict(_variants())}


# -- data --------------------------------------------------------------------------------------------


def _dataset(seed: int):
    rng = random.Random(seed)
    strings = seed % 3 == 0
    name = (lambda p, v: f"{p}{v:02d}") if strings else (lambda p, v: v)
    catalog = list(range(14))
    recs, scores, truth = {}, {}, {}
    for u in range(rng.randint(0, 9)):
        lst = rng.sample(catalog, rng.randint(0, 8))
        recs[name("u", u)] = [name("i", i) for i in lst]
        scores[name("u", u)] = sorted((round(rng.uniform(-2, 3), 3) for _ in lst), reverse=True)
        if rng.random() < 0.7:
            truth[name("u", u)] = {name("i", i): rng.choice([0.0, 1.0, 2.0]) for i in rng.sample(catalog, 4)}
    train = [(name("u", rng.randint(0, 12)), name("i", rng.choice(catalog[:11]))) for _ in range(rng.randint(1, 30))]
    items = None if rng.random() < 0.4 else [name("i", i) for i in rng.sample(catalog, rng.randint(1, 14))]
    if rng.random() < 0.5:  # long categorical / weighted features, some items without any, some zero vectors
        features = {}
        for i in rng.sample(catalog, 11):
            feats = {f"f{j}": rng.choice([1.0, 0.5, -1.0, 0.0]) for j in rng.sample(range(5), rng.randint(1, 4))}
            features[name("i", i)] = feats
    else:  # embeddings
        features = {name("i", i): {str(d): round(rng.uniform(-1, 1), 3) for d in range(3)} for i in catalog[:12]}
    ks = sorted(rng.sample(range(1, 10), rng.randint(1, 3)))
    return recs, scores, truth, train, items, features, ks


def _frames(recs, scores, truth, train, items, features, embedding):
    rows = [(u, r, i, s) for u, lst in recs.items() for r, (i, s) in enumerate(zip(lst, scores[u]), start=1)]
    rows += [(u, None, None, None) for u, lst in recs.items() if not lst]
    def kind(values):
        return pl.String if any(isinstance(v, str) for v in values) else pl.Int64

    uid = kind([*recs, *(u for u, _ in train)])
    iid = kind([*(i for lst in recs.values() for i in lst), *(i for _, i in train), *(items or [])])
    recs_df = pl.DataFrame(rows, schema={"user_id": uid, "rank": pl.Int64, "item_id": iid, "score": pl.Float64},
                           orient="row")
    truth_df = pl.DataFrame([(u, i, r) for u, lab in truth.items() for i, r in lab.items()],
                            schema={"user_id": uid, "item_id": iid, "relevance": pl.Float64}, orient="row")
    train_df = pl.DataFrame(train, schema={"user": uid, "item": iid}, orient="row")
    if features is None:
        feats = None
    elif embedding:
        feats = pl.DataFrame({"item": list(features), "embedding": [[v[str(d)] for d in range(3)]
                                                                     for v in features.values()]},
                             schema={"item": iid, "embedding": pl.List(pl.Float64)})
    else:
        feats = pl.DataFrame([(i, f, v) for i, fs in features.items() for f, v in fs.items()],
                             schema={"item": iid, "feature": pl.String, "value": pl.Float64}, orient="row")
    side = prepare_side_inputs(train=train_df, items=items, item_features=feats)
    return recs_df, truth_df, side


def _close(a, b) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return b is not None and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def _duckdb(recs_df, side, ks, truth_df):
    con = duckdb.connect()
    D.register(con, recs_df, side, ks, truth_df)
    return con


# -- Polars == SQL == oracle -------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(9))
def test_engines_equal_the_oracle(seed):
    """Each seed checks the default and every third variant: every knob value meets three datasets."""
    recs, scores, truth, train, items, features, ks = _dataset(seed)
    embedding = all(set(f) == {"0", "1", "2"} for f in features.values())
    recs_df, truth_df, side = _frames(recs, scores, truth, train, items, features, embedding)
    con = _duckdb(recs_df, side, ks, truth_df)
    chosen = [(label, conv) for n, (label, conv) in enumerate(CONVENTIONS.items()) if n == 0 or n % 3 == seed % 3]
    for label, conv in chosen:
        users_pl = PB.polars_user(recs_df.lazy(), side, ks, conv, truth=truth_df).collect()
        users_sql = D.beyond_query(con, "beyond_user", conv).sort("k", "user_id")
        cat_pl, cat_sql = PB.polars_catalog(recs_df.lazy(), side, ks, conv), D.beyond_query(con, "beyond_catalog", conv).sort("metric", "k")
        items_pl, items_sql = PB.per_item(recs_df.lazy(), side, ks, conv).collect(), D.beyond_query(con, "beyond_items", conv).sort("k", "item_id")
        assert users_pl.height == users_sql.height == len(recs) * len(ks), label
        assert items_pl.equals(items_sql), label
        for k in ks:
            expected = oracle.user_values(recs, train, k, conv, items, features, truth)
            for engine, frame in (("polars", users_pl), ("duckdb", users_sql)):
                for row in frame.filter(pl.col("k") == k).iter_rows(named=True):
                    want = expected[row["user_id"]]
                    for col in ("n_items", *B.USER_COLUMNS):
                        assert _close(want[col], row[col]), (label, engine, k, row["user_id"], col, want[col], row[col])
            want = oracle.catalog_values(recs, train, k, conv, items, scores)
            for engine, frame in (("polars", cat_pl), ("duckdb", cat_sql)):
                got = {r["metric"]: r for r in frame.filter(pl.col("k") == k).iter_rows(named=True)}
                assert set(got) == set(B.CATALOG_METRICS)
                for metric in B.CATALOG_METRICS:
                    assert _close(want[metric], got[metric]["value"]), (label, engine, k, metric, want[metric], got[metric])
                    assert got[metric]["n_users"] == want["n_users"]
            want_items = oracle.item_values(recs, train, k, conv, items)
            got_items = {r["item_id"]: (r["exposure"], r["popularity"]) for r in items_pl.filter(pl.col("k") == k).iter_rows(named=True)}
            assert got_items == want_items, label


@pytest.mark.parametrize(("ids", "kind", "path"), [
    ([3, 5, 9, 5, 12, 40], pl.Int64, "looked_up"),  # 40: a recommended item the table lacks, above its largest id
    ([-7, 0, 2, -7, 11, -20], pl.Int64, "looked_up"),  # below zero, and below the table's smallest id
    ([0, 10**9, 5, 10**9, 7, 3 * 10**9], pl.Int64, "joined"),  # a range far wider than the items: joined
    (["a", "c", "b", "c", "zz", "q"], pl.String, "joined"),  # text ids
    ([3, 1, 0, 1, 9, 12], pl.UInt64, "looked_up"),
    ([2**63 + 3, 2**63 + 1, 2**63, 2**63 + 1, 2**63 + 9, 2**64 - 1], pl.UInt64, "joined"),  # past Int64: joined
])
def test_per_item_values_looked_up_or_joined_equal_a_left_join(ids, kind, path):
    """_item_values gives the list rows the per-item columns by position in a table of the id range, or by a join:
    either way what a left join on the item gives (null for an item the table lacks)."""
    rows = pl.DataFrame({"user_id": [1, 1, 2, 2, 3, 3], "item_id": pl.Series(ids, dtype=kind)})
    known = list(dict.fromkeys(ids))[:4]  # the table holds the first four distinct items
    items = pl.DataFrame({"item_id": pl.Series(known, dtype=kind), "_train": [True] * len(known),
                          "apop_sum": [float(n * 10) for n in range(len(known))],
                          "info_sum": pl.Series([f"{n}.25" for n in range(len(known))]).cast(PB.EXACT)})
    attach = PB._item_values(rows.lazy(), items)
    assert attach.__name__ == path
    got = attach(rows.lazy()).collect()
    by_item = {r["item_id"]: r for r in items.iter_rows(named=True)}
    for row in got.iter_rows(named=True):
        want = by_item.get(row["item_id"], {"_train": None, "apop_sum": None, "info_sum": None})
        assert (row["_train"], row["apop_sum"], row["info_sum"]) == (want["_train"], want["apop_sum"], want["info_sum"])


@pytest.mark.parametrize("seed", [1, 2, 4])
def test_list_sums_do_not_depend_on_how_integer_item_ids_are_spread(seed):
    """The same dataset with its item ids shifted below zero (looked up by position) and spread over 10^9 (joined):
    the same per-user values bit for bit."""
    recs, scores, truth, train, items, features, ks = _dataset(seed)
    assert isinstance(next(iter(train))[1], int)
    frames = {}
    for label, f in {"as_is": lambda i: i, "shifted": lambda i: i - 50, "spread": lambda i: i * 10**8}.items():
        r = {u: [f(i) for i in lst] for u, lst in recs.items()}
        t = {u: {f(i): v for i, v in lab.items()} for u, lab in truth.items()}
        tr = [(u, f(i)) for u, i in train]
        it = None if items is None else [f(i) for i in items]
        feats = {f(i): v for i, v in features.items()}
        recs_df, truth_df, side = _frames(r, scores, t, tr, it, feats, False)
        frames[label] = PB.polars_user(recs_df.lazy(), side, ks, Convention(), truth=truth_df).collect().drop("user_id")
    assert frames["shifted"].equals(frames["as_is"]) and frames["spread"].equals(frames["as_is"])


@pytest.mark.parametrize("seed", range(3))
def test_each_list_metric_alone_computes_only_its_sums_and_equals_the_oracle(seed):
    """The Polars plan asked for one list metric computes only the sums and popularity columns its declared
    formula reads: under every convention its value is the oracle's and bit-equal to the value computed
    with all of them, and the metrics not asked for are null."""
    recs, scores, truth, train, items, features, ks = _dataset(seed + 3)
    embedding = all(set(f) == {"0", "1", "2"} for f in features.values())
    recs_df, truth_df, side = _frames(recs, scores, truth, train, items, features, embedding)
    names = ("novelty", "arp", "long_tail_share", "serendipity")
    for label, conv in CONVENTIONS.items():
        together = PB.polars_user(recs_df.lazy(), side, ks, conv, truth=truth_df).collect()
        expected = {k: oracle.user_values(recs, train, k, conv, items, features, truth) for k in ks}
        for name in names:
            alone = PB.polars_user(recs_df.lazy(), side, ks, conv, truth=truth_df, names=[name]).collect()
            assert alone[name].equals(together[name], check_names=True), (label, name)
            assert alone.select(n for n in names if n != name).null_count().row(0) == (alone.height,) * 3, (label, name)
            for row in alone.iter_rows(named=True):
                want = expected[row["k"]][row["user_id"]][name]
                assert _close(want, row[name]), (label, name, row["k"], row["user_id"], want, row[name])
            assert alone["n_items"].equals(together["n_items"]), (label, name)


@pytest.mark.parametrize("seed", range(3))
def test_each_catalog_metric_alone_computes_only_its_statistics_and_equals_the_oracle(seed):
    """Likewise per k: the Polars catalog plan asked for one catalog metric gives the oracle's value, bit-equal
    to the value computed with all of them (score_entropy aside: its sums of e^d are floats summed in the
    threads' order, the last bit varies from run to run either way), and only its rows."""
    recs, scores, truth, train, items, features, ks = _dataset(seed + 6)
    recs_df, _, side = _frames(recs, scores, truth, train, items, features, False)
    for label, conv in CONVENTIONS.items():
        together = PB.polars_catalog(recs_df.lazy(), side, ks, conv)
        expected = {k: oracle.catalog_values(recs, train, k, conv, items, scores) for k in ks}
        for name in B.CATALOG_METRICS:
            alone = PB.polars_catalog(recs_df.lazy(), side, ks, conv, names=[name])
            same = together.filter(pl.col("metric") == name)
            assert alone.drop("value").equals(same.drop("value")), (label, name)
            assert name == "score_entropy" or alone.equals(same), (label, name)
            for row in alone.iter_rows(named=True):
                want = expected[row["k"]]
                assert _close(want[name], row["value"]) and row["n_users"] == want["n_users"], (label, name, row)


# -- hand-computed cases -----------------------------------------------------------------------------


def _run(recs: dict, train, k, conv, items=None, features=None, truth=None, scores=None):
    """Both engines on a small case; asserts they agree and returns (per-user polars, catalog dict)."""
    scores = scores or {u: [0.0] * len(lst) for u, lst in recs.items()}
    recs_df, truth_df, side = _frames(recs, scores, truth or {}, train, items, features, False)
    con = _duckdb(recs_df, side, (k,), truth_df)
    users = PB.polars_user(recs_df.lazy(), side, (k,), conv, truth=truth_df).collect()
    cat = PB.polars_catalog(recs_df.lazy(), side, (k,), conv)
    users_sql, cat_sql = D.beyond_query(con, "beyond_user", conv).sort("k", "user_id"), D.beyond_query(con, "beyond_catalog", conv).sort("metric", "k")
    for a, b in zip(users.iter_rows(), users_sql.iter_rows(), strict=True):
        assert all(_close(x, y) if isinstance(x, float) else x == y for x, y in zip(a, b)), (a, b)
    for a, b in zip(cat.iter_rows(), cat_sql.iter_rows(), strict=True):
        assert a[:2] == b[:2] and _close(a[2], b[2]), (a, b)
    return users, {r["metric"]: r["value"] for r in cat.iter_rows(named=True)}


def test_document_003_item_coverage_by_hand():
    # distinct recommended items / all items: 3 users recommend {1, 2, 3} of the 5 catalog items
    recs = {"a": [1, 2], "b": [2, 3], "c": [1, 3]}
    train = [("x", i) for i in range(1, 6)]
    _, cat = _run(recs, train, 2, Convention(), items=[1, 2, 3, 4, 5])
    assert cat["item_coverage"] == 3 / 5
    # at k = 1 only items 1 and 2 are recommended: 2 / 5
    _, cat1 = _run(recs, train, 1, Convention(), items=[1, 2, 3, 4, 5])
    assert cat1["item_coverage"] == 2 / 5
    # an item outside the catalog (9): not counted by default, counted by catalog_outside="count"
    recs9 = {"a": [1, 9]}
    assert _run(recs9, train, 2, Convention(), items=[1, 2, 3, 4, 5])[1]["item_coverage"] == 1 / 5
    assert _run(recs9, train, 2, Convention(catalog_outside="count"), items=[1, 2, 3, 4, 5])[1]["item_coverage"] == 2 / 5
    assert _run(recs9, train, 2, Convention(coverage_scale="count"), items=[1, 2, 3, 4, 5])[1]["item_coverage"] == 1
    assert _run(recs9, train, 2, Convention(coverage_scale="percent"), items=[1, 2, 3, 4, 5])[1]["item_coverage"] == 20
    # without items the catalog is the train items {1..5}; catalog="recommended" gives 1
    assert _run(recs, train, 2, Convention())[1]["item_coverage"] == 3 / 5
    assert _run(recs, train, 2, Convention(catalog="recommended"))[1]["item_coverage"] == 1


def test_document_001_score_entropy_by_hand():
    # four equal pooled scores: softmax is uniform, entropy ln 4 (nats)
    recs = {"a": [1, 2], "b": [3, 4]}
    _, cat = _run(recs, [("x", 1)], 2, Convention(), scores={"a": [0.5, 0.5], "b": [0.5, 0.5]})
    assert math.isclose(cat["score_entropy"], math.log(4), rel_tol=1e-14)
    # scores 0 and ln 3: softmax (1/4, 3/4), entropy -(1/4 ln 1/4 + 3/4 ln 3/4) = ln 4 - 3/4 ln 3
    recs2 = {"a": [1], "b": [2]}
    _, cat2 = _run(recs2, [("x", 1)], 1, Convention(), scores={"a": [0.0], "b": [math.log(3)]})
    assert math.isclose(cat2["score_entropy"], math.log(4) - 0.75 * math.log(3), rel_tol=1e-14)
    # the top k only: at k = 1 the pooled scores are 9 and 0 of lists [9, 0] and [0, 0]
    _, cat3 = _run({"a": [1, 2], "b": [3, 4]}, [("x", 1)], 1, Convention(), scores={"a": [9.0, 0.0], "b": [0.0, 0.0]})
    p = 1 / (1 + math.exp(-9))
    assert math.isclose(cat3["score_entropy"], -(p * math.log(p) + (1 - p) * math.log(1 - p)), rel_tol=1e-12)


# the shared note's worked fixture: 4 users, k = 2, lists [a,b] [a,c] [a,b] [a,d], catalog a..f
FIXTURE = {1: ["a", "b"], 2: ["a", "c"], 3: ["a", "b"], 4: ["a", "d"]}
CATALOG = list("abcdef")


@pytest.mark.parametrize(("knobs", "metric", "exact"), [
    (dict(gini="recommended_n1"), "gini", 10 / 24),           # Evidently 0.4167
    (dict(gini="catalog"), "gini", 26 / 48),                  # RecBole-style 0.5417
    (dict(gini="catalog", catalog_padding=1), "gini", 34 / 56),  # RecBole with [PAD] 0.6071
    (dict(gini="catalog_n1"), "gini", 26 / 40),               # catalog, N - 1: 0.65
    (dict(gini="catalog_n1_complement"), "gini", 1 - 26 / 40),  # Elliot 0.35
    (dict(info_log_base=math.e), "exposure_entropy", 1.75 * math.log(2)),  # 1.2130
    (dict(), "exposure_entropy", 1.75),                       # log2 (MS distributional_coverage)
    (dict(info_log_base=math.e, entropy_normalize="distinct"), "exposure_entropy", 1.75 * math.log(2) / 4),  # RecBole 0.3033
])
def test_worked_gini_and_entropy_fixture(knobs, metric, exact):
    _, cat = _run(FIXTURE, [("x", "a")], 2, Convention(**knobs), items=CATALOG)
    assert math.isclose(cat[metric], exact, rel_tol=1e-12)
    rounded = {10 / 24: 0.4167, 26 / 48: 0.5417, 34 / 56: 0.6071, 26 / 40: 0.65, 1 - 26 / 40: 0.35,
               1.75 * math.log(2): 1.2130, 1.75: 1.75, 1.75 * math.log(2) / 4: 0.3033}
    assert round(cat[metric], 4) == rounded[exact]  # the note's four-decimal values


def test_worked_fixture_per_preset():
    """The recbole preset gives the note's RecBole numbers (PAD included), evidently its Gini."""
    _, recbole = _run(FIXTURE, [("x", "a")], 2, rankwise.PRESETS["recbole"], items=CATALOG)
    assert math.isclose(recbole["gini"], 34 / 56, rel_tol=1e-12)
    assert math.isclose(recbole["exposure_entropy"], 1.75 * math.log(2) / 4, rel_tol=1e-12)
    assert math.isclose(recbole["item_coverage"], 4 / 7, rel_tol=1e-12)  # 4 items / (6 + [PAD])
    _, evidently = _run(FIXTURE, [(u, i) for i in CATALOG for u in (1, 2)], 2, rankwise.PRESETS["evidently"])
    assert math.isclose(evidently["gini"], 10 / 24, rel_tol=1e-12)


def test_personalization_counts_pairs_and_evidently_shortcut():
    # lists {1,2} and {1}: one shared item each way; k = 2, U = 2 -> 1 - 2 / (2 * 2 * 1) = 0.5
    recs = {"a": [1, 2], "b": [1]}
    assert _run(recs, [("x", 1)], 2, Convention())[1]["personalization"] == 0.5
    # Evidently subtracts U k = 4 instead of sum n_u = 3: 1 - (5 - 4) / 4 = 0.75
    assert _run(recs, [("x", 1)], 2, Convention(personalization_lists="full"))[1]["personalization"] == 0.75
    # one user: undefined
    assert _run({"a": [1, 2]}, [("x", 1)], 2, Convention())[1]["personalization"] is None


def test_novelty_arp_long_tail_by_hand():
    # train: item 1 by users x, y, z (3 rows + a repeat), item 2 by x; U_T = 3
    train = [("x", 1), ("y", 1), ("z", 1), ("z", 1), ("x", 2)]
    recs = {"a": [1, 2, 9]}  # 9 is cold
    users, _ = _run(recs, train, 3, Convention(arp_popularity="users", long_tail="head_share", long_tail_ratio=0.8))
    row = users.row(0, named=True)
    assert math.isclose(row["novelty"], (0 + math.log2(3) + math.log2(3)) / 3, rel_tol=1e-14)  # cold counts as 1 user
    assert row["arp"] == (3 + 1 + 0) / 3
    # short head: item 1 (3 of 4 user-item pairs = 75 % < 80 %), then item 2 -> head {1, 2}; 9 is cold -> tail
    assert row["long_tail_share"] == 1 / 3
    drop = _run(recs, train, 3, Convention(cold_items="drop", arp_popularity="users"))[0].row(0, named=True)
    assert math.isclose(drop["novelty"], math.log2(3) / 2, rel_tol=1e-14) and drop["arp"] == 2.0
    rows = _run(recs, train, 3, Convention(popularity="rows", arp_popularity="rows"))[0].row(0, named=True)
    assert math.isclose(rows["novelty"], (math.log2(5 / 4) + 2 * math.log2(5)) / 3, rel_tol=1e-14)
    assert rows["arp"] == (4 + 1 + 0) / 3
    over_k = _run(recs, train, 5, Convention(list_denominator="k"))[0].row(0, named=True)
    assert math.isclose(over_k["novelty"], 2 * math.log2(3) / 5, rel_tol=1e-14)


def test_ild_from_unit_vectors_by_hand():
    features = {1: {"x": 1.0}, 2: {"y": 2.0}, 3: {"x": 1.0, "y": 1.0}, 4: {"x": 0.0}}
    # pairs (1,2): cos 0; (1,3), (2,3): cos 1/sqrt 2 -> ild = mean(1, 1 - 1/sqrt2, 1 - 1/sqrt2); item 4 has a zero vector
    users, _ = _run({"a": [1, 2, 3, 4], "b": [1, 4], "c": [7]}, [("x", 1)], 4, Convention(), features=features)
    ild = dict(zip(users["user_id"], users["ild"]))
    assert math.isclose(ild["a"], (1 + 2 * (1 - 2 ** -0.5)) / 3, rel_tol=1e-12)
    assert ild["b"] is None and ild["c"] is None  # fewer than 2 items with features
    zero = _run({"b": [1, 4]}, [("x", 1)], 4, Convention(ild_short="zero"), features=features)[0]
    assert zero["ild"].to_list() == [0.0]


# -- the libraries' own numbers, through their presets ------------------------------------------------


def test_evidently_novelty_popularity_bias_personalization_diversity_score_values():
    ev = rankwise.PRESETS["evidently"]
    # tests/metrics/recsys/test_novelty.py and test_popularity_bias.py (k = 3)
    recs = {1: [3], 2: [2, 3], 3: [1, 2]}
    train = [(1, 1), (1, 2), (2, 1), (3, 1)]
    users, cat = _run(recs, train, 3, ev)
    novelty = [v for v in users["novelty"].to_list() if v is not None]
    # Evidently checks its rounded literal with np.isclose (rtol 1e-5). By hand (U_T = 3; item 3 is cold
    # and dropped): user 2 = log2(3), user 3 = (log2(3/3) + log2(3)) / 2; the mean is 1.1887218755
    assert math.isclose(sum(novelty) / len(novelty), 1.18872199999, rel_tol=1e-5)
    assert math.isclose(sum(novelty) / len(novelty), (math.log2(3) + math.log2(3) / 2) / 2, rel_tol=1e-12)
    arp = [v for v in users["arp"].to_list() if v is not None]
    assert sum(arp) / len(arp) == 1.5
    assert cat["item_coverage"] == 1.0 and math.isclose(cat["gini"], 0.2, rel_tol=1e-12)
    # test_personalisation.py (k = 4)
    recs = {1: [1, 2, 3, 4], 2: [1, 2, 3, 4], 3: [1, 3, 2, 5]}
    assert math.isclose(_run(recs, [(1, 1)], 4, ev)[1]["personalization"], 0.16666666, rel_tol=1e-7)
    # test_diversity.py (k = 4): ild summed over pairs, divided by n_u
    f = {"0a": (1, 0), "1a": (1, 0.1), "5a": (1, 1), "6a": (-0.1, 0.9), "4a": (1, 0.9), "10a": (-1, -1)}
    features = {i: {"f1": float(a), "f2": float(b)} for i, (a, b) in f.items()}
    recs = {"1": ["0a", "1a", "5a", "6a"], "2": ["0a", "1a", "5a", "6a"], "3": ["0a", "4a", "6a", "10a"]}
    users, _ = _run(recs, [("x", "0a")], 4, ev, features=features)
    assert math.isclose(sum(users["ild"]) / 3, 1.0963345074906863, rel_tol=1e-12)
    # test_scores_distribution.py (k = 3): 2.15148438
    scores = {"a": [1.25, 1.0, 0.3], "b": [0.9, 0.8, 0.7], "c": [1.0, 0.5, 0.3]}
    recs = {u: [f"{u}{j}" for j in range(3)] for u in scores}
    assert math.isclose(_run(recs, [("x", "a0")], 3, ev, scores=scores)[1]["score_entropy"], 2.15148438, rel_tol=1e-8)


def test_rectools_serendipity_docstring_values():
    # rectools/metrics/serendipity.py docstring: k=1 -> [0, .25, 0, .25], k=2 -> [0, .5, 0, .125]
    recs = {"u1": ["i1", "i2"], "u2": ["i2", "i3"], "u3": ["i3"], "u4": ["i2", "i3"]}
    truth = {"u1": {"i1": 1.0, "i2": 1.0}, "u2": {"i2": 1.0, "i3": 1.0}, "u3": {"i2": 1.0}, "u4": {"i2": 1.0}}
    prev = [("u1", "i1"), ("u1", "i2"), ("u2", "i1"), ("u2", "i2"), ("u3", "i1")]
    catalog = ["i1", "i2", "i3", "i4"]
    conv = rankwise.PRESETS["rectools"]
    for k, want in ((1, [0, 0.25, 0, 0.25]), (2, [0, 0.5, 0, 0.125])):
        users, _ = _run(recs, prev, k, conv, items=catalog, truth=truth)
        assert users.sort("user_id")["serendipity"].to_list() == want


def test_replay_surprisal_by_hand():
    # w(i) = log2(U_T / pop(i)) / log2 U_T, summed over the top k and divided by k; cold w = 1
    train = [("x", 1), ("y", 1), ("z", 1), ("w", 1), ("x", 2)]  # U_T = 4: w(1) = 0, w(2) = 1, w(9) = 1
    users, _ = _run({"a": [1, 2, 9], "b": []}, train, 4, rankwise.PRESETS["replay"])
    got = dict(zip(users["user_id"], users["novelty"]))
    assert math.isclose(got["a"], 2 / 4, rel_tol=1e-14) and got["b"] == 0.0  # empty list scores 0 (/k)


def test_recbole_tail_percentage_and_average_popularity():
    # RecBole: train rows; tail = the floor(0.1 * 10) = 1 least popular train items (ties by id); cold never tail
    train = [("u", i) for i in range(10) for _ in range(i + 1)]  # item i has i + 1 rows
    users, _ = _run({"a": [0, 1, 42]}, train, 4, rankwise.PRESETS["recbole"])
    row = users.row(0, named=True)
    assert row["long_tail_share"] == 1 / 4  # item 0 only; / k
    assert row["arp"] == (1 + 2 + 0) / 4


# -- side inputs ------------------------------------------------------------------------------------


def test_side_inputs_accept_containers_and_sequences():
    import pandas as pd
    import pyarrow as pa

    side = prepare_side_inputs(train=pd.DataFrame({"user": [1, 2], "item": [3, 3], "extra": [0, 0]}),
                                 items=(3, 4, 4), item_features=pa.table({"item": [3], "feature": ["genre"]}))
    assert side.train.columns == ["user_id", "item_id"] and side.items["item_id"].to_list() == [3, 4]
    assert side.features.row(0) == (3, "genre", 1.0)  # value defaults to 1 (categorical)
    emb = prepare_side_inputs(item_features=pl.DataFrame({"item": ["a"], "embedding": [[0.5, 2.0]]}))
    assert emb.long_features.rows() == [("a", "0", 0.5), ("a", "1", 2.0)]  # what the SQL reads
    assert emb.embeddings[0].to_list() == ["a"] and emb.embeddings[1].tolist() == [[0.5, 2.0]]


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    (dict(train=pl.DataFrame({"user": [1, None], "item": [1, 2]})), NullValueError, "'user'"),
    (dict(train=pl.DataFrame({"u": [1], "item": [1]})), MissingColumnError, "train"),
    (dict(train=pl.DataFrame({"user": [1.5], "item": [1]})), DtypeMismatchError, "'user'"),
    (dict(items=[1, None]), NullValueError, "items"),
    (dict(item_features=pl.DataFrame({"item": [1, 1], "feature": ["g", "g"]})), DuplicateItemError, "repeat"),
    (dict(item_features=pl.DataFrame({"item": [1], "feature": ["g"], "value": [float("nan")]})), InputError, "NaN"),
    (dict(item_features=pl.DataFrame({"item": [1], "feature": ["g"], "value": ["x"]})), DtypeMismatchError, "'value'"),
    (dict(item_features=pl.DataFrame({"item": [1, 2], "embedding": [[1.0], [1.0, 2.0]]})), InputError, "lengths"),
    (dict(item_features=pl.DataFrame({"item": [1], "embedding": [[1.0, float("inf")]]})), InputError, "infinite"),
    (dict(item_features=pl.DataFrame({"item": [1, 1], "embedding": [[1.0], [2.0]]})), DuplicateItemError, "repeat"),
    (dict(item_features=pl.DataFrame({"item": [1], "embedding": ["x"]})), DtypeMismatchError, "embedding"),
])
def test_side_input_errors_are_typed_with_rows_and_hint(kwargs, error, words):
    with pytest.raises(error) as info:
        prepare_side_inputs(**kwargs)
    assert words in str(info.value) and "Hint:" in str(info.value)


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("items", [[], pl.Series("item", [], pl.Int64), pl.DataFrame(schema={"item": pl.Int64}),
                                   "parquet"])
def test_empty_catalog_is_one_parameter_error_before_any_engine(engine, items, tmp_path, monkeypatch):
    """An empty items input was NaN coverage and gini 0 on Polars, the train items on DuckDB, and items=[]
    a DtypeMismatchError ("item ids are String"): now a ParameterError naming items, before an engine runs."""
    if isinstance(items, str):
        items = tmp_path / "items.parquet"
        pl.DataFrame(schema={"item": pl.Int64}).write_parquet(items)
    monkeypatch.setattr(B, "run", lambda *a, **k: pytest.fail("an engine ran"))
    recs = pl.DataFrame({"user": [1, 1, 2], "item": [1, 2, 3], "rank": [1, 2, 1]})
    train = pl.DataFrame({"user": [1, 2, 3, 4], "item": [1, 1, 2, 4]})
    for metrics in (["item_coverage", "gini"], ["novelty"]):
        with pytest.raises(rankwise.ParameterError, match="items is an empty catalog") as info:
            rankwise.evaluate(recs, None, k=2, metrics=metrics, train=train, items=items, backend=engine)
        assert "items=None" in str(info.value)


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("kind", ["categorical", "enum", "pandas category"])
def test_categorical_item_ids_meet_text_side_inputs(engine, kind):
    """Categorical / Enum / pandas category item ids with ground_truth=None were a Polars SchemaError (join
    keys cat vs str). By hand, k = 2, train pop a 2, b 1, d 1, c cold, U_T = 4: novelty u1 (1 + 2) / 2, u2
    (cold = one user) 2, mean 1.75; arp u1 1.5, u2 0, mean 0.75; coverage {a, b} of the train items {a, b, d}
    = 2/3; gini over {a, b, c, d} with exposure 1, 1, 1, 0: (-1 + 1 + 3) / (4 * 3) = 0.25; ild u1 (a, b
    orthogonal) 1, u2 a single item (undefined)."""
    recs = pl.DataFrame({"user": [1, 1, 2], "item": ["a", "b", "c"], "rank": [1, 2, 1]})
    if kind == "categorical":
        recs = recs.with_columns(pl.col("item").cast(pl.Categorical))
    elif kind == "enum":
        recs = recs.with_columns(pl.col("item").cast(pl.Enum(["a", "b", "c"])))
    else:
        recs = recs.to_pandas().astype({"item": "category"})
    train = pl.DataFrame({"user": [1, 2, 3, 4], "item": ["a", "a", "b", "d"]})
    features = pl.DataFrame({"item": ["a", "b", "c"], "feature": ["f1", "f2", "f1"]})
    res = rankwise.evaluate(recs, None, k=2, metrics=["novelty", "arp", "item_coverage", "gini", "ild"],
                            train=train, item_features=features, backend=engine)
    got = dict(res.summary.select("metric", "value").iter_rows())
    assert got == pytest.approx({"novelty": 1.75, "arp": 0.75, "item_coverage": 2 / 3, "gini": 0.25, "ild": 1.0})


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_side_input_item_ids_follow_the_recommendations_type(engine, tmp_path):
    """Text item ids in a side input against integer ids in the recommendations (a CSV file's ids are
    text) are a DtypeMismatchError naming the input, not an engine's join error; integer widths are
    cast to the recommendations' type: novelty@2 = (-log2(2/2) - log2(1/2)) / 2 = 0.5 for user 1."""
    recs = pl.DataFrame({"user": [1, 1], "item": [5, 6], "rank": [1, 2]}, schema_overrides={"item": pl.UInt32})
    train = pl.DataFrame({"user": [8, 9, 9], "item": [5, 6, 5]})
    got = rankwise.evaluate(recs, None, k=2, metrics=["novelty"], train=train, backend=engine)
    assert got.per_user["novelty@2"].to_list() == [0.5]
    train.write_csv(tmp_path / "train.csv")
    for name, metric, side in (
            ("train", "novelty", dict(train=str(tmp_path / "train.csv"))),
            ("items", "item_coverage", dict(train=train, items=["5", "6"])),
            ("item_features", "ild", dict(item_features=pl.DataFrame({"item": ["5"], "feature": ["g"]})))):
        with pytest.raises(DtypeMismatchError) as info:
            rankwise.evaluate(recs, None, k=2, metrics=[metric], backend=engine, **side)
        assert f"{name}: the item ids are String" in str(info.value) and "CSV" in str(info.value)


# -- through evaluate(): per_user columns, summary rows, per_item, errors -----------------------------


@pytest.mark.parametrize("engine", ["polars", "duckdb", "duckdb-parquet"])  # DuckDB scans a Parquet path itself
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_evaluate_gives_the_oracles_values(seed, engine, tmp_path):
    backend = engine.split("-")[0]
    recs, scores, truth, train, items, features, ks = _dataset(seed)
    embedding = all(set(f) == {"0", "1", "2"} for f in features.values())
    recs_df, truth_df, side = _frames(recs, scores, truth, train, items, features, embedding)
    recs_in = recs_df.filter(pl.col("item_id").is_not_null()).select(
        pl.col("user_id").alias("user"), pl.col("item_id").alias("item"), "rank")
    truth_in = truth_df.rename({"user_id": "user", "item_id": "item"})
    recs = {u: lst for u, lst in recs.items() if lst}  # a long table holds no empty list
    user_metrics = ["novelty", "arp", "long_tail_share", "ild", "serendipity"]
    catalog_metrics = ["item_coverage", "gini", "exposure_entropy", "personalization"]
    train_in = side.train.rename({"user_id": "user", "item_id": "item"})
    feats = side.long_features.rename({"item_id": "item"})
    items_in = None if side.items is None else side.items.rename({"item_id": "item"})
    if not recs:
        return
    if engine == "duckdb-parquet":
        recs_in.write_parquet(tmp_path / "recs.parquet")
        recs_in = str(tmp_path / "recs.parquet")
    conv = Convention(users="union")  # every recommended user is evaluated, as the oracle's user_values
    res = rankwise.evaluate(recs_in, truth_in, k=ks, metrics=["precision", *user_metrics, *catalog_metrics],
                            train=train_in, items=items_in, item_features=feats, backend=backend, convention=conv)
    per_user = {r["user"]: r for r in res.per_user.iter_rows(named=True)}
    summary = {(r["metric"], r["k"]): r for r in res.summary.iter_rows(named=True)}
    for k in ks:
        want_users = oracle.user_values(recs, train, k, conv, items, features, truth)
        for user, want in want_users.items():
            for m in user_metrics:
                assert _close(want[m], per_user[user][f"{m}@{k}"]), (backend, k, user, m)
        want_cat = oracle.catalog_values(recs, train, k, conv, items, None)
        for m in catalog_metrics:
            assert _close(want_cat[m], summary[(m, k)]["value"]), (backend, k, m)
            assert summary[(m, k)]["n_users"] == want_cat["n_users"]
            assert math.isnan(summary[(m, k)]["ci_low"])  # one value per run: no t interval
        for m in user_metrics:
            defined = [v[m] for v in want_users.values() if not math.isnan(v[m])]
            row = summary[(m, k)]
            assert row["n_users"] == len(defined)
            if defined:
                assert _close(sum(defined) / len(defined), row["value"])
    want_items = oracle.item_values(recs, train, ks[-1], conv, items)
    got_items = {r["item"]: (r["exposure"], r["popularity"])
                 for r in res.per_item.filter(pl.col("k") == ks[-1]).iter_rows(named=True)}
    assert got_items == want_items


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_list_form_parquet_files(engine, tmp_path):
    """List-form Parquet files: DuckDB was given a SELECT of a rank column the file does not have (a raw
    BinderException for recommendations, a ConversionException for a list-form truth). By hand, k = 2,
    train pop 1 = 2, pop 2 = 1, item 3 cold, U_T = 4: novelty u1 (1 + 2) / 2, u2 2, mean 1.75; coverage
    {1, 2} of the train items {1, 2, 4} = 2/3; precision u1 1/2, u2 0, mean 0.25."""
    recs, truth = tmp_path / "recs.parquet", tmp_path / "truth.parquet"
    pl.DataFrame({"user": [1, 2], "item": [[1, 2], [3]]}).write_parquet(recs)
    pl.DataFrame({"user": [1, 2], "item": [[2], [5]]}).write_parquet(truth)
    train = pl.DataFrame({"user": [1, 2, 3, 4], "item": [1, 1, 2, 4]})
    want = {"novelty": 1.75, "item_coverage": 2 / 3}
    res = rankwise.evaluate(str(recs), None, k=2, metrics=list(want), train=train, backend=engine)
    assert dict(res.summary.select("metric", "value").iter_rows()) == pytest.approx(want)
    res = rankwise.evaluate(str(recs), str(truth), k=2, metrics=["precision", *want], train=train, backend=engine)
    assert dict(res.summary.select("metric", "value").iter_rows()) == pytest.approx({"precision": 0.25, **want})


@pytest.mark.parametrize("engine", ["polars", "duckdb", "duckdb-parquet"])
@pytest.mark.parametrize(("convention", "want"), [
    # users='labels': users 1 and 4; 4 has no list (undefined); users 2, 3 are outside_users
    ("evidently", {1: 1.5, 4: math.nan}),
    # users='union': user 4 (truth only) is evaluated with an empty list: undefined, counted in excluded
    ("union", {1: 1.5, 2: 2.0, 3: 2.0, 4: math.nan}),
    # list_denominator='k': an empty list scores 0 (as RePlay), so user 4 is in the mean
    ("k", {1: 1.5, 2: 1.0, 3: 1.0, 4: 0.0}),
])
def test_beyond_users_are_the_accuracy_users(engine, convention, want, tmp_path):
    """With accuracy metrics, a per-user beyond metric's users are the convention's accuracy users: its
    summary is the mean of its per_user column, n_users counts the defined values, and excluded counts
    every user left out (the summary was over the recommendations' users, and excluded missed user 4).
    By hand: train pop 1 = 2, pop 2 = pop 3 = 1, U_T = 4; novelty@2 u1 (-log2(2/4) - log2(1/4)) / 2 = 1.5,
    u2 = u3 = -log2(1/4) = 2 (over n_u = 1; over k = 2: 1); u4 has no recommendation."""
    backend = engine.split("-")[0]
    conv = {"union": Convention(users="union"), "k": Convention(users="union", list_denominator="k")}.get(
        convention, convention)
    recs = pl.DataFrame({"user": [1, 1, 2, 3], "item": [1, 2, 3, 3], "rank": [1, 2, 1, 1]})
    if engine == "duckdb-parquet":  # DuckDB scans the file itself and adds user 4's empty list
        recs.write_parquet(tmp_path / "recs.parquet")
        recs = str(tmp_path / "recs.parquet")
    truth = pl.DataFrame({"user": [1, 4], "item": [2, 1]})
    train = pl.DataFrame({"user": [1, 2, 3, 4], "item": [1, 1, 2, 3]})
    res = rankwise.evaluate(recs, truth, 2, metrics=["precision", "novelty"], train=train, convention=conv,
                            backend=backend)
    got = dict(res.per_user.select("user", "novelty@2").iter_rows())
    assert got.keys() == want.keys() and all(_close(want[u], got[u]) for u in want)
    defined = [v for v in want.values() if not math.isnan(v)]
    row = res.summary.filter(pl.col("metric") == "novelty").row(0, named=True)
    assert row["value"] == pytest.approx(sum(defined) / len(defined)) and row["n_users"] == len(defined)
    excluded = dict(res.excluded.select("code", "n_users").iter_rows())
    assert excluded.get("undefined_novelty", 0) == len(want) - len(defined)
    assert excluded.get("outside_users", 0) == 4 - len(want)  # a reason that leaves no one out has no row
    boot = res.bootstrap(50, metrics="novelty").row(0, named=True)
    assert boot["value"] == pytest.approx(row["value"]) and boot["n_users"] == row["n_users"]


def test_compare_conventions_evaluates_beyond_metrics_alone_as_explain_does():
    """compare_conventions with ndcg and novelty computed novelty over the accuracy users (rectools:
    users='labels', users 1 and 2) while explain() and RecTools compute it over the recommendations'
    users, so the table showed a gap explain put at 0. By hand: pop 1 = 3, pop 2 = 2, pop 3 = 1,
    U_T = 4; novelty@2 u1 = (2 + log2(4/3)) / 2, u2 = (log2(4/3) + 1) / 2, u3 = 2."""
    train = pl.DataFrame({"user": [1, 1, 2, 2, 3, 4], "item": [1, 2, 1, 3, 1, 2]})
    recs = pl.DataFrame({"user": [1, 1, 2, 2, 3], "item": [3, 1, 1, 2, 3], "rank": [1, 2, 1, 2, 1]})
    truth = pl.DataFrame({"user": [1, 2], "item": [1, 2]})  # user 3: no labels
    u1, u2, u3 = (2 + math.log2(4 / 3)) / 2, (math.log2(4 / 3) + 1) / 2, 2.0
    table = rankwise.compare_conventions(recs, truth, k=2, presets=["default", "rectools"],
                                         metrics=["ndcg", "novelty"], train=train)
    novelty = table.filter(pl.col("metric") == "novelty").row(0, named=True)
    assert novelty["default"] == pytest.approx((u1 + u2 + u3) / 3)
    assert novelty["rectools"] == pytest.approx((u1 + u2 + u3) / 3)
    explained = rankwise.explain(recs, truth, a="default", b="rectools", metric="novelty", k=2, train=train)
    assert (explained.value_a, explained.value_b) == (novelty["default"], novelty["rectools"])
    # in one evaluate() call with ndcg, the result's one user set (rectools: users 1, 2) is the documented rule
    both = rankwise.evaluate(recs, truth, k=2, metrics=["ndcg", "novelty"], train=train, convention="rectools")
    assert both.summary.filter(pl.col("metric") == "novelty")["value"].item() == pytest.approx((u1 + u2) / 2)


def test_excluded_counts_users_undefined_at_any_k():
    """ild is undefined for a list of fewer than 2 items with features: at k = 1 for every user, at
    k = 3 for user 3 only (item 5 has no features); excluded counted the largest k only (1 of 3)."""
    recs = pl.DataFrame({"user": [1, 1, 1, 2, 2, 3], "item": [3, 4, 1, 1, 2, 5], "rank": [1, 2, 3, 1, 2, 1]})
    feats = pl.DataFrame({"item": [1, 2, 3, 4], "embedding": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0]]})
    res = rankwise.evaluate(recs, None, k=[1, 3], metrics=["ild"], item_features=feats)
    assert dict(res.summary.select("k", "n_users").iter_rows()) == {1: 0, 3: 2}
    assert dict(res.excluded.select("code", "n_users").iter_rows())["undefined_ild"] == 3


def test_only_beyond_metrics_need_no_truth_and_missing_inputs_are_named():
    recs = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rank": [1, 2, 1]})
    train = pl.DataFrame({"user": [7, 8, 8], "item": [10, 10, 12]})
    res = rankwise.evaluate(recs, None, k=2, metrics=["novelty", "item_coverage"], train=train)
    # by hand: U_T = 2, pop(10) = 2, item 11 is cold (one user): novelty u1 = (0 + 1) / 2, u2 = 0
    assert res.per_user.rows() == [(1, 0.5), (2, 0.0)]
    coverage = res.summary.filter(pl.col("metric") == "item_coverage")
    assert coverage["value"].item() == 0.5  # {10, 11} ∩ C = {10} of C = {10, 12}
    with pytest.raises(rankwise.ParameterError, match="train"):
        rankwise.evaluate(recs, None, k=2, metrics=["novelty"])
    with pytest.raises(rankwise.ParameterError, match="item_features"):
        rankwise.evaluate(recs, None, k=2, metrics=["ild"], train=train)
    with pytest.raises(rankwise.ParameterError, match="ground_truth"):
        rankwise.evaluate(recs, None, k=2, metrics=["precision", "novelty"], train=train)
    # the catalog comes from items, else from the train items: either will do (it said "needs items")
    with pytest.raises(rankwise.ParameterError, match="needs items or train") as info:
        rankwise.evaluate(recs, None, k=2, metrics=["item_coverage"])
    assert "items=... or train=..." in str(info.value)


# -- score_entropy through evaluate() (document 001: Evidently's ScoreDistribution) --------------------


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_score_entropy_through_evaluate_by_hand(engine):
    backend = engine
    # two users, scores ln 2 and 0 each: pooled top 2 = {ln 2, 0, ln 2, 0}, exp = {2, 1, 2, 1}, Z = 6,
    # softmax (1/3, 1/6, 1/3, 1/6): H = -(2/3 ln 1/3 + 1/3 ln 1/6) = 2/3 ln 3 + 1/3 ln 6 nats
    recs = pl.DataFrame({"user": [1, 1, 2, 2], "item": [10, 11, 12, 13],
                         "score": [math.log(2), 0.0, math.log(2), 0.0]})
    res = rankwise.evaluate(recs, None, k=[1, 2], metrics=["score_entropy"], backend=backend)
    got = {r["k"]: r for r in res.summary.iter_rows(named=True)}
    assert math.isclose(got[2]["value"], 2 / 3 * math.log(3) + 1 / 3 * math.log(6), rel_tol=1e-14)
    assert math.isclose(got[1]["value"], math.log(2), rel_tol=1e-14)  # top 1: {ln 2, ln 2}, uniform
    assert got[2]["n_users"] == 2 and math.isnan(got[2]["ci_low"])
    # with a rank column the ranks decide the top k and each row keeps its own score: top 1 = the
    # rank-1 rows, scores 0 and ln 3 -> softmax (1/4, 3/4): ln 4 - 3/4 ln 3
    ranked = pl.DataFrame({"user": [1, 1, 2, 2], "item": [10, 11, 12, 13], "rank": [1, 2, 1, 2],
                           "score": [0.0, 5.0, math.log(3), 7.0]})
    truth = pl.DataFrame({"user": [1, 2], "item": [10, 99]})
    res = rankwise.evaluate(ranked, truth, k=1, metrics=["precision", "score_entropy"], backend=backend)
    entropy = res.summary.filter(pl.col("metric") == "score_entropy")["value"].item()
    assert math.isclose(entropy, math.log(4) - 0.75 * math.log(3), rel_tol=1e-14)
    assert res.per_user["precision@1"].to_list() == [1.0, 0.0]  # the accuracy metrics are unchanged


@pytest.mark.parametrize("engine", ["polars", "duckdb", "postgres"])
def test_score_entropy_of_scores_far_apart_by_hand(engine, request):
    """Scores more than 745 apart: PostgreSQL's EXP raised 'underflow' where a double's exp is 0.
    Pooled top k (every k here) d = score - max = {0, -1480, -1497, -600, -1499}: exp = {1, 0, 0, e^-600, 0}
    as doubles; Z = 1 + e^-600, H = ln Z + 600 e^-600 / Z. Exactly 601 e^-600, but in doubles Z = 1:
    ln Z = 0 and H = 600 e^-600 (what every engine's formula gives; log1p would keep the 1)."""
    if engine == "postgres":
        request.getfixturevalue("pg_dsn")  # reachable, through the libpq environment
    recs = pl.DataFrame({"user": [1, 1, 1, 2, 2], "item": [1, 2, 3, 1, 3], "score": [1500.0, 20, 3, 900, 1]})
    res = rankwise.evaluate(recs, None, k=[1, 3], metrics=["score_entropy"], backend=engine)
    for value in res.summary["value"]:
        assert math.isclose(value, 600 * math.exp(-600), rel_tol=1e-12)


def test_score_entropy_without_scores_names_the_column(tmp_path):
    recs = pl.DataFrame({"user": [1, 2], "item": [10, 11], "rank": [1, 1]})
    with pytest.raises(rankwise.ParameterError, match=r"score_entropy.*'score'") as info:
        rankwise.evaluate(recs, None, k=1, metrics=["score_entropy"])
    assert "score_col=" in str(info.value)
    with pytest.raises(rankwise.MissingColumnError, match="score_col='pred'"):  # a named column must exist
        rankwise.evaluate(recs, None, k=1, metrics=["score_entropy"], score_col="pred")
    bad = recs.with_columns(score=pl.Series([0.5, float("nan")]))
    with pytest.raises(rankwise.errors.InvalidScoreError, match="NaN") as info:
        rankwise.evaluate(bad, None, k=1, metrics=["score_entropy"], backend="duckdb")
    assert "Hint:" in str(info.value)


# -- backend="postgres": the rendered script run in PostgreSQL -----------------------------------------


@pytest.mark.parametrize("seed", [1, 3])
def test_postgres_backend_equals_polars(seed, pg_dsn):
    recs, scores, truth, train, items, features, ks = _dataset(seed)
    recs_df, truth_df, side = _frames(recs, scores, truth, train, items, features, False)
    recs_in = recs_df.filter(pl.col("item_id").is_not_null()).select(
        pl.col("user_id").alias("user"), pl.col("item_id").alias("item"), "rank")
    metrics = ["precision", *B.USER_COLUMNS, "item_coverage", "gini", "exposure_entropy", "personalization"]
    kwargs = dict(k=ks, metrics=metrics, train=side.train.rename({"user_id": "user", "item_id": "item"}),
                  items=None if side.items is None else side.items.rename({"item_id": "item"}),
                  item_features=side.long_features.rename({"item_id": "item"}),
                  convention=rankwise.PRESETS["evidently"].replace(metrics=None))  # its knobs, every metric
    truth_in = truth_df.rename({"user_id": "user", "item_id": "item"})
    want = rankwise.evaluate(recs_in, truth_in, backend="polars", **kwargs)
    got = rankwise.evaluate(recs_in, truth_in, backend="postgresql://postgres@127.0.0.1:54329/postgres", **kwargs)
    for a, b in zip(want.per_user.iter_rows(), got.per_user.iter_rows(), strict=True):
        assert all(_close9(x, y) for x, y in zip(a, b)), (a, b)
    for a, b in zip(want.summary.iter_rows(), got.summary.iter_rows(), strict=True):
        assert a[:2] == b[:2] and _close9(a[2], b[2]) and a[3] == b[3], (a, b)
    assert want.per_item.equals(got.per_item)
    _only_what_was_asked(recs_in, ks, side, "postgresql://postgres@127.0.0.1:54329/postgres")


def _only_what_was_asked(recs_in, ks, side, backend):
    """score_entropy from scores that do not follow the ranks (the canonical ranks decide the top k), with
    only train given: the engine's script renders the metrics asked for (it asked for item_features
    before, for ild), and equals the Polars engine."""
    scored = recs_in.with_columns(score=(pl.int_range(pl.len()) % 13).cast(pl.Float64) / 4.0)
    kwargs = dict(k=ks, metrics=["score_entropy", "novelty", "gini"],
                  train=side.train.rename({"user_id": "user", "item_id": "item"}))
    want = rankwise.evaluate(scored, None, backend="polars", **kwargs).summary
    got = rankwise.evaluate(scored, None, backend=backend, **kwargs).summary
    assert want["metric"].to_list() == got["metric"].to_list() and "score_entropy" in got["metric"].to_list()
    assert all(_close9(a, b) for a, b in zip(want["value"], got["value"], strict=True))


def _close9(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        a, b = (float("nan") if v is None else v for v in (a, b))
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def test_memory_limit_reaches_the_beyond_duckdb_connection(monkeypatch):
    """evaluate(memory_limit=...) caps the beyond-accuracy DuckDB connection too, with a spill directory."""
    seen = {}
    register = D.register

    def spy(con, *args, **kwargs):
        seen["limit"], seen["spill"] = con.execute(
            "SELECT current_setting('memory_limit'), current_setting('temp_directory')").fetchall()[0]
        return register(con, *args, **kwargs)

    monkeypatch.setattr(D, "register", spy)
    recs = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rank": [1, 2, 1]})
    rankwise.evaluate(recs, None, k=2, metrics=["novelty"], train=recs, backend="duckdb", memory_limit="64MB")
    with duckdb.connect() as con:
        con.execute("SET memory_limit = '64000000B'")
        expected = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    assert seen["limit"] == expected
    assert "rankwise-duckdb-" in seen["spill"]


# items 1-3 at 1e160, 4-5 at 1e-160: directions (1, 0), (0, 1), (1, 1), (1, 0), (1, 1)
_SCALED = {1: (1e160, 0.0), 2: (0.0, 1e160), 3: (1e160, 1e160), 4: (1e-160, 0.0), 5: (1e-160, 1e-160)}


def _scaled_ild_expected() -> dict:
    """By hand: cos((1,0),(0,1)) = 0, cos((1,0),(1,1)) = cos((0,1),(1,1)) = 1/sqrt 2."""
    c = 2 ** -0.5
    return {1: (1 + 2 * (1 - c)) / 3, 2: 1 - c, 3: 1 - c}


def test_ild_does_not_depend_on_the_scale_of_the_vectors(backend):
    """ILD reads directions only. Feature values of 1e160 overflowed the squared norms to infinity (Polars
    and DuckDB gave 1.75 for 0.41; PostgreSQL raised) and values of 1e-160 underflowed them to 0 (the items
    counted as featureless): each vector is divided by its largest |value| before its norm is taken.
    User 1 lists items at 1e160, user 2 at 1e-160, user 3 one of each."""
    recs = pl.DataFrame({"user": [1, 1, 1, 2, 2, 3, 3], "item": [1, 2, 3, 4, 5, 1, 5], "rank": [1, 2, 3, 1, 2, 1, 2]})
    long = pl.DataFrame({"item": [i for i in _SCALED for _ in "ab"], "feature": ["a", "b"] * len(_SCALED),
                         "value": [v for vec in _SCALED.values() for v in vec]})
    embeddings = pl.DataFrame({"item": list(_SCALED), "embedding": [list(v) for v in _SCALED.values()]})
    for features in (long, embeddings) if backend in ("polars", "duckdb") else (long,):
        got = rankwise.evaluate(recs, None, k=3, metrics=["ild"], item_features=features, backend=backend)
        values = dict(got.per_user.select("user", "ild@3").rows())
        assert values == pytest.approx(_scaled_ild_expected(), rel=1e-12), (backend, features.columns)


def test_ild_expression_and_macro_do_not_depend_on_the_scale_of_the_vectors():
    """The same data as one list of vectors per row: rankwise.expr.ild and the DuckDB macro rankwise_ild."""
    import duckdb

    from rankwise import expr

    lists = {1: [1, 2, 3], 2: [4, 5], 3: [1, 5]}
    rows = pl.DataFrame({"user": list(lists), "vec": [[list(_SCALED[i]) for i in items] for items in lists.values()]})
    expected = _scaled_ild_expected()
    assert dict(rows.select("user", expr.ild("vec", k=3)).rows()) == pytest.approx(expected, rel=1e-12)
    with duckdb.connect() as con:
        expr.install_duckdb(con)
        con.register("t", rows)
        assert dict(con.sql("SELECT user, rankwise_ild(vec, 3) FROM t").fetchall()) == pytest.approx(expected, rel=1e-12)


def test_score_entropy_of_scores_far_apart(backend):
    """Scores 2e308 apart: score - max(score) overflowed (Polars and DuckDB: -inf, then 0 * -inf = NaN;
    PostgreSQL raised). By hand, pooled at k = 2: 1e308, -1e308 (user 1) and 0 (user 2); the softmax is
    (1, 0, 0) in doubles, whose entropy is 0. With scores 1000 apart the same (exp(-1000) is 0)."""
    for low in (-1e308, -1000.0):
        recs = pl.DataFrame({"user": [1, 1, 2], "item": [1, 2, 1], "score": [1e308 if low < -1e3 else 0.0, low, low]})
        got = rankwise.evaluate(recs, None, k=2, metrics=["score_entropy"], backend=backend)
        assert got.summary["value"].to_list() == [0.0], (backend, low)


def test_postgres_overflow_in_the_beyond_script_is_a_typed_error(pg_dsn, monkeypatch):
    """A statement of the beyond script that overflows a double (no input reaches one since the ILD and
    score-entropy fixes, so one is added): psycopg's NumericValueOutOfRange becomes a NumericOverflowError
    with a hint."""
    script = B.script

    def overflowing(*args, **kwargs):
        rendered = script(*args, **kwargs)
        return dataclasses.replace(rendered, stages=(*rendered.stages, "SELECT CAST(1e308 AS DOUBLE PRECISION) * 10"))

    monkeypatch.setattr(B, "script", overflowing)
    recs = pl.DataFrame({"user": [1, 1, 2], "item": [1, 2, 1], "rank": [1, 2, 1]})
    with pytest.raises(rankwise.NumericOverflowError, match="novelty") as info:
        rankwise.evaluate(recs, None, k=2, metrics=["novelty"], train=recs, backend="postgres")
    assert "scores" in info.value.hint


@pytest.mark.parametrize("as_file", [False, True])
def test_a_user_without_recommendations_counts_as_an_empty_list_from_a_file_too(backend, as_file, tmp_path):
    """recbole divides by k: user 3 (labels, no list) has arp 0 and is in the mean. By hand, pop from
    train rows: pop(10) = 2, pop(11) = pop(12) = 1; users 1 and 2: (2 + 1) / 2 = 1.5; mean (1.5 + 1.5 + 0) / 3."""
    recs = pl.DataFrame({"user": [1, 1, 2, 2], "item": [10, 11, 10, 12], "rank": [1, 2, 1, 2]})
    if as_file:
        recs.write_parquet(tmp_path / "recs.parquet")
        recs = str(tmp_path / "recs.parquet")
    truth = pl.DataFrame({"user": [1, 2, 3], "item": [10, 12, 11]})
    train = pl.DataFrame({"user": [1, 2, 3, 3], "item": [10, 10, 11, 12]})
    r = rankwise.evaluate(recs, truth, k=2, metrics=["ndcg", "arp"], train=train, convention="recbole",
                          backend=backend)
    assert r.per_user.sort("user")["arp@2"].to_list() == [1.5, 1.5, 0.0]
    assert r.summary.filter(pl.col("metric") == "arp").select("value", "n_users").row(0) == (1.0, 3)


@pytest.mark.parametrize("engine", ["polars", "duckdb", "postgres"])  # Spark has no unsigned 64-bit type
def test_uint64_ids_past_two_to_the_63(engine):
    """U_T = 3, pop(big) = 2, pop(7) = 1: user 1 (-log2(2/3) - log2(1/3)) / 2, user 2 -log2(2/3). PostgreSQL
    holds the ids as NUMERIC(20), which were read back as doubles (every id past 2^53 rounded)."""
    big = 2**63 + 5
    t = {"user": pl.UInt64, "item": pl.UInt64}
    recs = pl.DataFrame({"user": [big + 1, big + 1, big + 2], "item": [big, 7, big], "rank": [1, 2, 1]},
                        schema_overrides=t)
    train = pl.DataFrame({"user": [big + 1, big + 2, 3], "item": [big, big, 7]}, schema_overrides=t)
    r = rankwise.evaluate(recs, None, k=2, metrics=["novelty", "item_coverage"], train=train,
                          items=train.select("item").unique(), backend=engine)
    assert sorted(r.per_user["user"].to_list()) == [big + 1, big + 2]
    assert sorted(r.per_item["item"].to_list()) == [7, big]
    values = dict(r.summary.select("metric", "value").rows())
    u1 = (-math.log2(2 / 3) - math.log2(1 / 3)) / 2
    assert values["novelty"] == pytest.approx((u1 - math.log2(2 / 3)) / 2, rel=1e-12)
    assert values["item_coverage"] == 1.0


@pytest.mark.parametrize("as_file", [False, True])
def test_narrow_list_ids_and_a_train_item_past_their_type(backend, as_file, tmp_path):
    """Int16 recommended ids; train item 40000 is never recommended but counts: U_T = 4, pop(1) = 2,
    pop(2) = 1; novelty (1 + 2) / 2 and 1, mean 1.25; coverage 2 of the 3 train items."""
    recs = pl.DataFrame({"user": [1, 1, 2], "item": [1, 2, 1], "rank": [1, 2, 1]}, schema_overrides={"item": pl.Int16})
    if as_file:
        recs.write_parquet(tmp_path / "recs.parquet")
        recs = str(tmp_path / "recs.parquet")
    train = pl.DataFrame({"user": [1, 2, 3, 4], "item": [1, 1, 2, 40000]})
    r = rankwise.evaluate(recs, None, k=2, metrics=["novelty", "item_coverage"], train=train, backend=backend)
    assert dict(r.summary.select("metric", "value").rows()) == pytest.approx({"novelty": 1.25, "item_coverage": 2 / 3})


def test_ild_stays_within_0_and_2_per_pair():
    """1 - cos lies in [0, 2]; from the sum of unit vectors, float rounding put three items pointing the same
    way at -4.4e-16 (k = 2) and -3.0e-16 (k = 3). Every engine, the expression and the DuckDB macro: at
    least 0 and within 1e-15 of it; opposite items at most 2."""
    import duckdb

    from rankwise import expr

    vec = {1: [1.0, 1.0, 1.0], 2: [2.0, 2.0, 2.0], 3: [0.3, 0.3, 0.3], 4: [-1.0, -1.0, -1.0]}
    features = pl.DataFrame({"item": list(vec), "embedding": list(vec.values())})
    recs = pl.DataFrame({"user": [1, 1, 1, 2, 2], "item": [1, 2, 3, 1, 4], "rank": [1, 2, 3, 1, 2]})
    rows = pl.DataFrame({"user": [1, 2], "vec": [[vec[1], vec[2], vec[3]], [vec[1], vec[4]]]})
    values = []
    for k in (2, 3):
        for backend in ("polars", "duckdb"):
            got = rankwise.evaluate(recs, None, k=k, metrics=["ild"], item_features=features, backend=backend)
            values.append(dict(got.per_user.select("user", f"ild@{k}").rows()))
        values.append(dict(rows.select("user", expr.ild("vec", k=k)).rows()))
        with duckdb.connect() as con:
            expr.install_duckdb(con)
            con.register("t", rows)
            values.append(dict(con.sql(f"SELECT user, rankwise_ild(vec, {k}) FROM t").fetchall()))
    for v in values:
        assert 0.0 <= v[1] < 1e-15 and 2.0 - 1e-15 < v[2] <= 2.0, values


def test_min_score_drops_the_items_before_the_beyond_metrics_on_every_backend(backend):
    """min_score is applied by the input rules before any engine; the rendered script the PostgreSQL and
    Spark paths run over the canonical rows then refused it as a SQL gap. Items 10 (pop 2) and 12
    (pop 1) stay, 11 (score 1.0 < 1.5) goes: arp = (2 + 1) / 2, novelty = (log2(3/2) + log2(3)) / 2
    (3 train users)."""
    import math

    recs = pl.DataFrame({"user": [1, 1, 1], "item": [10, 11, 12], "score": [3.0, 1.0, 2.0]})
    train = pl.DataFrame({"user": [1, 2, 3, 3], "item": [12, 10, 10, 11]})
    conv = rankwise.Convention(min_score=1.5)
    got = rankwise.evaluate(recs, None, k=3, metrics=["arp", "novelty"], train=train, convention=conv,
                            backend=backend)
    assert got.per_user.row(0) == pytest.approx((1, 1.5, (math.log2(3 / 2) + math.log2(3)) / 2), rel=1e-12)


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_score_entropy_from_input_already_canonical_equals_the_sorted_path(engine):
    """Rows grouped by user with ranks 1..n take the scores beside the canonical rows (no sort, no join); the
    same rows shuffled go through the input rules' sort: the same entropy, and the same errors for a bad score.
    By hand for k = 1: the pooled top-1 scores {2, 0}: p = (e^2, 1) / (e^2 + 1), H = ln(1 + e^2) - 2 e^2 / (1 + e^2)."""
    recs = pl.DataFrame({"user": [1, 1, 1, 2, 2], "item": [10, 11, 12, 10, 13], "rank": [1, 2, 3, 1, 2],
                         "score": [2.0, 1.5, -1.0, 0.0, -3.0]})
    shuffled = recs.sample(fraction=1.0, shuffle=True, seed=3)
    assert not shuffled["user"].equals(recs["user"])  # not grouped: the layout check's path is not taken
    got = [rankwise.evaluate(r, None, k=[1, 3], metrics=["score_entropy"], backend=engine).summary["value"].to_list()
           for r in (recs, shuffled)]
    assert got[0] == got[1]
    assert math.isclose(got[0][0], math.log(1 + math.e ** 2) - 2 * math.e ** 2 / (1 + math.e ** 2), rel_tol=1e-13)
    for r in (recs, shuffled):
        bad = r.with_columns(pl.when(pl.col("item") == 12).then(float("inf")).otherwise(pl.col("score")).alias("score"))
        with pytest.raises(rankwise.errors.InvalidScoreError, match="1 values of 'score'"):
            rankwise.evaluate(bad, None, k=1, metrics=["score_entropy"], backend=engine)


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("case", ["first_shift", "min_score", "by_score"])
def test_score_entropy_takes_the_score_of_the_row_the_input_rules_keep(engine, case):
    """The general path carries each kept row's score through the input rules: a repeated item keeps its
    best-ranked row's score (first_shift), rows below min_score are gone, or the rows are ranked by the score
    itself. By hand: the pooled top-2 scores s, d = s - max s, H = ln Z - sum e^d d / Z with Z = sum e^d."""
    recs = pl.DataFrame({"user": [2, 1, 1, 2, 1, 1], "item": [10, 11, 10, 13, 10, 12], "rank": [2, 7, 3, 9, 5, 8],
                         "score": [0.5, 1.0, 2.0, -1.0, 9.0, 0.25]})
    conv = {"first_shift": Convention(duplicates="first_shift"), "min_score": Convention(min_score=0.4),
            "by_score": Convention(duplicates="first_shift")}[case]
    given = recs.drop("rank") if case == "by_score" else recs
    if case == "min_score":  # no repeated item: user 1's item 10 once (rank 3, score 2.0)
        given = given.filter(~((pl.col("user") == 1) & (pl.col("item") == 10) & (pl.col("rank") == 5)))
    # user 1 by rank: 10 (rank 3, score 2.0; its rank-5 repeat dropped), 11 (1.0), 12 (0.25); user 2: 10 (0.5), 13
    # (-1.0). min_score 0.4: 12 and 13 go. By score: user 1's item 10 keeps its best score, 9.0; then 11, 12.
    top2 = {"first_shift": [2.0, 1.0, 0.5, -1.0], "min_score": [2.0, 1.0, 0.5], "by_score": [9.0, 1.0, 0.5, -1.0]}[case]
    d = [v - max(top2) for v in top2]  # shifted by the largest score: no cancellation in ln Z - sum / Z
    z = math.fsum(math.exp(x) for x in d)
    expected = math.log(z) - math.fsum(math.exp(x) * x for x in d) / z
    got = rankwise.evaluate(given, None, k=2, metrics=["score_entropy"], convention=conv, backend=engine)
    assert math.isclose(got.summary["value"][0], expected, rel_tol=1e-13)


def test_ild_from_long_features_is_the_same_to_the_last_bit_call_after_call():
    """The items and features of long item_features are numbered in sorted order: numbered in unique()'s order
    (the threads'), the terms of each list's vector sum came in another order now and then, and ild moved in its
    last bit (13 calls of 200 on this dataset before the fix)."""
    recs, scores, truth, train, items, features, ks = _dataset(5)
    assert not all(set(f) == {"0", "1", "2"} for f in features.values())  # long features, not embeddings
    recs_df, truth_df, side = _frames(recs, scores, truth, train, items, features, False)
    first = PB.polars_user(recs_df.lazy(), side, ks, Convention(), names=["ild"]).collect()["ild"]
    assert first.drop_nulls().len() > 5
    for _ in range(150):
        assert PB.polars_user(recs_df.lazy(), side, ks, Convention(), names=["ild"]).collect()["ild"].equals(first)
