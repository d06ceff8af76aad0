"""backend="postgres": the checks and the metric SQL run inside PostgreSQL on tables or queries.

Expected values: DuckDB's evaluation of the same frames (itself checked against the oracle and
the reference tables elsewhere); errors: the typed error evaluate() raises on the same frames.
"""

from __future__ import annotations

import uuid

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import rankwise

psycopg = pytest.importorskip("psycopg")

RECS = pl.DataFrame({"user": [1, 1, 1, 2, 2, 3], "item": [10, 11, 12, 20, 21, 30], "rank": [1, 2, 3, 1, 2, 1]})
TRUTH = pl.DataFrame({"user": [1, 1, 2, 4], "item": [11, 13, 20, 40], "relevance": [1.0, 2.0, 1.0, 1.0]})
TYPES = {pl.Int64: "BIGINT", pl.Float64: "DOUBLE PRECISION", pl.String: "TEXT", pl.Boolean: "BOOLEAN"}


@pytest.fixture
def pg(pg_dsn):
    conn = psycopg.connect(pg_dsn, autocommit=True)
    schema = f"rw_test_{uuid.uuid4().hex[:8]}"
    conn.execute(f'CREATE SCHEMA "{schema}"')
    conn.execute(f'CREATE TABLE "{schema}".sentinel (x INT)')
    yield conn, schema
    conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    conn.close()


def _table(conn, schema: str, name: str, frame: pl.DataFrame) -> str:
    columns = ", ".join(f'"{c}" {TYPES[t]}' for c, t in frame.schema.items())
    quoted = '"' + name.replace('"', '""') + '"'
    conn.execute(f'CREATE TABLE "{schema}".{quoted} ({columns})')
    with conn.cursor() as cur, cur.copy(f'COPY "{schema}".{quoted} FROM STDIN') as copy:
        for row in frame.iter_rows():
            copy.write_row(row)
    return f'"{schema}".{quoted}'


def test_tables_in_postgres_give_duckdbs_result(pg, pg_dsn):
    conn, schema = pg
    recs, truth = _table(conn, schema, "recs", RECS), _table(conn, schema, "truth", TRUTH)
    want = rankwise.evaluate(RECS, TRUTH, k=[1, 3], backend="duckdb")
    for backend in (pg_dsn if pg_dsn.startswith("postgres") else "postgres", conn):
        got = rankwise.evaluate(recs, truth, k=[1, 3], backend=backend)
        for frame in ("summary", "excluded", "per_user"):
            assert_frame_equal(getattr(got, frame), getattr(want, frame), rel_tol=1e-12)
    query = f"SELECT * FROM {recs} WHERE \"user\" <> 3"
    got = rankwise.evaluate(query, truth, k=3, backend="postgres")
    assert_frame_equal(got.summary, rankwise.evaluate(RECS.filter(pl.col("user") != 3), TRUTH, k=3).summary,
                       rel_tol=1e-12)
    # temporary objects, rolled back: none left in this session (other sessions, e.g. a parallel test
    # worker, have their own temporary schemas)
    leftover = conn.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'rankwise%' "
                            "AND relnamespace = pg_my_temp_schema()").fetchone()[0]
    assert leftover == 0


def test_column_names_that_are_not_plain_lower_case_are_matched_exactly(pg):
    """Columns created quoted ("User", "Item Id") are read by their exact names; before, the canonical
    views wrote them unquoted and PostgreSQL folded them to lower case (column src.user does not exist)."""
    conn, schema = pg
    names = {"user": "User", "item": "Item Id", "rank": "Rank", "relevance": "Grade"}
    recs = _table(conn, schema, "recs", RECS.rename(names, strict=False))
    truth = _table(conn, schema, "truth", TRUTH.rename(names, strict=False))
    got = rankwise.evaluate(recs, truth, k=[1, 3], backend="postgres", user_col="User", item_col="Item Id",
                            rank_col="Rank", relevance_col="Grade")
    want = rankwise.evaluate(RECS, TRUTH, k=[1, 3], backend="duckdb")
    assert_frame_equal(got.summary, want.summary, rel_tol=1e-12)
    assert_frame_equal(got.per_user.rename({"User": "user"}), want.per_user, rel_tol=1e-12)


