"""Judging an interval against a predicted region, exactly.

A region is closed ([lo, hi]; `at_most` c includes c) and lives on the metric's support: a rate in
[0, 1], a count in [0, inf). Both the region and the interval are snapped onto the support before
they are compared, so a bound that an interval method computes as 4e-19 or 0.9999999999999999 is the
0 or 1 it stands for, and a tie within rounding is never decisive. A closed interval [a, b] is
*outside* the region when no value in it is in the region (b < lo or a > hi), *inside* when every
value is (lo <= a and b <= hi); anything else straddles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

Interval = tuple[float, float]
# Relative tolerance under which an endpoint is taken to equal a bound it was computed against.
TIE = 1e-12

OUTCOME_OF = {"outside": "falsified", "inside": "supported", "straddles": "inconclusive"}


class Support(Enum):
    """Where a metric's values can lie."""

    PROPORTION = (0.0, 1.0)
    COUNT = (0.0, math.inf)
    REAL = (-math.inf, math.inf)

    @classmethod
    def of(cls, kind: str | None) -> "Support":
        return {"proportion": cls.PROPORTION, "count": cls.COUNT}.get(kind or "", cls.REAL)


@dataclass(frozen=True)
class Region:
    """A closed region [lo, hi] for a metric with the given support (infinite ends allowed)."""

    lo: float
    hi: float
    support: Support = Support.REAL

    def snapped(self) -> "Region":
        """The region intersected with the support: at_most 0.02 of a rate is [0, 0.02]."""
        s_lo, s_hi = self.support.value
        return Region(max(self.lo, s_lo), min(self.hi, s_hi), self.support)

    def at_floor(self) -> bool:
        """The region holds only the support's lowest value (equals 0, at_most 0 of a count or a rate)."""
        r = self.snapped()
        return math.isfinite(r.lo) and r.lo == r.hi == self.support.value[0]


def _close(x: float, y: float) -> bool:
    if not (math.isfinite(x) and math.isfinite(y)):
        return x == y
    return abs(x - y) <= TIE * max(1.0, abs(x), abs(y))


def snap(x: float, targets: tuple[float, ...]) -> float:
    """x, or the target it equals within rounding."""
    for t in targets:
        if _close(x, t):
            return t
    return x


def snap_interval(interval: Interval, region: Region) -> Interval:
    """Clip the interval to the support and snap each end onto the support's ends and the region's bounds."""
    s_lo, s_hi = region.support.value
    targets = (s_lo, s_hi, region.lo, region.hi)
    a, b = (snap(min(max(v, s_lo), s_hi), targets) for v in interval)
    return (a, b)


def relation(interval: Interval, region: Region) -> str:
    """'inside' (every value of the interval is in the region), 'outside' (none is) or 'straddles'."""
    r = region.snapped()
    a, b = snap_interval(interval, r)
    if r.lo <= a and b <= r.hi:
        return "inside"
    if b < r.lo or a > r.hi:
        return "outside"
    return "straddles"


def outcome(interval: Interval | None, region: Region) -> str:
    """'falsified' / 'supported' / 'inconclusive' for an interval (None: nothing to judge)."""
    if interval is None:
        return "inconclusive"
    return OUTCOME_OF[relation(interval, region)]
