"""rankwise.report (HTML report, charts, notebook table) and rankwise._progress.

Expected numbers come from hand calculation or numpy.histogram, never from the code under test.
The browser test opens a report in headless Chromium (.ci/browser_check.py); it is skipped with a
reason when chromium is not on PATH (CI installs Debian's package)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rankwise
from rankwise import _progress, report
from rankwise.io import write as _write
from rankwise.errors import MissingDependencyError, ParameterError

ROOT = Path(__file__).resolve().parents[1]
RECS = pl.DataFrame({"user": [1, 1, 2, 2, 3], "item": [10, 11, 10, 12, 13], "rank": [1, 2, 1, 2, 1]})
TRUTH = pl.DataFrame({"user": [1, 2, 3], "item": [11, 10, 99]})
# by hand: precision@1 per user = (0, 1, 0) -> mean 1/3


class Extras:
    """A Result plus the attributes other features add (compare, per_item), as the report sees them."""

    def __init__(self, result, **extra):
        self._result, self._extra = result, extra

    def __getattr__(self, name):
        if name in self._extra:
            return self._extra[name]
        return getattr(self._result, name)


@pytest.fixture(scope="module")
def one():
    return rankwise.evaluate(RECS, TRUTH, k=[1, 2], metrics=["precision", "ndcg"])


@pytest.fixture(scope="module")
def two():
    worse = RECS.with_columns(rank=3 - pl.col("rank")).filter(pl.col("user") != 3).vstack(
        RECS.filter(pl.col("user") == 3))
    return rankwise.evaluate({"<b>a</b>": RECS, "b": worse}, TRUTH, k=[1, 2], metrics=["precision", "ndcg"])


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def _parse(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    return parser


def _specs(page: str) -> dict:
    """The chart specs embedded in a report, by name."""
    out, start = {}, 0
    while (i := page.find("<script type='application/json' id='spec-", start)) >= 0:
        name_end = page.index("'>", i)
        name = page[i + len("<script type='application/json' id='spec-"):name_end]
        end = page.index("</script>", name_end)
        out[name] = json.loads(page[name_end + 2:end])
        start = end
    return out


def _values(spec: dict) -> pl.DataFrame:
    """A chart spec's inline data (CSV text)."""
    assert spec["data"]["format"]["type"] == "csv"
    return pl.read_csv(io.StringIO(spec["data"]["values"]), infer_schema_length=None)


# ---------------------------------------------------------------- aggregates

def test_histogram_matches_numpy_with_shared_edges_and_nan_left_out():
    rng = np.random.default_rng(7)
    a, b = rng.random(500), rng.random(300) * 2
    a[:17] = np.nan  # undefined users are not counted
    long = pl.DataFrame({"run": ["a"] * 500 + ["b"] * 300, "k": [5] * 800, "m": np.concatenate([a, b])})
    hist = report.histogram(long, ["m"], bins=7)
    defined = np.concatenate([a[~np.isnan(a)], b])
    lo, hi = defined.min(), defined.max()
    for run, values in (("a", a[~np.isnan(a)]), ("b", b)):
        counts, edges = np.histogram(values, bins=7, range=(lo, hi))
        part = hist.filter(pl.col("run") == run).sort("bin_start")
        assert part["users"].to_list() == counts.tolist()
        assert np.allclose(part["bin_start"].to_numpy(), edges[:-1])
        assert np.allclose(part["bin_end"].to_numpy(), edges[1:])
        assert np.allclose(part["share"].to_numpy(), counts / len(values))
    assert hist.filter(pl.col("run") == "a")["users"].sum() == 483


