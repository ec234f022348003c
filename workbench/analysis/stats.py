"""The statistics behind a verdict: Wilson, Newcombe, Fisher/Boschloo (and Fisher stratified), order-statistic
medians, Mann-Whitney, Holm.

scipy does the arithmetic; this module fixes the conventions (95%, two-sided) and turns an interval
method into the p-value of "the region is excluded" so intervals and p-values always agree.

The distributions every verdict needs (normal, Student's t, binomial, hypergeometric) are scipy.special's
functions, called as scipy.stats calls them, or exact integer arithmetic: importing scipy.stats (or
statsmodels, which imports it) costs 1.2-1.9 s of CPU in every process that analyses. scipy.stats is
imported only by the tests a verdict needs less often: Boschloo's, Mann-Whitney's and Kendall's.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

ALPHA = 0.05
# benchstat's minimums: an order-statistic interval at 95% needs 6 samples, a rank test 4 per side.
MIN_SAMPLES_CI = 6
MIN_SAMPLES_TEST = 4

Interval = tuple[float, float]


# ----------------------------------------------------------------------------- distributions

def norm_isf(q: float) -> float:
    """The standard normal's upper quantile: P(Z > x) = q."""
    from scipy.special import ndtri

    return -float(ndtri(q))


def norm_ppf(q: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(q))


def norm_sf(x: float) -> float:
    from scipy.special import ndtr

    return float(ndtr(-x))


def t_isf(q: float, df: float) -> float:
    """Student's t upper quantile on df degrees of freedom."""
    from scipy.special import stdtrit

    return -float(stdtrit(df, q))


def t_sf(x: float, df: float) -> float:
    from scipy.special import stdtr

    return float(stdtr(df, -x))


def half_binomial_cdfs(n: int, upto: int) -> list[float]:
    """P(Bin(n, 1/2) <= j) for j = 0 .. upto - 1, exact (each the correctly rounded ratio of integers)."""
    out, acc, c = [], 0, 1
    for j in range(upto):
        acc += c
        out.append(acc / 2 ** n)
        c = c * (n - j) // (j + 1)
    return out


def hypergeom_counts(total: int, good: int, draws: int) -> tuple[int, list[int], int]:
    """The hypergeometric law of the good items among `draws` taken from `total`, as integers: (the
    smallest possible count, the number of draws giving each count from there, the number of draws)."""
    low, high = max(0, draws - (total - good)), min(good, draws)
    c = math.comb(good, low) * math.comb(total - good, draws - low)
    counts = [c]
    for a in range(low, high):
        c = c * (good - a) * (draws - a) // ((a + 1) * (total - good - draws + a + 1))
        counts.append(c)
    return low, counts, math.comb(total, draws)


# Above this many items the exact integers grow too long to use (their cost is quadratic in the total: two
# runs of 10^5 units took 6-9 s a test, of 10^6 a quarter of an hour): the law is then built in floating point.
EXACT_TOTAL = 20_000


