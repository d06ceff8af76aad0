"""A metric's formula, written once as a SQL expression, turned into Polars and into the shipped SQL.

Each accuracy metric declares its per-user value (``Metric.sql`` in :mod:`rankwise.metrics.declarations`) as one SQL
expression over the per-(user, k) statistics of ``sql/per_user.sql``'s ``stats`` stage (``hits``,
``n_rel``, ``dcg``, ...), the shared terms in ``TERMS`` (``p_den``, ``ap_den``), other metrics' values
(F-beta reads ``precision`` and ``recall``) and the convention's knobs as ``$name`` parameters.

Why SQL is the single source: the shipped SQL is what the DuckDB, PostgreSQL and Spark engines run and
what users run by hand, so its text must exist anyway; sqlglot parses it once, and

* :func:`to_polars` turns the tree into a Polars expression with the knobs' values put in and every
  branch the knobs decide dropped, so the Polars plan holds only the chosen rule (the same plan as a
  hand-written builder, and the same IEEE operations in the same order as the SQL);
* :func:`per_user_stages` writes the stages of ``sql/per_user.sql`` after ``stats`` (the shared
  terms, the metrics, the empty-input rules), which every dialect then renders through sqlglot.

* :func:`summary_sql` writes ``sql/summary.sql`` (a metric's mean, or its ``of_means`` rule).

``python -m rankwise.generate.sql`` rewrites the generated part of ``sql/per_user.sql`` and
``sql/summary.sql`` from these functions; ``tests/test_formulas.py`` regenerates them and fails on drift.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache

import polars as pl

# The per-(user, k) statistics of per_user.sql's `stats` stage (and of sql/spark_user_stats.sql), which
# every formula reads. A metric named like one (dcg) is that statistic.
STATISTICS = ("k", "n_recs", "n_rel", "hits", "precision_sum", "hits_sum", "r_hits", "first_hit", "n_candidates",
              "dcg", "idcg", "rbp_sum", "err_sum", "mult_hits", "iprec_max", "ipt11_sum", "nonrel_ret", "pooled_ret",
              "bpref_sum", "infap_sum", "bing_sum", "g_sum", "ndcg_rel_sum", "pos_ret", "judged_rbp", "judged_ret",
              "rndcg_sum", "n_pos", "idcg_all", "gain_total", "n_bounds")

# trec_eval's floor of a value in a geometric mean (trec_eval.h MIN_GEO_MEAN): gm_map, gm_bpref
GEOMETRIC_FLOOR = 0.00001

# The per-(user, k) sums of sql/beyond_user.sql (and of the Polars engine's beyond plan) that the
# per-user beyond-accuracy formulas read: list items, items counted (cold ones dropped or not), the
# novelty, popularity, long-tail and serendipity sums, ild's items with features (m) and squared norm
# of their unit vectors' sum (q), the features given, U_T.
BEYOND_STATISTICS = ("k", "n_items", "n_counted", "info_sum", "apop_sum", "tail_sum", "seren_sum", "m", "q",
                     "n_features", "total")
# and the terms they share: the list denominators the knobs choose, ild's pairs
BEYOND_TERMS = {
    "den_all": "CASE WHEN $list_denominator = 'k' THEN CAST(k AS DOUBLE) "
               "ELSE NULLIF(CAST(n_items AS DOUBLE), 0.0) END",
    "den_counted": "CASE WHEN $list_denominator = 'k' THEN CAST(k AS DOUBLE) "
                   "ELSE NULLIF(CAST(n_counted AS DOUBLE), 0.0) END",
    "pairs": "m * (m - 1.0) / 2.0",
}

# The per-k statistics of sql/beyond_catalog.sql (and of the Polars engine's catalog plan) that the
# catalog-level formulas read: |C| (n_c), the exposed items of C (covered_in), the exposed items (n_exposed),
# the items of C and the recommended ones (n_all), sum c, sum c^2, sum c ln c (clogc), sum_r r c_(r) over the
# exposed items in ascending order (rc_sum), the users with items (n_users), and over the pooled top-k
# scores d = score - max, sum e^d (score_z) and sum e^d d (score_zd); NULL: no score.
BEYOND_CATALOG_STATISTICS = ("k", "n_c", "covered_in", "n_exposed", "n_all", "c_sum", "c2_sum", "clogc", "rc_sum",
                             "n_users", "score_z", "score_zd")
# and the terms they share: the catalog with its padding, the items covered (catalog_outside), Gini's N
# (n_gini), its denominator D and its numerator sum_j (2j - N - 1) c_(j) (the unexposed items have c = 0)
BEYOND_CATALOG_TERMS = {
    "catalog_size": "n_c + $catalog_padding",
    "covered": "CASE WHEN $catalog_outside = 'ignore' THEN covered_in ELSE n_exposed END",
    "n_gini": "CASE WHEN $gini = 'recommended_n1' THEN n_exposed ELSE n_all + $catalog_padding END",
    "gini_den": "CASE WHEN $gini = 'catalog' THEN n_gini ELSE n_gini - 1.0 END",
    "gini_num": "2.0 * ((n_gini - n_exposed) * c_sum + rc_sum) - (n_gini + 1.0) * c_sum",
}

# Terms more than one metric reads, by name: the denominators the knobs choose.
TERMS = {
    "p_den": "CAST(CASE WHEN $precision_denominator = 'k' THEN k "
             "WHEN $precision_denominator = 'min_k_len' THEN LEAST(k, n_recs) "
             "WHEN $precision_denominator = 'min_k_candidates' THEN LEAST(k, n_candidates) "
             "ELSE LEAST(k, n_rel) END AS DOUBLE)",
    "ap_den": "CAST(CASE WHEN $ap_denominator = 'n_hits' THEN CAST(hits AS BIGINT) "
              "WHEN $ap_denominator = 'n_rel' THEN n_rel "
              "WHEN $ap_denominator = 'min_k_nrel' THEN LEAST(k, n_rel) "
              "WHEN $ap_denominator = 'k' THEN k "
              "ELSE LEAST(k, n_recs) END AS DOUBLE)",
    # Rndcg's last point: the DCG of the whole (cut) list over the whole ideal, when the list runs on 2 or more items
    # past the labels of positive gain (trec_eval's implied R level at the list's end)
    "rndcg_tail": "CASE WHEN LEAST(k, n_recs) > n_pos + 1 AND idcg_all > 0 THEN 1.0 ELSE 0.0 END",
}


def parse(sql: str):
    """sqlglot's tree of a formula (for generating SQL; imported only then)."""
    return _parse(sql).copy()


