"""rankwise.expr (Polars expressions on list columns) and sql/macros.sql (DuckDB macros) against
evaluate()'s per-user values and the naive oracle (tests/oracle.py), over random list data."""

from __future__ import annotations

import doctest
import math
import re
import tracemalloc

import duckdb
import oracle
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rankwise
from rankwise import expr
from rankwise.errors import (
    DtypeMismatchError,
    DuplicateItemError,
    InvalidRelevanceError,
    MissingColumnError,
    NumericOverflowError,
    ParameterError,
)

PRESETS = ["default", "recommended_ideal", "ranx", "trec_eval", "spark", "torchmetrics", "sklearn", "evidently", "recommenders",
           "replay", "rectools", "kaggle", "recbole"]
NAMES = ["precision", "recall", "f1", "map", "mar", "mrr", "dcg", "ndcg", "hit_rate", "r_precision", "num_ret", "num_rel",
         "num_rel_ret", "set_p", "set_recall", "set_relative_p", "set_map", "set_f", "relative_p", "utility",
         "gm_map", "rprec_mult", "iprec_at_recall", "ipt11_avg"]
# trec_eval's judged-aware and gain measures: they read judged non-relevant (relevance >= 0, not relevant) and
# pooled (relevance < 0 under negative_relevance='unjudged') labels, or the labels' graded gains
JUDGED = ["num_nonrel_judged_ret", "bpref", "gm_bpref", "infap", "unj", "judged", "g", "bin_g", "ndcg_rel", "rndcg",
          "rbp_resid"]
NAMES += JUDGED
# no empty rule: their macros take no empty_* knob
COUNTS = ("num_ret", "num_rel", "num_rel_ret", "utility", "num_nonrel_judged_ret", "unj", "judged", "rbp_resid")
UTILITY = ("utility_relevant_retrieved", "utility_nonrelevant_retrieved", "utility_relevant_missed",
           "utility_nonrelevant_missed", "collection_size")


def close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))


# a user: recommendations (None = not in the recommendations input) and labels {item: relevance}
# (None = not in the ground truth); items from a small pool so that hits are common
_items = st.integers(0, 12)
_user = st.tuples(
    st.one_of(st.none(), st.lists(_items, max_size=8, unique=True)),
    st.one_of(st.none(), st.dictionaries(_items, st.sampled_from([0.0, 1.0, 2.0, 3.0]), max_size=6)),
)
_data = st.lists(_user, min_size=1, max_size=6).filter(lambda us: any(r is not None or t is not None for r, t in us))


def _frames(users, graded=True):
    """(list-form recs, list-form truth, one joined row per user with null = absent)."""
    recs = {u: r for u, (r, t) in enumerate(users) if r is not None}
    truth = {u: (t if graded else {i: 1.0 for i in t}) for u, (r, t) in enumerate(users) if t is not None}
    rf = pl.DataFrame({"user": list(recs), "item": list(recs.values())},
                      schema={"user": pl.Int64, "item": pl.List(pl.Int64)})
    tf = pl.DataFrame({"user": list(truth), "item": [list(t) for t in truth.values()],
                       "relevance": [list(t.values()) for t in truth.values()]},
                      schema={"user": pl.Int64, "item": pl.List(pl.Int64), "relevance": pl.List(pl.Float64)})
    rows = pl.DataFrame({
        "user": list(range(len(users))),
        "recs": [r for r, _ in users],
        "truth": [None if t is None else list(truth[u]) for u, (_, t) in enumerate(users)],
        "rel": [None if t is None else list(truth[u].values()) for u, (_, t) in enumerate(users)],
    }, schema={"user": pl.Int64, "recs": pl.List(pl.Int64), "truth": pl.List(pl.Int64), "rel": pl.List(pl.Float64)})
    return recs, truth, rf, tf, rows


def _metric_names(conv):
    have = conv.metrics or rankwise.metrics.declarations.USER_LEVEL
    return [("f1" if m == "fbeta" else m) for m in NAMES if (m if m != "f1" else "fbeta") in have]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(users=_data, preset=st.sampled_from(PRESETS), ks=st.lists(st.integers(1, 10), min_size=1, max_size=3))
def test_expressions_equal_evaluate_and_oracle(users, preset, ks):
    conv = rankwise.PRESETS[preset]
    if preset == "kaggle":
        conv = conv.replace(metrics=None)  # every metric, kaggle's knobs
    names = _metric_names(conv)
    recs, truth, rf, tf, rows = _frames(users)
    got = rows.lazy().select("user", *expr.metrics("recs", "truth", k=ks, metrics=names, relevance="rel",
                                                   convention=conv)).collect()
    want = oracle.evaluate(recs, truth, sorted(set(ks)), conv)
    res = rankwise.evaluate(rf if rf.height else None, tf if tf.height else None, k=ks, metrics=names,
                            convention=conv) if rf.height and tf.height else None
    evaluated = {} if res is None else {r["user"]: r for r in res.per_user.iter_rows(named=True)}
    for row in got.iter_rows(named=True):
        u = row["user"]
        for col, value in row.items():
            if col == "user":
                continue
            name, k = col.split("@")
            if u not in want:  # outside the convention's users: NaN
                assert math.isnan(value), (u, col, value)
                continue
            expected = want[u][f"{rankwise.metrics.declarations.internal_name(name)}@{k}"]
            assert close(value, expected), (preset, u, col, value, expected, users)
            if evaluated:
                assert close(value, evaluated[u][col]), (preset, u, col, value, evaluated[u][col])


def _expected(got, want, preset, users):
    """Every value of ``got`` (a frame from expr.metrics) equals the oracle's ``want`` (NaN outside
    the convention's users)."""
    for row in got.iter_rows(named=True):
        u = row.pop("user")
        for col, value in row.items():
            if u not in want:
                assert math.isnan(value), (u, col, value)
                continue
            name, k = col.split("@")
            expected = want[u][f"{rankwise.metrics.declarations.internal_name(name)}@{k}"]
            assert close(value, expected), (preset, u, col, value, expected, users)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(users=_data, preset=st.sampled_from(PRESETS), ks=st.lists(st.integers(1, 10), min_size=1, max_size=3),
       graded=st.booleans())
