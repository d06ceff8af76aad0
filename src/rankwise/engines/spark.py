"""Spark backend: the shipped SQL rendered for Spark by :mod:`rankwise.sqlgen.render`, run by ``spark.sql``.

Spark DataFrames are checked, normalised and scored in Spark (:class:`SparkInputs`); other inputs
are normalised by ``rankwise.inputs.normalize`` on the driver and sent to Spark. Either way each input is
grouped by user once into arrays (``sql/spark_user_arrays.sql``, as MLlib's ranking metrics read
them), per_user.sql's ``stats`` rows come from those arrays (``sql/spark_user_stats.sql``), and the
rest of per_user.sql and summary.sql run as rendered. ``evaluate(..., backend="spark",
collect=False)`` keeps the per-user result in Spark.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
import uuid
from dataclasses import dataclass, field
from functools import lru_cache

import polars as pl

from rankwise.engines import beyond as _beyond

from rankwise.sqlgen import checks as _checks

from rankwise.sqlgen import files as _sql_files

from rankwise.sqlgen import core as _sqlgen
from rankwise.engines.protocol import (COUNTS, COUNTS_SQL, Capabilities, Engine, Output, error_rules, examples_sql, polars_counts,
                      polars_examples)
from rankwise.inputs.normalize import USER, Columns, is_spark_dataframe, no_order_column, require
from rankwise.inputs.normalize import spark_to_polars as to_polars
from rankwise.engines.shape import KEYS
from rankwise.conventions import Convention
from rankwise.errors import (DtypeMismatchError, InvalidRankError, InvalidRelevanceError, InvalidScoreError,
                     MissingDependencyError, RankwiseError)
from rankwise.metrics.declarations import USER_LEVEL as METRIC_COLUMNS
from rankwise.metrics.declarations import MetricRequest, internal_name

_INSTALL = 'pip install "rankwise[spark]"  (pyspark >= 4 and a Java 17+ runtime)'


def _pyspark():
    try:
        import pyspark
        from pyspark.sql import SparkSession
    except ImportError as error:
        raise MissingDependencyError("backend='spark' needs pyspark, which is not installed.", hint=_INSTALL) from error
    return pyspark, SparkSession


def session():
    """The active SparkSession, or a small local one (loopback only, no UI, UTC, 2 shuffle partitions,
    1 MB memory pages)."""
    _, SparkSession = _pyspark()
    # the caller's session as it is: from another thread getActiveSession() is None, and getOrCreate()
    # would apply the settings below to the running session (shuffle partitions, time zone)
    active = SparkSession.getActiveSession() or SparkSession._instantiatedSession
    if active is not None:
        return active
    return (SparkSession.builder.master("local[2]").appName("rankwise")
            .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            # 1 MB memory pages (Spark sizes them from the heap and cores, here 16 MB): every broadcast hash join
            # takes a page, and the 1 GB local heap spent small evaluations in GC. The 2,000-user example,
            # k = 5, 10: 10-16 s -> 4-6 s a call (first call 23-24 -> 14-15 s), same values
            .config("spark.buffer.pageSize", "1m")
            .config("spark.sql.session.timeZone", "UTC")
            # the backend never writes tables; keep Spark from creating ./spark-warehouse
            .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="rankwise-spark-warehouse-"))
            .getOrCreate())


def _to_spark(spark, frame: pl.DataFrame):
    table = frame.to_arrow()
    import pyarrow as pa

    def spark_readable(t):
        # Spark's Arrow reader takes plain strings (Polars writes large_string / string_view) and
        # has no unsigned integers: UInt64 ids become DECIMAL(20, 0), exact and joinable.
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return pa.string()
        if pa.types.is_uint64(t):
            return pa.decimal128(20, 0)
        if pa.types.is_unsigned_integer(t):
            return pa.int64()
        return t

    schema = pa.schema([pa.field(f.name, spark_readable(f.type)) for f in table.schema])
    return spark.createDataFrame(table.cast(schema))


@contextlib.contextmanager
def _adaptive_off(spark):
    """Adaptive query execution off while the per-user rows materialise and are summarised, then the
    session's own setting back. Run adaptively, some of these plans fail in Spark 4 with a
    ClassCastException deserialising UnionExec.children (reproduced with k = 2**31 - 1 on three
    users; tests/test_hostile_inputs.py::test_the_largest_k)."""
    key = "spark.sql.adaptive.enabled"
    before = spark.conf.get(key, None)
    spark.conf.set(key, "false")
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def temporary_views(spark) -> set[str]:
    """The session's temporary views (SHOW VIEWS: catalog.listTables() fails to decode in Spark 4.3)."""
    return {row["viewName"] for row in spark.sql("SHOW VIEWS").collect() if row["isTemporary"]}


