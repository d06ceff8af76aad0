"""The beyond-accuracy SQL (``sql/beyond_*.sql``) rendered into one script for any dialect of
:mod:`rankwise.sqlgen.render` (``rankwise.sql(metrics=["novelty", "gini", ...])``).

A script is, in order:
1. the input views ``<prefix>recommendations(user_id, rank, item_id, score)`` (ranks renumbered 1..n
   per user, as the accuracy script does), ``<prefix>train(user_id, item_id)``, ``<prefix>items(item_id)``,
   ``<prefix>item_features(item_id, feature, value)``, ``<prefix>ground_truth(user_id, item_id,
   relevance)`` and ``<prefix>cutoffs(k)``; a side input that is not given is an empty view with the
   recommendations' id types; the caller's rows as sql/checks.sql reads them; the old stages dropped;
2. the input checks: sql/checks.sql over the recommendations and ground truth, sql/beyond_checks.sql
   over train, items and item_features, each a SELECT that fails with a message naming the problem
   and the tables (the rules of evaluate(); a failure stops the script before any stage is made);
3. the stages (``_beyond_spec.STAGES``: popularity, rank buckets, exposure) as tables;
4. three SELECTs: per user and k (user_id, k, n_items, novelty, arp, long_tail_share, ild,
   serendipity), the catalog metrics (metric, k, value, n_users) and per item (item_id, k, exposure,
   popularity).
What a dialect cannot do is declared in ``_sqlgen.GAPS`` (the "beyond-accuracy" entries).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rankwise.metrics import beyond as _beyond_spec

from rankwise.sqlgen import checks as _checks

from rankwise.sqlgen import files as _sql_files

from rankwise.sqlgen import core as _sqlgen
from rankwise.conventions import Convention, resolve
from rankwise.errors import ParameterError
from rankwise.metrics.declarations import check_cutoffs, parse_request, require_defined

INPUTS = ("recommendations", "train", "items", "item_features", "ground_truth")
RAW = ("recommendations_input", "ground_truth_input")  # the caller's rows, as sql/checks.sql reads them
QUERIES = {"per_user": "beyond_user", "catalog": "beyond_catalog", "per_item": "beyond_items"}
# dialects whose stages are gone with the session (temporary tables; Spark: temporary views)
_TEMP_TABLES = {"duckdb", "postgres", "snowflake", "spark", "databricks"}


@dataclass(frozen=True)
class BeyondScript:
    """A rendered beyond-accuracy script: setup (views, old stages dropped), the input checks, the
    stage tables, three SELECTs. A caller whose inputs evaluate() has checked runs setup and stages."""

    dialect: str
    setup: tuple[str, ...]
    per_user: str
    catalog: str
    per_item: str
    names: dict = field(default_factory=dict)  # logical name -> rendered relation name
    checks: tuple[str, ...] = ()  # each fails, naming the problem, when an input breaks a rule
    stages: tuple[str, ...] = ()  # CREATE of the stage tables

    def statements(self) -> list[str]:
        """Every statement in execution order: views, checks, stages, per-user, catalog, per-item SELECTs."""
        return [*self.setup, *self.checks, *self.stages, self.per_user, self.catalog, self.per_item]

    def text(self) -> str:
        header = (f"-- rankwise {_sqlgen.version()}: beyond-accuracy metrics, dialect {self.dialect}.\n"
                  "-- Rendered by sqlglot from the shipped sql/beyond_*.sql. The last three SELECTs: per user "
                  "and k, the catalog metrics, per item.\n")
        return header + ";\n\n".join(self.statements()) + ";\n"


def relation_names(prefix: str, schema: str | None, dialect: str) -> dict:
    """Rendered names of every relation the beyond files read (inputs, cutoffs, stages): all
    ``<prefix>beyond_<name>``, apart from the accuracy script's relations."""
    _sqlgen.relation_names(prefix, schema, dialect)  # checks the prefix and schema
    _, exp = _sqlgen.sqlglot_api()
    where = _sqlgen.identifier(schema, dialect, "schema", max_parts=2) if schema is not None else None
    out = {}
    for name in (*INPUTS, *RAW, "cutoffs", *_beyond_spec.STAGES.values()):
        view = name in INPUTS or name in RAW or name == "cutoffs"
        session_scoped = dialect in (_sqlgen.TEMP_VIEWS if view else _TEMP_TABLES)
        table = exp.Table(this=exp.to_identifier(f"{prefix}beyond_{name}"))
        if where is not None and not session_scoped:
            table.set("db", where.this.copy())
            table.set("catalog", where.args["db"].copy() if where.args.get("db") else None)
        out[name] = table.sql(dialect)
    return out


