"""The site in a real headless Chromium from file://: no console errors, no request outside the site folder,
every chart drawn, every link resolving, an untrusted log line shown as text. Saves a screenshot."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

import synth

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"{CHROMIUM} is absent (Debian's chromium package; .ci/run installs it)")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


class Visit:
    """One page load with every request, console message, page error and dialog recorded."""

    def __init__(self, browser: Any, out: Path) -> None:
        self.out = out.resolve()
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
        self.page = self.context.new_page()
        self.outside: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.context.route("**/*", self._route)
        self.page.on("console", lambda m: self.errors.append(f"console.{m.type}: {m.text}")
                     if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url}")
                     if not r.url.startswith("data:") else None)

        def on_dialog(d: Any) -> None:
            self.dialogs.append(d.message)
            d.dismiss()

        self.page.on("dialog", on_dialog)

    def _inside(self, url: str) -> bool:
        parsed = urlparse(url)
        if parsed.scheme == "data":
            return True
        if parsed.scheme != "file":
            return False
        return Path(unquote(parsed.path)).resolve().is_relative_to(self.out)

    def _route(self, route: Any) -> None:
        if self._inside(route.request.url):
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def open(self, path: str | Path) -> Any:
        self.page.goto(Path(path).resolve().as_uri(), wait_until="load", timeout=20_000)
        charts = self.page.locator("div.chart").count()
        if charts:
            self.page.wait_for_function(
                "n => document.querySelectorAll('div.chart[data-rendered], div.chart.chart-error').length >= n",
                arg=charts, timeout=20_000)
        return self.page

    def close(self) -> None:
        self.context.close()


def _all_pages(site: dict[str, Any]) -> list[Path]:
    return sorted(p for p in site["out"].rglob("*.html") if "artifacts" not in p.relative_to(site["out"]).parts)


def test_every_page_loads_offline_and_draws_its_charts(browser: Any, site: dict[str, Any]) -> None:
    pages = _all_pages(site)
    assert len(pages) >= 18
    charts_seen = 0
    for path in pages:
        v = Visit(browser, site["out"])
        try:
            page = v.open(path)
            failed = page.locator("div.chart.chart-error").count()
            assert failed == 0, f"{path.name}: {page.locator('div.chart.chart-error').first.inner_text()}"
            for i in range(page.locator("div.chart").count()):
                chart = page.locator("div.chart").nth(i)
                marks = chart.locator("svg g.mark-symbol path, svg g.mark-rule line").count()
                assert marks >= 2, f"{path.name}: chart {chart.get_attribute('data-metric')} drew {marks} marks"
                charts_seen += 1
            assert not v.errors, f"{path.name}: {v.errors}"
            assert not v.outside, f"{path.name} requested outside the site: {v.outside}"
            assert not v.dialogs
        finally:
            v.close()
    assert charts_seen >= 10


def test_every_internal_link_resolves(browser: Any, site: dict[str, Any]) -> None:
    out = site["out"].resolve()
    checked = 0
    v = Visit(browser, site["out"])
    try:
        for path in _all_pages(site):
            v.page.goto(path.resolve().as_uri(), wait_until="domcontentloaded")
            hrefs = v.page.eval_on_selector_all(
                "a[href]", "els => els.map(e => new URL(e.getAttribute('href'), document.baseURI).href)")
            assert hrefs, path.name
            for href in hrefs:
                assert href.startswith("file:"), f"{path.name}: {href}"
                target = Path(unquote(urlparse(href).path))
                assert target.resolve().is_relative_to(out), f"{path.name}: {href}"
                assert target.exists(), f"{path.name}: broken link {href}"
                checked += 1
    finally:
        v.close()
    assert checked > 150


def test_script_in_a_log_line_is_shown_as_text(browser: Any, site: dict[str, Any], seeded: dict[str, Any]) -> None:
    v = Visit(browser, site["out"])
    try:
        page = v.open(site["runs"][seeded["ids"]["wedge"]["run_ids"][0]])
        logs = page.locator("pre.log").all_inner_texts()
        assert any(synth.XSS_LINE in t for t in logs)
        assert page.evaluate("[...document.scripts].filter(s => s.textContent.includes('alert(1)')).length") == 0
        page = v.open(site["hypotheses"]["wedge-confound"])
        assert synth.XSS_LINE in page.locator("#reviews").inner_text()
        assert not v.dialogs and not v.errors
    finally:
        v.close()


def test_screenshot_of_the_wedge_confound_page(browser: Any, site: dict[str, Any]) -> None:
    """Saved for review under tests/report/artifacts/ (git-ignored)."""
    v = Visit(browser, site["out"])
    try:
        page = v.open(site["hypotheses"]["wedge-confound"])
        synth.ARTIFACTS.mkdir(exist_ok=True)
        shot = synth.ARTIFACTS / "wedge-confound-stored-runs.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 20_000
        print(f"screenshot: {shot}")
    finally:
        v.close()


@pytest.mark.slow
def test_wedge_confound_after_a_pdsim_run(browser: Any, tmp_path: Path) -> None:
    """`wb hypothesis run wedge-confound` on the embedded deployment (small: 16 sessions, 1 replicate) ends by
    building the site and printing the page; that page loads clean and is saved as a screenshot."""
    import subprocess
    import sys

    if importlib_missing("workbench.runner") or importlib_missing("workbench.sim"):
        pytest.skip("the runner or pdsim is not installed")
    root = synth.copy_workbench(tmp_path / "wb")
    exp = root / "experiments" / "agent-repro.yaml"
    text = exp.read_text()
    assert "--sessions 80" in text
    exp.write_text(text.replace("--sessions 80", "--sessions 16"))
    env = {**os.environ, "WB_ROOT": str(root), "WB_DB": str(tmp_path / "wb.duckdb")}
    wb = shutil.which("wb") or ""
    cmd = [wb] if wb else [sys.executable, "-m", "workbench.cli.main"]
    proc = subprocess.run(cmd + ["hypothesis", "run", "wedge-confound", "--replicates", "1", "--seed", "7", "--report"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    page_path = root / "reports" / "hypotheses" / "wedge-confound.html"
    assert str(page_path) in proc.stdout, proc.stdout + proc.stderr
    v = Visit(browser, root / "reports")
    try:
        page = v.open(page_path)
        assert "wedge-confound" in page.title()
        assert page.locator("#runs tbody tr").count() >= 2
        synth.ARTIFACTS.mkdir(exist_ok=True)
        shot = synth.ARTIFACTS / "wedge-confound-pdsim.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}")
        assert not v.errors and not v.outside
    finally:
        v.close()


def importlib_missing(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is None
