"""Measure names as people write them: trec_eval's (``P_10``, ``ndcg_cut_10``, ``map``,
``recip_rank``, ``iprec_at_recall_0.50``) and ir_measures' (``nDCG@10``, ``P(rel=2)@5``, ``AP``,
``RR@10``, ``RBP(p=0.8)``, ``Judged@10``, ``R@100``), each parsed into a :class:`Measure`: the
registry metric that computes it, its cutoff (None: the whole list, as trec_eval's ``map``,
``ndcg``, ``recip_rank`` and ``Rprec`` are), and the convention knob values the name implies.

One table (``FAMILIES``) holds every name family; :func:`parse` reads a name against it,
:func:`check` holds a parsed measure against a convention, :func:`markdown` renders the table for
docs/measures.md. An entry whose metric is not in the registry yet (issue 38, part 1 adds trec_eval's
remaining families) parses, but :func:`check` refuses it as "not computed by rankwise yet"; it goes
live by itself once ``rankwise.metrics.declarations.REGISTRY`` has a metric of that name.

The whole list is computed as the metric at k = ``WHOLE`` (the largest k rankwise takes): every list
is whole there, and ``min(k, |relevant|)`` is ``|relevant|``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field

import polars as pl

from rankwise.errors import ParameterError, did_you_mean
from rankwise.metrics import declarations

WHOLE = declarations.K_MAX  # "the whole list": every list is shorter
ISSUE = "issue 38"

# trec_eval 10.0's default parameters (m_P.c, m_success.c, m_unjudged.c, m_iprec_at_recall.c, m_Rprec_mult.c)
TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
SUCCESS_CUTOFFS = (1, 5, 10)
UNJ_CUTOFFS = (5, 10, 20)
RECALL_LEVELS = tuple(i / 10 for i in range(11))
RPREC_MULTS = tuple(i / 5 for i in range(1, 11))
MIN_GEO_MEAN = 0.00001  # trec_eval.h: the floor of a value in a geometric mean

# trec_eval's ndcg: gain = level (unless <name>.<level>=<gain>,... gives gain_levels), log2, the ideal from the qrels
_DCG = {"gain": ("linear",), "gain_levels": ((),), "log_base": (2.0,), "ideal": ("labels",)}
_GAINS = {"gain": ("linear",), "gain_levels": ((),), "log_base": (2.0,)}  # G, ndcg_rel, Rndcg: the qrels' ideal always


@dataclass(frozen=True)
class Family:
    """One family of measure names.

    name: as written (``P`` for ``P_10`` / ``P@10``); style: "trec_eval" or "ir_measures".
    metric: the registry metric that computes it (None: run information, not a measure).
    cutoff: "required" (``P_10``), "none" (``map``: the whole list) or "optional" (``AP`` / ``AP@10``).
    param: the family's parameter other than a cutoff (``iprec_at_recall_0.50``: a recall level),
        passed in the knob ``param_knob``; "" when none.
    knobs: knob -> allowed values the name implies (the first is the one to set).
    cut_knobs: the same, only when a cutoff is given (``RR@10`` needs rr_cutoff=True, ``RR`` does not).
    value: "float" or "int" (trec_eval prints an integer measure with %ld).
    aggregate: "mean" (over users), "sum" (trec_eval's counts) or "gm" (geometric mean, zeros floored
        to 0.00001 as trec_eval does).
    transform: "" or "one_minus" (1 - the metric; no family needs it since Judged@k has its own metric).
    params: the ir_measures parameters it takes (``rel``, ``p``, ``dcg``).
    levels: "" or what its list of levels is (``11pt_avg_0.25,0.5,0.75``: recall levels, declarations.LevelMean).
    """

    name: str
    style: str
    metric: str | None
    cutoff: str
    doc: str
    knobs: dict = field(default_factory=dict)
    cut_knobs: dict = field(default_factory=dict)
    value: str = "float"
    aggregate: str = "mean"
    transform: str = ""
    params: tuple[str, ...] = ()
    param: str = ""
    param_knob: str = ""
    defaults: tuple = ()  # trec_eval's default cutoffs or parameters (what -m <family> prints)
    levels: str = ""

    @property
    def reads_rel(self) -> bool:
        """An ir_measures family whose value depends on ``rel=`` (NumRet only when given it: then NumRelRet)."""
        return self.style == "ir_measures" and ("rel" in self.params or self.name == "NumRelRet") and self.name != "NumRet"


def _t(name, metric, cutoff, doc, **kw) -> Family:
    return Family(name, "trec_eval", metric, cutoff, doc, **kw)


def _i(name, metric, cutoff, doc, **kw) -> Family:
    return Family(name, "ir_measures", metric, cutoff, doc, **kw)


_CUT = {"rr_cutoff": (True,)}
FAMILIES: tuple[Family, ...] = (
    # trec_eval 10.0, in the order it prints them (measures.c, te_trec_measures)
    _t("runid", None, "none", "the run's tag (run information)"),
    _t("num_q", None, "none", "number of queries evaluated (run information)", value="int", aggregate="sum"),
    _t("num_ret", "num_ret", "none", "documents retrieved", value="int", aggregate="sum"),
    _t("num_rel", "num_rel", "none", "relevant documents", value="int", aggregate="sum"),
    _t("num_rel_ret", "num_rel_ret", "none", "relevant documents retrieved", value="int", aggregate="sum"),
    _t("map", "map", "none", "mean average precision over the whole list",
       knobs={"ap_denominator": ("n_rel", "min_k_nrel")}),
    _t("gm_map", "map", "none", "geometric mean of AP over the whole list",
       knobs={"ap_denominator": ("n_rel", "min_k_nrel")}, aggregate="gm"),
    _t("Rprec", "r_precision", "none", "precision after |relevant| documents"),
    _t("bpref", "bpref", "none", "binary preference"),
    _t("recip_rank", "mrr", "none", "reciprocal rank of the first relevant document"),
    _t("iprec_at_recall", "iprec_at_recall", "required", "interpolated precision at a recall level",
       param="recall level", param_knob="iprec_recall_level", defaults=RECALL_LEVELS),
    _t("P", "precision", "required", "precision at k", knobs={"precision_denominator": ("k",)},
       defaults=TREC_CUTOFFS),
    _t("relstring", None, "optional", "the relevance of the top documents as a string (run information)"),
    _t("recall", "recall", "required", "recall at k", defaults=TREC_CUTOFFS),
    _t("infAP", "infap", "none", "inferred AP (pooled-but-unjudged documents sampled)"),
    _t("gm_bpref", "bpref", "none", "geometric mean of bpref", aggregate="gm"),
    _t("Rprec_mult", "rprec_mult", "required", "precision after m x |relevant| documents",
       param="multiplier", param_knob="rprec_multiplier", defaults=RPREC_MULTS),
    _t("utility", "utility", "none", "utility (trec_eval's coefficients 1, -1, 0, 0)", value="float"),
    _t("11pt_avg", "ipt11_avg", "none", "11-point interpolated average precision; 11pt_avg_<l1>,<l2>,...: "
       "interpolated precision averaged at those recall levels (trec_eval's -m 11pt_avg.<l1>,<l2>,...)",
       levels="recall levels"),
    _t("binG", "bin_g", "none", "binary G"),
    _t("G", "g", "none", "G (normalised cumulative gain; G.<level>=<gain>,... sets gains)", knobs=_GAINS),
    _t("ndcg", "ndcg", "none", "nDCG over the whole list (gain = relevance level unless ndcg.<level>=<gain>,..., "
       "log2)", knobs=_DCG),
    _t("ndcg_rel", "ndcg_rel", "none", "nDCG averaged over the relevant documents", knobs=_GAINS),
    _t("Rndcg", "rndcg", "none", "nDCG averaged at the R levels (the ends of the runs of equal gain)", knobs=_GAINS),
    _t("ndcg_cut", "ndcg", "required", "nDCG at k", knobs=_DCG, defaults=TREC_CUTOFFS),
    _t("map_cut", "map", "required", "AP at k divided by |relevant|", knobs={"ap_denominator": ("n_rel",)},
       defaults=TREC_CUTOFFS),
    _t("relative_P", "relative_p", "required", "precision at k relative to the best possible",
       defaults=TREC_CUTOFFS),
    _t("success", "hit_rate", "required", "1 if a relevant document is in the top k", defaults=SUCCESS_CUTOFFS),
    _t("set_P", "set_p", "none", "precision of the retrieved set"),
    _t("set_relative_P", "set_relative_p", "none", "set precision relative to the best possible"),
    _t("set_recall", "set_recall", "none", "recall of the retrieved set"),
    _t("set_map", "set_map", "none", "set precision x set recall"),
    _t("set_F", "set_f", "none", "F1 of set precision and set recall"),
    _t("num_nonrel_judged_ret", "num_nonrel_judged_ret", "none", "judged non-relevant documents retrieved",
       value="int", aggregate="sum"),
    _t("rbp", "rbp", "none", "rank-biased precision, p = 0.9", knobs={"rbp_persistence": (0.9,)}),
    _t("rbp_resid", "rbp_resid", "none", "RBP's residual (the unjudged documents' share), p = 0.9 "
       "(rbp_resid.p=<p>)", knobs={"rbp_persistence": (0.9,)}),
    _t("unj", "unj", "required", "share of the top k that is unjudged", defaults=UNJ_CUTOFFS),
    # ir_measures 0.3 (its own names; values from pytrec_eval / gdeval, so trec_eval's definitions)
    _i("P", "precision", "required", "precision at k", knobs={"precision_denominator": ("k",)}, params=("rel",)),
    _i("R", "recall", "required", "recall at k", params=("rel",)),
    _i("AP", "map", "optional", "AP, at k divided by |relevant|", knobs={"ap_denominator": ("n_rel", "min_k_nrel")},
       cut_knobs={"ap_denominator": ("n_rel",)}, params=("rel",)),
    _i("RR", "mrr", "optional", "reciprocal rank (within the top k; RR@k comes from ir_measures' msmarco provider, "
       "which orders equal scores by docno ascending, RR from pytrec_eval's: descending)",
       cut_knobs={**_CUT, "ties": ("item_asc",)}, params=("rel",)),
    _i("nDCG", "ndcg", "optional", "nDCG (dcg='log2': gain = relevance; dcg='exp-log2': 2^rel - 1)", knobs=_DCG,
       params=("dcg",)),
    _i("Rprec", "r_precision", "none", "precision after |relevant| documents", params=("rel",)),
    _i("Success", "hit_rate", "required", "1 if a relevant document is in the top k", params=("rel",)),
    _i("RBP", "rbp", "optional", "rank-biased precision (p = 0.8 unless p= is given)",
       knobs={"rbp_persistence": (0.8,)}, params=("p", "rel")),
    _i("ERR", "err", "required", "expected reciprocal rank (gdeval: grades up to 4)",
       knobs={"err_max_grade": (4.0,)}),
    _i("Judged", "judged", "required", "share of the top k (of the list, when shorter) with a qrels line, any "
       "level (not 1 - unj_k: a level -1 counts as judged, a short list is not filled; equal scores by docno "
       "ascending, as ir_measures' judged provider orders them)", knobs={"ties": ("item_asc",)}),
    _i("NumRet", "num_ret", "none", "documents retrieved (NumRet(rel=1): relevant ones)", value="int",
       aggregate="sum", params=("rel",)),
    _i("NumRel", "num_rel", "none", "relevant documents", value="int", aggregate="sum", params=("rel",)),
    _i("NumRelRet", "num_rel_ret", "none", "relevant documents retrieved", value="int", aggregate="sum"),
    _i("NumQ", None, "none", "number of queries (run information)", value="int", aggregate="sum"),
    _i("SetP", "set_p", "none", "precision of the retrieved set", params=("rel",)),
    _i("SetR", "set_recall", "none", "recall of the retrieved set", params=("rel",)),
    _i("SetF", "set_f", "none", "F1 of the retrieved set", params=("rel",)),
    _i("SetAP", "set_map", "none", "set precision x set recall", params=("rel",)),
    _i("Bpref", "bpref", "none", "binary preference", params=("rel",)),
    _i("infAP", "infap", "none", "inferred AP", params=("rel",)),
    _i("IPrec", "iprec_at_recall", "required", "interpolated precision at a recall level (IPrec@0.5)",
       param="recall level", param_knob="iprec_recall_level"),
)

_TREC = {f.name: f for f in FAMILIES if f.style == "trec_eval"}
_LEVEL_LISTS = [f for f in FAMILIES if f.levels]
_IR = {f.name: f for f in FAMILIES if f.style == "ir_measures"}
_TREC_CUT = re.compile(r"(?P<family>.+?)_(?P<cut>\d+(?:\.\d+)?)\Z")
_IR_NAME = re.compile(r"(?P<family>[A-Za-z_][A-Za-z0-9_]*)(?:\((?P<params>[^()]*)\))?(?:@(?P<cut>\d+(?:\.\d+)?))?\Z")
_IR_PARAM = {"rel": "relevance_threshold", "p": "rbp_persistence"}
# ir_measures' rel= when a name gives none: 1 (relevant = level >= 1); a threshold of 0 (relevant = level > 0) is
# the same on integer levels, the only ones ir_measures' qrels hold
_IR_DEFAULT_REL = (1, 0)
_IR_DCG = {"log2": "linear", "exp-log2": "exp2"}


@dataclass(frozen=True)
class Measure:
    """A parsed measure name: evaluate() computes ``metric`` at ``k`` (None: the whole list) under a
    convention whose knobs are among ``knobs`` (knob -> allowed values)."""

    name: str  # as asked
    family: Family
    k: int | None
    knobs: dict
    param: float | None = None
    levels: tuple[float, ...] | None = None  # a Family.levels list as given (11pt_avg_0.75,0.25: in that order)
    # the metric column holding it when its parameter is not the convention's (declarations.Param.column,
    # set by evaluate()); None: the metric's own column
    output: str | None = None

    @property
    def metric(self) -> str | None:
        return self.family.metric

    @property
    def cutoff(self) -> int:
        """The k rankwise computes it at (``WHOLE`` for the whole list)."""
        return WHOLE if self.k is None else self.k

    @property
    def live(self) -> bool:
        """Does rankwise compute it today (its metric, and its parameter's knob, exist)?"""
        return is_live(self.family)


def is_live(family: Family) -> bool:
    """Its metric is in the registry (a parameter's knob is checked against the convention: check())."""
    return family.metric is not None and family.metric in declarations.BY_NAME


def _number(text: str) -> float:
    value = float(text)
    return int(value) if value.is_integer() else value


def parse(name: str) -> Measure:
    """The :class:`Measure` of a trec_eval or ir_measures name; a ParameterError (with a did-you-mean)
    for a name neither writes."""
    if not isinstance(name, str) or not name.strip():
        raise ParameterError(f"A measure name is a non-empty string, got {name!r}.",
                             hint="For example 'P_10', 'ndcg_cut_10', 'map', 'nDCG@10' or 'P(rel=2)@5'.")
    text = name.strip()
    measure = _parse_trec(name, text)
    if measure is None:
        measure = _parse_ir(name, text)
    if measure is None:
        raise ParameterError(f"Unknown measure {name!r}.", hint=did_you_mean(text, known_names()) + (
            "Measures are trec_eval names (P_10, ndcg_cut_10, map, recip_rank, ...) or ir_measures names "
            "(nDCG@10, P(rel=2)@5, AP, RR@10, ...): docs/measures.md lists them."))
    return measure


_TREC_PAIRS = re.compile(r"(?P<family>[A-Za-z_]+?)[._](?P<pairs>[^_.=,]+=[^=,]+(?:,[^=,]+=[^=,]+)*)\Z")


def _parse_pairs(name: str, text: str) -> Measure | None:
    """trec_eval's name=value parameters: gains per level (``ndcg_1=3,2=9,4=4.5``, also G, ndcg_rel, Rndcg: the
    knob gain_levels) and RBP's persistence (``rbp_resid_p=0.5``, ``rbp_p=0.5``); None when not of that form."""
    match = _TREC_PAIRS.match(text)
    if match is None or match["family"] not in _TREC:
        return None
    family = _TREC[match["family"]]
    pairs = [tuple(x.strip() for x in part.split("=")) for part in match["pairs"].split(",")]
    if family.metric in ("rbp", "rbp_resid") and len(pairs) == 1 and pairs[0][0] == "p":
        try:
            return Measure(name, family, None, {**family.knobs, "rbp_persistence": (float(pairs[0][1]),)})
        except ValueError:
            raise ParameterError(f"Measure {name!r}: p={pairs[0][1]} is not a number.",
                                 hint=f"For example {family.name}.p=0.8.") from None
    if "gain_levels" not in family.knobs:
        raise ParameterError(f"Measure {name!r}: {family.name} takes no level=gain parameters.",
                             hint="Gains per level go with ndcg, G, ndcg_rel and Rndcg, e.g. ndcg.1=3,2=9,4=4.5.")
    try:
        levels = {int(level): float(gain) for level, gain in pairs}
    except ValueError:
        raise ParameterError(f"Measure {name!r}: each parameter is <relevance level>=<gain>, got {match['pairs']!r}.",
                             hint=f"For example {family.name}.1=3,2=9,4=4.5 (trec_eval's syntax).") from None
    if len(levels) != len(pairs) or any(level < 0 for level in levels):
        raise ParameterError(f"Measure {name!r}: each relevance level is a whole number >= 0 given once.",
                             hint=f"For example {family.name}.1=3,2=9,4=4.5.")
    # as Convention.gain_levels holds it (sorted float pairs); the convention checks the rest when it is built
    knob = tuple(sorted((float(level), gain) for level, gain in levels.items()))
    return Measure(name, family, None, {**family.knobs, "gain_levels": (knob,)})


def _parse_trec(name: str, text: str) -> Measure | None:
    if "=" in text:
        return _parse_pairs(name, text)
    for family in _LEVEL_LISTS:  # 11pt_avg_0.25,0.5,0.75 (trec_eval's printed name) or 11pt_avg.0.25,0.5,0.75
        if text.startswith(family.name) and text[len(family.name):len(family.name) + 1] in (".", "_"):
            return Measure(name, family, None, dict(family.knobs), levels=_levels(name, family, text[len(family.name) + 1:]))
    family = _TREC.get(text)
    if family is not None and family.cutoff != "required":
        return Measure(name, family, None, dict(family.knobs))
    match = _TREC_CUT.match(text)
    if match is None or match["family"] not in _TREC:
        return None
    family, cut = _TREC[match["family"]], match["cut"]
    if family.cutoff == "none":
        return None
    if family.param:
        return Measure(name, family, None, {**family.knobs, family.param_knob: (_number(cut),)}, _number(cut))
    if not cut.isdigit() or not 1 <= int(cut) <= declarations.K_MAX:
        raise ParameterError(f"Measure {name!r}: the cutoff after {family.name}_ is a positive integer.",
                             hint=f"For example {family.name}_10.")
    return Measure(name, family, int(cut), {**family.knobs, **family.cut_knobs})


def _levels(name: str, family: Family, text: str) -> tuple[float, ...]:
    """The comma-separated levels after ``<family>_``, in the order given (trec_eval keeps it and every
    duplicate); each a number in [0, 1]."""
    hint = (f"Give {family.name}'s {family.levels} as numbers from 0 to 1, comma-separated, in ascending order as "
            f"trec_eval assumes, e.g. {family.name}_0.25,0.5,0.75 (trec_eval -m {family.name}.0.25,0.5,0.75).")
    if not text.strip():
        raise ParameterError(f"Measure {name!r} gives no {family.levels} after {family.name}_.", hint=hint)
    levels = []
    for part in text.split(","):
        try:
            level = float(part)
        except ValueError:
            level = None
        if level is None or not 0.0 <= level <= 1.0:  # (NaN too)
            raise ParameterError(f"Measure {name!r}: {part.strip()!r} is not a recall level (a number from 0 to 1).",
                                 hint=hint)
        levels.append(level)
    return tuple(levels)


def _parse_ir(name: str, text: str) -> Measure | None:
    match = _IR_NAME.match(text)
    if match is None or match["family"] not in _IR:
        return None
    family, cut, params = _IR[match["family"]], match["cut"], match["params"]
    if cut is None and family.cutoff == "required":
        raise ParameterError(f"Measure {name!r} needs a cutoff.", hint=f"For example {family.name}@10.")
    if cut is not None and family.cutoff == "none":
        raise ParameterError(f"Measure {name!r}: {family.name} takes no cutoff.", hint=f"Write {family.name}.")
    knobs = dict(family.knobs)
    k = param = None
    if cut is not None:
        if family.param:
            param = _number(cut)
            knobs[family.param_knob] = (param,)
        elif cut.isdigit() and int(cut) >= 1:
            k = int(cut)
            knobs.update(family.cut_knobs)
        else:
            raise ParameterError(f"Measure {name!r}: the cutoff after @ is a positive integer.",
                                 hint=f"For example {family.name}@10.")
    for part in filter(None, (p.strip() for p in (params or "").split(","))):
        key, eq, value = (s.strip() for s in part.partition("="))
        if not eq or key not in family.params:
            raise ParameterError(f"Measure {name!r}: {family.name} takes no parameter {part!r} here.",
                                 hint=f"Its parameters: {', '.join(family.params) or 'none'}.")
        if key == "dcg":
            if value.strip("'\"") not in _IR_DCG:
                raise ParameterError(f"Measure {name!r}: dcg={value} is not one rankwise computes.",
                                     hint="dcg='log2' (gain = relevance) or dcg='exp-log2' (gain 2^rel - 1).")
            knobs["gain"] = (_IR_DCG[value.strip("'\"")],)
            continue
        try:
            number = _number(value)
        except ValueError:
            raise ParameterError(f"Measure {name!r}: {key}={value} is not a number.",
                                 hint=f"For example {family.name}({key}=2).") from None
        if family.name == "NumRet" and key == "rel":  # ir_measures: NumRet(rel=1) counts relevant retrieved
            family = _IR["NumRelRet"]
        knobs[_IR_PARAM[key]] = (number,)
    if family.reads_rel and "relevance_threshold" not in knobs:
        knobs["relevance_threshold"] = _IR_DEFAULT_REL
    return Measure(name, family, k, knobs, param)


def known_names() -> list[str]:
    """Example spellings of every family (the did-you-mean candidates): cutoff 10, recall level 0.5."""
    out = []
    for f in FAMILIES:
        if f.style == "trec_eval":
            out.append(f"{f.name}_{'0.50' if f.param else 10}" if f.cutoff == "required" else f.name)
        else:
            out += [f.name] * (f.cutoff != "required") + [f"{f.name}@{'0.5' if f.param else 10}"] * (f.cutoff != "none")
    return list(dict.fromkeys(out))


def _fmt(value) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def expand_trec(option: str) -> list[str]:
    """trec_eval's ``-m`` argument as measure names: ``all_trec``, ``official``, ``set``, a family
    (``P``: its default cutoffs) or a family with parameters (``P.5,10``, ``iprec_at_recall.0.5``,
    ``relstring.20``); a full name (``P_10``) is taken as it is."""
    sets = {
        "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                     "recip_rank", "iprec_at_recall", "P"),
        "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
                "set_relative_P", "set_map", "set_F"),
        "all_trec": tuple(f.name for f in FAMILIES if f.style == "trec_eval" and f.name != "relstring"),
    }
    if option in sets:
        return [name for family in sets[option] for name in expand_trec(family)]
    family_name, dot, params = option.partition(".")
    family = _TREC.get(family_name)
    if family is None or (family.cutoff == "none" and not dot):
        return [option]
    if family.name == "relstring":
        return [f"relstring_{params}" if dot else "relstring"]
    if family.levels:  # 11pt_avg.0.25,0.5 prints as 11pt_avg_0.25,0.5 (the levels as given: trec_eval's name)
        return [f"{family.name}_{params}" if dot else family.name]
    if dot:
        if "=" in params and family.cutoff == "none":
            return [f"{family.name}_{params}"]
        values = [_number(v) for v in params.split(",") if v.strip()]
        if family.param:
            values = [float(v) for v in values]
        if family.cutoff == "none":  # ndcg.1=3,2=9 and rbp_resid.p=0.5 print as ndcg_1=3,2=9 (trec_eval's names)
            return [f"{family.name}_{params}" if "=" in params else option]
    else:
        values = list(family.defaults)
    return [f"{family.name}_{_fmt(v)}" for v in values]


