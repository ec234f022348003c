"""What a hypothesis page and its Markdown say about executions of other modes than the fixed one: an A/A
check's outcome beside the executions, which interval a sequential verdict used, rates read one way."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest

import synth

HID = "wedge-confound"


def _record(store: Any, registry: Any, execution_id: int) -> None:
    """The verdict `wb hypothesis run` records at the end of an execution: the real analysis of its runs."""
    from workbench.analysis.stored import analyze_stored, record_verdict

    record_verdict(store, analyze_stored(store, registry, HID, execution_id=execution_id), execution_id=execution_id)


@pytest.fixture(scope="module")
def modes(tmp_path_factory: pytest.TempPathFactory, cache_home: Path) -> dict[str, Any]:
    """wedge-confound with a sequential execution (its verdict holds the status), an A/A execution with no false
    alarm and one with a false alarm; the hypothesis page built from it and its Markdown."""
    from workbench.registry import load_registry
    from workbench.report import build_site
    from workbench.report.markdown import hypothesis_markdown
    from workbench.store import open_store

    base = tmp_path_factory.mktemp("modes")
    root = synth.copy_workbench(base / "wb")
    registry = load_registry(root)
    db = str(base / "wb.duckdb")
    art = root / ".wb" / "artifacts"
    store = open_store(db)
    try:
        with store.session() as s:
            seq = synth.add_ab_execution(s, registry, HID, art_dir=art, replicates=2, sessions=40, seed=1,
                                         leak_rate={"control": 0.15, "treatment": 0.2}, mode="sequential")
            quiet = synth.add_ab_execution(s, registry, HID, art_dir=art, replicates=1, sessions=40, seed=2,
                                           leak_rate={"control": 0.15, "control_aa": 0.15}, mode="aa")
            alarm = synth.add_ab_execution(s, registry, HID, art_dir=art, replicates=1, sessions=40, seed=3,
                                           leak_rate={"control": 0.02, "control_aa": 0.6}, mode="aa")
        for ex in (seq, quiet, alarm):
            _record(store, registry, ex["execution_id"])
        result = build_site(store, registry, base / "reports")
        md = hypothesis_markdown(store, registry, HID)
    finally:
        store.dispose()
    raw = Path(result["hypotheses"][HID]).read_text(encoding="utf-8")
    return {"seq": seq, "quiet": quiet, "alarm": alarm, "raw": raw, "md": md}


def _text(raw: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", raw)).split())


def _section(raw: str, sid: str) -> str:
    return _text(raw.split(f'<section id="{sid}">', 1)[1].split("</section>", 1)[0])


def test_aa_executions_are_listed_with_their_outcome_and_runs(modes: dict[str, Any]) -> None:
    raw, md = modes["raw"], modes["md"]
    table = raw.split('<table class="executions">', 1)[1].split("</table>", 1)[0]
    rows = {int(m.group(1)): m.group(0) for m in re.finditer(r"<tr><td>(\d+)</td>.*?</tr>", table, re.S)}
    quiet, alarm = modes["quiet"], modes["alarm"]
    for ex, words in ((quiet, "no false alarm; noise floor corruption_rate ±"),
                      (alarm, "false alarm between identical arms: corruption_rate")):
        row = _text(rows[ex["execution_id"]])
        assert "A/A: the control arm ran twice" in row, row
        assert words in row, row
        for rid in ex["run_ids"]:
            assert f'href="../runs/{rid}.html"' in rows[ex["execution_id"]]
    # the hypothesis's own verdict is the sequential execution's; the A/A checks stay out of it
    assert f"execution {modes['seq']['execution_id']}" in _section(raw, "verdict")
    assert "false alarm" not in _section(raw, "verdict")
    lines = {int(m.group(1)): m.group(0) for m in re.finditer(r"^- execution (\d+) .*$", md, re.M)}
    assert "A/A: the control arm ran twice" in lines[quiet["execution_id"]]
    assert "no false alarm" in lines[quiet["execution_id"]]
    assert "false alarm between identical arms" in lines[alarm["execution_id"]]
    assert "runs " + ", ".join(map(str, alarm["run_ids"])) in lines[alarm["execution_id"]]
    assert "A/A" not in lines[modes["seq"]["execution_id"]]


def test_a_sequential_page_says_which_interval_decided(modes: dict[str, Any]) -> None:
    # The verdict used the confidence sequence; the arm table's Wilson interval of the same count only describes.
    raw, md = modes["raw"], modes["md"]
    preds, charts = _section(raw, "predictions"), _section(raw, "charts")
    assert "confidence sequence 95% (the interval the verdict used)" in preds, preds
    assert "Wilson 95%" in charts
    assert all("descriptive; the verdict used the confidence sequence" in cell
               for cell in re.findall(r"Wilson 95%[^|]*?\)", charts)), charts
    table = md.split("| metric |", 1)[1]
    assert "confidence sequence 95% (the interval the verdict used)" in md
    assert re.search(r"Wilson 95%[^|]*descriptive; the verdict used the confidence sequence", table), table


def test_rates_read_as_percentages_on_the_page_and_in_markdown(modes: dict[str, Any]) -> None:
    # The verdict's own text gives a rate as 17.5%: its interval, the runs table and the arm table read alike.
    raw, md = modes["raw"], modes["md"]
    for text in (_section(raw, "verdict"), md):
        assert re.search(r"\d+/\d+ = \d+\.\d% \(confidence sequence 95% \\?\[\d+\.\d%, \d+\.\d%\\?\]", text), text
        assert not re.search(r"95% \\?\[0\.\d+, ", text), text
    runs = raw.split('<table class="runs">', 1)[1].split("</table>", 1)[0]
    col = [c for c in re.findall(r"<th[^>]*>([^<]+)</th>", runs)].index("corruption_rate")
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row)[col] for row in re.findall(r"<tr><td>.*?</tr>", runs, re.S)]
    assert cells and all(re.fullmatch(r"\d+\.\d%", c) for c in cells), cells