def test_a_boolean_relevance_table_gives_the_dataframes_result(pg):
    """A boolean relevance column (true = relevant 1, false = judged non-relevant 0) is taken as the same
    data as a DataFrame is; the table path refused it (PostgreSQL cannot cast boolean to double)."""
    conn, schema = pg
    truth = TRUTH.with_columns(relevance=pl.col("item") != 13)  # user 1's item 13 judged, not relevant
    for source in (_table(conn, schema, "truth", truth), f"SELECT * FROM \"{schema}\".truth WHERE \"user\" <> 4"):
        got = rankwise.evaluate(_table(conn, schema, f"recs_{len(source)}", RECS), source, k=[1, 3],
                                metrics=["precision", "ndcg"], backend="postgres")
        frame = truth if "WHERE" not in source else truth.filter(pl.col("user") != 4)
        want = rankwise.evaluate(RECS, frame, k=[1, 3], metrics=["precision", "ndcg"], backend="duckdb")
        assert_frame_equal(got.per_user, want.per_user, rel_tol=1e-12)
        assert_frame_equal(got.summary, want.summary, rel_tol=1e-12)


@pytest.mark.parametrize("change, error", [
    (lambda r, t: (pl.concat([r, r.head(1).with_columns(rank=pl.lit(9, pl.Int64))]), t), rankwise.DuplicateItemError),
    (lambda r, t: (r.with_columns(rank=pl.col("rank") - 1), t), rankwise.InvalidRankError),
    (lambda r, t: (r, pl.concat([t, t.head(1)])), rankwise.DuplicateItemError),
    (lambda r, t: (r, t.with_columns(relevance=pl.lit(-1.0))), rankwise.InvalidRelevanceError),
    (lambda r, t: (r, t.with_columns(item=pl.when(pl.col("item") == 13).then(None).otherwise("item"))),
     rankwise.NullValueError),  # a NULL label item (sql/checks.sql let it through: it was dropped unseen)
    (lambda r, t: (r.with_columns(user=pl.col("user").cast(pl.String)), t), rankwise.DtypeMismatchError),
])
def test_bad_tables_raise_the_error_evaluate_raises_anywhere(pg, change, error):
    conn, schema = pg
    recs, truth = change(RECS, TRUTH)
    with pytest.raises(error):
        rankwise.evaluate(recs, truth, k=3)
    with pytest.raises(error):
        rankwise.evaluate(_table(conn, schema, "recs", recs), _table(conn, schema, "truth", truth), k=3,
                          backend="postgres")


@pytest.mark.parametrize("option", [{"relevance_col": "relevnce"}, {"rank_col": "rnk"}, {"score_col": "scor"}])
def test_a_misspelt_column_option_is_a_missing_column_on_tables_too(pg, option):
    # a rank, score or relevance column the caller names must exist: as tables, a misspelt
    # relevance_col scored every label 1 and a misspelt rank_col ranked by the score column
    conn, schema = pg
    recs = _table(conn, schema, "recs", RECS.with_columns(score=pl.lit(0.5)))
    truth = _table(conn, schema, "truth", TRUTH)
    with pytest.raises(rankwise.MissingColumnError) as frame_error:
        rankwise.evaluate(RECS.with_columns(score=pl.lit(0.5)), TRUTH, k=3, **option)
    with pytest.raises(rankwise.MissingColumnError) as table_error:
        rankwise.evaluate(recs, truth, k=3, backend="postgres", **option)
    assert table_error.value.problem == frame_error.value.problem


@pytest.mark.parametrize("name", ['x"; DROP TABLE {schema}.sentinel; --', "x; DROP TABLE {schema}.sentinel",
                                  "Mixed Case", "select"])
def test_a_hostile_table_name_is_an_identifier(pg, name):
    conn, schema = pg
    name = name.format(schema=schema)
    recs = _table(conn, schema, name, RECS)
    truth = _table(conn, schema, "truth", TRUTH)
    try:
        got = rankwise.evaluate(recs, truth, k=3, backend="postgres")
        assert_frame_equal(got.summary, rankwise.evaluate(RECS, TRUTH, k=3).summary, rel_tol=1e-12)
    except rankwise.RankwiseError:
        pass  # refused as a name is fine too; what matters is below
    assert conn.execute(f'SELECT count(*) FROM "{schema}".sentinel').fetchone() == (0,)
    for bad in (f"{truth}; DROP TABLE \"{schema}\".sentinel", f"SELECT 1; DROP TABLE \"{schema}\".sentinel"):
        with pytest.raises(rankwise.RankwiseError):
            rankwise.evaluate(recs, bad, k=3, backend="postgres")
    assert conn.execute(f'SELECT count(*) FROM "{schema}".sentinel').fetchone() == (0,)