def _drop(spark, views) -> None:
    for view in views:
        spark.catalog.dropTempView(view)


@dataclass
class SparkInputs:
    """Spark DataFrames evaluated where they are: checked, normalised and scored by spark.sql.

    ``user_counts`` answers like :meth:`rankwise.inputs.normalize.Prepared.user_counts` once the engine has
    counted the distinct users of each input (in Spark)."""

    recommendations: object
    ground_truth: object
    columns: Columns
    by_score: bool
    has_relevance: bool
    counts: dict = field(default_factory=dict)

    def user_counts(self, users: str) -> tuple[int, int]:
        recs, truth, both = self.counts["recs"], self.counts["truth"], self.counts["both"]
        either = recs + truth - both
        return either, {"union": either, "labels": truth, "predictions": recs, "intersection": both}[users]


def spark_inputs(recs, truth, columns: Columns, conv: Convention) -> SparkInputs | None:
    """SparkInputs when both inputs are long-form Spark DataFrames the shipped SQL can take as they
    are (typed errors for wrong column types, found from the schemas on the driver); None when the
    driver path is needed (list-form columns, min_score: see README)."""
    if not (is_spark_dataframe(recs) and is_spark_dataframe(truth)) or conv.min_score is not None:
        return None
    from pyspark.sql import types as T

    r, t = ({f.name: f.dataType for f in frame.schema.fields} for frame in (recs, truth))
    # a rank, score or relevance column the caller names must exist (else a misspelt one is ignored)
    require(r, [columns.user, columns.item], "recommendations", columns, optional=("rank", "score"))
    require(t, [columns.user, columns.item], "ground truth", columns, optional=("relevance",))
    if any(isinstance(schema[columns.item], T.ArrayType) for schema in (r, t)):
        return None  # list form: normalised on the driver
    read = {columns.user, columns.item, columns.rank, columns.score, columns.relevance}
    recs, truth = _unambiguous(recs, read), _unambiguous(truth, read)

    def kind(dtype):  # decimal(20, 0): how Spark reads a Parquet file's UInt64 ids
        integral = isinstance(dtype, T.IntegralType) or (isinstance(dtype, T.DecimalType) and dtype.scale == 0)
        return "integer" if integral else "string" if isinstance(dtype, T.StringType) else dtype.simpleString()

    for column in (columns.user, columns.item):
        a, b = kind(r[column]), kind(t[column])
        if a != b:
            raise DtypeMismatchError(
                f"{column!r} is {r[column].simpleString()} in the recommendations and {t[column].simpleString()} "
                "in the ground truth; ids must be both integers or both strings.",
                hint=f"Cast one side, e.g. df.withColumn({column!r}, F.col({column!r}).cast('string')).")
        if a not in ("integer", "string"):
            return None  # other id types (double, date, ...): normalised on the driver, as a Polars frame's
    by_score = columns.rank not in r
    if by_score and columns.score not in r:
        raise no_order_column(columns, list(r))
    if not by_score and not isinstance(r[columns.rank], T.IntegralType):
        raise InvalidRankError(f"recommendations: {columns.rank!r} must be integer, got {r[columns.rank].simpleString()}.",
                               hint="Cast the rank column to an integer type, or pass scores as score_col.")
    if by_score and not isinstance(r[columns.score], T.NumericType):
        raise InvalidScoreError(f"recommendations: {columns.score!r} must be numeric to rank by it, got "
                                f"{r[columns.score].simpleString()}.", hint="Cast the score to a double.")
    has_relevance = columns.relevance in t
    if has_relevance and not isinstance(t[columns.relevance], (T.NumericType, T.BooleanType)):
        raise InvalidRelevanceError(f"ground truth: {columns.relevance!r} must be numeric, got "
                                    f"{t[columns.relevance].simpleString()}.", hint="Cast the relevance to a double.")
    return SparkInputs(recs, truth, columns, by_score, has_relevance)


