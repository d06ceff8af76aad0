"""The metric macros of ``sql/macros.sql``, generated from the declarations.

``sql/macros.sql`` is written by hand above ``formulas.BEGIN``: the checks, the row rules and the list-form
statistics (``rankwise__stat_<name>``: the per-(user, k) statistics of ``sql/per_user.sql`` computed from one
row's lists, ``_graded`` where a relevance list changes one). Below it, each metric's macro is generated:

* every per-user accuracy metric gets ``rankwise_<name>(recs, truth, k, <knobs>)``, its named parameters the
  knobs of its declaration that one row can take (all but ``ROW_FREE``), with ``Convention()``'s defaults, and
  the non-knob parameters of its formula first (F-beta's ``beta``, default 1.0); ``GRADED`` adds the macros
  over a relevance list, ``ALIASES`` rankwise_f1;
* its body checks those knobs (the values ``Convention`` allows, the number rules in ``NUMBERS``), then
  applies the row rules (``rankwise__finish``: the empty rules, or ``rankwise__count`` for a metric without
  them) to the declared formula (``Metric.sql``), read by :func:`rankwise.metrics.formulas.substituted`:
  a statistic is its ``rankwise__stat_`` macro called with the macro's arguments of the same names, a term or
  another metric its own formula in parentheses, a knob the macro's parameter (a number as DOUBLE, as the
  shipped SQL binds it) or the value a macro binds.

``python -m rankwise.generate.sql`` rewrites the generated part; ``tests/test_formulas.py`` fails on drift.
"""

from __future__ import annotations

import re
import textwrap

from rankwise.conventions import Convention, knob_documentation
from rankwise.metrics import formulas as _formulas
from rankwise.metrics.declarations import K_ONES_MAX, REGISTRY

# knobs no row of binary lists takes: every gain rule gives a label gain 1, every grade is 1 of 1, no
# relevance is negative, and f_aggregation changes only the summary
ROW_FREE = ("gain", "gain_levels", "err_max_grade", "f_aggregation", "negative_relevance")
# the macros over a relevance list parallel to truth: metric -> (its named parameters, the knobs bound to a value);
# each also takes negative_relevance (a negative relevance: NaN under 'error', trec_eval's pooled label under
# 'unjudged'). gain_levels is no parameter: a macro gives each level the gain rule's gain
_JUDGED = ("relevance_threshold",)
GRADED = {
    "dcg": (("gain", "log_base", "relevance_threshold"), {}),
    "ndcg": (("gain", "log_base", "ideal", "zero_ideal", "relevance_threshold"), {}),
    # ERR's relevant labels: every positive grade (R = 0 at grade 0 whatever the threshold)
    "err": (("err_max_grade",), {"relevance_threshold": 0.0}),
    # trec_eval's judged-aware and gain measures: judged non-relevant and pooled labels need a relevance list
    **{name: (_JUDGED, {}) for name in ("num_nonrel_judged_ret", "bpref", "infap", "unj", "judged", "gm_bpref",
                                        "bin_g")},
    "g": (("gain", "relevance_threshold"), {}),
    "ndcg_rel": (("gain", "log_base", "relevance_threshold"), {}),
    "rndcg": (("gain", "log_base", "relevance_threshold"), {}),
    "rbp_resid": (("rbp_persistence",), {}),
}
# a binary macro reads a statistic written only over a relevance list (rankwise__stat_<name>_graded) with these
# arguments: relevance 1 per label, every label relevant, every gain rule giving it 1
BINARY_ARGUMENTS = {"rel": "rankwise__ones_like(truth)", "relevance_threshold": "0.0", "gain": "'binary'"}
# another name of a metric's macro: name -> (metric, its named parameters, the values bound)
ALIASES = {"f1": ("fbeta", ("precision_denominator",), {"beta": 1.0})}
# parameters of a formula that are no convention knob, and their defaults
EXTRA = {"beta": 1.0}
# the rule a number must meet (SQL over the parameter) and how the error states it
NUMBERS = {
    "beta": ("beta > 0", "a finite number > 0"),
    "log_base": ("log_base > 1", "a finite number > 1"),
    "rbp_persistence": ("rbp_persistence > 0 AND rbp_persistence < 1", "a number strictly between 0 and 1"),
    "rprec_multiplier": ("rprec_multiplier > 0", "a finite number > 0"),
    "iprec_recall_level": ("iprec_recall_level >= 0 AND iprec_recall_level <= 1", "a finite number between 0 and 1"),
    "relevance_threshold": ("relevance_threshold >= 0", "a finite number >= 0"),
    "collection_size": ("collection_size >= 0", "a finite number >= 0"),
    "err_max_grade": ("err_max_grade > 0",
                      "the top grade of the scale, > 0 (a macro sees one row, not the whole ground truth)"),
    **{knob: ("true", "a finite number") for knob in ("utility_relevant_retrieved", "utility_nonrelevant_retrieved",
                                                     "utility_relevant_missed", "utility_nonrelevant_missed")},
}
# what a macro cannot raise per row: refused like a value the convention does not allow (as rankwise.expr)
REFUSED = {"empty_labels": ("error",), "empty_predictions": ("error",)}
_HEADER = re.compile(r"CREATE OR REPLACE TEMP MACRO rankwise__stat_(\w+)\((.*?)\) AS", re.S)
_WIDTH = 120