def test_positional_and_list_formulations_agree(users, preset, ks, graded):
    """expr scores k <= POSITIONAL_MAX_K position by position and a larger k with list.eval passes:
    the second forced (threshold 0) equals the first and the oracle, under every preset."""
    conv = rankwise.PRESETS[preset]
    if preset == "kaggle":
        conv = conv.replace(metrics=None)
    names = _metric_names(conv)
    recs, truth, _, _, rows = _frames(users, graded=graded)
    rel = "rel" if graded else None
    query = rows.lazy().select("user", *expr.metrics("recs", "truth", k=ks, metrics=names, relevance=rel,
                                                     convention=conv))
    positional = query.collect()
    original = expr.POSITIONAL_MAX_K
    try:
        expr.POSITIONAL_MAX_K = 0
        lists = rows.lazy().select("user", *expr.metrics("recs", "truth", k=ks, metrics=names, relevance=rel,
                                                         convention=conv)).collect()
    finally:
        expr.POSITIONAL_MAX_K = original
    want = oracle.evaluate(recs, truth, sorted(set(ks)), conv)
    _expected(positional, want, preset, users)
    _expected(lists, want, preset, users)
    assert positional.columns == lists.columns


@pytest.mark.parametrize("preset", ["default", "recommended_ideal", "trec_eval", "ranx", "recbole", "evidently"])
def test_both_sides_of_the_positional_threshold(preset):
    """k = POSITIONAL_MAX_K (positions) and k + 1 (lists) on a list longer than both: hand values
    and the oracle, in select, group_by(...).agg, over and a streaming query."""
    k = expr.POSITIONAL_MAX_K
    items = list(range(1, k + 21))  # hits at positions 2, 50, k + 1 and k + 10
    labels = {2: 3.0, 50: 1.0, k + 1: 2.0, k + 10: 1.0, 10**6: 2.0}
    conv = rankwise.PRESETS[preset].replace(metrics=None)
    df = pl.DataFrame({"user": [0, 1], "g": ["a", "a"], "recs": [items, items[:3]], "truth": [list(labels)] * 2,
                       "rel": [list(labels.values())] * 2})
    columns = expr.metrics("recs", "truth", k=[k, k + 1], relevance="rel", convention=conv)
    got = df.select("user", *columns)
    _expected(got, oracle.evaluate({0: items, 1: items[:3]}, {0: labels, 1: labels}, [k, k + 1], conv), preset, None)
    if preset == "recommended_ideal":  # by hand: AP over the hits (n_hits), precision over k
        row = got.row(0, named=True)
        assert close(row[f"precision@{k}"], 2 / k) and close(row[f"precision@{k + 1}"], 3 / (k + 1))
        assert close(row[f"map@{k}"], (1 / 2 + 2 / 50) / 2)
        assert close(row[f"map@{k + 1}"], (1 / 2 + 2 / 50 + 3 / (k + 1)) / 3)
        assert close(row[f"mrr@{k + 1}"], 1 / 2) and close(row[f"recall@{k + 1}"], 3 / 5)
    means = got.select(pl.exclude("user").mean())
    grouped = df.lazy().group_by("g").agg(*[c.mean() for c in columns]).drop("g")
    for other in (grouped.collect(), grouped.collect(engine="streaming"),
                  df.select(*[c.mean().over("g") for c in columns]).head(1)):
        for name in means.columns:
            assert close(other[name][0], means[name][0]), (preset, name)


def _macro_call(name, conv, k, graded):
    """The macro call for one metric under a convention (its knobs as named parameters)."""
    p = {"empty_labels": conv.empty_labels, "empty_predictions": conv.empty_predictions,
         "duplicates": conv.duplicates}
    if name in COUNTS:
        p = {"duplicates": conv.duplicates} | ({u: getattr(conv, u) for u in UTILITY} if name == "utility" else {})
    if name in ("precision", "f1"):
        p["precision_denominator"] = conv.precision_denominator
    if name == "rprec_mult":
        p["rprec_multiplier"] = conv.rprec_multiplier
    if name == "iprec_at_recall":
        p.update(iprec_recall_level=conv.iprec_recall_level, iprec_recall_count=conv.iprec_recall_count)
    if name == "ipt11_avg":
        p["iprec_recall_count"] = conv.iprec_recall_count
    if name in ("map", "mar", "gm_map"):
        p["ap_denominator"] = conv.ap_denominator
    if name == "mrr":
        p["rr_cutoff"] = conv.rr_cutoff
    if name in ("dcg", "ndcg", "ndcg_rel", "rndcg"):
        p["log_base"] = conv.log_base
    if name == "ndcg":
        p.update(ideal=conv.ideal, zero_ideal=conv.zero_ideal)
    if name == "rbp_resid":
        p["rbp_persistence"] = conv.rbp_persistence
    if graded:
        p["negative_relevance"] = conv.negative_relevance
        if name in ("dcg", "ndcg", "g", "ndcg_rel", "rndcg"):
            p["gain"] = conv.gain
        if name != "rbp_resid":  # rbp_resid reads which items are judged, not which are relevant
            p["relevance_threshold"] = conv.relevance_threshold
    args = ", ".join(f"{key} := {value!r}" if isinstance(value, str) else f"{key} := {value}"
                     for key, value in p.items()).replace("True", "true").replace("False", "false")
    if graded:
        return f"rankwise_{name}_graded(recs, truth, rel, {k}, {args})"
    return f"rankwise_{name}(recs, truth, {k}, {args})"


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    expr.install_duckdb(c)
    return c


def _macros_and_oracle(con, users, conv, k, graded, names):
    """(the macros' values per user, one column per name; the oracle's) for ``users``' lists under ``conv``."""
    recs, truth, _, _, rows = _frames(users, graded=graded)  # noqa: F841 (rows: DuckDB's replacement scan)
    sql = "SELECT user, " + ", ".join(f"{_macro_call(n, conv, k, graded)} AS \"{n}\"" for n in names) + \
          " FROM rows ORDER BY user"
    got = con.sql(sql).pl()
    return got, oracle.evaluate(recs, truth, [k], conv)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(users=_data, preset=st.sampled_from(PRESETS), k=st.integers(1, 10))
