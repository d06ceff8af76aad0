"""``rankwise.sql``: the shipped ``sql/*.sql`` rendered by sqlglot into one script for any engine.

There is no second hand-written copy of the SQL: the files are read and parsed (DuckDB dialect) at
call time, every ``$name`` parameter becomes a literal, relation names get a prefix, and sqlglot
writes the target dialect. A few rewrites are applied on the syntax tree, each for a reason that is
stated where it is done (decimal literals, inequality joins on ClickHouse, engine clauses).

A script is, in order:
1. the canonical input views ``<prefix>recommendations(user_id, rank, item_id)`` and
   ``<prefix>ground_truth(user_id, item_id, relevance)`` over the caller's ``tables``, ranks
   renumbered 1..n per user (from a rank or a score column), and ``<prefix>cutoffs(k)``;
2. ``<prefix>per_user``, a table with one row per (user, k): user_id, k, n_recs, n_rel and the
   requested metric columns (NULL = undefined);
3. a final SELECT: the summary (metric, k, value, n_users), the API's ``Result.summary``.

What an engine cannot express is declared in :data:`GAPS` and raises :class:`UnsupportedSQLError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rankwise.metrics import beyond as _beyond_spec

from rankwise.sqlgen import checks as _checks

from rankwise.sqlgen import beyond as _render_beyond
from rankwise.sqlgen.core import (DIALECTS, GAPS, INPUTS, OUTPUT_COLUMNS, Gap, check_roles, cutoffs_query, identifier,
                      queries, relation_names, shared_ctes, table_source)
from rankwise.sqlgen.core import (BODY, check_dialect, fill_body, ground_truth_view, ordered_summary, recommendations_view,
                      sqlglot_api, stop_on_failed_checks, table_node, version, view_statements)
from rankwise.conventions import Convention, resolve
from rankwise.errors import ParameterError, UnsupportedSQLError
from rankwise.metrics.declarations import check_cutoffs, internal_name, parse_request

# the public names of the module (rankwise.sqlgen.render.DIALECTS, GAPS, ...) live in _sqlgen, shared with the engines
__all__ = ["DIALECTS", "GAPS", "Gap", "INPUTS", "OUTPUT_COLUMNS", "Script", "check_roles", "cutoffs_query",
           "identifier", "queries", "relation_names", "render", "shared_ctes", "sql", "table_source"]


@dataclass(frozen=True)
class Script:
    """A rendered script: setup statements, the per-user SELECT, the summary SELECT."""

    dialect: str
    setup: tuple[str, ...]
    per_user: str
    summary: str
    names: dict = field(default_factory=dict)  # logical name -> rendered relation name
    create_per_user: tuple[str, ...] = ()  # DROP TABLE IF EXISTS, CREATE TABLE AS
    check: str = ""  # fails, naming the problem, when an input breaks a rule of sql/checks.sql

    def statements(self) -> list[str]:
        """Every statement in execution order (no trailing semicolons): the input views, the old
        per-user table dropped, the input checks (a failure stops the script there, before any metric
        is written), the per-user table, the summary."""
        drop, create = self.create_per_user
        return [*self.setup, drop, self.check, create, self.summary]

    def text(self) -> str:
        """The whole script, statements separated by ``;`` and a blank line."""
        header = (f"-- rankwise {version()}: per-user ranking metrics and their summary, dialect {self.dialect}.\n"
                  f"-- Rendered by sqlglot from the shipped sql/checks.sql, sql/per_user.sql and sql/summary.sql.\n")
        return header + ";\n\n".join(self.statements()) + ";\n"


def sql(metrics=None, k=10, convention: str | Convention = "default", dialect: str = "duckdb",
        tables: dict | None = None, *, user_col: str = "user", item_col: str = "item",
        rank_col: str | None = "rank", score_col: str | None = None,
        relevance_col: str | None = "relevance", feature_col: str = "feature", value_col: str | None = "value",
        schema: str | None = None, prefix: str = "rankwise_") -> str:
    """One self-contained SQL script for ``dialect`` computing the per-user table and the summary.

    Beyond-accuracy names in ``metrics`` (``rankwise.BEYOND_METRICS``) add their script
    (:func:`rankwise.sqlgen.beyond.render_beyond`: ``tables`` may also name "train", "items" and
    "item_features", long rows of ``feature_col`` and ``value_col``; value_col=None: every row a
    feature of value 1, as evaluate() reads a table without one); with only those, the script is
    theirs alone.

    ``tables`` maps "recommendations" and "ground_truth" to a table name (as the engine spells it,
    e.g. "db.schema.recs") or to a query ("SELECT ..."); default: tables of those names. Ranks come
    from ``rank_col`` (renumbered 1..n per user) or, when ``score_col`` is given, from scores
    (descending, ties by the convention's ``ties`` rule). Without ``relevance_col`` every label has
    relevance 1. Parameters are literals, so the script runs as is.

    >>> script = sql(metrics=["precision"], k=5, dialect="postgres")
    >>> "CREATE TABLE rankwise_per_user AS" in script, script.rstrip().endswith("s.k;")
    (True, True)
    """
    names = [metrics] if isinstance(metrics, str) else (None if metrics is None else list(metrics))
    beyond = [n for n in names or () if n in _beyond_spec.METRICS]
    accuracy = None if names is None else [n for n in names if n not in beyond]
    side = {"train", "items", "item_features"}
    parts = []
    if accuracy is None or accuracy:
        acc_tables = None if tables is None else {key: v for key, v in tables.items() if key not in side}
        parts.append(render(accuracy, k, convention, dialect, acc_tables, user_col=user_col, item_col=item_col,
                            rank_col=rank_col, score_col=score_col, relevance_col=relevance_col, schema=schema,
                            prefix=prefix).text())
    if beyond:
        beyond_tables = {"recommendations": "recommendations", **(tables or {})}
        parts.append(_render_beyond.render_beyond(
            beyond, k, convention, dialect, beyond_tables, user_col=user_col, item_col=item_col, rank_col=rank_col,
            score_col=score_col, relevance_col=relevance_col, feature_col=feature_col, value_col=value_col,
            schema=schema, prefix=prefix).text())
    return "\n".join(parts)


def render(metrics=None, k=10, convention: str | Convention = "default", dialect: str = "duckdb",
           tables: dict | None = None, *, user_col: str = "user", item_col: str = "item",
           rank_col: str | None = "rank", score_col: str | None = None,
           relevance_col: str | None = "relevance", schema: str | None = None,
           prefix: str = "rankwise_") -> Script:
    """The :class:`Script` behind :func:`sql` (statements kept apart, for drivers that run one at a time)."""
    sqlglot, exp = sqlglot_api()
    dialect = check_dialect(dialect)
    check_roles(user_col, item_col, rank_col, score_col, relevance_col)
    conv = resolve(convention)
    # a preset's metrics only, as evaluate(): metrics=None is those its library has, another is an error
    request = parse_request(metrics, k, conv.metrics, conv.name)
    check_cutoffs(conv, request.ks, request.names)
    for knob in ("empty_labels", "empty_predictions"):
        if getattr(conv, knob) == "error":
            raise UnsupportedSQLError(
                f"convention {knob}='error' cannot be expressed in SQL (an engine cannot raise portably).",
                hint=f"Use evaluate() for 'error', or choose a value: convention.replace({knob}='nan').")
    tables = {"recommendations": "recommendations", "ground_truth": "ground_truth", **(tables or {})}
    unknown = set(tables) - set(INPUTS)
    if unknown:
        raise ParameterError(f"tables has unknown keys {sorted(unknown)}.", hint="Keys: recommendations, ground_truth.")
    for key, table in tables.items():  # checked here to name the key in the error
        table_source(table, dialect, f"tables[{key!r}]")
    names = relation_names(prefix, schema, dialect)
    wanted = [internal_name(n) for n in request.names]
    f_name = next((n for n in request.names if internal_name(n) == "fbeta"), f"f{request.beta:g}")
    per_user_sql, summary_sql, per_user_cols = queries(request.ks, conv, request.beta, dialect, names, wanted, f_name)
    by_score = score_col is not None
    raw = _checks.raw_views(tables, dialect, user_col, item_col, None if by_score else rank_col, score_col,
                            relevance_col)
    setup = [
        *view_statements(names["recommendations_input"], raw["recommendations_input"], dialect),
        *view_statements(names["ground_truth_input"], raw["ground_truth_input"], dialect),
        *view_statements(names["recommendations"], recommendations_view(
            tables["recommendations"], dialect, user_col, item_col, rank_col, score_col, conv), dialect),
        *view_statements(names["ground_truth"], ground_truth_view(
            tables["ground_truth"], dialect, user_col, item_col, relevance_col), dialect),
        *view_statements(names["cutoffs"], cutoffs_query(request.ks, dialect), dialect),
    ]
    selected = exp.select(*(exp.column(c, table="p") for c in per_user_cols)).from_(exp.to_table(BODY).as_("p"))
    create = exp.Create(this=table_node(names["per_user"], dialect), kind="TABLE", expression=selected)
    if dialect == "clickhouse":  # CREATE TABLE ... AS SELECT needs an engine there
        create.set("properties", exp.Properties(expressions=[
            exp.EngineProperty(this=exp.to_identifier("MergeTree")),
            exp.Order(expressions=[exp.Ordered(this=exp.Tuple(expressions=[]))])]))
    create_per_user = (f"DROP TABLE IF EXISTS {table_node(names['per_user'], dialect).sql(dialect)}",
                       fill_body(create, per_user_sql, dialect))
    final = ordered_summary(summary_sql, request, dialect)
    check = stop_on_failed_checks(_checks.checks_query(conv, by_score, dialect, names, null_item_marks_empty=True), tables, dialect)
    return Script(dialect, tuple(setup), per_user_sql, final, names, create_per_user, check)