# -- holding measures against a convention ------------------------------------------------------------


def check(measures, conv, presets=None) -> None:
    """Each measure is computed by rankwise (else "not computed by rankwise yet") and ``conv`` has
    the knob values its name implies (else: which preset or knob to use; ``presets``: {name:
    Convention}, the presets to suggest)."""
    for m in measures:
        if m.family.metric is None:
            raise ParameterError(f"{m.name!r} is run information, not a measure rankwise computes per user.",
                                 hint="The result says it: the run's name, and n_users in Result.summary.")
        if not m.live:
            raise ParameterError(
                f"Measure {m.name!r} ({m.family.style}'s {m.family.doc}) is not computed by rankwise yet: its "
                f"metric {m.family.metric!r} is being added ({ISSUE}, part 1).",
                hint="Leave it out for now; docs/measures.md marks the measures rankwise computes.")
    for m in measures:
        for knob, allowed in m.knobs.items():
            if not hasattr(conv, knob):  # a parameter whose knob is not there yet
                raise ParameterError(
                    f"Measure {m.name!r} is not computed by rankwise yet: its {m.family.param or knob} needs the "
                    f"knob {knob!r} ({ISSUE}, part 1).", hint="Leave it out for now; docs/measures.md lists the measures.")
            if knob == m.family.param_knob:  # the name's own parameter: evaluate() computes any value (params)
                continue
            if not any(_same(getattr(conv, knob), a) for a in allowed):
                raise _knob_error(m, knob, allowed, conv, measures, presets or {})


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0.0)
        except (TypeError, ValueError):
            return False
    return a == b


