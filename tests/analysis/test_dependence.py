"""Run-level rules under dependence (#12, second pass): replayed workloads, drift versus between-run
spread, the A/A check's variance model and interval, and the sequential A/A check's first look.

Each rule here was changed because studies/verdict_study.py measured it breaking a goal; the test pins
the rule on exact inputs, and where the store is involved, through analyze_stored on a real DuckDB."""

from __future__ import annotations

import itertools

import pytest

from workbench.analysis import analyze_stored, clustered, stats

from analysis_helpers import CONTROL, TREATMENT, add_execution, add_run


def _checks(a):
    return {c.name: c for c in a.checks}


# ----------------------------------------------------------------------------- replayed workloads

def test_replayed_runs_with_events_count_as_one_run():
    # Two replicates of one workload seed, 3 and 2 leaks of 80 (what rho = 0.9 copies look like). The
    # design effect from phi would be 1 + (1 - 0.21) = 1.79, crediting 89 independent units; copies
    # of the same 80 sessions hold 80 sessions' evidence.
    e = clustered.effective([3, 2], [80, 80], replayed=True)
    assert e.dispersion.phi == pytest.approx(0.2064516129)
    assert e.design_effect == 2 and e.n_eff == 80 and e.k_eff == 2.5 and e.df is None
    assert "one replayed workload" in e.reason
    # The same counts from two workload seeds are independent samples: the under-dispersion rule applies, and two
    # runs of 80 take at least the few-runs floor (an intra-run correlation of 0.02: 2.58).
    own = clustered.effective([3, 2], [80, 80])
    assert f"(design effect {1 + (1 - 0.2064516129):.3g})" in own.reason and own.design_effect == pytest.approx(2.58)


def test_binomial_looking_replicates_of_one_seed_count_as_one_run(store, registry):
    # 10, 16, 12, 18 of 80 spread as binomial samples do, but all four replayed seed 0: one run's worth.
    ex = add_execution(store)
    for r, leaks in enumerate((10, 16, 12, 18), start=1):
        add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, replicate=r,
                outcomes={"leak": leaks, "done": 80 - leaks}, extra={"waiting_for_input": 0})
        add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r,
                outcomes={"leak": 10, "done": 70}, extra={"waiting_for_input": 9})
    (p,) = analyze_stored(store, registry, "wedge-confound", execution_id=ex).predictions
    assert p.method == "run-level" and p.n_effective == pytest.approx(80) and p.design_effect == 4
    assert p.interval == pytest.approx(stats.wilson(14, 80))


def test_runs_that_agree_exactly_are_not_said_to_have_replayed_sessions_when_their_seeds_differ(registry):
    # Two replicates with their own workload seeds, 16/80 each (phi = 0): the interval is kept wide as for copies,
    # but the reason said "Replicates that replayed the same sessions agree like this" of runs whose recorded
    # seeds (1 and 2) show they replayed nothing.
    from workbench.analysis.predictions import replayed_workload
    from workbench.store.entities import RunData

    def runs(*seeds):
        return [RunData(id=i, label=None, arm="treatment", status="ok", source="run", execution_id=1,
                        experiment_version=1, replicate=i, block=None, order_index=None,
                        variables={} if s is None else {"seed": s}, config_hash=None, fingerprint={})
                for i, s in enumerate(seeds, start=1)]

    exp = registry.experiments["agent-repro"]
    assert [replayed_workload(runs(*seeds), exp) for seeds in (("1", "2"), ("5", "5"), ("1", None), ("1", "1", "2"))] \
        == [False, True, None, None]
    own = clustered.effective([16, 16], [80, 80], replayed=False)
    # Copies' reading 2, raised to the few-runs floor (2.58): an exact split of 32 is no evidence against it.
    assert own.design_effect == pytest.approx(2.58), own.reason
    assert "(design effect 2); but 2 runs cannot rule out" in own.reason, own.reason
    assert "the 2 runs agree exactly (phi = 0" in own.reason, own.reason
    assert "each ran its own workload (its own seed), so no sessions were replayed" in own.reason, own.reason
    assert "replayed the same sessions agree" not in own.reason, own.reason
    # Where nothing recorded says whether the runs replayed one workload, that reading is offered as a possibility.
    unknown = clustered.effective([16, 12], [80, 80]).reason
    assert "agree more closely than independent samples would" in unknown, unknown
    assert "Runs that replayed the same sessions would agree like this" in unknown, unknown
    assert "own workload" not in clustered.effective([0, 0], [80, 80]).reason


