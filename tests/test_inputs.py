"""Every container and form gives the same result; the SQL runs by hand; the CLI works."""

from __future__ import annotations

import math
import duckdb
import numpy as np
import pandas as pd
import polars as pl
import polars.testing as plt
import pytest

import rankwise
from rankwise import cli
from rankwise.sqlgen import files as _sql_files

RECS = pl.DataFrame({"user": [1, 1, 1, 2, 2, 3], "item": [5, 6, 7, 5, 8, 9], "rank": [1, 2, 3, 1, 2, 1]})
TRUTH = pl.DataFrame({"user": [1, 1, 2, 4], "item": [6, 7, 9, 5], "relevance": [1.0, 3.0, 2.0, 1.0]})


@pytest.fixture(scope="module")
def expected():
    return rankwise.evaluate(RECS, TRUTH, k=[1, 2, 3])


@pytest.mark.parametrize("container", ["lazy", "pandas", "arrow", "duckdb", "parquet", "csv"])
def test_containers(tmp_path, container, expected, backend):
    def convert(df: pl.DataFrame, name: str):
        if container == "lazy":
            return df.lazy()
        if container == "pandas":
            return df.to_pandas()
        if container == "arrow":
            return df.to_arrow()
        if container == "duckdb":
            return duckdb.from_arrow(df.to_arrow())
        path = tmp_path / f"{name}.{container}"
        df.write_parquet(path) if container == "parquet" else df.write_csv(path)
        return str(path)

    res = rankwise.evaluate(convert(RECS, "recs"), convert(TRUTH, "truth"), k=[1, 2, 3], backend=backend)
    per_user = expected.per_user
    if container == "csv":  # a CSV file's user and item ids are read as text: same users, same values
        per_user = per_user.with_columns(pl.col("user").cast(pl.String))
        assert res.per_user.schema["user"] == pl.String
    plt.assert_frame_equal(res.per_user.sort("user"), per_user.sort("user"), rel_tol=1e-12)
    plt.assert_frame_equal(res.summary, expected.summary, rel_tol=1e-12)


def test_list_form_equals_long_form(expected, backend):
    recs = RECS.sort("user", "rank").group_by("user", maintain_order=True).agg("item")
    truth = TRUTH.group_by("user", maintain_order=True).agg("item", "relevance")
    res = rankwise.evaluate(recs, truth, k=[1, 2, 3], backend=backend)
    plt.assert_frame_equal(res.per_user, expected.per_user, rel_tol=1e-12)


@pytest.mark.parametrize("preset", [p for p in sorted(rankwise.PRESETS) if rankwise.PRESETS[p].min_score is None])
def test_list_form_equals_long_form_every_preset(preset):
    """The list-form fast path (hits found on the lists) against the long-form join, on random lists
    with graded labels, users in one input only, labels past the cutoffs and a cutoff past every list."""
    rng = np.random.default_rng(7)
    recs, truth = [], []
    for user in range(300):
        catalog = rng.permutation(60)
        if user % 7:
            recs.append((user, catalog[: rng.integers(1, 25)].tolist()))
        if user % 5:
            labels = rng.choice(60, size=rng.integers(1, 12), replace=False).tolist()
            truth.append((user, labels, rng.choice([0.0, 1.0, 2.0, 3.0], size=len(labels)).tolist()))
    lists = pl.DataFrame(recs, schema={"user": pl.Int64, "item": pl.List(pl.Int64)}, orient="row")
    labels = pl.DataFrame(truth, schema={"user": pl.Int64, "item": pl.List(pl.Int64),
                                         "relevance": pl.List(pl.Float64)}, orient="row")
    long = lists.explode("item").with_columns(rank=pl.int_range(1, pl.len() + 1).over("user"))
    conv = rankwise.PRESETS[preset]
    ks = [1, 3, 10, 40]
    joined = rankwise.evaluate(long, labels.explode("item", "relevance"), k=ks, convention=conv, backend="polars")
    for truth in (labels, labels.explode("item", "relevance")):  # the truth's own lists, or regrouped
        fast = rankwise.evaluate(lists, truth, k=ks, convention=conv, backend="polars")
        plt.assert_frame_equal(fast.per_user, joined.per_user, rel_tol=1e-12)
        plt.assert_frame_equal(fast.summary, joined.summary, rel_tol=1e-12)