def test_histogram_values_on_edges_as_numpy():
    # 0.1, 0.2, 0.3 ... sit on edges whose float computation lands a hair above or below them
    values = np.array([0.0, 0.1, 0.2, 0.3, 0.3, 0.7, 0.6, 0.9, 1.0, 0.15, 0.45, 0.55, 0.95, 0.35, 0.65, 0.85])
    for bins in (20, 10, 7, 3):
        for lo_hi in (values, values * 0.3, values * 0.7 - 0.2):
            long = pl.DataFrame({"run": ["r"] * len(lo_hi), "k": [10] * len(lo_hi), "m": lo_hi})
            counts, edges = np.histogram(lo_hi, bins=bins, range=(lo_hi.min(), lo_hi.max()))
            hist = report.histogram(long, ["m"], bins=bins)
            assert hist["users"].to_list() == counts.tolist(), (bins, lo_hi)
            assert hist["bin_start"].to_list() == edges[:-1].tolist()
            assert hist["bin_end"].to_list() == edges[1:].tolist()
    # the reviewer's case: precision@10 of five users 0 (no hit), 0.1, 0.2, 0.3, 0.4 -> edges i * 0.02
    recs = pl.DataFrame({"user": [u for u in range(5) for _ in range(10)], "item": [i for _ in range(5) for i in range(10)],
                         "rank": [r + 1 for _ in range(5) for r in range(10)]})
    truth = pl.DataFrame({"user": [u for u in range(5) for i in range(max(u, 1))],
                          "item": [i if u else 99 for u in range(5) for i in range(max(u, 1))]})
    r = rankwise.evaluate(recs, truth, k=[1, 10], metrics=["precision"])
    hist = report.histogram(report._long(r), ["precision"]).filter(pl.col("k") == 10)
    at10 = np.array([0.0, 0.1, 0.2, 0.3, 0.4])
    counts, edges = np.histogram(at10, bins=report.BINS, range=(0.0, 0.4))
    assert hist["users"].to_list() == counts.tolist()
    assert counts[15] == 1 and np.isclose(edges[15], 0.3)  # 0.3 in [0.30, 0.32), not [0.28, 0.30)
    # the last edge is the maximum itself and closes the last bin
    assert hist["bin_end"].to_list()[-1] == 0.4 and hist["users"].to_list()[-1] == 1


def test_histogram_constant_values_fall_in_the_first_bin_and_all_undefined_is_empty():
    long = pl.DataFrame({"run": ["r"] * 4, "k": [1] * 4, "m": [0.0] * 4, "u": [float("nan")] * 4})
    hist = report.histogram(long, ["m", "u"], bins=5)
    assert hist["users"].to_list() == [4, 0, 0, 0, 0] and set(hist["metric"]) == {"m"}
    assert report.histogram(long, ["u"]).height == 0


def test_differences_by_hand():
    long = pl.DataFrame({"run": ["a"] * 4 + ["b"] * 4, "user": [1, 2, 3, 4] * 2, "k": [3] * 8,
                         "m": [0.0, 0.5, 1.0, float("nan"), 1.0, 0.5, 0.0, 0.2]})
    counts, hist = report.differences(long, [("a", "b")], [3], ["m"], "user", bins=4)
    # user 4 is undefined in a: 3 paired users, d = b - a = +1, 0, -1
    assert counts.row(0, named=True) == {"a": "a", "b": "b", "metric": "m", "k": 3, "users": 3, "b_better": 1,
                                         "same": 1, "a_better": 1, "diff": 0.0, "lo": -1.0, "hi": 1.0}
    # changed users only, 4 bins over [-1, 1] (edges -1, -0.5, 0, 0.5, 1), empty bins left out
    assert hist["bin_start"].to_list() == [-1.0, 0.5] and hist["bin_end"].to_list() == [-0.5, 1.0]
    assert hist["users"].to_list() == [1, 1]
    assert hist["better"].to_list() == ["a", "b"]  # the run ahead on each side


def test_differences_odd_bins_become_even_so_zero_is_an_edge():
    long = pl.DataFrame({"run": ["a", "b"] * 2, "user": [1, 1, 2, 2], "k": [1] * 4, "m": [0.0, 0.3, 0.5, 0.4]})
    counts, hist = report.differences(long, [("a", "b")], [1], ["m"], "user", bins=3)
    # d = +0.3, -0.1; 4 bins over [-0.3, 0.3]: edges -0.3, -0.15, 0, 0.15, 0.3
    assert counts["lo"].to_list() == [-0.3] and counts["hi"].to_list() == [0.3]
    assert hist["bin_start"].to_list() == pytest.approx([-0.15, 0.15]) and hist["users"].to_list() == [1, 1]


def test_differences_every_pair_and_k_match_compare():
    """compare()'s d is b - a per user, its diff their mean: the chart's means are those, per pair and k."""
    rng = np.random.default_rng(3)
    users = list(range(40)) * 3
    long = pl.DataFrame({"run": ["x"] * 40 + ["y"] * 40 + ["z"] * 40, "user": users, "k": [5] * 120,
                         "m": rng.random(120)}).with_columns(pl.col("m").round(1))
    long = pl.concat([long, long.with_columns(k=pl.lit(10, pl.Int64), m=pl.col("m") * 2)])
    counts, _ = report.differences(long, [("x", "y"), ("x", "z"), ("y", "z")], [5, 10], ["m"], "user")
    for a, b, k, diff, users_, better, same, worse in counts.select(
            "a", "b", "k", "diff", "users", "b_better", "same", "a_better").iter_rows():
        xa = long.filter((pl.col("run") == a) & (pl.col("k") == k)).sort("user")["m"].to_numpy()
        xb = long.filter((pl.col("run") == b) & (pl.col("k") == k)).sort("user")["m"].to_numpy()
        d = xb - xa
        assert diff == pytest.approx(d.mean(), abs=1e-15) and users_ == 40
        assert (better, same, worse) == ((d > 1e-12).sum(), (abs(d) <= 1e-12).sum(), (d < -1e-12).sum())
    assert counts.height == 6