# ----------------------------------------------------------------------------- drift versus between-run spread

def test_drift_holds_only_a_trend_or_too_few_runs_to_rule_one_out():
    def held(ks):
        d = clustered.dispersion(ks, [80] * len(ks))
        return clustered.drift_holds(d, [k / 80 for k in ks])

    # Over-dispersed (exact p < 0.01) without order: between-run spread, carried by the interval.
    assert held([20, 2, 25, 5, 18, 30, 3, 22]) == (False, pytest.approx(0.7195436508))
    # The same spread rising with the replicate: drift (Kendall exact p = 2 / 8! = 5.0e-5).
    assert held([0, 2, 4, 8, 12, 16, 20, 24]) == (True, pytest.approx(4.96031746e-05))
    # Four runs: Kendall's test cannot reach 0.01 (best 2/4! = 0.083), so drift is not ruled out.
    assert held([0, 0, 30, 30])[0] is True
    # Not over-dispersed at 0.01 (p = 0.0525): nothing to hold.
    assert held([3, 0, 5, 1, 4, 0, 6, 2]) == (False, 1.0)


def _treatment_runs(store, counts):
    ex = add_execution(store)
    for r, leaks in enumerate(counts, start=1):
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"leak": leaks, "done": 80 - leaks}, extra={"waiting_for_input": 0})
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"leak": 10, "done": 70}, extra={"waiting_for_input": 9})
    return ex


def test_exchangeable_between_run_spread_is_a_finding_and_the_run_level_interval_decides(store, registry):
    # Eight replicates with their own seeds whose rates differ far beyond binomial (phi = 9.3) in no
    # order: an ICC, not drift. The run-level interval (phi, t on 7 df) is [0.107, 0.329]: falsified.
    ex = _treatment_runs(store, (20, 2, 25, 5, 18, 30, 3, 22))
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    (p,) = a.predictions
    assert p.method == "run-level" and p.interval == pytest.approx((0.10717319, 0.32921010), rel=1e-6)
    drift = _checks(a)["drift"]
    assert drift.passed is False and drift.effect == "none" and "No trend over replicate order" in drift.detail
    # eight runs counted, six listed: the text says how many more (it listed six after "over 8 runs")
    assert "over 8 runs: 20/80, 2/80, 25/80, 5/80, 18/80, 30/80 and 2 more)" in drift.detail
    assert p.outcome == "falsified" and a.verdict == "falsified", a.reasoning


def test_a_trend_over_replicates_holds_the_verdict(store, registry):
    # The same over-dispersion rising with the replicate: the target drifted, no interval repairs that.
    ex = _treatment_runs(store, (0, 2, 4, 8, 12, 16, 20, 24))
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    drift = _checks(a)["drift"]
    assert drift.passed is False and drift.effect == "inconclusive" and "trends over replicate order" in drift.detail
    assert a.verdict == "inconclusive"


# ----------------------------------------------------------------------------- the A/A check

def test_pooled_within_arm_dispersion_is_the_exact_convolution():
    # Two arms of two runs of 10 units: X^2 summed over arms, each around its own rate; its exact null
    # given each arm's total is the convolution of two hypergeometric splits, enumerated here directly.
    from scipy.stats import hypergeom   # here, not at collection: every worker collects this file

    arms = [([2, 5], [10, 10]), ([1, 6], [10, 10])]
    d = clustered.pooled_dispersion(arms)

    def x2(ks):
        p = sum(ks) / 20
        return sum((k - 10 * p) ** 2 / (10 * p * (1 - p)) for k in ks)

    observed = x2([2, 5]) + x2([1, 6])
    tail = 0.0
    for a, b in itertools.product(range(8), range(8)):
        stat = x2([a, 7 - a]) + x2([b, 7 - b])
        if stat >= observed - 1e-9:
            tail += hypergeom.pmf(a, 20, 10, 7) * hypergeom.pmf(b, 20, 10, 7)
    assert d.phi == pytest.approx(observed / 2) and d.runs == 3
    assert d.p_over == pytest.approx(tail, rel=1e-12)
    # An arm without events carries no spread and no degrees of freedom.
    assert clustered.pooled_dispersion([([0, 0], [80, 80]), ([4, 8], [80, 80])]).runs == 2


