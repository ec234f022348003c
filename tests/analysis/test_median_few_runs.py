"""A median over fewer runs than an order-statistic interval at its level needs says so, in the text, the JSON and
the site alike: one run has no interval at all, and a few runs' range is not called an interval at the level."""

from __future__ import annotations

import json

from workbench.analysis import analyze_stored, stats
from workbench.report.hypothesis_page import _observed_from_analysis

from analysis_helpers import CONTROL, abort_fix_hypothesis, add_execution, add_run, registry_with

TOO_FEW = "too few runs for a 95% interval"


def _judged(store, workbench_dir, runs: int):
    reg = registry_with(workbench_dir, abort_fix_hypothesis(
        "wall-one", "The abort fix keeps the repro under 400 s.", "{metric: wall_s, arm: treatment, at_most: 400}"))
    ex = add_execution(store, hypothesis_id="wall-one")
    for r in range(1, runs + 1):
        for arm, fix in (("control", "off"), ("treatment", "on")):
            add_run(store, execution_id=ex, arm=arm, variables=dict(CONTROL, nixl_abort_fix=fix), replicate=r,
                    outcomes={"done": 80}, extra={"wall_s": 340.0 + r}, hypothesis_id="wall-one")
    a = analyze_stored(store, reg, "wall-one", execution_id=ex)
    return a, a.predictions[0], reg.experiment_for(reg.hypothesis("wall-one"))


def test_one_run_median_claims_no_interval(store, workbench_dir) -> None:
    # It read "gave a median of 341 (order statistics (0%) [341, 341])", and "order statistics (0%)" in the JSON.
    a, j, exp = _judged(store, workbench_dir, 1)
    assert j.outcome == "inconclusive" and j.interval is None, j
    assert TOO_FEW in j.interval_kind, j.interval_kind
    text, data = a.reasoning, json.dumps(a.to_dict())
    site = _observed_from_analysis(j, exp, "wall_s")
    for shown in (text, data, site):
        assert TOO_FEW in shown and "(0%)" not in shown and "with 0%" not in shown, shown


def test_a_few_runs_give_a_range_not_an_interval_at_the_level(store, workbench_dir) -> None:
    # It read "order statistics (75%) [341, 343]": a level other than the one every other interval is read at.
    a, j, exp = _judged(store, workbench_dir, 3)
    assert j.interval == (341.0, 343.0) and TOO_FEW in j.interval_kind, j
    site = _observed_from_analysis(j, exp, "wall_s")
    for shown in (a.reasoning, json.dumps(a.to_dict()), site):
        assert TOO_FEW in shown and "order statistics (75%)" not in shown, shown


def test_a_few_runs_range_reads_as_a_range_where_the_interval_comes_first(store, workbench_dir) -> None:
    # The name was written to stand before the interval ("too few runs for a 95% interval; range [341, 343]"): the
    # hypothesis page and the Markdown summary put the interval first, and read "[341, 343] too few runs for a 95%
    # interval; range", a dangling "range" after the values it names.
    a, j, exp = _judged(store, workbench_dir, 3)
    site = _observed_from_analysis(j, exp, "wall_s")
    assert "[341, 343] range (too few runs for a 95% interval)" in site, site
    assert "median of 342 (range (too few runs for a 95% interval) [341, 343])" in a.reasoning, a.reasoning
    assert "; range" not in site + a.reasoning, (site, a.reasoning)


def test_one_run_claims_no_coverage_either(store, workbench_dir) -> None:
    # With no interval, the JSON still gave "confidence": 0.0, the prediction's and the arm's: a coverage of 0% that
    # the text and the note had stopped claiming.
    a, j, _ = _judged(store, workbench_dir, 1)
    data = a.to_dict()
    (pred,) = data["predictions"]
    arm = data["arms"]["treatment"]["metrics"]["wall_s"]
    assert pred["interval"] is None and "confidence" not in pred, pred
    assert "interval" not in arm and "confidence" not in arm, arm
    # A few runs' range keeps the coverage it has: the note names it.
    assert stats.median_ci([341.0, 342.0, 343.0]).confidence == 0.75
