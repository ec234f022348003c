"""A metric's description stands beside its name wherever the metric is listed: `wb hypothesis show` (text and
--json), the hypothesis page (predictions, guards, charts, the runs table), the run page and the Markdown summary.
A description is text from a YAML file: it is escaped for the HTML and the Markdown it lands in."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import synth

AGENT = {"corruption_rate": "leak / sessions",
         "aborts": "the transfer aborts the wedge leaves (its WaitingForInput lines)",
         "leak": "sessions whose tool call was token salad"}


def _section(text: str, sid: str) -> str:
    return text.split(f'<section id="{sid}">')[1].split("</section>")[0]


def test_hypothesis_show_names_each_metric_with_its_description(cli) -> None:
    code, out, err = cli("hypothesis", "show", "wedge-confound")
    assert code == 0, err
    assert f"  metric corruption_rate (proportion): {AGENT['corruption_rate']}" in out
    assert f"  metric aborts (count): {AGENT['aborts']}" in out
    code, out, err = cli("hypothesis", "show", "wedge-confound", "--json")
    assert code == 0, err
    metrics = json.loads(out)["metrics"]
    assert metrics["corruption_rate"] == {"kind": "proportion", "description": AGENT["corruption_rate"]}
    assert metrics["aborts"]["description"] == AGENT["aborts"]


def test_hypothesis_page_shows_descriptions_beside_metric_names(site: dict[str, Any]) -> None:
    text = Path(site["hypotheses"]["wedge-confound"]).read_text(encoding="utf-8")
    predictions = _section(text, "predictions")
    assert f'<span class="metric-desc"><code>corruption_rate</code>: {AGENT["corruption_rate"]}</span>' in predictions
    assert f'<span class="metric-desc"><code>aborts</code>: {AGENT["aborts"]}</span>' in predictions  # the guard
    charts = _section(text, "charts")
    assert f'<p class="metric-desc">{AGENT["corruption_rate"]}</p>' in charts
    assert f'<th class="num" title="{AGENT["leak"]}">leak</th>' in _section(text, "runs")


def test_runs_list_names_what_each_metric_column_measures(site: dict[str, Any]) -> None:
    text = Path(site["runs_list"]).read_text(encoding="utf-8")
    assert f'<th class="num" title="{AGENT["corruption_rate"]}">corruption_rate</th>' in text


def test_run_page_shows_each_metric_description(site: dict[str, Any], seeded: dict[str, Any]) -> None:
    page = next(p for p in site["runs"].values() if "corruption_rate" in Path(p).read_text(encoding="utf-8"))
    metrics = _section(Path(page).read_text(encoding="utf-8"), "metrics")
    assert re.search(r'<tr><td><code>leak</code></td><td class="num">[^<]*</td>'
                     rf'<td class="muted metric-desc">{re.escape(AGENT["leak"])}</td></tr>', metrics), metrics


def test_markdown_summary_has_a_description_column(cli, seeded: dict[str, Any]) -> None:
    code, md, err = cli("report", "--format", "md", "--hypothesis", "wedge-confound",
                        env={"WB_ROOT": str(seeded["root"]), "WB_DB": str(seeded["db"])})
    assert code == 0, err
    assert "| metric | control | treatment | what it measures |" in md
    row = next(line for line in md.splitlines() if line.startswith("| corruption_rate | "))
    assert row.endswith(f"| {AGENT['corruption_rate']} |")


HOSTILE = 'leak <b onmouseover="x()">&amp;</b> | sessions\nsecond line'


def test_descriptions_are_escaped_in_html_and_markdown(tmp_path: Path) -> None:
    from workbench.registry import load_registry
    from workbench.report import build_site
    from workbench.report.markdown import hypothesis_markdown
    from workbench.store import open_store

    root = synth.copy_workbench(tmp_path / "wb")
    exp = root / "experiments" / "agent-repro.yaml"
    text = exp.read_text(encoding="utf-8")
    assert "description: leak / sessions}" in text
    exp.write_text(text.replace("description: leak / sessions}", f"description: {json.dumps(HOSTILE)}}}"),
                   encoding="utf-8")
    reg = load_registry(root)
    store = open_store(str(tmp_path / "wb.duckdb"))
    try:
        with store.session() as s:
            synth.add_ab_execution(s, reg, "wedge-confound", art_dir=tmp_path / "logs", replicates=1, seed=2,
                                   leak_rate={"control": 0.1, "treatment": 0.1})
        result = build_site(store, reg, tmp_path / "site")
        md = hypothesis_markdown(store, reg, "wedge-confound")
    finally:
        store.dispose()
    page = Path(result["hypotheses"]["wedge-confound"]).read_text(encoding="utf-8")
    escaped = "leak &lt;b onmouseover=&#34;x()&#34;&gt;&amp;amp;&lt;/b&gt; | sessions"
    assert escaped in page and "<b onmouseover" not in page
    runs = [Path(p).read_text(encoding="utf-8") for p in result["runs"].values()]
    assert any(escaped in r for r in runs) and not any("<b onmouseover" in r for r in runs)
    listing = Path(result["runs_list"]).read_text(encoding="utf-8")
    assert f'title="{escaped} second line">corruption_rate</th>' in listing and "<b onmouseover" not in listing
    assert "<b onmouseover" not in md and "&lt;b onmouseover" in md
    row = next(line for line in md.splitlines() if line.startswith("| corruption_rate | "))
    assert row.endswith("\\| sessions second line |"), row  # the cell stays one cell on one line


def test_a_metric_without_description_says_how_to_give_one_once(cli, workbench_dir: Path) -> None:
    # `metric corrupt_rate (proportion): (no description)`, and neither the README nor docs/own-service.md said how
    # to give one. The first such line now names the field; the docs, where metrics are explained, show it.
    exp = workbench_dir / "experiments" / "agent-repro.yaml"
    text = exp.read_text()
    for old in (", description: leak / sessions}",
                ", guard: true, description: the transfer aborts the wedge leaves (its WaitingForInput lines)}"):
        assert old in text, old
        text = text.replace(old, ", guard: true}" if "guard" in old else "}")
    exp.write_text(text)
    code, out, err = cli("hypothesis", "show", "wedge-confound", "--root", str(workbench_dir))
    assert code == 0, err
    lines = [ln for ln in out.splitlines() if ln.startswith("  metric ")]
    assert lines[0] == ("  metric corruption_rate (proportion): (no description: give the metric a `description:` "
                        "in experiments/agent-repro.yaml)"), lines
    assert lines[1] == "  metric aborts (count): (no description)", lines
    docs = Path(__file__).resolve().parents[2] / "docs" / "own-service.md"
    assert "description: share of clients that read a stale value" in docs.read_text()
