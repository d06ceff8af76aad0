"""The metric catalogue: names, formulas, and parsing of user requests.

Per user u at cutoff k, with rel_i = 1 if the item at position i is relevant, hits@k = sum_{i<=k} rel_i,
n_rel = number of relevant labels, n = list length (knob names in brackets):

=============  =============================================================================
precision      hits@k / den                      [precision_denominator: k | min(k,n) | min(k,n_rel)]
recall         hits@k / n_rel
f<beta>        (1+b^2) P R / (b^2 P + R), 0 when P = R = 0          [f_aggregation]
map            AP@k = sum_{i<=k, rel_i} P@i / den                     [ap_denominator]
mar            AR@k = sum_{i<=k, rel_i} R@i / den  (document 001)     [ap_denominator]
mrr            RR@k = 1 / (position of the first hit), 0 without one  [rr_cutoff]
dcg            sum_{i<=k} gain(r_i) / log_b(i+1)                      [gain, log_base]
ndcg           DCG@k / IDCG@k                                         [ideal, zero_ideal]
hit_rate       1 if hits@k > 0 else 0
r_precision    hits@m / m with m = min(k, n_rel)  (trec_eval Rprec when k >= n_rel)
=============  =============================================================================

Users with no relevant label or no recommendation get the values ``empty_labels`` and
``empty_predictions`` say, for every metric; ``nan`` leaves the user out of the mean.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import ParameterError

METRICS = (
    "precision", "recall", "f1", "map", "mar", "mrr", "dcg", "ndcg", "hit_rate", "r_precision",
)
_F_BETA = re.compile(r"^f(\d+(?:\.\d+)?)$")

# Which convention knobs can change each metric (per-user column name). One place: the docs page
# and explain() both read it.
_EVERY_METRIC = ("users", "unjudged", "empty_labels", "empty_predictions", "relevance_threshold", "duplicates", "ties", "min_score")
KNOBS_BY_METRIC = {
    "precision": _EVERY_METRIC + ("precision_denominator",),
    "recall": _EVERY_METRIC,
    "fbeta": _EVERY_METRIC + ("precision_denominator", "f_aggregation"),
    "map": _EVERY_METRIC + ("ap_denominator",),
    "mar": _EVERY_METRIC + ("ap_denominator",),
    "mrr": _EVERY_METRIC + ("rr_cutoff",),
    "dcg": _EVERY_METRIC + ("gain", "log_base"),
    "ndcg": _EVERY_METRIC + ("gain", "log_base", "ideal", "zero_ideal"),
    "hit_rate": _EVERY_METRIC,
    "r_precision": _EVERY_METRIC,
}


@dataclass(frozen=True)
class MetricRequest:
    """The metrics and cutoffs one evaluation computes."""

    names: tuple[str, ...]  # user-facing names in request order, e.g. ("precision", "f2")
    ks: tuple[int, ...]
    beta: float  # F-beta's beta (1.0 when no F metric is requested)

    def column(self, name: str, k: int) -> str:
        return f"{name}@{k}"


def internal_name(name: str) -> str:
    """The per-user column a metric lives in: every F-beta is "fbeta"."""
    return "fbeta" if _F_BETA.match(name) else name


def parse_request(metrics, k, supported: tuple[str, ...] | None = None, convention_name: str = "") -> MetricRequest:
    """Validate ``metrics`` (None = all the convention supports) and ``k`` (positive ints)."""
    ks = _parse_k(k)
    if metrics is None:
        names = [m for m in METRICS if supported is None or internal_name(m) in supported]
    else:
        names = _as_list(metrics, "metrics")
    seen, betas = [], []
    for name in names:
        if not isinstance(name, str):
            raise ParameterError(f"Metric names are strings, got {name!r}.")
        name = name.strip().lower()
        match = _F_BETA.match(name)
        if match:
            beta = float(match.group(1))
            if beta <= 0:
                raise ParameterError(f"F-beta needs beta > 0, got {name!r}.")
            betas.append(beta)
        elif name not in METRICS:
            raise ParameterError(
                f"Unknown metric {name!r}.",
                hint=f"Known metrics: {', '.join(METRICS)} (and f<beta> such as f2 or f0.5).",
            )
        if supported is not None and internal_name(name) not in supported:
            raise ParameterError(
                f"The {convention_name!r} convention has no metric {name!r}: the library it "
                f"reproduces does not define one.",
                hint=f"It has: {', '.join(supported)}. For another definition, derive a convention: "
                f"rankwise.PRESETS[{convention_name!r}].replace(...) keeps its knobs and lifts the limit "
                f"with metrics=None.",
            )
        if name not in seen:
            seen.append(name)
    if len(set(betas)) > 1:
        raise ParameterError(
            f"One F-beta per evaluation, got {', '.join(n for n in seen if _F_BETA.match(n))}.",
            hint="Call evaluate() once per beta.",
        )
    return MetricRequest(tuple(seen), ks, betas[0] if betas else 1.0)


def _parse_k(k) -> tuple[int, ...]:
    values = [k] if isinstance(k, (int, float)) else _as_list(k, "k")
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int) or v < 1]
    if bad or not values or isinstance(k, str):
        raise ParameterError(
            f"k must be a positive integer or a list of them, got {k!r}.",
            hint="For example k=10 or k=[1, 5, 10].",
        )
    return tuple(sorted(set(values)))


def _as_list(value, what) -> list:
    if isinstance(value, (str, int)):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise ParameterError(f"{what} must be a value or a list, got {value!r}.",
                             hint="Pass a single value or a list of values.") from None
