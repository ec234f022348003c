"""The statistics against reference values and against independent computations on random tables."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from workbench.analysis import stats


def test_seed_reference_values():
    assert stats.fisher(14, 80, 0, 80) == pytest.approx(6.6e-5, rel=0.01)
    lo, hi = stats.wilson(14, 80)
    assert (round(lo, 3), round(hi, 3)) == (0.107, 0.273)
    lo, hi = stats.wilson(0, 80)
    assert lo == 0.0 and round(hi, 3) == 0.046


def _wilson_closed_form(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:  # norm.ppf(0.975)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def _fisher_by_hand(k1: int, n1: int, k2: int, n2: int) -> float:
    # Sum of hypergeometric probabilities no larger than the observed table's (two-sided, as scipy defines it).
    from scipy.stats import hypergeom   # here, not at collection: every worker collects this file

    total, succ = n1 + n2, k1 + k2
    dist = hypergeom(total, succ, n1)
    lo, hi = max(0, succ - n2), min(succ, n1)
    p_obs = dist.pmf(k1)
    return float(sum(dist.pmf(x) for x in range(lo, hi + 1) if dist.pmf(x) <= p_obs * (1 + 1e-7)))


def test_random_tables_match_independent_computations():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n1, n2 = int(rng.integers(1, 120)), int(rng.integers(1, 120))
        k1, k2 = int(rng.integers(0, n1 + 1)), int(rng.integers(0, n2 + 1))
        w = stats.wilson(k1, n1)
        ref = _wilson_closed_form(k1, n1)
        assert w[0] == pytest.approx(max(0, ref[0]), abs=1e-9) and w[1] == pytest.approx(min(1, ref[1]), abs=1e-9)
        # Newcombe's hybrid score interval (his method 10) from the two Wilson intervals.
        l1, u1 = _wilson_closed_form(k1, n1)
        l2, u2 = _wilson_closed_form(k2, n2)
        p1, p2 = k1 / n1, k2 / n2
        d = p1 - p2
        ref_lo = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
        ref_hi = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
        got = stats.newcombe(k1, n1, k2, n2)
        assert got[0] == pytest.approx(ref_lo, abs=1e-9) and got[1] == pytest.approx(ref_hi, abs=1e-9)
        assert stats.fisher(k1, n1, k2, n2) == pytest.approx(_fisher_by_hand(k1, n1, k2, n2), rel=1e-6, abs=1e-12)


def test_boschloo_is_at_most_fisher_on_small_tables():
    for k1, n1, k2, n2 in [(14, 80, 0, 80), (3, 10, 0, 10), (5, 20, 2, 20)]:
        b = stats.boschloo(k1, n1, k2, n2)
        assert b is not None and b <= stats.fisher(k1, n1, k2, n2) + 1e-9


def test_score_pvalue_agrees_with_the_wilson_interval():
    rng = np.random.default_rng(3)
    for _ in range(500):
        n = int(rng.integers(1, 400))
        k = int(rng.integers(0, n + 1))
        c = float(rng.uniform(0.001, 0.999))
        for bounds in [(-math.inf, c), (c, math.inf), (0.0, c)]:
            rel = stats.relation(stats.wilson(k, n), bounds)
            assert (rel == "outside") == (stats.score_pvalue(k, n, bounds, "outside") < 0.05)
            assert (rel == "inside") == (stats.score_pvalue(k, n, bounds, "inside") < 0.05)


def test_interval_pvalue_matches_newcombe_decisions():
    for k1, n1, k2, n2 in [(14, 80, 0, 80), (5, 80, 3, 80), (30, 100, 10, 100)]:
        bounds = (-0.02, 0.02)
        p = stats.interval_pvalue(lambda a: stats.newcombe(k1, n1, k2, n2, a), bounds, "outside")
        assert (p < 0.05) == (stats.relation(stats.newcombe(k1, n1, k2, n2), bounds) == "outside")


def test_median_interval_follows_benchstat():
    few = stats.median_ci([3.0, 1.0, 2.0, 5.0, 4.0])
    assert few.median == 3.0 and few.interval == (1.0, 5.0) and few.warning and "need >= 6" in few.warning
    six = stats.median_ci([1, 2, 3, 4, 5, 6])
    assert six.warning is None and six.interval == (1.0, 6.0) and six.confidence == pytest.approx(1 - 2 / 64)
    many = stats.median_ci(list(range(1, 101)))
    assert many.interval is not None and 35 < many.interval[0] < 50 < many.interval[1] < 65
    assert many.confidence >= 0.95


def test_mann_whitney_and_shift():
    a, b = [10.0, 11, 12, 13, 14, 15], [20.0, 21, 22, 23, 24, 25]
    p, warn = stats.mann_whitney(a, b)
    assert warn is None and p < 0.01
    est, ci = stats.shift_ci(a, b)
    assert est == -10 and ci is not None and ci[0] <= -10 <= ci[1] < 0
    p, warn = stats.mann_whitney([1.0, 2.0], [3.0, 4.0])
    assert warn and "need >= 4" in warn


def test_holm_matches_step_down_by_hand():
    ps = [0.01, 0.04, 0.03]
    # sorted 0.01, 0.03, 0.04 -> 0.03, 0.06, 0.06 (monotone)
    assert stats.holm(ps) == pytest.approx([0.03, 0.06, 0.06])


def test_the_smallest_p_a_design_can_give_is_known_before_its_outcomes():
    """Tarone's minimum attainable p: Fisher's test over 2 runs against 2 gives no p below 1/3 and over 3 against 3
    none below 0.1, whatever the outcomes; the floor says so exactly where it is near the level asked about. Over
    two executions of 2 runs an arm (each a stratum) it is 2/36; with many units, a bound far below the level."""
    assert stats.attainable_floor([(2, 2)], 0.05) == pytest.approx(1 / 3)
    assert stats.attainable_floor([(3, 3)], 0.05) == pytest.approx(0.1)
    assert stats.attainable_floor([(2, 2), (2, 2)], 0.05) == pytest.approx(2 / 36)
    assert stats.attainable_floor([(8, 8)], 0.05) == pytest.approx(1 / 12870)  # the bound (exact: 2 / 12870)
    for arms in ([(2, 3)], [(1, 4), (2, 2)], [(4, 4)]):  # what enumerating every table gives
        seen = min(stats.stratified_exact([(a, n1, m - a, n2) for (n1, n2), (a, m) in zip(arms, cells)])
                   for cells in itertools.product(*[[(a, m) for m in range(n1 + n2 + 1)
                                                     for a in range(max(0, m - n2), min(m, n1) + 1)]
                                                    for n1, n2 in arms]))
        assert stats.attainable_floor(arms, 0.05) == pytest.approx(seen), arms
    assert stats.attainable_floor([(160, 160)], 0.05) < 1e-90
    assert stats.attainable_floor([(0, 5)], 0.05) == 1.0  # one arm alone tests nothing


def _floor_by_every_margin(arms: list[tuple[int, int]], level: float) -> float:
    """`attainable_floor` as first written: every stratum's every margin, in the strata's own order, through
    `stratified_exact` (the reference the folded and remembered one must equal)."""
    arms = [(n1, n2) for n1, n2 in arms if n1 > 0 and n2 > 0]
    if not arms:
        return 1.0
    bound = math.exp(-sum(math.lgamma(n1 + n2 + 1) - math.lgamma(n1 + 1) - math.lgamma(n2 + 1) for n1, n2 in arms))
    if bound < level / 16 or math.prod(n1 + n2 + 1 for n1, n2 in arms) > stats.FLOOR_MARGINS:
        return bound
    smallest = 1.0
    for margins in itertools.product(*[range(n1 + n2 + 1) for n1, n2 in arms]):
        for pick in (lambda m, n1, n2: min(m, n1), lambda m, n1, n2: max(0, m - n2)):
            tables = [(pick(m, n1, n2), n1, m - pick(m, n1, n2), n2) for m, (n1, n2) in zip(margins, arms)]
            smallest = min(smallest, stats.stratified_exact(tables))
    return smallest


def test_the_folded_remembered_floor_equals_every_margin_enumerated():
    """The floor the confound scan asks of every variable and contrast folds strata of the same arm sizes together
    (each multiset of their margins once) and remembers each design; on random small designs (repeated arm sizes,
    empty arms, both the exact floor and the bound) it gives what enumerating every margin in order gives, and the
    same again when asked twice or with the strata reordered."""
    rng = random.Random(7)
    for _ in range(250):
        arms = [(rng.choice([0, 1, 1, 1, 2, 2, 3]), rng.choice([1, 1, 2, 2, 3])) for _ in range(rng.randint(1, 4))]
        while math.prod(n1 + n2 + 1 for n1, n2 in arms) > 40:  # the slow reference kept cheap
            arms.pop()
        level = rng.choice([1e-9, 0.05, 0.05 / 3, 0.5])
        slow = _floor_by_every_margin(arms, level)
        assert stats.attainable_floor(arms, level) == pytest.approx(slow, rel=1e-9), (arms, level)
        assert stats.attainable_floor(arms[::-1], level) == pytest.approx(slow, rel=1e-9), (arms, level)
    six = [(1, 1)] * 6  # the dearest design enumerated exactly: 28 margin multisets, not 729 combinations
    assert stats.attainable_floor(six, 0.05) == pytest.approx(_floor_by_every_margin(six, 0.05), rel=1e-9)