@pytest.mark.parametrize(("exposure", "gini", "curve"), [
    ([0, 0, 0, 4], 0.75, [0, 0, 0, 0, 1]),  # one item takes all: (n-1)/n
    ([1, 1, 1, 1], 0.0, [0, 0.25, 0.5, 0.75, 1]),
    ([4, 1, 3, 2], 0.25, [0, 0.1, 0.3, 0.6, 1]),  # 2*sum(i*x_i)/(n*sum x) - (n+1)/n = 60/40 - 5/4
])
def test_lorenz_by_hand(exposure, gini, curve):
    per_item = pl.DataFrame({"item": range(4), "k": [10] * 4, "exposure": exposure, "popularity": [1] * 4})
    other_k = per_item.with_columns(k=pl.lit(5, pl.Int64), exposure=pl.lit(1, pl.Int64))  # filtered out
    points, ginis = report.lorenz(per_item.vstack(other_k), 10)
    assert ginis["gini"][0] == pytest.approx(gini, abs=1e-12) and ginis["items"][0] == 4
    assert points["item_share"].to_list() == [0, 0.25, 0.5, 0.75, 1]
    assert points["exposure_share"].to_list() == pytest.approx(curve)


def test_lorenz_is_downsampled_per_run_keeping_the_ends():
    per_item = pl.DataFrame({"run": ["x"] * 1000 + ["y"] * 10, "item": range(1010),
                             "exposure": list(range(1000)) + [1] * 10})
    points, ginis = report.lorenz(per_item, max_points=100)
    x = points.filter(pl.col("run") == "x")
    assert x.height == 101 and x["item_share"][0] == 0 and x["item_share"][-1] == 1 and x["exposure_share"][-1] == 1
    assert points.filter(pl.col("run") == "y").height == 11
    # exposures 0..999: gini = 2*sum(i*(i-1))/(n*sum) - (n+1)/n with i = 1..n
    n = 1000
    expected = 2 * sum(i * (i - 1) for i in range(1, n + 1)) / (n * sum(range(n))) - (n + 1) / n
    assert ginis.filter(pl.col("run") == "x")["gini"][0] == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------- the HTML report

def test_report_single_run(one, tmp_path):
    page = report.build(one, tmp_path / "r.html", title="My <model>").read_text()
    parsed = _parse(page)
    # self-contained: no element loads anything (no src=, no stylesheet links)
    assert [(t, a) for t, a in parsed.tags if "src" in a or t == "link"] == []
    text = "".join(parsed.text)
    assert "My <model>" in text and "My &lt;model&gt;" in page  # title escaped
    assert _write.fingerprint(one.prepared[None]) in page
    for knob, value in one.convention.knobs().items():
        assert f"<td>{knob}</td>" in page and repr(value).replace("'", "&#x27;") in page
    for code in one.excluded["code"]:  # the excluded frame, with its reasons (or "nobody")
        assert f"<td>{code}</td>" in page
    assert one.excluded.height or "<p class='note'>nobody</p>" in page
    assert f"convention <code>{one.convention.name}</code>" in page  # the summary names its convention
    assert rankwise.__version__ in text and "users evaluated" in text
    assert set(_specs(page)) == {"curves", "distribution"}  # no comparison or catalog panels
    assert "Runs compared" not in page and "Beyond accuracy" not in page
    # the summary cell: precision@1 = mean(0, 1, 0) = 0.3333 (user 1 ranks 10 first, user 2 hits)
    assert "<td>precision</td><td>0.3333" in page


def test_report_distribution_spec_has_k_selector_and_chosen_k(one, tmp_path):
    page = report.build(one, tmp_path / "r.html", k=1).read_text()
    spec = _specs(page)["distribution"]
    (param,) = spec["params"]
    assert param["value"] == 1 and param["bind"]["options"] == [1, 2]
    values = _values(spec)
    # step lines: a point per bin at its start, then one closing the last bin at its end
    closing = values.filter(pl.col("x") == pl.col("bin_end"))
    ends = values.group_by("metric", "k").agg(pl.col("bin_end").max())
    assert sorted(closing.select("metric", "k", "bin_end").rows()) == sorted(ends.rows())  # one per (metric, k)
    values = values.filter(pl.col("x") == pl.col("bin_start"))
    # 3 users, 20 bins per (metric, k): shares add to 1
    by = values.group_by("metric", "k").agg(pl.col("share").sum(), pl.col("users").sum())
    assert by["users"].to_list() == [3] * 4 and by["share"].to_list() == pytest.approx([1.0] * 4)