def hypergeom_window(total: int, good: int, draws: int) -> tuple[int, list[float]]:
    """The hypergeometric law as `hypergeom_pmf` gives it, built in floating point from the ratio of each
    count's probability to the next's, outward from the mode until it falls below 1e-300 of the mode's, then
    normalised: (the smallest count kept, each kept count's probability). A count left out is less likely
    than 1e-300 times the mode."""
    low, high = max(0, draws - (total - good)), min(good, draws)
    mode = min(max((draws + 1) * (good + 1) // (total + 2), low), high)

    def ratio(a: int) -> float:  # P(a + 1) / P(a)
        return (good - a) * (draws - a) / ((a + 1) * (total - good - draws + a + 1))

    up, down, p, a = [], [], 1.0, mode
    while a < high and p >= 1e-300:
        p, a = p * ratio(a), a + 1
        up.append(p)
    p, a = 1.0, mode
    while a > low and p >= 1e-300:
        p, a = p / ratio(a - 1), a - 1
        down.append(p)
    probabilities = down[::-1] + [1.0] + up
    whole = math.fsum(probabilities)
    return mode - len(down), [q / whole for q in probabilities]


def hypergeom_pmf(total: int, good: int, draws: int) -> tuple[int, list[float]]:
    """(the smallest possible count, each count's probability from there), each exact to the last bit; above
    EXACT_TOTAL items, `hypergeom_window`'s (to about 1e-10, without the counts too unlikely to matter)."""
    if total > EXACT_TOTAL:
        return hypergeom_window(total, good, draws)
    low, counts, all_draws = hypergeom_counts(total, good, draws)
    return low, [c / all_draws for c in counts]


# ----------------------------------------------------------------------------- intervals and tests

def _wilson_bounds(k: float, n: float, alpha: float) -> Interval:
    # The closed form as statsmodels' proportion_confint computes it, operation for operation, clipped to
    # [0, 1] as it is.
    crit = norm_isf(alpha / 2)
    q, crit2 = k / n, crit ** 2
    denom = 1 + crit2 / n
    center = (q + crit2 / (2 * n)) / denom
    dist = crit * math.sqrt(q * (1.0 - q) / n + crit2 / (4.0 * n ** 2)) / denom
    return min(1.0, max(0.0, center - dist)), min(1.0, max(0.0, center + dist))


def wilson(k: float, n: float, alpha: float = ALPHA) -> Interval:
    """Wilson score interval for k successes in n trials (k, n may be fractional for projections)."""
    if n <= 0:
        return (0.0, 1.0)
    lo, hi = _wilson_bounds(k, n, alpha)
    # The closed form computes 0 and 1 with rounding (4e-19, 0.9999999999999999): at k = 0 and k = n the
    # bound is exactly the edge, and an equals-0 claim must not be excluded by a rounding error.
    return (0.0 if k <= 0 else lo, 1.0 if k >= n else hi)


def newcombe(k1: float, n1: float, k2: float, n2: float, alpha: float = ALPHA) -> Interval:
    """Newcombe's hybrid score interval for p1 - p2 (his method 10), from the two Wilson intervals."""
    if n1 <= 0 or n2 <= 0:
        return (-1.0, 1.0)
    p1, p2 = k1 / n1, k2 / n2
    (l1, u1), (l2, u2) = _wilson_bounds(k1, n1, alpha), _wilson_bounds(k2, n2, alpha)
    d = p1 - p2
    return (max(-1.0, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)),
            min(1.0, d + math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2)))


def wilson_cc(k: float, n: float, alpha: float = ALPHA) -> Interval:
    """Wilson's score interval with continuity correction (Newcombe 1998, method 4)."""
    if n <= 0:
        return (0.0, 1.0)
    z, p = norm_isf(alpha / 2), k / n
    lo = 0.0 if k <= 0 else \
        (2 * n * p + z * z - 1 - z * math.sqrt(max(0.0, z * z - 2 - 1 / n + 4 * p * (n * (1 - p) + 1)))) \
        / (2 * (n + z * z))
    hi = 1.0 if k >= n else \
        (2 * n * p + z * z + 1 + z * math.sqrt(max(0.0, z * z + 2 - 1 / n + 4 * p * (n * (1 - p) - 1)))) \
        / (2 * (n + z * z))
    return (max(0.0, min(lo, p)), min(1.0, max(hi, p)))


def newcombe_cc(k1: float, n1: float, k2: float, n2: float, alpha: float = ALPHA) -> Interval:
    """Newcombe's hybrid interval for p1 - p2 from continuity-corrected Wilson limits (his method 11).

    The uncorrected hybrid sits at its nominal level on average and above it at some rates (two arms of
    12/80 each: 5.1% of A/A pairs excluded 0 in 3000 simulations); the corrected one stays below it."""
    if n1 <= 0 or n2 <= 0:
        return (-1.0, 1.0)
    p1, p2 = k1 / n1, k2 / n2
    (l1, u1), (l2, u2) = wilson_cc(k1, n1, alpha), wilson_cc(k2, n2, alpha)
    d = p1 - p2
    return (max(-1.0, d - math.hypot(p1 - l1, u2 - p2)), min(1.0, d + math.hypot(u1 - p1, p2 - l2)))