def test_a_bad_uri_is_a_rankwise_error():
    with pytest.raises(rankwise.RankwiseError, match="cannot connect"):
        rankwise.evaluate(RECS, TRUTH, k=3, backend="postgresql://nobody@127.0.0.1:1/none")


def test_collect_false_leaves_the_per_user_rows_in_a_table(pg):
    """collect=False: the per-user rows stay in a table of the current schema (on the caller's
    connection too), equal to the collected rows; the summary comes back; no temporary object of
    the run is left in the session."""
    conn, schema = pg
    conn.execute(f'SET search_path TO "{schema}"')
    recs, truth = _table(conn, schema, "recs", RECS), _table(conn, schema, "truth", TRUTH)
    want = rankwise.evaluate(RECS, TRUTH, k=[1, 3], backend="duckdb")
    for inputs in ((recs, truth), (RECS, TRUTH)):  # tables in the database, and frames copied in
        kept = rankwise.evaluate(*inputs, k=[1, 3], backend=conn, collect=False)
        assert isinstance(kept.per_user, rankwise.PostgresTable) and kept.per_user.name.startswith(f'"{schema}".')
        assert_frame_equal(kept.summary, want.summary, rel_tol=1e-12)
        assert_frame_equal(kept.excluded, want.excluded)
        cur = conn.execute(f"SELECT * FROM {kept.per_user.name} ORDER BY k, user_id")
        rows = pl.DataFrame(cur.fetchall(), schema=[d.name for d in cur.description], orient="row")
        expected = want.long.rename({"user": "user_id"}) if "user" in want.long.columns else want.long
        assert rows.height == expected.height
        for metric in ("precision", "ndcg", "map"):
            got = [float("nan") if v is None else v for v in rows[metric].to_list()]  # NULL = undefined
            assert got == pytest.approx(expected.sort("k", "user_id")[metric].to_list(), nan_ok=True)
        temporary = conn.execute("SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema() "
                                 "AND relname LIKE 'rankwise%'").fetchone()[0]
        assert temporary == 0
        with pytest.raises(rankwise.ParameterError, match="still in the engine"):
            kept.bootstrap(10)
        conn.execute(f"DROP TABLE {kept.per_user.name}")


def test_beyond_metrics_over_table_names_are_a_parameter_error_with_or_without_truth(pg):
    """Beyond-accuracy metrics over tables evaluated in place are not there yet: a ParameterError says
    so. Without a ground truth the table name was read as a file: InputFileError "'recs' does not exist"."""
    conn, schema = pg
    recs, truth = _table(conn, schema, "recs", RECS), _table(conn, schema, "truth", TRUTH)
    train = pl.DataFrame({"user": [1, 2], "item": [10, 20]})
    for ground_truth in (truth, None):
        with pytest.raises(rankwise.ParameterError, match="take DataFrames or files"):
            rankwise.evaluate(recs, ground_truth, k=3, metrics=["novelty"], train=train, backend="postgres")


def _kept_tables(conn, schema: str) -> list:
    return conn.execute("SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace "
                        "AND relname LIKE 'rankwise%%'", (f'"{schema}"',)).fetchall()


def test_collect_false_leaves_no_table_when_the_evaluation_fails(pg):
    """collect=False with options it cannot take, or an evaluation that fails after the database run
    (an empty_labels='error' user), leaves no table: before, the committed per-user table stayed,
    under a name the caller never got."""
    conn, schema = pg
    conn.execute(f'SET search_path TO "{schema}"')
    recs, truth = _table(conn, schema, "recs", RECS), _table(conn, schema, "truth", TRUTH)
    # user 3 has recommendations and no label: evaluated under users='union' (the default's 'labels' skips it)
    strict = rankwise.PRESETS["default"].replace(empty_labels="error", users="union")
    for inputs in ((recs, truth), (RECS, TRUTH)):
        with pytest.raises(rankwise.ParameterError, match="segments= needs the per-user rows collected"):
            rankwise.evaluate(*inputs, k=3, backend=conn, collect=False,
                              segments=pl.DataFrame({"user": [1, 2], "segment": ["a", "b"]}))
        with pytest.raises(rankwise.UndefinedValueError):
            rankwise.evaluate(*inputs, k=3, backend=conn, collect=False, convention=strict)
        assert _kept_tables(conn, schema) == []


