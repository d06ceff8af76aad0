"""The large-input paths give the same answers as the general ones.

- Inputs whose ranks are already 1..n per user (one contiguous run per user) skip renumbering and, from
  a Parquet file, are read by DuckDB directly; ranks with gaps, shuffled rows or split runs take the
  general path. Both must agree, and bad input must raise the same errors either way, including when
  the streaming checks cut a user's run between two batches.
- ``memory_limit=`` (DuckDB spilling, Polars streaming) gives identical results.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import polars.testing as plt
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import rankwise
from rankwise.inputs import normalize as _inputs
from rankwise.inputs import layout as _runs

# the batch sizes change the streaming check in Python, before any engine: on Spark and PostgreSQL
# each test runs its first case only (tests/conftest.py)
ONE_CASE_ON_SLOW_BACKENDS = True


def _data(n_users=300, seed=7):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 25, n_users)  # some users recommend nothing (absent from recs)
    users = np.repeat(np.arange(1, n_users + 1), lengths)
    ranks = np.concatenate([np.arange(1, n + 1) for n in lengths])
    items = np.concatenate([rng.choice(60, n, replace=False) for n in lengths])
    recs = pl.DataFrame({"user": users, "item": items, "rank": ranks.astype(np.int32)})
    truth = (
        pl.DataFrame({"user": rng.integers(1, n_users + 40, 4000), "item": rng.integers(0, 60, 4000),
                      "relevance": rng.integers(0, 4, 4000).astype(float)})
        .unique(["user", "item"], keep="first", maintain_order=True)
    )
    return recs, truth


@pytest.fixture(params=[1_000_000, 7], ids=["one-batch", "tiny-batches"])
def batch(request, monkeypatch):
    """tiny-batches: runs are cut between batches everywhere, exercising the carried run."""
    monkeypatch.setattr(_runs, "BATCH_ROWS", request.param)
    return request.param


def _evaluate(recs, truth, backend, **kw):
    return rankwise.evaluate(recs, truth, k=[1, 3, 10, 30], backend=backend, **{"metrics": "all", **kw})


def _same(a, b):
    plt.assert_frame_equal(a.per_user, b.per_user, rel_tol=1e-12)
    plt.assert_frame_equal(a.summary, b.summary, rel_tol=1e-12)
    plt.assert_frame_equal(a.excluded, b.excluded)


def test_contiguous_ranks_fast_path_equals_general_path(tmp_path, backend, batch):
    recs, truth = _data()
    recs_path, truth_path = tmp_path / "recs.parquet", tmp_path / "truth.parquet"
    recs.write_parquet(recs_path)
    truth.sort("user").write_parquet(truth_path)
    prep = _inputs.prepare(str(recs_path), str(truth_path), _inputs.Columns(), rankwise.Convention())
    assert prep.rec_users is not None and prep.truth_users is not None  # the fast path was taken
    assert set(prep.sources) == {"recommendations", "ground_truth"}

    fast = _evaluate(str(recs_path), str(truth_path), backend)
    # gaps (rank * 10), shuffled rows: the general path, renumbered
    gappy = recs.with_columns(pl.col("rank") * 10).sample(fraction=1.0, shuffle=True, seed=3)
    assert _runs.grouped_runs(gappy.lazy(), "user", "item", "rank") is None
    _same(fast, _evaluate(gappy, truth.sample(fraction=1.0, shuffle=True, seed=4), backend))
    # in-memory inputs take the fast path too (without DuckDB file sources)
    _same(fast, _evaluate(recs, truth.sort("user"), backend))


def test_canonical_tables_equal_on_both_paths(batch):
    recs, truth = _data()
    conv, cols = rankwise.Convention(), _inputs.Columns()
    fast = _inputs.prepare(recs, truth.sort("user"), cols, conv)
    slow = _inputs.prepare(recs.sample(fraction=1.0, shuffle=True, seed=1), truth.sample(fraction=1.0, seed=2),
                           cols, conv)
    assert fast.rec_users is not None and slow.rec_users is None
    for a, b in ((fast.recommendations, slow.recommendations), (fast.ground_truth, slow.ground_truth)):
        plt.assert_frame_equal(a.sort(a.columns), b.sort(b.columns))
    assert fast.n_users_either() == slow.n_users_either()


@pytest.mark.parametrize("case", ["split_run", "rank_gap", "rank_from_zero", "repeat_rank"])
def test_layouts_the_fast_path_must_refuse(case, batch):
    base = pl.DataFrame({"user": [1, 1, 1, 2, 2, 3], "item": [5, 6, 7, 5, 8, 9], "rank": [1, 2, 3, 1, 2, 1]})
    bad = {
        "split_run": base.with_columns(pl.Series("user", [1, 1, 2, 2, 1, 3]), pl.Series("rank", [1, 2, 1, 2, 3, 1])),
        "rank_gap": base.with_columns(pl.Series("rank", [1, 2, 4, 1, 2, 1])),
        "rank_from_zero": base.with_columns(pl.Series("rank", [0, 1, 2, 1, 2, 1])),
        "repeat_rank": base.with_columns(pl.Series("rank", [1, 2, 2, 1, 2, 1])),
    }[case]
    assert _runs.grouped_runs(bad.lazy(), "user", "item", "rank") is None
    assert _runs.grouped_runs(base.lazy(), "user", "item", "rank") is not None


def test_errors_are_the_same_when_runs_cross_batches(monkeypatch):
    truth = pl.DataFrame({"user": [1], "item": [5]})
    # user 2 repeats item 8 at ranks 2 and 6; with 3-row batches the two rows land in different batches
    recs = pl.DataFrame({"user": [1, 1, 2, 2, 2, 2, 2, 2], "item": [5, 6, 7, 8, 9, 10, 11, 8],
                         "rank": [1, 2, 1, 2, 3, 4, 5, 6]})
    monkeypatch.setattr(_runs, "BATCH_ROWS", 3)
    with pytest.raises(rankwise.DuplicateItemError, match="repeat an item") as small:
        rankwise.evaluate(recs, truth)
    monkeypatch.setattr(_runs, "BATCH_ROWS", 1_000_000)
    with pytest.raises(rankwise.DuplicateItemError) as large:
        rankwise.evaluate(recs, truth)
    assert str(small.value) == str(large.value)
    for bad_truth, error in [
        (pl.DataFrame({"user": [1, 1, 1, 1], "item": [5, 6, 7, 5]}), rankwise.DuplicateItemError),
        (pl.DataFrame({"user": [1, 1, 1, 1], "item": [5, 6, 7, 8], "relevance": [1.0, 2.0, 1.0, None]}),
         rankwise.InvalidRelevanceError),
        (pl.DataFrame({"user": [1, 1, 1, 1], "item": [5, 6, 7, 8], "relevance": [1.0, 2.0, 1.0, float("nan")]}),
         rankwise.InvalidRelevanceError),
        (pl.DataFrame({"user": [1, 1, 1, None], "item": [5, 6, 7, 8]}), rankwise.NullValueError),
    ]:
        monkeypatch.setattr(_runs, "BATCH_ROWS", 2)
        with pytest.raises(error) as small:
            rankwise.evaluate(recs.head(2), bad_truth)
        monkeypatch.setattr(_runs, "BATCH_ROWS", 1_000_000)
        with pytest.raises(error) as large:
            rankwise.evaluate(recs.head(2), bad_truth)
        assert str(small.value) == str(large.value)


def test_memory_limit_gives_identical_results(tmp_path, backend):
    if not rankwise.engines.engine(backend).capabilities.memory_limit:
        pytest.skip(f"backend={backend!r} takes no memory_limit (a ParameterError, tested in test_hostile_inputs)")
    recs, truth = _data(n_users=2000, seed=11)
    recs_path, truth_path = tmp_path / "recs.parquet", tmp_path / "truth.parquet"
    recs.write_parquet(recs_path)
    truth.write_parquet(truth_path)
    free = _evaluate(str(recs_path), str(truth_path), backend)
    capped = _evaluate(str(recs_path), str(truth_path), backend, memory_limit="64MB")
    _same(free, capped)
    _same(free, _evaluate(str(recs_path), str(truth_path), backend, memory_limit=256 * 2**20))


def test_memory_limit_is_checked():
    recs, truth = _data(n_users=5)
    with pytest.raises(rankwise.ParameterError, match="memory_limit"):
        rankwise.evaluate(recs, truth, memory_limit=2.5)


def _naive_layout(df: pl.DataFrame, with_rank: bool):
    """The layout rule written plainly: (user, rows) of each run in order of first row, or None."""
    rows = df.rows()
    if any(v is None for row in rows for v in row):
        return None
    seen_users, last_user, items, expected = [], object(), set(), 1
    for row in rows:
        user, item = row[0], row[1]
        if user != last_user:
            if user in seen_users:
                return None
            seen_users.append(user)
            last_user, items, expected = user, set(), 1
        if item in items or (with_rank and row[2] != expected):
            return None
        items.add(item)
        expected += 1
    return [(user, sum(1 for row in rows if row[0] == user)) for user in seen_users]


@given(
    runs=st.lists(st.tuples(st.integers(0, 4), st.integers(1, 6)), max_size=8),
    noise=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 2), st.integers(-1, 1)), max_size=3),
    batch_rows=st.sampled_from([1, 1, 2, 3, 5]),
    with_rank=st.booleans(),
    item_kind=st.sampled_from([pl.Int64, pl.String, pl.Categorical]),
)
@example(runs=[(1, 3)], noise=[(1, 2, 1)], batch_rows=1, with_rank=True, item_kind=pl.Int64)  # a rank slip at a cut
@example(runs=[(1, 6)], noise=[(5, 1, -1)], batch_rows=2, with_rank=False, item_kind=pl.Int64)  # a repeat three batches apart
@example(runs=[(1, 2), (2, 2), (1, 2)], noise=[], batch_rows=2, with_rank=True, item_kind=pl.Int64)  # a user's second run
@example(runs=[(1, 4), (2, 3)], noise=[(6, 1, -1)], batch_rows=5, with_rank=True, item_kind=pl.String)  # a repeat in a batch's run
@settings(max_examples=300, deadline=None)
def test_streaming_layout_check_equals_a_plain_loop(runs, noise, batch_rows, with_rank, item_kind):
    """Runs cut anywhere (also across three or more batches), repeats and rank slips across cuts; items
    as numbers, strings (the runs' item lists) and categories (the batch's key set)."""
    users, items, ranks = [], [], []
    for user, length in runs:
        users += [user] * length
        items += list(range(length))
        ranks += list(range(1, length + 1))
    for at, column, delta in noise:  # a few edits: another user, a repeated item, a slipped rank
        if at < len(users):
            target = (users, items, ranks)[column]
            target[at] = max(target[at] + delta, 0)
    df = pl.DataFrame({"user": users, "item": items, "rank": ranks}, schema={"user": pl.Int64, "item": pl.Int64, "rank": pl.Int64})
    if item_kind != pl.Int64:
        df = df.with_columns(pl.col("item").cast(pl.String).cast(item_kind))
    if not with_rank:
        df = df.drop("rank")
    expected = _naive_layout(df, with_rank)
    old = _runs.BATCH_ROWS
    try:
        _runs.BATCH_ROWS = batch_rows
        got = _runs.grouped_runs(df.lazy(), "user", "item", "rank" if with_rank else None)
    finally:
        _runs.BATCH_ROWS = old
    assert (got is None) == (expected is None)
    if got is not None:
        assert got.runs.rows() == expected


def test_layout_check_reads_batches_made_of_several_chunks():
    """A batch can hold several chunks (a frame concatenated without rechunking): a repeated item in
    any of them is found."""
    parts = [pl.DataFrame({"user": [u, u], "item": [1, 1 if u == 3 else 2], "rank": [1, 2]}) for u in (1, 2, 3)]
    bad = pl.concat(parts, rechunk=False)
    good = pl.concat(parts[:2], rechunk=False)
    assert bad.n_chunks() == 3
    assert _runs.grouped_runs(bad.lazy(), "user", "item", "rank") is None
    got = _runs.grouped_runs(good.lazy(), "user", "item", "rank")
    assert got.runs.rows() == [(1, 2), (2, 2)] and got.item_range == (1, 2)


def test_a_label_outside_the_packed_key_range_meets_no_recommendation(backend):
    """Recommended ids all in [0, 2^32): Polars joins on one 64-bit key, user * 2^32 + item. A label whose item
    is outside that range would pack onto another user's pair if it were packed (user 0's item 2^32 + 5 onto user
    1's item 5, item -1 of user 1 onto user 0's item 2^32 - 1): it must earn nothing. By hand: no recommendation
    is relevant, so precision@1 is 0 for both users; item 4294967295 of user 0 is relevant (a hit at rank 2).
    R-precision reads n_rel on the judged rows, recall on the user's row: both count the label outside the range."""
    recs = pl.DataFrame({"user": [0, 0, 1], "item": [7, 4294967295, 5], "rank": [1, 2, 1]})
    truth = pl.DataFrame({"user": [0, 0, 1, 1], "item": [4294967301, 4294967295, 9, -1], "relevance": [1, 1, 1, 1]})
    prep = _inputs.prepare(recs, truth, _inputs.Columns(), rankwise.Convention())
    assert prep.rec_counts is not None and prep.rec_counts.narrow  # the 64-bit key is the one under test
    res = rankwise.evaluate(recs, truth, k=[1, 2], metrics=["precision", "hit_rate", "recall", "r_precision"],
                            backend=backend)
    rows = {r["user"]: r for r in res.per_user.iter_rows(named=True)}
    assert rows[0]["precision@1"] == 0.0 and rows[1]["precision@1"] == 0.0
    assert rows[0]["precision@2"] == 0.5 and rows[0]["hit_rate@2"] == 1.0 and rows[1]["hit_rate@2"] == 0.0
    # the label outside the range still counts among user 0's two relevant items: one found of two
    assert rows[0]["recall@2"] == 0.5 and rows[0]["r_precision@2"] == 0.5 and rows[1]["recall@2"] == 0.0



