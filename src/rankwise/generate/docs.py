"""Generate docs/metrics.md from the metric catalogue, the knob definitions and the presets.

Run ``python -m rankwise.generate.docs > docs/metrics.md``; tests/test_presets.py checks the committed page
is what this produces, so the page cannot drift from the code.
"""

from __future__ import annotations

from rankwise.conventions import presets as _presets
from rankwise.explain import defines
from rankwise.conventions import PRESETS, Convention, knob_documentation
from rankwise.metrics.declarations import BEYOND, KNOBS_BY_METRIC, REGISTRY

def _expression_and_macro(frame: dict, expression, call: str) -> float:
    """The Polars expression on a one-row frame and the DuckDB macro ``call``, which must agree: the value."""
    import polars as pl

    from rankwise import _duckdb_connect

    from rankwise import expr

    value = pl.DataFrame(frame).select(expression).item()
    with _duckdb_connect.connect() as con:
        expr.install_duckdb(con)
        macro = con.execute(f"SELECT {call}").fetchone()[0]
    assert abs(value - macro) <= 1e-12, (call, value, macro)
    return value


def _no_list_form() -> tuple[str, ...]:
    from rankwise import expr

    return expr.NO_LIST_FORM


def _list_example(metric: str) -> str:
    """The metric on list columns (docs/expressions.md): the expression and the macro on one small row."""
    from rankwise import expr

    name = "f1" if metric == "fbeta" else metric
    recs, truth, k = [1, 2, 3, 4], [2, 4, 5], 3
    value = _expression_and_macro({"recs": [recs], "truth": [truth]}, getattr(expr, name)("recs", "truth", k=k),
                                  f"rankwise_{name}({recs}, {truth}, {k})")
    return (f"On list columns (one row per user, [expressions.md](expressions.md)): "
            f'`rankwise.expr.{name}("recs", "truth", k={k})` in Polars, `rankwise_{name}(recs, truth, {k})` in '
            f"DuckDB (`sql/macros.sql`). With recs = {recs} and truth = {truth}, both give {value:.6g} "
            "under the default convention.")


# beyond-accuracy metrics whose side data fits a row: (column, its value, what it holds, the expression's
# other arguments, the macro call), all at k = 3
_POP = ("pop", [4, 1, None], "each item's train popularity, None: cold")
_SIDE_EXAMPLES = {
    "novelty": (*_POP, {"n_users": 8}, "rankwise_novelty([4, 1, NULL], 3, 8)"),
    "arp": (*_POP, {}, "rankwise_arp([4, 1, NULL], 3)"),
    "ild": ("vectors", [[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]], "each item's vector", {},
            "rankwise_ild([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]], 3)"),
}


def _side_example(metric: str) -> str:
    """A beyond-accuracy metric on list columns: the expression and the macro on one small row."""
    from rankwise import expr

    column, row, holds, arguments, call = _SIDE_EXAMPLES[metric]
    value = _expression_and_macro({column: [row]}, getattr(expr, metric)(column, k=3, **arguments), call)
    shown = "".join(f", {key}={v!r}" for key, v in arguments.items())
    return (f'On list columns ([expressions.md](expressions.md)): `rankwise.expr.{metric}("{column}", k=3{shown})` '
            f"in Polars, `{call}` in DuckDB (`sql/macros.sql`). With {column} = {row} ({holds}), both give "
            f"{value:.6g} under the default convention.")