def test_report_several_runs_escapes_names_and_compares(two, tmp_path):
    compared = pl.DataFrame({"run_a": ["<b>a</b>", "<b>a</b>"], "run_b": ["b", "b"], "metric": ["ndcg", "precision"],
                             "k": [2, 2], "mean_a": [0.5, 0.33], "mean_b": [0.4, 0.33], "diff": [-0.1, 0.0],
                             "ci_low": [-0.2, -0.1], "ci_high": [0.0, 0.1], "p_value": [0.01, 1.0],
                             "p_adjusted": [0.02, 1.0], "significant": [True, False], "n_users": [3, 3],
                             "effect_size": [0.8, 0.0]})
    result = Extras(two, compare=lambda: compared)
    page = report.build(result, tmp_path / "r.html", k=1).read_text()
    assert "<b>a</b>" not in page.split("<script")[0] and "&lt;b&gt;a&lt;/b&gt;" in page
    assert page.count("class='sig'>*") == 1  # only the significant row is marked
    # per user at k=1: user 1 gets item 11 first in b (a hit: precision 0 -> 1), user 2 loses it (1 -> 0)
    table = page[page.index("the counts of every pair at k=1"):]
    row = table[table.index("<td>precision</td>"):table.index("</tr>", table.index("<td>precision</td>"))]
    # (metric, run_a, run_b, users, b_better, same, a_better, diff): d = +1, -1, 0
    assert row == ("<td>precision</td><td>&lt;b&gt;a&lt;/b&gt;</td><td>b</td><td>3</td><td>1</td><td>1</td><td>1</td>"
                   "<td>0.0000</td>")
    assert set(_specs(page)) == {"curves", "distribution", "difference"}
    # inside the JSON specs every '<' is escaped: the run name can neither close the script element nor
    # open an HTML comment ('<!--<script' put the tokenizer in its double-escaped state: no chart drew)
    specs = page[page.index("id='spec-"):]
    assert "\\u003cb>a\\u003c/b>" in specs and all("<" not in body.split("</script>")[0].split("'>", 1)[1]
                                                     for body in specs.split("id='spec-")[1:])


def test_report_beyond_accuracy_panels_when_present(one, tmp_path):
    per_item = pl.DataFrame({"item": [10, 11, 12, 13], "k": [2] * 4, "exposure": [0, 0, 0, 4],
                             "popularity": [3, 1, 1, 0]})
    catalog = pl.DataFrame({"metric": ["item_coverage", "gini"], "k": [2, 2], "value": [0.25, 0.75],
                            "n_users": [3, 3], "ci_low": [float("nan")] * 2, "ci_high": [float("nan")] * 2})
    result = Extras(one, per_item=per_item, summary=one.summary.vstack(catalog))
    page = report.build(result, tmp_path / "r.html").read_text()
    assert "Beyond accuracy" in page and "<td>item_coverage</td>" in page
    assert "lorenz" in _specs(page)
    assert "<tr><td>4</td><td>0.7500</td></tr>" in page  # Gini of (0, 0, 0, 4) = 3/4; no placeholder run
    # catalog rows stay out of the per-user summary grid and curves
    curves = _specs(page)["curves"]
    assert set(_values(curves)["metric"]) == {"precision", "ndcg"}
    svg = report.save(report.plot(result, "lorenz"), tmp_path / "lorenz.svg").read_text()  # drawn by vl-convert
    assert "curve Gini 0.75" in svg and "result" not in svg and "Exposure Lorenz curve at k=2" in svg


def test_report_errors(one, two, tmp_path):
    with pytest.raises(ParameterError, match=r"k=3 was not evaluated") as info:
        report.build(one, tmp_path / "r.html", k=3)
    assert "Hint:" in str(info.value)
    with pytest.raises(ParameterError, match="pair"):
        report.build(two, tmp_path / "r.html", pair=("b", "b"))
    (tmp_path / "file").write_text("")
    with pytest.raises(rankwise.WriteError, match="cannot write"):
        report.build(one, tmp_path / "file" / "r.html")


# ---------------------------------------------------------------- plots, images, notebook

def test_plot_kinds_and_errors(one, two):
    import altair as alt

    assert isinstance(report.plot(one, "curves"), alt.FacetChart)
    assert isinstance(report.plot(two, "difference", k=1, pair=("b", "<b>a</b>")), alt.FacetChart)
    for kwargs, match in [({"kind": "pie"}, "Unknown plot kind"), ({"kind": "difference"}, "several runs"),
                          ({"kind": "lorenz"}, "per_item"), ({"kind": "curves", "k": 7}, "not evaluated"),
                          ({"kind": "curves", "metrics": ["mrr"]}, "not in this Result")]:
        with pytest.raises(ParameterError, match=match):
            report.plot(one, **kwargs)


