"""The site in a real headless Chromium from file://: no console errors, no request outside the site folder,
every chart drawn, every link resolving, an untrusted log line shown as text. Saves a screenshot."""

from __future__ import annotations

import os
import re
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

    def __init__(self, browser: Any, out: Path, viewport: tuple[int, int] = (1280, 900)) -> None:
        self.out = out.resolve()
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]},
                                           service_workers="block")
        self.requests: list[str] = []
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
        self.requests.append(route.request.url)
        if self._inside(route.request.url):
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def open(self, path: str | Path) -> Any:
        """Load one page; what the page before it recorded is dropped (one context visits many pages: a renderer
        process per page cost more CPU than the pages' own scripts)."""
        self.requests.clear()
        self.outside.clear()
        self.errors.clear()
        self.dialogs.clear()
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


def test_every_page_loads_offline_and_draws_its_charts(browser: Any, site: dict[str, Any],
                                                       seeded: dict[str, Any]) -> None:
    """Every page of the site, each loaded once: its charts drawn, nothing outside the site requested, every
    internal link resolving, and on the pages that hold them an untrusted log line shown as text and the
    wedge-confound page's screenshot (each of those was a test of its own that loaded the same pages again)."""
    pages = _all_pages(site)
    assert len(pages) >= 18
    out = site["out"].resolve()
    xss_run = Path(site["runs"][seeded["ids"]["wedge"]["run_ids"][0]]).resolve()
    wedge = Path(site["hypotheses"]["wedge-confound"]).resolve()
    assert xss_run in {p.resolve() for p in pages} and wedge in {p.resolve() for p in pages}
    charts_seen = checked = 0
    v = Visit(browser, site["out"])
    try:
        for path in pages:
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
            # every internal link resolves (was test_every_internal_link_resolves)
            hrefs = page.eval_on_selector_all(
                "a[href]", "els => els.map(e => new URL(e.getAttribute('href'), document.baseURI).href)")
            assert hrefs, path.name
            for href in hrefs:
                assert href.startswith("file:"), f"{path.name}: {href}"
                target = Path(unquote(urlparse(href).path))
                assert target.resolve().is_relative_to(out), f"{path.name}: {href}"
                assert target.exists(), f"{path.name}: broken link {href}"
                checked += 1
            if path.resolve() == xss_run:  # a script in a log line is shown as text
                logs = page.locator("pre.log").all_inner_texts()
                assert any(synth.XSS_LINE in t for t in logs)
                assert page.evaluate(
                    "[...document.scripts].filter(s => s.textContent.includes('alert(1)')).length") == 0
            if path.resolve() == wedge:
                assert synth.XSS_LINE in page.locator("#reviews").inner_text()
                # saved for review under tests/report/artifacts/ (git-ignored)
                synth.ARTIFACTS.mkdir(exist_ok=True)
                shot = synth.ARTIFACTS / "wedge-confound-stored-runs.png"
                page.screenshot(path=str(shot), full_page=True)
                assert shot.stat().st_size > 20_000
                print(f"screenshot: {shot}")
            assert not v.dialogs and not v.errors
    finally:
        v.close()
    assert charts_seen >= 10
    assert checked > 150


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


def _shot(page: Any, name: str) -> None:
    synth.ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(synth.ARTIFACTS / name), full_page=False)


def test_board_with_five_states_fits_one_screen(browser: Any, rich: dict[str, Any]) -> None:
    v = Visit(browser, rich["out"], viewport=(1280, 800))
    try:
        page = v.open(rich["site"]["index"])
        cols = page.eval_on_selector_all(".board .column", "els => els.map(e => [e.className, "
                                         "...Object.values(e.getBoundingClientRect().toJSON())])")
        assert len(cols) == 5 and "status-invalid" in cols[-1][0]
        boxes = page.eval_on_selector_all(".board .column", "els => els.map(e => e.getBoundingClientRect().toJSON())")
        assert len({round(b["top"]) for b in boxes}) == 1, "the columns wrap onto a second row"
        assert all(b["right"] <= 1280 and b["bottom"] <= 800 for b in boxes), [(b["bottom"], b["right"]) for b in boxes]
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        _shot(page, "board-1280.png")
        assert not v.errors and not v.outside
    finally:
        v.close()


def test_hypothesis_pages_do_not_scroll_sideways_at_390_px(browser: Any, site: dict[str, Any],
                                                           rich: dict[str, Any]) -> None:
    for out, paths in ((site["out"], site["hypotheses"]), (rich["out"], rich["site"]["hypotheses"])):
        v = Visit(browser, out, viewport=(390, 844))
        try:
            for hid, path in paths.items():
                page = v.open(path)
                width = page.evaluate("document.documentElement.scrollWidth")
                wide = page.evaluate("[...document.querySelectorAll('main *')].filter(e => "
                                     "e.getBoundingClientRect().right > 391 && !e.closest('.scroll, .chart-box, pre'))"
                                     ".slice(0, 3).map(e => e.tagName + '.' + e.className)")
                assert width <= 390, f"{hid} is {width} px wide at 390 px: {wide}"
                if hid == "wedge-confound":
                    _shot(page, "hypothesis-390.png")
            assert not v.errors and not v.outside
        finally:
            v.close()