def _statistics(hand_written: str) -> dict[str, tuple[str, ...]]:
    """The list-form statistics the hand-written part defines: name -> the macro's parameters."""
    return {name: tuple(p.strip() for p in params.split(",")) for name, params in _HEADER.findall(hand_written)}


def _literal(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"'{value}'" if isinstance(value, str) else repr(float(value))


def _is_number(knob: str) -> bool:
    value = EXTRA.get(knob, getattr(Convention(), knob, None))
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Scope:
    """What a generated macro's body reads: the list-form statistics (graded or not), the helpers of the
    terms and metrics other formulas read, its parameters, and the knobs it binds to a value."""

    def __init__(self, name: str, statistics: dict, helpers: dict, graded: bool, params: tuple[str, ...] | None,
                 bound: dict):
        self.name, self.statistics, self.helpers, self.graded = name, statistics, helpers, graded
        self.params, self.bound = params, bound  # params None: a helper, whose parameters are what it reads

    def call(self, macro: str, params: tuple[str, ...]):
        """``macro`` called with this macro's arguments of the same names."""
        from sqlglot import exp

        args = []
        for param in params:
            if not self.graded and param in BINARY_ARGUMENTS and (self.params is None or param not in self.params):
                args.append(_formulas.parse(BINARY_ARGUMENTS[param]))
            elif param in self.bound:
                args.append(_formulas.parse(_literal(self.bound[param])))
            elif param == "macro" and self.params is not None:
                args.append(exp.Literal.string(f"rankwise_{self.name}"))  # the public macro's name, for errors
            elif self.params is None or param in self.params:
                args.append(exp.column(param))
            else:
                raise ValueError(f"{macro} takes {param}, which rankwise_{self.name} does not.")
        return exp.Anonymous(this=macro, expressions=args)

    def column(self, name: str):
        """A statistic (its list-form macro), or a term or metric another formula reads (its helper)."""
        from sqlglot import exp

        if name == "k":
            return exp.column("k")
        if name in _formulas.STATISTICS:
            macro = f"{name}_graded" if self.graded and f"{name}_graded" in self.statistics else name
            if macro not in self.statistics and f"{name}_graded" in self.statistics:  # binary: BINARY_ARGUMENTS
                macro = f"{name}_graded"
            if macro not in self.statistics:
                raise ValueError(f"sql/macros.sql has no list-form statistic rankwise__stat_{name} (read by "
                                 f"rankwise_{self.name}): write it by hand above the generated part.")
            return self.call(f"rankwise__stat_{macro}", self.statistics[macro])
        helper = self.helpers.get((name, self.graded)) or _helper(name, self)
        return self.call(helper[0], helper[1])

    def knob(self, name: str):
        from sqlglot import exp

        if name in self.bound:
            return _formulas.parse(_literal(self.bound[name]))
        # a number as the DOUBLE the shipped SQL binds (a literal 0.8 is a DECIMAL in DuckDB)
        return exp.cast(exp.column(name), "DOUBLE") if _is_number(name) else exp.column(name)

    def render(self, sql: str) -> str:
        return _formulas.substituted(sql, self.column, self.knob)


def _helper(name: str, scope: _Scope) -> tuple:
    """The helper macro of a term or metric value that another formula reads (as per_user.sql reads an
    earlier stage's column): (its name, its parameters: what its body reads, its text), recorded in
    ``scope.helpers``."""
    terms = dict(_formulas.TERMS)
    values = {m.name: m.sql for m in REGISTRY if m.sql is not None}
    kind, sql = ("term", terms[name]) if name in terms else ("value", values[name])
    macro = f"rankwise__{kind}_{name}" + ("_graded" if scope.graded else "")
    text = _Scope(name, scope.statistics, scope.helpers, scope.graded, None, {}).render(sql)
    read = _free(text)
    order = ("recs", "truth", "rel", "k")
    params = tuple([p for p in order if p in read] + [p for p in read if p not in order])
    source = "rankwise.metrics.formulas.TERMS" if kind == "term" else "rankwise.metrics.declarations"
    scope.helpers[(name, scope.graded)] = (macro, params, "\n".join([
        f"-- {'the term' if kind == 'term' else 'the value of'} {name} ({source}), read by other formulas",
        f"CREATE OR REPLACE TEMP MACRO {macro}({', '.join(params)}) AS",
        f"    {_formulas.split_case(text, 4)};"]))
    return scope.helpers[(name, scope.graded)]


def _free(text: str) -> list[str]:
    """The names a generated body reads (its parameters), in order of first use."""
    from sqlglot import exp

    return list(dict.fromkeys(c.name for c in _formulas.parse(text).find_all(exp.Column)))


class _Macro:
    """One public macro: its name, the metric it computes, its form (graded: a relevance list), its named
    parameters and the knobs it binds."""

    def __init__(self, name: str, metric, graded: bool, knobs: tuple[str, ...], bound: dict):
        self.name, self.metric, self.graded, self.bound = name, metric, graded, bound
        rows = ("empty_labels", "empty_predictions") if metric.empty_rules else ()
        self.knobs = knobs + rows + ("duplicates",)
        self.positional = ("recs", "truth", "rel", "k") if graded else ("recs", "truth", "k")

    def signature(self) -> str:
        default = {**EXTRA, **Convention().knobs()}
        params = [*self.positional, *(f"{k} := {_literal(default[k])}" for k in self.knobs)]
        head = f"CREATE OR REPLACE TEMP MACRO rankwise_{self.name}("
        lines, line = [], head
        for i, param in enumerate(params):
            piece = param + (", " if i < len(params) - 1 else ") AS")
            if len(line) + len(piece.rstrip()) > _WIDTH and line.strip():
                lines.append(line.rstrip())
                line = " " * len(head)
            line += piece
        return "\n".join(lines + [line])

    def checks(self) -> list[str]:
        empty = "empty_labels, empty_predictions" if self.metric.empty_rules else "'nan', 'nan'"
        out = [f"rankwise__rows(k, {empty}, duplicates)"]
        allowed = knob_documentation()
        for knob in self.knobs:
            if knob in ("empty_labels", "empty_predictions", "duplicates"):
                continue  # rankwise__rows
            if knob in NUMBERS:
                ok, rule = NUMBERS[knob]
                check = f"rankwise__number('{knob}', {knob}, {ok}, '{rule}')"
                out.append(check if len(check) < _WIDTH - 10 else check.replace(f"{ok}, ", f"{ok},\n{' ' * 27}"))
            elif not isinstance(allowed[knob][0], tuple):
                raise ValueError(f"rankwise_{self.name} takes the number {knob}: give its rule in NUMBERS.")
            else:
                values = [v for v in allowed[knob][0] if v not in REFUSED.get(knob, ())]
                out.append(f"rankwise__knob('{knob}', {knob}, [{', '.join(map(_literal, values))}])")
        if "ideal" in self.knobs:  # the ideal of k ones enumerates k slots, as evaluate() refuses a larger k
            out.append(f"rankwise__number('k', k, ideal <> 'k_ones' OR k <= {K_ONES_MAX}, "
                       f"'at most {K_ONES_MAX} with ideal := ''k_ones''')")
        return out

    def text(self, statistics: dict, helpers: dict) -> str:
        m = self.metric
        scope = _Scope(self.name, statistics, helpers, self.graded, (*self.positional, *self.knobs), self.bound)
        comment = f"{m.title}: {m.formula}" + (f" ({', '.join(f'{k} = {v}' for k, v in self.bound.items())})"
                                               if self.name in ALIASES else "")
        value = _formulas.split_case(scope.render(m.sql), 8)
        if self.graded and "gain" in self.knobs:  # a value a gain made too large for a double fails, as evaluate()
            value = f"rankwise__finite({value}, 'rankwise_{self.name}', rel, gain)"
        if m.empty_rules:
            n_rel = scope.column("n_rel").sql(dialect="duckdb", normalize_functions=False)
            body = (f"rankwise__finish(recs, truth, {n_rel},\n        {value},\n"
                    f"        empty_labels, empty_predictions, duplicates)")
        else:
            body = f"rankwise__count(recs, truth,\n        {value},\n        duplicates)"
        if self.graded:
            body = f"CASE WHEN rankwise__bad_rel(truth, rel, negative_relevance) THEN 'NaN'::DOUBLE ELSE\n    {body} END"
        return "\n".join([
            *textwrap.wrap(comment, _WIDTH, initial_indent="-- ", subsequent_indent="-- "),
            self.signature(),
            "    CASE WHEN " + "\n      AND ".join(self.checks()) + " THEN",
            f"    {body} END;",
        ])


def macros() -> list[_Macro]:
    """The public metric macros, in the registry's order: each metric's, its alias, then the graded forms."""
    by_name = {m.name: m for m in REGISTRY}
    out = []
    for m in REGISTRY:
        if m.level != "user":
            continue
        extra = tuple(p for p in sorted(_formulas.placeholders(m.sql)) if p in EXTRA)
        out.append(_Macro(m.name, m, False, extra + tuple(k for k in m.knobs if k not in ROW_FREE), {}))
        out += [_Macro(alias, by_name[metric], False, knobs, bound)
                for alias, (metric, knobs, bound) in ALIASES.items() if metric == m.name]
    out += [_Macro(f"{name}_graded", by_name[name], True, knobs + ("negative_relevance",), bound)
            for name, (knobs, bound) in GRADED.items()]
    return out


def render(text: str) -> str:
    """``macros.sql``'s text with its generated part (from BEGIN to the end) written anew: the helpers of the
    terms and metrics other formulas read, then each public macro."""
    head = text.split(_formulas.BEGIN, 1)[0]
    statistics, helpers = _statistics(head), {}
    public = [m.text(statistics, helpers) for m in macros()]  # records the helpers they call
    return head + _formulas.BEGIN + "\n" + "\n\n".join([*(h[2] for h in helpers.values()), *public]) + "\n"