def render_beyond(metrics, k=10, convention: str | Convention = "default", dialect: str = "duckdb",
                  tables: dict | None = None, *, user_col: str = "user", item_col: str = "item",
                  rank_col: str | None = "rank", score_col: str | None = None,
                  relevance_col: str | None = "relevance", feature_col: str = "feature",
                  value_col: str | None = "value", schema: str | None = None,
                  prefix: str = "rankwise_", keep_score: str | None = None) -> BeyondScript:
    """The beyond-accuracy metrics ``metrics`` (names of ``rankwise.BEYOND_METRICS``) as a script.

    ``tables`` maps "recommendations" (required), "train", "items", "item_features" (long: item,
    feature[, value]; value_col=None: every value 1) and "ground_truth" to a table name or a SELECT,
    as ``rankwise.sql`` takes them; the same ``user_col`` / ``item_col`` name the ids in all of them.
    A metric whose input is not given is a ParameterError naming it, as in evaluate(). score_entropy
    reads ``score_col`` (ranks then come from the scores) or ``keep_score``, a score column carried
    while ranks come from ``rank_col`` (evaluate()'s engines: canonical ranks, scores joined).
    """
    dialect = _sqlgen.check_dialect(dialect)
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    unknown = [n for n in names if n not in _beyond_spec.METRICS]
    if unknown or not names:
        raise ParameterError(f"Not beyond-accuracy metrics: {unknown or names}.",
                             hint=f"Choose from: {', '.join(_beyond_spec.METRICS)}.")
    if "score_entropy" in names and score_col is None and keep_score is None:
        raise ParameterError("score_entropy reads the recommendations' scores, and the script has no score_col "
                             "(its ranks come from the rank column).",
                             hint="Pass score_col= (the script then ranks by the scores), or use evaluate() with "
                                  "both a rank and a score column.")
    conv = resolve(convention)
    require_defined(conv, names)  # as evaluate(): a metric the preset's library does not have
    ks = parse_request(["hit_rate"], k).ks
    check_cutoffs(conv, ks, names)
    tables = dict(tables or {})
    bad = set(tables) - set(INPUTS)
    if bad or "recommendations" not in tables:
        raise ParameterError(f"tables needs 'recommendations' and takes only {', '.join(INPUTS)}; got "
                             f"{sorted(tables)}.", hint="E.g. tables={'recommendations': 'recs', 'train': 'train'}.")
    for key, table in tables.items():
        _sqlgen.table_source(table, dialect, f"tables[{key!r}]")
    features = "item_features" in tables  # the only input with feature and value columns
    _sqlgen.check_roles(user_col, item_col, rank_col, score_col, relevance_col if "ground_truth" in tables else None,
                       feature_col if features else None, value_col if features else None)
    given = {"train": "train" in tables, "items": "items" in tables, "item_features": "item_features" in tables,
             "ground_truth": "ground_truth" in tables}
    for name in names:  # the same rule as evaluate(): a metric whose input is missing is refused
        needs = [n for n in _beyond_spec.NEEDS.get(name, ()) if not given[n]]
        if name in ("item_coverage", "gini") and conv.catalog != "recommended" and not (
                given["train"] or (conv.catalog == "items" and given["items"])):
            needs.append("items" if conv.catalog == "items" else "train")
        if needs:
            raise ParameterError(f"Metric {name!r} needs {' and '.join(needs)}, which the tables do not give.",
                                 hint=f"Pass tables={{{', '.join(repr(n) + ': ...' for n in needs)}, ...}} (rankwise "
                                      f"sql: {' '.join('--' + n.replace('_', '-') + ' TABLE' for n in needs)}).")
    rel = relation_names(prefix, schema, dialect)
    views = _input_views(tables, dialect, rel, conv, user_col, item_col, rank_col, score_col, relevance_col,
                         feature_col, value_col, ks, keep_score)
    views |= _raw_views(tables, dialect, rel, user_col, item_col, rank_col, score_col, relevance_col)
    made = [_sqlgen.view_statements(rel[name], query, dialect) for name, query in views.items()]
    # the empty stand-ins read the recommendations view: drop every view before creating any
    setup = [drop for drop, _ in reversed(made)] + [create for _, create in made]
    if dialect == "clickhouse":  # the beyond files test joined columns for NULL (outer joins, COALESCE)
        setup.insert(0, "SET join_use_nulls = 1")
    stages = [_create_table(rel[table], _query(file, conv, dialect, rel), dialect)
              for file, table in _beyond_spec.STAGES.items()]
    setup += [drop for drop, _ in stages]  # no stage of an earlier run outlives a failed check
    given = {key: tables[key] for key in ("recommendations", "ground_truth", *INPUTS) if key in tables}
    checks = tuple(_sqlgen.stop_on_failed_checks(_checks.checks_query(
        conv, score_col is not None, dialect, rel, null_item_marks_empty=True, file=file), given, dialect)
        for file in ("checks", "beyond_checks"))
    per_user, catalog, per_item = (_query(QUERIES[q], conv, dialect, rel) for q in QUERIES)
    wanted = [n for n in names if n in _beyond_spec.USER_COLUMNS]
    per_user = _select(per_user, ["user_id", "k", "n_items", *wanted], dialect)
    kept = ", ".join(f"'{n}'" for n in names if n not in _beyond_spec.USER_COLUMNS) or "''"
    catalog = _filtered(catalog, f"c.metric IN ({kept})", dialect)
    return BeyondScript(dialect, tuple(setup), per_user, catalog, per_item, rel, checks,
                        tuple(create for _, create in stages))


