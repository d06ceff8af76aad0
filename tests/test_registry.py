"""The metric registry is the one list: the shipped SQL, both engines, presets, docs and the oracle
agree with it (adding a metric touches: its declaration in rankwise.metrics.declarations with its expression in
rankwise._expressions, sql/per_user.sql, sql/summary.sql, tests/oracle.py; these tests say which of
them is missing)."""

from __future__ import annotations

import polars as pl
import sqlglot
from sqlglot import exp

import oracle
import rankwise
from rankwise.sqlgen import files as _sql_files
from rankwise.metrics.declarations import KNOBS_BY_METRIC, REGISTRY, USER_LEVEL

PER_USER_KEYS = ["user_id", "k", "n_recs", "n_rel"]


def _tree(name: str):
    return sqlglot.parse_one(_sql_files.read(name), read="duckdb")


def test_per_user_sql_returns_the_registry_columns_each_under_the_empty_rules():
    select = _tree("per_user")
    names = [p.alias_or_name for p in select.expressions]
    assert names == PER_USER_KEYS + list(USER_LEVEL)
    # every metric column is the same empty-input rule around the metric's defined value (a count, whose
    # declaration says the empty rules do not apply, is its value)
    from rankwise.metrics.declarations import BY_NAME

    for projection in select.expressions[len(PER_USER_KEYS):]:
        if not BY_NAME[projection.alias].empty_rules:
            assert projection.this == exp.column(projection.alias, table="f"), projection.sql("duckdb")
            continue
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
    res = rankwise.evaluate(recs, truth, k=[1, 2], backend=backend, metrics="all")
    assert res.per_user.columns == ["user"] + [f"{m}@{k}" for m in rankwise.METRICS for k in (1, 2)]
    assert res.summary["metric"].unique(maintain_order=True).to_list() == list(rankwise.METRICS)
    # metrics=None: the usual ranking metrics, in registry order; a preset without them: all it has
    usual = rankwise.evaluate(recs, truth, k=[1, 2], backend=backend)
    assert usual.summary["metric"].unique(maintain_order=True).to_list() == list(rankwise.DEFAULT_METRICS)
    assert set(rankwise.DEFAULT_METRICS) < set(rankwise.METRICS)
    assert rankwise.evaluate(recs, truth, k=1, backend=backend, convention="kaggle").summary["metric"].to_list() == ["map"]


def test_everything_else_derives_from_the_registry():
    assert [m.public_name for m in REGISTRY] == list(rankwise.METRICS)
    assert set(KNOBS_BY_METRIC) == set(USER_LEVEL) | set(rankwise.BEYOND_METRICS)
    knobs = set(rankwise.Convention().knobs())
    for metric in REGISTRY:
        assert set(metric.knobs) <= knobs, metric.name
        assert metric.level in ("user", "catalog") and metric.formula and metric.title
    every = USER_LEVEL + tuple(rankwise.BEYOND_METRICS)  # a preset's metrics: accuracy, then beyond accuracy
    for preset in rankwise.PRESETS.values():
        assert set(preset.metrics) <= set(every), preset.name
        accuracy = [m for m in preset.metrics if m in USER_LEVEL]
        assert list(preset.metrics[:len(accuracy)]) == accuracy, preset.name
    assert rankwise.PRESETS["default"].metrics == every


def test_oracle_computes_every_registry_metric():
    conv = rankwise.Convention()
    values = oracle.user_metrics([10, 11], {11: 1.0}, 2, conv)
    assert tuple(values) == USER_LEVEL
    assert tuple(oracle.METRICS) == USER_LEVEL


def _beyond_inputs():
    """Random lists (1-9 items, some cold, some without features or outside the catalog), train, catalog,
    embeddings, graded truth, scores."""
    import numpy as np

    rng = np.random.default_rng(3)
    rows = [(u, r + 1, int(i), float(rng.normal())) for u in range(40)
            for r, i in enumerate(rng.choice(60, size=int(rng.integers(1, 10)), replace=False))]
    recs = pl.DataFrame(rows, schema=["user", "rank", "item", "score"], orient="row")
    train = pl.DataFrame({"user": rng.integers(0, 30, 300), "item": rng.integers(0, 50, 300)})  # 50-59 cold
    train = pl.concat([train, train.filter(pl.col("item") < 10)])  # items 0-9 seen twice: rows != users
    truth = pl.DataFrame({"user": rng.integers(0, 40, 120), "item": rng.integers(0, 60, 120)}).unique(maintain_order=True)
    truth = truth.with_columns(relevance=pl.Series(rng.integers(0, 3, truth.height)).cast(pl.Float64))
    features = pl.DataFrame({"item": range(54), "embedding": rng.normal(size=(54, 3)).tolist()})
    return dict(recommendations=recs, ground_truth=truth, train=train, items=list(range(2, 56)),  # 56-59 outside
                item_features=features)


