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
