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


DIFF = "abort-fix-points"  # a prediction on the difference of two arms' rates
DIFF_HYPOTHESIS = """
  - id: abort-fix-points
    parent: wedge-confound
    claim: The abort fix lowers the corruption rate by at least five points.
    experiment: agent-repro
    isolates: nixl_abort_fix
    arms:
      control: {nixl_abort_fix: off}
      treatment: {nixl_abort_fix: on}
    hold: {index_k_dtype: bf16, hicache: on}
    predicts:
      - {metric: corruption_rate, difference: [control, treatment], at_least: 0.05}
"""


def _record(store: Any, registry: Any, execution_id: int, hid: str = HID) -> None:
    """The verdict `wb hypothesis run` records at the end of an execution: the real analysis of its runs."""
    from workbench.analysis.stored import analyze_stored, record_verdict

    record_verdict(store, analyze_stored(store, registry, hid, execution_id=execution_id), execution_id=execution_id)


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
    (root / "hypotheses.yaml").write_text((root / "hypotheses.yaml").read_text() + DIFF_HYPOTHESIS)
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
            diff = synth.add_ab_execution(s, registry, DIFF, art_dir=art, replicates=2, sessions=40, seed=4,
                                          leak_rate={"control": 0.3, "treatment": 0.02})
        for ex in (seq, quiet, alarm):
            _record(store, registry, ex["execution_id"])
        _record(store, registry, diff["execution_id"], DIFF)
        result = build_site(store, registry, base / "reports")
        md = hypothesis_markdown(store, registry, HID)
        diff_md = hypothesis_markdown(store, registry, DIFF)
    finally:
        store.dispose()
    raw = Path(result["hypotheses"][HID]).read_text(encoding="utf-8")
    return {"seq": seq, "quiet": quiet, "alarm": alarm, "raw": raw, "md": md, "diff_md": diff_md,
            "diff_raw": Path(result["hypotheses"][DIFF]).read_text(encoding="utf-8"),
            "run_page": Path(result["runs"][seq["run_ids"][0]]).read_text(encoding="utf-8"),
            "runs_list": Path(result["runs_list"]).read_text(encoding="utf-8")}


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


# The sequential execution replays one workload in 2 runs: its counts were divided by that design effect.
SEQ = "confidence sequence 95%, widened by the design effect 2"


def test_a_sequential_page_says_which_interval_decided(modes: dict[str, Any]) -> None:
    # The verdict used the confidence sequence; the arm table's Wilson interval of the same count only describes.
    raw, md = modes["raw"], modes["md"]
    preds, charts = _section(raw, "predictions"), _section(raw, "charts")
    assert f"{SEQ} (the interval the verdict used)" in preds, preds
    assert "Wilson 95%" in charts
    assert all("descriptive; the verdict used the confidence sequence" in cell
               for cell in re.findall(r"Wilson 95%[^|]*?\)", charts)), charts
    table = md.split("| metric |", 1)[1]
    assert f"{SEQ} (the interval the verdict used)" in md
    assert re.search(r"Wilson 95%[^|]*descriptive; the verdict used the confidence sequence", table), table


def test_rates_read_as_percentages_on_the_page_and_in_markdown(modes: dict[str, Any]) -> None:
    # The verdict's own text gives a rate as 17.5%: its interval, the runs table and the arm table read alike.
    raw, md = modes["raw"], modes["md"]
    for text in (_section(raw, "verdict"), md):
        assert re.search(r"\d+/\d+ = \d+\.\d% \(" + re.escape(SEQ) + r" \\?\[\d+\.\d%, \d+\.\d%\\?\]", text), text
        assert not re.search(r"95% \\?\[0\.\d+, ", text), text
    runs = raw.split('<table class="runs">', 1)[1].split("</table>", 1)[0]
    col = [c for c in re.findall(r"<th[^>]*>([^<]+)</th>", runs)].index("corruption_rate")
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row)[col] for row in re.findall(r"<tr><td>.*?</tr>", runs, re.S)]
    assert cells and all(re.fullmatch(r"\d+\.\d%", c) for c in cells), cells


