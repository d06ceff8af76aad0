"""The dbt package in ``integrations/dbt``: its SQL macros generated from ``rankwise.sqlgen.render`` (the
same shipped ``sql/*.sql`` as ``rankwise.sql``), one set per dialect, chosen by ``adapter.dispatch``.

Run ``python -m rankwise.generate.dbt`` to regenerate ``integrations/dbt/macros/generated/``;
``tests/test_dbt.py`` regenerates in memory and fails when the files differ (drift).

How a script becomes macros. :func:`rankwise.sqlgen.render.render` is called with marker values where the dbt
user's choices go, and every marker in the rendered text becomes a Jinja slot:

* the two input relations (``rwrel_recommendations``, ``rwrel_ground_truth``) and, inside the check's
  message, their names as text;
* the five column names (``rwcol_user``, ...), quoted in Jinja by the renderer's rule (a plain
  lower-case word unquoted, any other name quoted as the dialect quotes, quote characters doubled);
* every convention knob that is an SQL parameter (``Convention.sql_parameters``): the script is rendered
  with a Convention whose parameters are markers (``'rwk_gain'``, ``987650000.5``); the dbt user's preset
  (``vars: rankwise: convention:``) fills them in Jinja with that preset's literals, which are computed
  here, at generation time, as the renderer writes them;
* F-beta's beta and the summary row's name (rendered with a marker metric ``f987650099.5``), and k.

The structural knobs (``ties`` with a score column) and the column choices that change the SQL's shape
(ranks from a rank or a score column; a relevance column or none) are rendered once per variant.
:func:`verify` fills the templates in Python exactly as the Jinja does and compares them with
``render()`` for every preset and dialect: any difference between presets that is not a slot fails
there, so the macros compute what ``rankwise.sql`` renders for that preset.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import sys
from pathlib import Path

from rankwise.sqlgen import render as _render
from rankwise.conventions import PRESETS, resolve
from rankwise.errors import RankwiseError, UnsupportedSQLError
from rankwise.metrics.declarations import K_MAX, K_ONES_MAX, KNOBS_BY_METRIC, METRICS, internal_name

# dbt adapter type = rankwise.sql dialect (dbt-duckdb, dbt-postgres, dbt-spark, dbt-databricks,
# dbt-bigquery, dbt-snowflake, dbt-trino, dbt-clickhouse, dbt-redshift all exist)
DIALECTS = _render.DIALECTS
PACKAGE = Path(__file__).resolve().parents[3] / "integrations" / "dbt"
GENERATED = "macros/generated"

_RELS = {"recommendations": "rwrel_recommendations", "ground_truth": "rwrel_ground_truth"}
_COLS = {"user": "rwcol_user", "item": "rwcol_item", "rank": "rwcol_rank", "score": "rwcol_score",
         "relevance": "rwcol_relevance"}
_BETA = "987650099.5"
_F_NAME = "f" + _BETA
_K = 987650123
_F_FOR = "f1"  # F-beta's public name when the generator asks for it


class _MarkedConvention:
    """Mixin: a Convention whose SQL parameters are markers (see the module docstring)."""

    markers: dict = {}

    def sql_parameters(self) -> dict:  # noqa: D401 - overrides Convention.sql_parameters
        return dict(self.markers)


def _markers(base) -> dict:
    """{knob: marker value} of the same type as the knob's parameter; strings 'rwk_<knob>'."""
    out = {}
    for i, (name, value) in enumerate(sorted(base.sql_parameters().items())):
        if isinstance(value, str):
            out[name] = f"rwk_{name}"
        elif isinstance(value, int):
            out[name] = 987650000 + i
        else:
            out[name] = 987650000.5 + i
    return out


def _marked_convention(ties: str):
    base = resolve("default")
    markers = _markers(base)
    cls = type("MarkedConvention", (_MarkedConvention, type(base)), {"markers": markers})
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base) if f.init}
    fields["ties"] = ties
    return cls(**fields), markers


def _literal_text(value, dialect: str) -> str:
    """How the renderer writes a parameter value inside the statement: the marker's text is replaced by
    this (a string literal, an integer, or the number inside ``CAST(... AS DOUBLE)``)."""
    if isinstance(value, str):
        return _string_literal(value, dialect)
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def _string_literal(value: str, dialect: str) -> str:
    """A string literal as the renderer writes it (sqlglot's, for the dialect)."""
    from sqlglot import exp

    return exp.Literal.string(value).sql(dialect=dialect)


