"""The SQL generation every script and SQL engine shares: the shipped ``sql/*.sql`` parsed once
(DuckDB dialect), ``$name`` parameters made literals, relation names prefixed, and sqlglot writing the
target dialect; the caller's tables and queries checked as relation sources; the canonical input views
(``recommendations_view``, ``ground_truth_view``); the dialects and their declared :data:`GAPS`.

A few rewrites are applied on the syntax tree, each for a reason that is stated where it is done
(decimal literals, inequality joins on ClickHouse, engine clauses). ``rankwise.sqlgen.render`` (the scripts of
``rankwise.sql``), ``_checks`` (the input checks as SQL), ``_render_beyond`` and the PostgreSQL and Spark
engines build on it; it imports none of them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from rankwise.inputs import normalize as _inputs

from rankwise.sqlgen import files as _sql_files
from rankwise.conventions import Convention, resolve
from rankwise.errors import InvalidIdentifierError, MissingDependencyError, ParameterError, RankwiseError, \
    UnsupportedSQLError
from rankwise.metrics.declarations import internal_name

DIALECTS = ("duckdb", "postgres", "spark", "databricks", "bigquery", "snowflake", "trino", "clickhouse", "redshift")
INPUTS = ("recommendations", "ground_truth")
OUTPUT_COLUMNS = ("user_id", "k", "n_recs", "n_rel")
# dialects whose views can be session-scoped (no leftover objects in the warehouse)
TEMP_VIEWS = {"duckdb", "postgres", "spark", "databricks", "snowflake"}
# the schema that holds a session's temporary objects, where a dialect lets a statement name it: an
# unqualified DROP ... IF EXISTS drops a caller's persistent object of that name when the session has
# no temporary one (DuckDB's main schema, PostgreSQL's search path)
_TEMP_SCHEMA = {"duckdb": "temp", "postgres": "pg_temp"}


@dataclass(frozen=True)
class Gap:
    """Something a rendered script cannot do, where, and what happens instead."""

    dialects: tuple[str, ...]  # ("*",) = every dialect
    what: str
    handling: str


GAPS = (
    Gap(("*",), "the id type check (user and item ids both integers or both strings)",
        "not checked by the script; the engine's own join refuses or compares mismatched types"),
    Gap(("*",), "convention ties='input_order' with a score column (a table has no row order)",
        "UnsupportedSQLError; ranks from a rank column, or ties='item_asc'/'item_desc'"),
    Gap(("*",), "convention empty_labels='error' / empty_predictions='error' (SQL cannot raise portably)",
        "UnsupportedSQLError; choose a value ('nan', 'zero', 'one')"),
    Gap(("*",), "list-form inputs (arrays of items)", "long tables only: one row per (user, item)"),
    Gap(("*",), "convention min_score (drop items scored below it; a user left with none stays, empty)",
        "UnsupportedSQLError; filter the table first (WHERE score >= ...) and use min_score=None"),
    Gap(("*",), "NaN", "undefined values are NULL in SQL; the API shows NaN"),
    Gap(("bigquery",), "objects without a dataset", "pass schema='dataset' or run with a default dataset"),
    Gap(("bigquery", "trino", "clickhouse", "redshift"), "temporary views",
        "the input views are ordinary views named <prefix>...; dropped and recreated on every run"),
    Gap(("spark", "databricks", "snowflake", "bigquery", "trino", "clickhouse", "redshift"),
        "dropping only the script's own temporary views and stages (a DROP naming the temporary schema)",
        "an unqualified DROP ... IF EXISTS, which drops a view or table of that name in the current schema "
        "when the session has no temporary one; choose a prefix= that none of yours starts with"),
    Gap(("bigquery",), "NULLS LAST in a window's ORDER BY",
        "the engine's default null order is used; those sort keys (rank, gain) are never NULL"),
    Gap(("clickhouse",), "JOIN ... ON with an inequality (older servers)",
        "rewritten to CROSS JOIN + WHERE on the syntax tree; same rows"),
    Gap(("clickhouse",), "NULL for missing join partners (join_use_nulls=0 fills 0 or '')",
        "the shipped SQL carries match flags and never tests a joined column for NULL"),
    # beyond-accuracy metrics (rankwise.sqlgen.beyond, sql/beyond_*.sql)
    Gap(("*",), "beyond-accuracy: score_entropy with ranks from a rank column (the scores of the pooled top k)",
        "ParameterError; the script reads scores when it ranks by them (score_col=), else evaluate() computes it"),
    Gap(("*",), "beyond-accuracy: item_features as embeddings (a list column)",
        "long (item, feature, value) rows only; explode the embedding into features 0..d-1"),
    Gap(("clickhouse",), "beyond-accuracy: outer joins read as NULL where the partner is missing",
        "the script starts with SET join_use_nulls = 1 (its session only)"),
    Gap(("bigquery", "trino", "clickhouse", "redshift"), "beyond-accuracy: temporary stage tables",
        "the stages are ordinary tables <prefix>beyond_...; dropped and recreated on every run"),
)


def check_roles(user_col, item_col, rank_col, score_col, relevance_col, feature_col=None, value_col=None) -> None:
    """The script's column roles in play, each its own column (evaluate()'s rule, ``_inputs.check_roles``):
    ranks come from ``score_col`` when given, else from ``rank_col``; None is a role not in play
    (no relevance column; ``feature_col`` / ``value_col`` without item features)."""
    roles = {"user_col": user_col, "item_col": item_col, "rank_col": rank_col if score_col is None else None,
             "score_col": score_col, "relevance_col": relevance_col, "feature_col": feature_col,
             "value_col": value_col}
    _inputs.check_roles({role: name for role, name in roles.items() if name is not None})


def relation_names(prefix: str, schema: str | None, dialect: str) -> dict:
    """Rendered names of the relations the script reads and writes, as dialect-ready text."""
    _, exp = sqlglot_api()
    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
        raise InvalidIdentifierError(
            f"prefix {prefix!r} is not a plain name start: letters, digits and _, not starting with a digit, "
            "at most 40 characters.", hint="E.g. prefix='rankwise_' or 'eval_'; put a schema in schema=.")
    where = identifier(schema, dialect, "schema", max_parts=2) if schema is not None else None
    out = {}
    for name in ("recommendations_input", "ground_truth_input", "recommendations", "ground_truth", "cutoffs",
                 "per_user"):
        session_scoped = dialect in TEMP_VIEWS and name != "per_user"  # a temporary view has no schema
        table = exp.Table(this=exp.to_identifier(prefix + name))
        if where is not None and not session_scoped:
            table.set("db", where.this.copy())
            table.set("catalog", where.args["db"].copy() if where.args.get("db") else None)
        out[name] = table.sql(dialect)
    return out


_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,40}\Z")


def queries(ks, convention, beta: float, dialect: str, names: dict, metrics=None, f_name: str = "fbeta"):
    """The per-user and summary SELECTs for ``dialect`` over relations ``names`` (logical -> rendered).

    ``f_name`` names the F-beta summary row (the engines' internal "fbeta"; the script's "f1", "f2").
    ``metrics`` (internal column names, None = all) prunes the summary to those metrics; returns
    (per_user_sql, summary_sql, the per-user columns a table must keep for that summary). The files
    are read on every call; the rendering is cached on their text and the arguments.
    """
    texts = tuple((_sql_files.sql_dir() / f"{name}.sql").read_text() for name in ("per_user", "summary"))
    return _queries(texts, resolve(convention), float(beta), dialect, tuple(names.items()),
                    None if metrics is None else tuple(metrics), f_name)


@lru_cache(maxsize=256)
def _queries(texts, conv, beta, dialect, names, metrics, f_name):
    # every stage switch on (computed=None): the dbt package's templates hold one per-user body for every
    # request, and a rendered script is what a user runs as is; only the DuckDB engine binds them per request
    per_user_sql, output = _per_user_query(texts[0], _values_key(texts[0], conv, beta, f_name), dialect, names)
    summary = _summary_tree(texts[1], _values_key(texts[1], conv, beta, f_name), dialect, names)
    if metrics is not None:
        summary = _prune_summary(summary, set(metrics))
    needed = {c.name for c in summary.find_all(sqlglot_api()[1].Column)}
    keep = [c for c in output if c in OUTPUT_COLUMNS or c in needed or (metrics is None or c in metrics)]
    return per_user_sql, generate(summary, dialect), keep


# The per-user SELECT does not depend on the metrics asked for (every stage switch on), nor does the
# summary before pruning, and each is a function of the values of the parameters its file uses (not of
# the whole convention, beta and F-beta row name): made once per (file text, those values, dialect,
# names) and shared, e.g. by the 37 one-metric scripts per dialect the dbt generator renders.


def _values_key(text: str, conv, beta: float, f_name: str) -> tuple:
    """The values :func:`shipped` binds in ``text``, as a cache key: (name, type, value), so that 1 and 1.0
    (an integer literal and a DOUBLE cast) do not share an entry."""
    values = _sql_files.bind(text, conv, beta, f_name=f_name)
    return tuple((k, type(v), v) for k, v in values.items())


@lru_cache(maxsize=64)
def _per_user_query(text, values, dialect, names):
    """(the per-user SELECT as ``dialect`` text, its output column names)."""
    tree = _bound_tree(text, "per_user", {k: v for k, _, v in values}, dialect, dict(names))
    return generate(tree, dialect), tuple(s.alias_or_name for s in tree.selects)


@lru_cache(maxsize=16)
def _summary_tree(text, values, dialect, names):
    """The summary's tree before pruning; shared by the callers, so read-only: :func:`_prune_summary`
    copies what it keeps and :func:`generate` copies before it writes."""
    return _bound_tree(text, "summary", {k: v for k, _, v in values}, dialect, dict(names))


def shared_ctes(query: str, dialect: str, prefix: str) -> tuple[list[tuple[str, str]], str]:
    """Split off the CTEs that ``query`` reads more than once, as ``[(prefix + name, SELECT)]`` in
    dependency order, and the query left reading them under those names. For engines that inline a
    CTE at every reference (Spark recomputes the summary's one aggregate once per UNION branch)."""
    sqlglot, exp = sqlglot_api()
    tree = sqlglot.parse_one(query, read=dialect)
    with_ = tree.args.get("with_")
    if with_ is None:
        return [], query
    reads = {}
    for table in tree.find_all(exp.Table):
        reads[table.name] = reads.get(table.name, 0) + 1
    shared = {cte.alias for cte in with_.expressions if reads.get(cte.alias, 0) > 1}
    if not shared:
        return [], query

    def rename(node):
        if isinstance(node, exp.Table) and not node.db and node.name in shared:
            new = exp.to_table(prefix + node.name)
            new.set("alias", node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name)))
            return new
        return node

    tree = tree.transform(rename)
    ctes = tree.args["with_"].expressions
    rest = [cte for cte in ctes if cte.alias not in shared]

    def standalone(body):  # a split CTE keeps the unshared CTEs it reads, directly or not
        needed, todo = set(), [body]
        while todo:
            for table in todo.pop().find_all(exp.Table):
                cte = next((c for c in rest if c.alias == table.name and not table.db), None)
                if cte is not None and cte.alias not in needed:
                    needed.add(cte.alias)
                    todo.append(cte.this)
        body = body.copy()
        if needed:
            body.set("with_", exp.With(expressions=[c.copy() for c in rest if c.alias in needed]))
        return body.sql(dialect)

    split = [(prefix + cte.alias, standalone(cte.this)) for cte in ctes if cte.alias in shared]
    tree.set("with_", exp.With(expressions=rest) if rest else None)
    return split, tree.sql(dialect)


