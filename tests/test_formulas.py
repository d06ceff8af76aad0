"""A metric's formula is written once (``Metric.sql``): these tests protect that single source.

* the generated stages of ``sql/per_user.sql`` and ``sql/summary.sql`` are what the declarations
  give (drift fails);
* the Polars translation of each formula gives, value for value, what DuckDB computes from the same
  SQL text, under every preset and every denominator / ideal knob value, on statistics made to hit
  the edge cases (zero denominators, no hits, an empty ideal).
"""

from __future__ import annotations

import itertools
import re

import duckdb
import numpy as np
import polars as pl
import pytest

from rankwise.metrics import formulas as _formulas

from rankwise.sqlgen import files as _sql_files
from rankwise.conventions import PRESETS, Convention
from rankwise.metrics.declarations import REGISTRY

USER_METRICS = [m for m in REGISTRY if m.level == "user"]


def test_the_shipped_per_user_sql_is_generated_from_the_declarations():
    path = _sql_files.sql_dir() / "per_user.sql"
    text = path.read_text()
    assert _formulas.BEGIN in text, "per_user.sql lost its generated-part marker"
    assert _formulas.render_per_user(text, USER_METRICS) == text, (
        "sql/per_user.sql is out of date with rankwise.metrics.declarations: run python -m rankwise.generate.sql")


def test_the_parameter_families_statistics_are_generated_from_one_declaration():
    """per_user.sql's rprec_mult / iprec_at_recall statistics (and ipt0 .. ipt10) and param_families.sql's
    template lines are what formulas.PARAM_STATISTICS and the declared formulas give, and neither file holds a
    copy of them outside those generated lines."""
    from rankwise.generate.sql import FAMILIES

    per_user = (_sql_files.sql_dir() / "per_user.sql").read_text()
    families = (_sql_files.sql_dir() / "param_families.sql").read_text()
    assert _formulas.render_per_user_params(per_user, FAMILIES) == per_user, "run python -m rankwise.generate.sql"
    assert _formulas.render_param_families(families, FAMILIES) == families, "run python -m rankwise.generate.sql"
    assert per_user.count("-- >>> param ") == 2 and families.count("-- >>> param ") == 2
    for text in (per_user, families):
        hand = re.sub(r"-- >>> param .*?-- <<< param [a-z ]+", "", text, flags=re.DOTALL).split(_formulas.BEGIN)[0]
        for fragment in ("FLOOR($rprec_multiplier", "FLOOR($iprec_recall_level", "FLOOR($value_",
                         "j.hits_so_far >= FLOOR(", "h.hits_so_far >= FLOOR(",
                         "a.mult_hits", "a.iprec_max", "a.s{i}"):
            assert fragment not in hand, fragment
    rendered = _formulas.render_param_families(families.replace("h.iprec_half", "h.half"), FAMILIES)
    assert rendered == families  # (a hand edit inside the generated lines is written over)


def test_the_shipped_beyond_user_sql_ends_in_the_declared_formulas():
    """The per-user beyond-accuracy values (novelty, arp, long_tail_share, ild, serendipity) are their
    declarations' formulas over beyond_user.sql's sums, as the Polars engine evaluates them."""
    from rankwise.metrics.declarations import BEYOND

    text = (_sql_files.sql_dir() / "beyond_user.sql").read_text()
    assert _formulas.BEGIN in text, "beyond_user.sql lost its generated-part marker"
    declared = [m for m in BEYOND if m.level == "user"]
    assert {m.name for m in declared} == {"novelty", "arp", "long_tail_share", "ild", "serendipity"}
    assert _formulas.render_beyond_user(text, declared) == text, (
        "sql/beyond_user.sql is out of date with rankwise.metrics.declarations: run python -m rankwise.generate.sql")


