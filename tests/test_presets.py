"""Presets on the review's five worked users (tests/test_review_tables.py) against the values the
libraries themselves returned (conventions.md section 3, recorded from live runs at the versions listed
there), the divergences we refuse to copy, explain(), the default convention as the libraries' vote, and
the generated docs page."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

import rankwise
from rankwise import Convention
from rankwise.generate import docs as _docs
from rankwise.conventions import presets as _presets

RECS = pl.DataFrame({"user": [1, 2, 3, 4, 5], "item": [[1, 6, 8], [1, 2, 3, 4, 5], [], [1, 2, 3, 4], []]})
TRUTH = pl.DataFrame({"user": [1, 2, 3, 4, 5], "item": [[1, 2, 3, 4, 5, 6], [2, 4, 6], [2, 4, 6], [], []]})

# library means at k = 1, 3, 5, to the 3 decimals the record gives
LIBRARY_VALUES = {
    "ranx": {"precision": (.200, .200, .160), "recall": (.033, .133, .200), "f1": (.057, .156, .173),
             "map": (.033, .100, .133), "mrr": (.200, .300, .300), "ndcg": (.200, .212, .210),
             "hit_rate": (.200, .400, .400)},
    "spark": {"precision": (.200, .200, .160), "recall": (.033, .133, .200), "map": (.200, .167, .147),
              "ndcg": (.200, .212, .210)},
    "trec_eval": {"precision": (.333, .333, .267), "recall": (.056, .222, .333), "map": (.056, .167, .222),
                  "mrr": (.500, .500, .500), "ndcg": (.333, .354, .350), "hit_rate": (.333, .667, .667)},
    "torchmetrics": {"precision": (.200, .200, .160), "recall": (.033, .133, .200), "map": (.200, .300, .300),
                     "mrr": (.200, .300, .300), "ndcg": (.200, .212, .210), "hit_rate": (.200, .400, .400)},
    "evidently": {"precision": (.333, .333, .267), "recall": (.056, .222, .333), "f1": (.095, .267, .296),
                  "map": (.056, .167, .222), "mar": (.009, .065, .139), "mrr": (.333, .500, .500),
                  "ndcg": (.333, .354, .350), "hit_rate": (.333, .667, .667)},
    "replay": {"precision": (.333, .333, .267), "recall": (.056, .222, .333), "map": (.333, .278, .244),
               "mrr": (.333, .500, .500), "ndcg": (.333, .354, .350), "hit_rate": (.333, .667, .667)},
    "rectools": {"precision": (.333, .333, .267), "recall": (.056, .222, .333), "f1": (.095, .259, .288),
                 "map": (.056, .167, .222), "mrr": (.333, .500, .500), "ndcg": (.333, .354, .304),
                 "hit_rate": (.333, .667, .667)},
    "recbole": {"precision": (.333, .333, .267), "recall": (.056, .222, .333), "map": (.333, .278, .244),
                "mrr": (.333, .500, .500), "ndcg": (.333, .354, .350), "hit_rate": (.333, .667, .667)},
    "kaggle": {"map": (.600, .567, .547)},
}
# the long-form libraries never see a user with no row in their (ground-truth) table
LONG_FORM = {"evidently", "replay", "rectools", "recbole", "trec_eval"}


@pytest.mark.heavy  # Spark/PostgreSQL: tests/test_engines.py runs the same SQL under every convention
@pytest.mark.parametrize("preset", sorted(LIBRARY_VALUES))
def test_preset_reproduces_library_on_the_review_users(preset, backend):
    recs, truth = RECS, TRUTH
    if preset in LONG_FORM:
        truth = TRUTH.filter(pl.col("item").list.len() > 0)
    res = rankwise.evaluate(recs, truth, k=[1, 3, 5], metrics=list(LIBRARY_VALUES[preset]),
                            convention=preset, backend=backend)
    got = {(r["metric"], r["k"]): r["value"] for r in res.summary.iter_rows(named=True)}
    for metric, values in LIBRARY_VALUES[preset].items():
        for k, expected in zip((1, 3, 5), values):
            assert got[(metric, k)] == pytest.approx(expected, abs=5e-4), (metric, k)


def test_explain_recommended_ideal_vs_ranx_names_the_two_causes():
    ex = rankwise.explain(RECS, TRUTH, a="recommended_ideal", b="ranx", metric="map", k=5)
    assert ex.value_a == pytest.approx(1 / 2) and ex.value_b == pytest.approx(2 / 15)
    causes = {r["knob"]: r["share"] for r in ex.table.iter_rows(named=True) if r["effect"] != 0}
    assert set(causes) == {"ap_denominator", "empty_labels"}
    assert sum(causes.values()) == pytest.approx(1.0)
    # exact Shapley shares: ap alone -0.2778, with zeros -0.1667; labels alone -0.2, after ap -0.0889
    assert causes["ap_denominator"] == pytest.approx((0.5 * (5 / 18 + 1 / 6)) / (11 / 30))
    assert "ap_denominator" in str(ex) and "empty_labels" in str(ex)


def test_a_preset_refuses_metrics_its_library_lacks():
    with pytest.raises(rankwise.ParameterError, match="no metric 'mrr'"):
        rankwise.evaluate(RECS, TRUTH, k=5, metrics=["mrr"], convention="spark")
    res = rankwise.evaluate(RECS, TRUTH, k=5, convention="spark")  # metrics=None: what Spark has
    assert set(res.summary["metric"]) == {"precision", "recall", "map", "ndcg"}


def test_divergence_spark_counts_repeated_items_we_refuse_them():
    """Spark gives recall 2.0 and AP 2.0 for pred [1, 1, 2], labels {1}; rankwise raises instead."""
    recs = pl.DataFrame({"user": [1], "item": [[1, 1, 2]]})
    truth = pl.DataFrame({"user": [1], "item": [[1]]})
    with pytest.raises(rankwise.DuplicateItemError):
        rankwise.evaluate(recs, truth, k=3, convention="spark")
    kept = rankwise.evaluate(recs, truth, k=3, convention=rankwise.PRESETS["spark"].replace(duplicates="first_shift"))
    assert kept.summary.filter(pl.col("metric") == "recall")["value"].item() == 1.0


def test_divergence_evidently_map_stays_within_one():
    """Evidently repeats a short list's last relevance past its end: user A = [relevant] alone and
    user B relevant at rank 1 of 12 give MAP@3 = 2.0 there; the true value is 1.0."""
    recs = pl.DataFrame({"user": ["A", "B"], "item": [["a1"], [f"b{i}" for i in range(12)]]})
    truth = pl.DataFrame({"user": ["A", "B"], "item": [["a1"], ["b0"]]})
    res = rankwise.evaluate(recs, truth, k=3, metrics=["map", "mar"], convention="evidently")
    assert res.summary["value"].to_list() == [1.0, 1.0]


def test_compare_conventions_side_by_side():
    table = rankwise.compare_conventions(RECS, TRUTH, k=[3, 5], presets=["recommended_ideal", "ranx", "spark"])
    assert table.columns == ["metric", "k", "recommended_ideal", "ranx", "spark"]
    row = table.filter(pl.col("metric") == "map", pl.col("k") == 5).row(0, named=True)
    assert row["recommended_ideal"] == pytest.approx(1 / 2) and row["spark"] == pytest.approx(.14667, abs=1e-5)
    assert table.filter(pl.col("metric") == "mrr")["spark"].is_null().all()


def test_docs_page_is_generated_from_the_code():
    page = Path(__file__).parents[1] / "docs" / "metrics.md"
    assert page.read_text() == _docs.render(), "run: python -m rankwise.generate.docs > docs/metrics.md"


# beyond accuracy: train users u1-u4 all saw A, u1 saw B (U_T = 4, pop A = 4, pop B = 1); x gets [B],
# y gets [A, B]. Novelty per item -log2(pop / 4): A 0, B 2.
_TRAIN = pl.DataFrame({"user": ["u1", "u2", "u3", "u4", "u1"], "item": ["A", "A", "A", "A", "B"]})
_BEYOND_RECS = pl.DataFrame({"user": ["x", "y", "y"], "item": ["B", "A", "B"], "rank": [1, 1, 2]})


def test_explain_a_beyond_accuracy_gap_default_vs_replay():
    """default: x 2, y (0 + 2) / 2 = 1, mean 1.5. replay divides by log U_T (-ln(pop/4) / ln 4: A 0,
    B 1) and by k = 2: x 1/2, y 1/2, mean 0.5. One knob at a time: normalise only 0.75, divide by k only
    1.0. Shapley: novelty_normalize (-0.75 - 0.5) / 2 = -0.625, list_denominator (-0.5 - 0.25) / 2 = -0.375."""
    ex = rankwise.explain(_BEYOND_RECS, None, a="default", b="replay", metric="novelty", k=2, train=_TRAIN)
    assert ex.value_a == pytest.approx(1.5) and ex.value_b == pytest.approx(0.5)
    effects = {r["knob"]: r["effect"] for r in ex.table.iter_rows(named=True) if r["effect"] != 0}
    assert effects == {"novelty_normalize": pytest.approx(-0.625), "list_denominator": pytest.approx(-0.375)}


def test_compare_conventions_with_beyond_accuracy_metrics():
    table = rankwise.compare_conventions(_BEYOND_RECS, None, k=2, presets=["default", "replay", "ranx", "recbole"],
                                         metrics=["novelty", "item_coverage"], train=_TRAIN)
    assert table["metric"].to_list() == ["novelty", "item_coverage"]
    novelty = table.row(0, named=True)
    assert novelty["default"] == pytest.approx(1.5) and novelty["replay"] == pytest.approx(0.5)
    assert novelty["ranx"] is None and novelty["recbole"] is None  # neither library has novelty
    coverage = table.row(1, named=True)  # {A, B} of the train catalog {A, B}; RecBole adds [PAD]: 2 / 3
    assert coverage["default"] == 1.0 and coverage["replay"] == 1.0 and coverage["recbole"] == pytest.approx(2 / 3)
    assert coverage["ranx"] is None


def test_compare_conventions_keeps_beyond_metrics_of_derived_conventions():
    """A convention derived with replace() is renamed but keeps its preset's metrics, beyond-accuracy ones
    included (they were looked up by name, so every beyond value was null). By hand (see _TRAIN):
    evidently with cold_items='as_one': no cold item here, novelty x 2, y (0 + 2) / 2 = 1, mean 1.5;
    default in nats: -ln(pop / 4) is A 0, B ln 4: x ln 4, y ln 4 / 2, mean 0.75 ln 4; item_coverage: {A, B}
    of the train catalog {A, B} = 1 for both. Evidently has no serendipity or long_tail_share."""
    derived = [rankwise.PRESETS["evidently"].replace(cold_items="as_one"),
               rankwise.PRESETS["default"].replace(info_log_base=math.e)]
    table = rankwise.compare_conventions(_BEYOND_RECS, None, k=2, presets=derived,
                                         metrics=["novelty", "item_coverage", "long_tail_share"], train=_TRAIN)
    evidently, nats = (c.name for c in derived)
    novelty, coverage, tail = table.iter_rows(named=True)
    assert novelty[evidently] == pytest.approx(1.5) and novelty[nats] == pytest.approx(0.75 * math.log(4))
    assert coverage[evidently] == 1.0 and coverage[nats] == 1.0
    assert tail[evidently] is None and tail[nats] is not None
    for preset in rankwise.PRESETS.values():  # each library's beyond-accuracy note is in its notes
        if preset.name not in _presets.NOT_LIBRARIES and set(preset.metrics) & set(rankwise.BEYOND_METRICS):
            assert "Beyond accuracy (run live" in preset.notes, preset.name


def test_compare_conventions_raises_a_side_input_error_once():
    """A train without a user column, or with text item ids against integer ones, is the input's fault,
    not a preset's: it raises, instead of skipping every preset that has novelty."""
    with pytest.raises(rankwise.MissingColumnError, match="train"):
        rankwise.compare_conventions(_BEYOND_RECS, None, k=2, metrics=["novelty", "ndcg"],
                                     train=_TRAIN.drop("user"))
    integer_ids = _BEYOND_RECS.with_columns(pl.col("item").replace_strict({"A": 1, "B": 2}))  # train's stay text
    with pytest.raises(rankwise.DtypeMismatchError, match="train"):
        rankwise.compare_conventions(integer_ids, None, k=2, metrics=["novelty"], train=_TRAIN)


