"""``Result``: what evaluate() returns (per-user, summary and excluded frames, with the convention and
the request), and what can be done with it: compare and bootstrap runs, a table, a report, plots, writes
and MLflow logging. Built by ``rankwise.api``; every method reads the frames it holds."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import polars as pl

from rankwise.engines import shape as _shape

from rankwise.inputs.normalize import Prepared
from rankwise.conventions import Convention
from rankwise.errors import LeftOutWarning, ParameterError, did_you_mean, warn
from rankwise.metrics.declarations import MetricRequest, internal_name, value_range


@dataclass(frozen=True, eq=False)
class Result:
    """What :func:`evaluate` returns.

    per_user: one row per evaluated user; the user column under its input name, then one Float64
        column per metric and k ("ndcg@10"), NaN where the convention leaves the value undefined.
    long: the same values one row per (user, k): user, k, n_recs, n_rel, then one column per metric.
    summary: metric, k, value (mean over users with a defined value), n_users (users in that mean),
        ci_low, ci_high (the t interval of the mean at ``confidence``; NaN when n_users < 2).
    excluded: code, reason, n_users: every user that some mean leaves out, and why; ``code`` is a
        stable key (outside_users, unjudged, no_labels, no_predictions, zero_ideal; undefined_<metric>
        for a beyond-accuracy metric undefined at some k; no_segment with ``segments=``), ``reason`` text.
    convention: the Convention used.
    With several runs (``evaluate({"a": recs_a, "b": recs_b}, ...)``) every frame starts with ``run``.
    """

    long: Any  # pl.DataFrame; with collect=False a Spark DataFrame (user_id, k, ...) or a PostgresTable
    summary: pl.DataFrame
    excluded: pl.DataFrame
    convention: Convention
    request: MetricRequest
    user_col: str = "user"
    prepared: dict[str | None, Prepared] = field(default_factory=dict, repr=False)  # for write()'s fingerprint
    confidence: float = 0.95  # the level of summary's intervals
    # beyond-accuracy inputs, as the engine gave them: a frame, or a plan that per_item collects when first read
    item_rows: pl.DataFrame | pl.LazyFrame | None = field(default=None, repr=False)
    segments: pl.DataFrame | None = None  # segments=: (run,) segment_by, segment, metric, k, value, n_users, ci_low,
    # ci_high; segment_by names the grouping ("country" for segments=(table, "country") or ="country")
    segment_of: pl.DataFrame | None = field(default=None, repr=False)  # (user, segment)
    run_name: str = field(default="run", repr=False)  # one run's name in write(): the recommendations file's stem
    engine: Any = field(default=None, repr=False)  # the engine that holds ``long`` when it was not collected
    # evaluate(measures=...): the names asked, parsed (rankwise.metrics.names.Measure), in the order asked
    measures: tuple = field(default=(), repr=False)

    def __post_init__(self):
        # excluded lists the reasons that leave someone out: a count of 0 is no reason (same columns when empty)
        object.__setattr__(self, "excluded", self.excluded.filter(pl.col("n_users") > 0))

    @cached_property
    def per_item(self) -> pl.DataFrame | None:
        """With beyond-accuracy metrics: (run,) item, k, exposure, popularity over the catalog and the
        recommended items (computed on first read on the Polars engine: the popularity column by the
        ``popularity`` knob may be a distinct count no requested metric needed). None otherwise."""
        rows = self.item_rows
        return rows.collect() if isinstance(rows, pl.LazyFrame) else rows

    @cached_property
    def per_user(self):
        if isinstance(self.long, pl.DataFrame):
            return _shape.wide(self.long, self.user_col, self.request.ks)
        # left in the engine: a Spark frame pivoted there; a database table as the engine wrote it
        return self.engine.kept_wide(self.long, self.request, self.user_col) if self.engine else self.long

    @cached_property
    def per_measure(self) -> pl.DataFrame:
        """With ``evaluate(measures=...)``: (run,) user, then one column per measure named as asked
        ("P_10", "nDCG@10"), the per-user value (per query, as trec_eval -q prints it)."""
        from rankwise.metrics import names

        self._need_measures("per_measure")
        return names.per_measure(self.per_user, self.measures, (["run"] if self.runs else []) + [self.user_col])

    @cached_property
    def measure_summary(self) -> pl.DataFrame:
        """With ``evaluate(measures=...)``: (run,) measure (as asked), value, n_users, metric, k (null: the
        whole list); the value is the measure's aggregate as its library defines it: the summary's mean,
        or a sum (trec_eval's counts) or a geometric mean (gm_map)."""
        from rankwise.metrics import names

        self._need_measures("measure_summary")
        return names.measure_summary(self.per_user, self.summary, self.measures, self.runs)

    def _need_measures(self, what: str) -> None:
        if not self.measures:
            raise ParameterError(f"Result.{what} holds the measures asked by name, and none were.",
                                 hint="Evaluate with measures=['P_10', 'ndcg', ...], or read per_user / summary.")
        if not isinstance(self.long, pl.DataFrame):
            raise ParameterError(f"Result.{what} needs the per-user rows collected.", hint="Evaluate with collect=True.")

    @cached_property
    def _fingerprints(self) -> dict:
        """{run (None for one run): SHA-256 of its canonical inputs}, computed once for the report's run
        card and write() (a sort of every input row: ~15 s per run at 1M users x 100)."""
        from rankwise.io.write import fingerprint

        return {name: fingerprint(prep) for name, prep in self.prepared.items()}

    @property
    def runs(self) -> tuple[str, ...]:
        """The run names, in the order given (empty for a single run)."""
        return tuple(name for name in self.prepared if name is not None)

    def __repr__(self) -> str:
        return f"rankwise.Result\n{self.summary}\nexcluded:\n{self.excluded}"

    def write(self, target, *, mode: str = "append", prefix: str = "rankwise_", **options) -> dict:
        """Write the runs, per-user rows, summary, excluded (and per_item, segments) with run metadata
        (``rankwise.io.write``)."""
        from rankwise.io.write import write

        return write(self, target, mode=mode, prefix=prefix, **options)

    def log_mlflow(self, run_id: str | None = None, prefix: str = "") -> dict:
        """Log the summary (``ndcg_at_10``), knobs and tables to MLflow (``rankwise.io.mlflow``; the mlflow extra)."""
        from rankwise.io.mlflow import log_mlflow
        return log_mlflow(self, run_id=run_id, prefix=prefix)

    def compare(self, baseline: str | None = None, *, test: str = "t", correction: str | None = "holm",
                alpha: float = 0.05, seed=0, n_resamples: int = 10_000, metrics=None,
                by_segment: bool = False) -> pl.DataFrame:
        """Paired significance tests between runs, per metric and k (``rankwise.inference.stats.compare``):
        every pair of runs, or each run against ``baseline``; tests "t" (scipy.stats.ttest_rel),
        "wilcoxon" (scipy.stats.wilcoxon), "randomization" (sign flip, p = (1 + #{|T*| >= |T|}) /
        (1 + n_resamples)), "bootstrap"; correction "holm", "bonferroni" or None within a metric and k.
        Users are paired by id; a user is used where both runs have a value (n_users counts them).
        ``by_segment=True`` (an evaluate with ``segments=``): the same within each segment, a leading
        ``segment`` column, corrections within each segment, metric and k.
        ci_low/ci_high never leave the range of a difference of two means: [-1, 1] for a metric in [0, 1].
        With ``metrics=None``, the metrics that have one value per run (catalog-level ones such as gini,
        an F of the means) are left out with a LeftOutWarning naming them."""
        out = self._compare(baseline, test=test, correction=correction, alpha=alpha, seed=seed,
                            n_resamples=n_resamples, metrics=metrics, by_segment=by_segment)
        self._warn_left_out("compare", metrics)
        return out

    def _compare(self, baseline, *, test, correction, alpha, seed, n_resamples, metrics, by_segment=False):
        from rankwise.inference import stats

        if by_segment:
            if self.segment_of is None:
                raise ParameterError("by_segment=True needs an evaluate(..., segments=...).",
                                     hint="Pass segments= a (user, segment) table or a ground-truth column.")
            long = self._long_with_runs().join(
                self.segment_of,  # aligned to the users' type by _with_segments
                on=self.user_col, how="inner")
            parts = [self._with_long(part.drop("segment"))._compare(
                baseline, test=test, correction=correction, alpha=alpha, seed=seed, n_resamples=n_resamples,
                metrics=metrics).select(pl.lit(segment).alias("segment"), pl.all())
                for (segment,), part in sorted(long.partition_by("segment", as_dict=True).items())]
            if not parts:  # no evaluated user is in a segment: no rows, the frame's columns
                return self._compare(baseline, test=test, correction=correction, alpha=alpha, seed=seed,
                                     n_resamples=n_resamples, metrics=metrics).head(0).select(
                    pl.lit(None, pl.String).alias("segment"), pl.all())
            return pl.concat(parts)
        if len(self.runs) < 2:
            raise ParameterError("compare needs at least two runs; this result has one run.",
                                 hint="Evaluate several runs at once: rankwise.evaluate({'a': recs_a, 'b': recs_b}, truth, ...).")
        pairs = stats.compare(self._long_with_runs(), self.user_col, self._metric_names(metrics), baseline=baseline,
                              test=test, correction=correction, alpha=alpha, seed=seed, n_resamples=n_resamples,
                              confidence=self.confidence, runs=self.runs, ks=self.request.ks)
        return within_range(pairs, self.convention, difference=True)

    def bootstrap(self, n_resamples: int = 1000, *, seed=0, method: str = "percentile", metrics=None) -> pl.DataFrame:
        """Bootstrap intervals of each mean, resampling its users (runs, metrics and ks valued for the same
        users share the draws): (run,) metric, k, value, ci_low, ci_high, n_users; method "percentile",
        "basic" or "bca"; reproducible with ``seed``. The level is the result's ``confidence``; an interval
        never leaves the metric's range. ``metrics=None`` leaves out (with a LeftOutWarning) the metrics
        with one value per run."""
        from rankwise.inference import stats

        out = stats.bootstrap(self._long_with_runs(), self.user_col, self._metric_names(metrics), n_resamples,
                              seed=seed, confidence=self.confidence, method=method, runs=self.runs or None,
                              ks=self.request.ks)
        self._warn_left_out("bootstrap", metrics)
        out = within_range(out, self.convention)
        return out if self.runs else out.drop("run")

    def table(self, baseline: str | None = None, *, test: str = "t", correction: str | None = "holm",
              alpha: float = 0.05, seed=0, n_resamples: int = 10_000, digits: int = 4):
        """The readable comparison: runs as rows, one column per metric@k, each cell the mean, its
        t interval and the letters of the runs it is significantly better than (footnote included)."""
        from rankwise.inference import tables as _table

        if not (isinstance(digits, int) and not isinstance(digits, bool) and 0 <= digits <= 17):
            raise ParameterError(f"digits={digits!r} must be an integer from 0 to 17.", hint="e.g. digits=4.")
        if len(self.runs) < 2:
            return _table.build(self.summary, None, "", self.confidence, digits)
        if not self._per_user_names():  # the values, without letters
            return _table.build(self.summary, None, f"No tests: {self._one_value_per_run()}.", self.confidence,
                                digits)
        pairs = self._compare(baseline, test=test, correction=correction, alpha=alpha, seed=seed,  # (the footnote
                              n_resamples=n_resamples, metrics=None)  # names what has no letters)
        return _table.from_pairs(self.summary, pairs, self.runs, test=test, correction=correction, alpha=alpha,
                                 confidence=self.confidence, digits=digits, note=self._no_letters_note())

    def report(self, path, **options):
        """Write one self-contained HTML report (run card, summary with CIs, metric-vs-k curves,
        per-user distributions, with several runs the comparison); see ``rankwise.report.build``.
        Needs the rankwise[report] extra."""
        from rankwise import report

        return report.build(self, path, **options)

    def plot(self, kind: str = "curves", **options):
        """An Altair chart ("curves", "distribution", "difference"); ``rankwise.report.save(chart,
        "x.png" | "x.svg")`` exports it. Needs the rankwise[report] extra."""
        from rankwise import report

        return report.plot(self, kind, **options)

    def _repr_html_(self) -> str:
        from rankwise import report

        return report.html_table(self)

    @property
    def _long_columns(self) -> list[str]:
        """The long frame's columns (none when it was left in the engine, collect=False)."""
        return self.long.columns if isinstance(self.long, pl.DataFrame) else []

    def _per_user_names(self) -> list[str]:
        """The metrics whose summary value is a mean over users (what compare and bootstrap pair and
        resample): per-user metrics, except F-beta when the convention takes the F of the means."""
        columns = self._long_columns
        f_of_means = self.convention.f_aggregation == "of_means"
        return [n for n in dict.fromkeys(self.request.names) if n in columns
                and not (f_of_means and internal_name(n) == "fbeta")]

    def _one_value_per_run(self) -> str:
        """Which metrics have no per-user values to pair or resample, and why."""
        columns = self._long_columns
        others = [n for n in dict.fromkeys(self.request.names) if n not in self._per_user_names()]
        catalog, f_of_means = [n for n in others if n not in columns], [n for n in others if n in columns]
        why = ([f"{', '.join(catalog)} (catalog-level)"] if catalog else []) + (
            [f"{', '.join(f_of_means)} (the F of mean precision and mean recall, f_aggregation='of_means')"]
            if f_of_means else [])
        return f"{' and '.join(why)}: one value per run, no per-user values to pair or resample"

    def _warn_left_out(self, method: str, metrics) -> None:
        """A LeftOutWarning when ``metrics=None`` left out metrics evaluated (one value per run)."""
        if metrics is None and set(self.request.names) - set(self._per_user_names()):
            warn(f"{method}() left out {self._one_value_per_run()}. Result.summary has their values.",
                 LeftOutWarning)

    def _no_letters_note(self) -> str:
        """A footnote sentence naming the metrics a comparison table shows without letters (one value
        per run: catalog-level, an F of the means), or ""."""
        untested = set(self.request.names) - set(self._per_user_names())
        return f" No letters for {self._one_value_per_run()}." if untested else ""

    def _metric_names(self, metrics) -> list[str]:
        """The metrics compare and bootstrap pair and resample: ``metrics``, or every per-user one."""
        columns = self._long_columns
        f_of_means = self.convention.f_aggregation == "of_means"
        names = self._per_user_names()
        if metrics is None:
            if not names and isinstance(self.long, pl.DataFrame):
                raise ParameterError(f"{self._one_value_per_run()}.",
                                     hint="Result.summary (or Result.table()) has their values; evaluate a "
                                          "per-user metric too (e.g. metrics=['ndcg', 'item_coverage']) to test.")
            return names
        # the names as evaluate() reads them (" NDCG" is ndcg)
        wanted = [m.strip().lower() if isinstance(m, str) else m
                  for m in ([metrics] if isinstance(metrics, str) else list(metrics))]
        if f_of_means and any(m in columns and internal_name(m) == "fbeta" for m in wanted):
            raise ParameterError(
                f"{[m for m in wanted if internal_name(m) == 'fbeta']}: under f_aggregation='of_means' an F is the F "
                "of mean precision and mean recall, not a mean over users: nothing to pair or resample.",
                hint="Compare precision and recall, or evaluate with convention.replace(f_aggregation='per_user').")
        not_evaluated = [m for m in wanted if m not in self.request.names]
        if not_evaluated:
            raise ParameterError(f"metrics {not_evaluated} are not in this result (it has "
                                 f"{', '.join(self.request.names)}).",
                                 hint=did_you_mean(not_evaluated[0], self.request.names) + "Name metrics the result was evaluated with, without @k (the cutoffs are "
                                      "its k); to test another metric, evaluate it.")
        unknown = [m for m in wanted if m not in names]
        if unknown:
            raise ParameterError(f"metrics {unknown} have no per-user values here (per-user metrics: "
                                 f"{', '.join(names)}).",
                                 hint="Catalog-level metrics (coverage, gini, ...) have one value per run: "
                                      "nothing to pair or resample over users.")
        return wanted

    def _with_long(self, long: pl.DataFrame) -> Result:
        return dataclasses.replace(self, long=long, segments=None, segment_of=None)

    def _long_with_runs(self) -> pl.DataFrame:
        if not isinstance(self.long, pl.DataFrame):
            raise ParameterError(f"The per-user rows are still in the engine (collect=False): {self.long}.",
                                 hint="Evaluate with collect=True to test or resample on the driver.")
        # the run column an Enum of every run: a run no user was evaluated in still has its rows (NaN)
        runs = self.runs or ("run",)
        long = self.long if self.runs else self.long.with_columns(run=pl.lit("run"))
        return long.with_columns(pl.col("run").cast(pl.Enum(runs)))



def within_range(frame: pl.DataFrame, conv: Convention, difference: bool = False) -> pl.DataFrame:
    """``frame``'s intervals (ci_low, ci_high) clipped to each metric's range under ``conv``: the one rule
    for the summary, segments, bootstrap and compare (``stats.within_range``, the registry's bounds)."""
    from rankwise.inference import stats

    return stats.within_range(frame, lambda name: value_range(name, conv), difference=difference)
