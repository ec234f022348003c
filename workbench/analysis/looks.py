"""Where a sequential execution stands after one look (a replicate block judged): per prediction its counts, its
interval and what would decide it, as the runner's progress prints it, one line a look."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from workbench.analysis import clustered, display, regions

from workbench.analysis.results import difference_arms, more_units_words

if TYPE_CHECKING:
    from workbench.analysis.results import Analysis, Judgement


@dataclass(frozen=True)
class PredictionAtLook:
    """One prediction at a look. `counts`: (arm, k, n) of its proportion in every arm that has it; `running`: the
    interval is a confidence sequence's running intersection (a rate or a difference of rates), else the look's own
    interval at its share of alpha (a median or a shift); `waits`: decided by its interval, but no sequential verdict
    comes before the second look (sequential.MIN_LOOKS); `held`: decided by its interval, but failed checks make the
    verdict another ("the config check holds the verdict inconclusive")."""

    describe: str
    scale: str | None  # display.PERCENT, display.POINTS, or None for values as recorded
    counts: tuple[tuple[str, float, float], ...]
    estimate: float | None
    interval: tuple[float, float] | None
    interval_kind: str | None
    bounds: tuple[float, float]
    outcome: str
    running: bool
    waits: bool = False
    reachable: bool | None = None
    empty: bool = False
    more_units: int | None = None
    more_units_by_arm: tuple[int, int] | None = None  # a difference's, each arm's own (Judgement.more_units_by_arm)
    floor_lifts: bool = False  # the more units reach past the few-runs floor (Judgement.floor_lifts)
    where: str | None = None
    more_runs: int | None = None
    held: str = ""
    held_by: tuple[str, ...] = ()  # the checks that hold it (`held`)

    def text(self) -> str:
        shown = ", ".join(f"{arm} {display.fraction(k, n)}" for arm, k, n in self.counts)
        if not shown and self.estimate is not None:
            shown = f"estimate {display.estimate(self.estimate, self.interval)}"
        kind = self.interval_kind or ""
        # A name that says what it is ("range (too few runs for a 95% interval)") takes no " interval" after it.
        where = "running interval" if self.running else kind if "interval" in kind else f"{kind} interval"
        body = f"{self.describe}: {shown}, {where} {self._interval()}" if self.interval else \
            f"{self.describe}: {shown}, no interval yet"
        return f"{body}: {self._state()}"

    def _interval(self) -> str:
        if self.scale == display.PERCENT:
            return display.rate_interval(self.interval, self.bounds)
        if self.scale == display.POINTS:
            return display.points_interval(self.interval, self.bounds)
        return display.interval(self.interval)

    def _state(self) -> str:
        if self.outcome in ("falsified", "supported"):
            where = f"wholly {'outside' if self.outcome == 'falsified' else 'inside'} the region"
            return f"{where}, but {self.held}" if self.held else f"{where}: {self.outcome}"
        if self.empty:
            return "the looks' intervals have no rate in common, so no look decides it"
        if self.interval is None:
            return f"{display.count(self.more_runs, 'more run')} in each arm give one" if self.more_runs else \
                "too few runs for one"
        state = self._needs()
        if self.reachable is False:
            return state + ", out of reach within the budget (futility)"
        if self.waits:
            return state + " (no verdict before look 2)"
        if self.more_units:
            runs = f" ({display.count(self.more_runs, 'more run')} of each arm)" if self.more_runs else ""
            units = more_units_words(self.where, self.more_units, self.more_units_by_arm, "more units", " in each arm")
            lifts = clustered.floor_lifts_clause() if self.floor_lifts else ""
            return state + f", about {units} at this rate{runs}{lifts}"
        if self.more_runs:
            return state + f", about {display.count(self.more_runs, 'more run')}"
        return state

    def _needs(self) -> str:
        return to_decide(self.interval, self.estimate, self.bounds, self.scale)


def to_decide(interval: tuple[float, float] | None, estimate: float | None, bounds: tuple[float, float],
              scale: str | None) -> str:
    """Which end of an interval has to pass which bound for a verdict: the one the estimate points at
    (falsified when the interval lies wholly outside the region, supported when wholly inside)."""
    lo, hi = bounds
    a, b = interval or (-math.inf, math.inf)

    def value(x: float) -> str:
        return display.number(x) if scale is None else display.region_bound(x, scale)

    # Already clear of a bound (held back by the look count or the runs a test needs): it has nowhere to go.
    where = regions.relation((a, b), regions.Region(lo, hi))
    if where != "straddles":
        return f"wholly {where} the region"
    x = estimate if estimate is not None else (a + b) / 2
    if x > hi:
        return f"falsified once its lower end is above {value(hi)}"
    if x < lo:
        return f"falsified once its upper end is below {value(lo)}"
    ends = ([f"its lower end reaches {value(lo)}"] if a < lo else []) + \
        ([f"its upper end falls to {value(hi)}"] if b > hi else [])
    return "supported once " + " and ".join(ends) if ends else "wholly inside the region"


@dataclass(frozen=True)
class SequentialLook:
    """A sequential execution after look `look` of at most `max_looks`: whether it stops, with which verdict."""

    look: int
    max_looks: int
    stop: bool
    verdict: str
    futile: bool
    predictions: tuple[PredictionAtLook, ...]

    def line(self) -> str:
        """One line: "look 2 of at most 12 (up to 10 more): corruption_rate (treatment) <= 0.02 (2%): control
        24/160, treatment 3/160, running interval [0.0%, 6.2%]: supported once its upper end falls to 2%"."""
        if self.stop:
            how = f"stopping: {self.verdict}" + (", futility" if self.futile else "")
        else:
            how = f"up to {max(0, self.max_looks - self.look)} more"
        return f"look {self.look} of at most {self.max_looks} ({how}): " + \
            " | ".join(p.text() for p in self.predictions)

    def held_by(self, check: str) -> bool:
        """Whether the check named `check` holds back a prediction its interval decided at this look."""
        return any(check in p.held_by for p in self.predictions)


