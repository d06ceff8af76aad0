{#- rankwise's dbt macros. The SQL itself is in macros/generated/ (one file per dialect, generated from
    rankwise.sqlgen.render: the shipped sql/*.sql, as `rankwise.sql` renders it); this file only reads the
    options, checks them as rankwise.sql does, and puts the generated parts together:

      per_user(recommendations, ground_truth, ...)  one row per (user, k): user_id, k, n_recs, n_rel and a
                                                    column per metric (NULL = undefined); the input checks
                                                    of sql/checks.sql run first, and a failed check fails
                                                    the model with a message that starts with the problem
      summary(per_user, ...)                        metric, k, value, n_users (as Result.summary)

    Options (a macro argument, else vars: {rankwise: {...}}, else the default): metrics (default: every
    accuracy metric of the convention), k (default 10), convention (a preset name, default 'default'),
    user_col ('user'), item_col ('item'), rank_col ('rank'), score_col (none; ranks from scores when
    given), relevance_col ('relevance'; null: every label has relevance 1). -#}

{% macro per_user(recommendations, ground_truth, metrics=none, k=none, convention=none, user_col=none,
                  item_col=none, rank_col=none, score_col=none, relevance_col=none) -%}
{%- set c = rankwise.rw_context(recommendations, ground_truth, none, metrics, k, convention, user_col, item_col,
                                 rank_col, score_col, relevance_col) -%}
WITH rankwise_recommendations_input AS (
{{ rankwise.rw_part('recommendations_input_' ~ c.by, c) }}
), rankwise_ground_truth_input AS (
{{ rankwise.rw_part('ground_truth_input_' ~ c.labels, c) }}
), rankwise_recommendations AS (
{{ rankwise.rw_part(c.ranking, c) }}
), rankwise_ground_truth AS (
{{ rankwise.rw_part('ground_truth_' ~ c.labels, c) }}
), rankwise_cutoffs AS (
{{ rankwise.rw_cutoffs(c) }}
), rankwise_failed_checks AS (
{{ rankwise.rw_part('check_' ~ c.by, c) }}
)
SELECT
  {{ c.columns | join(',\n  ') }}
FROM (
{{ rankwise.rw_part('per_user_body', c) }}
) AS p
{# the input checks: counting failed_check evaluates it on every failed rule, and it raises #}
WHERE (SELECT COUNT(f.failed_check) FROM rankwise_failed_checks AS f) = 0
{%- endmacro %}


{% macro summary(per_user, metrics=none, k=none, convention=none) -%}
{%- set c = rankwise.rw_context(none, none, per_user, metrics, k, convention) -%}
WITH rankwise_cutoffs AS (
{{ rankwise.rw_cutoffs(c) }}
)
SELECT s.metric, s.k, s.value, s.n_users
FROM (
{%- for m in c.metrics %}
  {% if not loop.first %}UNION ALL {% endif -%}
  SELECT s{{ loop.index }}.metric, s{{ loop.index }}.k, s{{ loop.index }}.value, s{{ loop.index }}.n_users FROM (
{{ rankwise.rw_part('summary_' ~ m, c) }}
  ) AS s{{ loop.index }}
{%- endfor %}
) AS s
{%- endmacro %}


{% macro rw_part(name, c) -%}
{{ return(adapter.dispatch('rw_part', 'rankwise')(name, c)) }}
{%- endmacro %}


{% macro rw_cutoffs(c) -%}
{%- for k in c.ks -%}
{%- do c.update({'k': k}) -%}
{% if not loop.first %}
UNION ALL
{% endif %}{{ rankwise.rw_part('cutoff', c) }}
{%- endfor -%}
{%- endmacro %}


{% macro rw_fail(problem, hint) -%}
{{ exceptions.raise_compiler_error("rankwise: " ~ problem ~ "\nHint: " ~ hint) }}
{%- endmacro %}


{% macro rw_context(recommendations, ground_truth, per_user, metrics, k, convention, user_col=none, item_col=none,
                    rank_col=none, score_col=none, relevance_col=none) -%}
{%- set d = rankwise.rw_data() -%}
{%- set cfg = var('rankwise', {}) -%}
{%- if cfg is not mapping -%}
  {{ rankwise.rw_fail("vars: rankwise must be a mapping, got " ~ cfg ~ ".",
                      "vars: {rankwise: {k: [5, 10], metrics: [ndcg, map], convention: default}}") }}
{%- endif -%}
{%- set known = ['k', 'metrics', 'convention', 'user_col', 'item_col', 'rank_col', 'score_col', 'relevance_col',
                 'per_user_model', 'summary'] -%}
{%- for key in cfg if key not in known -%}
  {{ rankwise.rw_fail("vars: rankwise has an unknown key '" ~ key ~ "'.", "Keys: " ~ known | join(', ') ~ ".") }}
{%- endfor -%}
{%- set dialect = target.type -%}
{%- if dialect not in d.dialects -%}
  {{ rankwise.rw_fail("no SQL for the dbt adapter '" ~ dialect ~ "'.",
                      "rankwise renders for the adapters " ~ d.dialects | join(', ') ~ "; for another engine, "
                      ~ "`rankwise sql --dialect ...` the closest dialect and adapt the script.") }}
{%- endif -%}

{#- the convention: a preset -#}
{%- set name = convention if convention is not none else cfg.get('convention', 'default') -%}
{%- if name not in d.presets -%}
  {{ rankwise.rw_fail("unknown convention " ~ name ~ ".", "A preset name: " ~ d.presets.keys() | sort | join(', ') ~ ".") }}
{%- endif -%}
{%- set preset = d.presets[name] -%}
{%- if preset.unsupported -%}
  {{ rankwise.rw_fail("convention " ~ name ~ " cannot be rendered in SQL: " ~ preset.unsupported, "Use evaluate() in Python for it.") }}
{%- endif -%}

{#- k: a positive integer or a list of them, sorted, each once -#}
{%- set k = k if k is not none else cfg.get('k', 10) -%}
{%- set ks_in = [k] if k is integer else k -%}
{%- if ks_in is string or ks_in is mapping or ks_in is not iterable or ks_in | length == 0 -%}
  {{ rankwise.rw_fail("k must be a positive integer up to " ~ d.k_max ~ " or a list of them, got " ~ k ~ ".", "For example k: 10 or k: [1, 5, 10].") }}
{%- endif -%}
{%- set ks = [] -%}
{%- for v in ks_in -%}
  {%- if v is not integer or v < 1 or v > d.k_max -%}
    {{ rankwise.rw_fail("k must be a positive integer up to " ~ d.k_max ~ " or a list of them, got " ~ k ~ ".", "For example k: 10 or k: [1, 5, 10].") }}
  {%- endif -%}
  {%- if v not in ks %}{% do ks.append(v) %}{% endif -%}
{%- endfor -%}
{%- set ks = ks | sort -%}

{#- metrics: names of the preset's accuracy metrics; f<beta> is F-beta (one per evaluation) -#}
{%- set m = metrics if metrics is not none else cfg.get('metrics', none) -%}
{%- set m = preset.metrics if m is none else ([m] if m is string else m) -%}
{%- if m is mapping or m is not iterable or m | length == 0 -%}
  {{ rankwise.rw_fail("metrics must be a list of metric names, got " ~ m ~ ".", "For example metrics: [ndcg, map]; leave it out for every metric of the convention.") }}
{%- endif -%}
{%- set chosen = [] -%}
{%- set internal = [] -%}
{%- set f = {'beta': 1.0, 'name': 'f1', 'seen': []} -%}
{%- for raw in m -%}
  {%- if raw is not string -%}
    {{ rankwise.rw_fail("metric names are strings, got " ~ raw ~ ".", "For example metrics: [ndcg, map].") }}
  {%- endif -%}
  {%- set one = raw | trim | lower -%}
  {%- set beta = modules.re.fullmatch(d.f_beta, one) -%}
  {%- if beta -%}
    {%- if beta.group(1) | float <= 0 -%}
      {{ rankwise.rw_fail("F-beta needs beta > 0, got " ~ one ~ ".", "For example f1, f2 or f0.5.") }}
    {%- endif -%}
    {%- if f.seen and one not in f.seen -%}
      {{ rankwise.rw_fail("one F-beta per evaluation, got " ~ (f.seen + [one]) | join(', ') ~ ".", "One model per beta.") }}
    {%- endif -%}
    {%- do f.update({'beta': beta.group(1) | float, 'name': one, 'seen': f.seen + [one]}) -%}
    {%- set key = 'fbeta' -%}
    {%- set public = 'f1' -%}
  {%- elif one in d.metrics -%}
    {%- set key = one -%}
    {%- set public = one -%}
  {%- else -%}
    {{ rankwise.rw_fail("unknown metric " ~ one ~ ".", "Known metrics: " ~ d.metrics | join(', ') ~ " (and f<beta> such as f2 or f0.5); cutoffs go in k.") }}
  {%- endif -%}
  {%- if public not in preset.metrics -%}
    {{ rankwise.rw_fail("metric " ~ one ~ " is not defined by convention " ~ name ~ ".", "Its metrics: " ~ preset.metrics | join(', ') ~ "; or choose another convention.") }}
  {%- endif -%}
  {%- if key not in internal %}{% do internal.append(key) %}{% do chosen.append(one) %}{% endif -%}
{%- endfor -%}
{%- if preset.k_ones and ks[-1] > d.k_ones_max -%}
  {%- for one in internal if one in d.ideal_metrics -%}
    {{ rankwise.rw_fail("ideal='k_ones' supports k <= " ~ d.k_ones_max ~ " for ndcg, got k=" ~ ks[-1] ~ ".", "Use a smaller k, or another convention.") }}
  {%- endfor -%}
{%- endif -%}

{#- columns: the renderer's rule (a plain lower-case word unquoted, any other name quoted as the dialect quotes) -#}
{%- set q = d.quote[dialect] -%}
{%- set cols = {} -%}
{%- set roles = [('user', user_col, 'user'), ('item', item_col, 'item'), ('rank', rank_col, 'rank'),
                 ('score', score_col, none), ('relevance', relevance_col, 'relevance')] -%}
{%- for role, given, default in roles -%}
  {%- set value = given if given is not none else cfg.get(role ~ '_col', default) -%}
  {%- set value = none if value is false else value -%}
  {%- if value is not none and (value is not string or value | length == 0) -%}
    {{ rankwise.rw_fail(role ~ "_col must be a column name, got " ~ value ~ ".", "For example " ~ role ~ "_col: " ~ (default or role) ~ ".") }}
  {%- endif -%}
  {%- do cols.update({role: value}) -%}
{%- endfor -%}
{%- if recommendations is not none -%}
  {%- for role in ['user', 'item'] if cols[role] is none -%}
    {{ rankwise.rw_fail(role ~ "_col is required.", "Name the column, e.g. " ~ role ~ "_col: " ~ role ~ ".") }}
  {%- endfor -%}
  {%- if cols.score is none and cols.rank is none -%}
    {{ rankwise.rw_fail("rank_col and score_col are both null.", "Name the column ranks come from.") }}
  {%- endif -%}
  {%- set in_play = [] -%}
  {%- for role in ['user', 'item', 'rank', 'score', 'relevance'] -%}
    {%- if cols[role] is not none and not (role == 'rank' and cols.score is not none) -%}
      {%- for other in in_play if other[1] == cols[role] -%}
        {{ rankwise.rw_fail(other[0] ~ "_col and " ~ role ~ "_col are both '" ~ cols[role] ~ "'.", "Each role is its own column.") }}
      {%- endfor -%}
      {%- do in_play.append((role, cols[role])) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if cols.score is not none and preset.ties not in ['item_asc', 'item_desc'] -%}
    {{ rankwise.rw_fail("convention ties='" ~ preset.ties ~ "' cannot be expressed in SQL: a table has no row order.", "Rank by a rank column (rank_col).") }}
  {%- endif -%}
{%- endif -%}
{%- set quoted = {} -%}
{%- for role, value in cols.items() -%}
  {%- if value is none -%}
    {%- do quoted.update({role: 'NULL'}) -%}
  {%- elif modules.re.fullmatch('[a-z_][a-z0-9_]*', value) -%}
    {%- do quoted.update({role: value}) -%}
  {%- else -%}
    {%- do quoted.update({role: q.q ~ value | replace(q.q_end, q.q_esc) ~ q.q_end}) -%}
  {%- endif -%}
{%- endfor -%}

{#- relations: as dbt writes them; in the check's message, as text in a string literal -#}
{%- set rels = {'recommendations': recommendations | string, 'ground_truth': ground_truth | string,
                'per_user': per_user | string} -%}
{%- set texts = {} -%}
{%- for key, rel in rels.items() -%}
  {%- set short = rel if rel | length <= 80 else rel[:77] ~ '...' -%}
  {%- do texts.update({key: short | replace('\\', q.backslash) | replace("'", q.quote)}) -%}
{%- endfor -%}

{#- the per-user columns the chosen metrics need (rankwise.sql keeps the same), in the metrics' order -#}
{%- set columns = [] -%}
{%- for public in d.metrics if (public if public != 'f1' else 'fbeta') in internal -%}
  {%- for column in rankwise.rw_part('columns_' ~ (public if public != 'f1' else 'fbeta'), {}) if column not in columns -%}
    {%- do columns.append(column) -%}
  {%- endfor -%}
{%- endfor -%}

{{ return({
  'by': 'score' if cols.score is not none else 'rank',
  'labels': 'rel' if cols.relevance is not none else 'norel',
  'ranking': 'recommendations_score_' ~ preset.ties if cols.score is not none else 'recommendations_rank',
  'ks': ks, 'k': ks[0], 'metrics': internal, 'names': chosen, 'columns': columns,
  'knob': preset.knobs[dialect], 'col': quoted, 'rel': rels, 'text': texts,
  'beta': f.beta | string, 'f_name': "'" ~ f.name ~ "'",
}) }}
{%- endmacro %}