def test_compare_conventions_refuses_two_conventions_of_one_name():
    """Two conventions of one name would collide as the table's columns (Polars' DuplicateError with
    three, a silent '<name>_right' column with two)."""
    recs = pl.DataFrame({"user": [1, 1, 2], "item": [1, 2, 3], "rank": [1, 2, 1]})
    truth = pl.DataFrame({"user": [1, 1, 2], "item": [2, 1, 3], "relevance": [3.0, 1.0, 1.0]})
    for presets in ([Convention(name="x"), Convention(gain="exp2", name="x")],
                    [Convention(name="x"), Convention(gain="exp2", name="x"), Convention(gain="binary", name="x")]):
        with pytest.raises(rankwise.ParameterError, match="named 'x'"):
            rankwise.compare_conventions(recs, truth, k=2, metrics=["dcg"], presets=presets)
    for exp2 in (Convention(gain="exp2"), Convention().replace(gain="exp2")):
        table = rankwise.compare_conventions(recs, truth, k=2, metrics=["dcg"], presets=[Convention(), exp2])
        assert table.columns == ["metric", "k", "default", "default gain='exp2'"]


def test_a_convention_built_with_other_knobs_is_not_named_default():
    """Convention(gain='exp2') was named 'default' (and written to the warehouse as convention =
    'default'): it is named as replace() names it; a name given stays."""
    assert Convention(gain="exp2").name == "default gain='exp2'"
    assert Convention(gain="exp2", log_base=3).name == "default gain='exp2' log_base=3"
    assert Convention(gain="exp2", name="mine").name == "mine"
    assert Convention().name == "default"
    recs = pl.DataFrame({"user": [1], "item": [1], "rank": [1]})
    result = rankwise.evaluate(recs, recs, k=1, metrics=["dcg"], convention=Convention(gain="exp2"))
    from rankwise.io import write as _write
    assert _write.frames(result)["runs"]["convention"].to_list() == ["default gain='exp2'"]


