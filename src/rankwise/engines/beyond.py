"""Beyond-accuracy metrics (issue 10): the engine-level computation core, in Polars and in shipped SQL.

Notation (per cutoff k): L_u = u's items with rank <= k, n_u = |L_u|; pop(i) = distinct train users
of i (knob ``popularity``: or train rows); U_T = distinct train users (rows: #train rows); c(i) =
exposure = users whose L_u holds i; C = the catalog (knob ``catalog``). Every knob is documented on
:class:`rankwise.Convention` and in docs/metrics.md (generated from the registry, rankwise.metrics.declarations.BEYOND).

Per user (each engine's ``beyond``: Polars plans, sql/beyond_user.sql -> user_id, k, n_items, novelty, arp, long_tail_share,
ild, serendipity):
    novelty          mean over L_u of -log_b(max(pop(i), 1) / U_T)      [cold_items, list_denominator,
                                                                        novelty_normalize, info_log_base]
    arp              mean over L_u of pop(i), cold items 0              [arp_popularity, cold_items]
    long_tail_share  share of L_u in the long tail                      [long_tail, long_tail_ratio]
    ild              sum over pairs of (1 - cos) / pairs, from |sum of unit vectors|^2:
                     sum_{i<j} cos = (|sum_i f_i/|f_i||^2 - m) / 2      [ild_denominator, ild_short]
    serendipity      mean over L_u of max(p_rank - p_pop, 0) * rel     [serendipity_popularity, catalog]
Catalog (sql/beyond_catalog.sql or its Polars twin -> metric, k, value, n_users; n_users = users with
n_u > 0): item_coverage, gini, exposure_entropy, personalization (1 - (sum c^2 - sum n_u) /
(k U_R (U_R - 1)), linear time), score_entropy (Shannon entropy in nats of the softmax of all
pooled top-k scores: ln Z - sum e^(s - M) (s - M) / Z, M = max s, Z = sum e^(s - M)).
``per_item`` -> item_id, k, exposure, popularity over C ∪ recommended items.

Inputs are canonical: ``recs`` (user_id, rank, item_id[, score]) with rank 1..n per user (a row with
a null item_id is a user with an empty list), ``truth`` (user_id, item_id, relevance) for serendipity,
and :class:`rankwise.inputs.side.SideInputs`. This module holds what every engine shares: the work
before and after ``Engine.beyond`` (:func:`run`), the rendered script for the SQL engines, the summary rows.
"""


from __future__ import annotations

import polars as pl

from rankwise.conventions import Convention
from rankwise.errors import ParameterError
from rankwise.inputs.normalize import ITEM, USER
from rankwise.inputs.side import SideInputs, with_item_type
from rankwise.metrics.beyond import CATALOG_METRICS, METRICS, NEEDS, USER_COLUMNS  # noqa: F401  (METRICS: rankwise.engines.beyond.METRICS)

_SHOW = 5  # offending rows shown in an error
NO_CATALOG = pl.DataFrame(schema={"metric": pl.String, "k": pl.Int64, "value": pl.Float64, "n_users": pl.Int64})


def ids(recs: pl.LazyFrame) -> tuple:
    """(user dtype, item dtype) of the recommendations, for the empty stand-ins of missing inputs."""
    schema = recs.collect_schema()
    return schema[USER], (pl.Int64 if schema[ITEM] == pl.Null else schema[ITEM])



_UNDEFINED = {"novelty": "no recommended item at k", "arp": "no recommended item at k",
              "long_tail_share": "no recommended item at k", "serendipity": "no recommended item at k",
              "ild": "fewer than 2 items with features at k"}