@pytest.mark.filterwarnings("ignore::rankwise.errors.CutoffWarning")
def test_the_judged_aware_and_parameter_joins_use_the_same_key_rules(backend):
    """The judged-aware stage (bpref, infAP) and a parameter family (Rprec_mult at two multipliers) join the
    recommendations with the labels on the same 64-bit key as the earning rows, with the same rule: user 0's label
    2^32 + 5 would pack onto user 1's recommended item 5 and make it relevant. By hand (trec_eval's definitions,
    n_rel = 2 for both users): user 0 finds its relevant item at rank 2 with no judged non-relevant item above it:
    bpref = 1/2, infAP = (1/2 + (1/2)(0/1)) / 2 = 0.25, Rprec_mult_1 = 1/floor(2 + 0.9) = 0.5, Rprec_mult_2 =
    1/floor(4 + 0.9) = 0.25; user 1 finds none: every value 0 (0.5, 0.5, 0.5 for bpref, infAP, Rprec_mult_1 if the
    label met its recommendation)."""
    recs = pl.DataFrame({"user": [0, 0, 1], "item": [7, 4294967295, 5], "rank": [1, 2, 1]})
    truth = pl.DataFrame({"user": [0, 0, 1, 1], "item": [4294967301, 4294967295, 9, -1], "relevance": [1, 1, 1, 1]})
    res = rankwise.evaluate(recs, truth, measures=["bpref", "infAP", "Rprec_mult_1.00", "Rprec_mult_2.00"],
                            convention="trec_eval", backend=backend)
    assert res.per_measure.sort("user").rows() == [(0, 0.5, 0.25, 0.5, 0.25), (1, 0.0, 0.0, 0.0, 0.0)]
    assert res.per_measure.columns == ["user", "bpref", "infAP", "Rprec_mult_1.00", "Rprec_mult_2.00"]