def test_chart_runtime_loads_only_on_pages_with_a_chart(browser: Any, rich: dict[str, Any]) -> None:
    with_charts = without = 0
    v = Visit(browser, rich["out"])
    try:
        for path in _all_pages({"out": rich["out"]}):
            page = v.open(path)
            loaded = any(u.endswith("/assets/vega-bundle.js") for u in v.requests)
            charts = page.locator("div.chart").count()
            assert loaded == bool(charts), f"{path.name}: {charts} chart(s), runtime loaded: {loaded}"
            with_charts += bool(charts)
            without += not charts
    finally:
        v.close()
    assert with_charts >= 3 and without >= 10


def test_lineage_draws_parent_and_tested_by_edges_with_whole_labels(browser: Any, rich: dict[str, Any]) -> None:
    reg = rich["registry"]
    parents = {(h.parent, h.id) for h in reg.hypotheses if h.parent}
    tested = {(h.id, a.tested_by) for h in reg.hypotheses for a in h.assumptions if a.tested_by}
    assert tested
    v = Visit(browser, rich["out"])
    try:
        page = v.open(rich["site"]["lineage"])
        drawn = page.eval_on_selector_all("svg.lineage path.edge",
                                          "els => els.map(e => [e.dataset.parent, e.dataset.child])")
        assert {tuple(e) for e in drawn} == parents and len(drawn) == len(parents)
        drawn = page.eval_on_selector_all("svg.lineage path.tested",
                                          "els => els.map(e => [e.dataset.hypothesis, e.dataset.testedBy])")
        assert {tuple(e) for e in drawn} == tested
        assert page.eval_on_selector("svg.lineage path.tested", "e => getComputedStyle(e).strokeDasharray") != "none"
        nodes = page.eval_on_selector_all("svg.lineage a.node", """els => els.map(a => {
            const t = a.querySelector('text.nid'), r = a.querySelector('rect');
            return [a.dataset.id, t.textContent, t.getComputedTextLength(), r.width.baseVal.value]; })""")
        assert len(nodes) == len(reg.hypotheses)
        for hid, label, text_w, rect_w in nodes:
            assert label == hid, f"label {label!r} cut"
            assert text_w + 10 <= rect_w, f"{hid}: label {text_w:.0f} px in a {rect_w:.0f} px node"
        _shot(page, "lineage-1280.png")
        assert not v.errors and not v.outside
    finally:
        v.close()


def test_hypothesis_page_explains_checks_assumptions_and_metrics(browser: Any, rich: dict[str, Any]) -> None:
    v = Visit(browser, rich["out"])
    try:
        page = v.open(rich["site"]["hypotheses"]["wedge-confound"])
        row = page.locator("table.checks tr", has_text="attrition").inner_text()
        assert row.startswith("FLAG") and "does not change the verdict: falsified stands" in row
        assert "flagged a problem that does not change it (attrition)" in page.locator(".checks-summary").inner_text()
        for i in range(page.locator("figure.chart-box").count()):
            fig = page.locator("figure.chart-box").nth(i)
            assert (fig.locator("table.mini th").nth(1).inner_text()
                    == fig.locator("div.chart").get_attribute("data-metric"))
        page = v.open(rich["site"]["hypotheses"]["hicache-bf16-race"])
        item = page.locator("#assumptions li", has_text="The wedge does not explain the corruption").inner_text()
        assert ("tested by wedge-confound, which claims “The HiCache+bf16 corruption is a side effect of the NIXL "
                "abort wedge.” — that claim is falsified") in item
        assert "not on this assumption" in item
        assert not v.errors and not v.outside
    finally:
        v.close()


def test_confound_page_prints_no_raw_nulls(browser: Any, rich: dict[str, Any]) -> None:
    v = Visit(browser, rich["out"])
    try:
        page = v.open(rich["site"]["confounds"])
        text = page.locator("main").inner_text()
        assert "units with the outcome" in text  # the imported rows without units are in the tables
        assert not re.search(r"\bnull\b|\bNone\b", text), re.findall(r".{0,60}\b(?:null|None)\b.{0,20}", text)[:3]
        for i in range(page.locator("article.finding.flagged").count()):
            f = page.locator("article.finding.flagged").nth(i).inner_text()
            assert "separat" in f.split("\n", 1)[1], f  # a proposal, or why there is none
    finally:
        v.close()


def test_imported_run_shows_provenance_as_a_table(browser: Any, rich: dict[str, Any]) -> None:
    v = Visit(browser, rich["out"])
    try:
        imported = [p for p in rich["site"]["runs"].values()
                    if "Imported evidence" in Path(p).read_text(encoding="utf-8")]
        assert len(imported) == 6
        page = v.open(imported[0])
        rows = dict(r.split("\t", 1) for r in page.locator("#provenance tr").all_inner_texts())
        assert rows["file"] == "seed-runs.csv" and len(rows["sha256"]) == 64 and rows["line"].isdigit()
        assert "{" not in page.locator("#meta").inner_text()
    finally:
        v.close()