def test_explain_names_the_mixes_that_leave_the_split_undefined():
    """One user, its only label of relevance 0.5: under relevance_threshold=1 it has no relevant label,
    so with users='union' and empty_labels='nan' (recommended_ideal) no user has a precision (a NaN
    mean). Shapley effects through such a mix are undefined: NaN, and the note says which mixes, instead
    of NaN silently. A knob that cannot move precision (gain) has no row: the note names it."""
    recs = pl.DataFrame({"user": [1, 1], "item": [10, 11], "rank": [1, 2]})
    truth = pl.DataFrame({"user": [1], "item": [10], "relevance": [0.5]})
    ex = rankwise.explain(recs, truth, a="recommended_ideal", b="ranx", metric="precision", k=2)
    assert (ex.value_a, ex.value_b) == (0.5, 0.0)  # 1 hit of 2; ranx: not relevant, scored 0
    assert "relevance_threshold" in ex.note and "no user has a defined precision@2" in ex.note
    effects = dict(ex.table.select("knob", "effect").iter_rows())
    assert math.isnan(effects["relevance_threshold"]) and "gain" not in effects
    assert "cannot move precision: " in ex.note and "gain" in ex.note.split("cannot move precision: ")[1]
    assert ex.note in str(ex)


def test_explain_refuses_a_metric_a_convention_does_not_define():
    """explain(b='spark', metric='mrr') attributed a gap to a value MLlib never computes; evaluate() and
    compare_conventions refuse or leave out such a metric."""
    recs = pl.DataFrame({"user": [1, 1], "item": [10, 11], "rank": [1, 2]})
    truth = pl.DataFrame({"user": [1], "item": [10]})
    with pytest.raises(rankwise.ParameterError, match="'spark' convention has no metric 'mrr'"):
        rankwise.explain(recs, truth, a="default", b="spark", metric="mrr", k=2)
    lifted = rankwise.PRESETS["spark"].replace(metrics=None)
    assert rankwise.explain(recs, truth, a="default", b=lifted, metric="mrr", k=2).value_b == 1.0  # hit at rank 1


