"""A run page shows the metrics its experiment derives (as `wb runs show` does): apart from the measured ones,
marked derived, escaped."""

from __future__ import annotations

import html
import re
from pathlib import Path


def _part(page: str, start: str, end: str) -> str:
    at = page.index(start)
    return page[at:page.index(end, at)]


def test_a_run_page_shows_derived_metrics_apart_and_marked(workbench_dir: Path, cli, tmp_path: Path) -> None:
    # The run page listed only what was measured: corruption_rate and error_rate, which `wb runs show` gives
    # "by agent-repro's definitions, not measured", were nowhere on it.
    from workbench.store import open_store, records

    exp = workbench_dir / "experiments" / "agent-repro.yaml"
    exp.write_text(exp.read_text().replace("description: error / sessions", 'description: "error <i>/</i> sessions"'))
    db = tmp_path / "wb.duckdb"
    store = open_store(str(db))
    try:
        with store.session() as session:
            ours = records.create_run(session, experiment_id="agent-repro", experiment_version=1, variables={},
                                      status="ok")
            records.add_metrics(session, run_id=ours.id, source="units",
                                metrics={"sessions": 80, "leak": 8, "error": 4, "wall_s": 21.5})
            other = records.create_run(session, experiment_id="<b>gone</b>", experiment_version=1, variables={},
                                       status="ok")
            records.add_metrics(session, run_id=other.id, source="units", metrics={"sessions": 80, "leak": 8})
            ids = ours.id, other.id
    finally:
        store.dispose()
    site = tmp_path / "site"
    code, _, err = cli("report", "--out", str(site), "--root", str(workbench_dir), "--db", str(db))
    assert code == 0, err
    page = (site / "runs" / f"{ids[0]}.html").read_text()
    measured = _part(page, '<section id="metrics">', '<div id="derived-metrics">')
    derived = _part(page, '<div id="derived-metrics">', "</div>")
    assert "corruption_rate" not in measured and "error_rate" not in measured and "wall_s" in measured
    assert "by agent-repro's definitions, not measured" in derived
    rows = dict(re.findall(r"<td><code>(\w+)</code></td><td class=\"num\">([^<]*)</td>", derived))
    assert rows == {"corruption_rate": "10.0%", "error_rate": "5.0%"}, derived
    assert "error &lt;i&gt;/&lt;/i&gt; sessions" in derived and "<i>" not in page
    unknown = _part((site / "runs" / f"{ids[1]}.html").read_text(), '<div id="derived-metrics">', "</div>")
    assert "<b>" not in unknown and "&lt;b&gt;gone&lt;/b&gt;" in unknown, unknown
    assert "unknown" in html.unescape(unknown)


def _site(workbench_dir: Path, cli, tmp_path: Path, *runs: tuple[dict, str, dict]) -> tuple[Path, list[int]]:
    """A store holding `runs` (each: create_run's fields beyond agent-repro v1's, the metrics' source, the metrics)
    and the site `wb report` builds of it; the site's folder and the runs' ids."""
    from workbench.store import open_store, records

    db = tmp_path / "wb.duckdb"
    store = open_store(str(db))
    try:
        with store.session() as session:
            ids = []
            for fields, source, metrics in runs:
                run = records.create_run(session, experiment_id="agent-repro", experiment_version=1, variables={},
                                         status="ok", **fields)
                records.add_metrics(session, run_id=run.id, source=source, metrics=metrics)
                ids.append(run.id)
    finally:
        store.dispose()
    site = tmp_path / "site"
    code, _, err = cli("report", "--out", str(site), "--root", str(workbench_dir), "--db", str(db))
    assert code == 0, err
    return site, ids


