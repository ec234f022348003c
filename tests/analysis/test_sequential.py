"""The sequential tests: valid under peeking (small simulation), decisive at the seed's numbers."""

from __future__ import annotations

import math

import numpy as np

from workbench.analysis import sequential as seq


def test_seed_numbers_decide_at_the_first_look():
    outcome, e_against, _ = seq.judge_proportion([(14, 80)], (-math.inf, 0.02))
    assert outcome == "falsified" and e_against > 1e6


def test_zeros_support_an_at_most_prediction_after_enough_units():
    region = (-math.inf, 0.02)
    # Each side of the 95% sequence spends 2.5% (as the fixed design's Wilson interval does): two clean
    # replicates no longer decide, as they did when each one-sided test spent 5%; three do.
    assert seq.judge_proportion([(0, 80)], region)[0] == "inconclusive"
    assert seq.judge_proportion([(0, 80), (0, 160)], region)[0] == "inconclusive"
    assert seq.judge_proportion([(0, 80), (0, 160), (0, 240)], region)[0] == "supported"
    # An exact-zero region can never be supported by a finite sample, only falsified by one success.
    assert seq.judge_proportion([(0, 800)], (0.0, 0.0))[0] == "inconclusive"
    assert seq.judge_proportion([(1, 800)], (0.0, 0.0))[0] == "falsified"


def test_e_processes_do_not_exceed_alpha_under_peeking_at_the_boundary():
    # 400 experiments at the edge of the region, looked at after each of 12 replicates.
    rng = np.random.default_rng(11)
    K = rng.binomial(80, 0.02, size=(400, 12)).cumsum(axis=1)
    N = np.arange(1, 13) * 80
    against = (seq.log_e_above(K, N, 0.02) >= math.log(40)).any(axis=1).mean()
    se = 2 * math.sqrt(0.025 * 0.975 / 400)  # each side spends alpha / 2; two standard errors of simulation
    assert against <= 0.025 + se
    K = rng.binomial(80, 0.05, size=(400, 12)).cumsum(axis=1)
    wrong_support = (seq.log_e_below(K, N, 0.05) >= math.log(40)).any(axis=1).mean()
    assert wrong_support <= 0.025 + se
    # ...while naive peeking with a fixed-sample interval would have exceeded it.
    from workbench.analysis import stats

    K = rng.binomial(80, 0.02, size=(400, 12)).cumsum(axis=1)
    naive = np.mean([any(stats.wilson(int(K[i, j]), int(N[j]))[0] > 0.02 for j in range(12)) for i in range(400)])
    assert naive > 0.05


def test_confidence_sequence_covers_and_shrinks():
    lo, hi = seq.confidence_sequence(14, 80)
    assert lo < 0.175 < hi and lo > 0.05
    lo2, hi2 = seq.confidence_sequence(140, 800)
    assert lo < lo2 < 0.175 < hi2 < hi
    d = seq.difference_sequence([(10, 80), (20, 160)], [(11, 80), (21, 160)])
    assert d[0] < 0 < d[1]


def test_the_mixtures_one_pass_gives_each_alternatives_numbers_exactly():
    """_loglik_each (all alternatives in one pass) must give bit for bit what _loglik gives per alternative,
    at the edges too (k = 0, k = n, n = 0, p = 0 and p = 1): decisions at a bound must not move by an ulp."""
    rng = np.random.default_rng(7)
    ps = [0.0, 1e-6, 0.02, 0.3, 0.5, 0.999999, 1.0]
    for shape in [(), (6,), (3, 5)]:
        for _ in range(50):
            n = rng.integers(0, 3000, size=shape).astype(float)
            k = np.floor(n * rng.choice([0.0, 0.01, 0.5, 1.0]) * rng.random(size=shape))
            each = seq._loglik_each(np.asarray(k), np.asarray(n), ps)
            one_by_one = np.stack([seq._loglik(np.asarray(k), np.asarray(n), p) for p in ps])
            assert each.shape == one_by_one.shape
            assert np.array_equal(each, one_by_one), (k, n)


def test_an_empty_running_intersection_supports_nothing():
    """40 events in the first 80 units, none in the next 4640: the looks' intervals have no rate in common (the
    highest lower end 0.318, the lowest upper end 0.014), and the point shown for the empty intersection (its
    highest lower end) lay inside [0.3, 0.35], which was then 'supported' though no look put the rate there. A
    region that holds both ends is supported by nothing; one that a look's test rejected whole is falsified,
    whichever side rejected it (that test holds whatever the rate did)."""
    path = [(40, 80)] + [(40, 80 * t) for t in range(2, 60)]
    assert seq.empty_interval(path) and 0.3 < seq.e_interval(path)[0] == seq.e_interval(path)[1] < 0.35
    assert seq.judge_proportion(path, (0.01, 0.4))[0] == "inconclusive"
    for region in ((0.3, 0.35), (0.0, 0.02), (0.1, 1.0)):  # the upper side rejects the first and the last
        assert seq.judge_proportion(path, region)[0] == "falsified", region
    assert not seq.empty_interval([(40, 80), (80, 160)])