def test_a_beyond_metric_a_preset_lacks_is_refused_like_an_accuracy_one():
    """evaluate(metrics=['serendipity'], convention='evidently') computed a metric Evidently does not
    have, while an accuracy metric outside a preset raises; derived with metrics=None it is computed."""
    recs = pl.DataFrame({"user": [1, 1], "item": [10, 11], "rank": [1, 2]})
    truth = pl.DataFrame({"user": [1], "item": [10]})
    train = pl.DataFrame({"user": [1, 2], "item": [10, 11]})
    with pytest.raises(rankwise.ParameterError, match="'evidently' convention has no metric 'serendipity'"):
        rankwise.evaluate(recs, truth, k=2, metrics=["serendipity"], train=train, convention="evidently")
    lifted = rankwise.PRESETS["evidently"].replace(metrics=None)
    assert rankwise.evaluate(recs, truth, k=2, metrics=["serendipity"], train=train, convention=lifted).summary.height == 1


def test_the_readme_preset_table_lists_each_presets_metrics():
    """The README's "metrics it has" column is each preset's Convention.metrics (accuracy; beyond
    accuracy), so that it cannot drift from the presets (it listed only the accuracy metrics)."""
    from rankwise.metrics.declarations import REGISTRY

    public = {m.name: m.public_name for m in REGISTRY}
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    rows = {line.split("|")[1].strip().strip("`"): line.split("|")[3].strip()
            for line in readme.splitlines() if line.startswith("| `") and line.split("|")[1].strip().strip("`") in
            rankwise.PRESETS}
    assert set(rows) == set(rankwise.PRESETS)
    for name, listed in rows.items():
        if name in _presets.NOT_LIBRARIES:
            assert listed == "all"
            continue
        want = ", ".join(public.get(m, m) for m in rankwise.PRESETS[name].metrics if m in public)
        beyond = [m for m in rankwise.PRESETS[name].metrics if m not in public]
        assert listed == want + (f"; {', '.join(beyond)}" if beyond else ""), name


