"""The bench's report.html in headless Chromium: every figure renders, the console stays clean, and
nothing but the page itself is loaded (it opens offline).

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: fd 3 in, fd 4
out, NUL-separated JSON), so the test needs no Python package beyond the standard library.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from kernelskill.bench.metrics import summarize
from kernelskill.bench.records import ResultRow
from kernelskill.bench.report import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (apt-get install -y chromium)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--remote-debugging-pipe"]


class Browser:
    """Just enough of the DevTools protocol: open a page, collect its events, evaluate JS."""

    def __init__(self, profile: Path):
        to_child, self._w = os.pipe()
        self._r, from_child = os.pipe()

        def fds() -> None:  # Chromium reads commands on fd 3 and writes replies on fd 4
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        self.proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                     preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_child)
        os.close(from_child)
        self._buf, self._id, self.events = b"", 0, []
        self.session: str | None = None

    def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if self.session and not method.startswith(("Target.", "Browser.")):
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        reply = self._until(lambda m: m.get("id") == self._id, timeout)
        assert "error" not in reply, reply
        return reply["result"]

    def wait_event(self, method: str, timeout: float = 30) -> dict[str, Any]:
        return self._until(lambda m: m.get("method") == method, timeout, keep=True)

    def _until(self, match: Any, timeout: float, keep: bool = False) -> dict[str, Any]:
        if keep:
            for m in self.events:
                if match(m):
                    return m
        deadline = time.time() + timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                m = json.loads(raw)
                if "method" in m:
                    self.events.append(m)
                if match(m):
                    return m
            left = deadline - time.time()
            assert left > 0, "Chromium did not answer in time"
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                assert chunk, "Chromium closed the DevTools pipe"
                self._buf += chunk

    def open(self, url: str) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        reply = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return reply["result"]["value"]

    def close(self) -> None:
        try:
            self.session = None
            self.send("Browser.close", timeout=10)
        except AssertionError:
            pass
        finally:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            os.close(self._w)
            os.close(self._r)


FIGURES = """JSON.stringify([...document.querySelectorAll('figure > svg')].map(s => {
  const r = s.getBoundingClientRect(), b = s.getBBox();
  return {label: s.getAttribute('aria-label'), w: r.width, h: r.height, children: s.childElementCount,
          marks: s.querySelectorAll('circle, rect, line, text').length, bw: b.width, bh: b.height};
}))"""
LINKS = "JSON.stringify([...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')))"


def gpu_rows() -> list[ResultRow]:
    """A synthetic GPU bench: three levels, failures, a kept reference, skills, floors."""
    rows = []
    for i in range(18):
        level = f"level{1 + i % 3}"
        correct, ref = i % 7 != 3, i % 5 == 4
        se = 0.6 + 0.37 * i
        rows.append(ResultRow(
            problem=f"{level}/{i:02d}_p", level=level, category=("gemm", "conv", "activation", "loss")[i % 4],
            path=f"/x/{i}.py", device="cuda", correct=correct, solution_is_reference=ref or not correct,
            uses_own_kernels=correct and not ref, runtime_ms=0.1 * (i + 1), eager_ms=0.1 * (i + 1) * se,
            compile_ms=0.08 * (i + 1) * se, speedup_vs_eager=se if correct else None,
            speedup_vs_compile=se * 0.8 if correct and i % 6 else None, floor_ms=0.01 * (i + 1) ** 1.3,
            timing_is_cpu=False, gpu="NVIDIA H200", custom_kernels=1 + i % 3, rounds=1 + i % 6,
            wall_s=30.0 + 11 * i, skills_tried=["online-softmax", "gemm-split-k"][: 1 + i % 2],
            skill_won="gemm-split-k" if i % 4 == 1 and not ref and correct else None,
            templates=["fuse-elementwise-chain"] if correct and not ref else [],
            solution=f"{level}/{i:02d}_p/solution.py", report=f"{level}/{i:02d}_p/report.json",
            thread_id=f"t{i}", error="worker died" if i == 10 else None))
    return rows


def cpu_rows() -> list[ResultRow]:
    return [r.model_copy(update={"device": "cpu", "timing_is_cpu": True, "speedup_vs_eager": None,
                                 "speedup_vs_compile": None, "floor_ms": None, "gpu": None})
            for r in gpu_rows()[:4]]


def render(tmp: Path, rows: list[ResultRow]) -> Path:
    for r in rows:
        for rel in (r.solution, r.report):
            assert rel
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text("x")
    return write_report(tmp, rows, summarize(rows), {"device": rows[0].device, "size": "full"})


def console_problems(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Exceptions, console errors/warnings and browser log errors/warnings (e.g. a failed load)."""
    return [e for e in events if e["method"] == "Runtime.exceptionThrown"
            or (e["method"] == "Runtime.consoleAPICalled"
                and e["params"]["type"] in ("error", "warning", "assert"))
            or (e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] in ("error", "warning"))]