def _oracle_rows(rows, order, duplicates, min_score=None):
    """The canonical (user, rank, item) rows by the input rules, in plain Python: each user's rows in ``order``
    (a sort key of a row), scored below ``min_score`` dropped (a user left with none keeps a null row), a
    repeated item kept at its first place under 'first_shift', then positions 1..n."""
    by_user = {}
    for row in rows:
        by_user.setdefault(row["user"], []).append(row)
    out = []
    for user in sorted(by_user):
        kept = [r for r in by_user[user] if min_score is None or r["score"] >= min_score]
        if not kept:
            out.append((user, None, None))
            continue
        seen, position = set(), 0
        for r in sorted(kept, key=order):
            if r["item"] in seen and duplicates == "first_shift":
                continue
            seen.add(r["item"])
            position += 1
            out.append((user, position, r["item"]))
    return out


@pytest.mark.parametrize("users", ["int", "str"])
@pytest.mark.parametrize("case", ["rank", "rank_min_score", "score_item_asc", "score_item_desc",
                                  "score_input_order", "score_integer", "first_shift", "list_repeats"])
def test_general_path_orders_shuffled_rows_as_a_naive_oracle(case, users):
    """Shuffled rows (ranks with gaps, equal scores, repeated items, text users) through the general path's
    sorts: the canonical rows equal the input rules computed by hand in Python."""
    rng = np.random.default_rng(13)
    n = 3000
    raw = pl.DataFrame({"user": rng.integers(0, 120, n), "item": rng.integers(0, 40, n),
                        "rank": rng.choice(10 * n, n, replace=False) + 1,  # distinct, with gaps
                        "score": rng.integers(0, 6, n) / 2.0})  # many equal scores
    if users == "str":
        raw = raw.with_columns(pl.format("u{}", pl.col("user")).alias("user"))
    duplicates = "first_shift" if case in ("first_shift", "list_repeats") else "error"
    if duplicates == "error":
        raw = raw.unique(["user", "item"], keep="first", maintain_order=True)
    min_score = 1.5 if case == "rank_min_score" else None
    ties = {"score_item_desc": "item_desc", "score_input_order": "input_order", "score_integer": "item_desc"}.get(
        case, "item_asc")
    if case == "score_integer":  # integer scores: every key an integer, sorted as one packed key
        raw = raw.with_columns(pl.col("score").mul(2).cast(pl.Int64))
    conv = rankwise.Convention(duplicates=duplicates, ties=ties, min_score=min_score)
    raw = raw.with_row_index("order")
    if case.startswith("score"):
        tie = {"item_asc": lambda r: r["item"], "item_desc": lambda r: -r["item"], "input_order": lambda r: r["order"]}
        order = lambda r: (-r["score"], tie[ties](r))  # noqa: E731
        given, cols = raw.drop("rank"), _inputs.Columns()
    else:
        order, given, cols = (lambda r: r["rank"]), raw, _inputs.Columns()
    if case == "list_repeats":  # list form: each user's items in rank order, an item repeated in some lists
        given = raw.sort("user", "rank").group_by("user", maintain_order=True).agg("item")
    expected = _oracle_rows(raw.to_dicts(), order, duplicates, min_score)
    truth = pl.DataFrame({"user": raw["user"][:1], "item": raw["item"][:1]})
    got = _inputs.prepare(given, truth, cols, conv).recommendations
    if case.startswith("rank"):
        assert _runs.grouped_runs(given.lazy(), "user", "item", "rank") is None  # the general path
    assert got.select("user_id", "rank", "item_id").rows() == expected