def _unambiguous(frame, read: set):
    """``frame`` with the columns rankwise does not read renamed when two names differ only in case:
    Spark resolves names case-insensitively by default, so a "USER" column made "user" ambiguous."""
    folded = [name.lower() for name in frame.columns]
    if len(set(folded)) == len(folded):
        return frame
    return frame.toDF(*(name if name in read else f"_rankwise_unread_{i}" for i, name in enumerate(frame.columns)))


def _native_views(spark, inputs: SparkInputs, conv: Convention, names: dict, prefix: str, *,
                  checked: bool = True) -> list[str]:
    """The caller's frames as the raw views sql/checks.sql reads and the canonical views over them;
    when ``checked``, the checks run first and the users are counted (the long-form path)."""
    c = inputs.columns
    source = {"recommendations": f"{prefix}recommendations_source", "ground_truth": f"{prefix}ground_truth_source"}
    inputs.recommendations.createOrReplaceTempView(source["recommendations"])
    inputs.ground_truth.createOrReplaceTempView(source["ground_truth"])
    raw = _checks.raw_views(source, "spark", c.user, c.item, None if inputs.by_score else c.rank,
                            c.score if inputs.by_score else None, c.relevance if inputs.has_relevance else None)
    for name, query in raw.items():
        spark.sql(f"CREATE OR REPLACE TEMP VIEW {names[name]} AS {query}")
    views = [*source.values(), *(names[name] for name in raw)]
    if checked:
        _check_exactly(spark, inputs, conv, names, prefix)
    for name, query in _checks.input_views(source, "spark", c.user, c.item, None if inputs.by_score else c.rank,
                                          c.score if inputs.by_score else None,
                                          c.relevance if inputs.has_relevance else None, conv).items():
        spark.sql(f"CREATE OR REPLACE TEMP VIEW {names[name]} AS {query}")
        views.append(names[name])
    if checked:
        row = spark.sql(
            f"SELECT (SELECT COUNT(DISTINCT user_id) FROM {names['recommendations']}) AS recs, "
            f"(SELECT COUNT(DISTINCT user_id) FROM {names['ground_truth']}) AS truth, "
            f"(SELECT COUNT(*) FROM (SELECT user_id FROM {names['recommendations']} INTERSECT "
            f"SELECT user_id FROM {names['ground_truth']}) AS b) AS both").collect()[0]
        inputs.counts.update({k: int(row[k]) for k in ("recs", "truth", "both")})
    return views


def _check_exactly(spark, inputs: SparkInputs, conv: Convention, names: dict, prefix: str) -> None:
    """sql/checks.sql over the raw views: the typed error of the first failed check, with its rows."""
    checks = _checks.checks_query(conv, inputs.by_score, "spark", names)
    _checks.raise_on_failed_checks(_collect_with_small_shared_ctes(spark, checks, prefix))


# -- the per-user array path ------------------------------------------------------------------------
# Rule: an evaluation on Spark groups each input by user once (sql/spark_user_arrays.sql) and
# computes per_user.sql's `stats` rows from those arrays (sql/spark_user_stats.sql); the rest of
# per_user.sql runs unchanged on them. The one exception, a score column with ties='input_order'
# (which no SQL can express: a table has no row order), takes the long-form path, which raises
# UnsupportedSQLError.

_RELATIONS = re.compile(r"\b(FROM|JOIN)\s+([a-z_]+)\b")


def _uses_arrays(prep, conv: Convention) -> bool:
    return not (isinstance(prep, SparkInputs) and prep.by_score and conv.ties == "input_order")


def _spark_file(name: str, values: dict, names: dict) -> str:
    """sql/<name>.sql (Spark SQL) with its $parameters as literals and its inputs under ``names``."""
    text = "\n".join(line.split("--", 1)[0] for line in _sql_files.read(name).splitlines())
    text = _sql_files._PARAMETER.sub(lambda m: _sqlgen.literal_node(values[m.group(1)]).sql("spark"), text)
    return _RELATIONS.sub(lambda m: f"{m.group(1)} {names.get(m.group(2), m.group(2))}", text)