@pytest.mark.parametrize("ideal", ["labels", "k_ones", "predictions_topk"])
def test_polars_rows_come_in_k_user_order(ideal):
    """The Polars plan builds its rows in (k, user) order without a final sort (the summary adds in
    that order): users shuffled, some in one input only, a user with no recommendations."""
    users = np.random.default_rng(3).permutation(300)
    lists = pl.DataFrame({"user": users[:250], "item": [[u % 7, 7 + u % 5, 20] for u in users[:250]]})
    lists = lists.with_columns(pl.when(pl.col("user") % 11 == 0).then(pl.lit([], pl.List(pl.Int64)))
                               .otherwise("item").alias("item"))
    truth = pl.DataFrame({"user": users[50:][::-1], "item": [[u % 7, 30] for u in users[50:][::-1]]})
    conv = rankwise.Convention(users="union", ideal=ideal)  # every user of either input has rows
    res = rankwise.evaluate(lists, truth, k=[5, 1, 2], convention=conv, backend="polars")
    keys = res.long.select("k", "user")
    assert keys.height == 300 * 3 and keys.equals(keys.sort("k", "user"))


def test_scores_rank_descending_with_documented_ties(backend):
    recs = pl.DataFrame({"user": [1, 1, 1], "item": [30, 10, 20], "score": [0.5, 0.9, 0.9]})
    truth = pl.DataFrame({"user": [1], "item": [20]})
    by_rule = {}
    for ties in ("item_asc", "item_desc", "input_order"):
        conv = rankwise.Convention(ties=ties)
        res = rankwise.evaluate(recs, truth, k=3, metrics=["mrr"], backend=backend, convention=conv)
        by_rule[ties] = res.per_user["mrr@3"].item()
    # 10 and 20 tie at 0.9 and lead; only item_desc (and not input order: 10 comes first) puts 20 first
    assert by_rule == {"item_asc": 0.5, "item_desc": 1.0, "input_order": 0.5}


def test_user_dtype_and_name_are_kept(backend):
    recs = RECS.with_columns(pl.col("user").cast(pl.String)).rename({"user": "customer"})
    truth = TRUTH.with_columns(pl.col("user").cast(pl.String)).rename({"user": "customer"})
    res = rankwise.evaluate(recs, truth, k=1, metrics=["precision"], backend=backend, user_col="customer",
                            convention=rankwise.Convention(users="union"))
    assert res.per_user.schema["customer"] == pl.String
    assert res.per_user["customer"].to_list() == ["1", "2", "3", "4"]


def test_duration_ids_are_a_dtype_error_on_every_backend(backend):
    # DuckDB returned them as intervals that Polars cannot read (a raw ComputeError), Polars scored them
    recs = RECS.with_columns(pl.duration(days=pl.col("user")).alias("user"))
    truth = TRUTH.with_columns(pl.duration(days=pl.col("user")).alias("user"))
    with pytest.raises(rankwise.DtypeMismatchError, match="durations"):
        rankwise.evaluate(recs, truth, k=1, backend=backend)