def test_macros_equal_oracle(con, users, preset, k):
    """Binary macros on binary data; graded dcg/ndcg on graded data. Users in both inputs or in
    either (NULL = absent list) under the union rule (macros have no users knob)."""
    conv = rankwise.PRESETS[preset].replace(users="union", unjudged="keep")
    binary_conv = conv.replace(relevance_threshold=0.0)  # relevance 1 everywhere: the threshold is moot
    for graded in (False, True):
        c = conv if graded else binary_conv
        names = ["dcg", "ndcg", *JUDGED] if graded else NAMES
        got, want = _macros_and_oracle(con, users, c, k, graded, names)
        for row in got.iter_rows(named=True):
            for n in names:
                if row["user"] not in want:  # in neither input: NaN
                    assert math.isnan(row[n])
                    continue
                expected = want[row["user"]][f"{rankwise.metrics.declarations.internal_name(n)}@{k}"]
                assert close(row[n], expected), (preset, graded, row["user"], n, row[n], expected, users)


def test_hand_values():
    """Hand calculation: recs [1, 2, 3, 4], relevant {2, 4, 9}, k = 4 (positions 2 and 4 hit)."""
    df = pl.DataFrame({"r": [[1, 2, 3, 4]], "t": [[2, 4, 9]]})
    got = df.select(expr.metrics("r", "t", k=4, convention="recommended_ideal", metrics="all")).row(0, named=True)
    dcg = 1 / math.log(3) + 1 / math.log(5)
    idcg = 1 / math.log(2) + 1 / math.log(3)  # predictions_topk: the two hits moved to the top
    dcg2, ideal3 = 1 / math.log(3), 1 / math.log(2) + 1 / math.log(3) + 1 / math.log(4)  # DCG@2, the labels' IDCG@3
    want = {"precision@4": 2 / 4, "recall@4": 2 / 3, "f1@4": 2 * 0.5 * (2 / 3) / (0.5 + 2 / 3),
            "map@4": (1 / 2 + 2 / 4) / 2, "mar@4": (1 / 3 + 2 / 3) / 2, "mrr@4": 1 / 2, "dcg@4": dcg,
            "ndcg@4": dcg / idcg, "hit_rate@4": 1.0, "r_precision@4": 1 / 3,
            "rbp@4": (1 - 0.8) * (0.8 ** 1 + 0.8 ** 3),  # hits at ranks 2 and 4, p = 0.8
            "err@4": 0.5 / 2 + 0.5 * 0.5 / 4,  # grade 1 of g_max 1: R = 1/2 at each hit
            # trec_eval's set measures over the 4 retrieved, 2 of the 3 relevant among them
            "num_ret@4": 4.0, "num_rel@4": 3.0, "num_rel_ret@4": 2.0, "set_p@4": 2 / 4, "set_recall@4": 2 / 3,
            "set_relative_p@4": 2 / 3, "set_map@4": 2 * 2 / (4 * 3), "set_f@4": 2 * 2 / (4 + 3),
            "relative_p@4": 2 / 3, "utility@4": 1.0 * 2 - 1.0 * 2, "gm_map@4": (1 / 2 + 2 / 4) / 2,
            "rprec_mult@4": 1 / 3,  # c = floor(1.0 * 3 + 0.9) = 3: one hit within the top 3
            "iprec_at_recall@4": 1 / 2,  # level 0: any hit, the best of 1/2 and 2/4
            # levels 0.0-0.1 (r = 0): 1/2; 0.2-0.4 (r = 1): 1/2; 0.5-0.8 (r = 2): 2/4; 0.9-1.0 (r = 3 > 2 hits): 0
            "ipt11_avg@4": (9 * 0.5) / 11}
    # trec_eval's judged-aware measures: the labels are all relevant (R = 3, no judged non-relevant one: N = 0);
    # items 1 and 3 have no label (not judged)
    e = 0.00001
    want |= {"num_nonrel_judged_ret@4": 0.0, "bpref@4": 2 / 3, "gm_bpref@4": 2 / 3,  # each hit: 1 (none above)
             # rank 2: 1/2 + (1/2)(0/1)(..) ; rank 4 (r = 1 above, n = p = 0): 1/4 + (3/4)(1/3)((1 + e)/(1 + 2e))
             "infap@4": (1 / 2 + 1 / 4 + (3 / 4) * (1 / 3) * ((1 + e) / (1 + 2 * e))) / 3,
             "unj@4": 2 / 4, "judged@4": 2 / 4,
             # the gain measures: every gain 1, ideal [1, 1, 1]; G's cost 1 per position, so G = binG here:
             # rank 2: 1 / log2(2 + 2 - 1), rank 4: 1 / log2(2 + 4 - 2), over the total gain 3 (binG: R = 3)
             "g@4": (1 / math.log2(3) + 1 / 2) / 3, "bin_g@4": (1 / math.log2(3) + 1 / 2) / 3,
             # DCG@2 / IDCG@2 and DCG@4 / IDCG@3 at the hits, DCG@4 / IDCG@3 for the label not retrieved
             "ndcg_rel@4": (dcg2 / (ideal3 - 1 / math.log(4)) + 2 * dcg / ideal3) / 3,
             # one run of equal gain ending at m = 3: DCG@3 / IDCG@3 (N = 4 is not past P + 1 = 4)
             "rndcg@4": dcg2 / ideal3,
             # p = 0.8: p^4 + (1 - p)(p^0 + p^2) over the unjudged ranks 1 and 3
             "rbp_resid@4": 0.8 ** 4 + 0.2 * (1 + 0.8 ** 2)}

    assert got.keys() == want.keys()
    for key in want:
        assert close(got[key], want[key]), key


def test_graded_hand_values(con):
    """recs [1, 2], labels {2: 3, 1: 1}; linear gain, log2: DCG = 1/1 + 3/log2(3); ideal from the labels
    = 3/1 + 1/log2(3)."""
    df = pl.DataFrame({"r": [[1, 2]], "t": [[2, 1]], "rel": [[3.0, 1.0]]})
    conv = rankwise.PRESETS["trec_eval"].replace(users="union", unjudged="keep", metrics=None)  # it has no dcg
    dcg, idcg = 1 + 3 / math.log2(3), 3 + 1 / math.log2(3)
    assert close(df.select(expr.dcg("r", "t", k=2, relevance="rel", convention=conv)).item(), dcg)
    assert close(df.select(expr.ndcg("r", "t", k=2, relevance="rel", convention=conv)).item(), dcg / idcg)
    sql = ("SELECT rankwise_ndcg_graded([1, 2], [2, 1], [3.0, 1.0], 2, gain := 'linear', log_base := 2, "
           "ideal := 'labels')")
    assert close(con.execute(sql).fetchone()[0], dcg / idcg)