@pytest.mark.parametrize("collide", [False, True])
def test_sorted_numbers_of_text_users_by_hand(collide, monkeypatch):
    """Text users are numbered in their sorted order through a hash; two users that share a hash (forced here:
    every value hashes to 7) take the exact way, with the same numbers."""
    values = pl.Series("user_id", ["b", "a", "c", "a", "b", "d", "aa"])
    if collide:
        monkeypatch.setattr(pl.Series, "hash", lambda self, seed=0: pl.Series([7] * len(self), dtype=pl.UInt64))
    assert _inputs._sorted_numbers(values).to_list() == [2, 0, 3, 0, 2, 4, 1]


@pytest.mark.parametrize("seed", range(6))
def test_rows_sorted_by_user_then_keys_as_python_sorts_them(seed):
    """_by_user (the general path's sort: integer keys packed into one, others one column at a time) against
    Python's sorted: nulls last in every key, descending keys, rows equal in every key in input order."""
    rng = np.random.default_rng(seed)
    n = 400
    def nullable(values):
        return [None if rng.random() < 0.15 else int(v) for v in values]
    df = pl.DataFrame({"user_id": rng.integers(-3, 4, n), "a": nullable(rng.integers(-5, 5, n)),
                       "b": nullable(rng.integers(0, 3, n)), "f": rng.integers(0, 4, n) / 2.0},
                      schema={"user_id": pl.Int64, "a": pl.Int64, "b": pl.Int64, "f": pl.Float64}).with_row_index("i")
    for keys, descending in ((["a"], [False]), (["a", "b"], [True, False]), (["b", "a"], [False, True]),
                             (["f", "a"], [True, False])):
        def order(row):
            parts = [row["user_id"]]
            for key, desc in zip(keys, descending):
                v = row[key]
                parts += [v is None, 0 if v is None else (-v if desc else v)]
            return (*parts, row["i"])
        for users in (df, df.with_columns(pl.format("u{}", pl.col("user_id") + 10).alias("user_id"))):
            expected = [r["i"] for r in sorted(users.to_dicts(), key=order)]  # text users: "u10" before "u7"
            assert _inputs._by_user(users, keys, descending)["i"].to_list() == expected


