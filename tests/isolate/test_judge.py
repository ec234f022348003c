"""A probe's look over all units and over the completed ones: what lost units (errors, timeouts) may decide."""

from __future__ import annotations

import math

from workbench.isolate.adapter import judge

FAIL = (0.05, math.inf)


def test_mostly_lost_units_with_no_failure_stop_undecided():
    # seed world, bad minus HiCache: 9 of 80 sessions complete, none leaks; 0/80 alone would pass at alpha 0.05
    look = judge([(0, 80)], [(0, 9)], FAIL, 0.05, 800)
    assert (look.outcome, look.stop) == ("inconclusive", True)
    assert "9 of 80 units completed" in look.reasoning


def test_a_failure_among_the_few_completed_units_stands():
    # wedge world, bad minus HiCache: the wedge kills 9 in 10 sessions, half of the rest leak
    look = judge([(5, 80)], [(5, 10)], FAIL, 0.0044, 800)
    assert (look.outcome, look.stop) == ("fails", True)
    assert "over the 10 completed" in look.reasoning
    # leaks seen but not yet decisive: keep looking rather than stop for the loss
    look = judge([(2, 80)], [(2, 9)], FAIL, 0.0044, 800)
    assert (look.outcome, look.stop) == ("inconclusive", False)


def test_a_pass_must_hold_over_the_completed_units_too():
    # bf16 with the abort fix: 4 in 10 sessions get HTTP 503; 0/160 over all passes, 0/64 completed does not yet
    look = judge([(0, 80), (0, 160)], [(0, 32), (0, 64)], FAIL, 0.0044, 800)
    assert (look.outcome, look.stop) == ("inconclusive", False)
    assert "completed units not yet" in look.reasoning
    look = judge([(0, 80), (0, 160)], [(0, 32), (0, 64)], FAIL, 0.0044, 160)
    assert (look.outcome, look.stop) == ("inconclusive", True)
    look = judge([(0, 160), (0, 320)], [(0, 70), (0, 140)], FAIL, 0.0044, 800)
    assert (look.outcome, look.stop) == ("passes", True)


def test_no_loss_reads_like_the_plain_test():
    assert judge([(0, 80), (0, 160)], [(0, 80), (0, 160)], FAIL, 0.0044, 800).outcome == "passes"
    assert judge([(14, 80)], [(14, 80)], FAIL, 0.0044, 800).outcome == "fails"


def test_a_probe_with_no_unit_limit_plans_the_most_runs():
    # the factorial baseline runs without a budget: max_units is infinite once a run has shown its size
    from workbench.isolate.adapter import MAX_RUNS, planned_runs

    assert planned_runs(math.inf, 80.0) == MAX_RUNS
    assert planned_runs(800, None) == MAX_RUNS
    assert planned_runs(200, 80.0) == 3 and planned_runs(10, 80.0) == 1