def _marker_text(value, dialect: str) -> str:
    return _literal_text(value, dialect)


# -- templates: lists of text and slots ------------------------------------------------------------


def _template(text: str, dialect: str, markers: dict) -> list:
    """``text`` split at every marker into [str | (group, key)] (slots: ("rel", name), ("text", name),
    ("col", name), ("knob", name), ("beta",), ("f_name",), ("k",))."""
    # the same text recurs (the per-user body of every variant, ~40 kB): split once
    return list(_template_once(text, dialect, tuple(markers.items())))


@functools.lru_cache(maxsize=64)
def _template_once(text: str, dialect: str, markers: tuple) -> tuple:
    markers = dict(markers)
    patterns = [
        (re.escape(_string_literal(_F_NAME, dialect)), ("f_name",)),
        (re.escape(_BETA), ("beta",)),
        (rf"\b{_K}\b", ("k",)),
        *((rf"= {v}\b", ("text", k)) for k, v in _RELS.items()),
        *((rf"\b{v}\b", ("rel", k)) for k, v in _RELS.items()),
        (r"\brankwise_per_user\b", ("rel", "per_user")),
        *((rf"\b{v}\b", ("col", k)) for k, v in _COLS.items()),
        *((re.escape(_marker_text(v, dialect)) + (r"(?![\d.])" if not isinstance(v, str) else ""), ("knob", k))
          for k, v in sorted(markers.items(), key=lambda kv: -len(str(kv[1])))),
    ]
    combined = re.compile("|".join(f"({p})" for p, _ in patterns))
    out, at = [], 0
    for match in combined.finditer(text):
        slot = patterns[match.lastindex - 1][1]
        out.append(text[at:match.start()])
        if slot[0] == "text":
            out.append("= ")
        out.append(slot)
        at = match.end()
    out.append(text[at:])
    for piece in out:
        if isinstance(piece, str) and re.search(r"\{[{%#]|rwk_|rwcol_|rwrel_|98765\d{4}", piece):
            raise RankwiseError(f"dbt generation: a marker or Jinja delimiter is left in {piece[:200]!r}.")
    return tuple(p for p in out if p != "")


def fill(template: list, ctx: dict) -> str:
    """The Python twin of the Jinja the template becomes (see :func:`_jinja`): for :func:`verify`."""
    parts = []
    for piece in template:
        if isinstance(piece, str):
            parts.append(piece)
        elif len(piece) == 1:
            parts.append(str(ctx[piece[0]]))
        else:
            parts.append(str(ctx[piece[0]][piece[1]]))
    return "".join(parts)


def _jinja(template: list) -> str:
    parts = []
    for piece in template:
        if isinstance(piece, str):
            parts.append(piece)
        elif len(piece) == 1:
            parts.append("{{ c." + piece[0] + " }}")
        else:
            parts.append("{{ c." + piece[0] + "[" + json.dumps(piece[1]) + "] }}")
    return "".join(parts)


# -- rendering ---------------------------------------------------------------------------------------


def _views(script) -> dict:
    """{logical name: the SELECT of its CREATE VIEW}, from the script's setup statements."""
    out = {}
    for statement in script.setup:
        if statement.startswith("CREATE "):
            head, body = statement.split(" AS\n", 1)
            name = next(k for k, v in script.names.items() if head.endswith(" " + v))
            out[name] = body
    return out


def _columns(script) -> list[str]:
    """The per-user table's projections (``p.user_id``, ...) as the dialect writes them."""
    create = script.create_per_user[1]
    head = create.split("\nFROM (", 1)[0].split("SELECT\n", 1)[1]
    return [line.strip() for line in head.split(",\n")]


def _render_parts(dialect: str, conv, metrics, score: bool, relevance: bool, ks=(_K,)):
    return _render.render(metrics, list(ks), conv, dialect, dict(_RELS), user_col=_COLS["user"],
                          item_col=_COLS["item"], rank_col=_COLS["rank"],
                          score_col=_COLS["score"] if score else None,
                          relevance_col=_COLS["relevance"] if relevance else None)