def cutoffs_query(ks, dialect: str) -> str:
    """``SELECT k`` rows as UNION ALL (VALUES lists are not portable)."""
    return " UNION ALL ".join(f"SELECT CAST({int(k)} AS BIGINT) AS k" for k in ks) if dialect == "duckdb" else \
        generate(sqlglot_api()[0].parse_one(cutoffs_query(ks, "duckdb"), read="duckdb"), dialect)


# -- the shipped files, transformed ------------------------------------------------------------------


def parsed(text: str):
    """A copy of the syntax tree of a shipped file's ``text`` (DuckDB SQL, comments dropped); the file is
    parsed once per process (0.1 s for per_user.sql), each caller transforms its own copy."""
    return _parse_once(text).copy()


@lru_cache(maxsize=32)
def _parse_once(text: str):
    tree = sqlglot_api()[0].parse_one(text, read="duckdb")
    for node in tree.walk():
        node.comments = None
    return tree


def shipped(text: str, name: str, conv: Convention, beta: float, dialect: str, names: dict, f_name: str,
            computed=None):
    """Parse the text of ``sql/<name>.sql``, bind literals (the stage switches for the metric columns
    ``computed``, None = all), rename relations, adapt to ``dialect``."""
    values = _sql_files.bind(text, conv, beta, f_name=f_name, computed=computed)
    return _bound_tree(text, name, values, dialect, names)