def _bound(x: float | None, default: float) -> float:
    return default if x is None else float(x)


def _holding(outcome: str, analysis: "Analysis") -> list[str]:
    """The failed checks whose effect the verdict took, where a prediction's interval decided it ([] when none
    does, as when another prediction's outcome is the verdict)."""
    if outcome not in ("falsified", "supported") or analysis.verdict not in ("inconclusive", "invalid"):
        return []
    return [c.name for c in analysis.checks if c.passed is not True and c.effect == analysis.verdict]


def _held(j: "Judgement", analysis: "Analysis", scale: str | None) -> str:
    """Why a prediction decided by its interval does not decide the verdict: "the attrition check holds the
    verdict inconclusive", and where attrition holds it, what the completed units alone say and need."""
    names = _holding(j.outcome, analysis)
    if not names:
        return ""
    verb = "hold" if analysis.verdict == "inconclusive" else "make"
    which = f"the {names[0]} check {verb}s" if len(names) == 1 else \
        f"the {', '.join(names[:-1])} and {names[-1]} checks {verb}"
    c = j.completed
    why = ""
    if "attrition" in names and c is not None and c.outcome != j.outcome:
        lost = [f"{arm} lost {display.fraction(a['lost'], a['units'])} units"
                for arm in (difference_arms(j.where) or [j.where])
                if (a := analysis.attrition.get("arms", {}).get(arm)) and a.get("lost")]
        why = ": " + completed_reading(c.k, c.n, c.estimate, c.interval, region_bounds(j.bounds), scale) + \
            (f" ({', '.join(lost)})" if lost else "")
    return f"{which} the verdict {analysis.verdict}{why}"


def region_bounds(bounds: Sequence[float | None]) -> tuple[float, float]:
    """A prediction's region as two numbers: an open end (None) is infinite."""
    return _bound(bounds[0], -math.inf), _bound(bounds[1], math.inf)


def reading_scale(where: str | None, proportion: bool) -> str | None:
    """How a prediction's numbers read: a rate's in percent, a difference of rates in points, others as numbers."""
    return (display.POINTS if difference_arms(where) else display.PERCENT) if proportion else None


def completed_reading(k: object, n: object, estimate: float | None, interval: Sequence[float] | None,
                      bounds: tuple[float, float], scale: str | None) -> str:
    """A prediction read over completed units only, and what would decide it there: "over completed units only
    it is 0/158 = 0.0% (interval [0.0%, 2.9%]), supported once its upper end falls to 2%" (the attrition check
    holds a verdict until this reading decides as the one over all units did)."""
    if estimate is None or interval is None:
        return "no completed unit reads it, so it cannot decide over completed units"
    iv = (float(interval[0]), float(interval[1]))
    if scale == display.PERCENT:
        counts = f"{display.fraction(k, n)} = " if isinstance(k, (int, float)) and isinstance(n, (int, float)) else ""
        shown = f"{counts}{display.rate(estimate)} (interval {display.rate_interval(iv, bounds)})"
    elif scale == display.POINTS:
        shown = f"{display.points(estimate)} (interval {display.points_interval(iv, bounds)})"
    else:
        shown = display.estimate(estimate, iv)
    return f"over completed units only it is {shown}, {to_decide(iv, estimate, bounds, scale)}"


def prediction_at_look(j: "Judgement", analysis: "Analysis") -> PredictionAtLook:
    """`j` as a look shows it, with the counts of its metric in every arm of `analysis`."""
    from workbench.analysis.sequential import MIN_LOOKS

    proportion = j.k is not None and j.n is not None
    counts = tuple((arm, s.metrics[j.metric].k, s.metrics[j.metric].n) for arm, s in analysis.arms.items()
                   if j.metric in s.metrics and s.metrics[j.metric].k is not None and s.metrics[j.metric].n) \
        if proportion else ()
    scale = reading_scale(j.where, proportion)
    return PredictionAtLook(
        describe=j.describe, scale=scale, counts=counts, estimate=j.estimate,
        interval=None if j.interval is None else (float(j.interval[0]), float(j.interval[1])),
        interval_kind=j.interval_kind, bounds=region_bounds(j.bounds),
        outcome=j.outcome, running=proportion, waits=proportion and (j.looks or 0) < MIN_LOOKS,
        reachable=j.reachable, empty=bool(j.empty_interval), more_units=j.more_units_needed if proportion else None,
        more_units_by_arm=j.more_units_by_arm if proportion else None, floor_lifts=bool(proportion and j.floor_lifts),
        where=j.where,
        more_runs=j.more_runs_needed, held=_held(j, analysis, scale),
        held_by=tuple(_holding(j.outcome, analysis)))


def sequential_look(analysis: "Analysis", max_looks: int, *, stop: bool, verdict: str,
                    futile: bool = False) -> SequentialLook:
    return SequentialLook(analysis.replicates, max_looks, stop, verdict, futile,
                          tuple(prediction_at_look(j, analysis) for j in analysis.predictions))