def test_shipped_sql_runs_by_hand_in_duckdb(expected):
    """What the README shows: the SQL file over the user's own tables, parameters bound."""
    con = duckdb.connect()
    con.execute("CREATE TABLE recommendations AS SELECT user AS user_id, rank, item AS item_id FROM RECS")
    con.execute("CREATE TABLE ground_truth AS SELECT user AS user_id, item AS item_id, relevance FROM TRUTH")
    con.execute("CREATE TABLE cutoffs AS SELECT * FROM (VALUES (1), (2), (3)) AS t(k)")
    sql = rankwise.shipped_sql("per_user")
    assert sql == (_sql_files.sql_dir() / "per_user.sql").read_text()
    rows = con.sql(sql, params=rankwise.bind_parameters(sql, "default")).pl()
    ndcg2 = rows.filter(pl.col("k") == 2).sort("user_id")["ndcg"].fill_null(float("nan"))
    plt.assert_series_equal(ndcg2, expected.per_user["ndcg@2"], check_names=False, rel_tol=1e-12)


def test_cli_prints_summary_and_writes_frames(tmp_path, capsys):
    RECS.write_csv(tmp_path / "r.csv")  # CSV ids are text: both inputs CSV (a CSV and a Parquet file with
    TRUTH.write_csv(tmp_path / "t.csv")  # integer ids are a DtypeMismatchError)
    code = cli.main([
        "evaluate", str(tmp_path / "r.csv"), str(tmp_path / "t.csv"), "--k", "1,3",
        "--metrics", "precision,ndcg", "--backend", "duckdb", "--convention", "recommended_ideal",
        "--per-user", str(tmp_path / "pu.parquet"), "--summary", str(tmp_path / "s.csv"),
    ])
    out = capsys.readouterr().out
    assert code == 0 and "ndcg" in out and "@3" in out and "no relevant label" in out
    assert pl.read_parquet(tmp_path / "pu.parquet").columns == ["user", "precision@1", "precision@3", "ndcg@1", "ndcg@3"]
    assert pl.read_csv(tmp_path / "s.csv").height == 4


def test_cli_reports_bad_input_without_a_traceback(tmp_path, capsys):
    RECS.drop("rank").write_parquet(tmp_path / "r.parquet")
    TRUTH.write_parquet(tmp_path / "t.parquet")
    assert cli.main(["evaluate", str(tmp_path / "r.parquet"), str(tmp_path / "t.parquet")]) == 2
    assert "MissingColumnError" in capsys.readouterr().err


def test_a_pandas_named_index_is_read_as_columns(expected):
    # df.set_index("user") (or a groupby's result) was "missing column(s) ['user']"
    recs, truth = RECS.to_pandas(), TRUTH.to_pandas()
    got = rankwise.evaluate(recs.set_index("user"), truth.set_index(["user", "item"]), k=[1, 3, 5])
    plt.assert_frame_equal(got.per_user, rankwise.evaluate(RECS, TRUTH, k=[1, 3, 5]).per_user)
    unnamed = rankwise.evaluate(recs.set_index("user").reset_index(), truth, k=[1, 3, 5])  # a RangeIndex: not a column
    plt.assert_frame_equal(unnamed.per_user, got.per_user)


def test_pandas_frames_in_pandas_dtypes(backend):
    recs = pd.DataFrame({"user": ["a", "a", "b"], "item": ["x", "y", "x"], "score": [0.3, 0.9, 0.1]})
    truth = pd.DataFrame({"user": ["a", "b"], "item": ["x", "z"]})
    res = rankwise.evaluate(recs, truth, k=2, metrics=["map"], backend=backend)
    assert res.per_user["map@2"].to_list() == [0.5, 0.0]


@pytest.mark.parametrize("wrap", ["struct", "list"])
def test_nested_user_ids_score_like_integer_ids(wrap):
    """Struct and list user ids take another way through the Polars plan (an as-of join cannot group
    by them): the same values as the integer ids they wrap, at cutoffs between and beyond the hits."""
    nest = (lambda c: pl.struct(pl.col(c).alias("id"))) if wrap == "struct" else (lambda c: pl.concat_list(c))
    ks = [1, 2, 3, 5]
    plain = rankwise.evaluate(RECS, TRUTH, k=ks, backend="polars").long
    nested = rankwise.evaluate(RECS.with_columns(nest("user").alias("user")),
                               TRUTH.with_columns(nest("user").alias("user")), k=ks, backend="polars").long
    unwrap = pl.col("user").struct.field("id") if wrap == "struct" else pl.col("user").list.first()
    plt.assert_frame_equal(nested.with_columns(unwrap.alias("user")).sort("user", "k"), plain.sort("user", "k"))


