"""Named presets: the knob values that reproduce each library, and the metrics it has.

Each preset was checked against a live run of its library (tests/conformance, versions there). A
library's plain bugs that yield impossible values are not copied; each such divergence is written in
the preset's notes and pinned by a test in tests/test_presets.py. A preset's ``metrics`` hold its
beyond-accuracy metrics too (after the accuracy ones), its notes say how they were checked
(tests/conformance, ../shared/beyond_accuracy.md).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from rankwise.conventions.knobs import Convention, knob_documentation
from rankwise.metrics.declarations import BEYOND, KNOBS_BY_METRIC, USER_LEVEL

_ALL = USER_LEVEL + tuple(m.name for m in BEYOND)  # every accuracy and beyond-accuracy metric


def _preset(name: str, metrics: tuple[str, ...], notes: str, **knobs) -> Convention:
    return Convention(name=name, metrics=metrics, notes=" ".join(notes.split()), **knobs)


PRESETS: dict[str, Convention] = {
    p.name: p
    for p in (
        _preset(
            "default", _ALL,
            """The definition the field shares: for each knob, the value most of the library presets use
            (ties: the value trec_eval and ranx share), three beyond-accuracy knobs excepted (the vote
            per knob and why: docs/metrics.md, "The default convention"). The ground-truth users; no
            relevant label or no list -> 0; precision / k; AP / min(k, |relevant|); F per user; NDCG
            with linear gain, log2, ideal = the user's labels sorted, cut at k.""",
        ),
        _preset(
            "recommended_ideal", _ALL,
            """The definitions of a widely read review of recommender-metric definitions with five-user
            worked tables (tests/test_review_tables.py checks every cell): the ideal DCG from the top-k
            recommended items' own gains sorted (a list of hits scores NDCG 1, whatever it missed) and
            AP over the hits in the top k; users in either input; no relevant label -> undefined (left
            out of means); labels but no list -> 0; gain 2^rel - 1 (the review's binary gain on 0/1
            labels), natural log. No library computes NDCG or MAP this way; the beyond-accuracy knobs
            are the default's.""",
            users="union", empty_labels="nan", ap_denominator="n_hits", gain="exp2", log_base=math.e,
            ideal="predictions_topk",
        ),
        _preset(
            "ranx", ("precision", "recall", "fbeta", "map", "mrr", "dcg", "ndcg", "hit_rate", "r_precision"),
            """ranx 0.3.21 (Qrels/Run): the qrels queries (ranx requires the run to cover the same
            queries; make_comparable=True, the usual fix, evaluates the qrels queries), empty qrels or run -> 0; relevant = rel >= 1;
            AP / |relevant|; ndcg/dcg linear gain ("Jarvelin"), log2, ideal = qrels sorted, cut at k.
            Not reproduced: the -lN suffix also drops labels below N from the gains (rankwise keeps
            raw gains above a relevance_threshold for DCG).
            r_precision@k equals ranx's uncut r-precision when k >= |relevant|. ranx breaks score
            ties with an unstable argsort: give distinct scores or ranks.""",
            users="labels", empty_labels="zero", empty_predictions="zero", ap_denominator="n_rel",
            gain="linear", log_base=2.0, ideal="labels", relevance_threshold=1.0,
        ),
        _preset(
            "trec_eval", ("precision", "recall", "map", "mrr", "ndcg", "hit_rate", "r_precision", "rbp", "num_ret",
                          "num_rel", "num_rel_ret", "set_p", "set_recall", "set_relative_p", "set_map", "set_f",
                          "relative_p", "utility", "gm_map", "rprec_mult",
                          "iprec_at_recall", "ipt11_avg", "num_nonrel_judged_ret", "bpref", "gm_bpref", "infap",
                          "unj", "g", "bin_g", "ndcg_rel", "rndcg", "rbp_resid"),
            """trec_eval 10.0 / pytrec_eval-terrier 0.5.11 measures P_k, recall_k, map_cut_k,
            recip_rank (no cutoff: mrr@k ignores k), ndcg_cut_k (linear gain, log2, ideal from all
            qrels), success_k (hit_rate), Rprec (= r_precision@k for k >= R). Queries in both qrels
            and run; judged-but-all-non-relevant queries score 0; relevant = rel >= 1. Score ties:
            docno descending (strcmp), reproduced by ties='item_desc' for string ids of equal width.
            rbp (p = 0.9, trec_eval's default; rbp@k as trec_eval -M k) over binary relevance: trec_eval
            rescales graded gains to [0, 1] from bounds it leaves uninitialised, so graded qrels differ.
            num_ret, num_rel, num_rel_ret, set_p, set_recall, set_relative_p, set_map, set_f (weight
            1), utility (coefficients 1, -1, 0, 0) and gm_map at k are trec_eval's over the top k
            (trec_eval -M k): at a k past every list, trec_eval's values; relative_P_k is
            relative_p@k. Rprec_mult_<m> is rprec_mult@k with rprec_multiplier=m (denominator
            floor(m R + 0.9) as trec_eval), iprec_at_recall_<l> iprec_at_recall@k with
            iprec_recall_level=l (the level as round(l R) relevant items, trec_eval 10.0); 11pt_avg is ipt11_avg@k.
            A qrels level below 0 is pooled but not judged (negative_relevance='unjudged'): bpref, gm_bpref, infAP,
            num_nonrel_judged_ret (over the top k, as -M k) and unj_k read it as trec_eval does.
            G, binG, ndcg_rel, Rndcg and rbp_resid are g, bin_g, ndcg_rel, rndcg and rbp_resid@k (an
            unjudged item: no ground-truth row); trec_eval's -m ndcg.1=3,2=9 gains are gain_levels.""",
            users="intersection", empty_labels="zero", empty_predictions="zero", ap_denominator="n_rel",
            gain="linear", log_base=2.0, ideal="labels", relevance_threshold=1.0, rr_cutoff=False,
            ties="item_desc", unjudged="drop", rbp_persistence=0.9, negative_relevance="unjudged",
        ),
        _preset(
            "spark", ("precision", "recall", "map", "ndcg"),
            """Spark MLlib RankingMetrics / ml.RankingEvaluator 4.3.0: every row counted; empty labels
            or predictions -> 0 (with a warning); precision / k; meanAveragePrecisionAt(k) /
            min(|L|, k); binary NDCG, natural log, ideal min(|L|, k) ones (PySpark drops graded
            relevance). Divergence, not copied: Spark counts a repeated predicted item every time
            (precision, recall, AP and NDCG above 1); rankwise rejects repeats (duplicates='error').""",
            users="union", empty_labels="zero", empty_predictions="zero", ap_denominator="min_k_nrel",
            gain="binary", log_base=math.e, ideal="labels",
        ),
        _preset(
            "torchmetrics", ("precision", "recall", "map", "mrr", "ndcg", "hit_rate"),
            """TorchMetrics 1.9.0 Retrieval* with empty_target_action='neg': queries with no positive
            target -> 0; precision / k; RetrievalMAP(top_k) divides by the hits in the top k; NDCG
            linear gain, log2, ideal from all targets of the query. Feed positive scores (1/rank):
            TorchMetrics treats rows scored <= 0 as not retrieved for P/R/AP/RR only.""",
            users="union", empty_labels="zero", empty_predictions="zero", ap_denominator="n_hits",
            gain="linear", log_base=2.0, ideal="labels",
        ),
        _preset(
            "sklearn", ("dcg", "ndcg"),
            """scikit-learn 1.9.1 dcg_score / ndcg_score (ignore_ties or distinct scores): linear gain,
            log2 (dcg_score's default log_base), ideal = the row's true relevances sorted, cut at k;
            an all-irrelevant row -> 0.""",
            users="union", empty_labels="zero", empty_predictions="zero", gain="linear", log_base=2.0,
            ideal="labels",
        ),
        _preset(
            "evidently", ("precision", "recall", "fbeta", "map", "mar", "mrr", "ndcg", "hit_rate",
                          "item_coverage", "novelty", "arp", "gini", "personalization", "ild", "score_entropy"),
            """Evidently 0.7.23 (legacy and new API): users with at least one relevant row; precision /
            min(k, rows of the user), a row per item recommended or relevant; AP and AR / |relevant|; F-beta of the mean P and mean R; NDCG
            linear on the raw target, log2, ideal from all the user's rows. Divergence, not copied:
            Evidently repeats a short list's last relevance beyond its end, so MAP/MAR can exceed 1.
            Beyond accuracy (run live: Evidently 0.7.23 legacy metrics, tests/conformance, 1e-9 per
            user for novelty and diversity): novelty and arp drop items missing from train (a user
            with only such items is left out); coverage over train items; gini over recommended
            items / (n - 1); diversity = ild with 1 - cosine summed over pairs and divided by n_u
            (Evidently's missing normalisation, reproduced: values can exceed 1); personalization
            subtracts #U k (exact only for full lists, reproduced); score_entropy in nats. Not
            reproduced: serendipity (another family), normalize_arp=True, float average ranks of
            tied scores.""",
            users="labels", empty_labels="nan", empty_predictions="zero", precision_denominator="min_k_candidates",
            ap_denominator="n_rel", f_aggregation="of_means", gain="linear", log_base=2.0, ideal="labels",
            arp_popularity="users", cold_items="drop", catalog="train", gini="recommended_n1", ild_denominator="n_u",
            ild_short="zero", personalization_lists="full",
        ),
        _preset(
            "recommenders", ("precision", "recall", "map", "item_coverage", "exposure_entropy", "ild"),
            """Microsoft Recommenders 1.2.1 python_evaluation precision_at_k, recall_at_k, map_at_k
            (AP / min(|L|, k)): users in both tables. ndcg_at_k is not in this preset: it averages over
            a different set of users (every ground-truth user, 0 without predictions); use
            Convention(... users='labels', gain='binary', ideal='labels') for it.
            Beyond accuracy (run live: MS Recommenders 1.2.1, tests/conformance, 1e-9 per user for
            diversity): catalog_coverage (train items, no intersection), distributional_coverage (log2
            exposure entropy), diversity with item_sim_measure='item_feature_vector' (ild, single-item
            users left out). MS has no k: cut the table to the top k first, or pass k >= the longest
            list. Not in this preset: novelty (MS pools over recommendation rows where rankwise averages
            users: the knobs set here, train rows and a cold item adding 0, equal MS only when every
            list holds k items; PRESETS['recommenders'].replace(metrics=None) computes it anyway),
            serendipity, co-occurrence diversity.""",
            users="intersection", empty_labels="nan", empty_predictions="nan", ap_denominator="min_k_nrel",
            gain="binary", ideal="labels",
            catalog="train", catalog_outside="count", popularity="rows",
            cold_items="zero_novelty",
        ),
        _preset(
            "replay", ("precision", "recall", "map", "mrr", "ndcg", "hit_rate", "item_coverage", "novelty"),
            """RePlay 0.22.0 replay.metrics on long tables: ground-truth users; no recommendations -> 0;
            AP / min(k, |L|); binary NDCG, log2, ideal min(k, |L|) ones; score ties: larger item id first.
            Beyond accuracy (run live: RePlay 0.22.0, tests/conformance, 1e-9 per user; pandas, dict
            and polars inputs): Surprisal = novelty / log2 U_T summed over the top k and divided by k
            (an empty list scores 0); Coverage over train items. Not reproduced: RePlay Novelty (share
            unseen by the user), Unexpectedness, CategoricalDiversity.""",
            users="labels", empty_labels="nan", empty_predictions="zero", ap_denominator="min_k_nrel",
            gain="binary", log_base=2.0, ideal="labels", ties="item_desc",
            novelty_normalize="log_users", list_denominator="k", catalog="train",
        ),
        _preset(
            "rectools", ("precision", "recall", "fbeta", "map", "mrr", "ndcg", "hit_rate",
                         "item_coverage", "novelty", "arp", "serendipity"),
            """RecTools 0.19.0 defaults: users in the interactions; no recommendations -> 0; precision /
            k; AP / |L|; F-beta per user; binary NDCG, log2, ideal = k relevant slots.
            Beyond accuracy (run live: RecTools 0.19.0, tests/conformance, 1e-9 per user):
            MeanInvUserFreq (novelty, cold item = 1 user); AvgRecPopularity (arp, train rows, cold 0);
            CatalogCoverage (count, outside items counted; normalize=True is coverage_scale='ratio');
            Serendipity (dense rank of train rows, N = |items|). Not reproduced: IntraListDiversity's
            Hamming count (rankwise's ild is cosine), AvgRecPopularity(normalize=True).""",
            users="labels", empty_labels="nan", empty_predictions="zero", ap_denominator="n_rel",
            gain="binary", log_base=2.0, ideal="k_ones",
            arp_popularity="rows", serendipity_popularity="rows", catalog_outside="count",
            coverage_scale="count", ild_short="zero",
        ),
        _preset(
            "kaggle", ("map",),
            """ml_metrics 0.1.4 apk/mapk (the Kaggle definition): AP / min(|actual|, k), every pair
            counted, an empty 'actual' scores 1.0 (0.1.4 on PyPI; the unreleased master says 0).""",
            users="union", empty_labels="one", empty_predictions="zero", ap_denominator="min_k_nrel",
        ),
        _preset(
            "surprise", ("precision", "recall"),
            """Surprise FAQ precision_recall_at_k (2020+): relevant = true rating >= 3.5; recommended =
            estimate >= 3.5 within the top k; precision / #recommended in the top k; undefined -> 0;
            users with at least one prediction. Give estimates as scores, true ratings as relevance.""",
            users="predictions", empty_labels="zero", empty_predictions="zero",
            precision_denominator="min_k_len", relevance_threshold=3.5, min_score=3.5,
        ),
        _preset(
            "recbole", ("precision", "recall", "map", "mrr", "ndcg", "hit_rate",
                        "item_coverage", "arp", "gini", "exposure_entropy", "long_tail_share"),
            """RecBole 1.2.1 metrics: users with test items; precision / k; AP / min(k, |L|); binary NDCG,
            log2, ideal min(k, |L|) ones; MRR with cutoff.
            Beyond accuracy (run live: RecBole 1.2.1 metric classes on full top-k lists,
            tests/conformance, 1e-9 per user for arp and long_tail_share): ItemCoverage and GiniIndex
            count the [PAD] token in num_items (reproduced, catalog_padding=1; give the dataset's items
            as items=); AveragePopularity / k over train rows; ShannonEntropy in nats divided by the
            distinct recommended items (reproduced); TailPercentage with tail_ratio 0.1 (or > 1: a count
            bound), cold items never tail. Not reproduced: rounding to 4 decimals.""",
            users="labels", empty_labels="nan", empty_predictions="zero", ap_denominator="min_k_nrel",
            gain="binary", log_base=2.0, ideal="labels",
            catalog_padding=1, catalog_outside="count", popularity="rows", arp_popularity="rows",
            list_denominator="k", info_log_base=math.e, entropy_normalize="distinct", long_tail="tail_items",
            long_tail_ratio=0.1,
        ),
    )
}