def test_doctests():
    failures, tried = doctest.testmod(expr, optionflags=doctest.ELLIPSIS)
    assert tried > 10 and failures == 0


def test_invalid_rows_are_nan_and_check_lists_raises(con):
    df = pl.DataFrame({"r": [[1, 1, 2], [1, 2]], "t": [[1], [1]]})
    got = df.select(expr.precision("r", "t", k=2)).to_series().to_list()
    assert math.isnan(got[0]) and got[1] == 0.5
    with pytest.raises(DuplicateItemError, match="repeat an item"):
        expr.check_lists(df, "r", "t")
    with pytest.raises(DuplicateItemError):
        rankwise.evaluate(df.select(pl.lit(1).alias("user"), pl.col("r").alias("item")).head(1),
                          df.select(pl.lit(1).alias("user"), pl.col("t").alias("item")).head(1), k=2)
    shift = rankwise.PRESETS["default"].replace(duplicates="first_shift")  # [1, 1, 2] -> [1, 2]
    assert df.select(expr.precision("r", "t", k=2, convention=shift)).to_series().to_list() == [0.5, 0.5]
    row = con.execute("SELECT rankwise_precision([1, 1, 2], [1], 2), "
                  "rankwise_precision([1, 1, 2], [1], 2, duplicates := 'first_shift')").fetchone()
    assert math.isnan(row[0]) and row[1] == 0.5


def test_refused_knobs():
    df = pl.DataFrame({"r": [[1]], "t": [[1]]})
    with pytest.raises(ParameterError, match="min_score") as e:
        expr.precision("r", "t", k=1, convention="surprise")
    assert "Hint:" in str(e.value)
    with pytest.raises(ParameterError, match="empty_labels"):
        expr.ndcg("r", "t", k=1, convention=rankwise.Convention(empty_labels="error"))
    with pytest.raises(ParameterError, match="k must be"):
        expr.ndcg("r", "t", k=0)
    with pytest.raises(ParameterError, match="column name"):
        expr.ndcg(["r"], "t", k=1)
    assert df.select(expr.ndcg("r", "t", k=1)).item() == 1.0


def test_composes_in_group_by_lazy_and_streaming():
    df = pl.DataFrame({"g": ["a", "a", "b"], "r": [[1, 2], [3, 4], [5, 6]], "t": [[2], [9], [5]]})
    q = df.lazy().group_by("g").agg(expr.mrr("r", "t", k=2).mean()).sort("g")
    for engine in ("in-memory", "streaming"):
        assert q.collect(engine=engine).rows() == [("a", (0.5 + 0.0) / 2), ("b", 1.0)]


def test_macro_knob_checks_allow_the_conventions_values():
    """Every knob a macro takes is checked against Convention's allowed values (the one source),
    less 'error' for empty_labels / empty_predictions (a macro cannot raise per row, as in expr)."""
    from rankwise.sqlgen import files as _sql_files
    from rankwise.conventions import knob_documentation

    sql = _sql_files.read("macros")
    checked = {}
    for name, values in re.findall(r"rankwise__knob\('(\w+)', \w+,\s*\[([^\]]*)\]\)", sql):
        parsed = tuple({"true": True, "false": False}.get(v.strip(), v.strip().strip("'")) for v in values.split(","))
        assert checked.setdefault(name, parsed) == parsed, name  # one list per knob
    taken = set(re.findall(r"(\w+) :=", sql))
    for knob, (allowed, _) in knob_documentation().items():
        if knob in taken and isinstance(allowed, tuple):
            refused = ("error",) if knob in ("empty_labels", "empty_predictions") else ()
            assert checked.get(knob) == tuple(v for v in allowed if v not in refused), knob


@pytest.mark.parametrize("call, named", [
    ("rankwise_map([1, 2, 3, 4], [2, 9], 3, ap_denominator := 'nrel')", "ap_denominator := 'nrel'"),
    ("rankwise_recall([1, 1, 2], [1, 2], 3, duplicates := 'First_shift')", "duplicates := 'First_shift'"),
    ("rankwise_dcg([1, 2], [2], 3, log_base := 0.5)", "log_base := 0.5"),
    ("rankwise_dcg([1, 2], [2], 3, log_base := 1)", "log_base := 1"),
    ("rankwise_ndcg([1, 2], [2], 3, ideal := 'label')", "ideal := 'label'"),
    ("rankwise_dcg_graded([1, 2], [2], [1.0], 3, gain := 'lin')", "gain := 'lin'"),
    ("rankwise_precision([1, 2], [2], 3, precision_denominator := 'min_k_nrels')", "precision_denominator"),
    ("rankwise_precision([1, 2], [], 3, empty_labels := 'error')", "empty_labels := 'error'"),
    ("rankwise_fbeta([1, 2], [2], 3, beta := 0)", "beta := 0"),
    ("rankwise_ndcg_graded([1, 2], [2], [1.0], 3, relevance_threshold := -1)", "relevance_threshold := -1"),
    ("rankwise_novelty([4, 1], 2, 8, info_log_base := 1)", "info_log_base := 1"),
    ("rankwise_ild([[1.0, 0.0], [0.0, 1.0]], 2, ild_short := 'z')", "ild_short := 'z'"),
    ("rankwise_map([1, 2, 3], [1, 3], NULL)", "k := NULL"),
    ("rankwise_map([1, 2, 3], [1, 3], 0)", "k := 0"),
    ("rankwise_precision([1, 2, 3], [1, 3], -1)", "k := -1"),
    ("rankwise_arp([4, 1], 0)", "k := 0"),
    ("rankwise_ndcg([1, 2, 3], [1, 3], 10001, ideal := 'k_ones')", "k := 10001"),  # expr: k_ones k <= 10000
])
def test_macros_refuse_bad_knobs_and_k(con, call, named):
    with pytest.raises(duckdb.InvalidInputException, match=re.escape(named)):
        con.execute(f"SELECT {call}").fetchone()