def test_list_form_parallel_score_and_rank_lists_order_the_items(backend):
    """A score or rank list parallel to the items ranks them (and feeds min_score) as the long form does."""
    truth = pl.DataFrame({"user": [1, 2], "item": [[3], [5]], "relevance": [[4.0], [4.0]]})
    scored = pl.DataFrame({"user": [1, 2], "item": [[1, 2, 3], []], "score": [[4.0, 1.0, 3.9], []]})
    # surprise (min_score 3.5, precision over min(k, list length)): item 2 (1.0) is dropped, 1 (4.0)
    # then 3 (3.9) are ranked: 1 hit over min(3, 2) = 0.5; user 2 is present with an empty list: 0
    res = rankwise.evaluate(scored, truth, k=3, metrics=["precision"], convention="surprise", backend=backend)
    assert res.per_user.sort("user")["precision@3"].to_list() == [0.5, 0.0]
    # ranks [3, 1, 2]: item 3 is 2nd, RR = 1/2; scores [0.1, 0.2, 0.3] (rank_col=None): item 3 first, RR = 1
    both = scored.with_columns(rank=pl.Series([[3, 1, 2], []]), score=pl.Series([[0.1, 0.2, 0.3], []]))
    by_rank = rankwise.evaluate(both, truth, k=3, metrics=["mrr"], backend=backend)
    by_score = rankwise.evaluate(both, truth, k=3, metrics=["mrr"], backend=backend, rank_col=None)
    assert by_rank.per_user.sort("user")["mrr@3"].to_list()[0] == 0.5
    assert by_score.per_user.sort("user")["mrr@3"].to_list()[0] == 1.0
    with pytest.raises(rankwise.errors.InvalidScoreError, match="'score' list and the 'item' list differ"):
        rankwise.evaluate(scored.with_columns(score=pl.Series([[1.0], []])), truth, k=3, backend=backend)


def test_a_named_rank_score_or_relevance_column_must_exist():
    """A rank, score or relevance column named other than its default and absent was ignored: a misspelt
    relevance_col scored every label 1 (ndcg@2 1.0 instead of the graded 0.7098: DCG = 1/ln 2 + 7/ln 3,
    IDCG = 7/ln 2 + 1/ln 3), a misspelt rank_col ranked by the score column. The defaults may be absent."""
    recs = pl.DataFrame({"user": [1, 1], "item": [1, 2], "rank": [1, 2], "score": [0.1, 0.9]})
    truth = pl.DataFrame({"user": [1, 1], "item": [1, 2], "rating": [1.0, 3.0]})
    graded = rankwise.evaluate(recs, truth, k=2, metrics=["ndcg"], relevance_col="rating",
                               convention=rankwise.Convention(gain="exp2", log_base=math.e))
    dcg, idcg = 1 / math.log(2) + 7 / math.log(3), 7 / math.log(2) + 1 / math.log(3)
    assert graded.summary["value"].item() == pytest.approx(dcg / idcg)
    for kw, what in [({"relevance_col": "ratng"}, "ground truth"), ({"rank_col": "rnk"}, "recommendations"),
                     ({"score_col": "s"}, "recommendations")]:
        with pytest.raises(rankwise.MissingColumnError, match=f"{what}: missing column.*{list(kw)[0]}={list(kw.values())[0]!r}"):
            rankwise.evaluate(recs, truth, k=2, metrics=["ndcg"], **kw)
    # the default names may be absent: relevance 1, ranks from the rank column
    assert rankwise.evaluate(recs.drop("score"), truth.drop("rating"), k=2, metrics=["precision"]).summary[
        "value"].item() == 1.0