@lru_cache(maxsize=64)
def _metrics_after_stats(per_user_sql: str, stats_view: str) -> str:
    """The rendered per_user.sql from its `stats` CTE on: the CTEs after it, reading ``stats_view``."""
    sqlglot, exp = _sqlgen.sqlglot_api()
    tree = sqlglot.parse_one(per_user_sql, read="spark")
    ctes = tree.args["with_"].expressions
    names = [cte.alias for cte in ctes]
    at = names.index("stats")
    tree.set("with_", exp.With(expressions=ctes[at + 1:]))
    missing = {t.name for t in tree.find_all(exp.Table)} & set(names[:at])
    if missing:
        raise RankwiseError(f"internal: per_user.sql reads {sorted(missing)} after its `stats` CTE; "
                            "sql/spark_user_stats.sql computes `stats` only.")

    def rename(node):
        if isinstance(node, exp.Table) and not node.db and node.name == "stats":
            new = exp.to_table(stats_view)
            new.set("alias", node.args.get("alias") or exp.TableAlias(this=exp.to_identifier("stats")))
            return new
        return node

    return tree.transform(rename).sql("spark")


# the largest cutoff at which sorting only the rows ranked within it (and checking the whole lists
# apart, sql/spark_user_arrays.sql's $top_only) beats sorting every list; measured: bench/RESULTS.md
_TOP_ONLY_MAX_RANK = 20


def _user_arrays(spark, values: dict, names: dict):
    """sql/spark_user_arrays.sql materialised as the ``user_arrays`` view; its one-row summary
    (suspect, complete, users in each input)."""
    # materialised with its lineage cut, not cache(): Spark does not substitute a cached plan read
    # inside a CTE, and the queries over the arrays are CTEs
    arrays = spark.sql(_spark_file("spark_user_arrays", values, names)).localCheckpoint()
    arrays.createOrReplaceTempView(names["user_arrays"])
    return spark.sql(f"SELECT MAX(suspect) AS suspect, MIN(complete) AS complete, SUM(in_recs) AS recs, "
                     f"SUM(in_truth) AS truth, SUM(in_recs * in_truth) AS both FROM {names['user_arrays']}"
                     ).collect()[0]


def _array_views(spark, prep, request: MetricRequest, conv: Convention, names: dict, prefix: str):
    """The per-user arrays (materialised; checked when they come from the caller's frames) and the
    `stats` view over them. Returns the views."""
    if isinstance(prep, SparkInputs):
        views = _native_views(spark, prep, conv, names, prefix, checked=False)
        by_score = prep.by_score
    else:  # canonical rows from the driver: their ranks 1..n as positions, nothing left to check
        _to_spark(spark, prep.ground_truth).createOrReplaceTempView(names["ground_truth"])
        _to_spark(spark, prep.recommendations).createOrReplaceTempView(names["recommendations"])
        spark.sql(f"CREATE OR REPLACE TEMP VIEW {names['recommendations_input']} AS SELECT user_id, item_id, "
                  f"CAST(rank AS BIGINT) AS position, CAST(NULL AS DOUBLE) AS score FROM {names['recommendations']}")
        views = [names["ground_truth"], names["recommendations"], names["recommendations_input"]]
        by_score = False
    max_rank = min(max(request.ks), 2147483647) if conv.rr_cutoff else 2147483647
    values = {**conv.sql_parameters(), "by_score": int(by_score), "ties": conv.ties, "duplicates": conv.duplicates,
              "max_rank": max_rank, "top_only": int(not by_score and max_rank <= _TOP_ONLY_MAX_RANK)}
    row = _user_arrays(spark, values, names)
    views.append(names["user_arrays"])
    if isinstance(prep, SparkInputs) and row["suspect"]:
        try:
            _check_exactly(spark, prep, conv, names, prefix)  # raises, with the offending rows
        except Exception:
            _drop(spark, views)
            raise
    if not row["complete"]:  # a gap in the rank values, or first_shift closing up: sort whole lists
        row = _user_arrays(spark, {**values, "top_only": 0}, names)
    if isinstance(prep, SparkInputs):
        prep.counts.update({k: int(row[k] or 0) for k in ("recs", "truth", "both")})
    spark.sql(_spark_file("spark_user_stats", values, names)).createOrReplaceTempView(names["stats"])
    views.append(names["stats"])
    return views