def test_continuity_corrected_newcombe_matches_the_published_values():
    # Newcombe (1998), Statistics in Medicine 17:873, method 11, and its single-proportion method 4.
    assert stats.newcombe_cc(56, 70, 48, 80) == pytest.approx((0.0428, 0.3422), abs=5e-5)
    assert stats.newcombe_cc(9, 10, 3, 10) == pytest.approx((0.1013, 0.8387), abs=5e-5)
    assert stats.wilson_cc(0, 20) == pytest.approx((0.0, 0.2005), abs=5e-5)
    assert stats.wilson_cc(1, 29) == pytest.approx((0.0018, 0.1963), abs=5e-5)


def test_aa_between_run_spread_is_no_false_alarm(store, registry):
    # Control 4 and 8 of 80, its copy 9 and 15: each arm alone looks binomial, and the uncorrected
    # binomial Newcombe interval excludes 0 (Fisher's exact p is 0.050). The copies' runs pooled show
    # spread (phi = 1.6, p = 0.25 < 0.5): the check widens to the run level and raises no alarm.
    assert not (stats.newcombe(12, 160, 24, 160)[0] <= 0 <= stats.newcombe(12, 160, 24, 160)[1])
    ex = add_execution(store, mode="aa")
    for r, (ka, kb) in enumerate(((4, 9), (8, 15)), start=1):
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"leak": ka, "done": 80 - ka}, extra={"waiting_for_input": 0})
        add_run(store, execution_id=ex, arm="control_aa", variables=dict(CONTROL, seed=str(r + 10)), replicate=r,
                outcomes={"leak": kb, "done": 80 - kb}, extra={"waiting_for_input": 0})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    lo, hi = a.aa["corruption_rate"]["difference_interval"]
    assert lo < 0 < hi and a.aa["corruption_rate"]["false_alarm"] is False
    assert _checks(a)["a/a"].passed is True and a.verdict != "invalid"
    # The noise floor of a rate reads in percentage points, as the rates beside it read in percent (it read ±0.114).
    floor = f"±{100 * a.aa['corruption_rate']['noise_floor']:.1f} points"
    assert f"difference interval of [{100 * lo:+.1f}, {100 * hi:+.1f}] points" in a.reasoning, a.reasoning
    assert f"so the noise floor is {floor}; no false alarm." in a.reasoning, a.reasoning
    assert _checks(a)["a/a"].detail == f"no false alarm; noise floor corruption_rate {floor}"


def test_sequential_aa_check_waits_for_the_second_replicate(store, registry):
    # 30/80 against 2/80 after one replicate: one run per arm cannot show between-run spread, so the
    # sequential check waits (as a sequential verdict does); after two replicates it alarms.
    ex = add_execution(store, mode="aa")

    def replicate(r):
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"leak": 30, "done": 50}, extra={"waiting_for_input": 0})
        add_run(store, execution_id=ex, arm="control_aa", variables=dict(CONTROL, seed=str(r + 10)), replicate=r,
                outcomes={"leak": 2, "done": 78}, extra={"waiting_for_input": 0})

    replicate(1)
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex, sequential=True)
    assert _checks(a)["a/a"].passed is None and "waits for replicate 2" in _checks(a)["a/a"].detail
    assert a.verdict != "invalid"
    replicate(2)
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex, sequential=True)
    assert a.aa["corruption_rate"]["false_alarm"] is True and a.verdict == "invalid"
    lo, hi = a.aa["corruption_rate"]["difference_interval"]
    assert _checks(a)["a/a"].detail == ("false alarm between identical arms: corruption_rate: 60/160 vs 4/160, "
                                        f"difference interval [{100 * lo:+.1f}, {100 * hi:+.1f}] points excludes 0")