def test_explain_note_names_the_base_mix():
    """Every label of relevance 0: no user has a relevant label, so map@5 is NaN under both
    conventions (empty_labels 'nan') and in every mix, the base (no knob switched) included."""
    recs = pl.DataFrame({"user": [1, 1], "item": [10, 11], "rank": [1, 2]})
    truth = pl.DataFrame({"user": [1], "item": [10], "relevance": [0.0]})
    ex = rankwise.explain(recs, truth, a="recommended_ideal", b="ranx", metric="map", k=5)
    assert "recommended_ideal's own values (no knob switched)" in ex.note
    assert "with ;" not in ex.note and "with  " not in ex.note


def test_compare_conventions_raises_for_an_input_every_preset_needs():
    """novelty needs train under every convention: a ParameterError naming it (as evaluate raises), not
    every preset that has novelty left out of the table with its accuracy metrics."""
    import rankwise
    from rankwise.errors import ParameterError

    recs = pl.DataFrame({"user": [1, 1, 2, 2], "item": [1, 2, 1, 3], "rank": [1, 2, 1, 2]})
    truth = pl.DataFrame({"user": [1, 2], "item": [2, 3]})
    for metrics in (["ndcg", "novelty"], ["novelty"]):
        with pytest.raises(ParameterError, match="needs train"):
            rankwise.compare_conventions(recs, truth, k=3, metrics=metrics)


def test_compare_conventions_keeps_a_row_no_chosen_preset_defines():
    """Neither kaggle nor spark has mrr: its rows are there, null in both columns."""
    import rankwise

    recs = pl.DataFrame({"user": [1, 1, 2, 2], "item": [1, 2, 1, 3], "rank": [1, 2, 1, 2]})
    truth = pl.DataFrame({"user": [1, 2], "item": [2, 3]})
    table = rankwise.compare_conventions(recs, truth, k=[3, 5], presets=["kaggle", "spark"], metrics=["mrr", "precision"])
    assert table.select("metric", "k").rows() == [("mrr", 3), ("mrr", 5), ("precision", 3), ("precision", 5)]
    assert table.filter(pl.col("metric") == "mrr").select("kaggle", "spark").null_count().row(0) == (2, 2)
    assert table.filter(pl.col("metric") == "precision")["spark"].to_list() == [1 / 3, 1 / 5]


