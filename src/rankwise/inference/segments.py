"""Segments: the summary per group of users (``evaluate(..., segments=...)``).

``segments=`` maps each user to one segment, in one of three forms:

- a table ``(user, segment)`` (any container evaluate reads); a table of the user column and one
  other column (``(user, country)``) groups by that column;
- ``(table, "country")``: a table and the name of its segment column (it may hold other columns);
- ``"country"``: the name of a column of the ground truth (one value per user).

Every mean of the summary is then also taken per segment, with the same t interval (within the
metric's range); a user in no segment is counted in ``excluded`` (code ``no_segment``). The
segments frame keeps its documented ``segment`` column (the values) and names the grouping in
``segment_by`` ("country"; "segment" for a table whose column is named so). Computed in Polars
over the per-user rows (one group-by), whatever the engine.
"""

from __future__ import annotations

import polars as pl

from rankwise.inputs.normalize import id_kind, to_lazyframe
from rankwise.errors import (DtypeMismatchError, DuplicateUserError, MissingColumnError, NullValueError, ParameterError,
                     did_you_mean)

SEGMENT = "segment"


def read(segments, ground_truth, user_col: str) -> tuple[pl.DataFrame, str]:
    """((user_col, segment) with one row per user, the name of the grouping: the segment column's
    name); typed errors for nulls and users in two segments."""
    if user_col == SEGMENT:
        raise ParameterError(f"user_col={SEGMENT!r} collides with the segment column of segments=.",
                             hint="Rename the user column of the inputs (e.g. to 'user') and pass user_col='user'.")
    column = None
    if isinstance(segments, tuple):
        if len(segments) != 2 or not isinstance(segments[1], str):
            raise ParameterError(f"segments= as a tuple is (table, column name), got a tuple of {len(segments)} "
                                 f"({', '.join(type(v).__name__ for v in segments)}).",
                                 hint="e.g. segments=(users, 'country'): the table and its segment column.")
        segments, column = segments
    if column is None and isinstance(segments, str) and ground_truth is not None \
            and not segments.endswith((".parquet", ".csv")):
        frame = to_lazyframe(ground_truth, "ground_truth").collect()
        if segments not in frame.columns:
            raise MissingColumnError(f"segments={segments!r} is not a column of the ground truth (columns: "
                                     f"{', '.join(frame.columns)}).",
                                     hint=did_you_mean(segments, frame.columns) + "Name a column of the ground "
                                          "truth, or pass a (user, segment) table.")
        name, frame = segments, frame.select(user_col, pl.col(segments).alias(SEGMENT)).unique()
    else:
        frame = to_lazyframe(segments, "segments").collect()
        others = [c for c in frame.columns if c != user_col]
        name = column or (SEGMENT if SEGMENT in others or len(others) != 1 else others[0])
        missing = [c for c in (user_col, name) if c not in frame.columns]
        if missing:
            example = others[0] if others and column is None else "country"
            raise MissingColumnError(
                f"segments: no column {', '.join(map(repr, missing))} (columns: {', '.join(frame.columns)}).",
                hint=did_you_mean(missing[0], frame.columns) + f"Pass a table ({user_col}, segment) with one row "
                     f"per user, or the table and its segment column: segments=(table, {example!r}).")
        frame = frame.select(user_col, pl.col(name).alias(SEGMENT)).unique()
        if str(segments).lower().endswith(".csv"):  # a CSV's ids are read as text: integers when all are
            as_int = frame[user_col].cast(pl.Int64, strict=False)
            if as_int.null_count() == frame[user_col].null_count():
                frame = frame.with_columns(as_int)
    nulls = frame.filter(pl.col(SEGMENT).is_null() | pl.col(user_col).is_null())
    if nulls.height:
        raise NullValueError(f"segments: {nulls.height} row(s) with a null user or segment.", rows=nulls.head(5),
                             hint="Drop those rows: a user in no segment is counted in excluded.")
    twice = frame.filter(pl.col(user_col).is_duplicated()).sort(user_col)
    if twice.height:
        raise DuplicateUserError(f"segments: {twice[user_col].n_unique()} user(s) are in more than one segment.",
                                 rows=twice.head(5), hint="Give each user one segment.")
    return frame.with_columns(pl.col(SEGMENT).cast(pl.String)), name


def aligned(segments: pl.DataFrame, user_dtype, user_col: str) -> pl.DataFrame:
    """The segment table's users in the evaluation's user type (ids of one kind, see
    :func:`rankwise.inputs.normalize.id_kind`; integers against text or floats are a DtypeMismatchError, never a
    silent match of "1" to 1). An integer id outside the evaluation's type cannot be an evaluated user:
    its row is dropped, like any segment user that was not evaluated."""
    have = segments.schema[user_col]
    if id_kind(have) != id_kind(user_dtype):
        raise DtypeMismatchError(
            f"segments: the user ids are {have}, but {user_dtype} in the evaluation.",
            rows=segments.head(5), hint="Cast the segment table's user column to the evaluation's user type first.")
    return segments.with_columns(pl.col(user_col).cast(user_dtype, strict=False)).drop_nulls(user_col)


def summary(long: pl.DataFrame, segments: pl.DataFrame, user_col: str, names, confidence: float,
            segment_by: str = SEGMENT) -> pl.DataFrame:
    """((run,) segment_by, segment, metric, k, value, n_users, ci_low, ci_high): each mean per segment,
    ``segment_by`` the grouping's name on every row."""
    from rankwise.inference.stats import summary_stats_exprs, t_interval

    keys = [c for c in ("run",) if c in long.columns]
    rows = long.join(segments, on=user_col, how="inner")  # segments: aligned() to the users' type
    parts = []
    for name in names:
        mean, sd, n = summary_stats_exprs(name)
        part = rows.group_by(*keys, SEGMENT, "k").agg(mean, sd, n)
        low, high = t_interval(pl.col("mean"), pl.col("sd"), pl.col("n"), confidence)
        parts.append(part.select(*keys, pl.lit(segment_by).alias("segment_by"), SEGMENT, pl.lit(name).alias("metric"),
                                 "k", pl.col("mean").alias("value"), pl.col("n").alias("n_users"),
                                 low.alias("ci_low"), high.alias("ci_high")))
    if not parts:
        return pl.DataFrame()
    # runs and metrics in the order asked for (as in the summary), segments and k ascending
    order = {"metric": {name: i for i, name in enumerate(names)}}
    if keys:
        order["run"] = {run: i for i, run in enumerate(long["run"].unique(maintain_order=True))}
    by = [pl.col(c).replace_strict(order[c], return_dtype=pl.Int64) if c in order else pl.col(c)
          for c in (*keys, SEGMENT, "metric", "k")]
    return pl.concat(parts).sort(by)


def unsegmented(long: pl.DataFrame, segments: pl.DataFrame, user_col: str) -> int:
    """Evaluated users (of one run) that are in no segment."""
    users = long.select(user_col).unique()
    return users.join(segments, on=user_col,
                      how="anti").height