@pytest.mark.parametrize("rule", ["error", "first_shift"])
def test_pairs_that_share_a_hash_are_not_repeated_items(rule, monkeypatch):
    """Text users: a repeated item is looked for on the pairs' hashes; pairs that only share a hash (forced: every
    pair's value is 7) are no repeat, and a real repeat is still found."""
    monkeypatch.setattr(_inputs, "pair_key", lambda schema, a, b: pl.lit(7, pl.UInt64).repeat_by(pl.len()).explode())
    recs = pl.DataFrame({"user": ["a", "a", "b"], "item": [1, 2, 1], "rank": [2, 1, 1]})  # not in list order
    truth = pl.DataFrame({"user": ["a"], "item": [1]})
    conv = rankwise.Convention(duplicates=rule)
    got = _inputs.prepare(recs, truth, _inputs.Columns(), conv).recommendations
    assert got.select("user_id", "rank", "item_id").rows() == [("a", 1, 2), ("a", 2, 1), ("b", 1, 1)]
    repeated = pl.concat([recs, pl.DataFrame({"user": ["a"], "item": [2], "rank": [3]})])
    if rule == "error":
        with pytest.raises(rankwise.errors.DuplicateItemError):
            _inputs.prepare(repeated, truth, _inputs.Columns(), conv)
    else:
        got = _inputs.prepare(repeated, truth, _inputs.Columns(), conv).recommendations
        assert got.select("user_id", "rank", "item_id").rows() == [("a", 1, 2), ("a", 2, 1), ("b", 1, 1)]


@pytest.mark.parametrize("preset", ["default", "trec_eval"])
def test_the_summary_of_many_rows_one_metric_at_a_time_is_the_same(monkeypatch, preset):
    """From SUMMARY_BY_COLUMN rows the Polars summary aggregates one metric at a time (its group-by then copies one
    column, not the whole frame): every value, count and sd bit for bit those of the one group-by, through evaluate
    (every metric: means, trec_eval's sums and geometric means, undefined values) and on a frame of many chunks."""
    from rankwise.engines import polars as engine

    recs, truth = _data(400)
    conv = rankwise.PRESETS["trec_eval"].replace(metrics=None) if preset == "trec_eval" else preset
    run = lambda: rankwise.evaluate(recs, truth, k=[1, 3, 10, 30], metrics="all", convention=conv,  # noqa: E731
                                    backend="polars").summary
    rng = np.random.default_rng(3)
    n = 5000
    values = pl.Series(rng.random(4 * n) * 1e3).scatter(rng.choice(4 * n, 700, replace=False), None)
    long = pl.DataFrame({"user_id": np.tile(np.arange(n), 4), "k": np.repeat([1, 3, 10, 30], n),
                         "precision": values, "ndcg": values.reverse(), "num_rel_ret": values.round(0)})
    chunked = pl.concat([long.slice(i, 333) for i in range(0, long.height, 333)], rechunk=False)
    assert chunked.n_chunks() > 1
    whole = run(), engine.summary(chunked, rankwise.PRESETS["trec_eval"], 1.0)
    monkeypatch.setattr(engine, "SUMMARY_BY_COLUMN", 0)
    by_column = run(), engine.summary(chunked, rankwise.PRESETS["trec_eval"], 1.0)
    for one, other in zip(by_column, whole):
        assert one["value"].null_count() < one.height
        plt.assert_frame_equal(one, other, check_exact=True)


