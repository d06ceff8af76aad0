"""The exact input checks as shipped SQL (``sql/checks.sql``), rendered for any dialect, and the
canonical input views an engine builds over the caller's own tables once they pass.

Used where the inputs never reach Python (Spark DataFrames evaluated in Spark); the rules are those
of :mod:`rankwise.inputs.normalize`, which raises the same codes as typed errors.
"""

from __future__ import annotations

from functools import lru_cache

import polars as pl

from rankwise.sqlgen import files as _sql_files

from rankwise.sqlgen import core as _sqlgen
from rankwise.conventions import Convention
from rankwise.errors import (DuplicateItemError, DuplicateRankError, InputError, InvalidRankError, InvalidRelevanceError,
                     InvalidScoreError, NullValueError)


def checks_query(conv: Convention, by_score: bool, dialect: str, names: dict,
                 null_item_marks_empty: bool = False, file: str = "checks") -> str:
    """sql/checks.sql for ``dialect`` over ``names`` (recommendations_input, ground_truth_input);
    ``file="beyond_checks"``: sql/beyond_checks.sql over train, items and item_features."""
    text = _sql_files.read(file)
    values = {"by_score": int(by_score), "duplicates": conv.duplicates, "negative_relevance": conv.sql_parameters()["negative_relevance"],
              "null_item_marks_empty": int(null_item_marks_empty)}
    # (name, type, value): 1 and 1.0 are different literals
    return _checks_query(text, tuple((k, type(v), v) for k, v in values.items()), dialect, tuple(names.items()))


@lru_cache(maxsize=64)
def _checks_query(text: str, values: tuple, dialect: str, names: tuple) -> str:
    """:func:`checks_query`'s text, made once per (file text, parameter values, dialect, names)."""
    values, names = {k: v for k, _, v in values}, dict(names)
    _, exp = _sqlgen.sqlglot_api()
    tree = _sqlgen.parsed(text)
    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}

    def rewrite(node):
        if isinstance(node, exp.Placeholder):
            return _sqlgen.literal_node(values[node.name])
        if isinstance(node, exp.Table) and not node.db and node.name not in ctes:
            new = exp.to_table(names[node.name], dialect=dialect)
            new.set("alias", node.args.get("alias"))
            return new
        return node

    for node in tree.walk():
        node.comments = None
    tree = tree.transform(rewrite, copy=False)
    return _sqlgen.generate(tree if dialect == "duckdb" else _sqlgen.double_literals(tree), dialect)


def input_views(source: dict, dialect: str, user_col: str, item_col: str, rank_col: str | None,
                score_col: str | None, relevance_col: str | None, conv: Convention) -> dict:
    """{"recommendations": SELECT, "ground_truth": SELECT}: the canonical views over ``source`` tables
    (ranks renumbered 1..n per user, from ranks or scores by the ``ties`` rule; ``duplicates``)."""
    recs = _sqlgen.recommendations_view(source["recommendations"], dialect, user_col, item_col, rank_col,
                                        score_col, conv)
    truth = _sqlgen.ground_truth_view(source["ground_truth"], dialect, user_col, item_col, relevance_col)
    return {"recommendations": _sqlgen.generate(recs, dialect), "ground_truth": _sqlgen.generate(truth, dialect)}


def raw_views(source: dict, dialect: str, user_col: str, item_col: str, rank_col: str | None,
              score_col: str | None, relevance_col: str | None) -> dict:
    """{"recommendations_input": SELECT, "ground_truth_input": SELECT}: the caller's rows under the
    names sql/checks.sql reads (``source`` values: a table name or a SELECT, as ``rankwise.sql`` takes)."""
    _, exp = _sqlgen.sqlglot_api()

    def col(name, to=None):
        if name is None:
            return exp.cast(exp.Null(), to)
        column = _sqlgen.quoted_column(name)
        return exp.cast(column, to) if to else column

    recs = exp.select(
        exp.alias_(col(user_col), "user_id"), exp.alias_(col(item_col), "item_id"),
        # the rank as DOUBLE: a fractional rank reaches sql/checks.sql as it is (a BIGINT cast would round it)
        exp.alias_(col(rank_col, "DOUBLE"), "position"), exp.alias_(col(score_col, "DOUBLE"), "score"),
    ).from_(_sqlgen.source_of(source["recommendations"], dialect))
    relevance = col(relevance_col, "DOUBLE") if relevance_col else exp.cast(exp.Literal.number(1), "DOUBLE")
    truth = exp.select(
        exp.alias_(col(user_col), "user_id"), exp.alias_(col(item_col), "item_id"), exp.alias_(relevance, "relevance"),
    ).from_(_sqlgen.source_of(source["ground_truth"], dialect))
    return {"recommendations_input": _sqlgen.generate(recs, dialect),
            "ground_truth_input": _sqlgen.generate(truth, dialect)}


_CHECK_ERRORS = {"null_value": NullValueError, "invalid_rank": InvalidRankError, "duplicate_rank": DuplicateRankError,
                 "invalid_score": InvalidScoreError, "duplicate_item": DuplicateItemError,
                 "invalid_relevance": InvalidRelevanceError, "invalid_value": InputError}


def raise_on_failed_checks(problems: pl.DataFrame) -> None:
    """The rows of sql/checks.sql as the typed error of the first failed check (all of them shown)."""
    if problems.height:
        first = problems.row(0, named=True)
        raise _CHECK_ERRORS[first["code"]](
            f"{first['problem']} ({first['n_rows']} rows; e.g. user {first['example_user']}, "
            f"item {first['example_item']}).",
            rows=problems.select("problem", "n_rows", "example_user", "example_item"),
            hint="The same rule as evaluate() on any other input: fix the table (see the README's input "
                 "rules), or choose a convention that allows it (duplicates='first_shift').")
