"""An analysis as `wb hypothesis analyze --json` gives it: a count (a metric of kind count, a number of units) is an
integer, as `wb runs list --json` writes it; a rate in a check's text is written as the other lines write it."""

from __future__ import annotations

import json

from analysis_helpers import analyzed_seed


def test_counts_are_integers_and_the_attrition_rate_reads_as_elsewhere(tmp_path, workbench_dir, seed_csv) -> None:
    a = analyzed_seed(tmp_path, workbench_dir, seed_csv)
    d = json.loads(json.dumps(a.to_dict()))
    treatment = d["arms"]["treatment"]
    assert treatment["units"] == 80 and isinstance(treatment["units"], int), treatment["units"]
    for name in ("leak", "sessions", "error", "aborts"):
        m = treatment["metrics"][name]
        # The treatment arm is one run: its value has no interval (it read [x, x], a "range" covering the median
        # with 0%).
        assert all(isinstance(v, int) for v in (m["total"], m["median"])) and "interval" not in m, (name, m)
    rate = treatment["metrics"]["corruption_rate"]
    assert (rate["k"], rate["n"]) == (14, 80) and all(isinstance(rate[k], int) for k in ("k", "n")), rate
    assert isinstance(treatment["metrics"]["wall_s"]["median"], float)
    p = d["predictions"][0]
    assert all(isinstance(v, int) for v in (p["k"], p["n"], p["completed"]["k"], p["completed"]["n"])), p
    arm = d["attrition"]["arms"]["treatment"]
    assert all(isinstance(arm[k], int) for k in ("units", "completed", "lost")), arm
    assert all(isinstance(v, int) for v in arm["by_outcome"].values()), arm
    detail = a.check("attrition").detail
    assert "40/80 units (50.0%) did not complete" in detail, detail