def with_scores(prep, recommendations, columns):
    """``prep`` (a :class:`rankwise.inputs.normalize.Prepared`) whose ``recs`` carry the recommendations' score
    column, for score_entropy: each canonical (user, item) row gets the score of the input row the
    input rules keep (the best-ranked occurrence: by rank when there is a rank column, else by score
    descending). A missing score column is a ParameterError naming it; null, NaN or non-numeric
    scores are typed errors with the rows."""
    import dataclasses

    from rankwise.inputs.normalize import RANK, SCORE, to_lazyframe
    from rankwise.errors import InvalidScoreError

    raw = to_lazyframe(recommendations, "recommendations", columns)
    schema = raw.collect_schema()
    c = columns
    if c.score not in schema or isinstance(schema.get(c.item), pl.List):
        raise ParameterError(
            f"Metric 'score_entropy' needs a score column {c.score!r} in long recommendations; they have "
            f"columns {list(schema)}.",
            hint="Pass the recommendations with one score per (user, item) row, naming it with score_col=, "
                 "or leave score_entropy out of metrics.")
    if not schema[c.score].is_numeric():
        raise InvalidScoreError(f"recommendations: {c.score!r} must be numeric for score_entropy, got "
                                f"{schema[c.score]}.", rows=raw.head(_SHOW).collect(),
                                hint=f"Cast it, e.g. pl.col({c.score!r}).cast(pl.Float64).")
    if prep.rec_counts is not None:  # the layout check's path: the canonical rows are the input's, in its order
        return _scores_beside(prep, raw, c)
    if SCORE in prep.recs.collect_schema():  # the general path kept them (prepare(..., scores=True))
        recs = prep.recs.lazy().with_columns(pl.col(SCORE).cast(pl.Float64))
        _refuse_bad_scores(recs, c)
        return dataclasses.replace(prep, recs=recs.select(USER, RANK, ITEM, SCORE))
    order = [pl.col(c.rank)] if c.rank in schema else [-pl.col(c.score)]
    scores = (raw.filter(pl.col(c.item).is_not_null()).sort([pl.col(c.user), *order], maintain_order=True)
              .select(pl.col(c.user).alias(USER), pl.col(c.item).alias(ITEM),
                      pl.col(c.score).cast(pl.Float64).alias(SCORE))
              .unique([USER, ITEM], keep="first", maintain_order=True).collect())
    _refuse_bad_scores(scores.lazy(), c)
    recs = prep.recs.lazy()
    key = recs.collect_schema()
    scores = scores.lazy().with_columns(pl.col(USER).cast(key[USER]), pl.col(ITEM).cast(key[ITEM]))
    recs = recs.join(scores, on=[USER, ITEM], how="left", maintain_order="left").select(USER, RANK, ITEM, SCORE)
    return dataclasses.replace(prep, recs=recs)  # the accuracy engines ignore the extra column


def _refuse_bad_scores(rows: pl.LazyFrame, c) -> None:
    """An InvalidScoreError showing the rows of ``rows`` (user_id, item_id, score as Float64) whose item is present
    and whose score is null, NaN or infinite."""
    from rankwise.errors import InvalidScoreError
    from rankwise.inputs.normalize import SCORE

    score = pl.col(SCORE)
    bad = rows.filter(pl.col(ITEM).is_not_null() & (score.is_null() | ~score.is_finite())).select(
        USER, ITEM, SCORE).collect()
    if bad.height:
        raise InvalidScoreError(f"recommendations: {bad.height} values of {c.score!r} are null, NaN or infinite "
                                "(score_entropy pools the scores).", rows=bad.head(_SHOW),
                                hint="Drop or fill those rows, or leave score_entropy out of metrics.")


def _scores_beside(prep, raw: pl.LazyFrame, c):
    """``prep`` with the input's score column set beside the canonical rows, when those are the input's rows
    in its order (ranks already 1..n, no item repeated: no sort, no join); a null item's row gets no score."""
    import dataclasses

    from rankwise.inputs.normalize import RANK, SCORE

    score = pl.col(c.score).cast(pl.Float64)
    _refuse_bad_scores(raw.select(pl.col(c.user).alias(USER), pl.col(c.item).alias(ITEM), score.alias(SCORE)), c)
    scores = raw.select(pl.when(pl.col(c.item).is_not_null()).then(score).alias(SCORE))
    recs = pl.concat([prep.recs.lazy().select(USER, RANK, ITEM), scores], how="horizontal")
    return dataclasses.replace(prep, recs=recs)  # the accuracy engines ignore the extra column