def test_explain_a_mix_where_an_error_rule_raises_is_an_undefined_split():
    """strict (users='intersection', empty_predictions='error') and ranx each evaluate; the mix users='labels'
    + empty_predictions='error' raises (user 3 has labels, no list). explain names it instead of raising;
    a convention that raises on its own still raises."""
    import rankwise
    from rankwise import Convention
    from rankwise.errors import UndefinedValueError

    recs = pl.DataFrame({"user": [1, 1, 2], "item": [1, 2, 1], "rank": [1, 2, 1]})
    truth = pl.DataFrame({"user": [1, 3], "item": [2, 5]})
    strict = Convention(name="strict", users="intersection", empty_predictions="error")
    ex = rankwise.explain(recs, truth, a=strict, b="ranx", metric="ndcg", k=3)
    assert ex.value_a == pytest.approx(1 / math.log2(3)) and ex.value_a == rankwise.evaluate(
        recs, truth, k=3, metrics=["ndcg"], convention=strict).summary["value"].item()
    assert ex.value_b == rankwise.evaluate(recs, truth, k=3, metrics=["ndcg"], convention="ranx").summary["value"].item()
    assert "an 'error' rule raises there" in ex.note and ex.table["effect"].is_nan().all()
    with pytest.raises(UndefinedValueError):
        rankwise.explain(recs, truth, a=strict.replace(users="labels"), b="ranx", metric="ndcg", k=3)


def test_compare_conventions_and_explain_say_they_take_one_run():
    import rankwise
    from rankwise.errors import ParameterError

    recs = pl.DataFrame({"user": [1, 1, 2], "item": [1, 2, 1], "rank": [1, 2, 1]})
    truth = pl.DataFrame({"user": [1, 2], "item": [2, 1]})
    for call in (lambda: rankwise.compare_conventions({"a": recs, "b": recs}, truth, k=2),
                 lambda: rankwise.explain({"a": recs, "b": recs}, truth, metric="ndcg", k=2)):
        with pytest.raises(ParameterError, match="one run") as info:
            call()
        assert "recommendations['a']" in str(info.value)


# -- the default convention: the libraries' vote -------------------------------------------------------

def test_the_default_is_the_libraries_vote():
    """Convention()'s knobs are written in conventions.py; they must be what _presets.vote gives over the
    library presets, with the overrides docs/metrics.md explains. Change a preset (or a default) and this
    fails until the two agree again."""
    assert Convention().knobs() == _presets.voted_default()
    assert rankwise.PRESETS["default"].knobs() == Convention().knobs()
    votes = _presets.vote()
    for knob, (value, why) in _presets.OVERRIDES.items():
        assert value != votes[knob].winner and why, knob  # an override that changes nothing is noise
        allowed = rankwise.knob_documentation()[knob][0]
        if isinstance(allowed, tuple):
            assert value in allowed, knob
        else:  # a number: the Convention's own check accepts it
            Convention(**{knob: value})


def test_the_vote_counts_only_presets_with_a_metric_the_knob_moves():
    """kaggle has only MAP: it has no say on NDCG's ideal; default and recommended_ideal never vote."""
    names = {p.name for p in _presets.voters("ideal")}
    assert "kaggle" not in names and "surprise" not in names and "ranx" in names
    assert not names & set(_presets.NOT_LIBRARIES)
    assert {p.name for p in _presets.voters("users")} == set(rankwise.PRESETS) - set(_presets.NOT_LIBRARIES)


