"""What a sequential execution says after each look: the look, the most that remain, and per prediction where its
interval lies against the region and what would decide it (the runner prints `SequentialLook.line()`)."""

from __future__ import annotations

from workbench.analysis import sequential_decision

from analysis_helpers import CONTROL, TREATMENT, add_execution, add_replicate, add_run


def test_each_look_says_how_far_the_running_interval_is_from_deciding(store, registry):
    ex = add_execution(store, mode="sequential")
    add_replicate(store, ex, 1, 0)
    d = sequential_decision(store, registry, "wedge-confound", execution_id=ex)
    look = d.look
    assert (look.look, look.max_looks, look.stop) == (1, 12, False)
    (p,) = look.predictions
    assert p.counts == (("control", 12, 80), ("treatment", 0, 80)) and p.outcome == "inconclusive"
    assert p.interval[0] == 0 and p.interval[1] > 0.02 and p.waits
    line = look.line()
    assert "\n" not in line
    assert line.startswith("look 1 of at most 12 (up to 11 more): corruption_rate (treatment) <= 0.02 (2%): "
                           "control 12/80, treatment 0/80, running interval [0.0%, "), line
    assert line.endswith(": supported once its upper end falls to 2% (no verdict before look 2)"), line


def test_a_look_that_decides_says_so_and_that_the_execution_stops(store, registry):
    ex = add_execution(store, mode="sequential")
    for r in (1, 2):
        add_replicate(store, ex, r, 14)
        d = sequential_decision(store, registry, "wedge-confound", execution_id=ex)
    look = d.look
    assert look.stop and look.verdict == "falsified" and look.look == 2
    (p,) = look.predictions
    assert p.outcome == "falsified" and p.interval[0] > 0.02
    line = look.line()
    assert line.startswith("look 2 of at most 12 (stopping: falsified): corruption_rate (treatment) <= 0.02 (2%): "
                           "control 24/160, treatment 28/160, running interval ["), line
    assert line.endswith("]: wholly outside the region: falsified"), line


def test_a_rate_above_the_region_says_which_end_must_leave_it(store, registry):
    ex = add_execution(store, mode="sequential", plan={"max_replicates": 24})
    for r, leaks in enumerate((2, 1, 3), start=1):
        add_replicate(store, ex, r, leaks)
    d = sequential_decision(store, registry, "wedge-confound", execution_id=ex, max_replicates=24)
    (p,) = d.look.predictions
    assert not d.stop and p.outcome == "inconclusive" and p.interval[0] < 0.02 < p.estimate
    assert ": falsified once its lower end is above 2%" in d.look.line(), d.look.line()


def test_a_shift_between_arms_shows_its_own_interval_or_the_runs_that_give_one(store, workbench_dir):
    from analysis_helpers import abort_fix_hypothesis, registry_with

    reg = registry_with(workbench_dir, abort_fix_hypothesis(
        "slow-check", "The abort fix does not slow the repro down.",
        "{metric: wall_s, difference: [treatment, control], at_most: 30}"))
    ex = add_execution(store, mode="sequential", hypothesis_id="slow-check")
    for r in (1, 2):
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"done": 80}, extra={"wall_s": 340.0 + r}, hypothesis_id="slow-check")
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"done": 80}, extra={"wall_s": 300.0 + r}, hypothesis_id="slow-check")
    d = sequential_decision(store, reg, "slow-check", execution_id=ex, max_replicates=12)
    (p,) = d.look.predictions
    assert p.interval is None and p.counts == () and p.scale is None
    assert d.look.line().endswith("wall_s (treatment - control) <= 30: estimate -40, no interval yet: "
                                  f"{p.more_runs} more runs in each arm give one"), d.look.line()


def _two_looks(store, registry, treated):
    """wedge-confound sequentially over two replicates, 12/80 control and 14/80 treatment leaks each, the treatment's
    runs given `treated(replicate)` too (a config, a fingerprint)."""
    ex = add_execution(store, mode="sequential")
    for r in (1, 2):
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 10})
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"leak": 14, "done": 66}, extra={"waiting_for_input": 0}, **treated(r))
    return sequential_decision(store, registry, "wedge-confound", execution_id=ex)


def test_a_prediction_decided_under_a_verdict_a_check_holds_does_not_read_as_decided(store, registry):
    # The treatment's replicates ran different rendered configs: the config check holds the verdict inconclusive,
    # so the execution goes on although the prediction's interval is wholly outside its region. The line must not
    # call the prediction falsified while the execution runs another block.
    d = _two_looks(store, registry, lambda r: {"config": ("# build alpha\n", "# build beta\n")[r - 1]})
    (p,) = d.look.predictions
    assert not d.stop and d.verdict == "inconclusive" and p.outcome == "falsified", d.reasoning
    line = d.look.line()
    assert line.startswith("look 2 of at most 12 (up to 10 more): "), line
    assert line.endswith("]: wholly outside the region, but the config check holds the verdict inconclusive"), line