def test_each_beyond_metric_moves_only_with_its_declared_knobs():
    """explain() attributes a gap only to the knobs a metric declares: every other value of every other
    beyond-accuracy knob leaves the metric unchanged, and each declared knob with a second value moves it on
    these data."""
    import math

    from rankwise.metrics.declarations import BEYOND

    inputs, ks = _beyond_inputs(), [3, 8]
    names = [m.name for m in BEYOND]

    def values(conv):
        res = rankwise.evaluate(**inputs, k=ks, metrics=names, convention=conv)
        return {(m, k): v for m, k, v in res.summary.select("metric", "k", "value").iter_rows()}

    base = values(rankwise.Convention())
    docs = rankwise.knob_documentation()
    alternatives = {"info_log_base": [math.e], "long_tail_ratio": [0.5, 3], "catalog_padding": [1],
                    "relevance_threshold": [1.5]}
    knobs = sorted({kn for m in BEYOND for kn in m.knobs})
    moved = {m.name: set() for m in BEYOND}
    for knob in knobs:
        default = getattr(rankwise.Convention(), knob)
        for value in alternatives.get(knob) or [v for v in docs[knob][0] if v != default]:
            got = values(rankwise.Convention(**{knob: value}))
            for (metric, k), v in got.items():
                same = (math.isnan(v) and math.isnan(base[metric, k])) or abs(v - base[metric, k]) <= 1e-12
                if not same:
                    moved[metric].add(knob)
                    assert knob in KNOBS_BY_METRIC[metric], (metric, k, knob, value, base[metric, k], v)
    for m in BEYOND:
        single = {kn for kn in m.knobs if isinstance(docs[kn][0], tuple) and len(docs[kn][0]) == 1}
        assert set(m.knobs) - single <= moved[m.name], (m.name, set(m.knobs) - single - moved[m.name])


def test_spark_stats_keep_the_user_rule_of_per_user_sql():
    """Which users are evaluated ($users, $unjudged) is per_user.sql's `universe` rule; the Spark path
    (sql/spark_user_stats.sql, over per-user arrays with the same all_users columns) repeats its WHERE
    clause, which must stay the same."""
    def rule(name: str, dialect: str) -> str:
        tree = sqlglot.parse_one(_sql_files.read(name), read=dialect)
        universe = next(cte for cte in tree.find_all(exp.CTE) if cte.alias == "universe")
        where = universe.this.args["where"]
        for param in list(where.find_all(exp.Placeholder, exp.Parameter)):  # :users (duckdb), @users (spark)
            param.replace(exp.var("$" + param.name))
        return where.sql("duckdb")

    assert rule("spark_user_stats", "spark") == rule("per_user", "duckdb")


def test_each_optional_stage_runs_only_for_the_metrics_that_read_it():
    """per_user.sql's stage switches, by hand: Rndcg's sum over the R levels is its own stage on top of the gain
    stage (G, binG, ndcg_rel and rbp_resid do not run it); trec_eval's judged-aware metrics run the pool stage."""
    from rankwise.metrics.declarations import stage_switches

    def on(*metrics):
        return {stage for stage, flag in stage_switches(set(metrics)).items() if flag}

    assert on("precision", "ndcg", "map") == set()
    assert on("g", "bin_g", "ndcg_rel", "rbp_resid") == {"gain_statistics"}
    assert on("rndcg") == {"gain_statistics", "rndcg_statistics"}
    assert on("bpref", "infap") == {"pool_statistics"}
    assert set(stage_switches(None).values()) == {1}


def test_the_gain_metrics_are_the_same_with_and_without_rndcgs_stage():
    """G, binG, ndcg_rel and rbp_resid asked alone (no Rndcg stage) equal the same metrics asked beside Rndcg, on
    both embedded engines."""
    import numpy as np

    rng = np.random.default_rng(5)
    recs = (pl.DataFrame({"user": np.repeat(np.arange(60), 12), "item": rng.integers(0, 40, 720)})
            .unique(["user", "item"], keep="first", maintain_order=True)
            .with_columns(rank=pl.int_range(1, pl.len() + 1).over("user")))
    truth = pl.DataFrame({"user": rng.integers(0, 70, 900), "item": rng.integers(0, 40, 900),
                          "relevance": rng.integers(0, 4, 900)}).unique(["user", "item"], keep="first")
    conv = rankwise.PRESETS["trec_eval"].replace(metrics=None)
    gains = ["g", "bin_g", "ndcg_rel", "rbp_resid"]
    for backend in ("polars", "duckdb"):
        alone = rankwise.evaluate(recs, truth, k=[1, 5, 20], metrics=gains, convention=conv, backend=backend).per_user
        beside = rankwise.evaluate(recs, truth, k=[1, 5, 20], metrics=[*gains, "rndcg"], convention=conv,
                                   backend=backend).per_user
        assert alone.select(pl.exclude("^rndcg.*$")).to_dict(as_series=False) == beside.select(alone.columns).to_dict(
            as_series=False)
        assert beside["rndcg@5"].drop_nans().drop_nulls().sum() > 0