def _bound_tree(text: str, name: str, values: dict, dialect: str, names: dict):
    """:func:`shipped` once the parameter values are bound: the tree depends on nothing else."""
    sqlglot, exp = sqlglot_api()
    tree = parsed(text)
    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}

    def rewrite(node):
        if isinstance(node, exp.Placeholder) and node.name in values:
            return literal_node(values[node.name])
        if isinstance(node, exp.Table) and not node.db and node.name not in ctes:
            if node.name not in names:
                raise RankwiseError(f"sql/{name}.sql reads an unknown relation {node.name!r}.",
                                    hint=f"The renderer knows: {', '.join(names)}.")
            new = exp.to_table(names[node.name], dialect=dialect)
            new.set("alias", node.args.get("alias"))
            return new
        return node

    tree = tree.transform(rewrite, copy=False)
    left = [p.name for p in tree.find_all(exp.Placeholder)]
    if left:
        raise RankwiseError(f"sql/{name}.sql has parameters with no value: {left}.",
                            hint="Add them to Convention.sql_parameters().")
    if dialect != "duckdb":
        tree = double_literals(tree)
    if dialect == "clickhouse":
        tree = _alias_qualified_projections(_inequality_joins_to_where(tree))
    if dialect == "bigquery":
        tree = _window_nulls_default(tree, dialect)
    return tree