_ARGS = {"dcg_graded": "[1, 2], [2], [1.0]", "ndcg_graded": "[1, 2], [2], [1.0]", "arp": "[4, 1]",
         "novelty": "[4, 1]", "ild": "[[1.0, 0.0], [0.0, 1.0]]"}


@pytest.mark.parametrize("macro", ["precision", "recall", "fbeta", "map", "mar", "mrr", "dcg", "ndcg", "hit_rate",
                                   "r_precision", "dcg_graded", "ndcg_graded", "arp", "novelty", "ild"])
def test_every_macro_refuses_a_fractional_k_by_name(con, macro):
    """k := 2.5 is rankwise's error naming k on every macro (some gave DuckDB's binder error about
    range(INTEGER, DECIMAL) before the check could run)."""
    args = _ARGS.get(macro, "[1, 2], [2]") + ", 2.5" + (", 8" if macro == "novelty" else "")
    with pytest.raises(duckdb.InvalidInputException, match=re.escape("k := 2.5")):
        con.execute(f"SELECT rankwise_{macro}({args})").fetchone()


def test_array_enum_and_categorical_item_lists_are_normalised():
    """Array columns are lists and text ids (String, Categorical, Enum) are text, as in evaluate()."""
    df = pl.DataFrame({"r": [[1, 2, 3], [4, 5, 6]], "t": [[1], [9]]})
    arrays = df.with_columns(pl.col("r").cast(pl.Array(pl.Int64, 3)), pl.col("t").cast(pl.Array(pl.Int64, 1)))
    # row 1: the one label at position 1, AP = (1/1) / 1 hit = 1; row 2: no hit, 0
    assert arrays.select(expr.map("r", "t", k=3)).to_series().to_list() == [1.0, 0.0]
    assert expr.check_lists(arrays, "r", "t") is None
    text = pl.DataFrame({"r": [["a", "b"]], "t": [["b"]]})
    pairs = ((pl.Enum(["a", "b"]), pl.Enum(["b", "a", "c"])), (pl.Categorical, pl.Enum(["b", "a"])))
    for recs_type, truth_type in pairs:
        typed = text.with_columns(pl.col("r").cast(pl.List(recs_type)), pl.col("t").cast(pl.List(truth_type)))
        assert typed.select(expr.mrr("r", "t", k=2)).item() == 0.5  # "b" first found at position 2: 1/2


@pytest.mark.parametrize("recs, truth", [(["1", "2", "3"], [1, 3]), ([1, 2, 3], [1.0, 3.0]), ([True, False], [1])])
def test_items_of_different_kinds_raise_as_in_evaluate(recs, truth):
    df = pl.DataFrame({"r": [recs], "t": [truth]})
    with pytest.raises(DtypeMismatchError, match="recs 'r' holds .* (truth 't' holds|items are ids)"):
        df.select(expr.precision("r", "t", k=3))
    with pytest.raises(DtypeMismatchError, match="recs 'r' holds"):
        expr.check_lists(df, "r", "t")
    with pytest.raises(DtypeMismatchError):
        rankwise.evaluate(df.select(user=pl.lit(1), item="r"), df.select(user=pl.lit(1), item="t"), k=3)


def test_check_lists_null_or_text_relevance_and_missing_column():
    df = pl.DataFrame({"r": [[1, 2], [3]], "t": [[1, 2], [3]], "rel": [None, [2.0]]})
    assert math.isnan(df.select(expr.ndcg("r", "t", k=2, relevance="rel")).to_series()[0])  # the row check_lists names
    with pytest.raises(InvalidRelevanceError, match="rel: 1 lists differ in length"):
        expr.check_lists(df, "r", "t", "rel")
    text = df.with_columns(rel=pl.Series([["1", "2"], ["2"]]))
    with pytest.raises(InvalidRelevanceError, match="list of numbers"):
        expr.check_lists(text, "r", "t", "rel")
    with pytest.raises(InvalidRelevanceError, match="list of numbers"):
        text.select(expr.ndcg("r", "t", k=2, relevance="rel"))
    with pytest.raises(MissingColumnError, match="'x'"):
        expr.check_lists(df, "x", "t")


def test_metrics_beta_names_the_f_and_is_validated():
    df = pl.DataFrame({"r": [[1, 2, 3]], "t": [[2, 9]]})  # k = 3: P = 1/3, R = 1/2
    # F2 = 5PR / (4P + R) = (5/6) / (4/3 + 1/2) = 5/11; F3 = 10PR / (9P + R) = (10/6) / (3 + 1/2) = 10/21
    assert close(df.select(expr.metrics("r", "t", k=3, metrics=["f2"])).item(), 5 / 11)
    assert close(df.select(expr.metrics("r", "t", k=3, metrics=["f2"], beta=2)).item(), 5 / 11)
    with pytest.raises(ParameterError, match="'f2' .* beta=3"):
        expr.metrics("r", "t", k=3, metrics=["f2"], beta=3.0)
    every = df.select(expr.metrics("r", "t", k=3, beta=3.0)).row(0, named=True)
    assert "f1@3" not in every and close(every["f3@3"], 10 / 21)
    for beta in (0, -1.0, float("nan")):
        with pytest.raises(ParameterError, match="beta > 0"):
            expr.metrics("r", "t", k=3, metrics=["f1"], beta=beta)


def test_install_duckdb_writes_nothing_to_the_database(tmp_path):
    """Temporary macros: none stored in the file, a read-only connection installs them, and a
    schema chosen with USE when installing does not hide them from another schema."""
    path = str(tmp_path / "user.duckdb")
    with duckdb.connect(path) as c:
        c.execute("CREATE TABLE t AS SELECT 1 AS a")
        expr.install_duckdb(c)
    with duckdb.connect(path, read_only=True) as c:
        stored = "SELECT count(*) FROM duckdb_functions() WHERE function_name LIKE 'rankwise%'"
        assert c.execute(stored).fetchone()[0] == 0
        expr.install_duckdb(c)
        assert c.execute("SELECT rankwise_precision([1, 2], [2], 2)").fetchone()[0] == 0.5  # 1 hit / k = 2
    with duckdb.connect() as c:
        c.execute("CREATE SCHEMA s; USE s")
        expr.install_duckdb(c)
        c.execute("USE memory.main")
        assert c.execute("SELECT rankwise_precision([1, 2], [2], 2)").fetchone()[0] == 0.5


