#!/usr/bin/env python3
"""Open an HTML report in headless Chromium, as a person would, and check it; save a screenshot.

    python3 .ci/browser_check.py REPORT.html SCREENSHOT.png [--timeout 60] [--chromium PATH]
    .venv/bin/python .ci/browser_check.py --build-example REPORT.html SCREENSHOT.png

--build-example first writes REPORT.html from the example data's three models, which needs
rankwise[report]; the check itself needs only the standard library and chromium.

Drives Debian's ``chromium`` through the DevTools protocol over --remote-debugging-pipe (the
standard library only: no websocket client, no browser download). The network is cut (a dead proxy
and a resolver that finds nothing), so the page must be self-contained. Exits 1, listing every
problem, on: a console error, an uncaught exception, a browser log error, a failed request or any
request that is not file:/data:/blob:/about:, no charts, a chart with no drawn SVG/canvas of
non-zero size, or a table cell that wraps onto a second line at the width a report is read at
(WIDTH, 1400 px). Prints the screenshot's path (a CI artefact), a full-page capture at that width.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOCAL = ("file:", "data:", "blob:", "about:")
WIDTH = 1400  # CSS pixels: a laptop's browser window

# What the page drew: per .chart element, its id, whether vega-embed finished, and the largest
# SVG/canvas in it (size, number of drawn marks).
MEASURE = """JSON.stringify([...document.querySelectorAll('.chart')].map(el => {
  const drawn = [...el.querySelectorAll('svg, canvas')].map(g => {
    const r = g.getBoundingClientRect();
    return {tag: g.tagName.toLowerCase(), width: r.width, height: r.height,
            marks: g.querySelectorAll('path, rect, line, text').length};
  }).sort((a, b) => b.width * b.height - a.width * a.height);
  return {id: el.id, rendered: el.getAttribute('data-rendered') === '1', drawn: drawn[0] || null};
}))"""


# The visible table cells whose text runs onto a second line: some text box starts below where
# another one ends (boxes of one line overlap vertically, whatever their font size).
WRAPPED = """JSON.stringify([...document.querySelectorAll('td, th')].flatMap(cell => {
  const range = document.createRange();
  range.selectNodeContents(cell);
  const boxes = [...range.getClientRects()].filter(r => r.width > 0);
  if (!boxes.length) return [];
  const wrapped = Math.max(...boxes.map(r => r.top)) >= Math.min(...boxes.map(r => r.bottom)) - 1;
  return wrapped ? [cell.textContent.trim().slice(0, 60)] : [];
}))"""


class Browser:
    """Chromium with a DevTools pipe: send() commands, collect events."""

    def __init__(self, chromium: str, profile: str):
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()

        def fds():  # the child reads commands on fd 3 and writes replies on fd 4 (via copies: the
            read, write = os.dup(to_chrome_r), os.dup(from_chrome_w)  # pipes may be fds 3 and 4 already)
            os.dup2(read, 3)
            os.dup2(write, 4)

        args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--remote-debugging-pipe", f"--user-data-dir={profile}", "--no-first-run",
                "--no-default-browser-check", "--disable-background-networking", "--disable-extensions",
                "--disable-component-update", "--disable-sync", "--metrics-recording-only",
                "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
                f"--window-size={WIDTH},900", "about:blank"]
        self.proc = subprocess.Popen(args, preexec_fn=fds, close_fds=False, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer, self._id, self.events, self.session = b"", 0, [], None

    def send(self, method: str, params: dict | None = None, timeout: float = 30) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self._w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._next(deadline)
            if reply is None:
                raise TimeoutError(f"no reply to {method} in {timeout}s")
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def pump(self, seconds: float) -> None:
        """Collect events for a while."""
        deadline = time.monotonic() + seconds
        while (event := self._next(deadline)) is not None:
            self.events.append(event)

    def _next(self, deadline: float) -> dict | None:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                return None
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe: " + self.proc.stderr.read().decode()[-2000:])
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def close(self) -> None:
        try:
            os.write(self._w, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)


def problems_in(events: list[dict]) -> tuple[list[str], list[str]]:
    """(problems, warnings) from the DevTools events: console errors, exceptions, failed or remote requests."""
    problems, warnings = [], []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", []))
            if params.get("type") in ("error", "assert"):
                problems.append(f"console.{params['type']}: {text}")
            elif params.get("type") == "warning":
                warnings.append(f"console.warn: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            problems.append("uncaught exception: " + str(details.get("exception", {}).get("description")
                                                        or details.get("text")))
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            if entry.get("level") == "error":
                problems.append(f"browser log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}")
        elif method == "Network.loadingFailed":
            problems.append(f"failed request: {params.get('errorText')} ({params.get('type')})")
        elif method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            if not url.startswith(LOCAL):
                problems.append(f"network request (the page must be self-contained): {url[:200]}")
    return problems, warnings


def check(report: Path, screenshot: Path, *, chromium: str = "chromium", timeout: float = 60) -> list[str]:
    """Open the report, wait for every chart, measure them, take a full-page screenshot; the problems."""
    with tempfile.TemporaryDirectory(prefix="rankwise-browser-") as profile:
        browser = Browser(chromium, profile)
        try:
            target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            browser.session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Runtime", "Log", "Network", "Page"):
                browser.send(f"{domain}.enable")
            browser.send("Emulation.setDeviceMetricsOverride",
                         {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False})
            browser.send("Page.navigate", {"url": report.resolve().as_uri()})
            deadline, charts = time.monotonic() + timeout, []
            while time.monotonic() < deadline:
                browser.pump(0.5)
                loaded = any(e.get("method") == "Page.loadEventFired" for e in browser.events)
                charts = json.loads(browser.send("Runtime.evaluate", {"expression": MEASURE,
                                                                      "returnByValue": True})["result"]["value"])
                if loaded and charts and all(c["rendered"] for c in charts):
                    break
            browser.pump(1.0)  # late errors (e.g. after the last chart)
            height = browser.send("Runtime.evaluate", {"expression": "document.documentElement.scrollHeight",
                                                       "returnByValue": True})["result"]["value"]
            browser.send("Emulation.setDeviceMetricsOverride",
                         {"width": WIDTH, "height": int(height), "deviceScaleFactor": 1, "mobile": False})
            browser.pump(0.5)
            wrapped = json.loads(browser.send("Runtime.evaluate", {"expression": WRAPPED,
                                                                   "returnByValue": True})["result"]["value"])
            shot = browser.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        finally:
            browser.close()
    problems, warnings = problems_in(browser.events)
    for warning in warnings:
        print(f"warning: {warning}")
    problems += [f"a table cell wraps at {WIDTH} px: {text!r}" for text in wrapped]
    if not charts:
        problems.append("no charts (.chart elements) in the page")
    for chart in charts:
        drawn = chart["drawn"]
        print(f"chart {chart['id']}: rendered={chart['rendered']} drawn={drawn}")
        if not chart["rendered"]:
            problems.append(f"chart {chart['id']} was not drawn within {timeout}s")
        if not drawn or drawn["width"] <= 0 or drawn["height"] <= 0 or drawn["marks"] == 0:
            problems.append(f"chart {chart['id']} has no SVG/canvas of non-zero size with marks: {drawn}")
    return problems


def build_example(path: Path) -> Path:
    """The report of the bundled example's three models (examples/make_example.py)."""
    import rankwise

    root = Path(__file__).resolve().parents[1] / "examples"
    runs = {name: root / f"{file}.parquet" for name, file in
            (("model", "recommendations"), ("popular", "popular"), ("shuffled", "shuffled"))}
    result = rankwise.evaluate(runs, root / "ground_truth.parquet", k=[1, 3, 5, 10, 20])
    return result.report(path, title="rankwise report: the example's three models")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("screenshot", type=Path)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--build-example", action="store_true", help="first write REPORT from examples/ (three models)")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM") or shutil.which("chromium")
                        or shutil.which("chromium-browser") or "chromium")
    args = parser.parse_args(argv)
    if args.build_example:
        print(f"report: {build_example(args.report).resolve()}")
    if not args.report.is_file():
        print(f"browser check: no such report {args.report}", file=sys.stderr)
        return 2
    problems = check(args.report, args.screenshot, chromium=args.chromium, timeout=args.timeout)
    print(f"screenshot: {args.screenshot.resolve()}")
    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    print("browser check: " + ("FAILED" if problems else "ok"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