def _knob_error(m: Measure, knob: str, allowed, conv, measures, PRESETS) -> ParameterError:
    presets = [name for name, p in PRESETS.items() if fits(measures, p)]
    want = " or ".join(f"{knob}={a!r}" for a in allowed)
    fixes = [f"convention={presets[0]!r}"] if presets else []
    fixes.append(f"convention=rankwise.PRESETS[{conv.name.split('(')[0]!r}].replace({knob}={allowed[0]!r})"
                 if conv.name.split("(")[0] in PRESETS else f"a convention with {knob}={allowed[0]!r}")
    return ParameterError(
        f"Measure {m.name!r} is defined with {want}; the {conv.name!r} convention has {knob}={getattr(conv, knob)!r}.",
        hint=f"Use {' or '.join(fixes)}" + (f" (presets that fit every measure asked: {', '.join(presets)})."
                                             if len(presets) > 1 else ".")
        + (" ties orders equal scores only: with ranks given it changes no value." if knob == "ties" else ""))


def fits(measures, conv) -> bool:
    """Does ``conv`` have every knob value ``measures`` imply, and every metric they need?"""
    return all(any(_same(getattr(conv, knob, None), a) for a in allowed)
               for m in measures for knob, allowed in m.knobs.items() if knob != m.family.param_knob) and all(
        conv.metrics is None or m.metric in conv.metrics for m in measures if m.metric)