def _window_nulls_default(tree, dialect: str):
    """BigQuery cannot say NULLS LAST in an aggregate window's ORDER BY; the shipped windows sort by
    rank and gain, never NULL there (empty-list rows do not join), so use the engine's own order."""
    sqlglot, exp = sqlglot_api()
    ordering = sqlglot.Dialect.get_or_raise(dialect).NULL_ORDERING
    for window in tree.find_all(exp.Window):
        for ordered in window.find_all(exp.Ordered):
            desc = bool(ordered.args.get("desc"))
            first = ordering == ("nulls_are_large" if desc else "nulls_are_small")
            ordered.set("nulls_first", first)
    return tree


def literal_node(value):
    """A parameter value as a literal: text quoted, booleans 0/1, non-integers as DOUBLE."""
    _, exp = sqlglot_api()
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, bool):
        return exp.Literal.number(int(value))
    if isinstance(value, int):
        return exp.Literal.number(value)
    if not math.isfinite(value):
        raise ParameterError(f"Parameter value {value!r} is not a finite number.")
    return exp.cast(exp.Literal.number(repr(float(value))), "DOUBLE")


def double_literals(tree):
    """``1.0`` is DECIMAL in Trino, Snowflake, Spark and PostgreSQL (``1.0 / 3`` = 0.3333333 in
    Snowflake): cast every non-integer literal to DOUBLE, which is what DuckDB computes with."""
    _, exp = sqlglot_api()

    def is_double(cast) -> bool:
        return isinstance(cast, exp.Cast) and cast.to.this == exp.DataType.Type.DOUBLE

    def rewrite(node):
        # a negative parameter (literal_node's CAST(-1.0 AS DOUBLE)) is a Neg around the number: already DOUBLE
        parent = node.parent
        if (isinstance(node, exp.Literal) and not node.is_string and re.search(r"[.eE]", node.this)
                and not is_double(parent) and not (isinstance(parent, exp.Neg) and is_double(parent.parent))):
            return exp.cast(node.copy(), "DOUBLE")
        return node

    return tree.transform(rewrite, copy=False)


def _inequality_joins_to_where(tree):
    """``JOIN t ON a <= b`` -> ``CROSS JOIN t ... WHERE a <= b`` (inner joins only; same rows)."""
    _, exp = sqlglot_api()
    for select in tree.find_all(exp.Select):
        for join in select.args.get("joins") or []:
            on = join.args.get("on")
            if on is None or join.side or join.kind not in ("", "INNER", None):
                continue
            if not any(isinstance(n, (exp.LT, exp.LTE, exp.GT, exp.GTE)) for n in on.walk()):
                continue
            join.set("on", None)
            join.set("kind", "CROSS")
            select.where(on.copy(), copy=False)
    return tree


def _alias_qualified_projections(tree):
    """``SELECT r.user_id`` -> ``SELECT r.user_id AS user_id``: ClickHouse names an unaliased
    qualified projection "r.user_id", so an outer ``j.user_id`` would not resolve."""
    _, exp = sqlglot_api()
    for select in tree.find_all(exp.Select):
        select.set("expressions", [
            exp.alias_(p, p.name) if isinstance(p, exp.Column) and p.table and not p.is_star else p for p in select.expressions])
    return tree


def _prune_summary(tree, metrics: set):
    """Keep the UNION ALL branches of the requested metrics; drop CTEs nothing reads any more."""
    _, exp = sqlglot_api()
    with_ = tree.args.get("with_") or tree.args.get("with")
    branches, stack = [], [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Union):
            stack += [node.right, node.left]
        else:
            branches.append(node)
    kept = [b for b in branches if _branch_metric(b) is None or internal_name(_branch_metric(b)) in metrics]
    if not kept:
        raise ParameterError("No summary rows for the requested metrics.")
    out = kept[0].copy()
    for branch in kept[1:]:
        out = exp.union(out, branch.copy(), distinct=False, copy=False)  # both are copies already
    if with_ is not None:
        used = {t.name for t in out.find_all(exp.Table)}
        read = {c.name for c in out.find_all(exp.Column)}
        ctes = [c.copy() for c in with_.expressions if c.alias in used]
        for cte in ctes:  # and the aggregates nothing reads any more (other metrics' columns)
            select = cte.this
            select.set("expressions", [p for p in select.expressions
                                       if isinstance(p, exp.Column) or p.alias_or_name in read])
        if ctes:
            out.set("with_" if "with_" in tree.args else "with", exp.With(expressions=ctes))
    return out