def test_regions_differences_and_noise_floors_of_rates_read_as_the_rates_beside_them(modes: dict[str, Any]) -> None:
    # Beside 17.5% the region read "<= 0.02", a difference "+0.262 [0.113, 0.391]" and the noise floor "±0.114".
    raw, md = modes["raw"], modes["md"]
    for text in (_section(raw, "predictions"), _section(raw, "verdict"), md):
        assert "corruption_rate (treatment) <= 0.02 (2%)" in text, text
    quiet, alarm = (_text(raw).split(f"{modes[k]['execution_id']} A/A", 1)[1] for k in ("quiet", "alarm"))
    assert re.match(r"[^|]*?no false alarm; noise floor corruption_rate ±\d+\.\d points ", quiet), quiet[:300]
    assert re.match(r"[^|]*?difference interval \[[+-]\d+\.\d, [+-]\d+\.\d\] points excludes 0", alarm), alarm[:300]
    assert re.search(r"noise floor corruption_rate ±\d+\.\d points;", md), md
    assert re.search(r"difference interval \\?\[[+-]\d+\.\d, [+-]\d+\.\d\\?\] points excludes 0", md), md
    diff_raw, diff_md = modes["diff_raw"], modes["diff_md"]
    points = r"\+\d+\.\d points \\?\[[+-]\d+\.\d, \+\d+\.\d\\?\] points Newcombe 95%"
    for text in (_section(diff_raw, "predictions"), diff_md):
        assert "corruption_rate (control - treatment) >= 0.05 (+5 points)" in text, text
        assert re.search(points, text), text
    for text in (_section(diff_raw, "verdict"), diff_md):
        # Two runs of one workload a side count as one run each (the label says how the interval was widened).
        assert re.search(r"a difference of \+\d+\.\d points \(Newcombe 95%, widened by the design effect 2 "
                         r"\\?\[[+-]\d+\.\d, \+\d+\.\d\\?\] points", text), text


def test_a_run_page_and_the_runs_list_give_a_rate_in_percent(modes: dict[str, Any]) -> None:
    # They gave corruption_rate as a fraction (0.15) where the hypothesis page and the verdict give 15.0%.
    row = re.search(r"<code>corruption_rate</code></td><td class=\"num\">([^<]*)</td>", modes["run_page"])
    assert row and re.fullmatch(r"\d+\.\d%", row.group(1)), row and row.group(1)
    assert re.search(r"<code>sessions</code></td><td class=\"num\">40</td>", modes["run_page"])
    runs = modes["runs_list"].split("<table", 1)[1].split("</table>", 1)[0]
    col = re.findall(r"<th[^>]*>([^<]+)</th>", runs).index("corruption_rate")
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r)[col] for r in re.findall(r"<tr><td>.*?</tr>", runs, re.S)]
    assert cells and all(re.fullmatch(r"\d+\.\d%", c) for c in cells), cells


def test_an_aa_execution_without_a_verdict_says_truly_whether_resume_takes_it() -> None:
    """An A/A execution with no verdict read "to finish it: wb hypothesis run H --resume", with no --db or --root,
    though --resume takes the newest stopped execution (none a finished one followed), which may be another one,
    or none. The page names the execution and says whether the resume takes it."""
    from workbench.report.data import StoreData
    from workbench.report.hypothesis_page import _aa_outcome

    h = "wedge-confound"
    data = StoreData(executions={1: {"id": 1, "hypothesis_id": h, "mode": "aa", "status": "interrupted"},
                                 2: {"id": 2, "hypothesis_id": h, "mode": "fixed", "status": "interrupted"}})
    older = _aa_outcome(data, data.executions[1])
    assert "to finish it" not in older and "execution 1 is not" in older, older
    assert "`wb hypothesis run wedge-confound --resume` resumes only the newest stopped execution (2)" in older, older
    data.executions.pop(2)
    newest = _aa_outcome(data, data.executions[1])
    assert ("no verdict recorded; `wb hypothesis run wedge-confound --resume` (with the --db and --root of this "
            "report) resumes it, the newest stopped execution") in newest, newest
    data.executions[2] = {"id": 2, "hypothesis_id": h, "mode": "fixed", "status": "done"}
    superseded = _aa_outcome(data, data.executions[1])
    assert "execution 1 is not" in superseded and "finished" in superseded and "--resume`" in superseded, superseded
    data.executions = {1: {"id": 1, "hypothesis_id": h, "mode": "aa", "status": "refused"}}
    assert _aa_outcome(data, data.executions[1]) == "no verdict recorded (refused: nothing ran)"