def fisher(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided Fisher exact p-value for equal proportions: the probability, given the margins, of the
    tables no more likely than the one observed. Exact: the tables are compared as integer counts, so a
    tie is a tie (scipy's `fisher_exact` compares floating probabilities within 1e-14)."""
    if n1 <= 0 or n2 <= 0:
        return 1.0
    if n1 + n2 > EXACT_TOTAL:
        # In floating point, a tie within 1e-7 as scipy's; a table outside the window is less likely than any in it.
        low, pmf = hypergeom_window(n1 + n2, k1 + k2, n1)
        seen = pmf[k1 - low] if 0 <= k1 - low < len(pmf) else 0.0
        return min(1.0, math.fsum(q for q in pmf if q <= seen * (1 + 1e-7)))
    low, counts, all_draws = hypergeom_counts(n1 + n2, k1 + k2, n1)
    observed = counts[k1 - low]
    return min(1.0, sum(c for c in counts if c <= observed) / all_draws)


def stratified_exact(tables: Sequence[tuple[int, int, int, int]]) -> float:
    """Two-sided exact conditional test of no association in 2x2 tables stratified by a third factor.

    Each table is (k1, n1, k2, n2): k of n with the outcome at one value of the factor, k of n at the other.
    Conditioning on every stratum's margins, the sum of the k1 follows the convolution of the strata's
    hypergeometric laws (the exact form of the Cochran-Mantel-Haenszel test, R's `mantelhaen.test(exact =
    TRUE)`); the p-value adds the sums no more likely than the one observed, as Fisher's test does, to which
    it reduces on one stratum. A stratum where the factor or the outcome did not vary is a single point: it
    carries no information and rightly changes nothing.
    """
    import numpy as np

    dist, low_sum, observed = np.array([1.0]), 0, 0
    for k1, n1, k2, n2 in ((int(round(a)), int(round(b)), int(round(c)), int(round(d))) for a, b, c, d in tables):
        if n1 <= 0 or n2 <= 0:
            continue
        low, pmf = hypergeom_pmf(n1 + n2, k1 + k2, n1)
        dist = np.convolve(dist, pmf)
        low_sum, observed = low_sum + low, observed + k1
    dist = dist / dist.sum()
    # A stratum of more than EXACT_TOTAL units keeps only its likely sums: one outside them is less likely than any.
    seen = dist[observed - low_sum] if 0 <= observed - low_sum < len(dist) else 0.0
    return float(min(1.0, dist[dist <= seen * (1 + 1e-7)].sum()))


# The most margin combinations `attainable_floor` enumerates; past it, the bound stands in (counting a test is safe).
FLOOR_MARGINS = 2000


def attainable_floor(arms: Sequence[tuple[int, int]], level: float) -> float:
    """A floor under every p `stratified_exact` can give over strata of these arm sizes (n1, n2 each), whatever the
    outcomes: Tarone's minimum attainable p, which the design alone decides (so a rule may leave out of its count a
    test that cannot reach its share of alpha). Exact wherever it is near `level` or above it: the smallest p over
    every stratum's outcome margins, each at the two extreme sums (the sum's law is log-concave, so its least likely
    values are its ends). Where the design's least likely table (1 / C(n1 + n2, min(n1, n2)) a stratum, their
    product: every attainable p is at least that table's probability) is far below `level`, that bound, enough to
    say the test can reach it. A stratum with one arm empty tests nothing (1.0 where none is left).

    The confound scan asks it of every variable and contrast, mostly of the same few designs: it is remembered by
    design (the strata's order changes nothing, so they are sorted), and strata of the same arm sizes are folded
    together, each multiset of their margins taken once (the sum's law is the same whichever of them has which
    margin): 6 strata of 1 run against 1 take 28 margin combinations, not 3^6 = 729."""
    design = tuple(sorted((int(n1), int(n2)) for n1, n2 in arms if n1 > 0 and n2 > 0))
    return _floor(design, float(level))


@functools.lru_cache(maxsize=4096)
def _floor(arms: tuple[tuple[int, int], ...], level: float) -> float:
    """`attainable_floor` of a design given as its sorted arm sizes, each arm non-empty."""
    import itertools

    import numpy as np

    if not arms:
        return 1.0
    bound = math.exp(-sum(math.lgamma(n1 + n2 + 1) - math.lgamma(n1 + 1) - math.lgamma(n2 + 1) for n1, n2 in arms))
    if bound < level / 16 or math.prod(n1 + n2 + 1 for n1, n2 in arms) > FLOOR_MARGINS:
        return bound
    kinds = sorted(set(arms))
    smallest = 1.0
    for margins in itertools.product(*[itertools.combinations_with_replacement(range(n1 + n2 + 1), arms.count(a))
                                       for a in kinds for n1, n2 in [a]]):
        strata = [(n1, n2, m) for (n1, n2), ms in zip(kinds, margins) for m in ms]
        for top in (False, True):  # the least likely sum: its lowest, then its highest
            dist, low_sum, observed = np.array([1.0]), 0, 0
            for n1, n2, m in strata:
                low, pmf = _pmf(n1 + n2, m, n1)
                dist = np.convolve(dist, pmf)
                low_sum, observed = low_sum + low, observed + (min(m, n1) if top else max(0, m - n2))
            dist = dist / dist.sum()
            seen = dist[observed - low_sum]
            smallest = min(smallest, float(min(1.0, dist[dist <= seen * (1 + 1e-7)].sum())))
    return smallest


@functools.lru_cache(maxsize=4096)
def _pmf(total: int, good: int, draws: int) -> tuple[int, Any]:
    """`hypergeom_pmf` as an array, remembered for `_floor` (never written to)."""
    import numpy as np

    low, pmf = hypergeom_pmf(total, good, draws)
    return low, np.array(pmf)


def boschloo(k1: int, n1: int, k2: int, n2: int) -> float | None:
    """Two-sided Boschloo exact p-value; None when too large to compute quickly.

    Boschloo's test is more powerful than Fisher's on most tables, not on all: 0/91 vs 1/36 gives 0.45
    against Fisher's 0.28. It is reported beside Fisher, never instead of it.
    """
    from scipy.stats import boschloo_exact

    if n1 <= 0 or n2 <= 0:
        return 1.0
    if n1 * n2 > 10_000:  # the unconditional search is O(n1*n2) per nuisance point; Fisher stands in
        return None
    return float(boschloo_exact([[k1, k2], [n1 - k1, n2 - k2]], alternative="two-sided", n=16).pvalue)


def bonferroni(p: float, comparisons: int) -> float:
    """`p` adjusted for the `comparisons` it was chosen from: min(1, p * comparisons)."""
    return min(1.0, p * comparisons)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (family-wise error control over several predictions)."""
    if not pvalues:
        return []
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted, running = [0.0] * len(order), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * float(pvalues[i])))
        adjusted[i] = running
    return adjusted


# ----------------------------------------------------------------------------- regions and intervals

def relation(interval: Interval, bounds: Interval, support: str | None = None) -> str:
    """'inside' (interval within the region), 'outside' (disjoint) or 'straddles', judged exactly
    (regions.relation) on the support of a metric kind ('proportion', 'count'; None: the real line)."""
    from workbench.analysis.regions import Region, Support
    from workbench.analysis.regions import relation as judge

    return judge(interval, Region(bounds[0], bounds[1], Support.of(support)))


def interval_pvalue(ci: Callable[[float], Interval], bounds: Interval, want: str) -> float:
    """Smallest alpha at which the (1 - alpha) interval is `want` ('outside'/'inside') the region.

    For Wilson this is the score test's p-value; for any interval method it is the p-value that
    agrees with the interval: p < 0.05 exactly when the 95% interval is outside (or inside).
    """
    def ok(alpha: float) -> bool:
        return relation(ci(alpha), bounds) == want

    if not ok(0.999999):
        return 1.0
    if ok(1e-12):
        return 1e-12
    lo, hi = math.log(1e-12), math.log(0.999999)  # ok(hi) holds, ok(lo) does not; intervals shrink as alpha grows
    for _ in range(48):
        mid = (lo + hi) / 2
        if ok(math.exp(mid)):
            hi = mid
        else:
            lo = mid
    return float(math.exp(hi))


def score_pvalue(k: float, n: float, bounds: Interval, want: str, df: int | None = None) -> float:
    """p-value of the score test that the Wilson interval inverts: p < 0.05 exactly when the 95% Wilson
    interval is `want` ('outside' or 'inside') the region `bounds`. With `df` the statistic is referred
    to Student's t (the run-level interval, whose variance is estimated from df + 1 runs)."""
    if n <= 0:
        return 1.0
    phat = k / n
    lo, hi = bounds

    def p_beyond(bound: float) -> float:
        # Two-sided score p-value of H0: p = bound, evaluated where phat lies beyond it.
        if bound <= 0 or bound >= 1:
            return 0.0 if phat != bound else 1.0
        z = abs(phat - bound) / math.sqrt(bound * (1 - bound) / n)
        return min(1.0, 2 * (norm_sf(z) if df is None else t_sf(z, df)))

    if want == "outside":
        if phat > hi:
            return p_beyond(hi)
        if phat < lo:
            return p_beyond(lo)
        return 1.0
    if not (lo <= phat <= hi):
        return 1.0
    parts = [p_beyond(b) for b in (lo, hi) if 0 < b < 1]
    if lo >= 1 or hi <= 0:
        return 1.0
    return max(parts) if parts else 0.0


def binomial_tail(k: float, n: float, c: float, upper: bool) -> float:
    """Exact P(X >= k) (upper) or P(X <= k) for X ~ Bin(n, c); k, n may be fractional (effective counts)."""
    from scipy.special import betainc

    if upper:
        if k <= 0:
            return 1.0
        if c <= 0:
            return 0.0
        return float(betainc(k, n - k + 1, c)) if c < 1 else 1.0
    if k >= n:
        return 1.0
    if c >= 1:
        return 0.0
    return float(betainc(n - k, k + 1, 1 - c)) if c > 0 else 1.0


def binomial_pvalue(k: float, n: float, bounds: Interval, want: str) -> float:
    """Exact binomial p-value, two-sided (twice the tail beyond the nearer bound, as a 95% interval
    spends 2.5% on each side), of `want`: 'outside' tests the region, 'inside' tests its complement."""
    if n <= 0:
        return 1.0
    lo, hi = max(bounds[0], 0.0), min(bounds[1], 1.0)
    phat = k / n
    if want == "outside":
        if phat > hi:
            return min(1.0, 2 * binomial_tail(k, n, hi, upper=True))
        if phat < lo:
            return min(1.0, 2 * binomial_tail(k, n, lo, upper=False))
        return 1.0
    if not (lo <= phat <= hi) or lo >= hi:
        return 1.0
    parts = [2 * binomial_tail(k, n, hi, upper=False) if hi < 1 else 0.0,
             2 * binomial_tail(k, n, lo, upper=True) if lo > 0 else 0.0]
    return min(1.0, max(parts))


# ----------------------------------------------------------------------------- medians (benchstat)

def min_samples(level: float) -> int:
    """Fewest samples whose range covers the median with probability `level` (6 at 95%)."""
    return max(1, math.ceil(math.log2(2 / (1 - level))))


@dataclass
class MedianSummary:
    n: int
    median: float | None
    interval: Interval | None
    confidence: float | None  # the interval's coverage; None for one value, which has no interval to cover with
    warning: str | None


def median_ci(values: Sequence[float], level: float = 1 - ALPHA) -> MedianSummary:
    """Median with the distribution-free order-statistic interval, as benchstat reports it."""
    xs = sorted(float(v) for v in values)
    n = len(xs)
    if n == 0:
        return MedianSummary(0, None, None, 0.0, "no samples")
    med = float(xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2)
    # [x_(j+1), x_(n-j)] covers the median with probability 1 - 2 P(Bin(n, 1/2) <= j); take the
    # narrowest such interval that still reaches `level` (coverage falls as j grows).
    cover = [1 - 2 * c for c in half_binomial_cdfs(n, n // 2)]
    ok = [j for j, c in enumerate(cover) if c >= level]
    if not ok:
        need = f"need >= {min_samples(level)} samples for a confidence interval at level {level:.3g}"
        if n == 1:  # one value has no range, and its "coverage" (0%) claims nothing
            return MedianSummary(n, med, None, None, f"{need} (one sample has no range)")
        c = 1 - 2 * 0.5 ** n
        return MedianSummary(n, med, (xs[0], xs[-1]), c, f"{need} (the range of {n} covers the median with {c:.0%})")
    j = ok[-1]
    return MedianSummary(n, med, (xs[j], xs[n - 1 - j]), cover[j], None)


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> tuple[float | None, str | None]:
    """Two-sided Mann-Whitney U p-value, with benchstat's minimum-sample warning."""
    from scipy.stats import mannwhitneyu

    if len(a) == 0 or len(b) == 0:
        return None, "no samples in one arm"
    warning = None
    if len(a) < MIN_SAMPLES_TEST or len(b) < MIN_SAMPLES_TEST:
        warning = f"need >= {MIN_SAMPLES_TEST} samples per arm to detect a difference at alpha level {ALPHA}"
    if len(set(a) | set(b)) == 1:
        return 1.0, warning
    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue), warning


def shift_ci(a: Sequence[float], b: Sequence[float], alpha: float = ALPHA) -> tuple[float | None, Interval | None]:
    """Hodges-Lehmann shift a - b and its distribution-free interval (the one Mann-Whitney inverts).

    None when the samples are too few for a (1 - alpha) interval.
    """
    import numpy as np

    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return None, None
    diffs = np.sort(np.subtract.outer(np.asarray(a, float), np.asarray(b, float)).ravel())
    est = float(np.median(diffs))
    k = _shift_rank(n, m, alpha)
    if k < 1:
        return est, None
    return est, (float(diffs[k - 1]), float(diffs[n * m - k]))


def _shift_rank(n: int, m: int, alpha: float) -> int:
    """The rank among the n * m pairwise differences of `shift_ci`'s lower end (normal approximation to
    Mann-Whitney's null distribution): below 1, the samples are too few for a (1 - alpha) interval."""
    return int(math.floor(n * m / 2 - norm_ppf(1 - alpha / 2) * math.sqrt(n * m * (n + m + 1) / 12)))


def shift_runs_needed(n: int, m: int, alpha: float = ALPHA) -> int:
    """More runs in each arm (one each a replicate, as the runner adds them) after which arms of n and m runs give
    `shift_ci` a (1 - alpha) interval and Mann-Whitney its MIN_SAMPLES_TEST per arm: for the arms as they are, not
    as if both had the fewer (a larger arm narrows the interval too). Adding runs always gets there."""
    more = max(0, MIN_SAMPLES_TEST - min(n, m))
    while _shift_rank(n + more, m + more, alpha) < 1:
        more += 1
    return more


def sign_pvalue(values: Sequence[float], bounds: Interval, want: str) -> float:
    """p-value that inverts the order-statistic interval of the median (the sign test): p <= alpha exactly
    when the (1 - alpha) interval `median_ci` gives is `want` ('outside' / 'inside') the region."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        return 1.0
    lo, hi = bounds
    # The interval with j values cut from each end covers the median with 1 - 2 P(Bin(n, 1/2) <= j); it
    # clears the region once j reaches the number of values that would otherwise stay in it.
    if want == "outside":
        below, above = sum(x < lo for x in xs), sum(x > hi for x in xs)
        j = min(n - below, n - above)
    else:
        j = max(sum(x < lo for x in xs), sum(x > hi for x in xs))
    if 2 * j >= n:
        return 1.0
    return min(1.0, 2 * half_binomial_cdfs(n, j + 1)[j])


def shift_pvalue(a: Sequence[float], b: Sequence[float], bounds: Interval, want: str) -> float:
    """p-value that inverts the Hodges-Lehmann interval (Mann-Whitney's): p < alpha exactly when
    `shift_ci` at alpha is `want` the region."""
    def ci(alpha: float) -> Interval:
        iv = shift_ci(a, b, alpha)[1]
        return iv if iv is not None else (-math.inf, math.inf)

    return interval_pvalue(ci, bounds, want)


def search_smallest(start: float, ok: Callable[[float], bool], integer: bool = True, limit: float = 1e7) -> Any:
    """The smallest value from `start` (an integer where `integer`) for which `ok` holds, found by doubling then
    bisection, assuming `ok` stays true once true; None where nothing up to `limit` does (for a real value, a
    factor of `start`)."""
    cap = limit if integer else limit / max(start, 1.0)
    hi = max(start, 1.0)
    lo = hi / 2 if hi > start else start
    while not ok(hi):
        if hi >= cap:
            return None
        # The last doubling stops at the limit, so a value between it and the limit is bisected, not given up on.
        lo, hi = hi, min(hi * 2, cap)
    for _ in range(40):
        if hi - lo <= (1 if integer else 1e-3):
            break
        mid = (lo + hi) / 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    if not integer:
        return hi
    # The bracket (lo, hi] is at most one wide: the whole number below hi may hold already (246 where 247 was given).
    below = math.floor(hi)
    return below if below > lo and below < hi and ok(below) else int(math.ceil(hi))