def _branch_metric(select):
    _, exp = sqlglot_api()
    for projection in select.expressions:
        if projection.alias_or_name == "metric" and isinstance(projection.this, exp.Literal):
            return projection.this.this
    return None


def ordered_summary(summary_sql: str, request, dialect: str) -> str:
    """The summary (already under the API's names: f1, f2, ...) in request order, then k."""
    sqlglot, exp = sqlglot_api()
    order = " ".join(f"WHEN s.metric = '{n}' THEN {j}" for j, n in enumerate(request.names))
    text = (f"SELECT s.metric AS metric, s.k, s.value, s.n_users FROM {BODY} AS s "
            f"ORDER BY CASE {order} END, s.k")
    return fill_body(sqlglot.parse_one(text, read="duckdb"), summary_sql, dialect)


# how a dialect stops a script with a message: its own error function, else a conversion of the
# message to an integer, which fails with the message in the error (a CAST for PostgreSQL, Snowflake,
# Redshift; toInt32 of a non-Nullable string for ClickHouse, where a Nullable conversion gives NULL)
_RAISE = {"duckdb": "error", "spark": "raise_error", "databricks": "raise_error", "bigquery": "ERROR",
          "trino": "fail", "clickhouse": "toInt32"}


def stop_on_failed_checks(checks_sql: str, tables: dict, dialect: str) -> str:
    """A SELECT over sql/checks.sql's rows (or sql/beyond_checks.sql's) that errors on the first one,
    with a message naming the problem (and so the input) first, as ClickHouse shows only the first ~70
    characters, then the rows and the tables (every entry of ``tables``, in its order); it returns no
    row when every check passes."""
    sqlglot, exp = sqlglot_api()
    c = exp.column
    message = exp.func("CONCAT",
        exp.Literal.string("rankwise: "), c("problem", "c"), exp.Literal.string(" ("),
        exp.cast(c("n_rows", "c"), "VARCHAR"), exp.Literal.string(" rows; e.g. user "),
        exp.func("COALESCE", c("example_user", "c"), exp.Literal.string("NULL")),
        exp.Literal.string(", item "), exp.func("COALESCE", c("example_item", "c"), exp.Literal.string("NULL")),
        exp.Literal.string(
            "; input check failed; tables: "
            + ", ".join(f"{key.replace('_truth', ' truth')} = {_short(str(table))}" for key, table in tables.items())
            + "; the rules are evaluate()'s, see the README)."))
    if dialect == "clickhouse":  # a function of a Nullable argument returns NULL instead of failing
        message = exp.Anonymous(this="assumeNotNull", expressions=[message])
    if dialect in _RAISE:
        stop = exp.Anonymous(this=_RAISE[dialect], expressions=[message])
    else:
        stop = exp.cast(message, "INT")
    guard = exp.select(exp.alias_(stop, "failed_check")).from_(exp.to_table(BODY).as_("c"))
    return fill_body(guard, checks_sql, dialect)


BODY = "rankwise_body_placeholder"


def fill_body(wrapper, body: str, dialect: str) -> str:
    """``wrapper`` (a query reading the placeholder table BODY) for ``dialect``, with ``body``, an already
    rendered query, in that table's place (no re-parse of the body). The placeholder is renamed until its
    name occurs once in the text: a caller's table name or query (in a check's message) or schema may
    hold the same text, and the body must not land there."""
    _, exp = sqlglot_api()
    name = BODY
    while True:
        tree = wrapper.copy()
        for table in tree.find_all(exp.Table):
            if table.name == BODY and not table.db:
                table.set("this", exp.to_identifier(name))
        text = generate(tree, dialect)
        found = text.count(name)
        if found == 1:
            break
        if found == 0:
            raise RankwiseError("internal: the rendered wrapper lost its placeholder.")
        name += "_"
    indented = "\n".join("  " + line for line in body.splitlines())
    return re.sub(rf"[`\"]?{name}[`\"]?", lambda _: f"(\n{indented}\n)", text, count=1)


# -- input views ------------------------------------------------------------------------------------


def source_of(table, dialect: str, what: str = "tables value"):
    """A table name or one SELECT/WITH query (see :func:`table_source`) as the FROM item ``src``."""
    source = table_source(table, dialect, what)
    return source.subquery("src") if isinstance(source, sqlglot_api()[1].Query) else source.as_("src")


