"""A recorded value reads on the report's pages with every digit it was recorded with (thousands separated), as
`wb runs show` and the run's provenance quote give it; three significant digits are for estimates and intervals."""

from __future__ import annotations

import re
from pathlib import Path


def test_the_seed_evidences_wall_time_reads_as_recorded_on_the_run_pages(seed_site: Path, cli) -> None:
    # The run page, the runs list and the hypothesis page's runs table read wall_s 346.3 as "346" (display.number's
    # three significant digits) beside the page's own quote "wall=346.3s": 346.3 and 346.4 read alike.
    site = seed_site
    code, out, err = cli("runs", "show", "6")
    assert code == 0 and "wall_s=346.3" in out, (out, err)
    run = (site / "runs" / "6.html").read_text()
    assert "wall=346.3s" in run
    cells = re.findall(r"<td><code>wall_s</code></td><td class=\"num\">([^<]*)</td>", run)
    assert cells == ["346.3"], cells
    listed = (site / "runs.html").read_text()
    assert re.search(r">\s*346\.3\s*<", listed) and not re.search(r">\s*346\s*<", listed), "runs list: wall_s 346"


def test_counted_values_read_back_as_integers_without_a_workbench(seeded, cli, monkeypatch, tmp_path: Path) -> None:
    """A value the runner counted (units of an outcome, calls a probe saw) is a whole number however the store is
    read: `wb runs show --json --db FILE` with no workbench gave "sessions": 80.0."""
    import json

    monkeypatch.delenv("WB_ROOT", raising=False)
    monkeypatch.delenv("WB_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    run_id = seeded["ids"]["wedge"]["run_ids"][0]
    code, out, err = cli("runs", "show", str(run_id), "--json", "--db", str(seeded["db"]))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["metrics"]["sessions"] == 80 and '"sessions": 80,' in out, out
    assert isinstance(doc["metrics"]["wall_s"], float) and doc["derived_metrics_note"], doc