def check_inputs(names, side: SideInputs, conv: Convention | None, has_truth: bool) -> None:
    """A metric whose input was not given is a ParameterError naming the argument (``conv`` None: only
    the inputs a metric needs under every convention; the catalog's source depends on it)."""
    given = {"train": side.train is not None and side.train.height > 0, "items": side.items is not None,
             "item_features": side.has_features, "ground_truth": has_truth}
    for name in names:
        needs = list(NEEDS.get(name, ()))
        if name in ("item_coverage", "gini") and conv is not None and conv.catalog != "recommended" and not (
                given["train"] or (conv.catalog == "items" and given["items"])):
            needs.append("items or train" if conv.catalog == "items" else "train")  # the catalog
        missing = [n.split(" or ") for n in needs if " or " in n or not given[n]]
        if missing:
            flags = {"ground_truth": "the TRUTH argument"}  # (a train of no rows counts as not given)
            raise ParameterError(
                f"Metric {name!r} needs {' and '.join(' or '.join(m) for m in missing)}, which "
                f"{'was' if len(missing) == 1 else 'were'} not given{' (or empty)' if ['train'] in missing else ''}.",
                hint=f"Pass evaluate(..., {', '.join(' or '.join(f'{n}=...' for n in m) for m in missing)}) (CLI: "
                     f"{', '.join(' or '.join(flags.get(n, '--' + n.replace('_', '-')) for n in m) for m in missing)}).")


def run(recs: pl.LazyFrame, truth, names, side: SideInputs, ks, conv: Convention, engine,
        source: str | None = None, memory_limit: int | None = None, evaluated: pl.Series | None = None):
    """The beyond-accuracy values of one run: (user rows (user_id, k, n_items, *user metrics), catalog
    rows (metric, k, value, n_users), per_item (item_id, k, exposure, popularity)), computed by
    ``engine.beyond`` (the protocol: Polars plans, the shipped SQL in DuckDB, the rendered script in
    PostgreSQL or Spark). ``source``: the recommendations file an engine that ``reads_files`` scans
    itself; ``memory_limit`` (bytes) caps the engine's memory as in its accuracy run. ``evaluated``: the
    user rows are those users' (the accuracy users of the convention), one without recommendations
    being a user with an empty list; None: the recommendations' users. The catalog rows read every list."""
    truth = truth if "serendipity" in names else None
    recs, truth = _text_items(recs), None if truth is None else _text_items(truth)
    # an engine that reads files scans the file itself, but not for scores (joined in Python by with_scores)
    if "score" in recs.collect_schema() or not engine.capabilities.reads_files:
        source = None
    if _side_ids_overflow(side, recs.collect_schema()[ITEM]):  # e.g. Int16 lists, a train item past 32767
        recs, source = recs.lazy().with_columns(pl.col(ITEM).cast(pl.Int64)), None
        truth = None if truth is None else truth.lazy().with_columns(pl.col(ITEM).cast(pl.Int64))
    empty = None if evaluated is None else _empty_lists(recs, evaluated)
    if empty is not None and empty.height and source is None:  # (a file's scan gets them in the engine)
        recs = pl.concat([recs.lazy(), empty.lazy()], how="diagonal")
    side = with_item_type(side, recs.collect_schema()[ITEM])
    want_catalog = bool(set(names) & set(CATALOG_METRICS))  # else no catalog query (its rows would be dropped)
    users, catalog, items = engine.beyond(recs, truth, names, side, ks, conv, source=source,
                                          empty=empty if source is not None else None,
                                          want_catalog=want_catalog, memory_limit=memory_limit)
    wanted = [n for n in names if n in USER_COLUMNS]
    rows = users.select(USER, pl.col("k").cast(pl.Int64),
                        *[pl.col(n).cast(pl.Float64).fill_null(float("nan")) for n in wanted])
    if evaluated is not None:  # those users only (the others' lists still count in the catalog rows)
        rows = rows.filter(pl.col(USER).is_in(evaluated.cast(rows.schema[USER]).implode()))
    catalog = catalog.filter(pl.col("metric").is_in([n for n in names if n not in USER_COLUMNS]))
    return rows, catalog, items


def _side_ids_overflow(side: SideInputs, item_dtype) -> bool:
    """Whether a side input holds integer item ids outside the recommendations' narrower integer type
    (items never recommended, but they count in popularity and the catalog): then the recommendations'
    ids are widened to Int64, as the accuracy path widens them to the ground truth's."""
    if not item_dtype.is_integer() or item_dtype in (pl.Int64, pl.UInt64):
        return False
    frames = [side.train, side.items, side.features] + ([side.embeddings[0].to_frame(ITEM)] if side.embeddings else [])
    return any(f is not None and f.schema[ITEM].is_integer() and
               f[ITEM].cast(item_dtype, strict=False).null_count() > f[ITEM].null_count() for f in frames)