def test_the_mixture_log_sum_agrees_with_scipy_including_all_minus_infinity_columns():
    import numpy as np
    from scipy.special import logsumexp

    from workbench.analysis.sequential import _logsumexp

    rng = np.random.default_rng(0)
    for _ in range(500):
        terms = rng.normal(scale=50, size=(8, int(rng.integers(1, 6))))
        terms[rng.random(terms.shape) < 0.3] = -np.inf
        ours, theirs = _logsumexp(terms), logsumexp(terms, axis=0)
        assert np.array_equal(np.isneginf(ours), np.isneginf(theirs))
        finite = np.isfinite(theirs)
        assert np.allclose(ours[finite], theirs[finite], rtol=1e-13, atol=1e-12)


# ----------------------------------------------------------------------------- event-free arms (third pass)

def test_event_free_runs_assume_the_icc_floor_rather_than_binomial():
    # Three event-free runs of 80 show no spread. Judged binomial (0/240) they supported "<= 0.02"; under
    # a beta-binomial ICC of 0.1 at a true rate of 0.05 a run of 80 is event-free with probability
    # B(0.45, 88.55) / B(0.45, 8.55) = 0.345, so 4.3% of such experiments were supported at 3 runs.
    from scipy.special import betaln

    a = 0.05 * (1 / 0.1 - 1)
    assert betaln(a, a * 19 + 80) - betaln(a, a * 19) == pytest.approx(-1.0652, abs=1e-3)  # exp: 0.345
    e = clustered.effective([0, 0, 0], [80, 80, 80])
    assert e.method == "run-level" and e.df is None
    assert e.design_effect == pytest.approx(1 + 79 * clustered.ICC_FLOOR) == pytest.approx(1.79)
    assert e.k_eff == 0 and e.n_eff == pytest.approx(240 / 1.79)
    assert "cannot show how much runs differ" in e.reason and "0.01" in e.reason
    # Only events is the mirror case; runs of unequal size use the mean size.
    assert clustered.effective([80, 80], [80, 80]).design_effect == pytest.approx(1.79)
    assert clustered.effective([0, 0], [60, 100]).design_effect == pytest.approx(1.79)
    # One run stays binomial (nothing to compare it with: the seed's 14/80), and so do replayed runs'
    # own rule (one run's evidence) and arms whose runs had events.
    assert clustered.effective([0], [80]).design_effect == 1
    assert clustered.effective([0, 0, 0], [80, 80, 80], replayed=True).design_effect == 3
    assert clustered.effective([1, 1, 2, 4], [80] * 4).method == "binomial"  # phi 1.03


def test_two_or_three_runs_that_look_binomial_assume_a_small_intra_run_correlation():
    # Under a beta-binomial ICC of 0.05 (true rate 0.05, runs of 80) the interval covered 85% / 86% with
    # 2 / 3 runs (studies/rate_coverage.py), because phi on one or two degrees of freedom so often looks
    # binomial or closer: 3 and 5 of 80 give phi 0.53, and counted as a design effect of 1.47.
    e = clustered.effective([3, 5], [80, 80])
    floor = 1 + 79 * clustered.FEW_RUNS_ICC
    assert e.dispersion.phi == pytest.approx(0.5263, abs=1e-4)
    assert e.design_effect == pytest.approx(floor) == pytest.approx(2.58)
    assert e.method == "run-level" and e.df is None and e.n_eff == pytest.approx(160 / 2.58)
    assert "an intra-run correlation of 0.02 is assumed at least (design effect 2.58)" in e.reason
    assert clustered.rate_interval(e) == pytest.approx(stats.wilson(8 / 2.58, 160 / 2.58))
    # Three runs whose spread matches binomial (phi 1.04), and two a little more (phi 1.34): the same floor.
    same = clustered.effective([2, 5, 2], [80] * 3)
    assert same.design_effect == pytest.approx(2.58) and "pooled binomial" not in same.reason
    assert clustered.effective([2, 5], [80, 80]).design_effect == pytest.approx(2.58)
    # Not below it: four runs keep their own estimate, a significant excess keeps phi and Student's t, replayed
    # copies count as one run, and one run stays binomial (the seed's 14/80, still falsified).
    assert clustered.effective([1, 1, 2, 4], [80] * 4).design_effect == 1
    assert clustered.effective([0, 12], [80, 80]).df == 1
    assert clustered.effective([2, 5], [80, 80], replayed=True).design_effect == 2
    # Nor where the runs' spread rules it out: two runs of 10^6 units 0.03% apart would be a design effect of
    # 20 000 (P(chi^2_1 <= 0.945 / 20 000) = 0.005).
    assert clustered.effective([50_000, 50_300], [10 ** 6] * 2).design_effect == pytest.approx(1.055, abs=1e-3)
    seed = clustered.effective([14], [80])
    assert seed.design_effect == 1 and clustered.rate_interval(seed)[0] > 0.1