def test_ndcg_with_a_huge_k_builds_no_k_long_table():
    """The ideal of n ones is summed over the positions the rows reach, not over 1..k."""
    df = pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 3]]})
    # hits at 1 and 3: DCG = 1/ln 2 + 1/ln 4; ideal (predictions_topk, 2 hits) = 1/ln 2 + 1/ln 3
    want = (1 / math.log(2) + 1 / math.log(4)) / (1 / math.log(2) + 1 / math.log(3))
    tracemalloc.start()
    huge = expr.ndcg("r", "t", k=10**7)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10_000_000  # a Python table of k + 1 floats took about 560 MB
    assert close(df.select(huge).item(), want)


def test_a_metric_the_preset_lacks_is_refused_as_in_evaluate():
    df = pl.DataFrame({"r": [[1, 2, 3]], "t": [[2]]})
    assert "mar" not in rankwise.PRESETS["ranx"].metrics
    with pytest.raises(ParameterError, match="'ranx' convention has no metric 'mar'"):
        expr.mar("r", "t", k=3, convention="ranx")
    with pytest.raises(ParameterError, match="no metric 'mar'"):
        expr.metrics("r", "t", k=3, metrics=["mar"], convention="ranx")
    every = df.select(expr.metrics("r", "t", k=3, convention="ranx")).columns
    assert "mar@3" not in every and "map@3" in every


def test_uint64_items_past_two_to_the_63_against_signed_labels():
    """evaluate() checks the values and refuses; an expression sees only types, so it compares in Int128.
    By hand: 2 of the top 3 are labelled."""
    big = 2**63 + 5
    df = pl.DataFrame({"recs": pl.Series([[big, 1, 2], [big]], dtype=pl.List(pl.UInt64)),
                       "truth": pl.Series([[1, 2], [5]], dtype=pl.List(pl.Int64))})
    assert df.select(expr.precision("recs", "truth", k=3)).to_series().to_list() == [2 / 3, 0.0]


@pytest.mark.parametrize("items", [[[True, False]], [[[1], [2]]], [[{"a": 1}]]])
def test_items_that_are_not_ids_are_a_typed_error(items):
    df = pl.DataFrame({"recs": items, "truth": items})
    with pytest.raises(DtypeMismatchError, match="ids: integers or text"):
        df.select(expr.precision("recs", "truth", k=2))


def test_metrics_names_the_beyond_expressions():
    with pytest.raises(ParameterError, match="expr.novelty"):
        expr.metrics("r", "t", k=3, metrics=["Novelty"])


@pytest.mark.parametrize("n_users", ["4", None, True, -1, math.nan, math.inf])
def test_novelty_n_users_must_be_a_number(n_users):
    with pytest.raises(ParameterError, match="n_users"):
        expr.novelty("p", k=3, n_users=n_users)


def test_novelty_n_users_may_be_a_numpy_number_or_an_expression():
    import numpy as np

    df = pl.DataFrame({"p": [[4, 1, None]], "u": [8]})  # -log2(4/8) = 1, -log2(1/8) = 3, cold: 3
    for n_users in (np.int64(8), np.float32(8.0), pl.col("u")):
        assert df.select(expr.novelty("p", k=3, n_users=n_users)).item() == pytest.approx(7 / 3, rel=1e-12)


# -- an overflowing gain raises, as evaluate() does (issue 35) -----------------------------------

EXP2 = rankwise.Convention(gain="exp2", log_base=2)  # explicit knobs: position 1 discounts by 1/log2(2) = 1
OVERFLOW = pl.DataFrame({"g": [1, 2], "r": [[1, 2, 3], [1, 2, 3]], "t": [[1], [3]], "rel": [[2000.0], [1.0]]})


@pytest.mark.parametrize("k", [2, expr.POSITIONAL_MAX_K + 1])  # both ways of reading positions
@pytest.mark.parametrize("name", ["dcg", "ndcg"])
def test_an_exp2_overflow_raises_when_the_query_runs(name, k):
    """2^2000 - 1 is inf as a double: the row was inf (dcg) or NaN (ndcg), and .fill_nan(None).mean()
    left it out of the mean without a word."""
    metric = getattr(expr, name)("r", "t", k=k, relevance="rel", convention=EXP2)
    with pytest.raises(NumericOverflowError, match=rf"{name}@{k}: 1 row\(s\)") as info:
        OVERFLOW.select(metric)
    assert "[2000.0]" in str(info.value) and "Hint: gain='exp2'" in str(info.value)
    with pytest.raises(NumericOverflowError):  # lazy, grouped, streaming: the same error when it runs
        OVERFLOW.lazy().group_by("g").agg(metric.fill_nan(None).mean()).collect(engine="streaming")
    with pytest.raises(NumericOverflowError):
        OVERFLOW.select(expr.metrics("r", "t", k=[1, k], metrics=["precision", name], relevance="rel",
                                     convention=EXP2))


def test_an_ideal_dcg_that_overflows_raises():
    """ideal='labels': the recommended label earns 1, the unrecommended one 2^2000 - 1 = inf, so the
    ratio was 1 / inf = 0, a plausible number."""
    df = pl.DataFrame({"r": [[1, 2, 3]], "t": [[1, 5]], "rel": [[1.0, 2000.0]]})
    with pytest.raises(NumericOverflowError, match="ndcg@1"):
        df.select(expr.ndcg("r", "t", k=1, relevance="rel", convention=EXP2.replace(ideal="labels")))


def test_exp2_below_the_limit_and_other_metrics_are_numbers():
    df = pl.DataFrame({"r": [[1, 2, 3]], "t": [[1]], "rel": [[1000.0]]})
    # 2^1000 - 1 rounds to 2^1000 (finite); the one relevant label is first, so NDCG is 1
    assert df.select(expr.dcg("r", "t", k=2, relevance="rel", convention=EXP2),
                     expr.ndcg("r", "t", k=2, relevance="rel", convention=EXP2)).row(0) == (2.0 ** 1000, 1.0)
    # precision never reads a gain: no error on the overflowing row (hits 1 of 2, 0 of 2)
    assert OVERFLOW.select(expr.precision("r", "t", k=2, relevance="rel", convention=EXP2)).to_series().to_list() \
        == [0.5, 0.0]