def _query(file: str, conv: Convention, dialect: str, rel: dict) -> str:
    return _sqlgen.generate(_sqlgen.shipped(_sql_files.read(file), file, conv, 1.0, dialect, rel, "fbeta"), dialect)


def _select(query: str, columns: list, dialect: str) -> str:
    _, exp = _sqlgen.sqlglot_api()
    outer = exp.select(*(exp.column(c, table="u") for c in columns)).from_(exp.to_table(_sqlgen.BODY).as_("u"))
    return _sqlgen.fill_body(outer, query, dialect)


def _filtered(query: str, condition: str, dialect: str) -> str:
    sqlglot, _ = _sqlgen.sqlglot_api()
    outer = sqlglot.parse_one(f"SELECT c.metric AS metric, c.k AS k, c.value AS value, c.n_users AS n_users "
                              f"FROM {_sqlgen.BODY} AS c WHERE {condition}", read="duckdb")
    return _sqlgen.fill_body(outer, query, dialect)


def _create_table(name: str, query: str, dialect: str) -> list[str]:
    """DROP + CREATE of a stage: a temporary table where there is one, on Spark a temporary view
    (gone with the session; Spark plans each reader with it), elsewhere a table."""
    _, exp = _sqlgen.sqlglot_api()
    table = _sqlgen.table_node(name, dialect)
    if dialect in ("spark", "databricks"):
        return _sqlgen.view_statements(name, query, dialect)
    create = exp.Create(this=table, kind="TABLE", expression=exp.select("*").from_(exp.to_table(_sqlgen.BODY).as_("s")),
                        properties=exp.Properties(expressions=[exp.TemporaryProperty()])
                        if dialect in _TEMP_TABLES else None)
    if dialect == "clickhouse":  # CREATE TABLE ... AS SELECT needs an engine there
        create.set("properties", exp.Properties(expressions=[
            exp.EngineProperty(this=exp.to_identifier("MergeTree")),
            exp.Order(expressions=[exp.Ordered(this=exp.Tuple(expressions=[]))])]))
    return [_sqlgen.drop_statement("TABLE", table.sql(dialect), dialect, dialect in _TEMP_TABLES),
            _sqlgen.fill_body(create, query, dialect)]