def test_runs_that_agree_exactly_do_not_rule_the_few_runs_floor_out():
    # X^2 is discrete: 4 and 4 of 80 give X^2 = 0, and P(chi^2_1 <= 0) = 0 "ruled out" the floor, so the closest
    # agreement took a design effect of 2 where 4 and 5 took 2.58, although an exact split is common whatever the
    # correlation (P = 0.28 even under binomial). The lower tail is taken with a continuity correction (halfway
    # to the next X^2 the total's splits can reach), so exact agreement of a few events keeps the floor.
    for ks, ns in (([4, 4], [80, 80]), ([4, 5], [80, 80]), ([10, 10], [200, 200]), ([3, 3, 3], [200] * 3)):
        e = clustered.effective(ks, ns)
        floor = 1 + (ns[0] - 1) * clustered.FEW_RUNS_ICC
        assert e.design_effect == pytest.approx(floor), ks
        assert f"intra-run correlation of 0.02 is assumed at least (design effect {floor:.3g})" in e.reason
    # Runs large enough that one unit moves X^2 by little still rule it out by agreeing exactly.
    big = clustered.effective([50_000, 50_000], [10 ** 6] * 2)
    assert big.design_effect == 2 and "assumed at least" not in big.reason


def test_event_free_arm_needs_five_runs_of_80_in_both_modes():
    # The same rule in both modes: the fixed Wilson interval on the effective counts and the sequential
    # confidence sequence on the path divided by the same design effect decide "<= 0.02" at 5 runs (at 3
    # without the floor: 0/240 has Wilson upper 0.0157, and the e-value for p = 0 reaches 2/alpha).
    import math

    from workbench.analysis import regions
    from workbench.analysis import sequential as seq

    region = regions.Region(-math.inf, 0.02, regions.Support.PROPORTION)
    for runs, want in ((3, "inconclusive"), (4, "inconclusive"), (5, "supported")):
        e = clustered.effective([0] * runs, [80] * runs)
        assert clustered.rate_outcome(e, region)[0] == regions.outcome(clustered.rate_interval(e), region) == want, runs
        d = clustered.divisor(e, stats.ALPHA)
        path = [(0.0, 80 * (i + 1) / d) for i in range(runs)]
        assert seq.judge_proportion(path, (0.0, 0.02))[0] == want, runs
    assert seq.judge_proportion([(0, 80), (0, 160), (0, 240)], (0.0, 0.02))[0] == "supported"  # no floor


# ----------------------------------------------------------------------------- the bet on run rates (third pass)