def test_postgres_errors_have_hints_that_fit_them(pg):
    """A NUMERIC score too large for a double is the inputs' overflow (the hint blamed gain='exp2'); a
    role without CREATE on the current schema keeping a table (collect=False) is told so (the hint
    asked for TEMP and SELECT, which it had)."""
    conn, schema = pg
    recs, truth = _table(conn, schema, "recs", RECS), _table(conn, schema, "truth", TRUTH)
    conn.execute(f'CREATE TABLE "{schema}".scored ("user" BIGINT, item BIGINT, score NUMERIC)')
    conn.execute(f"""INSERT INTO "{schema}".scored VALUES (1, 10, 1e400), (1, 11, 1), (2, 20, 1)""")
    with pytest.raises(rankwise.NumericOverflowError) as info:
        rankwise.evaluate(f'"{schema}".scored', truth, k=3, backend=conn)
    assert "exp2" not in info.value.hint and "score" in info.value.hint
    role = f"rw_role_{uuid.uuid4().hex[:8]}"
    conn.execute(f'CREATE ROLE "{role}"')
    try:
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"; GRANT SELECT ON ALL TABLES IN SCHEMA '
                     f'"{schema}" TO "{role}"; SET search_path TO "{schema}"; SET ROLE "{role}"')
        with pytest.raises(rankwise.RankwiseError, match="refused") as info:
            rankwise.evaluate(recs, truth, k=3, backend=conn, collect=False)
        assert "CREATE on the schema" in info.value.hint
    finally:
        conn.execute("RESET ROLE")
        conn.execute(f'DROP OWNED BY "{role}"; DROP ROLE "{role}"')


def test_a_borrowed_connection_with_another_row_factory_gives_duckdbs_result(pg, pg_dsn):
    """rankwise's cursors read tuples whatever the caller's connection returns: with dict_row it
    raised ValueError (tables), KeyError 'users' (frames), KeyError 0 (collect=False)."""
    from psycopg.rows import dict_row, namedtuple_row

    conn, schema = pg
    recs, truth = _table(conn, schema, "recs", RECS), _table(conn, schema, "truth", TRUTH)
    want = rankwise.evaluate(RECS, TRUTH, k=3, backend="duckdb")
    train = pl.DataFrame({"user": [1, 2], "item": [10, 20]})
    for factory in (dict_row, namedtuple_row):
        with psycopg.connect(pg_dsn, autocommit=True, row_factory=factory) as borrowed:
            borrowed.execute(f'SET search_path TO "{schema}"')
            for inputs in ((recs, truth), (RECS, TRUTH)):
                got = rankwise.evaluate(*inputs, k=3, backend=borrowed)
                assert_frame_equal(got.summary, want.summary, rel_tol=1e-12)
                assert_frame_equal(got.per_user, want.per_user, rel_tol=1e-12)
                kept = rankwise.evaluate(*inputs, k=3, backend=borrowed, collect=False)
                assert_frame_equal(kept.summary, want.summary, rel_tol=1e-12)
                borrowed.execute(f"DROP TABLE {kept.per_user.name}")
            novelty = rankwise.evaluate(RECS, TRUTH, k=3, metrics=["novelty"], train=train, backend=borrowed)
            assert_frame_equal(novelty.summary, rankwise.evaluate(RECS, TRUTH, k=3, metrics=["novelty"], train=train,
                                                                  backend="duckdb").summary, rel_tol=1e-12)


@pytest.mark.parametrize("cast, columns", [
    (lambda c: pl.col(c).cast(pl.Decimal(20, 0)), ("user", "item")),
    (lambda c: pl.date(2020, 1, 1) + pl.duration(days=pl.col(c)), ("user", "item")),
    (lambda c: pl.datetime(2020, 1, 1) + pl.duration(microseconds=pl.col(c)), ("user", "item")),
    (lambda c: (pl.datetime(2020, 1, 1) + pl.duration(hours=pl.col(c))).dt.replace_time_zone("Asia/Kolkata"),
     ("user", "item")),
    (lambda c: pl.col(c) == 1, ("user",)),  # two users; a user's items would collide
], ids=["decimal", "date", "datetime", "datetime_tz", "boolean"])
def test_frames_with_other_id_types_give_duckdbs_result(pg, cast, columns):
    """Decimal, Date, Datetime and Boolean ids are copied as numeric, date, timestamp[tz] and boolean
    (a raw KeyError in _upload before); Datetime('ns') and Binary, which PostgreSQL cannot hold as
    Polars does, are a DtypeMismatchError naming the ids."""
    conn, schema = pg
    conn.execute(f'SET search_path TO "{schema}"')
    recs, truth = RECS.filter(pl.col("user") <= 2), TRUTH.filter(pl.col("user") <= 2)
    for column in columns:
        r, t = recs.with_columns(cast(column).alias(column)), truth.with_columns(cast(column).alias(column))
        want = rankwise.evaluate(r, t, k=[1, 3], backend="duckdb")
        got = rankwise.evaluate(r, t, k=[1, 3], backend=conn)
        for frame in ("summary", "excluded", "per_user"):
            assert_frame_equal(getattr(got, frame), getattr(want, frame), rel_tol=1e-12)
        kept = rankwise.evaluate(r, t, k=[1, 3], backend=conn, collect=False)
        assert_frame_equal(kept.summary, want.summary, rel_tol=1e-12)
        conn.execute(f"DROP TABLE {kept.per_user.name}")


