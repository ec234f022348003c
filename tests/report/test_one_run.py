"""A metric over one run reads as that run's value on the hypothesis page: one value has no median, range or
coverage to claim."""

from __future__ import annotations

import html
import re
from pathlib import Path

from workbench.report import stats


def test_a_metric_of_one_run_reads_as_its_value_without_a_range(seed_site: Path) -> None:
    # wedge-confound's treatment arm is the seed's one post-fix run: its page read "median 0 (1 runs)" with
    # "[0, 0] range of 1 runs (covers the median with 0%)".
    site = seed_site
    page = html.unescape((site / "hypotheses" / "wedge-confound.html").read_text())
    assert "1 runs" not in page and "covers the median with 0%" not in page
    row = re.search(r"<th><code>wall_s</code></th>.*?<td>treatment</td><td>([^<]*)</td><td class=\"muted\">([^<]*)<",
                    page, re.S)
    assert row and row.groups() == ("one run: 346.3", ""), row and row.groups()


def test_the_fallback_estimate_of_one_value_claims_no_range() -> None:
    e = stats.median_interval([210.0])
    assert (e.label, e.lo, e.hi) == ("one run: 210", None, None)
    assert stats.median_interval([210.0, 230.0]).label.startswith("median 220")