def test_the_bet_on_run_rates_is_the_mixture_of_products_by_hand():
    import math

    from workbench.analysis import sequential as seq

    rates, c = [10 / 80, 30 / 80, 20 / 80], 0.02
    by_hand = math.log(sum(math.prod(1 + f / c * (x - c) for x in rates) for f in seq.BET_FRACTIONS)
                       / len(seq.BET_FRACTIONS))
    assert seq.log_e_runs_above(rates, c) == pytest.approx(by_hand, rel=1e-12)
    assert seq.run_rates([(10, 80), (40, 160), (60, 240)]) == pytest.approx(rates)
    # A divisor applied to the whole path cancels; a look without units is skipped.
    assert seq.run_rates([(5, 40), (20, 80)]) == pytest.approx([0.125, 0.375])
    assert seq.run_rates([(1, 80), (1, 80)])[1] is None
    # The lower bound is where the bet's e-value crosses 2 / (alpha * BET_SHARE).
    lower = seq.bet_lower([(10, 80), (40, 160), (60, 240)])
    assert seq.log_e_runs_above(rates, lower * 0.999) >= math.log(80) > seq.log_e_runs_above(rates, lower * 1.001)


def test_the_bet_holds_its_level_under_drift_and_between_run_spread():
    # Null runs whose rates drift over replicate order and spread as a beta with ICC 0.3, every run's
    # expected rate at the bound 0.02 or below: the bet crosses 2 / (alpha * BET_SHARE) in at most
    # alpha * BET_SHARE / 2 = 1.25% of 2000 experiments of 12 runs (Ville), and the observed rate is far under.
    import numpy as np

    from workbench.analysis import sequential as seq

    rng = np.random.default_rng(12)
    means = np.linspace(0.002, 0.02, 12)                      # drift up to the bound
    a = means * (1 / 0.3 - 1)
    rates = rng.binomial(80, rng.beta(a, a * (1 - means) / means, size=(2000, 12))) / 80
    crossed = sum(any(seq.log_e_runs_above(list(r[:t]), 0.02) >= np.log(80) for t in range(1, 13)) for r in rates)
    assert crossed / 2000 <= 0.0125


def test_possible_drift_does_not_hold_a_falsification_the_run_rates_reach_alone(store, registry):
    # 10, 30, 20 leaks of 80 over three replicates with their own seeds: over-dispersed (phi 6.7, exact
    # p = 0.002) and too few runs to rule a trend out, so the drift check holds exchangeable-run verdicts.
    # The bet on the three run rates rejects "every run's rate <= 0.02" (log E 5.68 >= log 80): falsified.
    ex = add_execution(store, mode="sequential")
    for r, leaks in enumerate((10, 30, 20), start=1):
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 10})
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"leak": leaks, "done": 80 - leaks}, extra={"waiting_for_input": 0})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    (p,) = a.predictions
    assert a.verdict == "falsified", a.reasoning
    assert p.drift_robust is True and p.interval[0] > 0.02
    assert "the runs' own rates decide it alone" in a.reasoning
    drift = _checks(a)["drift"]
    assert drift.passed is False and drift.effect == "none"
    assert "too few to rule out a trend" in drift.detail and "holds under drift" in drift.detail
    # The same counts replayed from one workload are copies: no bet, and the drift check holds the verdict.
    ex = add_execution(store, mode="sequential")
    for r, leaks in enumerate((10, 30, 20), start=1):
        add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r,
                outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 10})
        add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, replicate=r,
                outcomes={"leak": leaks, "done": 80 - leaks}, extra={"waiting_for_input": 0})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.verdict == "inconclusive" and a.predictions[0].drift_robust is None


def test_a_simulated_dispersion_p_value_is_never_zero_nor_called_exact(store, registry):
    # Four runs 0, 0, 12, 14 of 80: beyond two runs the null of X^2 is simulated (2000 draws), none of which
    # reached the observed spread, and the text read "over-dispersed (phi = 9.5, p = 0)" and "exact p = 0". A
    # Monte Carlo p-value counts the observed table among the draws: (0 + 1) / 2001.
    d = clustered.dispersion([0, 0, 12, 14], [80] * 4)
    assert d.p_over == pytest.approx(1 / (clustered.SIMULATIONS + 1))
    ex = add_execution(store)
    for r, leaks in enumerate((0, 0, 12, 14), start=1):
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"leak": leaks, "done": 80 - leaks}, extra={"waiting_for_input": 0})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert "p = 0)" not in a.reasoning and "p = 0 " not in a.reasoning, a.reasoning
    assert "exact p" not in _checks(a)["drift"].detail and "simulated p = 0.0005" in _checks(a)["drift"].detail