def test_dsml_bar_in_a_log_renders_with_a_font_that_has_it(browser: Any, rich: dict[str, Any]) -> None:
    """U+FF5C is not in DejaVu or Liberation: the page's font stack must name a fallback that has it."""
    import subprocess

    have = set(subprocess.run(["fc-list", ":charset=ff5c", "family"], capture_output=True, text=True,
                              check=True).stdout.replace(",", "\n").split("\n")) - {""}
    assert have, "no installed font has U+FF5C (scripts/setup.sh --test installs fonts-droid-fallback)"
    run_id = rich["ids"]["dsml"]["run_ids"][0]
    v = Visit(browser, rich["out"])
    try:
        page = v.open(rich["site"]["runs"][run_id])
        pre = page.locator("pre.log", has_text="DSML")
        stack = pre.evaluate("e => getComputedStyle(e).fontFamily")
        assert any(f in stack for f in have), f"no font with U+FF5C in the stack {stack}"
        page.evaluate("""() => {
            const pre = [...document.querySelectorAll('pre.log')].find(p => p.textContent.includes('DSML'));
            pre.innerHTML = pre.innerHTML.replace(/｜/g, '<span class="bar-probe">｜</span>'); }""")
        cdp = v.context.new_cdp_session(page)
        doc = cdp.send("DOM.getDocument")
        cdp.send("CSS.enable")
        node = cdp.send("DOM.querySelector", {"nodeId": doc["root"]["nodeId"], "selector": "span.bar-probe"})
        fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node["nodeId"]})["fonts"]
        assert fonts and all(f["familyName"] in have for f in fonts), fonts
        _shot(page, "run-dsml.png")
    finally:
        v.close()


LONG_WORD = "x" * 400
LONG_SENTENCE = " ".join(["the transfer aborts the wedge leaves, counted from its WaitingForInput lines"] * 8)


@pytest.fixture(scope="module")
def long_site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A site whose agent-repro metrics carry a 400-character word and a long sentence as descriptions; built once
    and only read by the tests (one per viewport)."""
    from workbench.registry import load_registry
    from workbench.report import build_site
    from workbench.store import open_store

    tmp_path = tmp_path_factory.mktemp("long-description")
    root = synth.copy_workbench(tmp_path / "wb")
    exp = root / "experiments" / "agent-repro.yaml"
    text = exp.read_text(encoding="utf-8")
    for old, new in (("description: leak / sessions}", f"description: {LONG_WORD}}}"),
                     ("description: WaitingForInput lines in the decode log during the run}",
                      f'description: "{LONG_SENTENCE}"}}')):
        assert old in text
        text = text.replace(old, new)
    exp.write_text(text, encoding="utf-8")
    reg = load_registry(root)
    store = open_store(str(tmp_path / "wb.duckdb"))
    try:
        with store.session() as s:
            synth.add_ab_execution(s, reg, "wedge-confound", art_dir=root / ".wb" / "artifacts" / "long", replicates=1,
                                   aborts={"control": 3, "treatment": 0})
        result = build_site(store, reg, tmp_path / "site")
    finally:
        store.dispose()
    return {"out": tmp_path / "site", "site": result}


@pytest.mark.parametrize("viewport", [(1280, 900), (390, 844)])
def test_a_long_metric_description_wraps_inside_its_chart_card(browser: Any, long_site: dict[str, Any],
                                                               viewport: tuple[int, int]) -> None:
    """A 400-character word and a long sentence as descriptions: each chart card stays as wide as its chart
    and table (the text wraps under them), nothing in it overflows, and the page never scrolls sideways."""
    result = long_site["site"]
    v = Visit(browser, long_site["out"], viewport=viewport)
    try:
        page = v.open(result["hypotheses"]["wedge-confound"])
        cards = page.evaluate("""[...document.querySelectorAll('figure.chart-box')].map(f => ({
            desc: (f.querySelector('.metric-desc') || {}).textContent || '',
            card: f.getBoundingClientRect().width, overflow: f.scrollWidth - f.clientWidth,
            content: Math.max(f.querySelector('.chart').getBoundingClientRect().width,
                              f.querySelector('table').getBoundingClientRect().width)}))""")
        long = [c for c in cards if LONG_WORD in c["desc"] or LONG_SENTENCE in c["desc"]]
        assert len(long) >= 2, [c["desc"][:40] for c in cards]
        for c in cards:
            assert c["card"] <= viewport[0] and c["overflow"] <= 0, c
            # the card is its chart's and table's width plus its padding and border: the text does not widen it
            assert c["card"] <= c["content"] + 20, c
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport[0]
        _shot(page, f"long-description-{viewport[0]}.png")
        assert not v.errors and not v.outside
    finally:
        v.close()