# Each run names its views with a fresh prefix. Rendering with sqlglot costs about 0.5 s a run, so
# the SQL is rendered (and cached) under one template prefix per process and the run's prefix put in
# its place in the text: both are random tokens, so neither occurs anywhere else in the SQL.
_TEMPLATE = f"rankwise_{uuid.uuid4().hex[:12]}_"


def _names(prefix: str) -> dict:
    return {**_sqlgen.relation_names(prefix, None, "spark"),
            "user_arrays": f"{prefix}user_arrays", "stats": f"{prefix}stats"}


class SparkEngine(Engine):
    """The rendered SQL on the active (or a small local) Spark session; per-user rows, summary and
    counts stay in Spark, and only the small outputs reach the driver unless ``collect``.
    Spark DataFrame inputs (:class:`SparkInputs`) are checked and normalised in Spark too."""

    name = "spark"
    capabilities = Capabilities(keeps_results=True, native_frames=True)

    def native_inputs(self, recs, truth, columns: Columns, conv: Convention):
        return spark_inputs(recs, truth, columns, conv)

    def is_native(self, data) -> bool:
        return is_spark_dataframe(data)

    def kept_rows(self, kept, request: MetricRequest, user_col: str):
        return public_long(kept, request, user_col)

    def kept_wide(self, kept, request: MetricRequest, user_col: str):
        return wide(kept, request, user_col)

    def run(self, prep, request: MetricRequest, conv: Convention, *,
            memory_limit: int | None = None, collect: bool = True) -> Output:
        prefix = f"rankwise_{uuid.uuid4().hex[:12]}_"
        spark = prep.recommendations.sparkSession if isinstance(prep, SparkInputs) else session()
        try:
            return self._run(spark, prefix, prep, request, conv, collect)
        except Exception:  # a failed check or an engine error: none of this run's views is left behind
            _drop(spark, [name for name in temporary_views(spark) if name.startswith(prefix)])
            raise

    def _run(self, spark, prefix: str, prep, request: MetricRequest, conv: Convention, collect: bool) -> Output:
        names = _names(prefix)
        native = isinstance(prep, SparkInputs)
        user_dtype = None if native else prep.user_dtype
        spark.sql(_sqlgen.cutoffs_query(request.ks, "spark")).createOrReplaceTempView(names["cutoffs"])
        views = [names["cutoffs"], names["per_user"]]
        template = _names(_TEMPLATE)  # rendered under the template prefix (cached), then named for this run
        per_user_sql, summary_sql, _ = _sqlgen.queries(request.ks, conv, request.beta, "spark", template)
        if _uses_arrays(prep, conv):
            more = _array_views(spark, prep, request, conv, names, prefix)
            per_user_sql = _metrics_after_stats(per_user_sql, template["stats"])
        else:
            more = _native_views(spark, prep, conv, names, prefix)
        per_user_sql, summary_sql = (text.replace(_TEMPLATE, prefix) for text in (per_user_sql, summary_sql))
        views += more
        with _adaptive_off(spark):
            # collected: cached for the two reads below, then unpersisted. Left in Spark: materialised
            # with its lineage cut, so that no view of this run is needed afterwards and Spark's
            # cleaner frees its blocks once the caller drops the frame (a cached plan stays in the
            # cache manager until someone unpersists it)
            rows = spark.sql(per_user_sql).cache() if collect else spark.sql(per_user_sql).localCheckpoint()
        rows.createOrReplaceTempView(names["per_user"])
        try:
            with _adaptive_off(spark):
                summary = _collect_with_small_shared_ctes(spark, summary_sql, prefix)
                if collect:  # one Spark job: the counts, examples and (k, user) order come from the driver's copy
                    per_user = _canonical(to_polars(rows), user_dtype).sort("k", USER)
                    counts, examples = polars_counts(per_user), polars_examples(per_user, conv)
                else:
                    per_user = rows
                    counts = spark.sql(COUNTS_SQL.format(per_user=names["per_user"])).collect()[0].asDict()
                    examples = {knob: _canonical(to_polars(spark.sql(examples_sql(names["per_user"], condition))),
                                                 user_dtype, ("n_recs", "n_rel"))
                                for knob, condition, _, _ in error_rules(conv)}
        finally:
            if collect:
                rows.unpersist()
            _drop(spark, views)
        return Output(per_user, summary, {name: int(counts[name]) for name in COUNTS}, examples)


    def discard(self, kept) -> None:
        """Nothing to drop: the kept per-user rows are a checkpointed DataFrame (no view, no cached
        plan), freed by Spark's cleaner once unreferenced."""

    def beyond(self, recs: pl.LazyFrame, truth, names, side, ks, conv: Convention, *, source, empty,
               want_catalog, memory_limit):
        """The beyond-accuracy values (users, catalog, per_item) for ``_beyond.run``: the script
        rankwise.sql renders for Spark, run by spark.sql over the canonical frames as temporary views
        (dropped afterwards)."""
        spark = session()
        prefix = f"rankwise_{uuid.uuid4().hex[:12]}_"
        frames, tables, ids = _beyond.script_inputs(recs, truth, side, prefix)
        script = _beyond.script(tables, names, ks, conv, "spark", prefix)
        try:
            for table, frame in frames.items():
                _to_spark(spark, frame).createOrReplaceTempView(table)
            with _adaptive_off(spark):
                for statement in (*script.setup, *script.stages):  # evaluate() has checked the inputs
                    spark.sql(statement)
                users, catalog, items = (to_polars(spark.sql(q)) for q in (script.per_user, script.catalog,
                                                                             script.per_item))
        finally:
            _drop(spark, [*frames, *(name for name in script.names.values() if "`" not in name)])
        return _beyond.typed(users, catalog, items, ids)