def test_a_first_look_already_outside_the_region_says_it_waits_not_that_it_must_get_there(store, registry):
    # At look 1 no sequential verdict is given. A running interval already wholly above the region read "falsified
    # once its lower end is above 2%", as if the lower end still had to get there.
    ex = add_execution(store, mode="sequential")
    add_replicate(store, ex, 1, 40)
    d = sequential_decision(store, registry, "wedge-confound", execution_id=ex)
    (p,) = d.look.predictions
    assert not d.stop and p.outcome == "inconclusive" and p.waits and p.interval[0] > 0.02, d.look.line()
    assert d.look.line().endswith("]: wholly outside the region (no verdict before look 2)"), d.look.line()


def test_a_look_stopped_invalid_does_not_call_its_prediction_falsified(store, registry):
    # The arms ran different builds: the fingerprint check makes the verdict invalid and the execution stops, with
    # the prediction's interval wholly outside its region. The line names the check, not a falsification.
    d = _two_looks(store, registry, lambda r: {"fingerprint": {"wb_version": "wb 0.2.0"}})
    (p,) = d.look.predictions
    assert d.stop and d.verdict == "invalid" and p.outcome == "falsified", d.reasoning
    line = d.look.line()
    assert line.startswith("look 2 of at most 12 (stopping: invalid): "), line
    assert line.endswith("]: wholly outside the region, but the fingerprint check makes the verdict invalid"), line


def test_a_difference_at_a_look_names_each_arms_more_units():
    # A difference's more units are each arm's own (more_units_by_arm): a look line read only the larger count,
    # "about 400 more units", for arms that grow by 400 and by 200.
    from workbench.analysis.looks import prediction_at_look
    from workbench.analysis.results import Analysis, Judgement

    j = Judgement(metric="corruption_rate", where="control - treatment", region="<= 0.02", bounds=(-1.0, 0.02),
                  describe="corruption_rate (control - treatment) <= 0.02", why="", basis="all", estimate=0.05,
                  interval=(-0.01, 0.11), outcome="inconclusive", k=(12, 3), n=(80, 40), looks=3,
                  more_units_needed=400, more_units_by_arm=(400, 200), more_runs_needed=5)
    line = prediction_at_look(j, Analysis("h", "inconclusive", "", predictions=(j,))).text()
    assert "about 400 more units in control and 200 in treatment at this rate (5 more runs of each arm)" in line, line
    even = prediction_at_look(j.__class__(**{**j.__dict__, "more_units_by_arm": (400, 400)}),
                              Analysis("h", "inconclusive", "")).text()
    assert "about 400 more units in each arm at this rate" in even, even


def test_a_median_over_too_few_runs_reads_as_a_range_at_a_look(store, workbench_dir):
    # The look line put " interval" after the median's name: "range (too few runs for a 99.6% interval) interval
    # [301, 302]", which calls the range an interval after saying it is none.
    from analysis_helpers import abort_fix_hypothesis, registry_with

    reg = registry_with(workbench_dir, abort_fix_hypothesis(
        "wall-one", "The abort fix keeps the repro under 400 s.", "{metric: wall_s, arm: treatment, at_most: 400}"))
    ex = add_execution(store, mode="sequential", hypothesis_id="wall-one")
    for r in (1, 2):
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"done": 80}, extra={"wall_s": 340.0 + r}, hypothesis_id="wall-one")
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"done": 80}, extra={"wall_s": 300.0 + r}, hypothesis_id="wall-one")
    line = sequential_decision(store, reg, "wall-one", execution_id=ex, max_replicates=12).look.line()
    assert "wall_s (treatment) <= 400: estimate 302, range (too few runs for a 99.6% interval) [301, 302]: " \
        "wholly inside the region" in line, line


def test_a_look_whose_more_units_reach_past_the_few_runs_floor_says_it_lifts_as_the_reasoning_does():
    # The reasoning's "more units" carries "the few-runs floor lifts from run 4" where the projection reaches past
    # clustered.FEW_RUNS runs (Judgement.floor_lifts); the look line printed the same count without it.
    from workbench.analysis import clustered
    from workbench.analysis.looks import prediction_at_look
    from workbench.analysis.results import Analysis, Judgement

    j = Judgement(metric="corruption_rate", where="treatment", region="<= 0.02", bounds=(0.0, 0.02),
                  describe="corruption_rate (treatment) <= 0.02", why="", basis="all", estimate=0.006,
                  interval=(0.0, 0.04), outcome="inconclusive", k=1, n=160, looks=2,
                  more_units_needed=720, floor_lifts=True)
    line = prediction_at_look(j, Analysis("h", "inconclusive", "", predictions=(j,))).text()
    clause = clustered.floor_lifts_clause()
    assert "few-runs floor lifts from run 4" in clause
    assert "about 720 more units at this rate" + clause in line, line
    kept = prediction_at_look(j.__class__(**{**j.__dict__, "floor_lifts": None}), Analysis("h", "inconclusive", ""))
    assert "floor" not in kept.text(), kept.text()
