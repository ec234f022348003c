"""Per-arm numbers for the charts when workbench.analysis is not installed: Wilson intervals for
proportions, medians with order-statistic intervals for counts and continuous metrics.

These describe the data; verdicts come from workbench.analysis (or the store), never from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Estimate:
    estimate: float | None
    lo: float | None
    hi: float | None
    n: int
    label: str
    method: str


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    if n <= 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def proportion(k: int, n: int) -> Estimate:
    lo, hi = wilson(k, n)
    rate = k / n if n else None
    label = f"{k}/{n} = {rate:.1%}" if rate is not None else f"{k}/0"
    return Estimate(rate, lo, hi, n, label, "Wilson 95%")


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def median_interval(values: list[float]) -> Estimate:
    """Median with the distribution-free interval [x_(j), x_(n-j+1)] of coverage >= 95%; the range when
    there are too few values for that (n < 6)."""
    xs = sorted(v for v in values if v is not None and not math.isnan(v))
    n = len(xs)
    if n == 0:
        return Estimate(None, None, None, 0, "no data", "")
    med = _median(xs)
    if n < 6:
        return Estimate(med, xs[0], xs[-1], n, f"median {fmt(med)} (range, n={n})", "range")
    # Largest j with P(j <= X <= n-j) >= 0.95 for X ~ Binomial(n, 1/2).
    cdf = [0.0] * (n + 1)
    acc = 0.0
    for i in range(n + 1):
        acc += math.comb(n, i) / 2 ** n
        cdf[i] = acc
    j = 1
    while j + 1 <= n // 2 and 1 - 2 * cdf[j] >= 0.95:  # P(X < j+1) tail on each side
        j += 1
    lo, hi = xs[j - 1], xs[n - j]
    return Estimate(med, lo, hi, n, f"median {fmt(med)} (n={n})", "median, 95% order-statistic")


def fmt(x: float | None) -> str:
    if x is None:
        return "–"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    if abs(x) >= 100:
        return f"{x:.1f}"
    return f"{x:.3g}"