def _empty_lists(recs: pl.LazyFrame, users: pl.Series) -> pl.DataFrame:
    """An empty-list row (user_id, rank, item_id: null) for each of ``users`` without recommendations."""
    schema = recs.collect_schema()
    missing = users.cast(schema[USER]).unique().to_frame(USER).lazy().join(
        recs.select(USER).unique(), on=USER, how="anti")
    return missing.select(USER, pl.lit(None, schema["rank"]).alias("rank"),
                          pl.lit(None, schema[ITEM]).alias(ITEM)).collect()


def _text_items(frame):
    """Categorical or Enum item ids as String, the type of the side inputs' text ids: Polars joins a
    categorical column with no other type (DuckDB compares them as text)."""
    if isinstance(frame.collect_schema()[ITEM], (pl.Categorical, pl.Enum)):
        return frame.with_columns(pl.col(ITEM).cast(pl.String))
    return frame


def script_inputs(recs: pl.LazyFrame, truth, side: SideInputs, prefix: str):
    """({table name: canonical frame}, tables argument of render_beyond, (user, item) dtypes) for
    running the rendered script over the canonical inputs (train given as an empty frame if missing)."""
    recs = recs.lazy().collect()
    ids_ = ids(recs.lazy())
    frames = {"recommendations": recs.select(USER, "rank", ITEM, *(["score"] if "score" in recs.columns else [])),
              "train": side.train if side.train is not None else pl.DataFrame(schema={USER: ids_[0], ITEM: ids_[1]}),
              "items": side.items, "item_features": side.long_features,
              "ground_truth": None if truth is None else truth.lazy().collect().select(USER, ITEM, "relevance")}
    tables = {name: f"{prefix}in_{name}" for name, frame in frames.items() if frame is not None}
    return {tables[name]: frame for name, frame in frames.items() if frame is not None}, tables, ids_


def script(tables: dict, names, ks, conv: Convention, dialect: str, prefix: str):
    """The script of the metrics ``names`` over the canonical frames (ranks 1..n; for score_entropy
    their joined score column too, see :func:`with_scores`): the input rules have run, min_score among
    them (the script's SQL gap), so the script renders without it."""
    from rankwise.sqlgen.beyond import render_beyond

    return render_beyond(list(names), list(ks), conv.replace(min_score=None), dialect, tables, user_col=USER,
                         item_col=ITEM, prefix=prefix, keep_score="score" if "score_entropy" in names else None)


def typed(users: pl.DataFrame, catalog: pl.DataFrame, items: pl.DataFrame, ids: tuple):
    users = users.with_columns(pl.col(USER).cast(ids[0]), pl.col("k", "n_items").cast(pl.Int64))
    catalog = catalog.with_columns(pl.col("k", "n_users").cast(pl.Int64), pl.col("value").cast(pl.Float64))
    items = items.with_columns(pl.col(ITEM).cast(ids[1]), pl.col("k", "exposure", "popularity").cast(pl.Int64))
    return users.sort("k", USER), catalog.sort("metric", "k"), items.sort("k", ITEM)


def summary_rows(users: pl.DataFrame, catalog: pl.DataFrame, names) -> pl.DataFrame:
    """Engine-style raw summary rows (metric, k, value, n_users, sd): user metrics are means over the
    users with a defined value; catalog metrics are one value per k (sd NaN: no t interval)."""
    parts = [users.group_by("k").agg(
        pl.lit(n).alias("metric"), pl.col(n).filter(~pl.col(n).is_nan()).mean().alias("value"),
        (~pl.col(n).is_nan()).sum().cast(pl.Int64).alias("n_users"),
        pl.col(n).filter(~pl.col(n).is_nan()).std().alias("sd")) for n in names if n in USER_COLUMNS]
    parts.append(catalog.select("metric", pl.col("k").cast(pl.Int64), pl.col("value").cast(pl.Float64),
                                pl.col("n_users").cast(pl.Int64), pl.lit(None, pl.Float64).alias("sd")))
    return pl.concat([p.select("metric", "k", "value", "n_users", "sd") for p in parts])


def excluded_rows(users: pl.DataFrame, names) -> list[tuple[str, str, int]]:
    """(code, reason, n_users) for each user metric: the users whose value is undefined at some k (each
    is left out of that k's mean; at the largest k alone, ild's short lists at a small k went uncounted)."""
    return [(f"undefined_{n}", f"{n} only: {_UNDEFINED[n]}", users.filter(pl.col(n).is_nan())[USER].n_unique())
            for n in names if n in USER_COLUMNS]