def test_the_shipped_beyond_catalog_sql_ends_in_the_declared_formulas():
    """The catalog-level beyond-accuracy values are their declarations' formulas over beyond_catalog.sql's
    per-k statistics, as the Polars engine evaluates them."""
    from rankwise.metrics.declarations import BEYOND

    text = (_sql_files.sql_dir() / "beyond_catalog.sql").read_text()
    assert _formulas.BEGIN in text, "beyond_catalog.sql lost its generated-part marker"
    declared = [m for m in BEYOND if m.level == "catalog"]
    assert all(m.sql is not None for m in declared)
    assert {m.name for m in declared} == {"item_coverage", "gini", "exposure_entropy", "personalization",
                                          "score_entropy"}
    assert _formulas.render_beyond_catalog(text, declared) == text, (
        "sql/beyond_catalog.sql is out of date with rankwise.metrics.declarations: run python -m rankwise.generate.sql")
    # the formulas read only the per-k statistics, the terms and the knobs
    read = set().union(*(_formulas.reads(m.sql) for m in declared), *map(_formulas.reads, _formulas.BEYOND_CATALOG_TERMS.values()))
    assert read <= set(_formulas.BEYOND_CATALOG_STATISTICS) | set(_formulas.BEYOND_CATALOG_TERMS)


def test_the_shipped_macros_are_generated_from_the_declarations():
    """sql/macros.sql below its marker: each metric's macro, its value the declared formula over the list-form
    statistics written by hand above the marker."""
    from rankwise.generate import macros as _macros

    text = (_sql_files.sql_dir() / "macros.sql").read_text()
    assert _formulas.BEGIN in text, "macros.sql lost its generated-part marker"
    assert _macros.render(text) == text, (
        "sql/macros.sql is out of date with rankwise.metrics.declarations: run python -m rankwise.generate.sql")
    # one public macro per per-user metric (and rankwise_f1), and the graded forms: dcg, ndcg, err and trec_eval's
    # judged-aware and gain measures, which read judged non-relevant and pooled labels or graded gains
    made = set(re.findall(r"CREATE OR REPLACE TEMP MACRO rankwise_([a-z]\w*)\(", text.split(_formulas.BEGIN)[1]))
    graded = {"dcg", "ndcg", "err", "num_nonrel_judged_ret", "bpref", "gm_bpref", "infap", "unj", "judged", "g", "bin_g",
              "ndcg_rel", "rndcg", "rbp_resid"}
    assert {m.name for m in USER_METRICS} | {"f1"} | {f"{name}_graded" for name in graded} == made


def test_the_formula_trees_are_generated_from_the_declarations():
    """An evaluation reads the formulas' trees from rankwise.metrics.formula_trees (no SQL parser imported)."""
    from rankwise.metrics import formula_trees as _formula_trees
    from rankwise.generate import sql as _generate

    assert _formula_trees.TREES == {sql: _formulas._as_tuples(_formulas._parse(sql)) for sql in _generate.formulas()}, (
        "src/rankwise/metrics/formula_trees.py is out of date with rankwise.metrics.declarations: run python -m rankwise.generate.sql")


def test_the_shipped_summary_sql_is_generated_from_the_declarations():
    text = (_sql_files.sql_dir() / "summary.sql").read_text()
    assert _formulas.summary_sql(USER_METRICS) == text, (
        "sql/summary.sql is out of date with rankwise.metrics.declarations: run python -m rankwise.generate.sql")


def test_a_request_restricts_the_shipped_sql_to_its_metrics_and_adds_no_line():
    """The DuckDB engine runs per_user.sql and summary.sql restricted to the metrics it computes: every
    metric kept is the same, no line is new (a select list's last comma aside), all metrics = the file."""
    every = frozenset(m.name for m in USER_METRICS)
    for name in ("per_user", "summary"):
        text = _sql_files.read(name)
        assert _sql_files.restricted(name, every) == text
        shipped = {line.rstrip(",") for line in text.split("\n")}
        for metric in every:
            kept = _sql_files.restricted(name, frozenset({metric, "ndcg"}))
            assert {line.rstrip(",") for line in kept.split("\n")} <= shipped, (name, metric)
            assert re.search(rf"\bAS {metric}\b|'{metric}' AS metric|\$f_name AS metric", kept), (name, metric)