_TABLE_HINT = ('Pass a table name (name, schema.name or catalog.schema.name; quote a part as the dialect '
               'quotes, e.g. "My Table" or `my-project`) or one SELECT/WITH query over tables; for anything '
               'else (a file, a table function, a UDF) create a view first and pass its name.')
_BARE = re.compile(r"[^\W\d]\w*\Z")  # an unquoted part: letters, digits, _ (not starting with a digit)
# Spark reads `csv.<path>` (and parquet., json., ...) as files: such a schema is not a table's
_SPARK_FILE_SOURCES = {"csv", "parquet", "json", "text", "orc", "avro", "binaryfile", "delta", "xml", "jdbc"}
_FILE_FUNCTIONS = ("ReadCSV", "ReadParquet", "ToFile", "NextValueFor")  # sqlglot-known side effects


def table_source(table, dialect: str, what: str = "tables value"):
    """``table`` as a sqlglot Table (an identifier) or Query (one SELECT/WITH), checked; else an error.

    Rule: a name has 1-3 dot-separated parts, each a plain word or quoted as the dialect quotes (the
    quotes are re-escaped on output, so ``"x""y"`` is the table x"y); no part may contain ``.``, ``/``,
    ``\\`` or control characters (DuckDB and Spark read such names as files). A query is exactly one
    SELECT/WITH statement whose FROM items are such names or subqueries: no table functions
    (``read_csv(...)``, ``query(...)``), no functions sqlglot does not know (UDFs, ``pg_read_file``,
    ``nextval``), no DDL/DML (also not in a CTE), no ``SELECT ... INTO``. Comments are dropped.
    """
    sqlglot, exp = sqlglot_api()
    if not isinstance(table, str) or not table.strip():
        raise ParameterError(f"{what}: expected a table name or a SELECT query as a string, got {table!r}.",
                             hint=_TABLE_HINT)
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(table)
    except sqlglot.errors.TokenError as error:
        raise InvalidIdentifierError(f"{what} {table!r} is neither a table name nor a query: it does not "
                                     f"tokenize in {dialect} ({error}).", hint=_TABLE_HINT) from error
    if tokens and tokens[0].token_type.name in ("SELECT", "WITH", "L_PAREN"):
        return _checked_query(table, dialect, what)
    return _identifier(tokens, table, dialect, what, max_parts=3)


def identifier(text, dialect: str, what: str, max_parts: int = 3):
    """A (dotted, optionally quoted) name as a sqlglot Table; the rule of :func:`table_source`."""
    sqlglot, _ = sqlglot_api()
    if not isinstance(text, str) or not text.strip():
        raise ParameterError(f"{what}: expected a name as a string, got {text!r}.", hint=_TABLE_HINT)
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(text)
    except sqlglot.errors.TokenError as error:
        raise InvalidIdentifierError(f"{what} {text!r} is not a name: it does not tokenize in {dialect}.",
                                     hint=_TABLE_HINT) from error
    return _identifier(tokens, text, dialect, what, max_parts)


def _identifier(tokens, text: str, dialect: str, what: str, max_parts: int):
    _, exp = sqlglot_api()
    parts, problem = [], None
    for i, token in enumerate(tokens):
        kind = token.token_type.name
        if token.comments:
            problem = "it contains a comment"
        elif i % 2 == 1:
            problem = None if kind == "DOT" else f"{token.text!r} where a '.' or the end was expected"
        elif kind == "IDENTIFIER":
            parts.append(exp.Identifier(this=token.text, quoted=True))
        elif kind == "VAR" and _BARE.fullmatch(token.text):
            parts.append(exp.Identifier(this=token.text, quoted=False))
        elif _BARE.fullmatch(token.text):
            problem = f"{token.text!r} is an SQL keyword (quote it as {dialect} quotes names)"
        else:
            problem = f"{token.text!r} is not a name part"
        if problem:
            break
    if not problem and (len(tokens) % 2 == 0 or not 1 <= len(parts) <= max_parts):
        problem = f"a name has 1 to {max_parts} dot-separated parts"
    if not problem:
        problem = _bad_parts(parts, dialect)
    if problem:
        raise InvalidIdentifierError(f"{what} {text!r} is not a {'table ' if max_parts == 3 else ''}name: {problem}.",
                                     hint=_TABLE_HINT)
    parts = [None] * (3 - len(parts)) + parts
    return exp.Table(this=parts[2], db=parts[1], catalog=parts[0])