@pytest.mark.parametrize("by_column", [False, True], ids=["one-group-by", "by-column"])
def test_f_of_means_is_its_formula_over_the_summary_means_run_after_run(monkeypatch, by_column):
    """F of means (Evidently's f_aggregation='of_means') is (1 + b^2) P R / (b^2 P + R) over the summary's own mean
    precision P and mean recall R, bit for bit, and the same run after run: Polars' group-by mean summed the values in
    another order from one run to the next, so F1 differed in its last digits between two runs of one evaluate."""
    from rankwise.engines import polars as engine

    rng = np.random.default_rng(11)
    n = 200_000
    long = pl.DataFrame({"user_id": np.tile(np.arange(n), 2), "k": np.repeat([5, 10], n),
                         "precision": rng.random(2 * n), "recall": rng.random(2 * n), "fbeta": rng.random(2 * n)})
    chunked = pl.concat([long.slice(i, 9_999) for i in range(0, long.height, 9_999)], rechunk=False)
    if by_column:
        monkeypatch.setattr(engine, "SUMMARY_BY_COLUMN", 0)
    runs = [engine.summary(chunked, rankwise.PRESETS["evidently"], 1.0) for _ in range(4)]
    for other in runs[1:]:
        plt.assert_frame_equal(runs[0], other, check_exact=True)
    value = {(row["metric"], row["k"]): row["value"] for row in runs[0].iter_rows(named=True)}
    for k in (5, 10):
        p, r = value["precision", k], value["recall", k]
        assert value["fbeta", k] == 2.0 * p * r / (p + r)


def _ranged_data(string_ids: bool):
    """_data with users only in the ground truth below, between and above the recommended ones, and the largest
    relevance (ERR's g_max) only among the first users: a range computing its own g_max would differ."""
    recs, truth = _data(n_users=120, seed=5)
    truth = truth.with_columns(pl.when(pl.col("user") < 20).then(pl.col("relevance"))
                               .otherwise(pl.col("relevance").clip(0, 1)))
    truth = pl.concat([truth, pl.DataFrame({"user": [0, 61, 500], "item": [3, 4, 5], "relevance": [1.0, 2.0, 1.0]})])
    if string_ids:  # ordered as text: "10" < "100" < "11" < "2"
        recs, truth = (f.with_columns(pl.col("user").cast(pl.String)) for f in (recs, truth))
    return recs.sort("user", "rank"), truth.sort("user", maintain_order=True)  # files in user order


@pytest.mark.parametrize("preset", ["default", "trec_eval", "ranx", "evidently"])
@pytest.mark.parametrize("string_ids", [False, True], ids=["int-ids", "text-ids"])
@pytest.mark.parametrize("ranged_backend", ["polars", "duckdb"])
def test_users_evaluated_in_ranges_get_the_values_of_one_plan(tmp_path, monkeypatch, preset, string_ids, ranged_backend):
    """A large input from Parquet files is evaluated one range of users at a time (Prepared.user_ranges,
    protocol.ROWS_PER_RANGE): every per-user value, the summary and the exclusions are those of one plan over every
    user, bit for bit; ERR's g_max is the largest grade of all the labels, not of a range's."""
    from rankwise.engines import duckdb as duck
    from rankwise.engines import polars as engine
    from rankwise.engines import protocol

    recs, truth = _ranged_data(string_ids)
    conv = rankwise.PRESETS[preset].replace(metrics=None)  # every metric, not only the preset's list
    recs_path, truth_path = tmp_path / "recs.parquet", tmp_path / "truth.parquet"
    recs.write_parquet(recs_path)
    truth.write_parquet(truth_path)
    module, name = (engine, "_per_user") if ranged_backend == "polars" else (duck, "_inputs")
    calls, one_range = [], getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a: calls.append(a) or one_range(*a))
    whole = _evaluate(recs, truth, ranged_backend, convention=conv)
    assert len(calls) == 1
    monkeypatch.setattr(protocol, "ROWS_PER_RANGE", 97)
    for recs_in, truth_in in ((recs_path, truth_path), (recs, truth)):  # Parquet files; frames in memory (slices)
        calls.clear()
        ranged = _evaluate(recs_in, truth_in, ranged_backend, convention=conv)
        assert len(calls) >= 10
        _same_bits(whole, ranged, exact=ranged_backend == "polars")


