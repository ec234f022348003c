"""A shift between two arms' values as the hypothesis page and the Markdown summary show it: its runs are one count
per arm, and without an interval it names none."""

from __future__ import annotations

from workbench.analysis import analyze_stored
from workbench.report.hypothesis_page import _observed_from_analysis

from analysis_helpers import CONTROL, TREATMENT, abort_fix_hypothesis, add_execution, add_run, registry_with


def _observed(store, workbench_dir, runs: int) -> str:
    reg = registry_with(workbench_dir, abort_fix_hypothesis(
        "slow-check", "The abort fix does not slow the repro down.",
        "{metric: wall_s, difference: [treatment, control], at_most: 30}"))
    ex = add_execution(store, hypothesis_id="slow-check")
    for r in range(1, runs + 1):
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"done": 80}, extra={"wall_s": 340.0 + r}, hypothesis_id="slow-check")
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"done": 80}, extra={"wall_s": 300.0 + r}, hypothesis_id="slow-check")
    (j,) = analyze_stored(store, reg, "slow-check", execution_id=ex).predictions
    return _observed_from_analysis(j, reg.experiment_for(reg.hypothesis("slow-check")), "wall_s")


def test_a_shift_names_each_arms_runs(store, workbench_dir) -> None:
    # A shift's runs are [control, treatment]: the page counted the list as one number and `wb report` died with
    # "TypeError: float() argument must be a string or a real number, not 'list'".
    assert _observed(store, workbench_dir, 5).endswith("; 5 and 5 runs")


def test_a_shift_without_an_interval_names_no_interval(store, workbench_dir) -> None:
    # Two runs an arm give no interval of the shift: the page named the interval it could not give,
    # "(Hodges-Lehmann 95%)", where the verdict's text says "Hodges-Lehmann estimate, no interval".
    assert _observed(store, workbench_dir, 2) == "-40 (Hodges-Lehmann estimate, no interval); 2 and 2 runs"