def test_save_png_and_svg(one, tmp_path):
    chart = report.plot(one, "distribution", k=2)
    png = report.save(chart, tmp_path / "d.png", scale=1).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    svg = report.save(chart, tmp_path / "d.svg").read_text()
    assert svg.lstrip().startswith("<svg") and "precision" in svg
    with pytest.raises(ParameterError, match=r"\.png or \.svg"):
        report.save(chart, tmp_path / "d.jpg")


def test_html_table_compact_and_escaped(two):
    page = report.html_table(two)
    assert "&lt;b&gt;a&lt;/b&gt;" in page and "<b>a</b>" not in page
    assert page.count("<tr") == 1 + 4  # header + (2 metrics x 2 k), the runs side by side
    assert "<th class='key'>metric</th><th class='key'>k</th>" in page and "@1" not in page
    assert "excluded from the means" not in page or "n_users" in page


@pytest.mark.parametrize("module", ["altair", "vl_convert"])
def test_missing_extra_is_a_typed_error(one, tmp_path, monkeypatch, module):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    with pytest.raises(MissingDependencyError, match="not installed") as info:
        report.build(one, tmp_path / "r.html")
    assert "pip install 'rankwise[report]'" in str(info.value)


# ---------------------------------------------------------------- progress

class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_off_without_a_terminal_and_with_enabled_false(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    bar = _progress.progress([1, 2, 3], desc="runs")
    assert isinstance(bar, _progress.NoProgress) and list(bar) == [1, 2, 3]
    with _progress.progress(total=2) as bar:
        bar.update()
        bar.set_postfix_str("x")
    assert isinstance(_progress.progress([1], enabled=False), _progress.NoProgress)
    monkeypatch.setattr(sys, "stderr", _Tty())
    assert _progress.enabled_by_default()
    monkeypatch.setenv("RANKWISE_PROGRESS", "0")
    assert not _progress.enabled_by_default()


def test_progress_draws_a_tqdm_bar_on_a_terminal(monkeypatch):
    from tqdm import tqdm

    stream = _Tty()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.delenv("RANKWISE_PROGRESS", raising=False)
    bar = _progress.progress(range(3), desc="runs", delay=0)
    assert isinstance(bar, tqdm) and list(bar) == [0, 1, 2]
    assert "runs:" in stream.getvalue() and "/3 [" in stream.getvalue()


def test_progress_without_tqdm_is_a_no_op(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    bar = _progress.progress(range(2), enabled=True)
    assert isinstance(bar, _progress.NoProgress) and list(bar) == [0, 1]


# ---------------------------------------------------------------- in a real browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# as for engines (conftest): skipped here without chromium, but with CI=true a missing browser fails
needs_chromium = pytest.mark.skipif(CHROMIUM is None and not _CI,
                                    reason="chromium is not on PATH (CI installs Debian's package)")


def _check(page: Path, shot: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / ".ci" / "browser_check.py"), *extra, str(page), str(shot),
                           "--timeout", "60"], capture_output=True, text=True, timeout=180)


@needs_chromium
def test_example_report_opens_offline_in_chromium(tmp_path):
    done = _check(tmp_path / "report.html", tmp_path / "report.png", "--build-example")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "browser check: ok" in done.stdout
    for name in ("curves", "distribution", "difference"):
        assert f"chart chart-{name}: rendered=True" in done.stdout
    assert (tmp_path / "report.png").read_bytes()[:4] == b"\x89PNG"


@needs_chromium
def test_browser_check_fails_on_console_errors_requests_and_empty_charts(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><div class='chart' id='chart-x' data-rendered='1'></div>"
                    "<img src='http://example.invalid/x.png'><script>console.error('boom')</script></body></html>")
    done = _check(page, tmp_path / "bad.png")
    assert done.returncode == 1
    assert "console.error: boom" in done.stderr
    assert "network request" in done.stderr and "example.invalid" in done.stderr
    assert "chart chart-x has no SVG/canvas" in done.stderr


def test_summary_grid_users_per_k_when_they_differ():
    """The users column showed the largest n_users of a metric's row (7 beside a mean over 2 users at
    @1); now one number when every k has the same, else one per k in column order."""
    summary = pl.DataFrame({"metric": ["ndcg", "ndcg", "precision", "precision"], "k": [1, 5, 1, 5],
                            "value": [1.0, 0.6, 0.5, 0.4], "n_users": [2, 7, 7, 7],
                            "ci_low": [float("nan")] * 4, "ci_high": [float("nan")] * 4})
    grid = report.summary_grid(summary)
    ndcg = grid[grid.index("<td>ndcg</td>"):grid.index("</tr>", grid.index("<td>ndcg</td>"))]
    precision = grid[grid.index("<td>precision</td>"):grid.index("</tr>", grid.index("<td>precision</td>"))]
    assert ndcg.endswith("<td>2 / 7</td>") and precision.endswith("<td>7</td>")