@pytest.mark.parametrize("preset", ["default", "trec_eval"])
def test_the_restricted_sql_gives_each_metric_bit_for_bit_what_the_whole_file_gives(preset):
    """Each metric alone (with what computed_columns adds) through the restricted per_user.sql and
    summary.sql against the whole files, on lists with ties of rank, empty lists, users only in one table,
    graded, zero and negative labels; every optional stage on (as a request for those metrics binds it)."""
    from rankwise.metrics.declarations import MetricRequest, computed_columns

    rng = np.random.default_rng(7)
    recs, truth = [], []
    for user in range(60):
        if user % 7 != 3:
            n = int(rng.integers(0, 9))
            recs += [(user, rank, int(rng.integers(0, 15))) for rank in range(1, n + 1)] or [(user, 1, None)]
        if user % 7 != 5:
            for item in rng.choice(15, int(rng.integers(0, 6)), replace=False):
                truth.append((user, int(item), float(rng.choice([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0]))))
    con = duckdb.connect()
    con.register("recommendations", pl.DataFrame(recs, schema=["user_id", "rank", "item_id"], orient="row")
                 .unique(["user_id", "item_id"], keep="first", maintain_order=True))
    con.register("ground_truth", pl.DataFrame(truth, schema=["user_id", "item_id", "relevance"], orient="row"))
    con.register("cutoffs", pl.DataFrame({"k": [1, 3, 5, 20]}))
    con.execute("SET threads = 1")  # the summary's sums in one order (as the engine runs it)

    def run(metrics):
        per_user = _sql_files.restricted("per_user", metrics)
        con.execute(f"CREATE OR REPLACE TEMP TABLE per_user AS SELECT * FROM ({per_user}) AS p "
                    "ORDER BY p.k, p.user_id", _sql_files.bind(per_user, preset))
        summary = _sql_files.restricted("summary", metrics)
        rows = con.sql("SELECT * FROM per_user ORDER BY k, user_id").pl()
        return rows, con.sql(summary, params=_sql_files.bind(summary, preset)).pl().sort("metric", "k")

    whole_rows, whole_summary = run(None)
    for metric in USER_METRICS:
        public = "f1" if metric.name == "fbeta" else metric.name
        computed = frozenset(computed_columns(MetricRequest(names=(public,), ks=(1, 3, 5, 20), beta=1.0)))
        rows, summary = run(computed)
        assert rows.select("user_id", "k", *sorted(computed)).equals(
            whole_rows.select("user_id", "k", *sorted(computed)), null_equal=True), metric.name
        assert summary.equals(whole_summary.filter(pl.col("metric").is_in(summary["metric"].unique().to_list())),
                              null_equal=True), metric.name
        assert summary.height == len(computed) * 4, metric.name


def test_every_formula_reads_only_statistics_terms_metrics_and_knobs():
    known = set(_formulas.STATISTICS) | set(_formulas.TERMS) | {m.name for m in USER_METRICS}
    for m in USER_METRICS:
        assert _formulas.reads(m.sql) <= known, (m.name, _formulas.reads(m.sql) - known)


