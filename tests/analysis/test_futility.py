"""Futility stopping of a sequential execution (#12, fourth pass).

Before it, a rate at the region's boundary ran the whole budget: `sequential_decision` stopped only on a
decision, an invalid execution or a spent budget, so studies/verdict_study.py measured ~960 units an arm at
a true 0.02 against "<= 0.02" and an inconclusive end. Now an execution stops once no inconclusive
prediction can be decided within the budget even if the remaining replicates came in at either end of its
current interval (`sequential.reachable`). Stopping without a verdict never makes a false one, so the
tests' error bounds hold unchanged; the price is power, measured by the study."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.analysis import analyze_stored, sequential_decision
from workbench.analysis import sequential as seq

from analysis_helpers import (CONTROL, TREATMENT, abort_fix_hypothesis, add_execution, add_replicate, add_run,
                              registry_with)

BOUNDARY = (1, 3, 0, 2, 3, 1, 0, 4)   # leaks per run of 80: 0.022 on average, the region's edge


def _runs(leaks, units=80):
    return [(float(x), float(units)) for x in leaks]


def _divisor(ks, ns):
    from workbench.analysis import clustered, stats

    return clustered.divisor(clustered.effective(ks, ns), stats.ALPHA)


def test_a_rate_at_the_boundary_is_futile_once_the_interval_is_narrow():
    # 9 leaks in 400 (5 runs, binomial spread): the 99% Wilson interval is [0.0098, 0.0508]. Seven more runs
    # at 0.0508 end at 0.039 over 960, whose e-test against 0.02 (and the bet on the run rates) stays under
    # its level; seven at 0.0098 end at 0.013, whose test for "< 0.02" does too. At 4 runs (6/320, upper
    # end 0.0502, eight runs to go) falsification is still reachable.
    assert seq.reachable(_runs(BOUNDARY[:5]), (0.0, 0.02), 12, run_bet=True, divisor=_divisor) is False
    assert seq.reachable(_runs(BOUNDARY[:4]), (0.0, 0.02), 12, run_bet=True, divisor=_divisor) is True
    # A longer budget keeps it open; a spent one closes it.
    assert seq.reachable(_runs(BOUNDARY[:5]), (0.0, 0.02), 60, run_bet=True, divisor=_divisor) is True
    assert seq.reachable(_runs(BOUNDARY[:5]), (0.0, 0.02), 5, run_bet=True, divisor=_divisor) is False


@pytest.mark.parametrize("leaks", [(0, 0), (0, 0, 0, 0), (4, 4), (1, 0, 1, 0, 0, 0), (14, 9), (0, 0, 0, 0, 2)])
def test_paths_that_can_still_decide_are_reachable(leaks):
    # Event-free runs (support at 5 runs), a rate of 0.05, one of 0.004, the seed effect, and one run of 2
    # among zeros: over-dispersed now (design effect 2), but a continuation of zeros and ones decides
    # support, so the projection is judged as binomial rather than with the divisor of a lone spike.
    assert seq.reachable(_runs(leaks), (0.0, 0.02), 12, run_bet=True, divisor=_divisor) is True


def test_replayed_copies_never_reach_support():
    # Replicates of one workload are one run's evidence whatever their number: 0 of 80 copied cannot reach
    # "<= 0.02" (it needs 188 independent units), so an event-free replayed arm is futile at the second look.
    from workbench.analysis import clustered, stats

    def copies(ks, ns):
        return clustered.divisor(clustered.effective(ks, ns, replayed=True), stats.ALPHA)

    assert seq.reachable(_runs((0, 0)), (0.0, 0.02), 12, divisor=copies, copies=True) is False
    assert seq.reachable(_runs((0, 0)), (0.0, 0.02), 12, divisor=_divisor) is True


def test_reachable_agrees_with_the_interval_on_the_projected_path():
    # The rule's shortcut (an e-test at the bound crossing its level) against the shown interval itself.
    # The upper end 0.0508 projects 4.06 leaks a run, 4 in whole units (the projection keeps whole units):
    # seven more runs of 4 leaks leave e_interval straddling 0.02, as reachable says; runs of 5 falsify.
    from workbench.analysis import regions, stats

    k, n = sum(BOUNDARY[:5]), 400
    assert round(stats.wilson(k, n, seq.FUTILITY_ALPHA)[1] * 80) == 4
    region = regions.Region(0.0, 0.02, regions.Support.PROPORTION)
    for leaks, want in ((4, "inconclusive"), (5, "falsified")):
        path, ck = [], 0.0
        for i, x in enumerate(list(BOUNDARY[:5]) + [leaks] * 7, start=1):
            ck += x
            path.append((ck, 80.0 * i))
        assert regions.outcome(seq.e_interval(path, run_bet=True), region) == want, leaks


def test_a_sequential_execution_at_the_boundary_stops_for_futility(store, registry):
    # The reproduction: before, every replicate up to the budget of 12 answered "run another block".
    ex = add_execution(store, mode="sequential")
    stops = []
    for r, leaks in enumerate(BOUNDARY, start=1):
        add_replicate(store, ex, r, leaks)
        d = sequential_decision(store, registry, "wedge-confound", execution_id=ex)
        stops.append(d.stop)
        if d.stop:
            break
    assert stops == [False] * 4 + [True], stops
    assert d.futile and d.verdict == "inconclusive" and d.replicates == 5 and d.max_replicates == 12
    assert d.reasoning.startswith("Stopped for futility after 5 of at most 12 replicates")
    assert "corruption_rate (treatment) <= 0.02" in d.reasoning
    (p,) = analyze_stored(store, registry, "wedge-confound", execution_id=ex, sequential=True).predictions
    assert p.reachable is False and p.outcome == "inconclusive"


def test_event_free_runs_are_never_stopped_for_futility(store, registry):
    # The support path: 0 leaks a run decides "<= 0.02" at replicate 5 (the ICC floor); futility must not
    # cut it short at 2, 3 or 4.
    ex = add_execution(store, mode="sequential")
    for r in range(1, 6):
        add_replicate(store, ex, r, 0)
        d = sequential_decision(store, registry, "wedge-confound", execution_id=ex)
        assert d.stop is (r == 5) and not d.futile, (r, d.reasoning)
    assert d.verdict == "supported"


def test_the_reasoning_and_the_stored_verdict_say_futility(store, registry):
    from workbench.analysis import record_verdict

    ex = add_execution(store, mode="sequential")
    for r, leaks in enumerate(BOUNDARY[:5], start=1):
        add_replicate(store, ex, r, leaks)
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex, sequential=True)
    assert "no verdict is reachable within the sequential budget" in a.reasoning
    assert "more units at this rate would decide it" not in a.reasoning
    record_verdict(store, a)
    assert store.latest_verdict("wedge-confound").details["predictions"][0]["reachable"] is False


# ----------------------------------------------------------------------------- review: defects found

def test_futility_judges_the_executions_own_budget(store, registry):
    # `wb hypothesis run --sequential --replicates 24` records a budget of 24 in the execution's plan (the
    # design says 12). With 19 replicates left, the boundary path of 5 runs can still be falsified
    # (reachable with a budget of 16 already); judging it against the design's 12 stopped it for futility
    # "after 5 of at most 24 replicates".
    ex = add_execution(store, mode="sequential", plan={"max_replicates": 24})
    for r, leaks in enumerate(BOUNDARY[:5], start=1):
        add_replicate(store, ex, r, leaks)
    d = sequential_decision(store, registry, "wedge-confound", execution_id=ex, max_replicates=24)
    assert not d.stop and not d.futile, d.reasoning
    (p,) = analyze_stored(store, registry, "wedge-confound", execution_id=ex, sequential=True).predictions
    assert p.reachable is True


def test_a_spent_budget_is_not_called_futility(store, registry):
    # After the whole budget ran, "no verdict is reachable ... (futility)" in the reasoning and the report
    # would claim an early stop that never happened: the budget is spent, and `reachable` is left unset.
    ex = add_execution(store, mode="sequential")
    for r, leaks in enumerate(BOUNDARY + (1, 2, 1, 2), start=1):
        add_replicate(store, ex, r, leaks)
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex, sequential=True)
    (p,) = a.predictions
    assert p.outcome == "inconclusive" and p.reachable is None
    assert "futility" not in a.reasoning
    d = sequential_decision(store, registry, "wedge-confound", execution_id=ex)
    assert d.stop and not d.futile and d.reasoning.startswith("The budget of 12 replicates is spent")


def test_the_futility_stop_says_which_interval(store, registry):
    # The projection takes the ends of a 99% Wilson interval (FUTILITY_ALPHA), not the 95% sequence shown.
    ex = add_execution(store, mode="sequential")
    for r, leaks in enumerate(BOUNDARY[:5], start=1):
        add_replicate(store, ex, r, leaks)
    d = sequential_decision(store, registry, "wedge-confound", execution_id=ex)
    assert d.futile
    assert "99%" in d.reasoning and "current 95% interval" not in d.reasoning


def _with_control_prediction(workbench_dir):
    from workbench.registry import load_registry

    path = workbench_dir / "hypotheses.yaml"
    text = path.read_text(encoding="utf-8")
    old = ('      - {metric: corruption_rate, arm: treatment, at_most: 0.02,\n'
           '         why: "if the wedge caused it, removing the wedge removes the corruption"}\n')
    assert old in text
    path.write_text(text.replace(old, old + '      - {metric: corruption_rate, arm: control, at_least: 0.5,\n'
                                 '         why: "the wedge corrupts most sessions"}\n'), encoding="utf-8")
    return load_registry(workbench_dir)


@pytest.mark.slow
def test_a_falsification_the_drift_check_holds_is_not_stopped_for_futility(store, workbench_dir):
    # Two predictions: the control's "at least 0.5" is falsified by its interval, but its runs are
    # over-dispersed (8 and 24 leaks of 80 in turn) and 5 runs are too few to rule a trend out, so the drift
    # check holds the verdict; the treatment's boundary rate is futile. Stopping there for futility gave up
    # the falsification that replicate 6 releases (no trend).
    registry = _with_control_prediction(workbench_dir)
    ex = add_execution(store, mode="sequential")
    decisions = []
    for r in range(1, 7):
        leaks = BOUNDARY[r - 1]
        control = 8 if r % 2 else 24
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"leak": control, "done": 80 - control}, extra={"waiting_for_input": 10})
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"leak": leaks, "done": 80 - leaks}, extra={"waiting_for_input": 0})
        d = sequential_decision(store, registry, "wedge-confound", execution_id=ex)
        # The analysis's predictions and drift check are asserted at replicate 5 only: analysed there alone.
        a = analyze_stored(store, registry, "wedge-confound", execution_id=ex, sequential=True) if r == 5 else None
        decisions.append((r, d.stop, d.futile, d.verdict, a and [(p.outcome, p.reachable) for p in a.predictions],
                          a and [c.effect for c in a.checks if c.name == "drift"]))
        if d.stop:
            break
    # The held falsification at replicate 5 is the premise: the treatment is futile there.
    r5 = decisions[4]
    assert r5[4] == [("inconclusive", False), ("falsified", None)] and r5[5] == ["inconclusive"], decisions
    assert not r5[1], decisions
    assert d.stop and d.verdict == "falsified" and not d.futile, decisions


def _shown_interval_decides(ks, ns, bounds, alpha, run_bet, d=1.0):
    from workbench.analysis import regions

    import numpy as np

    path = list(zip((np.cumsum(ks) / d).tolist(), (np.cumsum(ns) / d).tolist()))
    shown = regions.outcome(seq.e_interval(path, alpha, run_bet), regions.Region(*bounds, regions.Support.PROPORTION))
    return shown != "inconclusive"


def _decides(ks, ns, bounds, alpha, run_bet, d=1.0):
    import numpy as np

    rates = [k / n if n > 0 else None for k, n in zip(ks, ns)]
    return seq._decides(np.cumsum(ks) / d, np.cumsum(ns) / d, rates, bounds, alpha, run_bet)


@pytest.mark.parametrize("ks, ns, bounds, alpha, d", [
    # equals 0 with one event in 164 (divisor 1.7) at a family's alpha: the shown interval [0, 0.088] still
    # holds 0 (the e-test at 0 itself rejects on any event, at every level), so the path does not decide.
    ((1.0,), (164.0,), (0.0, 0.0), 0.01, 1.7),
    ((0.0, 1.0, 0.0), (64.0, 126.0, 25.0), (0.0, 0.0), 0.05 / 3, 1.0),
    # equals 1 with one miss in 166: the interval [0.945, 1] still holds 1.
    ((165.0,), (166.0,), (1.0, 1.0), 0.01, 1.0),
    ((79.0, 80.0), (80.0, 80.0), (1.0, 1.0), 0.05, 3.0),
])
def test_decides_is_the_shown_interval_at_the_floor_and_ceiling(ks, ns, bounds, alpha, d):
    # `_decides` stands for e_interval + regions.outcome; at a region of 0 or 1 alone it said "decides" for
    # paths the shown interval leaves inconclusive (snapped within regions.TIE), so futility never judged
    # such a region by the interval that decides it.
    assert _shown_interval_decides(ks, ns, bounds, alpha, False, d) is False
    assert _decides(ks, ns, bounds, alpha, False, d) is False


def test_decides_agrees_with_the_shown_interval_on_random_paths():
    # Property: over random paths, regions (floor, ceiling, interior points, one-sided, between), levels,
    # divisors and the bet, `_decides` and the shown interval agree in both directions. A path `_decides`
    # calls undecided while the interval decides would let futility stop an execution that had decided.
    import numpy as np

    rng = np.random.default_rng(20261201)
    regions_ = [(0.0, 0.0), (0.0, 0.02), (0.02, 1.0), (1.0, 1.0), (0.05, 0.1), (0.3, 0.3), (0.5, 1.0), (0.0, 0.5),
                (0.9, 1.0), (0.01, 0.03)]
    disagree = []
    for case in range(160):
        bounds = regions_[case % len(regions_)]
        looks = int(rng.integers(1, 6))
        p = float(rng.choice([0.0, 1.0, bounds[0], bounds[1], sum(bounds) / 2, rng.uniform(), rng.uniform() * 0.1]))
        ns = rng.integers(0, 200, looks).astype(float)
        ks = rng.binomial(ns.astype(int), p).astype(float)
        if ns.sum() <= 0:
            continue
        alpha, bet, d = 0.05 / int(rng.choice([1, 2, 3])), bool(rng.integers(2)), float(rng.choice([1.0, 1.7, 3.0]))
        want = _shown_interval_decides(ks, ns, bounds, alpha, bet, d)
        if _decides(ks, ns, bounds, alpha, bet, d) != want:
            disagree.append((ks.tolist(), ns.tolist(), bounds, alpha, bet, d, want))
    assert not disagree, disagree


def test_counts_that_are_not_numbers_are_never_futile():
    # NaN compares False with every level, so the projection "decided" nothing and a NaN count stopped the
    # execution for futility (and a NaN denominator raised ValueError from round()).
    nan = float("nan")
    assert seq.reachable([(nan, 80.0), (1.0, 80.0)], (0.0, 0.02), 12) is True
    assert seq.reachable([(1.0, nan), (1.0, 80.0)], (0.0, 0.02), 12) is True
    # A look without units and event-free looks: still reachable (support at the ICC floor's pace).
    assert seq.reachable([(0.0, 0.0), (0.0, 80.0)], (0.0, 0.02), 12, run_bet=True, divisor=_divisor) is True


def test_futility_waits_for_the_second_replicate_as_verdicts_do(store, registry):
    # One run cannot show how much runs differ (seq.MIN_LOOKS), so its binomial interval is no ground for
    # projecting the next runs either; the verdict study applies futility from MIN_LOOKS on, while the
    # analysis stopped a budget of 2 after its first run (2 leaks of 80: unreachable on the binomial).
    assert seq.reachable(_runs((2,)), (0.0, 0.02), 2, run_bet=True) is False
    ex = add_execution(store, mode="sequential", plan={"max_replicates": 2})
    add_replicate(store, ex, 1, 2)
    d = sequential_decision(store, registry, "wedge-confound", execution_id=ex, max_replicates=2)
    assert not d.stop and not d.futile, d.reasoning
    (p,) = analyze_stored(store, registry, "wedge-confound", execution_id=ex, sequential=True).predictions
    assert p.reachable is None


# ----------------------------------------------------------------------------- differences between arms

@pytest.fixture
def reg_diff(workbench_dir):
    return registry_with(workbench_dir, abort_fix_hypothesis(
        "diff-seq", "The abort fix lowers corruption by at least five points.",
        "{metric: corruption_rate, difference: [control, treatment], at_least: 0.05}"))


def _diffadd_replicate(store, ex, r, control_leaks, treatment_leaks):
    treat = dict(CONTROL, nixl_abort_fix="on")
    add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
            outcomes={"leak": control_leaks, "done": 80 - control_leaks}, hypothesis_id="diff-seq")
    add_run(store, execution_id=ex, arm="treatment", variables=dict(treat, seed=str(r)), replicate=r,
            outcomes={"leak": treatment_leaks, "done": 80 - treatment_leaks}, hypothesis_id="diff-seq")


def test_a_sequential_difference_waits_for_the_secondadd_replicate(store, reg_diff):
    # 40 of 80 against 0 of 80 clears "control - treatment >= 0.05" on one run; a sequential verdict on
    # a rate waits for replicate 2, and so must one on a difference of rates (before: supported at 1).
    ex = add_execution(store, mode="sequential", hypothesis_id="diff-seq")
    _diffadd_replicate(store, ex, 1, 40, 0)
    (p,) = analyze_stored(store, reg_diff, "diff-seq", execution_id=ex, sequential=True).predictions
    assert p.outcome == "inconclusive" and "waits for replicate 2" in p.note
    assert p.reachable is None
    _diffadd_replicate(store, ex, 2, 38, 0)
    (p,) = analyze_stored(store, reg_diff, "diff-seq", execution_id=ex, sequential=True).predictions
    assert p.outcome == "supported"


def test_a_difference_at_its_region_edge_stops_for_futility(store, reg_diff):
    # Control 6 and treatment 2 leaks of 80 a run: a difference of 0.05, the region's edge. Before,
    # difference predictions were never judged futile and ran the whole budget of 12.
    ex = add_execution(store, mode="sequential", hypothesis_id="diff-seq")
    stops = []
    for r in range(1, 13):
        _diffadd_replicate(store, ex, r, (6, 5, 7, 6)[r % 4], (2, 1, 2, 3)[r % 4])
        d = sequential_decision(store, reg_diff, "diff-seq", execution_id=ex)
        stops.append(d.stop)
        if d.stop:
            break
    assert d.futile and d.verdict == "inconclusive" and d.replicates < 12, (stops, d.reasoning)
    (p,) = analyze_stored(store, reg_diff, "diff-seq", execution_id=ex, sequential=True).predictions
    assert p.reachable is False


def test_a_clear_difference_stays_reachable():
    from workbench.analysis import regions

    region = regions.Region(0.05, 1.0, regions.Support.PROPORTION)
    a, b = _runs((14, 12)), _runs((1, 0))
    assert seq.difference_reachable(a, b, region, 12) is True
    # Two arms that agree (A/A-like) against "control - treatment >= 0.05": the falsification is reachable.
    a, b = _runs((3, 2, 4, 3, 2, 3, 4, 3, 2, 3)), _runs((2, 4, 3, 3, 2, 3, 3, 4, 2, 3))
    assert seq.difference_reachable(a, b, region, 12) is True
    # A spent budget, or too few looks to project from, are no futility for a difference either.
    assert seq.difference_reachable(a, b, region, 10) is False
    assert seq.difference_reachable([], [], region, 12) is True


def test_a_sequential_estimate_of_more_units_is_the_sequential_intervals(store, registry):
    # 1 leak in 160 against "<= 0.02": the fixed design's Wilson interval would clear 0.02 after 239 more
    # units, and the sequential reasoning said so, but its confidence sequence is wider: at this rate it clears
    # 0.02 at 11 replicates of 80, 720 more units. Two runs take the few-runs floor (design effect 2.58), and
    # projected on it the estimate read 2000 more units (27 replicates), but the floor lifts at the fourth run:
    # from there the path is divided by the runs' own design effect (binomial, phi 1.01), and the text says so.
    ex = add_execution(store, mode="sequential")
    for r, leaks in enumerate((1, 0), start=1):
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"leak": leaks, "done": 80 - leaks}, extra={"waiting_for_input": 0})
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"leak": 10, "done": 70}, extra={"waiting_for_input": 9})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex, sequential=True)
    (p,) = a.predictions
    assert p.outcome == "inconclusive" and p.reachable is True and p.design_effect == pytest.approx(2.58)
    assert p.more_units_needed == 720 and "about 720 more units at this rate would decide it" in a.reasoning
    assert "with the design effect of the runs' own spread (the few-runs floor lifts from run 4)" in a.reasoning
    # The projected path: half a leak a replicate in whole leaks (numpy rounds half to even), undivided.
    leaks = [1.0, 1.0] + [1 + float(np.round(0.5 * i)) for i in range(1, 10)]
    path = [(k, 80.0 * (t + 1)) for t, k in enumerate(leaks)]
    assert seq.e_interval(path[:10], run_bet=True)[1] > 0.02 > seq.e_interval(path, run_bet=True)[1]


def test_a_fixed_estimate_of_more_units_drops_the_few_runs_floor_where_it_projects_past_three_runs(store, registry):
    # The same 1 leak in 160, fixed design: on the floor's 2.58 the Wilson interval clears 0.02 after 870 more
    # units, but those are 11 more runs, where the floor no longer applies; without it, 239 (3 more runs, 5 in all).
    ex = add_execution(store)
    for r, leaks in enumerate((1, 0), start=1):
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"leak": leaks, "done": 80 - leaks}, extra={"waiting_for_input": 0})
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"leak": 10, "done": 70}, extra={"waiting_for_input": 9})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    (p,) = a.predictions
    assert p.outcome == "inconclusive" and p.design_effect == pytest.approx(2.58)
    assert (p.more_units_needed, p.more_runs_needed) == (239, 3)
    assert "about 239 more units at this rate would decide it (3 more runs of this size), with the design effect " \
        "of the runs' own spread (the few-runs floor lifts from run 4)" in a.reasoning


def test_a_fixed_difference_estimate_drops_the_few_runs_floor_where_it_projects_past_three_runs(store, reg_diff):
    # 12 and 11 of 80 against 3 and 4, fixed design: both arms take the few-runs floor (2.58), on which the
    # Newcombe interval clears 0.05 after 496 more units an arm (7 more runs), where the floor no longer applies.
    # Both arms agree more closely than binomial (phi 0.05, 0.15), counted as partly copies, whose design effect
    # grows with the runs: at the fourth 3.85 and 3.55 (1.95 and 1.85 over two), so 818 (11 more runs); on the
    # two runs' 1.95 it read 338, fewer than even the floor's.
    ex = add_execution(store, hypothesis_id="diff-seq")
    for r, (c, t) in enumerate(((12, 3), (11, 4)), start=1):
        _diffadd_replicate(store, ex, r, c, t)
    a = analyze_stored(store, reg_diff, "diff-seq", execution_id=ex)
    (p,) = a.predictions
    assert p.outcome == "inconclusive" and p.more_units_needed == 818 and p.floor_lifts is True
    assert "(the few-runs floor lifts from run 4)" in a.reasoning


def test_a_sequential_difference_gives_no_fixed_design_estimate_of_more_units(store, reg_diff):
    # 12 and 11 of 80 against 3 and 4: the fixed design's Newcombe interval would clear 0.05 after 338 more
    # units an arm, and the sequential reasoning said so; the confidence sequences are far wider than that.
    ex = add_execution(store, mode="sequential", hypothesis_id="diff-seq")
    for r, (c, t) in enumerate(((12, 3), (11, 4)), start=1):
        _diffadd_replicate(store, ex, r, c, t)
    a = analyze_stored(store, reg_diff, "diff-seq", execution_id=ex, sequential=True)
    (p,) = a.predictions
    assert p.outcome == "inconclusive" and p.more_units_needed is None, p.more_units_needed
    assert "more units at this rate would decide it" not in a.reasoning