@pytest.fixture(scope="module")
def catalog_only(tmp_path_factory):
    """Two runs with only item_coverage over a catalog of 5 items (10..14)."""
    worse = RECS.with_columns(rank=3 - pl.col("rank")).filter(pl.col("user") != 3).vstack(
        RECS.filter(pl.col("user") == 3))
    items = pl.DataFrame({"item": [10, 11, 12, 13, 14]})
    return rankwise.evaluate({"a": RECS, "b": worse}, TRUTH, k=[1, 2], metrics=["item_coverage"], items=items)


def test_report_of_catalog_metrics_only_shows_them_and_skips_the_per_user_sections(catalog_only, tmp_path):
    page = report.build(catalog_only, tmp_path / "r.html").read_text()
    # by hand: at k=1 a shows {10, 13} (2/5), b {11, 12, 13} (3/5); at k=2 both {10, 11, 12, 13} (4/5)
    assert "<td class='key'>item_coverage</td><td class='key'>1</td><td>0.4000 </td><td>0.6000 </td>" in page
    assert "<td class='key'></td><td class='key'>2</td><td>0.8000 </td><td>0.8000 </td>" in page
    assert "No per-user metric was evaluated" in page and "Runs compared" not in page
    assert "curves" not in _specs(page) and "distribution" not in _specs(page)
    single = rankwise.evaluate(RECS, TRUTH, k=[1, 2], metrics=["item_coverage"],
                               items=pl.DataFrame({"item": [10, 11, 12, 13, 14]}))
    page = report.build(single, tmp_path / "one.html").read_text()
    assert "<td>item_coverage</td><td>0.4000 </td><td>0.8000 </td>" in page
    assert "<table class='summary'><thead><tr><th>metric</th><th>@1</th><th>@2</th><th>users</th></tr></thead>" \
        "<tbody></tbody>" not in page  # no empty summary


def test_table_of_catalog_metrics_only_shows_values_without_tests_and_compare_says_why(catalog_only):
    text = catalog_only.table().text()
    assert "0.4000" in text and "0.6000" in text and "No tests: item_coverage (catalog-level)" in text
    for call in (catalog_only.compare, catalog_only.bootstrap):
        with pytest.raises(ParameterError, match="item_coverage .catalog-level.: one value per run, no per-user") \
                as info:
            call()
        assert "Hint:" in str(info.value)
    f1 = rankwise.evaluate({"a": RECS, "b": RECS}, TRUTH, k=[2], metrics=["f1"], convention="evidently")
    assert "No tests: f1 (the F of mean precision and mean recall" in f1.table().text()
    with pytest.raises(ParameterError, match="f_aggregation='of_means'.: one value per run"):
        f1.compare()


def test_report_has_the_means_per_segment(tmp_path):
    segments = pl.DataFrame({"user": [1, 2, 3], "segment": ["new", "old", "old"]})
    result = rankwise.evaluate(RECS, TRUTH, k=[1, 2], metrics=["precision"], segments=segments)
    page = report.build(result, tmp_path / "r.html").read_text()
    grid = page[page.index("<h2>By segment</h2>"):]
    grid = grid[:grid.index("</table>")]
    # by hand, precision@1 / @2: user 1 (10, 11; label 11) 0, 1/2; user 2 (10, 12; label 10) 1, 1/2;
    # user 3 (13; label 99) 0, 0 -> new: 0, 0.5; old: mean(1, 0) = 0.5, mean(0.5, 0) = 0.25
    assert "<td>new</td><td>precision</td><td>0.0000 </td><td>0.5000 </td><td>1</td>" in grid
    assert "<td>old</td><td>precision</td><td>0.5000 <span class='ci'>" in grid
    assert "<td>0.2500 <span class='ci'>" in grid