# -- the default convention is the libraries' vote ------------------------------------------------------

NOT_LIBRARIES = ("default", "recommended_ideal")  # presets that reproduce no library: they do not vote
TIE_BREAKERS = ("trec_eval", "ranx")

# knobs whose default is not the vote's winner: {knob: (the default, why)}
OVERRIDES = {
    "catalog": ("items", "'items' is the train items whenever no item table is given, the only catalog "
                "Evidently, RePlay and MS Recommenders accept, so it agrees with all five voters on their own "
                "inputs; 'train' would silently ignore an item table passed as items="),
    "catalog_outside": ("ignore", "'count' lets item_coverage, a share of the catalog, exceed 1"),
    "personalization_lists": ("actual", "'full' (Evidently's S = U_R k) is exact only when every list holds k "
                              "items; with shorter lists the value can exceed 1"),
    "negative_relevance": ("error", "only trec_eval votes (its qrels level -1); outside TREC pools a negative "
                           "relevance is most often a data error, so it is refused unless asked for"),
    "rbp_persistence": (0.8, "only trec_eval votes, with the p compiled into it (0.9, 'close to P_10'); 0.8 is "
                             "ir_measures' default and the value Moffat and Zobel's examples lead with"),
}


@dataclass(frozen=True)
class Vote:
    """One knob's vote: ``counts`` maps each value to the library presets using it (most first),
    ``winner`` is the value with the most, ``rule`` says how a tie was broken ("" when none)."""

    knob: str
    counts: dict
    winner: object
    rule: str


