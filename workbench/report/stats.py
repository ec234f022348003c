"""Per-arm numbers for metrics an analysis does not summarise (probe counts, undeclared metrics), and
number formatting. The statistics themselves are `workbench.analysis.stats`: one implementation.

These describe the data; verdicts come from workbench.analysis, never from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from workbench.analysis import display


@dataclass(frozen=True)
class Estimate:
    estimate: float | None
    lo: float | None
    hi: float | None
    n: int
    label: str
    method: str


def proportion(pairs: list[tuple[float, float]], replayed: bool | None = None) -> Estimate:
    """A rate over runs given as (k, n) per run, with the interval the analysis uses: the runs as the
    unit (analysis.clustered), which is the pooled Wilson interval when their spread is binomial. `replayed`: as
    clustered.effective takes it (analysis.predictions.workload_replayed of the same runs)."""
    from workbench.analysis import clustered

    k, n = int(sum(k for k, _ in pairs)), int(sum(n for _, n in pairs))
    e = clustered.effective([k for k, _ in pairs], [n for _, n in pairs], replayed)
    lo, hi = clustered.rate_interval(e)
    rate = k / n if n else None
    label = f"{k}/{n} = {display.rate(rate)}" if rate is not None else f"{k}/0"
    return Estimate(rate, lo, hi, n, label, clustered.interval_label(e))


def median_interval(values: list[float]) -> Estimate:
    """Median with the distribution-free interval of coverage >= 95%; the range when there are too few
    values for that."""
    from workbench.analysis.stats import median_ci

    xs = [v for v in values if v is not None and not math.isnan(v)]
    if not xs:
        return Estimate(None, None, None, 0, "no data", "")
    if len(xs) == 1:  # one value: no median, range or coverage to claim
        return Estimate(xs[0], None, None, 1, f"one run: {display.recorded(xs[0])}", "one run")
    m = median_ci(xs)
    lo, hi = m.interval or (None, None)
    median = display.estimate(m.median, m.interval) if m.interval else display.number(m.median)
    if m.warning:
        return Estimate(m.median, lo, hi, m.n, f"median {median} (range, n={m.n})", "range")
    return Estimate(m.median, lo, hi, m.n, f"median {median} (n={m.n})", "median, 95% order-statistic")


def fmt(x: float | None) -> str:
    """A recorded value (a run's metric in the run page, the runs list, a hypothesis's runs table, a run's tooltip)
    with every digit it was recorded with (display.recorded): 346.3, 1,234.56, 230,000; a dash for none. An
    estimate reads as an interval's ends do instead (display.number, display.estimate)."""
    if x is None:
        return "–"
    return display.recorded(x)


def fmt_value(x: float | None, rate: bool) -> str:
    """A run's metric in a table cell or tooltip: a rate (a proportion) in percent, as the verdict's text gives it,
    any other as recorded (`fmt`); a value not recorded as an empty cell."""
    if x is None:
        return ""
    return display.rate(x) if rate and math.isfinite(x) else fmt(x)