def _svg_texts(svg: str) -> list[str]:
    """The text drawn in a vl-convert SVG (labels, titles, legends)."""
    import re

    return [html_text for html_text in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def test_exported_charts_name_their_k_and_integer_k_ticks_and_no_placeholder_run(tmp_path):
    one = rankwise.evaluate(RECS, TRUTH, k=[1, 3], metrics=["precision"])
    texts = _svg_texts(report.save(report.plot(one, "distribution", k=1), tmp_path / "d.svg").read_text())
    assert "Per-user values at k=1 (users with a defined value)" in texts
    assert "result" not in texts  # a single run: no legend of the placeholder run name
    texts = _svg_texts(report.save(report.plot(one, "curves"), tmp_path / "c.svg").read_text())
    assert texts[:texts.index("k")] == ["1", "3"], texts  # the x ticks (then its title): k is 1 or 3, no 1.5
    assert "result" not in texts
    two = rankwise.evaluate({"a": RECS, "b": RECS}, TRUTH, k=[1, 3], metrics=["precision"])
    texts = _svg_texts(report.save(report.plot(two, "distribution", k=3), tmp_path / "d2.svg").read_text())
    assert "Per-user values at k=3 (users with a defined value)" in texts and {"a", "b"} <= set(texts)


def test_chart_data_is_inline_csv_text_that_reads_back_as_the_frame():
    """A list of row dicts was walked and schema-validated row by row by Altair (most of a large
    report's time); CSV text is kept as is. Undefined (NaN) values are empty fields: null to Vega."""
    alt = pytest.importorskip("altair")
    frame = pl.DataFrame({"run": ["<b>a</b>", "b,c", 'q"'], "k": [1, 2, 3], "value": [0.5, float("nan"), 1e-17]})
    data = report._data(alt, frame).to_dict()
    assert isinstance(data["values"], str)
    assert data["format"] == {"type": "csv", "parse": {"k": "number", "value": "number"}}
    back = pl.read_csv(io.StringIO(data["values"]))
    assert back["run"].to_list() == ["<b>a</b>", "b,c", 'q"'] and back["k"].to_list() == [1, 2, 3]
    assert back["value"].to_list() == [0.5, None, 1e-17]


# ---------------------------------------------------------------- the example's three runs, read at a glance

# Okabe & Ito (2008), "Color Universal Design": the eight colours of their colour-blind-safe palette
OKABE_ITO = {"#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7"}


@pytest.fixture(scope="module")
def example():
    root = ROOT / "examples"
    runs = {name: root / f"{file}.parquet" for name, file in
            (("model", "recommendations"), ("popular", "popular"), ("shuffled", "shuffled"))}
    return rankwise.evaluate(runs, root / "ground_truth.parquet", k=[1, 5, 10], metrics=["precision", "ndcg", "mrr"])


@pytest.fixture(scope="module")
def example_page(example, tmp_path_factory):
    return report.build(example, tmp_path_factory.mktemp("report") / "r.html", k=5).read_text()


class _Rows(HTMLParser):
    """The rows of the first table after a marker, as lists of cell texts."""

    def __init__(self):
        super().__init__()
        self.rows, self._cell, self.done = [], None, False

    def handle_starttag(self, tag, attrs):
        if tag == "tr" and not self.done:
            self.rows.append([])
        elif tag in ("td", "th") and not self.done:
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and not self.done:
            self.rows[-1].append(self._cell.strip())
            self._cell = None
        elif tag == "table":
            self.done = True

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def _table_after(page: str, marker: str) -> list[list[str]]:
    parser = _Rows()
    parser.feed(page[page.index(marker):])
    return parser.rows


def test_summary_has_the_runs_side_by_side_with_the_summary_values(example, example_page):
    rows = _table_after(example_page, "<h2>Summary</h2>")
    header, body = rows[0], rows[1:]
    assert header == ["metric", "k", "model", "popular", "shuffled", "users"]
    assert len(body) == 3 * 3  # a row per metric and k, not per run
    metric = None
    for cells in body:
        metric = cells[0] or metric  # the metric's name on its first row only
        for run, cell in zip(("model", "popular", "shuffled"), cells[2:5]):
            row = example.summary.filter((pl.col("run") == run) & (pl.col("metric") == metric)
                                         & (pl.col("k") == int(cells[1]))).row(0, named=True)
            assert cell == f"{row['value']:.4f} [{row['ci_low']:.4f}, {row['ci_high']:.4f}]"


def test_difference_chart_holds_compare_diff_for_every_pair_and_k(example, example_page, tmp_path):
    spec = _specs(example_page)["difference"]
    means = _values(spec).filter(pl.col("kind") == "mean")
    compared = example.compare()
    got = {(a, b, m, k): d for a, b, m, k, d in means.select("a", "b", "metric", "k", "diff").iter_rows()}
    want = {(a, b, m, k): d for a, b, m, k, d in compared.select("run_a", "run_b", "metric", "k", "diff").iter_rows()}
    assert set(got) == set(want) and len(want) == 3 * 3 * 3  # every pair, metric and k
    assert all(got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-15) for key in want)
    # selectors for the pair and k, starting at the first pair and the report's k
    params = {p["name"]: p for p in spec["params"]}
    assert params["k_shown"]["value"] == 5 and params["k_shown"]["bind"]["options"] == [1, 5, 10]
    assert params["pair_shown"]["bind"]["options"] == ["popular − model", "shuffled − model", "shuffled − popular"]
    # each side named after the run better there, in that run's colour (no red/green)
    bins = _values(spec).filter(pl.col("kind") == "bin")
    assert ((bins["better"] == bins["b"]) == ((bins["bin_start"] + bins["bin_end"]) > 0)).all()
    labels = means.filter((pl.col("a") == "model") & (pl.col("b") == "popular")).select("left", "right").row(0)
    assert labels == ("← model better", "popular better →")
    # compare(baseline=...): the pairs are the baseline against each other run
    page = report.build(example, tmp_path / "b.html", compare={"baseline": "popular"}).read_text()
    pairs = _values(_specs(page)["difference"]).select("a", "b").unique().sort("b").rows()
    assert pairs == [("popular", "model"), ("popular", "shuffled")]