def test_frames_with_ids_postgres_cannot_hold_are_a_dtype_error(pg):
    conn, _ = pg
    for cast, name in ((pl.col("user").cast(pl.Datetime("ns")), "Datetime"), (pl.col("item").cast(pl.Binary), "Binary")):
        with pytest.raises(rankwise.DtypeMismatchError, match=name) as info:
            rankwise.evaluate(RECS.with_columns(cast), TRUTH.with_columns(cast), k=3, backend=conn)
        assert "Cast them" in info.value.hint


def test_collect_false_keeps_the_table_outside_the_temporary_schema(pg):
    """search_path starting with pg_temp: the kept table went to the temporary schema and the cleanup
    of the run's temporary objects dropped it (collect=False returned the name of a dropped table);
    a search path of no existing schema is a ParameterError, not a failed SQL statement."""
    conn, schema = pg
    recs, truth = _table(conn, schema, "recs", RECS), _table(conn, schema, "truth", TRUTH)
    want = rankwise.evaluate(RECS, TRUTH, k=3, backend="duckdb")
    conn.execute(f'SET search_path TO pg_temp, "{schema}"')
    for inputs in ((recs, truth), (RECS, TRUTH)):
        kept = rankwise.evaluate(*inputs, k=3, backend=conn, collect=False)
        assert kept.per_user.name.startswith(f'"{schema}".')
        assert conn.execute(f"SELECT count(*) FROM {kept.per_user.name}").fetchone() == (want.long.height,)
        conn.execute(f"DROP TABLE {kept.per_user.name}")
    conn.execute(f"SET search_path TO pg_temp, rw_no_such_schema_{uuid.uuid4().hex[:8]}")
    with pytest.raises(rankwise.ParameterError, match="search path") as info:
        rankwise.evaluate(recs, truth, k=3, backend=conn, collect=False)
    assert "SET search_path" in info.value.hint


def test_queries_in_parentheses_or_after_comments_are_queries(pg, tmp_path, monkeypatch):
    """A query with a '/' or opening with '(' or a comment was read as a file path (ParameterError
    'both as table names / queries, or both as data', InputFileError 'does not exist'); a string that
    names an existing file stays a file."""
    conn, schema = pg
    recs, truth = _table(conn, schema, "recs", RECS), _table(conn, schema, "truth", TRUTH)
    want = rankwise.evaluate(RECS, TRUTH, k=3, backend="duckdb")
    for query in (f'(SELECT "user", item, rank/1 AS rank FROM {recs})', f"/* model A */ SELECT * FROM {recs}",
                  f"-- model A\n  ( (SELECT * FROM {recs}) )"):
        got = rankwise.evaluate(query, truth, k=3, backend=conn)
        assert_frame_equal(got.summary, want.summary, rel_tol=1e-12)
    monkeypatch.chdir(tmp_path)
    RECS.write_parquet("select recs.parquet")  # an existing file named like a query: a file
    got = rankwise.evaluate("select recs.parquet", TRUTH, k=3, backend=conn)
    assert_frame_equal(got.summary, want.summary, rel_tol=1e-12)


