"""How a proportion's numbers read wherever wb shows them (verdict text, CLI, HTML, Markdown): a rate in percent,
a difference of two rates in percentage points, a region as written in hypotheses.yaml with the same beside it.

Only how numbers are shown: nothing here changes a statistic.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

PERCENT = "percent"  # a rate: 17.5%
POINTS = "points"  # a difference of two rates: +3.0 points


def value(exp: Any, metric: str, x: float) -> str:
    """One value of `metric` as wb prints it: a proportion's in percent (17.5%), any other as it is (3)."""
    return rate(x) if is_proportion(exp, metric) and math.isfinite(x) else f"{x:g}"


def guard(g: Any, exp: Any) -> str:
    """A guard as written, with a proportion's bound also in percent, as a prediction's region reads:
    corruption_rate (control) >= 0.2 (20%); aborts (treatment) == 0."""
    return g.describe() + beside_region(g.bounds(), PERCENT if is_proportion(exp, g.metric) else None)


def is_proportion(exp: Any, metric: str) -> bool:
    """Whether the experiment `exp` declares `metric` a proportion (through `same_as`): it reads as a percentage."""
    spec = exp.metrics.get(exp.repeated(metric)) if exp is not None else None
    return spec is not None and spec.kind == "proportion"


def scale(kind: str | None, difference: bool = False) -> str | None:
    """How a metric of `kind` reads: a proportion in percent, a difference of two in points; None: as it is."""
    if kind != "proportion":
        return None
    return POINTS if difference else PERCENT


def rate(x: float) -> str:
    """A rate in percent: 0.175 -> 17.5%."""
    return f"{x:.1%}"


def _apart(x: float, near: Sequence[float], text: Any) -> str:
    """`text(x, places)` at one decimal, or at as many more (up to five) as keep it from reading as a value in `near`
    (a region's bounds) that it is not: a lower end of 0.0202 beside "<= 0.02 (2%)" reads 2.02%, not 2.0%."""
    for places in range(1, 6):
        out = text(x, places)
        if not any(b != x and math.isfinite(b) and text(b, places) == out for b in near):
            break
    return out


def _percent(x: float, places: int) -> str:
    return f"{x:.{places}%}"


def rate_interval(iv: Sequence[float] | None, near: Sequence[float] = ()) -> str:
    """A rate's interval in percent, as the rate reads: [10.7%, 27.3%]; with the region's bounds `near`, an end
    that would read as a bound it is not gets the decimals that tell them apart ([2.02%, 4.4%] beside <= 2%)."""
    if not iv:
        return "no interval"
    return f"[{_apart(iv[0], near, _percent)}, {_apart(iv[1], near, _percent)}]"


def _signed(x: float, places: int = 1) -> str:
    s = f"{100 * x:+.{places}f}"
    return "0" + "." * (places > 0) + "0" * places if s.lstrip("+-").strip("0.") == "" else s


def points(d: float) -> str:
    """A difference of two rates in percentage points: 0.03 -> +3.0 points."""
    return f"{_signed(d)} points"


def points_interval(iv: Sequence[float] | None, near: Sequence[float] = ()) -> str:
    """A difference's interval in percentage points: [-1.2, +7.4] points; with the region's bounds `near`, as
    `rate_interval` ([+0.03, +7.4] points beside <= 0, not [0.0, +7.4])."""
    if not iv:
        return "no interval"
    return f"[{_apart(iv[0], near, _signed)}, {_apart(iv[1], near, _signed)}] points"


def digits(iv: Sequence[float] | None) -> int:
    """The significant digits an interval of values (no rate) is written with: three, every integer digit from 1000
    on, and more where its ends would otherwise read alike: three decimals wrote 0.12-0.17 ms as [0.000, 0.000],
    three significant digits 0.12345-0.12349 as [0.123, 0.123], whole numbers 12345.6-12345.9 as [12,346, 12,346]."""
    if not iv or iv[0] == iv[1]:
        return 3
    for n in range(3, 10):
        if number(iv[0], n) != number(iv[1], n):
            return n
    return 9


def number(x: float, digits: int = 3) -> str:
    """A value with `digits` significant digits below 1000 and every integer digit from there: 0.123, 12,346."""
    if x == 0:
        return "0"
    return f"{x:.{digits}g}" if abs(x) < 999.5 else f"{x:,.{digits - 3}f}"


def interval_ends(iv: Sequence[float]) -> tuple[str, str]:
    """The two ends of an interval of values, each with the interval's `digits`."""
    n = digits(iv)
    return number(iv[0], n), number(iv[1], n)


def interval(iv: Sequence[float] | None) -> str:
    """An interval of values (no rate), its ends told apart: [0.12345, 0.12349]."""
    if not iv:
        return "no interval"
    lo, hi = interval_ends(iv)
    return f"[{lo}, {hi}]"


def estimate(x: float, iv: Sequence[float] | None) -> str:
    """An estimate with its interval's digits: a median of 12,346 read outside its own [12,345.6, 12,345.9]."""
    return number(x, digits(iv))


def noise_floor(x: float) -> str:
    """The largest difference an A/A check's interval allows, in percentage points: ±11.4 points."""
    return f"±{100 * abs(x):.1f} points"


def _bound(x: float, how: str) -> str:
    v = round(100 * x, 9)  # 0.07 * 100 is 7.000000000000001
    if how == PERCENT:
        return f"{v:g}%"
    return "0" if v == 0 else f"{v:+g}"


def beside_region(bounds: tuple[Any, Any], how: str | None) -> str:
    """What follows a region as written ("<= 0.02") so it reads in the terms of the values beside it: " (2%)",
    " (10% to 20%)", " (+5 points)", " (-5 to +5 points)"; "" for a metric that is no proportion."""
    if how is None:
        return ""
    ends = [float(b) for b in bounds if b is not None and math.isfinite(float(b))]
    if len(ends) == 2 and ends[0] == ends[1]:
        ends = ends[:1]
    if not ends:
        return ""
    text = " to ".join(_bound(b, how) for b in ends)
    return f" ({text} points)" if how == POINTS else f" ({text})"