def test_the_runs_page_shows_derived_metrics_marked(workbench_dir: Path, cli, tmp_path: Path) -> None:
    # runs.html showed stored values only: a run that stored leak/sessions had an empty corruption_rate cell there
    # while its run page and `wb runs list` gave 10%.
    site, ids = _site(workbench_dir, cli, tmp_path, ({}, "units", {"sessions": 80, "leak": 8}),
                      ({}, "import", {"corruption_rate": 0.25}))
    page = (site / "runs.html").read_text()
    head = _part(page, "<thead>", "</thead>")
    assert "corruption_rate" in head, head
    column = re.findall(r"<th[^>]*>([^<]*)</th>", head).index("corruption_rate")
    cells = {}
    for rid, row in re.findall(r"<tr><td><a href=\"runs/(\d+)\.html\">(.*?)</tr>", page):
        cells[int(rid)] = re.findall(r"<td[^>]*>(.*?)</td>", row)[column - 1]
    counted_cell, stored_cell = cells[ids[0]], cells[ids[1]]
    assert counted_cell.startswith("10.0%") and "derived" in counted_cell, counted_cell
    assert stored_cell == "25.0%", stored_cell
    assert "by agent-repro's definitions, not measured" in page


def test_the_hypothesis_pages_runs_table_marks_derived_values(workbench_dir: Path, cli, tmp_path: Path) -> None:
    # The hypothesis page's runs table derived corruption_rate from leak/sessions but showed it as if measured,
    # where the runs page and the run pages mark it derived.
    site, (rid,) = _site(workbench_dir, cli, tmp_path, ({"hypothesis_id": "wedge-confound", "arm": "treatment"},
                                                        "units", {"sessions": 80, "leak": 8}))
    page = (site / "hypotheses" / "wedge-confound.html").read_text()
    row = re.search(rf'<tr><td><a href="\.\./runs/{rid}\.html">(.*?)</tr>', page)
    assert row is not None, page
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
    derived = [c for c in cells if "derived" in c]
    assert derived and derived[0].startswith("10.0%"), cells
    assert any(c in ("80", "8") for c in cells), cells  # the measured counts stay unmarked


def test_a_run_page_names_what_a_derivable_metric_lacks(workbench_dir: Path, cli, tmp_path: Path) -> None:
    # An imported run with leaks but no sessions: the page read "none from these values" where `wb runs show` names
    # what is missing ("corruption_rate needs sessions, not recorded").
    site, (rid,) = _site(workbench_dir, cli, tmp_path, ({}, "import", {"leak": 8}))
    derived = _part((site / "runs" / f"{rid}.html").read_text(), '<div id="derived-metrics">', "</div>")
    assert "none from these values" in derived and "corruption_rate needs sessions, not recorded" in derived, derived
    code, out, _ = cli("runs", "show", str(rid), "--root", str(workbench_dir), "--db", str(tmp_path / "wb.duckdb"))
    assert "corruption_rate needs sessions, not recorded" in out, out  # the one rule, as the CLI says it


def test_a_run_of_an_older_experiment_version_is_derived_by_one_rule_on_every_page(workbench_dir: Path, cli,
                                                                                   tmp_path: Path) -> None:
    # The hypothesis page derived a past run's corruption_rate with the experiment as it is now (v2), while the
    # runs page and the run's own page, by the version the run recorded (v1), derived none: one run, two values.
    exp = workbench_dir / "experiments" / "agent-repro.yaml"
    exp.write_text(exp.read_text().replace("\nversion: 1\n", "\nversion: 2\n", 1))
    site, (rid,) = _site(workbench_dir, cli, tmp_path, ({"hypothesis_id": "wedge-confound", "arm": "treatment"},
                                                        "units", {"sessions": 80, "leak": 8}))
    run_page = _part((site / "runs" / f"{rid}.html").read_text(), '<div id="derived-metrics">', "</div>")
    assert "10.0%" not in run_page and "v1" in run_page and "v2" in run_page, run_page
    runs_row = re.search(rf'<tr><td><a href="runs/{rid}\.html">(.*?)</tr>', (site / "runs.html").read_text())
    assert runs_row is not None and "10.0%" not in runs_row.group(1), runs_row
    page = (site / "hypotheses" / "wedge-confound.html").read_text()
    row = re.search(rf'<tr><td><a href="\.\./runs/{rid}\.html">(.*?)</tr>', page)
    assert row is not None, page
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
    assert not any("10.0%" in c or "derived" in c for c in cells), cells
    assert any(c in ("80", "8") for c in cells), cells  # what the run measured is still shown