def _spread_a_little(store, ex: int) -> int:
    """Four replicates a side whose leaks spread a little more than binomial (treatment phi 1.15)."""
    for r, (leaks, control) in enumerate(zip((10, 16, 12, 18), (15, 9, 16, 16)), start=1):
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"leak": leaks, "done": 80 - leaks}, extra={"waiting_for_input": 0})
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"leak": control, "done": 80 - control}, extra={"waiting_for_input": 9})
    return ex


def test_an_interval_widened_for_between_run_spread_says_so_in_text_json_and_html(store, registry, tmp_path):
    # Four replicates 10, 16, 12, 18 of 80 spread a little more than binomial (phi 1.15, not significant): the
    # interval is Wilson's with the variance inflated by phi, yet the text, the JSON and the page called it
    # plainly "Wilson 95%", the label of the pooled binomial interval.
    import html
    import re

    from workbench.analysis.stored import record_verdict
    from workbench.report import build_site

    ex = _spread_a_little(store, add_execution(store))
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    label = "Wilson 95%, widened for between-run spread (phi = 1.15)"
    (p,) = a.predictions
    assert p.design_effect == pytest.approx(1.154, abs=1e-3) and p.interval_kind == label
    assert f"= 17.5% ({label} [" in a.reasoning, a.reasoning
    assert a.to_dict()["predictions"][0]["interval_kind"] == label
    assert a.arms["treatment"].metrics["corruption_rate"].to_dict()["interval_kind"] == label
    assert a.arms["control"].metrics["corruption_rate"].to_dict()["interval_kind"] == "Wilson 95%"  # binomial
    record_verdict(store, a, execution_id=ex)
    page = build_site(store, registry, tmp_path / "site")["hypotheses"]["wedge-confound"]
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", open(page, encoding="utf-8").read())).split())
    assert f"17.5% ({label} [13.5%, 22.4%]; 4 runs)" in text, text  # the verdict's reasoning
    assert f"56/320 = 17.5% [13.5%, 22.4%] {label}; 4 runs falsified" in text, text  # the prediction
    # The arm table (and the chart's tooltip beside it): the widened arm says so, the binomial one stays plain.
    assert f"control 56/320 = 17.5% [13.7%, 22.0%] Wilson 95% treatment 56/320 = 17.5% [13.5%, 22.4%] {label} " \
        in text, text
    assert f'"method": "{label}"' in text, text


def test_a_sequential_interval_on_counts_divided_by_the_design_effect_says_so(store, registry):
    # The same four replicates judged sequentially: the confidence sequence is taken on the counts divided by the
    # runs' phi, yet it was labelled plainly "confidence sequence 95%", as if the pooled sessions had been
    # independent draws (the fixed design's Wilson label says so since it was widened).
    ex = _spread_a_little(store, add_execution(store, mode="sequential"))
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    label = "confidence sequence 95%, widened for between-run spread (phi = 1.15)"
    (p,) = a.predictions
    assert a.sequential and p.interval_kind == label, p.interval_kind
    assert f"= 17.5% ({label} [" in a.reasoning, a.reasoning
    assert a.to_dict()["predictions"][0]["interval_kind"] == label


def _leaks_by_replicate(store, registry, leaks):
    """wedge-confound over one replicate per (control, treatment) leak pair of 80 sessions, each with its own seed."""
    ex = add_execution(store)
    for r, (ctl, trt) in enumerate(leaks, start=1):
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"leak": ctl, "done": 80 - ctl}, extra={"waiting_for_input": 10})
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"leak": trt, "done": 80 - trt}, extra={"waiting_for_input": 0})
    return analyze_stored(store, registry, "wedge-confound", execution_id=ex)


