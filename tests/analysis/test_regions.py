"""Property tests over random (k, n): the region judgement and the p-values that invert the intervals agree,
at the edges 0 and 1 as everywhere else, for at_most, at_least, equals and between."""

from __future__ import annotations

import math

import numpy as np

from workbench.analysis import regions, stats
from workbench.analysis import sequential as seq

PROP = regions.Support.PROPORTION


def _random_region(rng: np.random.Generator, k: int, n: int) -> tuple[float, float]:
    # Bounds drawn where rounding bites: the support's edges, the estimate itself, and anywhere.
    pool = [0.0, 1.0, k / n, float(rng.uniform()), float(rng.uniform()) ** 4]
    a, b = sorted(float(rng.choice(pool)) for _ in range(2))
    kind = rng.integers(4)
    if kind == 0:
        return (-math.inf, a)      # at_most
    if kind == 1:
        return (b, math.inf)       # at_least
    if kind == 2:
        return (a, a)              # equals
    return (a, b)                  # between


def _random_kn(rng: np.random.Generator) -> tuple[int, int]:
    n = int(rng.integers(1, 3001))
    k = int(rng.choice([0, n, int(rng.integers(0, n + 1)), min(n, int(rng.integers(0, 4)))]))
    return k, n


def test_wilson_regions_agree_with_the_score_test_over_random_k_n():
    rng = np.random.default_rng(12)
    for _ in range(3000):
        k, n = _random_kn(rng)
        region = regions.Region(*_random_region(rng, k, n), PROP)
        snapped = region.snapped()
        rel = regions.relation(stats.wilson(k, n), region)
        bounds = (snapped.lo, snapped.hi)
        assert (rel == "outside") == (stats.score_pvalue(k, n, bounds, "outside") < stats.ALPHA), (k, n, bounds)
        assert (rel == "inside") == (stats.score_pvalue(k, n, bounds, "inside") < stats.ALPHA), (k, n, bounds)
        # A region that holds the estimate is never excluded; the exact edges are never excluded by rounding.
        if snapped.lo <= k / n <= snapped.hi:
            assert rel != "outside", (k, n, bounds)
        if (k == 0 and snapped.lo == 0.0) or (k == n and snapped.hi == 1.0):
            assert rel != "outside", (k, n, bounds)


def test_exact_binomial_p_agrees_with_the_clopper_pearson_interval():
    from statsmodels.stats.proportion import proportion_confint

    rng = np.random.default_rng(13)
    for _ in range(1500):
        k, n = _random_kn(rng)
        region = regions.Region(*_random_region(rng, k, n), PROP)
        lo, hi = proportion_confint(k, n, alpha=stats.ALPHA, method="beta")
        cp = (0.0 if k == 0 else float(lo), 1.0 if k == n else float(hi))
        rel = regions.relation(cp, region)
        s = region.snapped()
        p_out = stats.binomial_pvalue(k, n, (s.lo, s.hi), "outside")
        if abs(p_out - stats.ALPHA) > 1e-9:
            assert (rel == "outside") == (p_out < stats.ALPHA), (k, n, s, p_out)


def test_a_fixed_rate_decision_never_outruns_the_exact_test_over_random_k_n():
    """clustered.rate_outcome decides from Wilson's interval only where the exact binomial test agrees, so a
    decision's one-sided error is at most alpha / 2 at the bound; its p-values are the tests that decided."""
    from workbench.analysis import clustered

    rng = np.random.default_rng(15)
    for _ in range(2000):
        k, n = _random_kn(rng)
        region = regions.Region(*_random_region(rng, k, n), PROP)
        s = region.snapped()
        outcome, p_against, p_for, _ = clustered.rate_outcome(clustered.effective([k], [n]), region)
        wilson = regions.outcome(stats.wilson(k, n), region)
        assert outcome in (wilson, "inconclusive"), (k, n, s)
        if outcome == "falsified":
            assert stats.binomial_pvalue(k, n, (s.lo, s.hi), "outside") < stats.ALPHA, (k, n, s)
            assert p_against < stats.ALPHA, (k, n, s, p_against)
        if outcome == "supported":
            assert stats.binomial_pvalue(k, n, (s.lo, s.hi), "inside") < stats.ALPHA, (k, n, s)
            assert p_for < stats.ALPHA, (k, n, s, p_for)
        if outcome != wilson:  # held back by the exact test: the p-value says so
            assert (p_against if wilson == "falsified" else p_for) >= stats.ALPHA, (k, n, s)


def test_one_event_in_160_does_not_falsify_at_most_one_in_1000():
    """Wilson's lower end for 1/160 is 0.0011, above 0.001, though P(X >= 1 | 160, 0.001) = 0.15: a true rate
    of 0.001 was falsified in 15% of experiments, where a 95% interval promises 2.5% a side."""
    from workbench.analysis import clustered

    region = regions.Region(-math.inf, 0.001, PROP)
    assert stats.wilson(1, 160)[0] > 0.001
    outcome, p_against, _, held = clustered.rate_outcome(clustered.effective([1], [160]), region)
    assert outcome == "inconclusive" and held is not None and abs(p_against - 2 * 0.147914) < 1e-4, p_against
    # The true rate at the bound is falsified no more often than the 2.5% a side the level promises.
    from scipy.stats import binom

    for n, c in ((160, 0.001), (160, 0.02), (400, 0.01), (80, 0.05)):
        first = next(k for k in range(n + 1)
                     if clustered.rate_outcome(clustered.effective([k], [n]), regions.Region(-math.inf, c, PROP))[0]
                     == "falsified")
        assert binom.sf(first - 1, n, c) <= stats.ALPHA / 2, (n, c, first)