def _stats(n=4000, seed=7) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    k = rng.integers(1, 12, n)
    n_recs = rng.integers(0, 15, n)
    n_rel = rng.integers(0, 8, n)
    hits = np.minimum(rng.integers(0, 8, n), np.minimum(np.minimum(k, n_recs), n_rel)).astype(float)
    first_hit = np.where(hits > 0, rng.integers(1, 12, n), 0)
    return pl.DataFrame({
        "user_id": np.arange(n), "k": k, "n_recs": n_recs, "n_rel": n_rel, "hits": hits,
        "precision_sum": rng.random(n) * hits, "hits_sum": hits * (hits + 1) / 2,
        "r_hits": np.minimum(hits, rng.integers(0, 4, n)).astype(float), "first_hit": first_hit,
        "n_candidates": n_recs + n_rel - hits.astype(np.int64),
        "dcg": np.where(hits > 0, rng.random(n) * 3, 0.0),
        "idcg": np.where(rng.random(n) < 0.2, 0.0, rng.random(n) * 4),
        "rbp_sum": np.where(hits > 0, rng.random(n) * 2, 0.0),
        "err_sum": np.where(hits > 0, rng.random(n), 0.0),
        "mult_hits": np.minimum(hits, rng.integers(0, 4, n)).astype(float),
        "iprec_max": np.where(hits > 0, rng.random(n), 0.0),
        "ipt11_sum": np.where(hits > 0, rng.random(n) * 11, 0.0),
        "bing_sum": np.where(hits > 0, rng.random(n) * hits, 0.0),
        "g_sum": np.where(hits > 0, rng.random(n) * 3, 0.0),
        "ndcg_rel_sum": np.where(hits > 0, rng.random(n) * hits, 0.0),
        "pos_ret": hits,
        "judged_rbp": np.where(rng.random(n) < 0.3, 0.0, rng.random(n) * 3),
        "judged_ret": np.minimum(rng.integers(0, 15, n), np.minimum(k, n_recs)).astype(float),
        "rndcg_sum": np.where(hits > 0, rng.random(n) * 2, 0.0),
        "n_pos": n_rel + rng.integers(0, 2, n) * (n_rel > 0),
        "idcg_all": np.where(n_rel > 0, rng.random(n) * 4 + 0.5, 0.0),
        "gain_total": np.where(n_rel > 0, rng.integers(1, 9, n).astype(float), 0.0),
        "n_bounds": np.where(n_rel > 0, rng.integers(1, 4, n), 0).astype(float),
        # judged non-relevant and pooled items within k (at most the list's other items), bpref's and infAP's sums
        "nonrel_ret": np.minimum(np.minimum(k, n_recs) - hits, rng.integers(0, 4, n)).clip(0).astype(float),
        "pooled_ret": rng.integers(0, 2, n).astype(float),
        "bpref_sum": np.where(hits > 0, rng.random(n) * hits, 0.0),
        "infap_sum": np.where(hits > 0, rng.random(n) * hits, 0.0),
    })


def _conventions():
    yield from PRESETS.values()
    for p_den, ap_den, zero_ideal in itertools.product(
            ("k", "min_k_len", "min_k_nrel", "min_k_candidates"), ("n_hits", "n_rel", "min_k_nrel", "k", "min_k_len"),
            ("zero", "nan")):
        yield Convention(precision_denominator=p_den, ap_denominator=ap_den, zero_ideal=zero_ideal)
    for m in (0.2, 0.6, 1.4, 2.0):  # rprec_mult's floor(m n_rel + 0.9)
        yield Convention(rprec_multiplier=m)


def test_polars_and_duckdb_read_each_formula_alike():
    stats = _stats()
    con = duckdb.connect()
    con.register("stats", stats)
    # the generated stages, run by DuckDB as the shipped SQL runs them (without the empty rules)
    stages = _formulas.per_user_stages(USER_METRICS).split("-- the values a user without")[0].rstrip().rstrip(",")
    last = "defined" if len(_formulas.metric_stages(USER_METRICS)) == 1 else \
        f"defined_{len(_formulas.metric_stages(USER_METRICS))}"
    query = f"WITH {stages} SELECT * FROM {last} ORDER BY user_id"
    checked = 0
    for conv in _conventions():
        for beta in (1.0, 0.5):
            expected = con.sql(query, params=_sql_files.bind(query, conv, beta)).pl()
            got = stats.select(*[m.build(conv, beta).alias(m.name) for m in USER_METRICS])
            for m in USER_METRICS:
                a, b = got[m.name], expected[m.name]
                assert (a.is_null() == b.is_null()).all(), (conv.name, beta, m.name)
                assert a.drop_nulls().to_list() == b.drop_nulls().to_list(), (conv.name, beta, m.name)
                checked += 1
    assert checked > 300


def test_a_formula_with_a_construct_polars_lacks_is_refused_by_name():
    with pytest.raises(NotImplementedError, match="no Polars translation"):
        _formulas.to_polars("STRPOS(x, 'a')", {})