def voters(knob: str, presets: dict[str, Convention] | None = None) -> list[Convention]:
    """The library presets that vote on ``knob``: those with a metric the knob moves
    (``metrics.KNOBS_BY_METRIC``), so a preset without NDCG has no say on ``ideal``."""
    presets = PRESETS if presets is None else presets
    return [p for name, p in presets.items() if name not in NOT_LIBRARIES
            and any(knob in KNOBS_BY_METRIC[m] for m in (p.metrics or KNOBS_BY_METRIC))]


def vote(presets: dict[str, Convention] | None = None) -> dict[str, Vote]:
    """Per knob, the value most library presets use. A tie goes to the value trec_eval and ranx share
    when both vote for one of the tied values, else to the tied value listed first among the knob's
    allowed values (the knobs where only two libraries vote, neither of them trec_eval or ranx)."""
    presets = PRESETS if presets is None else presets
    out = {}
    for knob, (allowed, _) in knob_documentation().items():
        voting = voters(knob, presets)
        if not voting:
            continue  # no library has a metric it moves: no vote (voted_default then lacks it)
        tally = Counter(getattr(p, knob) for p in voting)
        order = list(allowed) if isinstance(allowed, tuple) else []
        ranked = sorted(tally, key=lambda v: (-tally[v], order.index(v) if v in order else len(order)))
        tied = [v for v in ranked if tally[v] == tally[ranked[0]]]
        shared = {getattr(p, knob) for p in voting if p.name in TIE_BREAKERS}
        both = len([p for p in voting if p.name in TIE_BREAKERS]) == len(TIE_BREAKERS)
        if len(tied) == 1:
            winner, rule = tied[0], ""
        elif both and len(shared) == 1 and next(iter(shared)) in tied:
            winner, rule = next(iter(shared)), "tie: the value trec_eval and ranx share"
        else:
            winner, rule = tied[0], "tie: the value listed first"
        counts = {v: [p.name for p in voting if getattr(p, knob) == v] for v in ranked}
        out[knob] = Vote(knob, counts, winner, rule)
    return out


def voted_default(presets: dict[str, Convention] | None = None) -> dict:
    """The default's knobs as the vote gives them, with ``OVERRIDES`` applied: ``Convention()`` must equal
    this (tests/test_presets.py)."""
    votes = vote(presets)
    return {knob: OVERRIDES[knob][0] if knob in OVERRIDES else votes[knob].winner if knob in votes
            else Convention.__dataclass_fields__[knob].default  # no library has a metric it moves: no vote
            for knob in knob_documentation()}