def requirements(measures, conv):
    """The convention ``measures`` need, derived from ``conv``: each knob they imply set to the value
    they name (for the command line's trec_eval mode, which follows the names); a ParameterError if
    two measures need different values of one knob. A parameter family's knob is left as it is: each
    value is its own column of one evaluation (:func:`params`)."""
    knobs = [(m, knob, allowed) for m in measures for knob, allowed in m.knobs.items() if knob != m.family.param_knob]
    changes = {knob: allowed[0] for _, knob, allowed in knobs if not any(_same(getattr(conv, knob), a) for a in allowed)}
    for m, knob, allowed in knobs:  # every measure against the knobs as changed (another measure may need another value)
        if knob in changes and not any(_same(changes[knob], a) for a in allowed):
            raise ParameterError(f"Measure {m.name!r} needs {knob}={allowed[0]!r}, another measure asked "
                                 f"needs {knob}={changes[knob]!r}.", hint="Evaluate them in two calls.")
    # trec_eval's names read the convention's relevance level (trec_eval's -l): one that an ir_measures name's
    # rel= would change under them is a conflict, not a silent other value
    follows = [m for m in measures if m.family.style == "trec_eval" and "relevance_threshold" not in m.knobs]
    if "relevance_threshold" in changes and follows:
        changer = next(m for m in measures if "relevance_threshold" in m.knobs)
        raise ParameterError(
            f"Measure {changer.name!r} needs relevance_threshold={changes['relevance_threshold']!r}; "
            f"{follows[0].name!r} asked beside it reads the convention's relevance level "
            f"({conv.relevance_threshold!r}).", hint="Evaluate them in two calls.")
    return conv.replace(**changes) if changes else conv