def _bad_parts(parts, dialect: str) -> str | None:
    """Why these name parts are refused (None: fine)."""
    for part in parts:
        name = part.name
        if not name or re.search(r"[./\\\x00-\x1f\x7f]", name):
            return (f"part {name!r} is empty or contains '.', '/', '\\' or a control character "
                    "(DuckDB and Spark read such names as files)")
    if dialect in ("spark", "databricks") and len(parts) == 2 and parts[0].name.lower() in _SPARK_FILE_SOURCES:
        return f"Spark reads {parts[0].name}.<path> as a file"
    return None


def _checked_query(text: str, dialect: str, what: str):
    sqlglot, exp = sqlglot_api()

    def refuse(problem, error=None):
        raise ParameterError(f"{what} {_short(text)!r} is refused as a query: {problem}.",
                             hint="One SELECT or WITH ... SELECT over table names. " + _TABLE_HINT) from error

    try:
        statements = [s for s in sqlglot.parse(text, read=dialect) if s is not None]
    except sqlglot.errors.SqlglotError as error:
        refuse(f"it does not parse in {dialect} ({str(error).splitlines()[0]})", error)
    if len(statements) != 1:
        refuse(f"it holds {len(statements)} statements, not one")
    tree = statements[0]
    while isinstance(tree, exp.Subquery) and not tree.alias:  # (SELECT ...)
        tree = tree.this
    if not isinstance(tree, exp.Query) or not tree.selects:
        refuse(f"it is a {tree.key.upper()} statement, not a SELECT of columns")
    for node in tree.walk():
        node.comments = None
        if isinstance(node, (exp.DDL, exp.DML, exp.Command, exp.Into, exp.Copy, exp.Set, exp.Pragma)):
            refuse(f"it contains {node.key.upper()} ({_short(node.sql(dialect))})")
        if isinstance(node, exp.Anonymous) or type(node).__name__ in _FILE_FUNCTIONS:
            refuse(f"it calls {node.sql_name() if not isinstance(node, exp.Anonymous) else node.name}(...), "
                   "a function rankwise does not know to be free of side effects (files, sequences, UDFs)")
        if isinstance(node, exp.Table):
            if not isinstance(node.this, exp.Identifier):
                refuse(f"it reads {_short(node.this.sql(dialect))}, which is not a table name (a table function "
                       "or a file)")
            problem = _bad_parts([p for p in (node.args.get("catalog"), node.args.get("db"), node.this) if p], dialect)
            if problem:
                refuse(f"table {_short(node.sql(dialect))}: {problem}")
    return tree