def test_runs_needed_counts_until_the_exact_test_agrees_too():
    """Runs of 7, 0, 0 events in 100 (over-dispersed: t on 2 df) against <= 0.001: Wilson's interval clears the
    bound but the binomial test on the effective counts does not (p = 0.089), and 'more runs would decide it'
    said 0 (Wilson alone already cleared it)."""
    from workbench.analysis import clustered
    from workbench.analysis.predictions import runs_needed_arm

    e = clustered.effective([7, 0, 0], [100, 100, 100])
    region = regions.Region(-math.inf, 0.001, PROP)
    assert e.df == 2 and clustered.rate_outcome(e, region)[0] == "inconclusive"
    assert regions.outcome(clustered.rate_interval(e), region) == "falsified"
    more = runs_needed_arm(e, 3, (-math.inf, 0.001))
    assert more is not None and more >= 1, more
    f = (3 + more) / 3
    bigger = clustered.Effective(e.k * f, e.n * f, e.k_eff * f, e.n_eff * f, e.design_effect, e.method, 3 + more - 1,
                                 e.reason, e.dispersion)
    assert clustered.rate_outcome(bigger, region)[0] == "falsified"


def test_runs_needed_between_the_last_doubling_and_the_limit_is_found():
    """Runs of 5, 12, 20 events in 1000 (t on 2 df) against <= 0.01249 need 8,927 more runs, under the 10,000-run
    limit: the search doubled 3 -> 6 -> ... -> 6,144 -> 12,288, past the limit, and answered None instead of
    bisecting below it. Checked against every count of runs, one by one."""
    from workbench.analysis import clustered
    from workbench.analysis.predictions import runs_needed_arm

    e = clustered.effective([5, 12, 20], [1000, 1000, 1000])
    region = regions.Region(-math.inf, 0.01249, PROP)

    def decided(more: int) -> bool:
        f = (3 + more) / 3
        bigger = clustered.Effective(e.k * f, e.n * f, e.k_eff * f, e.n_eff * f, e.design_effect, e.method,
                                     3 + more - 1, e.reason, e.dispersion)
        return clustered.rate_outcome(bigger, region)[0] != "inconclusive"

    assert e.df == 2 and not decided(0)
    brute = next(m for m in range(1, 10_000 - 3 + 1) if decided(m))
    assert 8_192 < 3 + brute < 10_000
    assert runs_needed_arm(e, 3, (-math.inf, 0.01249)) == brute


def test_every_edge_case_the_audit_found_is_now_straddling():
    bad = []
    for n in range(1, 3001):
        for k, region in ((0, regions.Region(0.0, 0.0, PROP)), (0, regions.Region(-math.inf, 0.0, PROP)),
                          (n, regions.Region(1.0, 1.0, PROP)), (n, regions.Region(1.0, math.inf, PROP))):
            if regions.relation(stats.wilson(k, n), region) == "outside":
                bad.append((k, n))
    assert bad == []


def test_median_regions_agree_with_the_sign_test():
    rng = np.random.default_rng(14)
    for _ in range(600):
        n = int(rng.integers(6, 40))
        vals = list(rng.integers(0, 20, size=n).astype(float))
        m = stats.median_ci(vals)
        a, b = sorted(float(x) for x in rng.integers(-2, 22, size=2))
        for bounds in [(-math.inf, a), (b, math.inf), (a, a), (a, b)]:
            rel = regions.relation(m.interval, regions.Region(*bounds, regions.Support.COUNT))
            for want in ("outside", "inside"):
                assert (rel == want) == (stats.sign_pvalue(vals, bounds, want) < stats.ALPHA), (vals, bounds, want)


def test_sequential_decisions_are_the_region_against_the_shown_interval():
    rng = np.random.default_rng(15)
    for _ in range(40):
        p = float(rng.choice([0.0, 0.01, 0.02, 0.05, 0.18]))
        ks = rng.binomial(80, p, size=4).cumsum()
        path = [(float(k), 80.0 * (i + 1)) for i, k in enumerate(ks)]
        region = regions.Region(*_random_region(rng, int(ks[-1]), 320), PROP)
        s = region.snapped()
        family = int(rng.integers(1, 4))
        outcome, e_against, e_for = seq.judge_proportion(path, (s.lo, s.hi), alpha=seq.ALPHA / family)
        iv = seq.e_interval(path, alpha=seq.ALPHA / family)
        assert outcome == regions.outcome(iv, region)
        # A falsification needs the e-value against the region at the family's threshold (up to bisection).
        if outcome == "falsified":
            assert e_against >= 2 * family / seq.ALPHA * (1 - 1e-6)
