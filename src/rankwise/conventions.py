"""Conventions: every definitional choice a ranking metric makes, as one named field.

A :class:`Convention` is a frozen bundle of knob values. ``Convention()`` is reference document
000's convention (the ``default`` preset). Derive variants with ``conv.replace(field=value)``.

Both engines read the same knobs: the Polars plan branches on them in Python, the SQL receives them
as bound parameters (see :meth:`Convention.sql_parameters`), so one convention means one thing.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from .errors import ParameterError


def _knob(default, values, doc):
    return field(default=default, metadata={"values": values, "doc": doc})


@dataclass(frozen=True)
class Convention:
    """The definitional choices behind every metric (defaults: reference document 000)."""

    users: str = _knob(
        "union",
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
        "nan",
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
        "n_hits",
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
        "exp2",
        ("binary", "linear", "exp2"),
        "DCG gain of an item with relevance r: 1 if relevant else 0, r, or 2^r - 1",
    )
    log_base: float = _knob(
        math.e,
        "a number > 1",
        "DCG discount of position i is log_b(i + 1) = ln(i + 1) / ln(b)",
    )
    ideal: str = _knob(
        "predictions_topk",
        ("predictions_topk", "labels", "k_ones"),
        "IDCG@k from: the top-k recommended items' gains sorted descending (document 000), "
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
    duplicates: str = _knob(
        "error",
        ("error", "first_shift"),
        "an item repeated in one user's list: a DuplicateItemError, or keep the first occurrence "
        "and move later items up",
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
        if not (isinstance(self.log_base, (int, float)) and self.log_base > 1):
            raise ParameterError(f"log_base must be a number > 1, got {self.log_base!r}.")
        if self.min_score is not None and not isinstance(self.min_score, (int, float)):
            raise ParameterError(f"min_score must be None or a number, got {self.min_score!r}.")
        if not (isinstance(self.relevance_threshold, (int, float)) and self.relevance_threshold >= 0):
            raise ParameterError(
                f"relevance_threshold must be a number >= 0, got {self.relevance_threshold!r}."
            )

    def replace(self, **changes) -> Convention:
        """A copy with some knobs changed: ``PRESETS['default'].replace(gain='linear')``."""
        names = [f.name for f in dataclasses.fields(self)]
        unknown = set(changes) - set(names)
        if unknown:
            raise ParameterError(
                f"Convention has no field {', '.join(sorted(unknown))}.",
                hint=f"Fields: {', '.join(names)}.",
            )
        knobs_changed = {k: v for k, v in changes.items() if k in self.knobs() and v != getattr(self, k)}
        if knobs_changed and "name" not in changes:
            changes["name"] = self.name + "".join(f" {k}={v!r}" for k, v in knobs_changed.items())
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
            if value is None or name in _INPUT_KNOBS:
                continue  # applied while normalising the inputs, before either engine
            if isinstance(value, bool):
                value = int(value)
            elif isinstance(value, (int, float)):
                value = float(value)
            out[name] = value
        return out

    def __str__(self) -> str:
        rows = [(f.name, repr(getattr(self, f.name)), f.metadata["doc"]) for f in _knob_fields()]
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        head = f"Convention {self.name!r}" + (f" (metrics: {', '.join(self.metrics)})" if self.metrics else "")
        return "\n".join([head, *(f"  {a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows)])


_INPUT_KNOBS = ("duplicates", "ties", "min_score")


def _knob_fields():
    return [f for f in dataclasses.fields(Convention) if not f.metadata.get("meta")]


def knob_documentation() -> dict[str, tuple[object, str]]:
    """``{knob: (allowed values, description)}`` for docs and the CLI."""
    return {f.name: (f.metadata["values"], f.metadata["doc"]) for f in _knob_fields()}


from ._presets import PRESETS  # noqa: E402  (presets are Conventions: defined after the class)


def resolve(convention: str | Convention) -> Convention:
    """A preset name or a Convention -> a Convention."""
    if isinstance(convention, Convention):
        return convention
    if isinstance(convention, str) and convention in PRESETS:
        return PRESETS[convention]
    raise ParameterError(
        f"Unknown convention {convention!r}.",
        hint=f"Use a Convention object or one of the presets: {', '.join(sorted(PRESETS))}.",
    )