def _vote_section() -> list[str]:
    """The default convention's vote per knob (``_presets.vote``), with the overrides and why."""
    libraries = [name for name in PRESETS if name not in _presets.NOT_LIBRARIES]
    out = [
        "## The default convention: the libraries' vote",
        "",
        "`Convention()`, the `default` preset, is the definition the field shares: for each knob, the value",
        f"most of the {len(libraries)} library presets use. A preset votes on a knob only if it has a metric the knob",
        "moves (a preset without NDCG has no say on `ideal`). Where the votes split evenly, the value",
        "trec_eval and ranx share wins; where they do not both vote, the tied value listed first among the",
        "knob's values. `default` and `recommended_ideal` (the definitions of a widely read review of",
        "recommender-metric definitions with five-user worked tables) do not vote. A few beyond-accuracy",
        "knobs keep another value, said in the last column. `tests/test_presets.py` checks `Convention()`",
        "against this vote.",
        "",
        "| knob | votes | vote | default |",
        "|---|---|---|---|",
    ]
    default = Convention()
    for knob, v in _presets.vote().items():
        votes = "; ".join(f"`{value!r}` {len(names)} ({', '.join(names)})" for value, names in v.counts.items())
        won = f"`{v.winner!r}`" + (f" ({v.rule})" if v.rule else "")
        kept = f"`{getattr(default, knob)!r}`"
        if knob in _presets.OVERRIDES:
            kept += f": overridden, {_presets.OVERRIDES[knob][1]}"
        out.append(f"| `{knob}` | {votes} | {won} | {kept} |")
    return out + [""]


def render() -> str:
    knobs = knob_documentation()
    out = [
        "# Metrics, knobs and libraries",
        "",
        "Generated by `python -m rankwise.generate.docs` from the code (metric catalogue, `Convention` knobs,",
        "`PRESETS`); a test keeps it in sync. Per user u at cutoff k: hits@k = relevant items among the",
        "top k, n_rel = the user's relevant labels, n = list length. Users with no relevant label or no",
        "recommendation take the values of `empty_labels` / `empty_predictions` for every metric.",
        "",
        *_vote_section(),
        "## Knobs",
        "",
        "| knob | default | values | meaning |",
        "|---|---|---|---|",
    ]
    default = Convention()
    for name, (values, doc) in knobs.items():
        shown = ", ".join(f"`{v!r}`" for v in values) if isinstance(values, tuple) else values
        out.append(f"| `{name}` | `{getattr(default, name)!r}` | {shown} | {doc} |")
    for m in REGISTRY + BEYOND:
        metric, title, formula = m.name, m.title, m.formula
        relevant = KNOBS_BY_METRIC[metric]
        presets = [p for p in PRESETS.values() if defines(p, m.public_name)]
        varying = [k for k in relevant if len({repr(getattr(p, k)) for p in presets}) > 1]
        out += ["", f"## {title}", "", f"Formula: {formula}", ""]
        if m.sql is not None:  # the declaration every engine runs (rankwise.metrics.declarations, Metric.sql)
            over = "per-(user, k)" if m.level == "user" else "per-k catalog"
            out += [f"As declared (SQL over the {over} statistics; `$name` is a knob):", "",
                    f"    {m.sql}", ""]
        if m in BEYOND:
            out += [f"Level: {m.level} ({m.aggregate}). Needs: " + ", ".join(m.needs) + ".", ""]
        out += ["Knobs that change it: " + ", ".join(f"`{k}`" for k in relevant) + ".", ""]
        if m.level == "user" and m.needs == ("recommendations", "ground_truth") and metric not in _no_list_form():
            out += [_list_example(metric), ""]
        if metric in _SIDE_EXAMPLES:
            out += [_side_example(metric), ""]
        missing = [p.name for p in PRESETS.values() if p not in presets]
        if missing:
            out += ["Not defined by: " + ", ".join(missing) + ".", ""]
        out += ["| preset |" + "".join(f" {k} |" for k in varying), "|---" * (len(varying) + 1) + "|"]
        for p in presets:
            out.append(f"| `{p.name}` |" + "".join(f" `{getattr(p, k)!r}` |" for k in varying))
    out += ["", "## Presets", ""]
    for p in PRESETS.values():
        out += [f"### `{p.name}`", "", p.notes, "", "Metrics: " + ", ".join(p.metrics or ()) + ".", ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    print(render(), end="")