def test_the_vote_breaks_ties_with_trec_eval_and_ranx_then_the_first_listed_value():
    """Four made-up presets with MAP: 2 vote n_rel, 2 min_k_nrel. When trec_eval and ranx are the two
    n_rel voters, n_rel wins; when they split, the value listed first of the tied ones (n_rel comes before
    min_k_nrel in the knob's values)."""
    def lib(name, ap):
        return Convention(name=name, metrics=("map",), ap_denominator=ap)

    shared = {p.name: p for p in (lib("trec_eval", "n_rel"), lib("ranx", "n_rel"), lib("a", "min_k_nrel"),
                                   lib("b", "min_k_nrel"))}
    v = _presets.vote(shared)["ap_denominator"]
    assert (v.winner, v.rule) == ("n_rel", "tie: the value trec_eval and ranx share")
    split = {p.name: p for p in (lib("trec_eval", "min_k_nrel"), lib("ranx", "n_rel"), lib("a", "min_k_nrel"),
                                  lib("b", "n_rel"))}
    v = _presets.vote(split)["ap_denominator"]
    assert (v.winner, v.rule) == ("n_rel", "tie: the value listed first")
    three = {**split, "c": lib("c", "k")}  # no tie among the leaders: the most votes win, k has 1
    assert _presets.vote(three)["ap_denominator"].winner == "n_rel"
    majority = {**shared, "c": lib("c", "min_k_nrel")}
    assert (_presets.vote(majority)["ap_denominator"].winner, _presets.vote(majority)["ap_denominator"].rule) == \
        ("min_k_nrel", "")


def test_the_default_on_the_review_users_by_hand():
    """The default on the review's five users at k = 5: users 1-5 are all in the ground truth (4 and 5 with
    no label score 0, as user 3 without a list does). User 1: [1, 6, 8] against {1..6}, hits at 1 and 2;
    user 2: [1..5] against {2, 4, 6}, hits at 2 and 4. AP / min(k, n_rel): 1: (1/1 + 2/2) / 5,
    2: (1/2 + 2/4) / 3. NDCG, linear gain on 0/1 labels, log2, ideal from the labels cut at 5:
    1: (1 + 1/log2 3) / sum_{i<=5} 1/log2(i+1), 2: (1/log2 3 + 1/log2 5) / (1 + 1/log2 3 + 1/log2 4)."""
    res = rankwise.evaluate(RECS, TRUTH, k=5, metrics=["map", "ndcg"])
    got = dict(res.summary.select("metric", "value").iter_rows())
    d = [1 / math.log2(i + 1) for i in range(1, 6)]
    assert got["map"] == pytest.approx((2 / 5 + 1 / 3) / 5, rel=1e-12)
    assert got["ndcg"] == pytest.approx(((d[0] + d[1]) / sum(d) + (d[1] + d[3]) / sum(d[:3])) / 5, rel=1e-12)
    assert res.summary["n_users"].to_list() == [5, 5]


def test_the_default_lies_within_the_libraries_on_the_bundled_example():
    """NDCG@10 and MAP@10 on examples/: the default's value lies between the smallest and the largest of
    the library presets that define the metric; recommended_ideal's (the review's definitions) lies above
    every library's, the gap the default used to have."""
    root = Path(__file__).resolve().parents[1] / "examples"
    recs, truth = pl.read_parquet(root / "recommendations.parquet"), pl.read_parquet(root / "ground_truth.parquet")

    def at10(convention, metric):
        res = rankwise.evaluate(recs, truth, k=10, metrics=[metric], convention=convention)
        return res.summary["value"].item()

    for metric in ("ndcg", "map"):
        libraries = [at10(name, metric) for name, p in rankwise.PRESETS.items()
                     if name not in _presets.NOT_LIBRARIES and metric in p.metrics]
        assert len(libraries) >= 8, metric
        assert min(libraries) <= at10("default", metric) <= max(libraries), metric
        assert at10("recommended_ideal", metric) > max(libraries), metric


def test_the_duckdb_macros_default_to_the_default_convention():
    """sql/macros.sql writes each knob's default as a named parameter: every one is Convention()'s."""
    import re

    from rankwise.sqlgen import files as _sql_files

    default = Convention().knobs()
    headers = re.findall(r"CREATE OR REPLACE TEMP MACRO (rankwise_\w+)\((.*?)\) AS", _sql_files.read("macros"), re.S)
    seen = set()
    for name, params in headers:
        for knob, literal in re.findall(r"(\w+) := ('[^']*'|[-\d.e]+|true|false)", params):
            if knob not in default:
                continue  # beta
            value = {"true": True, "false": False}.get(literal, literal.strip("'"))
            want = default[knob]
            if isinstance(want, (int, float)) and not isinstance(want, bool):
                value = float(value)
            assert value == want, (name, knob, value, want)
            seen.add(knob)
    assert {"ap_denominator", "ideal", "gain", "log_base", "empty_labels"} <= seen