@lru_cache(maxsize=64)
def _template_shared_ctes(query: str):
    return _sqlgen.shared_ctes(query, "spark", _TEMPLATE)


def _collect_with_small_shared_ctes(spark, query: str, prefix: str) -> pl.DataFrame:
    """``spark.sql(query)`` collected, each CTE it reads more than once computed once and brought to
    the driver first (for CTEs of a few rows: the summary's one aggregate, a row per k; the checks'
    one-row passes over each input). Spark would inline the CTE at every reference and run the
    aggregate once per metric or rule; a view over a cached plan is no better, as Spark matches the
    whole per-user plan at each reference. 7 s -> 4.4 s for a tiny evaluation on local[2]."""
    shared, rest = _template_shared_ctes(query.replace(prefix, _TEMPLATE))
    shared = [(name.replace(_TEMPLATE, prefix), body.replace(_TEMPLATE, prefix)) for name, body in shared]
    rest = rest.replace(_TEMPLATE, prefix)
    try:
        for name, body in shared:
            spark.createDataFrame(spark.sql(body).toArrow()).createOrReplaceTempView(name)
        return to_polars(spark.sql(rest))
    finally:
        _drop(spark, [name for name, _ in shared])


def _canonical(frame: pl.DataFrame, user_dtype, columns=("k", "n_recs", "n_rel", *METRIC_COLUMNS)) -> pl.DataFrame:
    """Spark's types -> the Polars engine's (user type of the input, Int64 counts, Float64 metrics)."""
    return frame.with_columns(
        pl.col(USER).cast(user_dtype) if user_dtype is not None else pl.col(USER),
        *[pl.col(c).cast(pl.Float64 if c in METRIC_COLUMNS else pl.Int64) for c in columns],
    ).select(USER, *columns)


def public_long(rows, request, user_col: str):
    """The engine's per-user rows kept in Spark under the collected long frame's names and types
    (rankwise.engines.shape.long): user, k, n_recs, n_rel, the asked metrics (NaN = undefined)."""
    from pyspark.sql import functions as F

    return rows.select(F.col(USER).alias(user_col), *[F.col(c).cast("bigint").alias(c) for c in KEYS],
                       *[F.coalesce(F.col(internal_name(n)).cast("double"), F.lit(float("nan"))).alias(n)
                         for n in request.names])


def wide(long, request, user_col: str):
    """A kept long frame (:func:`public_long`) -> user, then one "metric@k" column each, NaN =
    undefined; computed in Spark."""
    from pyspark.sql import functions as F

    cells = []
    for name in request.names:
        for k in request.ks:
            value = F.max(F.when(F.col("k") == k, F.col(name)))
            cells.append(F.coalesce(value, F.lit(float("nan"))).alias(request.column(name, k)))
    return long.groupBy(user_col).agg(*cells)