@pytest.mark.parametrize("metrics", ["defaults", "all"])
@pytest.mark.parametrize("ranged_backend", ["polars", "duckdb"])
def test_list_form_and_mixed_inputs_in_ranges_get_the_values_of_one_plan(tmp_path, monkeypatch, metrics,
                                                                        ranged_backend):
    """List-form recommendations in user order (a DataFrame or a Parquet file: each range explodes its users' lists)
    and inputs of two kinds (a Parquet file beside a frame in memory, lists beside long rows) are evaluated a range
    of users at a time too, with the values of one plan over the same inputs. Polars' list-form positions path (the
    defaults) stays one plan; every metric (the gain statistics) takes the long plan, in ranges."""
    from rankwise.engines import protocol
    from rankwise.engines.polars import positions

    recs, truth = _ranged_data(string_ids=False)
    rec_lists = recs.group_by("user", maintain_order=True).agg("item")
    truth_lists = truth.group_by("user", maintain_order=True).agg("item", "relevance")
    paths = {name: tmp_path / f"{name}.parquet" for name in ("recs", "truth", "rec_lists", "truth_lists")}
    for name, frame in (("recs", recs), ("truth", truth), ("rec_lists", rec_lists), ("truth_lists", truth_lists)):
        frame.write_parquet(paths[name])
    # (trec_eval's recip_rank looks past k: the long plan; the default preset's metrics: the positions path)
    conv = rankwise.PRESETS["default" if metrics == "defaults" else "trec_eval"].replace(metrics=None)
    ranges, one = [], protocol.user_ranges
    monkeypatch.setattr(protocol, "user_ranges", lambda *a: ranges.append(len(got := one(*a))) or got)
    plans, positions_plan = [], positions.per_user
    monkeypatch.setattr(positions, "per_user", lambda *a: plans.append(a) or positions_plan(*a))
    default = protocol.ROWS_PER_RANGE
    for inputs in ((rec_lists, truth_lists), (paths["rec_lists"], paths["truth_lists"]),
                   (paths["rec_lists"], paths["truth"]), (rec_lists, truth), (paths["recs"], truth_lists),
                   (paths["recs"], truth), (recs, paths["truth"])):
        kw = {"convention": conv, **({"metrics": None} if metrics == "defaults" else {})}
        monkeypatch.setattr(protocol, "ROWS_PER_RANGE", default)
        ranges.clear()
        whole = _evaluate(*inputs, ranged_backend, **kw)
        monkeypatch.setattr(protocol, "ROWS_PER_RANGE", 97)
        ranged = _evaluate(*inputs, ranged_backend, **kw)
        _same_bits(whole, ranged, exact=ranged_backend == "polars")
        # Polars' positions path (list-form recommendations, the defaults) is one plan: it asks for no ranges
        one_plan = (ranged_backend == "polars" and metrics == "defaults"
                    and any(inputs[0] is lists for lists in (rec_lists, paths["rec_lists"])))
        assert ranges == [] if one_plan else (ranges[0] == 1 and ranges[1] >= 10), inputs
    assert len(plans) == (8 if ranged_backend == "polars" and metrics == "defaults" else 0)


def _same_bits(whole, ranged, exact: bool) -> None:
    """Per-user, summary and excluded frames equal: bit for bit, or (DuckDB) within 2e-15 relative."""
    # DuckDB's windowed sums (the ideal DCG's running sum) add a user's terms in an order that depends on where the
    # user's rows fall among the others': its deep NDCG may move in the last bit (1M users, the defaults: 34,580 of
    # 69.8M values, at most 5.8e-16 relative; 1 of 72 summary values); Polars' values are the user's own, bit for bit
    tolerance = {"check_exact": True} if exact else {"rel_tol": 2e-15, "abs_tol": 0.0}
    plt.assert_frame_equal(whole.per_user, ranged.per_user, **tolerance)
    plt.assert_frame_equal(whole.summary, ranged.summary, **tolerance)
    plt.assert_frame_equal(whole.excluded, ranged.excluded)


