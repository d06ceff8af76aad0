"""The metric registry is the one list: the shipped SQL, both engines, presets, docs and the oracle
agree with it (adding a metric touches: its declaration in rankwise.metrics with its expression in
rankwise._expressions, sql/per_user.sql, sql/summary.sql, tests/oracle.py; these tests say which of
them is missing)."""

from __future__ import annotations

import polars as pl
import sqlglot
from sqlglot import exp

import oracle
import rankwise
from rankwise import _sql_files
from rankwise.metrics import KNOBS_BY_METRIC, REGISTRY, USER_LEVEL

PER_USER_KEYS = ["user_id", "k", "n_recs", "n_rel"]


def _tree(name: str):
    return sqlglot.parse_one(_sql_files.read(name), read="duckdb")


def test_per_user_sql_returns_the_registry_columns_each_under_the_empty_rules():
    select = _tree("per_user")
    names = [p.alias_or_name for p in select.expressions]
    assert names == PER_USER_KEYS + list(USER_LEVEL)
    # every metric column is the same empty-input rule around the metric's defined value
    for projection in select.expressions[len(PER_USER_KEYS):]:
        rule = sqlglot.parse_one("CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 "
                                 f"THEN e.no_predictions ELSE f.x END", read="duckdb")
        rule.args["default"].set("this", exp.to_identifier(projection.alias))
        assert projection.this == rule, projection.sql("duckdb")


def _branches(tree):
    out, stack = [], [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Union):
            stack += [node.right, node.left]
        else:
            out.append(node)
    return out


def test_summary_sql_has_one_branch_per_user_level_metric():
    metrics = []
    for branch in _branches(_tree("summary")):
        metric = next(p for p in branch.expressions if p.alias_or_name == "metric").this
        # F-beta's row is named by a parameter (f1, f2, ...): it is the fbeta branch
        metrics.append("fbeta" if isinstance(metric, exp.Placeholder) else metric.this)
    assert metrics == list(USER_LEVEL)


def test_engines_return_the_registry_columns(backend):
    recs = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "rank": [1, 2, 1]})
    truth = pl.DataFrame({"user": [1, 2], "item": [11, 12]})
    res = rankwise.evaluate(recs, truth, k=[1, 2], backend=backend)
    assert res.per_user.columns == ["user"] + [f"{m}@{k}" for m in rankwise.METRICS for k in (1, 2)]
    assert res.summary["metric"].unique(maintain_order=True).to_list() == list(rankwise.METRICS)


def test_everything_else_derives_from_the_registry():
    assert [m.public_name for m in REGISTRY] == list(rankwise.METRICS)
    assert set(KNOBS_BY_METRIC) == set(USER_LEVEL)
    knobs = set(rankwise.Convention().knobs())
    for metric in REGISTRY:
        assert set(metric.knobs) <= knobs, metric.name
        assert metric.level in ("user", "catalog") and metric.formula and metric.title
    for preset in rankwise.PRESETS.values():
        assert set(preset.metrics) <= set(USER_LEVEL), preset.name
    assert rankwise.PRESETS["default"].metrics == USER_LEVEL


def test_oracle_computes_every_registry_metric():
    conv = rankwise.Convention()
    values = oracle.user_metrics([10, 11], {11: 1.0}, 2, conv)
    assert tuple(values) == USER_LEVEL
    assert tuple(oracle.METRICS) == USER_LEVEL