@cache
def _parse(sql: str):
    import sqlglot

    return sqlglot.parse_one(sql, dialect="duckdb")


@cache
def tree(sql: str) -> tuple:
    """A formula as a tree of plain tuples, the form :func:`to_polars` reads: the declarations' trees
    are generated into ``_formula_trees`` (so an evaluation imports no SQL parser), any other formula
    is parsed here with sqlglot."""
    from rankwise.metrics.formula_trees import TREES

    return TREES[sql] if sql in TREES else _as_tuples(_parse(sql))


def _as_tuples(node) -> tuple:  # noqa: C901 - one branch per SQL construct
    from sqlglot import exp

    t = _as_tuples
    ops = {exp.Add: "__add__", exp.Sub: "__sub__", exp.Mul: "__mul__", exp.Div: "__truediv__", exp.GT: "__gt__",
           exp.GTE: "__ge__", exp.LT: "__lt__", exp.LTE: "__le__", exp.EQ: "__eq__", exp.NEQ: "__ne__"}
    if isinstance(node, exp.Paren):
        return t(node.this)
    if isinstance(node, exp.Column):
        return ("col", node.name)
    if isinstance(node, exp.Placeholder):
        return ("param", node.name)
    if isinstance(node, exp.Literal):
        text = node.this
        return ("lit", text if node.is_string else (float(text) if re.search(r"[.eE]", text) else int(text)))
    if isinstance(node, exp.Null):
        return ("lit", None)
    if isinstance(node, exp.Boolean):
        return ("lit", bool(node.this))
    if isinstance(node, exp.Neg):
        return ("neg", t(node.this))
    if type(node) in ops:
        return (ops[type(node)], t(node.this), t(node.expression))
    if isinstance(node, (exp.And, exp.Or)):
        return ("and" if isinstance(node, exp.And) else "or", t(node.this), t(node.expression))
    if isinstance(node, exp.Not):
        return ("not", t(node.this))
    if isinstance(node, exp.Case):
        default = t(node.args["default"]) if node.args.get("default") else ("lit", None)
        return ("case", tuple((t(b.this), t(b.args["true"])) for b in node.args["ifs"]), default)
    if isinstance(node, exp.Nullif):
        return ("nullif", t(node.this), t(node.expression))
    if isinstance(node, (exp.Least, exp.Greatest)):
        return ("least" if isinstance(node, exp.Least) else "greatest", tuple(t(a) for a in [node.this, *node.expressions]))
    if isinstance(node, exp.Floor) and not node.args.get("decimals"):
        return ("floor", t(node.this))
    if isinstance(node, exp.Ln):
        return ("ln", t(node.this))
    if isinstance(node, exp.Cast) and node.to.this.name in ("DOUBLE", "BIGINT"):
        return ("cast", node.to.this.name, t(node.this))
    raise NotImplementedError(f"rankwise.metrics.formulas: no Polars translation for {node.sql(dialect='duckdb')!r}")


def reads(sql: str) -> set[str]:
    """The names (statistics, terms, metrics) a formula reads."""
    return set(_leaves(tree(sql), "col"))


def placeholders(sql: str) -> set[str]:
    """The knobs (``$name``) a formula reads itself (not through the terms or metrics it reads)."""
    return set(_leaves(tree(sql), "param"))