def test_possible_drift_in_an_arm_no_prediction_reads_does_not_hold_the_verdict(store, registry):
    # The README's main job came out inconclusive on one seed: control 20/80, 7/80, 6/80 (over-dispersed, too few
    # runs to rule a trend out) held the verdict, though wedge-confound predicts the treatment arm alone (40/240,
    # 13-20 leaks a run). A drifting arm holds the predictions that read it; here none does.
    a = _leaks_by_replicate(store, registry, ((20, 20), (7, 10), (6, 10)))
    drift = _checks(a)["drift"]
    assert a.verdict == "falsified", a.reasoning
    assert drift.passed is False and drift.effect == "none", drift.detail
    assert "corruption_rate in control varies between replicates more than chance allows" in drift.detail
    assert "no prediction reads corruption_rate in control" in drift.detail, drift.detail
    # The same spread in the arm the prediction reads still holds it.
    a = _leaks_by_replicate(store, registry, ((10, 20), (10, 7), (10, 6)))
    assert a.verdict == "inconclusive" and _checks(a)["drift"].effect == "inconclusive", a.reasoning


def test_a_drifting_arm_no_prediction_reads_keeps_the_no_trend_words_for_the_arm_one_does(store, registry):
    # The treatment's runs spread without order (no trend over six replicates: the run-level interval carries it)
    # while the control, which no prediction reads, trends. The detail said only the control's part, leaving the
    # treatment's over-dispersion without the words that say why it holds nothing.
    ex = add_execution(store)
    for r, (ctl, trt) in enumerate(((2, 1), (6, 12), (10, 1), (14, 12), (18, 1), (22, 12)), start=1):
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"leak": ctl, "done": 80 - ctl}, extra={"waiting_for_input": 10})
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"leak": trt, "done": 80 - trt}, extra={"waiting_for_input": 0})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    drift = _checks(a)["drift"]
    assert drift.passed is False and drift.effect == "none", drift.detail
    assert "corruption_rate in treatment varies between replicates more than chance allows" in drift.detail
    assert "corruption_rate in control trends over replicate order" in drift.detail, drift.detail
    assert "no prediction reads corruption_rate in control" in drift.detail, drift.detail
    assert "No trend over replicate order in the arms a prediction reads: the spread is between runs" in drift.detail


def test_lifting_the_few_runs_floor_keeps_close_agreement_counted_as_copies_at_the_fourth_run():
    """Runs that agree more closely than binomial are counted as partly copies (correlation 1 - phi), a design
    effect 1 + (R - 1)(1 - phi) that grows with the runs. `lifted` (what a projection past FEW_RUNS runs divides by)
    took the two runs' 1 + 1(1 - phi) = 1.95 for 12 and 11 of 80, below the floor's 2.58, where the same agreement
    over four runs is 3.85: the estimate of more units came out smaller than either."""
    e = clustered.effective([12, 11], [80, 80])
    assert e.design_effect == pytest.approx(2.58) and e.dispersion.phi == pytest.approx(0.0508, abs=1e-4)
    at_four = 1 + clustered.FEW_RUNS * (1 - e.dispersion.phi)
    assert clustered.lifted(e).design_effect == pytest.approx(at_four)
    # Runs whose spread matches binomial keep their own design effect once the floor lifts.
    binomial = clustered.effective([1, 0], [80, 80])
    assert binomial.design_effect == pytest.approx(2.58) and clustered.lifted(binomial).design_effect == 1.0


def test_runs_whose_spread_rules_the_few_runs_floor_out_say_so_beside_their_design_effect():
    # Two runs of 10^6 units 0.03% apart rule the floor out (it would be a design effect of 20 000), and two that
    # agree exactly do too; their reason named the design effect and said nothing of the floor that 2 or 3 runs of
    # 80 take, so a reader could not tell it had been considered.
    for ks, deff in (([50_000, 50_300], "1.06"), ([50_000, 50_000], "2")):
        e = clustered.effective(ks, [10 ** 6] * 2)
        assert f"(design effect {deff}); no few-runs floor: the runs' own spread rules it out" in e.reason, e.reason
    # Where the floor applies, or the runs are too many for it, or their spread is pooled as binomial, no such clause.
    for ks, ns in (([3, 5], [80, 80]), ([1, 1, 2, 4], [80] * 4), ([50_000, 50_308], [10 ** 6] * 2)):
        assert "no few-runs floor" not in clustered.effective(ks, ns).reason, ks