def params(measures, conv) -> tuple[tuple, tuple, tuple]:
    """(the measures, each one whose parameter is not ``conv``'s knob value pointed at its Param.column and
    each list of levels at its LevelMean.column; those Params, once each, with the iprec_at_recall Params the
    LevelMeans read; the LevelMeans, once each): a parameter family's values computed beside the convention's
    in one evaluation, as a dimension like k."""
    out, found, means = [], {}, {}
    for m in measures:
        if m.levels is not None:
            mean = declarations.LevelMean(m.levels)
            found.update((p.column, p) for p in mean.params if p.column not in found)
            means.setdefault(mean.column, mean)
            out.append(dataclasses.replace(m, output=mean.column))
            continue
        knob = m.family.param_knob
        if knob and m.param is not None and not _same(getattr(conv, knob), m.param):
            p = declarations.Param(m.metric, float(m.param))
            assert p.knob == knob, (p, knob)  # names.FAMILIES and declarations.PARAM_KNOBS agree
            found.setdefault(p.column, p)
            m = dataclasses.replace(m, output=p.column)
        out.append(m)
    return tuple(out), tuple(found.values()), tuple(means.values())


# -- the values, named as asked ----------------------------------------------------------------------


def _metric(m: Measure) -> str:
    """The metric column (and summary metric) holding ``m``'s values."""
    return m.output or m.metric