@functools.lru_cache(maxsize=None)
def dialect_templates(dialect: str) -> dict:
    """{part name: template} for one dialect (cached: :func:`files` and :func:`verify` share them; treat
    the result as read-only)."""
    parts = {}
    for ties in ("item_asc", "item_desc"):
        conv, markers = _marked_convention(ties)
        fbeta = [_F_NAME if internal_name(m) == "fbeta" else m for m in METRICS]
        for score in (False, True):
            if not score and ties != "item_asc":
                continue
            for relevance in (True, False):
                script = _render_parts(dialect, conv, fbeta, score, relevance)
                views = _views(script)
                by = "score" if score else "rank"
                rel = "rel" if relevance else "norel"
                found = {
                    f"recommendations_input_{by}": views["recommendations_input"],
                    f"recommendations_{by}" + (f"_{ties}" if score else ""): views["recommendations"],
                    f"ground_truth_input_{rel}": views["ground_truth_input"],
                    f"ground_truth_{rel}": views["ground_truth"],
                    "cutoff": views["cutoffs"],
                    f"check_{by}": script.check,
                    "per_user_body": script.per_user,
                }
                for name, text in found.items():
                    template = _template(text, dialect, markers)
                    if name in parts and parts[name] != template:
                        raise RankwiseError(f"dbt generation: part {name} of {dialect} differs between variants.")
                    parts[name] = template
        if ties == "item_asc":
            for metric in METRICS:
                name = _F_NAME if metric == "f1" else metric
                script = _render_parts(dialect, conv, [name], False, True)
                parts[f"summary_{internal_name(metric)}"] = _template(script.summary, dialect, markers)
                parts[f"columns_{internal_name(metric)}"] = [_columns(script)]
    return parts


def _quote_rule(dialect: str) -> dict:
    """How the dialect quotes a name and escapes a string literal (the renderer's sqlglot rules)."""
    from sqlglot import exp

    quoted = exp.to_identifier("a", quoted=True).sql(dialect)
    q = quoted[0]
    esc = exp.to_identifier(f"a{q}b", quoted=True).sql(dialect)[2:-2]
    string = {ch: _string_literal(ch, dialect)[1:-1] for ch in ("\\", "'")}
    return {"q": q, "q_end": quoted[-1], "q_esc": esc, "backslash": string["\\"], "quote": string["'"]}


def data() -> dict:
    """What the Jinja needs besides SQL: presets (literals of their knobs, metrics, whether SQL can express
    them), the metric names, the rules for metric names and k."""
    presets = {}
    for name, conv in PRESETS.items():
        entry = {"metrics": [m for m in METRICS if internal_name(m) in (conv.metrics or METRICS)],
                 "ties": conv.ties, "k_ones": conv.ideal == "k_ones", "unsupported": ""}
        try:
            _render.render([entry["metrics"][0]], [1], conv, "duckdb", dict(_RELS), score_col=None)
        except UnsupportedSQLError as error:
            entry["unsupported"] = str(error)
        entry["knobs"] = {d: {k: _literal_text(v, d) for k, v in conv.sql_parameters().items()} for d in DIALECTS}
        presets[name] = entry
    return {"presets": presets, "metrics": list(METRICS), "f_beta": r"f(\d+(?:\.\d+)?)", "k_max": K_MAX,
            "k_ones_max": K_ONES_MAX, "ideal_metrics": [m for m in METRICS if "ideal" in KNOBS_BY_METRIC[internal_name(m)]],
            "quote": {d: _quote_rule(d) for d in DIALECTS}, "dialects": list(DIALECTS)}