def _leaves(part, kind: str):
    """The names of the ``kind`` leaves ("col", "param") in a tree, a node being a tuple that starts with its
    kind (a str)."""
    if isinstance(part, tuple) and part and isinstance(part[0], str):
        if part[0] == kind:
            yield part[1]
        elif part[0] not in ("col", "param", "lit"):
            for child in part[1:]:
                yield from _leaves(child, kind)
    elif isinstance(part, tuple):  # a tuple of nodes, or of (condition, value) pairs
        for child in part:
            yield from _leaves(child, kind)


# -- SQL to Polars -------------------------------------------------------------------------------------

class _Const:
    """A value known while the plan is built (a literal or a knob): folded, never sent to Polars."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _lit(x) -> pl.Expr:
    if isinstance(x, _Const):
        v = x.value
        return pl.lit(None, dtype=pl.Float64) if v is None else pl.lit(v)
    return x


_TYPES = {"DOUBLE": (pl.Float64, float), "BIGINT": (pl.Int64, int)}


def _dyadic(c) -> bool:
    """c is a power of two (x / c and x * (1 / c) are then the same double)."""
    return isinstance(c, (int, float)) and math.isfinite(c) and c != 0 and abs(math.frexp(c)[0]) == 0.5


def to_polars(sql: str, params: dict, col=pl.col, names: dict | None = None) -> pl.Expr:
    """The Polars expression of the formula ``sql``: ``$name`` from ``params``, a column ``x`` as
    ``col("x")``, unless ``names`` (e.g. the other metrics' formulas, the terms) gives its formula."""
    names = {**TERMS, **{n: f for n, f in (names or {}).items() if n not in STATISTICS}}
    return _lit(_translate(tree(sql), params, col, names))


def _translate(node, params, col, names):  # noqa: C901 - one branch per construct
    t = lambda n: _translate(n, params, col, names)  # noqa: E731
    kind = node[0]
    if kind == "col":
        return t(tree(names[node[1]])) if node[1] in names else col(node[1])
    if kind == "param":
        return _Const(params[node[1]])
    if kind == "lit":
        return _Const(node[1])
    if kind == "neg":
        a = t(node[1])
        return _Const(-a.value) if isinstance(a, _Const) else -a
    if kind.startswith("__"):  # arithmetic and comparisons, by their Python operator
        a, b = t(node[1]), t(node[2])
        if isinstance(a, _Const) and isinstance(b, _Const):
            return _Const(getattr(a.value, kind)(b.value))
        if isinstance(a, _Const):
            return getattr(pl.lit(a.value), kind)(b)
        if kind == "__truediv__" and isinstance(b, _Const) and not _dyadic(b.value):
            # Polars divides a column by a scalar c as a product by 1 / c, which rounds otherwise than SQL's
            # x / c: divide by a column of c instead (NaN and inf rows too: 0 times them is NaN, read as 0)
            return a / ((a * 0.0).fill_nan(0.0) + b.value)
        return getattr(a, kind)(b.value if isinstance(b, _Const) else b)
    if kind in ("and", "or"):
        a, b = t(node[1]), t(node[2])
        is_and = kind == "and"
        for x, y in ((a, b), (b, a)):
            if isinstance(x, _Const):
                return y if bool(x.value) == is_and else _Const(not is_and)
        return (a & b) if is_and else (a | b)
    if kind == "not":
        a = t(node[1])
        return _Const(not a.value) if isinstance(a, _Const) else ~a
    if kind == "case":
        branches, default = [], None
        for cond_node, value_node in node[1]:
            cond = t(cond_node)
            if isinstance(cond, _Const):
                if cond.value:  # always taken: what follows is never reached
                    default = t(value_node)
                    break
                continue
            branches.append((cond, t(value_node)))
        else:
            default = t(node[2])
        if not branches:
            return default
        chain = pl.when(branches[0][0]).then(_lit(branches[0][1]))
        for cond, value in branches[1:]:
            chain = chain.when(cond).then(_lit(value))
        return chain if isinstance(default, _Const) and default.value is None else chain.otherwise(_lit(default))
    if kind == "nullif":
        a, b = t(node[1]), t(node[2])
        return pl.when(_lit(a) != _lit(b)).then(_lit(a))
    if kind in ("least", "greatest"):
        args = [t(a) for a in node[1]]
        if all(isinstance(a, _Const) for a in args):
            return _Const((min if kind == "least" else max)(a.value for a in args))
        fn = pl.min_horizontal if kind == "least" else pl.max_horizontal
        return fn(*map(_lit, args))
    if kind == "floor":
        a = t(node[1])
        return _Const(math.floor(a.value)) if isinstance(a, _Const) else _lit(a).floor()
    if kind == "ln":
        a = t(node[1])
        return _Const(math.log(a.value)) if isinstance(a, _Const) else _lit(a).log()
    if kind == "cast":
        dtype, convert = _TYPES[node[1]]
        a = t(node[2])
        if isinstance(a, _Const):
            return _Const(None if a.value is None else convert(a.value))
        return a.cast(dtype)
    raise ValueError(f"rankwise.metrics.formulas: unknown node {kind!r}")


def trees_module(sqls) -> str:
    """The text of ``_formula_trees.py``: each formula's tuple tree (python -m rankwise.generate.sql)."""
    lines = ['"""Generated by python -m rankwise.generate.sql from the metric declarations: each formula as the',
             "tuple tree rankwise.metrics.formulas.to_polars reads (an evaluation then needs no SQL parser). Do not edit.",
             '"""', "", "TREES = {"]
    for sql in sqls:
        lines.append(f"    {sql!r}:\n        {_as_tuples(_parse(sql))!r},")
    return "\n".join(lines + ["}", ""])


# -- the shipped SQL ----------------------------------------------------------------------------------

def _qualified(sql: str, alias: str, indent: int = 11) -> str:
    """The formula reading ``alias``'s columns; a long CASE gets a line per branch."""
    text = _qualified_flat(sql, alias)
    if len(text) > 100 and "CASE" in text:
        case = text.index("CASE")
        text = re.sub(r"(?<!CASE) (WHEN|ELSE) ", "\n" + " " * (indent + case + 5) + r"\1 ", text)
    return text


def substituted(sql: str, column, knob=None) -> str:
    """The formula as DuckDB SQL, on one line, with each column ``name`` (a statistic, term or metric) read
    as the sqlglot expression ``column(name)`` and each knob ``$name`` as ``knob(name)`` (kept as a
    parameter without ``knob``): the one rule by which the generated SQL reads a formula (the stages of
    per_user.sql, summary.sql and beyond_*.sql: qualified columns and bound parameters; sql/macros.sql:
    the list-form statistics and the macro's parameters)."""
    # function names as written (the formulas spell theirs in capitals; a macro's call keeps its own)
    return substituted_tree(sql, column, knob).sql(dialect="duckdb", normalize_functions=False)


def substituted_tree(sql: str, column, knob=None):
    """:func:`substituted`'s sqlglot tree (to nest one formula in another)."""
    from sqlglot import exp

    def replace(node):
        if isinstance(node, exp.Column):
            return column(node.name)
        if isinstance(node, exp.Placeholder) and knob is not None:
            return knob(node.name)
        return node

    return parse(sql).transform(replace)


def _qualified_flat(sql: str, alias: str) -> str:
    """The formula reading ``alias``'s columns, on one line."""
    from sqlglot import exp

    return substituted(sql, lambda name: exp.column(name, table=alias))


def metric_stages(metrics) -> list[list]:
    """The metrics in stages: a metric that reads another comes in a later stage."""
    names = {m.name for m in metrics} - set(STATISTICS)
    done: set[str] = set()
    stages: list[list] = []
    pending = list(metrics)
    while pending:
        stage = [m for m in pending if not (reads(m.sql) & names) - done]
        if not stage:
            raise ValueError("metric formulas read each other in a cycle: " + ", ".join(m.name for m in pending))
        stages.append(stage)
        done |= {m.name for m in stage}
        pending = [m for m in pending if m not in stage]
    return stages


def per_user_stages(metrics) -> str:
    """The CTEs and final SELECT of ``sql/per_user.sql`` after ``stats``, from the declarations."""
    out = ["-- the terms several metrics share (rankwise.metrics.formulas.TERMS)",
           "denominators AS (",
           "    SELECT s.*,",
           ",\n".join(f"           {_qualified(sql, 's')} AS {name}" for name, sql in TERMS.items()),
           "    FROM stats AS s",
           "),"]
    previous = "denominators"
    for i, stage in enumerate(metric_stages(metrics)):
        name = "defined" if i == 0 else f"defined_{i + 1}"
        keep = "d.user_id, d.k, d.n_recs, d.n_rel" if i == 0 else "d.*"
        if i == 0:
            out.append("-- each metric's value where the user has labels and recommendations (rankwise.metrics.declarations)")
        out += [f"{name} AS (",
                f"    SELECT {keep},",
                ",\n".join(f"           {_qualified(m.sql, 'd')} AS {m.name}" for m in stage),
                f"    FROM {previous} AS d",
                "),"]
        previous = name
    out += ["-- the values a user without labels or without recommendations gets, for every metric",
            "empty_values AS (",
            "    SELECT CASE WHEN $empty_labels = 'zero' THEN 0.0 WHEN $empty_labels = 'one' THEN 1.0",
            "                ELSE CAST(NULL AS DOUBLE) END AS no_labels,",
            "           CASE WHEN $empty_predictions = 'zero' THEN 0.0 WHEN $empty_predictions = 'one' THEN 1.0",
            "                ELSE CAST(NULL AS DOUBLE) END AS no_predictions",
            ")",
            "SELECT f.user_id, f.k, f.n_recs, f.n_rel,",
            ",\n".join(f"       CASE WHEN f.n_rel = 0 THEN e.no_labels WHEN f.n_recs = 0 THEN e.no_predictions "
                       f"ELSE f.{m.name} END AS {m.name}" if m.empty_rules else f"       f.{m.name} AS {m.name}"
                       for m in metrics),
            f"FROM {previous} AS f",
            "CROSS JOIN empty_values AS e"]
    return "\n".join(out) + "\n"


def _over_means(sql: str) -> str:
    """A formula reading each metric's mean over users (``s.<name>_mean``) instead of its value."""
    from sqlglot import exp

    return substituted(sql, lambda name: exp.column(f"{name}_mean", table="s"))


def _aggregate(m) -> str:
    """The SQL aggregate of metric ``m``'s per-user values its ``summary`` names."""

    return {"mean": f"AVG(p.{m.name})", "sum": f"SUM(p.{m.name})",
            # GREATEST skips a NULL (DuckDB, PostgreSQL): an undefined value must stay out of the mean
            "geometric_mean": f"EXP(AVG(CASE WHEN p.{m.name} IS NOT NULL "
                              f"THEN LN(GREATEST(p.{m.name}, {GEOMETRIC_FLOOR:.5f})) END))"}[m.summary]


def summary_sql(metrics) -> str:
    """``sql/summary.sql``: per metric and k the mean over the users with a defined value, their number
    and sample sd; a metric declaring ``of_means`` has the formula over the means under that knob value."""
    head = [
        "-- rankwise: summary of the per-user metrics, one row per (metric, k).",
        f"-- Generated from the metric declarations (rankwise.metrics.declarations) by python -m rankwise.generate.sql: do not edit.",
        "--",
        "-- Inputs: per_user, the output of per_user.sql (user_id, k, n_recs, n_rel, precision, ...); cutoffs(k):",
        "--         a row per cutoff also when no user was evaluated (value NULL, n_users 0).",
        "-- Parameters: the knobs of a metric's `of_means` rule ($f_aggregation 'per_user' | 'of_means': the",
        "--             mean of per-user F or F of mean P and mean R), $beta (F-beta's beta), $f_name (the",
        "--             F-beta row's metric name: 'f1', 'f2', 'f0.5').",
        "-- Output: metric, k, value (mean over users whose value is defined; a count's sum, trec_eval's",
        "--         geometric mean for gm_*), n_users (users in that value), sd (their sample standard",
        "--         deviation, for confidence intervals; NULL for an F of means, a sum or a geometric mean).",
        "-- AVG, SUM, COUNT and STDDEV_SAMP skip NULLs: a user whose value is undefined is left out of that value.",
        "WITH",
        "-- one pass over the per-user rows; the selects below reshape its few rows",
        "per_k AS (",
        "    SELECT p.k,",
        ",\n".join(f"           {_aggregate(m)} AS {m.name}_{m.summary}, COUNT(p.{m.name}) AS {m.name}_n"
                   + (f", STDDEV_SAMP(p.{m.name}) AS {m.name}_sd" if m.summary == "mean" else "") for m in metrics),
        "    FROM per_user AS p",
        "    GROUP BY p.k",
        ")",
    ]
    branches = []
    for m in metrics:
        row = "$f_name" if m.name == "fbeta" else f"'{m.name}'"
        if m.summary != "mean":  # a sum or a geometric mean: no standard deviation of a mean over users
            value, sd = f"s.{m.name}_{m.summary}", "CAST(NULL AS DOUBLE)"
        elif m.of_means is None:
            value, sd = f"s.{m.name}_mean", f"s.{m.name}_sd"
        else:
            knob, chosen = m.of_means
            value = (f"CASE WHEN ${knob} <> '{chosen}' THEN s.{m.name}_mean\n"
                     f"            WHEN COALESCE(s.{m.name}_n, 0) = 0 THEN CAST(NULL AS DOUBLE)\n"
                     f"            ELSE {_over_means(m.sql)} END")
            sd = f"CASE WHEN ${knob} <> '{chosen}' THEN s.{m.name}_sd END"
        sep = "\n       " if m.of_means else " "
        branches.append(f"SELECT {row} AS metric, c.k,{sep}{value} AS value,{sep}"
                        f"COALESCE(s.{m.name}_n, 0) AS n_users,{sep}{sd} AS sd\n"
                        f"FROM cutoffs AS c LEFT JOIN per_k AS s ON s.k = c.k")
    return "\n".join(head) + "\n" + "\nUNION ALL\n".join(branches) + "\n"


def split_case(text: str, indent: int) -> str:
    """A formula on one line (starting at column ``indent``) with a line per branch of its first CASE (the
    WHEN/ELSE of that CASE only, aligned under its first WHEN)."""
    start = text.find("CASE ")
    if start < 0:
        return text
    indent += start
    out, depth, branches = [text[:start]], 0, 0
    for token in re.split(r"(\bCASE\b|\bEND\b|[()]|\bWHEN\b|\bELSE\b)", text[start:]):
        if token in ("CASE", "("):
            depth += 1
        elif token in ("END", ")"):
            depth -= 1
        elif token in ("WHEN", "ELSE") and depth == 1:
            if branches:  # the first WHEN stays on the CASE's line
                out[-1] = out[-1].rstrip() + "\n" + " " * (indent + 5)
            branches += 1
        out.append(token)
    return "".join(out)


def beyond_user_tail(metrics) -> str:
    """The end of ``sql/beyond_user.sql``: the shared terms over its per-user sums, then each per-user
    beyond-accuracy metric's value, from the declarations."""
    return "\n".join([
        "-- the terms several metrics share (rankwise.metrics.formulas.BEYOND_TERMS)",
        "denominators AS (",
        "    SELECT p.*, t.total,",
        ",\n".join(f"           {_qualified(sql, 'p')} AS {name}" for name, sql in BEYOND_TERMS.items()),
        "    FROM per_user AS p",
        "    CROSS JOIN totals AS t",
        ")",
        "SELECT d.user_id, d.k, d.n_items,",
        ",\n".join(f"       {split_case(_qualified_flat(m.sql, 'd'), 7)} AS {m.name}" for m in metrics),
        "FROM denominators AS d",
    ]) + "\n"


def render_beyond_user(text: str, metrics) -> str:
    """``beyond_user.sql``'s text with its generated part (from BEGIN to the end) written anew."""
    return text.split(BEGIN, 1)[0] + BEGIN + "\n" + beyond_user_tail(metrics)


def _term_stages(terms: dict) -> list[dict]:
    """The terms in stages: a term that reads another comes in a later stage."""
    stages, done, pending = [], set(), dict(terms)
    while pending:
        stage = {n: f for n, f in pending.items() if not (reads(f) & set(pending)) - done - {n}}
        if not stage:
            raise ValueError("terms read each other in a cycle: " + ", ".join(pending))
        stages.append(stage)
        done |= set(stage)
        pending = {n: f for n, f in pending.items() if n not in stage}
    return stages


def beyond_catalog_tail(metrics) -> str:
    """The end of ``sql/beyond_catalog.sql``: the shared terms over its per-k statistics (``per_k``), each
    catalog-level metric's value, one row per (metric, k), from the declarations."""
    out, previous = ["-- the terms the catalog metrics share (rankwise.metrics.formulas.BEYOND_CATALOG_TERMS)"], "per_k"
    for i, stage in enumerate(_term_stages(BEYOND_CATALOG_TERMS)):
        name = "catalog_terms" if i == 0 else f"catalog_terms_{i + 1}"
        out += [f"{name} AS (",
                "    SELECT t.*,",
                ",\n".join(f"           {split_case(_qualified_flat(sql, 't'), 11)} AS {n}" for n, sql in stage.items()),
                f"    FROM {previous} AS t",
                "),"]
        previous = name
    out += ["-- each metric's value (rankwise.metrics.declarations.BEYOND)",
            "results AS (",
            "    SELECT v.k, v.n_users,",
            ",\n".join(f"           {split_case(_qualified_flat(m.sql, 'v'), 11)} AS {m.name}" for m in metrics),
            f"    FROM {previous} AS v",
            ")",
            "\nUNION ALL ".join(f"SELECT '{m.name}' AS metric, x.k, x.{m.name} AS value, CAST(x.n_users AS BIGINT) "
                                f"AS n_users FROM results AS x" for m in metrics)]
    return "\n".join(out) + "\n"


def render_beyond_catalog(text: str, metrics) -> str:
    """``beyond_catalog.sql``'s text with its generated part (from BEGIN to the end) written anew."""
    return text.split(BEGIN, 1)[0] + BEGIN + "\n" + beyond_catalog_tail(metrics)


BEGIN = "-- >>> generated from the metric declarations (rankwise.metrics.declarations) by python -m rankwise.generate.sql: do not edit"


def render_per_user(text: str, metrics) -> str:
    """``per_user.sql``'s text with its generated part (from BEGIN to the end) written anew."""
    head = text.split(BEGIN, 1)[0]
    return head + BEGIN + "\n" + per_user_stages(metrics)


# -- the shipped SQL restricted to some metrics (the DuckDB engine's request) ----------------------------
# The generated text has one select-list item per metric (a line, or a CASE over a few lines ending in
# `AS <name>`) and one summary branch per metric, so a request's SQL is the shipped file with the other
# metrics' items left out: what DuckDB binds and plans grows with the metrics asked for, not the registry.
# Every line kept is a line of the shipped file (the select lists' last commas aside).

_ITEM_END = re.compile(r"\bAS ([a-z_][a-z0-9_]*),?\Z")
_DEFINED = re.compile(r"(defined(?:_\d+)?) AS \(\Z")


def _items(lines: list[str]) -> list[tuple[str, list[str]]]:
    """A select list's lines as (name, lines) items, each ending at the line that names it."""
    items, current = [], []
    for line in lines:
        current.append(line)
        end = _ITEM_END.search(line)
        if end:
            items.append((end[1], current))
            current = []
    if current:
        raise ValueError(f"rankwise: a generated select list ends without a name: {current!r}")  # a bug
    return items


def _kept_list(header: str, lines: list[str], keep) -> list[str]:
    """``header`` (``SELECT ...,``) and the items of ``lines`` whose name ``keep`` accepts, comma-separated."""
    items = [(name, item) for name, item in _items(lines) if keep(name)]
    for _, item in items:
        item[-1] = item[-1].rstrip(",")
    out = [header.rstrip(",") + ("," if items else "")]
    for i, (_, item) in enumerate(items):
        out += item[:-1] + [item[-1] + ("," if i < len(items) - 1 else "")]
    return out


def per_user_restricted(text: str, metrics) -> str:
    """``sql/per_user.sql``'s text with only the metrics ``metrics`` (names) in its generated stages (the
    ``defined`` CTEs and the final SELECT); the hand-written stages as they are."""
    head, tail = text.split(BEGIN, 1)
    wanted = set(metrics)
    lines, out, i = tail.split("\n"), [], 0
    while i < len(lines):
        line = lines[i]
        starts = _DEFINED.fullmatch(line) or line.startswith("SELECT f.user_id")
        if not starts:
            out.append(line)
            i += 1
            continue
        if _DEFINED.fullmatch(line):  # "defined AS (" then its SELECT line
            out.append(line)
            i += 1
        header, body, i = lines[i], [], i + 1
        while not lines[i].lstrip().startswith("FROM "):
            body.append(lines[i])
            i += 1
        out += _kept_list(header, body, lambda name: name in wanted)
    return head + BEGIN + "\n".join(out)


def summary_restricted(text: str, metrics) -> str:
    """``sql/summary.sql``'s text with only the metrics ``metrics`` (names): their aggregates in ``per_k``
    and their branches."""
    wanted = set(metrics)
    head, first = text.split("\n)\nSELECT ", 1)
    branches = ("SELECT " + first).rstrip("\n").split("\nUNION ALL\n")
    start = head.index("    SELECT p.k,")
    stop = head.index("\n    FROM per_user AS p")
    aggregates = [line for line in head[start:stop].split("\n")[1:]
                  if re.search(r"\(p\.(\w+)\b", line)[1] in wanted]
    head = head[:start] + "\n".join(_kept_list("    SELECT p.k,", aggregates, lambda name: True)) + head[stop:]
    kept = [b for b in branches
            if (re.match(r"SELECT (?:'(\w+)'|\$f_name) AS metric", b)[1] or "fbeta") in wanted]
    if not kept:
        raise ValueError("rankwise: no summary branch for " + ", ".join(sorted(wanted)))  # a bug
    return head + "\n)\n" + "\nUNION ALL\n".join(kept) + "\n"


# -- a parameter family's statistic, written once for per_user.sql and param_families.sql -----------------------


@dataclass(frozen=True)
class ParamStatistic:
    """A parameter family's running statistic (declarations.PARAM_KNOBS): per user in rank order, the window
    ``aggregate`` of ``CASE WHEN <when> THEN <then> [ELSE <otherwise>] END`` over the relevant recommended items
    (columns rank, hits_so_far, n_rel, iprec_half; the family's knob as its $placeholder); ``at_k``: its value at
    a cutoff k (columns matched: 1 when an item lies at or above k, and the statistic). per_user.sql's running
    stage (the convention's value; ipt0 .. ipt10: iprec_max at trec_eval's 11 levels) and its values at k, and
    param_families.sql's (one per value) are generated from these (python -m rankwise.generate.sql)."""

    name: str
    aggregate: str
    when: str
    then: str
    otherwise: str | None
    at_k: str

    @property
    def knob(self) -> str:
        (knob,) = placeholders(self.when)
        return knob


PARAM_STATISTICS = {
    # trec_eval's Rprec_mult cutoff: the hits within the first c = floor(m n_rel + 0.9) ranks
    "rprec_mult": ParamStatistic("mult_hits", "SUM", "rank <= FLOOR($rprec_multiplier * n_rel + 0.9)", "1", "0",
                                 "CAST(CASE WHEN COALESCE(matched, 0) = 1 THEN mult_hits ELSE 0 END AS DOUBLE)"),
    # iprec_at_recall: the largest precision at a hit from the r-th hit on, r = floor(l n_rel + half) (the hits
    # from the r-th on are a prefix of the rows after it, so a running MAX)
    "iprec_at_recall": ParamStatistic(
        "iprec_max", "MAX", "hits_so_far >= FLOOR($iprec_recall_level * n_rel + iprec_half)",
        "CAST(hits_so_far AS DOUBLE) / rank", None,
        "CASE WHEN COALESCE(matched, 0) = 1 THEN COALESCE(iprec_max, 0.0) ELSE 0.0 END"),
}
_WINDOW = "OVER (PARTITION BY {a}.user_id ORDER BY {a}.rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"


def _columns_of(alias: str, renamed: dict | None = None):
    from sqlglot import exp

    return lambda name: exp.column((renamed or {}).get(name, name), table=alias)


def param_running(stat: ParamStatistic, alias: str, value: str, name: str, relevant: str | None = None) -> str:
    """The statistic's window over ``alias``'s rows at the family value ``value`` (SQL text), as column ``name``;
    ``relevant``: the column that is 1 at a relevant item, when the rows hold others too."""
    when = substituted(stat.when, _columns_of(alias)).replace(f"${stat.knob}", value)
    when = f"{alias}.{relevant} = 1 AND {when}" if relevant else when
    otherwise = f" ELSE {stat.otherwise}" if stat.otherwise is not None else ""
    then = substituted(stat.then, _columns_of(alias))
    return f"{stat.aggregate}(CASE WHEN {when} THEN {then}{otherwise} END) {_WINDOW.format(a=alias)} AS {name}"


def param_value(metric, stat: ParamStatistic, value: str, column: str, empty: tuple[str, str, str, str]) -> str:
    """``metric``'s declared formula at the family value ``value``, its statistic read as ``at_k`` of ``column``
    (alias-qualified), n_rel / n_recs and the empty rules' values from ``empty`` (n_rel, n_recs, no_labels,
    no_predictions)."""
    from sqlglot import exp

    n_rel, n_recs, no_labels, no_predictions = empty
    table, stat_column = column.split(".")
    at_k = substituted_tree(stat.at_k, lambda n: exp.column(stat_column if n == stat.name else n, table=table))
    of = {"n_rel": n_rel, "n_recs": n_recs}

    def col(name):
        return at_k.copy() if name == stat.name else exp.column(of[name].split(".")[1], table=of[name].split(".")[0])

    formula = substituted(metric.sql, col).replace(f"${stat.knob}", value)
    return (f"CASE WHEN {n_rel} = 0 THEN {no_labels} WHEN {n_recs} = 0 THEN {no_predictions} ELSE {formula} END"
            if metric.empty_rules else formula)


def render_blocks(text: str, blocks: dict[str, list[str]]) -> str:
    """``text`` with the lines between ``-- >>> <name>`` and ``-- <<< <name>`` replaced by ``blocks[name]``, each
    at the indentation of its opening marker."""
    lines, out, skipping = text.split("\n"), [], None
    for line in lines:
        mark = line.strip()
        if skipping is not None:
            if mark == f"-- <<< {skipping}":
                out.append(line)
                skipping = None
            continue
        out.append(line)
        if mark.startswith("-- >>> ") and mark[7:].split(" (")[0] in blocks:
            skipping = mark[7:].split(" (")[0]
            indent = line[:len(line) - len(line.lstrip())]
            out += [indent + b for b in blocks[skipping]]
    if skipping is not None:
        raise ValueError(f"rankwise.metrics.formulas: no '-- <<< {skipping}' after its '-- >>>'")
    return "\n".join(out)


_IPT_LEVELS = tuple(f"{i / 10:.1f}" for i in range(11))  # trec_eval's 11pt_avg levels (per_user.sql's ipt0 .. ipt10)


def render_per_user_params(text: str, metrics: dict) -> str:
    """``per_user.sql``'s running statistics and their values at k (``-- >>> param running`` and ``-- >>> param at
    k`` blocks) from PARAM_STATISTICS; ``metrics``: the families' Metric declarations by name."""
    stats = [PARAM_STATISTICS[m] for m in metrics]
    running = [param_running(s, "j", f"${s.knob}", s.name, relevant="is_rel") + "," for s in stats]
    iprec = PARAM_STATISTICS["iprec_at_recall"]
    running += [param_running(iprec, "j", f"CAST({lv} AS DOUBLE)", f"ipt{i}", relevant="is_rel") + ","
                for i, lv in enumerate(_IPT_LEVELS)]
    at_k = [substituted(s.at_k, _columns_of("a")) + f" AS {s.name}," for s in stats]
    return render_blocks(text, {"param running": running, "param at k": at_k})


def render_param_families(text: str, metrics: dict) -> str:
    """``param_families.sql``'s template lines (``--@ <metric>``, then the line written once per value i) from
    PARAM_STATISTICS and the families' declared formulas (``metrics``: their Metric declarations by name)."""
    running, values = [], []
    for name, metric in metrics.items():
        stat = PARAM_STATISTICS[name]
        running += [f"--@ {name}", ", " + param_running(stat, "h", "$value_{i}", "s{i}")]
        value = param_value(metric, stat, "$value_{i}", "a.s__i", ("e.n_rel", "e.n_recs", "v.no_labels",
                                                                  "v.no_predictions"))
        values += [f"--@ {name}", ", " + value.replace("s__i", "s{i}") + " AS p{i}"]
    return render_blocks(text, {"param running": running, "param values": values})