@pytest.mark.parametrize("query", [
    "SELECT rankwise_dcg_graded(r, t, rel, 2, gain := 'exp2') FROM v",
    "SELECT rankwise_ndcg_graded(r, t, rel, 2, gain := 'exp2') FROM v",
    "SELECT avg(rankwise_ndcg_graded(r, t, rel, 2, gain := 'exp2', ideal := 'labels')) FROM v",
])
def test_the_graded_macros_fail_on_an_exp2_overflow(query):
    con = duckdb.connect()
    expr.install_duckdb(con)
    con.execute("CREATE TEMP VIEW v AS SELECT * FROM (VALUES ([1, 2, 3], [3], [1.0]), ([1, 2, 3], [1], [2000.0])) "
                "t(r, t, rel)")
    with pytest.raises(duckdb.Error, match=r"overflowed.*\[2000\.0\].*gain := 'exp2'"):
        con.execute(query).fetchall()
    # below the limit: 2^1000 at position 1 over log2(2) = 1
    assert con.execute("SELECT rankwise_dcg_graded([1, 2], [1], [1000.0], 2, gain := 'exp2', log_base := 2), "
                       "rankwise_ndcg_graded([1, 2], [1], [1000.0], 2, gain := 'exp2', log_base := 2)"
                       ).fetchone() == (2.0 ** 1000, 1.0)


# -- one column, one role (issue 35): evaluate()'s rule ------------------------------------------

@pytest.mark.parametrize("recs,truth,relevance,pair", [
    ("r", "r", None, "recs and truth"),
    ("r", "t", "t", "truth and relevance"),
    ("r", "t", "r", "recs and relevance"),
    (pl.col("r"), "r", None, "recs and truth"),
    ("r", pl.col("t"), pl.col("t"), "truth and relevance"),
])
def test_one_column_cannot_play_two_roles(recs, truth, relevance, pair):
    with pytest.raises(ParameterError, match=f"{pair} name the same column"):
        expr.precision(recs, truth, k=2, relevance=relevance)
    if all(isinstance(c, str) or c is None for c in (recs, truth, relevance)):
        with pytest.raises(ParameterError, match=f"{pair} name the same column"):
            expr.check_lists(pl.DataFrame({"r": [[1]], "t": [[1]]}), recs, truth, relevance)


def test_an_expression_over_the_truth_column_may_be_the_relevance():
    df = pl.DataFrame({"r": [[1, 2]], "t": [[2, 3]]})  # relevance 1 per label: hit at 2 of 2 labels
    rel = pl.col("t").list.eval(pl.lit(1.0))
    assert df.select(expr.recall("r", "t", k=2, relevance=rel)).item() == 0.5


# -- trec_eval's judged-aware and gain measures; a negative relevance by negative_relevance (issue 38) -----------

# labels with relevance -1 (pooled, not judged), 0 (judged non-relevant), 0.5 (below every threshold but earning a
# linear gain) and 1-3; items without a label are not judged
_graded_user = st.tuples(
    st.one_of(st.none(), st.lists(_items, max_size=8, unique=True)),
    st.one_of(st.none(), st.dictionaries(_items, st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0]), max_size=7)),
)
_pooled = st.lists(_graded_user, min_size=1, max_size=6).filter(
    lambda us: any(r is not None or t is not None for r, t in us))