def _short(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[:n - 3] + "..."


_PLAIN_COLUMN = re.compile(r"[a-z_][a-z0-9_]*\Z")


def quoted_column(name: str):
    """``src.<name>``, the one quoting rule for a caller's column: a plain lower-case word unquoted, so
    each engine resolves it as it resolves the caller's own unquoted SQL (Snowflake reads ``item_id`` as
    ITEM_ID, PostgreSQL as item_id); any other name quoted, so it is matched exactly ("User", "item id")."""
    exp = sqlglot_api()[1]
    return exp.column(exp.to_identifier(name, quoted=not _PLAIN_COLUMN.fullmatch(name)), table="src")


def recommendations_view(table, dialect, user_col, item_col, rank_col, score_col, conv: Convention,
                          with_score: bool = False, keep_score: str | None = None):
    """(user_id, rank, item_id) with ranks renumbered 1..n per user, as in rankwise.inputs.normalize, sorted by
    the numbers sql/checks.sql checks (a text rank or score cast, so '10' comes after '2'); with
    ``with_score``, also the score of the kept row: ``score_col`` when ranking by it (under first_shift
    an item keeps its first, so highest, score), else ``keep_score`` (a column carried along while
    ranking by ``rank_col``: evaluate()'s canonical rows, no item repeated), else NULL."""
    _, exp = sqlglot_api()
    user, item = quoted_column(user_col), quoted_column(item_col)
    if conv.min_score is not None:
        raise UnsupportedSQLError(
            f"convention min_score={conv.min_score} is not rendered in SQL (a user whose every item it drops "
            "must stay, with an empty list).",
            hint="Filter the recommendations first (a SELECT ... WHERE score >= ... as the table) and render "
                 "with min_score=None, or evaluate() in Python.")
    if score_col is not None:
        if conv.ties == "input_order":
            raise UnsupportedSQLError(
                "convention ties='input_order' cannot be expressed in SQL: a table has no row order.",
                hint="Rank by a rank column (rank_col=...), or use ties='item_asc' / 'item_desc'.")
        order = [exp.Ordered(this=exp.cast(quoted_column(score_col), "DOUBLE"), desc=True),
                 exp.Ordered(this=item, desc=conv.ties == "item_desc")]
    elif rank_col is not None:
        order = [exp.Ordered(this=exp.cast(quoted_column(rank_col), "BIGINT")), exp.Ordered(this=item)]
    else:
        raise ParameterError("rank_col and score_col are both None.", hint="Name the column ranks come from.")
    position = exp.Window(this=exp.RowNumber(), partition_by=[user.copy()], order=exp.Order(expressions=order))
    carried = score_col if score_col is not None else keep_score
    score = exp.cast(quoted_column(carried) if carried is not None else exp.Null(), "DOUBLE")
    inner = exp.select(
        exp.alias_(user, "user_id"),
        exp.alias_(exp.cast(position, "BIGINT"), "pos"),
        exp.alias_(item, "item_id"),
        *([exp.alias_(score, "score")] if with_score else []),
    ).from_(source_of(table, dialect))
    if conv.duplicates == "first_shift":  # keep each item's first position, close the gap
        inner = exp.select("d.user_id", exp.alias_(exp.Min(this=exp.column("pos", "d")), "pos"), "d.item_id",
                           *([exp.alias_(exp.Max(this=exp.column("score", "d")), "score")] if with_score else [])) \
            .from_(inner.subquery("d")).group_by("d.user_id", "d.item_id")
    renumber = exp.Window(this=exp.RowNumber(), partition_by=[exp.column("user_id", "r")],
                          order=exp.Order(expressions=[exp.Ordered(this=exp.column("pos", "r"))]))
    return exp.select(
        "r.user_id", exp.alias_(exp.cast(renumber, "BIGINT"), "rank"), "r.item_id",
        *(["r.score"] if with_score else []),
    ).from_(inner.subquery("r"))


def ground_truth_view(table, dialect, user_col, item_col, relevance_col):
    """(user_id, item_id, relevance DOUBLE); relevance 1 when there is no relevance column."""
    _, exp = sqlglot_api()
    item = quoted_column(item_col)
    if relevance_col is None:
        relevance = exp.Case().when(exp.Is(this=item.copy(), expression=exp.Null()), exp.cast(exp.Null(), "DOUBLE")) \
            .else_(exp.cast(exp.Literal.number(1), "DOUBLE"))
    else:
        relevance = exp.cast(quoted_column(relevance_col), "DOUBLE")
    return exp.select(exp.alias_(quoted_column(user_col), "user_id"), exp.alias_(item, "item_id"),
                      exp.alias_(relevance, "relevance")).from_(source_of(table, dialect))


def view_statements(name: str, query, dialect: str) -> list[str]:
    """DROP + CREATE VIEW, TEMPORARY where views can be session-scoped (not OR REPLACE: PostgreSQL
    refuses to replace a view whose column types change, e.g. integer ids then string ids)."""
    body = query if isinstance(query, str) else generate(query, dialect)
    temporary = dialect in TEMP_VIEWS
    return [drop_statement("VIEW", name, dialect, temporary), f"CREATE {'TEMPORARY ' if temporary else ''}VIEW {name} AS\n{body}"]


def drop_statement(kind: str, name: str, dialect: str, temporary: bool) -> str:
    """DROP VIEW/TABLE IF EXISTS of the script's own object: a temporary one named in the dialect's
    temporary schema (see _TEMP_SCHEMA), so that a caller's persistent one of the same name stays."""
    schema = _TEMP_SCHEMA.get(dialect) if temporary else None
    return f"DROP {kind} IF EXISTS {schema + '.' if schema else ''}{name}"


# -- helpers -----------------------------------------------------------------------------------------


def generate(tree, dialect: str) -> str:
    """sqlglot output, raising (not warning) on anything the dialect cannot express."""
    sqlglot, _ = sqlglot_api()
    try:
        return tree.sql(dialect=dialect, pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)
    except sqlglot.errors.UnsupportedError as error:
        raise UnsupportedSQLError(f"sqlglot cannot express this in {dialect}: {error}",
                                  hint="This is a declared gap; see rankwise.sqlgen.render.GAPS.") from error


def table_node(name: str, dialect: str):
    return sqlglot_api()[1].to_table(name, dialect=dialect)


def check_dialect(dialect: str) -> str:
    if dialect not in DIALECTS:
        raise ParameterError(f"Unknown dialect {dialect!r}.", hint=f"Use one of: {', '.join(DIALECTS)}.")
    return dialect


def sqlglot_api():
    try:
        import sqlglot
        from sqlglot import exp
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise MissingDependencyError("Rendering SQL needs sqlglot.",
                                     hint='pip install "rankwise[engines]"  (or: pip install "sqlglot>=30")') from error
    return sqlglot, exp


def version() -> str:
    from rankwise._version import __version__

    return __version__