def _column(m: Measure) -> str:
    return f"{_metric(m)}@{m.cutoff}"


def _value(m: Measure, expr: pl.Expr) -> pl.Expr:
    return (1.0 - expr) if m.family.transform == "one_minus" else expr


def per_measure(per_user: pl.DataFrame, measures, keys: list[str]) -> pl.DataFrame:
    """``keys`` (run, user), then one Float64 column per measure, named as asked, in the order asked."""
    return per_user.select(*keys, *(_value(m, pl.col(_column(m))).alias(m.name) for m in measures))


def measure_summary(per_user: pl.DataFrame, summary: pl.DataFrame, measures, runs: tuple) -> pl.DataFrame:
    """(run,) measure, value, n_users, metric, k (null: the whole list): each measure's aggregate as its
    library defines it. A mean is the summary's (its value and n_users; 1 - mean for Judged); a sum
    (trec_eval's counts) and a geometric mean (gm_map, gm_bpref: each value floored at 0.00001, as
    trec_eval does) are over the users with a defined value."""
    rows = []
    for run in runs or (None,):
        users = per_user if run is None else per_user.filter(pl.col("run") == run)
        means = summary if run is None else summary.filter(pl.col("run") == run)
        for m in measures:
            if m.family.aggregate == "mean":
                row = means.filter((pl.col("metric") == _metric(m)) & (pl.col("k") == m.cutoff))
                value, n = (row["value"][0], row["n_users"][0]) if row.height else (float("nan"), 0)
                value = 1.0 - value if m.family.transform == "one_minus" else value
            else:
                col = users.get_column(_column(m)).drop_nulls().drop_nans()
                n = col.len()
                if m.family.aggregate == "sum":
                    value = float(col.sum())
                else:
                    value = math.exp(col.clip(lower_bound=MIN_GEO_MEAN).log().mean()) if n else float("nan")
            rows.append(((run,) if runs else ()) + (m.name, float(value), int(n), m.metric, m.k))
    schema = ({"run": pl.String} if runs else {}) | {"measure": pl.String, "value": pl.Float64, "n_users": pl.Int64,
                                                    "metric": pl.String, "k": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


# -- the documentation table --------------------------------------------------------------------------


def markdown() -> str:
    """docs/measures.md: every name family, its metric, cutoff and knobs, and whether rankwise computes
    it today (generated from FAMILIES and the registry; tests/test_measure_names.py keeps the page in step)."""
    lines = [
        "# Measure names",
        "",
        "<!-- generated by rankwise.metrics.names.markdown(): python -m rankwise.metrics.names > docs/measures.md -->",
        "",
        "`rankwise.evaluate(..., measures=[...])` and `rankwise evaluate RUN QRELS --trec -m ...` take measure names as",
        "trec_eval and ir_measures write them. Each name is a rankwise metric at a cutoff (*whole list*: the",
        "metric over every retrieved document, as trec_eval's `map`, `ndcg`, `recip_rank` and `Rprec` are) and",
        "the convention knob values the name implies: a convention with other values is refused with the",
        "preset or knob to use (the `trec_eval` preset has trec_eval's), except a parameter family's own",
        "parameter (`iprec_at_recall_<level>`, `Rprec_mult_<m>`): every value asked for is computed in the same",
        "evaluation, each its own column. `11pt_avg_<l1>,<l2>,...` (trec_eval's `-m 11pt_avg.<l1>,<l2>,...`, named",
        "as trec_eval prints it) averages the interpolated precision at the recall levels given, each a number",
        "from 0 to 1: their `iprec_at_recall` values, computed in the same evaluation (the columns",
        "`iprec_at_recall(iprec_recall_level=<l>)`), added from the last level down and divided by their number,",
        "as trec_eval does. Levels given out of ascending order get trec_eval's values, which are not that mean",
        "(trec_eval matches the levels to the relevant documents walking from the last level back:",
        "`rankwise.metrics.declarations.LevelMean` has the rule); a level given twice counts twice.",
        "ir_measures' `rel=` sets `relevance_threshold` (a name without it means ir_measures' `rel=1`: a",
        "convention's threshold of 1, or of 0, the same on integer levels), `p=` sets `rbp_persistence`. Where",
        "ir_measures' own provider of a measure orders equal scores its own way (`Judged@k`, `RR@k`: docno",
        "ascending; its pytrec_eval measures: descending, as trec_eval), the name carries that `ties` value.",
        "`tests/conformance/test_ir_measures_live.py` proves each family per query against ir_measures run live",
        "(IPrec aside: its provider, pytrec-eval-terrier, counts recall levels by trec_eval 9's rule).",
        f"*waits*: the metric is not in rankwise yet ({ISSUE}, part 1); the name is refused",
        "with that message until it is.",
        "",
    ]
    for style, title in (("trec_eval", "trec_eval 10.0"), ("ir_measures", "ir_measures")):
        fams = [f for f in FAMILIES if f.style == style]
        live = sum(is_live(f) for f in fams if f.metric)
        lines += [f"## {title} ({live} of {sum(1 for f in fams if f.metric)} families computed)", "",
                  "| name | rankwise metric | cutoff | knobs | aggregate | status | what |", "|---|---|---|---|---|---|---|"]
        for f in fams:
            lines.append("| " + " | ".join([
                f"`{_example(f)}`", f"`{f.metric}`" if f.metric else "(run information)", _cut_doc(f),
                _knobs_doc(f), "-" if f.metric is None else {"mean": "mean", "sum": "sum", "gm": "geometric mean"}[
                    f.aggregate] + (", 1 - value" if f.transform else ""),
                "run information" if f.metric is None else ("computed" if is_live(f) else "waits"),
                f.doc.replace("|", "\\|"),
            ]) + " |")
        lines.append("")
    return "\n".join(lines)


def _example(f: Family) -> str:
    if f.style == "trec_eval":
        if f.cutoff == "required":
            return f"{f.name}_{'<level>' if f.param else '<k>'}"
        return f.name + ("_<n>" if f.name == "relstring" else "")
    params = f"({', '.join(p + '=' for p in f.params)})" if f.params else ""
    suffix = {"required": "@<k>", "optional": "[@<k>]", "none": ""}[f.cutoff]
    return f"{f.name}{params}{suffix.replace('<k>', '<level>') if f.param else suffix}"


def _cut_doc(f: Family) -> str:
    if f.param:
        return f"{f.param} (knob `{f.param_knob}`)"
    if f.levels:
        return f"whole list; {f.levels} `{f.name}_<l1>,<l2>,...` (trec_eval's default 0.0, 0.1, ..., 1.0)"
    cut = {"required": "k", "none": "whole list", "optional": "k, or the whole list"}[f.cutoff]
    return cut + (f"; trec_eval's default {', '.join(map(_fmt, f.defaults))}" if f.defaults else "")


def _knobs_doc(f: Family) -> str:
    parts = [f"{k}={' or '.join(map(repr, v))}" for k, v in f.knobs.items()]
    parts += [f"{k}={' or '.join(map(repr, v))} (at k)" for k, v in f.cut_knobs.items()]
    return "; ".join(parts).replace("|", "\\|") or "-"


if __name__ == "__main__":
    print(markdown(), end="")