def test_collect_false_inside_a_callers_transaction_leaves_its_settings(pg, pg_dsn):
    """On a borrowed connection inside a transaction, collect=False commits a savepoint: its SET LOCAL
    jit=off and max_parallel_workers_per_gather=0 stayed for the rest of the caller's transaction."""
    conn, schema = pg
    recs, truth = _table(conn, schema, "recs", RECS), _table(conn, schema, "truth", TRUTH)
    settings = "SELECT current_setting('jit'), current_setting('max_parallel_workers_per_gather')"
    with psycopg.connect(pg_dsn) as borrowed:  # not autocommit: the SELECT opens a transaction
        borrowed.execute("SET jit = on; SET max_parallel_workers_per_gather = 3")
        before = borrowed.execute(settings).fetchone()
        for inputs in ((recs, truth), (RECS, TRUTH)):
            kept = rankwise.evaluate(*inputs, k=3, backend=borrowed, collect=False)
            assert borrowed.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
            assert borrowed.execute(settings).fetchone() == before == ("on", "3")
            borrowed.execute(f"DROP TABLE {kept.per_user.name}")
        borrowed.rollback()


def test_an_async_connection_is_a_parameter_error(pg_dsn):
    """A psycopg AsyncConnection raised a raw TypeError from inside the run."""
    import asyncio

    async def borrowed():
        return await psycopg.AsyncConnection.connect(pg_dsn)

    conn = asyncio.run(borrowed())
    try:
        with pytest.raises(rankwise.ParameterError, match="AsyncConnection") as info:
            rankwise.evaluate(RECS, TRUTH, k=3, backend=conn)
        assert "psycopg.connect" in info.value.hint
    finally:
        asyncio.run(conn.close())


def test_id_columns_of_a_type_rankwise_does_not_take_name_the_type(pg):
    """NUMERIC ids on both sides were refused as 'different or unsupported types (OIDs 1700
    and 1700)': contradictory when the types match; the message names the type."""
    conn, schema = pg
    truth = _table(conn, schema, "truth", TRUTH)
    conn.execute(f'CREATE TABLE "{schema}".r2 ("user" NUMERIC, item BIGINT, rank BIGINT)')
    conn.execute(f'CREATE TABLE "{schema}".t2 AS SELECT "user"::numeric AS "user", item FROM {truth}')
    with pytest.raises(rankwise.DtypeMismatchError, match="unsupported type numeric in both") as info:
        rankwise.evaluate(f'"{schema}".r2', f'"{schema}".t2', k=3, backend=conn)
    assert "::bigint" in info.value.hint
    with pytest.raises(rankwise.DtypeMismatchError, match=r"numeric \(recommendations\) and bigint"):
        rankwise.evaluate(f'"{schema}".r2', truth, k=3, backend=conn)


def test_uuid_ids_are_taken_and_come_back_as_text(pg):
    """uuid user and item columns (common warehouse keys) were refused; they are compared and returned as
    their text form, the result of the same ids as strings in DataFrames."""
    import uuid as uuid_module

    conn, schema = pg
    ids = {n: str(uuid_module.UUID(int=n * 7919 + 1)) for n in range(1, 50)}
    recs = RECS.with_columns(pl.col("user").replace_strict(ids), pl.col("item").replace_strict(ids))
    truth = TRUTH.with_columns(pl.col("user").replace_strict(ids), pl.col("item").replace_strict(ids))
    for name, frame in (("r", recs), ("t", truth)):
        _table(conn, schema, name, frame)
        conn.execute(f'ALTER TABLE "{schema}".{name} ALTER COLUMN "user" TYPE uuid USING "user"::uuid, '
                     f'ALTER COLUMN item TYPE uuid USING item::uuid')
    got = rankwise.evaluate(f'"{schema}".r', f'"{schema}".t', k=[1, 3], backend="postgres")
    want = rankwise.evaluate(recs, truth, k=[1, 3], backend="duckdb")
    assert_frame_equal(got.per_user, want.per_user, rel_tol=1e-12)
    assert_frame_equal(got.summary, want.summary, rel_tol=1e-12)


def test_a_nul_character_in_text_ids_is_a_dtype_error_naming_the_ids(pg):
    # PostgreSQL text cannot hold it: its COPY error came out as "check that the tables exist"
    recs = pl.DataFrame({"user": ["a\x00b", "a\x00b", "c"], "item": ["x", "y", "x"], "rank": [1, 2, 1]})
    truth = pl.DataFrame({"user": ["a\x00b"], "item": ["y"]})
    with pytest.raises(rankwise.DtypeMismatchError, match="NUL character") as info:
        rankwise.evaluate(recs, truth, k=1, backend="postgres")
    assert info.value.rows["user"].to_list() == ["a\\x00b"]