UNJUDGED = {
    "trec_eval": rankwise.PRESETS["trec_eval"],
    "default": rankwise.Convention(negative_relevance="unjudged"),
    "exp2": rankwise.Convention(negative_relevance="unjudged", gain="exp2", log_base=math.e, relevance_threshold=2.0,
                                ideal="labels", rbp_persistence=0.5, users="labels"),
    "linear": rankwise.PRESETS["ranx"].replace(metrics=None, negative_relevance="unjudged", gain="linear",
                                               relevance_threshold=0.0),
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(users=_pooled, name=st.sampled_from(sorted(UNJUDGED)), ks=st.lists(st.integers(1, 10), min_size=1, max_size=3),
       graded=st.booleans())
def test_negative_relevance_unjudged_expressions_equal_evaluate_and_oracle(users, name, ks, graded):
    """Under negative_relevance='unjudged' a negative relevance is trec_eval's pooled label for every metric, as in
    evaluate(): graded labels, unjudged items, short and empty lists, absent users; both ways of reading
    positions (k <= POSITIONAL_MAX_K and the list.eval passes)."""
    conv = UNJUDGED[name]
    names = _metric_names(conv)
    recs, truth, rf, tf, rows = _frames(users, graded=graded)
    rel = "rel" if graded else None
    query = rows.lazy().select("user", *expr.metrics("recs", "truth", k=ks, metrics=names, relevance=rel,
                                                     convention=conv))
    want = oracle.evaluate(recs, truth, sorted(set(ks)), conv)
    _expected(query.collect(), want, name, users)
    original = expr.POSITIONAL_MAX_K
    try:
        expr.POSITIONAL_MAX_K = 0
        _expected(rows.lazy().select("user", *expr.metrics("recs", "truth", k=ks, metrics=names, relevance=rel,
                                                           convention=conv)).collect(), want, name, users)
    finally:
        expr.POSITIONAL_MAX_K = original
    if rf.height and tf.height:
        res = rankwise.evaluate(rf, tf if graded else tf.drop("relevance"), k=ks, metrics=names, convention=conv)
        got = query.collect()
        for row in res.per_user.iter_rows(named=True):
            mine = got.filter(pl.col("user") == row["user"]).row(0, named=True)
            for col in got.columns[1:]:
                value = float("nan") if row[col] is None else row[col]
                assert close(mine[col], value), (name, row["user"], col, mine[col], value, users)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(users=_pooled, name=st.sampled_from(sorted(UNJUDGED)), k=st.integers(1, 10))
def test_graded_macros_of_the_judged_and_gain_measures_equal_oracle(con, users, name, k):
    """rankwise_<name>_graded with negative_relevance := 'unjudged' (and the binary macros on the same users'
    labels at relevance 1) against the oracle, users in either input (the macros have no users knob)."""
    conv = UNJUDGED[name].replace(users="union", unjudged="keep", metrics=None)
    for graded in (True, False):
        c = conv if graded else conv.replace(relevance_threshold=0.0)
        names = ["dcg", "ndcg", *JUDGED] if graded else JUDGED
        got, want = _macros_and_oracle(con, users, c, k, graded, names)
        for row in got.iter_rows(named=True):
            for n in names:
                expected = want[row["user"]][f"{n}@{k}"] if row["user"] in want else float("nan")
                assert close(row[n], expected), (name, graded, row["user"], n, row[n], expected, users)


def test_a_negative_relevance_under_negative_relevance_error_is_nan_as_evaluate_refuses(con):
    """negative_relevance='error' (the default): evaluate() raises on the row, the expressions and macros give it
    NaN and check_lists raises the typed error with its hint; 'unjudged' scores it. By hand for the row below:
    item 1 is pooled (-1), item 2 relevant, item 3 judged non-relevant, item 4 without a label."""
    df = pl.DataFrame({"r": [[1, 2, 3, 4], [2, 3]], "t": [[1, 2, 3], [2]], "rel": [[-1.0, 1.0, 0.0], [1.0]]})
    every = [getattr(expr, n)("r", "t", k=4, relevance="rel").alias(n) for n in ("precision", "bpref", "infap", "unj")]
    first, second = df.select(every).rows()
    assert all(math.isnan(v) for v in first) and second == (0.25, 1.0, 1.0, 0.25)
    with pytest.raises(InvalidRelevanceError, match="rel: 1 lists hold a negative relevance") as info:
        expr.check_lists(df, "r", "t", "rel")
    assert "negative_relevance='unjudged'" in str(info.value)
    long = df.with_row_index("user").explode("t", "rel")
    with pytest.raises(InvalidRelevanceError, match="negative"):
        rankwise.evaluate(df.with_row_index("user").select("user", item="r"),
                          long.select("user", item="t", relevance="rel"), k=4)
    unjudged = rankwise.Convention(negative_relevance="unjudged")
    assert expr.check_lists(df, "r", "t", "rel", convention=unjudged) is None
    values = df.select(getattr(expr, n)("r", "t", k=4, relevance="rel", convention=unjudged).alias(n)
                       for n in ("precision", "bpref", "infap", "unj", "judged", "num_nonrel_judged_ret")).row(0)
    # precision 1/4; bpref: no judged non-relevant item above item 2: 1, over R = 1; infAP at rank 2 (j = 1:
    # r = 0, n = 0, p = 1): 1/2 + (1/2)(1/1)(0.00001 / 0.00002) = 3/4; unj: items 1 and 4 of 4; judged: items 1-3
    assert values[:2] == (0.25, 1.0) and close(values[2], 0.75) and values[3:] == (0.5, 0.75, 1.0)
    row = con.execute("SELECT rankwise_bpref_graded([1, 2, 3, 4], [1, 2, 3], [-1.0, 1.0, 0.0], 4), "
                      "rankwise_infap_graded([1, 2, 3, 4], [1, 2, 3], [-1.0, 1.0, 0.0], 4, "
                      "negative_relevance := 'unjudged')").fetchone()
    assert math.isnan(row[0]) and close(row[1], 0.75)


def test_the_gain_measures_refuse_gain_levels_with_a_hint():
    with pytest.raises(ParameterError, match="gain_levels") as info:
        expr.g("r", "t", k=3, convention=rankwise.PRESETS["trec_eval"].replace(gain_levels=((1.0, 3.0),)))
    assert "Hint:" in str(info.value)


def _suite_rows(qrels: str, run: str) -> pl.DataFrame:
    """trec_eval's own files as one row per query: the run in trec_eval's order, the qrels as labels and levels."""
    from rankwise.inputs.trec import read_qrels, read_trec_run
    from trec_suite import SUITE_DIR

    recs = read_trec_run(SUITE_DIR / run).sort("user", "rank").group_by("user", maintain_order=True).agg(recs="item")
    truth = read_qrels(SUITE_DIR / qrels).group_by("user").agg(truth="item", rel=pl.col("relevance").cast(pl.Float64))
    return recs.join(truth, on="user", how="inner").sort("user")


# trec_eval's name -> rankwise's (cut measures unj_<k> at k; the others over the whole list)
SUITE_MEASURES = {"bpref": "bpref", "infAP": "infap", "num_nonrel_judged_ret": "num_nonrel_judged_ret", "G": "g",
                  "binG": "bin_g", "ndcg_rel": "ndcg_rel", "Rndcg": "rndcg", "rbp_resid": "rbp_resid", "unj": "unj"}


@pytest.mark.parametrize("qrels, expected, level", [("qrels.test", "out.test.aq", None),
                                                    ("qrels.rel_level", "out.test.aql", 2)])
def test_the_judged_and_gain_measures_on_trec_evals_own_files(con, qrels, expected, level):
    """trec_eval 10.0's quick test (results.test; qrels.rel_level has levels -1, -l2 a threshold of 2): every
    per-query line of bpref, infAP, num_nonrel_judged_ret, G, binG, ndcg_rel, Rndcg, rbp_resid and unj_<k>, as
    printed (%.4f, counts as integers), from the expressions and the graded macros."""
    from trec_suite import SUITE_DIR, parse_trec_eval_output

    conv = rankwise.PRESETS["trec_eval"]
    if level is not None:
        conv = conv.replace(relevance_threshold=float(level))
    rows = _suite_rows(qrels, "results.test")
    whole = int(rows.select(pl.col("recs").list.len().max()).item())
    lines = {(m, q): text for (m, q), text in parse_trec_eval_output(SUITE_DIR / expected).items()
             if q != "all" and (m in SUITE_MEASURES or m.startswith("unj_"))}
    assert len(lines) >= 3 * 11
    for (measure, qid), text in lines.items():
        name, k = (("unj", int(measure[4:])) if measure.startswith("unj_") else (SUITE_MEASURES[measure], whole))
        value = rows.filter(pl.col("user") == qid).select(
            getattr(expr, name)("recs", "truth", k=k, relevance="rel", convention=conv)).item()
        shown = f"{value:.0f}" if name == "num_nonrel_judged_ret" else f"{value:.4f}"
        assert shown == text, (expected, measure, qid, value, text)
        one = rows.filter(pl.col("user") == qid)  # noqa: F841 (DuckDB reads it by name)
        graded = conv.replace(users="union", unjudged="keep")
        macro = con.execute(f"SELECT {_macro_call(name, graded, k, True)} FROM one").fetchone()[0]
        assert close(macro, value), (expected, measure, qid, macro, value)