def _jinja_literal(value) -> str:
    """A Python value as a Jinja literal (JSON but for true/false/none)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_jinja_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_jinja_literal(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    return json.dumps(value)


_HEADER = ("{#- Generated by `python -m rankwise.generate.dbt` from rankwise.sqlgen.render (the shipped sql/*.sql); do not edit:\n"
           "    tests/test_dbt.py fails when this file differs from a fresh generation. -#}\n")


def files() -> dict[str, str]:
    """{path under integrations/dbt: text} of every generated file."""
    out = {}
    for dialect in DIALECTS:
        parts = dialect_templates(dialect)
        chunks = [_HEADER]
        for name, template in parts.items():
            if name.startswith("columns_"):
                body = "{{ return(" + _jinja_literal(template[0]) + ") }}"
            else:
                body = _jinja(template)
            chunks.append(f"{{% macro {dialect}__rw_{name}(c) -%}}\n{body}\n{{%- endmacro %}}\n")
        # adapter.dispatch needs a literal macro name (dbt parses it statically): one dispatched macro
        # per dialect picks the part by name
        branches = "".join(f"{{%- {'if' if i == 0 else 'elif'} name == {json.dumps(name)} -%}}"
                           f"{{{{ return(rankwise.{dialect}__rw_{name}(c)) }}}}\n"
                           for i, name in enumerate(parts))
        chunks.append(f"{{% macro {dialect}__rw_part(name, c) -%}}\n{branches}"
                      f"{{%- else -%}}{{{{ exceptions.raise_compiler_error('rankwise: no part ' ~ name) }}}}\n"
                      f"{{%- endif -%}}\n{{%- endmacro %}}\n")
        out[f"{GENERATED}/{dialect}.sql"] = "\n".join(chunks)
    out[f"{GENERATED}/rankwise_data.sql"] = (
        _HEADER + "{% macro rw_data() -%}\n{{ return(" + _jinja_literal(data()) + ") }}\n{%- endmacro %}\n")
    return out


def write(root: Path = PACKAGE) -> list[Path]:
    written = []
    folder = root / GENERATED
    folder.mkdir(parents=True, exist_ok=True)
    wanted = files()
    for stale in folder.glob("*.sql"):
        if f"{GENERATED}/{stale.name}" not in wanted:
            stale.unlink()
    for path, text in wanted.items():
        target = root / path
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
            written.append(target)
    return written


# -- verification: the filled templates are what rankwise.sql renders ----------------------------------


def context(preset: str, dialect: str, *, score: bool = False, relevance: bool = True, beta: float = 1.0,
            f_name: str = "f1", k: int = 5, cols: dict | None = None, rels: dict | None = None) -> dict:
    """The ``c`` the Jinja builds (rankwise.sql's names for relations and columns by default)."""
    rule = _quote_rule(dialect)
    cols = {**_COLS, **(cols or {})}
    rels = {**_RELS, "per_user": "rankwise_per_user", **(rels or {})}

    def col(name):
        if re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            return name
        return rule["q"] + name.replace(rule["q_end"], rule["q_esc"]) + rule["q_end"]

    def text(name):
        name = name if len(name) <= 80 else name[:77] + "..."
        return name.replace("\\", rule["backslash"]).replace("'", rule["quote"])

    return {"knob": {k: _literal_text(v, dialect) for k, v in resolve(preset).sql_parameters().items()},
            "col": {k: col(v) for k, v in cols.items()}, "rel": rels, "text": {k: text(v) for k, v in rels.items()},
            "beta": repr(float(beta)), "f_name": _string_literal(f_name, dialect), "k": k}


def verify(dialects=DIALECTS, presets=None) -> int:
    """Fill every template with each preset's values and compare with render(); returns the number of
    statements compared, raises on the first difference."""
    compared = 0
    for dialect in dialects:
        parts = dialect_templates(dialect)
        for preset in presets or PRESETS:
            conv = resolve(preset)
            names = [m for m in METRICS if internal_name(m) in (conv.metrics or METRICS)]
            for score in (False, True):
                try:
                    script = _render_parts(dialect, preset, names, score, True, ks=(5,))
                except UnsupportedSQLError:
                    continue
                ctx = context(preset, dialect)
                by = "score" if score else "rank"
                views = _views(script)
                pairs = [(f"recommendations_input_{by}", views["recommendations_input"]),
                         (f"recommendations_{by}" + (f"_{conv.ties}" if score else ""), views["recommendations"]),
                         ("ground_truth_input_rel", views["ground_truth_input"]), ("ground_truth_rel", views["ground_truth"]),
                         ("cutoff", views["cutoffs"]), (f"check_{by}", script.check), ("per_user_body", script.per_user)]
                if not score:
                    for metric in names[:3] + names[-1:]:
                        one = _render_parts(dialect, preset, [metric], False, True, ks=(5,))
                        pairs.append((f"summary_{internal_name(metric)}", one.summary))
                for name, expected in pairs:
                    got = fill(parts[name], ctx)
                    if _tokens(got) != _tokens(expected):
                        raise RankwiseError(f"dbt generation: {dialect} {name} filled for preset {preset!r} differs "
                                            "from rankwise.sqlgen.render's.", hint=_first_difference(got, expected))
                    compared += 1
    return compared


def _tokens(text: str) -> str:
    """The text with its layout dropped: sqlglot's pretty printer wraps a line by its width, and a
    marker is wider or narrower than the value it stands for."""
    text = re.sub(r"\s+", " ", text)
    return re.sub(r"\s*([(),])\s*", r"\1", text)


def _first_difference(a: str, b: str) -> str:
    a, b = _tokens(a), _tokens(b)
    i = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"at {i}: {a[max(0, i - 60):i + 60]!r} vs {b[max(0, i - 60):i + 60]!r}"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--verify" in argv:
        print(f"dbt templates: {verify()} statements equal rankwise.sqlgen.render's")
    for path in write():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