# Not "gpu": tests/conftest.py skips any test whose keywords say gpu on a CPU-only machine.
@pytest.mark.parametrize("kind", ["cuda-bench", "cpu-bench"])
def test_report_renders_offline_with_a_clean_console(tmp_path: Path, kind: str) -> None:
    rows = gpu_rows() if kind == "cuda-bench" else cpu_rows()
    page = render(tmp_path / "bench", rows)
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(page.as_uri())
        figures = json.loads(browser.evaluate(FIGURES))
        links = json.loads(browser.evaluate(LINKS))
        time.sleep(0.3)  # let late console messages arrive
        browser.evaluate("1")
    finally:
        browser.close()
    assert len(figures) == 6, figures
    for f in figures:  # every figure has a size, content, and drawn marks
        assert f["w"] > 100 and f["h"] > 20 and f["children"] > 0 and f["marks"] > 0, f
        assert f["bw"] > 0 and f["bh"] > 0, f
    if kind == "cuda-bench":  # real charts, not "nothing to plot" placeholders
        by = {f["label"]: f for f in figures}
        assert by["speedup vs eager per level"]["marks"] > len(rows)
        assert by["achieved time vs speed-of-light floor"]["marks"] > len([r for r in rows if r.correct])
    assert not console_problems(browser.events)
    loaded = {e["params"]["request"]["url"] for e in browser.events
              if e["method"] == "Network.requestWillBeSent"}
    assert loaded <= {page.as_uri()}, f"the page fetched something: {loaded}"
    # One solution and one attempts link per problem, relative, pointing at files in the bench folder.
    assert len(links) == 2 * len(rows)
    assert all(not h.startswith(("/", "http", "file:")) and (page.parent / h).exists() for h in links)


def test_report_escapes_names(tmp_path: Path) -> None:
    rows = [gpu_rows()[0].model_copy(update={"problem": "level1/<b>&x", "stop_reason": '"quoted"'})]
    html = render(tmp_path, rows).read_text()
    assert "<b>&x" not in html and "&lt;b&gt;&amp;x" in html


def test_the_checks_catch_a_broken_page(tmp_path: Path) -> None:
    """The same checks fail on a page with a console error, a failed fetch and an empty figure."""
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body>'
                    '<figure><svg width="0" height="0"></svg></figure><img src="missing.png">'
                    '<script>console.error("boom")</script></body></html>')
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(page.as_uri())
        figures = json.loads(browser.evaluate(FIGURES))
        time.sleep(0.3)
        browser.evaluate("1")
    finally:
        browser.close()
    assert figures[0]["w"] == 0 and figures[0]["children"] == 0
    problems = console_problems(browser.events)
    assert any(e["method"] == "Runtime.consoleAPICalled" for e in problems)
    assert any(e["method"] == "Log.entryAdded" for e in problems), "a failed load is not seen"
