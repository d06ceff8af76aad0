"""The knobs: :class:`Convention`, the frozen bundle of every definitional choice a ranking metric
makes, one named field each, with each knob's allowed values and documentation.

``Convention()`` is the ``default`` preset: for each knob, the value most of the libraries the presets
reproduce use (``_presets.vote``; the vote per knob is in docs/metrics.md). Derive variants with
``conv.replace(field=value)``. Both engines read the same knobs: the Polars plan branches on them in
Python, the SQL receives them as bound parameters (see :meth:`Convention.sql_parameters`), so one
convention means one thing. The presets (``_presets``) are built from this module; the public module
``rankwise.conventions`` adds them and ``resolve``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field

from rankwise.errors import ParameterError, did_you_mean


def _knob(default, values, doc):
    return field(default=default, metadata={"values": values, "doc": doc})


@dataclass(frozen=True)
class Convention:
    """The definitional choices behind every metric (defaults: the libraries' vote, docs/metrics.md)."""

    users: str = _knob(
        "labels",
        ("union", "labels", "predictions", "intersection"),
        "which users are evaluated: everyone in either input, users in the ground truth, users in "
        "the recommendations, or users in both (a user given with an empty list is in that input)",
    )
    unjudged: str = _knob(
        "keep",
        ("keep", "drop"),
        "users without a single judged item: evaluated like any other, or left out (trec_eval "
        "ignores queries with no relevance information)",
    )
    empty_labels: str = _knob(
        "zero",
        ("nan", "zero", "one", "error"),
        "value of every metric for a user with no relevant item (nan = undefined, excluded from means)",
    )
    empty_predictions: str = _knob(
        "zero",
        ("zero", "nan", "one", "error"),
        "value of every metric for a user with relevant items but no recommendations",
    )
    precision_denominator: str = _knob(
        "k",
        ("k", "min_k_len", "min_k_nrel", "min_k_candidates"),
        "Precision@k = hits@k / den: k, min(k, list length), min(k, number relevant), or "
        "min(k, number of items recommended or relevant)",
    )
    ap_denominator: str = _knob(
        "min_k_nrel",
        ("n_hits", "n_rel", "min_k_nrel", "k", "min_k_len"),
        "AP@k and AR@k divide their sum over hit positions by: hits@k, number relevant, "
        "min(k, number relevant), k, or min(k, list length); a zero denominator gives 0",
    )
    f_aggregation: str = _knob(
        "per_user",
        ("per_user", "of_means"),
        "F-beta mean: mean of per-user F, or F of mean precision and mean recall",
    )
    gain: str = _knob(
        "linear",
        ("binary", "linear", "exp2"),
        "DCG gain of an item with relevance r: 1 if relevant else 0, r, or 2^r - 1",
    )
    gain_levels: tuple = _knob(
        (),
        "pairs (level, gain), at most 8, each level a whole number >= 0",
        "gains that replace the gain rule at single relevance levels, as trec_eval's -m ndcg.1=3,2=9 (a label of "
        "relevance 1 earns 3, of 2 earns 9, the others by `gain`; a level may get 0 or a negative gain, and level 0 "
        "a gain): read by dcg, ndcg, G, ndcg_rel and Rndcg. A dict {level: gain} is accepted",
    )
    log_base: float = _knob(
        2.0,
        "a number > 1",
        "DCG discount of position i is log_b(i + 1) = ln(i + 1) / ln(b)",
    )
    ideal: str = _knob(
        "labels",
        ("predictions_topk", "labels", "k_ones"),
        "IDCG@k from: the top-k recommended items' gains sorted descending (preset recommended_ideal), "
        "all the user's labels sorted by gain, cut at k, or k slots of gain 1 (k <= 10000)",
    )
    zero_ideal: str = _knob(
        "zero",
        ("zero", "nan"),
        "NDCG when IDCG = 0 (no gain can be earned): 0, or undefined",
    )
    relevance_threshold: float = _knob(
        0.0,
        "a number >= 0",
        "a label is relevant (for every metric but DCG's graded gain) when relevance > 0 and "
        "relevance >= threshold",
    )
    rr_cutoff: bool = _knob(
        True,
        (True, False),
        "RR@k counts only a first hit within the top k (True), or the first hit anywhere (False)",
    )
    err_max_grade: float = _knob(
        0.0,
        "0 or a number > 0",
        "ERR's largest grade g_max in R = (2^g - 1) / 2^g_max (Chapelle et al. 2009): 0 takes the largest "
        "relevance in the ground truth; a grade above g_max counts as g_max",
    )
    rbp_persistence: float = _knob(
        0.8,
        "a number with 0 < p < 1",
        "RBP's persistence p: the chance that a user who looked at one item looks at the next (Moffat and "
        "Zobel 2008; 0.8 as ir_measures, trec_eval's rbp uses 0.9)",
    )
    rprec_multiplier: float = _knob(
        1.0, "a number > 0",
        "rprec_mult's m: precision after c = floor(m n_rel + 0.9) items, as trec_eval's Rprec_mult_<m> (its "
        "defaults 0.2, 0.4, ..., 2.0; 1.0 is R-precision)")
    iprec_recall_level: float = _knob(
        0.0, "a number with 0 <= l <= 1",
        "iprec_at_recall's recall level l: the interpolated precision at recall l, as trec_eval's "
        "iprec_at_recall_<l> (its defaults 0.0, 0.1, ..., 1.0)")
    iprec_recall_count: str = _knob(
        "round", ("round", "truncate_plus_0.9"),
        "how iprec_at_recall turns the level into a count of relevant items r: round(l n_rel) (trec_eval 10.0's "
        "lround) or floor(l n_rel + 0.9) (trec_eval 9, so pytrec_eval 0.5.11)")
    utility_relevant_retrieved: float = _knob(
        1.0, "a number",
        "utility's worth of a relevant item retrieved (within k; trec_eval's first utility coefficient, 1)")
    utility_nonrelevant_retrieved: float = _knob(
        -1.0, "a number",
        "utility's worth of a non-relevant item retrieved (within k; trec_eval's second coefficient, -1)")
    utility_relevant_missed: float = _knob(
        0.0, "a number",
        "utility's worth of a relevant item not retrieved (trec_eval's third coefficient, 0)")
    utility_nonrelevant_missed: float = _knob(
        0.0, "a number",
        "utility's worth of a non-relevant item not retrieved, counted as collection_size less the others "
        "(trec_eval's fourth coefficient, 0)")
    collection_size: float = _knob(
        0.0, "a number >= 0",
        "items in the collection, read only by utility's non-relevant-not-retrieved count (trec_eval's -N; 0 as "
        "trec_eval without -N)")
    duplicates: str = _knob(
        "error",
        ("error", "first_shift"),
        "an item repeated in one user's list: a DuplicateItemError, or keep the first occurrence "
        "and move later items up",
    )
    negative_relevance: str = _knob(
        "error",
        ("error", "unjudged"),
        "a ground-truth row with relevance < 0: an InvalidRelevanceError, or trec_eval's pooled-but-unjudged label "
        "(qrels level -1): never relevant, no gain, not judged (bpref, infAP, num_nonrel_judged_ret and unj count it "
        "as unjudged; infAP as a pooled one)",
    )
    min_score: float | None = _knob(
        None,
        "None or a number",
        "with scores: an item scored below min_score is not recommended (Surprise's rule "
        "'recommended = estimate >= threshold'); None keeps every item",
    )
    ties: str = _knob(
        "item_asc",
        ("item_asc", "item_desc", "input_order"),
        "when ranking by score, equal scores are ordered by item id ascending, descending, or "
        "by their order in the input",
    )

    # -- beyond-accuracy metrics (rankwise.engines.beyond, sql/beyond_*.sql; docs/metrics.md) --
    popularity: str = _knob(
        "users",
        ("users", "rows"),
        "pop(i) for novelty, long_tail_share and per_item: distinct train users of i (Evidently, RecTools "
        "MeanInvUserFreq, RePlay, Elliot), or train rows of i (MS Recommenders novelty, RecBole); novelty's "
        "U_T counts the same way (train users, or train rows)",
    )
    arp_popularity: str = _knob(
        "rows",
        ("users", "rows"),
        "pop(i) for arp: distinct train users (Evidently, Elliot) or train rows (RecTools "
        "AvgRecPopularity, RecBole AveragePopularity)",
    )
    serendipity_popularity: str = _knob(
        "rows",
        ("users", "rows"),
        "pop(i) whose dense rank serendipity compares with the list rank: distinct train users, or "
        "train rows (RecTools Serendipity)",
    )
    cold_items: str = _knob(
        "as_one",
        ("as_one", "drop", "zero_novelty"),
        "a recommended item with no train row: novelty counts it as one user (max novelty) and arp as "
        "popularity 0 (RecTools, RePlay); drop it from L_u for novelty and arp, a user left with none is "
        "undefined (Evidently); or it adds 0 novelty and 0 popularity but stays in the denominator (MS)",
    )
    list_denominator: str = _knob(
        "n_u",
        ("n_u", "k"),
        "novelty, arp, long_tail_share and serendipity average over the n_u items in the top k (n_u = 0: "
        "undefined), or sum and divide by k (RePlay Surprisal, RecBole; an empty list scores 0)",
    )
    novelty_normalize: str = _knob(
        "none",
        ("none", "log_users"),
        "novelty's self-information -log(pop/U_T) as is, or divided by log U_T so it lies in [0, 1] "
        "(RePlay Surprisal; U_T = 1 is undefined)",
    )
    info_log_base: float = _knob(
        2.0,
        "a number > 1",
        "logarithm base of novelty and exposure_entropy (2: bits, everyone but RecBole's ShannonEntropy; "
        "math.e: nats). score_entropy is always in nats (Evidently)",
    )
    catalog: str = _knob(
        "items",
        ("items", "train", "recommended"),
        "catalog C of item_coverage, gini and serendipity's N: the items input if given, else the "
        "train items; always the train items (Evidently, RePlay, MS); or the recommended items",
    )
    catalog_outside: str = _knob(
        "ignore",
        ("ignore", "count"),
        "item_coverage: recommended items outside C are not counted (|union ∩ C|), or counted "
        "(|union|: RecTools, MS, RecBole; the share can exceed 1)",
    )
    catalog_padding: int = _knob(
        0,
        (0, 1),
        "items added to |C| in item_coverage and gini (1 = RecBole's [PAD] token, a zero-exposure item)",
    )
    coverage_scale: str = _knob(
        "ratio",
        ("ratio", "count", "percent"),
        "item_coverage as a share, as the count of covered items (RecTools default, Elliot), or a "
        "percent (recmetrics, unrounded)",
    )
    gini: str = _knob(
        "catalog",
        ("catalog", "catalog_n1", "recommended_n1", "catalog_n1_complement"),
        "gini = sum_j (2j - N - 1) c_(j) / (D sum c), c ascending over N items: C ∪ recommended with "
        "D = N (RecBole), D = N - 1, the recommended items only with D = N - 1 (Evidently), or "
        "1 - the N - 1 form (Elliot: higher = more equal)",
    )
    entropy_normalize: str = _knob(
        "none",
        ("none", "distinct"),
        "exposure_entropy as is, or divided by the number of distinct recommended items (RecBole "
        "ShannonEntropy, not in its docstring)",
    )
    ild_denominator: str = _knob(
        "pairs",
        ("pairs", "n_u"),
        "ild = sum over unordered pairs of (1 - cos) divided by the m(m-1)/2 pairs, or by m "
        "(Evidently Diversity: values can exceed 1); m = items of L_u that have features",
    )
    ild_short: str = _knob(
        "nan",
        ("nan", "zero"),
        "ild of a list with fewer than 2 items that have features: undefined, left out of the mean "
        "(MS), or 0 (RecTools, Evidently)",
    )
    long_tail: str = _knob(
        "tail_items",
        ("head_share", "tail_items"),
        "long_tail_share's tail: items outside the short head, the most popular train items (pop desc, "
        "ties by id) until they hold long_tail_ratio of sum pop, a cold item is tail (Elliot APLT); or "
        "the max(floor(ratio * #train items), 1) least popular train items (ties by id), or every "
        "item with pop <= ratio when ratio > 1, a cold item is never tail (RecBole TailPercentage)",
    )
    long_tail_ratio: float = _knob(
        0.1,
        "a number > 0",
        "head_share: the share of interactions the short head holds (Elliot 0.8); tail_items: the "
        "tail share of train items (RecBole tail_ratio 0.1), or a popularity bound if > 1",
    )
    personalization_lists: str = _knob(
        "actual",
        ("actual", "full"),
        "personalization = 1 - (sum_i c(i)^2 - S) / (k U_R (U_R - 1)): S = sum of n_u (exact mean "
        "overlap/k), or S = U_R k (Evidently: exact only when every list has k items)",
    )
    serendipity: str = _knob(
        "popularity_rank",
        ("popularity_rank",),
        "serendipity per recommended item: max(p_rank - p_pop, 0) * rel, p_rank = (N + 1 - rank) / N, "
        "p_pop = (N + 1 - dense popularity rank) / N (0 for a cold item), N = |C| (RecTools)",
    )

    # -- not knobs: what a preset is called, which metrics its library has, how it was checked --
    name: str = field(default="default", compare=False, metadata={"meta": True})
    metrics: tuple[str, ...] | None = field(default=None, compare=False, metadata={"meta": True})
    notes: str = field(default="", compare=False, repr=False, metadata={"meta": True})

    def __post_init__(self):
        for f in _knob_fields():
            value, allowed = getattr(self, f.name), f.metadata["values"]
            if isinstance(allowed, tuple) and value not in allowed:
                raise ParameterError(
                    f"Convention field {f.name!r} got {value!r}.",
                    hint=f"Allowed values: {', '.join(map(repr, allowed))}.",
                )
        # the numeric knobs are finite real numbers: the one rule every engine and the SQL renderer rely on
        object.__setattr__(self, "gain_levels", _gain_levels(self.gain_levels))
        _number("log_base", self.log_base, "> 1", lambda v: v > 1,
                "e.g. 2 (log2: the default, trec_eval, sklearn) or math.e (natural log).")
        if self.min_score is not None:
            _number("min_score", self.min_score, "", lambda v: True,
                    "None keeps every item (a NaN or infinite min_score would drop every item).")
        _number("relevance_threshold", self.relevance_threshold, ">= 0", lambda v: v >= 0,
                "0 counts every relevance > 0 as relevant; 1 counts relevance >= 1.")
        _number("err_max_grade", self.err_max_grade, ">= 0", lambda v: v >= 0,
                "0 (the largest relevance in the ground truth) or the top grade of your scale, e.g. 4.")
        _number("rbp_persistence", self.rbp_persistence, "strictly between 0 and 1", lambda v: 0 < v < 1,
                "e.g. 0.8 (ir_measures' default), 0.9 (trec_eval's rbp), 0.95 (a patient user).")
        _number("rprec_multiplier", self.rprec_multiplier, "> 0", lambda v: v > 0,
                "e.g. 0.2, 0.4, ..., 2.0 (trec_eval's Rprec_mult defaults); 1.0 is R-precision.")
        _number("iprec_recall_level", self.iprec_recall_level, "between 0 and 1", lambda v: 0 <= v <= 1,
                "e.g. 0.0, 0.1, ..., 1.0 (trec_eval's iprec_at_recall levels).")
        for coefficient in ("utility_relevant_retrieved", "utility_nonrelevant_retrieved", "utility_relevant_missed",
                            "utility_nonrelevant_missed"):
            _number(coefficient, getattr(self, coefficient), "", lambda v: True,
                    "trec_eval's utility: 1, -1, 0, 0 (a relevant item retrieved earns 1, a non-relevant one costs 1).")
        _number("collection_size", self.collection_size, ">= 0", lambda v: v >= 0,
                "0 (unknown, as trec_eval without -N) or the number of items in the collection.")
        _number("info_log_base", self.info_log_base, "> 1", lambda v: v > 1,
                "2 (bits, the default) or math.e (nats).")
        _number("long_tail_ratio", self.long_tail_ratio, "> 0", lambda v: v > 0,
                "0.8 with long_tail='head_share' (Elliot), 0.1 with long_tail='tail_items' (RecBole).")
        if self.name == "default":  # Convention(gain="linear") is not the default: named as replace() names it
            changed = {f.name: getattr(self, f.name) for f in _knob_fields() if getattr(self, f.name) != f.default}
            if changed:
                object.__setattr__(self, "name", _changed_name("default", changed))

    def replace(self, **changes) -> Convention:
        """A copy with some knobs changed: ``PRESETS['default'].replace(gain='linear')``."""
        names = [f.name for f in dataclasses.fields(self)]
        unknown = set(changes) - set(names)
        if unknown:
            raise ParameterError(
                f"Convention has no field {', '.join(sorted(unknown))}.",
                hint=did_you_mean(min(unknown), names) + f"Fields: {', '.join(names)}.",
            )
        knobs_changed = {k: v for k, v in changes.items() if k in self.knobs() and v != getattr(self, k)}
        if knobs_changed and "name" not in changes:
            changes["name"] = _changed_name(self.name, knobs_changed)
        return dataclasses.replace(self, **changes)

    def knobs(self) -> dict:
        """Every knob and its value, in declaration order."""
        return {f.name: getattr(self, f.name) for f in _knob_fields()}

    def diff(self, other: Convention) -> dict:
        """``{knob: (self's value, other's value)}`` for every knob on which the two differ."""
        a, b = self.knobs(), other.knobs()
        return {k: (a[k], b[k]) for k in a if a[k] != b[k]}

    def sql_parameters(self) -> dict:
        """The knobs as SQL parameters (booleans become 0/1, numbers floats)."""
        out = {}
        for name, value in self.knobs().items():
            if value is None or (name in INPUT_KNOBS and name not in CHECKED_IN_SQL):
                continue  # applied while normalising the inputs, before either engine
            if name == "gain_levels":  # a mapping is no SQL scalar: GAIN_SLOTS (level, gain) pairs, unused ones at -1
                slots = list(value) + [(-1.0, 0.0)] * (GAIN_SLOTS - len(value))
                for i, (level, gain) in enumerate(slots, 1):
                    out[f"gain_level_{i}"], out[f"gain_value_{i}"] = float(level), float(gain)
                continue
            if isinstance(value, bool):
                value = int(value)
            elif isinstance(value, numbers.Real):
                value = float(value)
            out[name] = value
        return out

    def __str__(self) -> str:
        rows = [(f.name, repr(getattr(self, f.name)), f.metadata["doc"]) for f in _knob_fields()]
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        head = f"Convention {self.name!r}" + (f" (metrics: {', '.join(self.metrics)})" if self.metrics else "")
        return "\n".join([head, *(f"  {a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows)])


INPUT_KNOBS = ("duplicates", "ties", "min_score", "negative_relevance")
# input knobs that are SQL parameters too: sql/checks.sql reads them (the rendered scripts and dbt templates fill them)
CHECKED_IN_SQL = ("negative_relevance",)

# gain_levels reaches the SQL as this many ($gain_level_<i>, $gain_value_<i>) pairs; an unused pair has level -1,
# which no relevance has (a relevance is >= 0), and gain 0
GAIN_SLOTS = 8


def _gain_levels(value) -> tuple:
    """gain_levels as a sorted tuple of (level, gain) float pairs: from a dict {level: gain} or pairs; each
    level a whole number >= 0 given once, each gain finite, at most GAIN_SLOTS of them."""
    hint = "For example gain_levels={1: 3.0, 2: 9.0, 4: 4.5} (trec_eval's -m ndcg.1=3,2=9,4=4.5)."
    try:
        pairs = list(value.items()) if isinstance(value, dict) else [tuple(p) for p in value]
    except TypeError:
        raise ParameterError(f"Convention field 'gain_levels' must be a dict {{level: gain}} or (level, gain) "
                             f"pairs, got {value!r}.", hint=hint) from None
    out = {}
    for pair in pairs:
        if len(pair) != 2:
            raise ParameterError(f"Convention field 'gain_levels': {pair!r} is not a (level, gain) pair.", hint=hint)
        level, gain = pair
        if not (_finite(level) and level >= 0 and float(level).is_integer()):
            raise ParameterError(f"Convention field 'gain_levels': level {level!r} is not a whole number >= 0 "
                                 "(trec_eval's relevance levels).", hint=hint)
        if not _finite(gain):
            raise ParameterError(f"Convention field 'gain_levels': the gain of level {level!r} must be a finite "
                                 f"number, got {gain!r}.", hint=hint)
        if float(level) in out:
            raise ParameterError(f"Convention field 'gain_levels': level {level!r} is given twice.", hint=hint)
        out[float(level)] = float(gain)
    if len(out) > GAIN_SLOTS:
        raise ParameterError(f"Convention field 'gain_levels' holds {len(out)} levels; at most {GAIN_SLOTS} are "
                             "supported.", hint="Give a gain only to the levels whose gain differs from the rule's.")
    return tuple(sorted(out.items()))


def _changed_name(base: str, changed: dict) -> str:
    """A convention's name after some knobs changed: ``default gain='linear'``."""
    return base + "".join(f" {k}={v!r}" for k, v in changed.items())


def _finite(value) -> bool:
    """A real number (Python or NumPy, not a boolean) that is neither NaN nor infinite."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _number(name: str, value, rule: str, holds, hint: str) -> None:
    if not (_finite(value) and holds(value)):
        raise ParameterError(f"Convention field {name!r} must be a finite number{' ' + rule if rule else ''}, "
                             f"got {value!r}.", hint=hint)


def _knob_fields():
    return [f for f in dataclasses.fields(Convention) if not f.metadata.get("meta")]


def knob_documentation() -> dict[str, tuple[object, str]]:
    """``{knob: (allowed values, description)}`` for docs and the CLI."""
    return {f.name: (f.metadata["values"], f.metadata["doc"]) for f in _knob_fields()}
