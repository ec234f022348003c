"""Per-arm numbers for metrics an analysis does not summarise (probe counts, undeclared metrics), and
number formatting. The statistics themselves are `workbench.analysis.stats`: one implementation.

These describe the data; verdicts come from workbench.analysis, never from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Estimate:
    estimate: float | None
    lo: float | None
    hi: float | None
    n: int
    label: str
    method: str


def proportion(k: int, n: int) -> Estimate:
    from workbench.analysis.stats import wilson

    lo, hi = wilson(k, n)
    rate = k / n if n else None
    label = f"{k}/{n} = {rate:.1%}" if rate is not None else f"{k}/0"
    return Estimate(rate, lo, hi, n, label, "Wilson 95%")


def median_interval(values: list[float]) -> Estimate:
    """Median with the distribution-free interval of coverage >= 95%; the range when there are too few
    values for that."""
    from workbench.analysis.stats import median_ci

    xs = [v for v in values if v is not None and not math.isnan(v)]
    if not xs:
        return Estimate(None, None, None, 0, "no data", "")
    m = median_ci(xs)
    lo, hi = m.interval or (None, None)
    if m.warning:
        return Estimate(m.median, lo, hi, m.n, f"median {fmt(m.median)} (range, n={m.n})", "range")
    return Estimate(m.median, lo, hi, m.n, f"median {fmt(m.median)} (n={m.n})", "median, 95% order-statistic")


def fmt(x: float | None) -> str:
    if x is None:
        return "–"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    if abs(x) >= 100:
        return f"{x:.1f}"
    return f"{x:.3g}"
