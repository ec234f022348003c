"""The statistics behind a verdict: Wilson, Newcombe, Fisher/Boschloo, order-statistic medians, Mann-Whitney, Holm.

scipy and statsmodels do the arithmetic; this module fixes the conventions (95%, two-sided) and turns
an interval method into the p-value of "the region is excluded" so intervals and p-values always agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

ALPHA = 0.05
# benchstat's minimums: an order-statistic interval at 95% needs 6 samples, a rank test 4 per side.
MIN_SAMPLES_CI = 6
MIN_SAMPLES_TEST = 4

Interval = tuple[float, float]


def wilson(k: float, n: float, alpha: float = ALPHA) -> Interval:
    """Wilson score interval for k successes in n trials (k, n may be fractional for projections)."""
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0:
        return (0.0, 1.0)
    lo, hi = proportion_confint(k, n, alpha=alpha, method="wilson")
    return (max(0.0, float(lo)), min(1.0, float(hi)))


def newcombe(k1: float, n1: float, k2: float, n2: float, alpha: float = ALPHA) -> Interval:
    """Newcombe's hybrid score interval for p1 - p2."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    if n1 <= 0 or n2 <= 0:
        return (-1.0, 1.0)
    lo, hi = confint_proportions_2indep(k1, n1, k2, n2, method="newcomb", compare="diff", alpha=alpha)
    return (max(-1.0, float(lo)), min(1.0, float(hi)))


def fisher(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided Fisher exact p-value for equal proportions."""
    from scipy.stats import fisher_exact

    if n1 <= 0 or n2 <= 0:
        return 1.0
    return float(fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue)


def boschloo(k1: int, n1: int, k2: int, n2: int) -> float | None:
    """Two-sided Boschloo exact p-value (uniformly more powerful than Fisher); None when too large to compute quickly."""
    from scipy.stats import boschloo_exact

    if n1 <= 0 or n2 <= 0:
        return 1.0
    if n1 * n2 > 10_000:  # the unconditional search is O(n1*n2) per nuisance point; Fisher stands in
        return None
    return float(boschloo_exact([[k1, k2], [n1 - k1, n2 - k2]], alternative="two-sided", n=16).pvalue)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (family-wise error control over several predictions)."""
    if not pvalues:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(list(pvalues), method="holm")[1]]


# ----------------------------------------------------------------------------- regions and intervals

def relation(interval: Interval, bounds: Interval) -> str:
    """'inside' (interval within the region), 'outside' (disjoint) or 'straddles'."""
    lo, hi = bounds
    a, b = interval
    if lo <= a and b <= hi:
        return "inside"
    if b < lo or a > hi:
        return "outside"
    return "straddles"


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


def score_pvalue(k: float, n: float, bounds: Interval, want: str) -> float:
    """p-value of the score test that the Wilson interval inverts: p < 0.05 exactly when the 95% Wilson
    interval is `want` ('outside' or 'inside') the region `bounds`."""
    from scipy.stats import norm

    if n <= 0:
        return 1.0
    phat = k / n
    lo, hi = bounds

    def p_beyond(bound: float) -> float:
        # Two-sided score p-value of H0: p = bound, evaluated where phat lies beyond it.
        if bound <= 0 or bound >= 1:
            return 0.0 if phat != bound else 1.0
        z = abs(phat - bound) / math.sqrt(bound * (1 - bound) / n)
        return float(min(1.0, 2 * norm.sf(z)))

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


# ----------------------------------------------------------------------------- medians (benchstat)

def min_samples(level: float) -> int:
    """Fewest samples whose range covers the median with probability `level` (6 at 95%)."""
    return max(1, math.ceil(math.log2(2 / (1 - level))))


@dataclass
class MedianSummary:
    n: int
    median: float | None
    interval: Interval | None
    confidence: float
    warning: str | None


def median_ci(values: Sequence[float], level: float = 1 - ALPHA) -> MedianSummary:
    """Median with the distribution-free order-statistic interval, as benchstat reports it."""
    from scipy.stats import binom

    xs = sorted(float(v) for v in values)
    n = len(xs)
    if n == 0:
        return MedianSummary(0, None, None, 0.0, "no samples")
    med = float(xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2)
    # [x_(j+1), x_(n-j)] covers the median with probability 1 - 2 P(Bin(n, 1/2) <= j); take the
    # narrowest such interval that still reaches `level` (coverage falls as j grows).
    import numpy as np

    cover = 1 - 2 * binom.cdf(np.arange(n // 2), n, 0.5)
    ok = np.nonzero(cover >= level)[0]
    if ok.size == 0:
        c = 1 - 2 * 0.5 ** n
        return MedianSummary(n, med, (xs[0], xs[-1]), c,
                             f"need >= {min_samples(level)} samples for confidence interval at level {level:.3g} "
                             f"(the range of {n} covers the median with {c:.0%})")
    j = int(ok[-1])
    return MedianSummary(n, med, (xs[j], xs[n - 1 - j]), float(cover[j]), None)


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
    from scipy.stats import norm

    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return None, None
    diffs = np.sort(np.subtract.outer(np.asarray(a, float), np.asarray(b, float)).ravel())
    est = float(np.median(diffs))
    k = int(math.floor(n * m / 2 - norm.ppf(1 - alpha / 2) * math.sqrt(n * m * (n + m + 1) / 12)))
    if k < 1:
        return est, None
    return est, (float(diffs[k - 1]), float(diffs[n * m - k]))