def test_user_ranges_cover_every_user_once_in_order(tmp_path):
    """Prepared.user_ranges: consecutive ranges (low inclusive, high exclusive) from no bound to no bound, each
    about rows_per_range recommended rows (a user's rows are never split; with ``reach``, only the rows within that
    rank count). Only Parquet files and frames in memory, in user order, are read a range at a time: a CSV file or a
    caller's LazyFrame (each read whole again per range) or a file in another order is one range; frames in memory in user order have the
    same ranges, each a slice of their rows, and a Parquet file beside a frame is cut each its own way."""
    recs, truth = _ranged_data(string_ids=False)
    paths = [tmp_path / "recs.parquet", tmp_path / "truth.parquet"]
    recs.write_parquet(paths[0])
    truth.write_parquet(paths[1])
    prep = _inputs.prepare(*paths, _inputs.Columns(), rankwise.PRESETS["default"])
    ranges = prep.user_ranges(100)
    assert ranges[0][0] is None and ranges[-1][1] is None
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    counts = recs.group_by("user").len()
    rows = [counts.filter((pl.col("user") >= (lo if lo is not None else -1)) & (pl.col("user") < (hi or 10**9)))
            ["len"].sum() for lo, hi in ranges]
    assert sum(rows) == recs.height and len(ranges) == -(-recs.height // 100)
    assert all(r <= 100 + 24 for r in rows)  # a range closes at the first user past its share (lists of < 25)
    within_5 = recs.filter(pl.col("rank") <= 5).height  # the rows read when nothing looks past k = 5
    assert len(prep.user_ranges(100, reach=5)) == -(-within_5 // 100) < len(ranges)
    truth_users = set(truth["user"])
    seen = [set(prep.of_users(lo, hi).truth.collect()["user_id"]) for lo, hi in ranges]
    assert set().union(*seen) == truth_users and sum(map(len, seen)) == len(truth_users)
    in_memory = _inputs.prepare(recs, truth, _inputs.Columns(), rankwise.PRESETS["default"])
    assert in_memory.user_ranges(100) == ranges
    for lo, hi in ranges:  # a slice of each frame: the rows a filter on the range keeps
        sliced, filtered = in_memory.of_users(lo, hi), prep.of_users(lo, hi)
        for name in ("recs", "truth"):
            plt.assert_frame_equal(getattr(sliced, name).collect(), getattr(filtered, name).collect())
        plt.assert_frame_equal(sliced.rec_counts.rows, filtered.rec_counts.rows)
    for lo, hi in ranges:  # a Parquet file beside a frame in memory: each cut its own way, the same rows
        mixed, filtered = _inputs.prepare(paths[0], truth, _inputs.Columns(), rankwise.PRESETS["default"]).of_users(
            lo, hi), prep.of_users(lo, hi)
        for name in ("recs", "truth"):
            plt.assert_frame_equal(getattr(mixed, name).collect(), getattr(filtered, name).collect())
    recs.write_csv(tmp_path / "recs.csv")
    truth.write_csv(tmp_path / "truth.csv")
    shuffled = tmp_path / "shuffled.parquet"  # each user's rows together, users out of order
    recs.sort(pl.col("user") % 7, "user", "rank").write_parquet(shuffled)
    for other in ((tmp_path / "recs.csv", tmp_path / "truth.csv"), (pl.scan_parquet(paths[0]), paths[1]),
                  (paths[0], pl.scan_parquet(paths[1])), (shuffled, paths[1]),
                  (recs.sort(pl.col("user") % 7, "user", "rank"), truth)):
        assert _inputs.prepare(*other, _inputs.Columns(), rankwise.PRESETS["default"]).user_ranges(100) \
            == [(None, None)]


@pytest.mark.parametrize("preset", ["default", "trec_eval", "evidently"])
def test_a_small_grid_in_one_pass_gets_the_values_of_column_by_column(monkeypatch, preset):
    """Polars' per-(user, k) frame: up to ONE_PASS_ROWS rows every statistic and metric is added in one pass (the
    tiny call's fixed cost), above one column at a time (memory): the same frame bit for bit, every metric."""
    from rankwise.engines import polars as engine

    recs, truth = _ranged_data(string_ids=False)
    conv = rankwise.PRESETS[preset].replace(metrics=None)
    one_pass = _evaluate(recs, truth, "polars", convention=conv)
    monkeypatch.setattr(engine, "ONE_PASS_ROWS", 0)
    calls, by_column = [], engine._column_by_column
    monkeypatch.setattr(engine, "_column_by_column", lambda *a: calls.append(a[0]) or by_column(*a))
    plt.assert_frame_equal(one_pass.per_user, _evaluate(recs, truth, "polars", convention=conv).per_user,
                           check_exact=True)
    assert calls


@pytest.mark.parametrize("by_column", [False, True], ids=["all-columns", "by-column"])
def test_the_summary_is_the_same_whatever_the_chunks(monkeypatch, by_column):
    """summary() of one per-user frame in one chunk, in 7,919-row chunks, as per-k pieces of several user ranges end
    to end (how per_user returns a large input), and with k flagged sorted (as one plan's frame is): the same values
    bit for bit, run after run. A Polars group-by sums a group's values in another order when k is flagged sorted
    (its slice) than when it is not (gathered): the 1M-user summary moved in its 16th digit between the two.)"""
    from rankwise.engines import polars as engine

    rng = np.random.default_rng(3)
    n, ks = 300_000, [1, 10, 100]
    long = pl.DataFrame({"user_id": np.tile(np.arange(n), 3), "k": np.repeat(ks, n),
                         "n_recs": np.full(3 * n, 100), "n_rel": np.full(3 * n, 5),
                         "ndcg": rng.random(3 * n) * 1e3, "precision": rng.random(3 * n), "recall": rng.random(3 * n)})
    long = long.with_columns(pl.when(pl.col("user_id") % 7 == 0).then(None).otherwise(pl.col("recall")).alias("recall"))
    if by_column:
        monkeypatch.setattr(engine, "SUMMARY_BY_COLUMN", 0)
    small = pl.concat([long.slice(i, 7_919) for i in range(0, long.height, 7_919)], rechunk=False)
    ranges = pl.concat([long.slice(i * n + lo, hi - lo) for i in range(3) for lo, hi in
                        ((0, 40_000), (40_000, 90_001), (90_001, n))], rechunk=False)
    conv = rankwise.PRESETS["default"]
    first = engine.summary(long, conv, 1.0)
    flagged = long.with_columns(pl.col("k").set_sorted())  # one plan's frame: a group-by then sums k's slice
    for frame in (long, small, ranges, flagged, small):
        plt.assert_frame_equal(first, engine.summary(frame, conv, 1.0), check_exact=True)
    expected = long.filter(pl.col("k") == 10)["recall"].drop_nulls().to_numpy()
    got = first.filter((pl.col("metric") == "recall") & (pl.col("k") == 10)).row(0, named=True)
    assert got["n_users"] == expected.size and got["value"] == pytest.approx(expected.mean(), rel=1e-12)