def _run_scales(spec, found=None):
    """Every scale in a spec whose domain is the runs: [(domain, range)]."""
    found = [] if found is None else found
    if isinstance(spec, dict):
        scale = spec.get("scale")
        if isinstance(scale, dict) and isinstance(scale.get("domain"), list) and "range" in scale:
            found.append((spec.get("field"), scale["domain"], scale["range"]))
        for value in spec.values():
            _run_scales(value, found)
    elif isinstance(spec, list):
        for value in spec:
            _run_scales(value, found)
    return found


def test_every_run_keeps_one_colour_blind_safe_colour_on_every_chart_and_table(example, example_page):
    specs = _specs(example_page)
    colour = {}
    for name in ("curves", "distribution", "difference"):
        scales = [(d, r) for field, d, r in _run_scales(specs[name]) if all(isinstance(c, str) and c.startswith("#")
                                                                               for c in r)]
        assert scales, name
        for domain, colours in scales:
            for run, c in zip(domain, colours):
                assert colour.setdefault(run, c) == c, (name, run)
    assert set(colour) == {"model", "popular", "shuffled"}
    assert len(set(colour.values())) == 3 and {c.upper() for c in colour.values()} <= OKABE_ITO
    for run, c in colour.items():  # the tables' swatch beside each run's name
        assert f"<span class='swatch' style='background:{c}'></span>{run}" in example_page


def test_curves_tell_runs_apart_and_draw_intervals(example, example_page):
    spec = _specs(example_page)["curves"]
    layers = spec["spec"]["layer"]
    marks = [layer["mark"]["type"] for layer in layers]
    assert marks == ["rule", "line", "point"]
    rule = layers[0]["encoding"]
    assert rule["y"]["field"] == "ci_low" and rule["y2"]["field"] == "ci_high"  # the interval, at every k
    scales = {field: r for field, d, r in _run_scales(spec) if d == ["model", "popular", "shuffled"]}
    shapes = [r for field, d, r in _run_scales(spec) if r and r[0] == "circle"]
    dashes = [r for field, d, r in _run_scales(spec) if r and isinstance(r[0], list)]
    assert scales and len(set(shapes[0])) == 3 and len({tuple(x) for x in dashes[0]}) == 3
    # the runs drawn a little apart along k, each at its k within a few hundredths of the k range
    values = _values(spec)
    for (metric, k), part in values.group_by("metric", "k"):
        assert part["x"].n_unique() == 3 and (part["x"] - k).abs().max() < 0.05 * (10 - 1)
    # one k: the interval is still drawn (a rule from ci_low to ci_high)
    single = rankwise.evaluate({"a": RECS, "b": RECS}, TRUTH, k=[1], metrics=["precision"])
    texts = report.curves_chart(single.summary, ["precision"]).to_dict()
    assert texts["spec"]["layer"][0]["mark"]["type"] == "rule"


def test_distributions_are_step_lines_not_overlaid_bars(example_page):
    layers = _specs(example_page)["distribution"]["spec"]["layer"]
    visible = [layer["mark"] for layer in layers if layer["mark"].get("opacity", 1) > 0]
    assert [(m["type"], m.get("interpolate")) for m in visible] == [("line", "step-after")]


def test_the_vega_bundle_is_kept_on_disk(one, tmp_path, monkeypatch):
    import vl_convert

    monkeypatch.setenv("RANKWISE_CACHE_DIR", str(tmp_path / "cache"))
    report._bundle.cache_clear()
    try:
        page = report.build(one, tmp_path / "a.html").read_text()
        (cached,) = (tmp_path / "cache").glob("vega-bundle-*.js")
        assert cached.read_text() in page and len(cached.read_text()) > 100_000
        report._bundle.cache_clear()

        def fail(**_):
            raise AssertionError("built again")

        monkeypatch.setattr(vl_convert, "javascript_bundle", fail)
        assert cached.read_text() in report.build(one, tmp_path / "b.html").read_text()
    finally:
        report._bundle.cache_clear()