def _raw_views(tables: dict, dialect: str, rel: dict, user_col, item_col, rank_col, score_col, relevance_col) -> dict:
    """{"recommendations_input": SELECT, "ground_truth_input": SELECT}: the caller's rows under the
    names sql/checks.sql reads; without a ground truth, an empty one with the recommendations' types."""
    _, exp = _sqlgen.sqlglot_api()
    has_truth = "ground_truth" in tables
    source = {"recommendations": tables["recommendations"],
              "ground_truth": tables["ground_truth" if has_truth else "recommendations"]}  # replaced below
    raw = _checks.raw_views(source, dialect, user_col, item_col, None if score_col else rank_col, score_col,
                            relevance_col if has_truth else None)
    if not has_truth:
        raw["ground_truth_input"] = exp.select("r.user_id", "r.item_id",
                                               exp.alias_(exp.cast(exp.Null(), "DOUBLE"), "relevance")) \
            .from_(exp.to_table(rel["recommendations_input"]).as_("r")).where("1 = 0")
    return raw


def _input_views(tables: dict, dialect: str, rel: dict, conv: Convention, user_col, item_col, rank_col, score_col,
                 relevance_col, feature_col, value_col, ks, keep_score=None) -> dict:
    """{logical name: SELECT} of the six input views, in creation order."""
    sqlglot, exp = _sqlgen.sqlglot_api()
    col = _sqlgen.quoted_column  # the caller's column, quoted by the one rule

    def source(key):
        return _sqlgen.source_of(tables[key], dialect, f"tables[{key!r}]")

    recs = _sqlgen.recommendations_view(tables["recommendations"], dialect, user_col, item_col, rank_col, score_col,
                                        conv, with_score=True, keep_score=keep_score)

    def empty(*columns):  # no rows, the recommendations' id types
        return exp.select(*columns).from_(exp.to_table(rel["recommendations"]).as_("r")).where("1 = 0")

    views = {"recommendations": recs}
    if "train" in tables:
        views["train"] = exp.select(exp.alias_(col(user_col), "user_id"), exp.alias_(col(item_col), "item_id")) \
            .from_(source("train"))
    else:
        views["train"] = empty("r.user_id", "r.item_id")
    if "items" in tables:
        views["items"] = exp.select(exp.alias_(col(item_col), "item_id")).distinct().from_(source("items"))
    else:
        views["items"] = empty("r.item_id")
    if "item_features" in tables:
        value = exp.cast(col(value_col), "DOUBLE") if value_col else exp.cast(exp.Literal.number(1), "DOUBLE")
        views["item_features"] = exp.select(exp.alias_(col(item_col), "item_id"),
                                            exp.alias_(exp.cast(col(feature_col), "VARCHAR"), "feature"),
                                            exp.alias_(value, "value")).from_(source("item_features"))
    else:
        views["item_features"] = empty("r.item_id", exp.alias_(exp.cast(exp.Null(), "VARCHAR"), "feature"),
                                       exp.alias_(exp.cast(exp.Null(), "DOUBLE"), "value"))
    if "ground_truth" in tables:
        views["ground_truth"] = _sqlgen.ground_truth_view(tables["ground_truth"], dialect, user_col, item_col,
                                                          relevance_col)
    else:
        views["ground_truth"] = empty("r.user_id", "r.item_id",
                                      exp.alias_(exp.cast(exp.Null(), "DOUBLE"), "relevance"))
    views["cutoffs"] = _sqlgen.cutoffs_query(ks, dialect)
    return views
