"""How a proportion's numbers read wherever wb shows them (verdict text, CLI, HTML, Markdown): a rate in percent,
a difference of two rates in percentage points, a region as written in hypotheses.yaml with the same beside it.

Only how numbers are shown: nothing here changes a statistic.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any, Sequence

from workbench.plurals import count  # re-exported: callers write display.count

PERCENT = "percent"  # a rate: 17.5%
POINTS = "points"  # a difference of two rates: +3.0 points


def replicate(index: int | None) -> str:
    """A run's replicate as shown: "r0" for the plan's first, the number the experiment's templates get as
    `{{ replicate }}` (a workload's own tags and logs say `r0` too), the store and the JSON keep, and each
    per-replicate value is drawn from. One count everywhere: shown from 1, run "r1" would be the workload's
    "r0". None (an imported run): nothing."""
    return "" if index is None else f"r{index}"


def value(exp: Any, metric: str, x: float) -> str:
    """One run's value of `metric` as wb prints it: a proportion's in percent (17.5%), any other as recorded (3,
    346.3, 1,234,567; not 1.23457e+06)."""
    return rate(x) if is_proportion(exp, metric) and math.isfinite(x) else recorded(x)


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


def adding_up(total: float, parts: Sequence[float], places: int = 2) -> tuple[str, list[str]]:
    """`total` and its `parts` at `places` decimals, the parts rounded so that what is shown adds up to the total
    shown (largest remainders: 0.333 + 0.333 + 0.334 = 1.00, not 0.33 + 0.33 + 0.33)."""
    scale_ = 10 ** places
    whole = round(total * scale_)
    floors = [math.floor(round(p * scale_, 6)) for p in parts]  # 0.29 * 100 is 28.999...: 29 hundredths
    short = whole - sum(floors)  # hundredths the floors leave out (or, past a total rounded down, put in)
    order = sorted(range(len(parts)), key=lambda i: parts[i] * scale_ - floors[i], reverse=short > 0)
    for n in range(abs(short)):
        floors[order[n % len(order)]] += 1 if short > 0 else -1
    return f"{whole / scale_:.{places}f}", [f"{f / scale_:.{places}f}" for f in floors]


def rate(x: float) -> str:
    """A rate in percent: 0.175 -> 17.5%; one that is not 0 or 1 gets the decimals that keep it from reading as
    either (0.00012 -> 0.01%, 0.99999 -> 99.999%), and beyond the last of them reads as lying within one of its
    steps of the end (1e-12 -> <0.00000001%, 1 - 1e-11 -> >99.99999999%)."""
    return _apart(x, _RATE_ENDS, _percent, ends=_RATE_ENDS)


_RATE_ENDS = (0.0, 1.0)  # no rate short of these reads as them
_MOST_PLACES = 8  # a rate of one in 10^10 still reads apart from 0


def _apart(x: float, near: Sequence[float], text: Any, start: int = 1, ends: Sequence[float] = ()) -> str:
    """`text(x, places)` at `start` decimals, or at as many more as keep it from reading as a value in `near` (a
    region's bounds, 0) that it is not: a lower end of 0.0202 beside "<= 0.02 (2%)" reads 2.02%, not 2.0%. One that
    still reads as such a value at _MOST_PLACES says on which side of it it lies (>2.00000000%, >0.00000000 points);
    next to one of the scale's `ends` (a rate's 0 and 1), as lying within the last decimal of it (<0.00000001%)."""
    for places in range(start, max(start, _MOST_PLACES) + 1):
        out = text(x, places)
        alike = [b for b in near if b != x and math.isfinite(b) and text(b, places) == out]
        if not alike:
            return out
    b = alike[0]
    if b in ends:  # both texts show 100 * x: the last decimal is 10^-(places + 2) of x
        step = 10.0 ** -(places + 2)
        return f"<{text(b + step, places)}" if x > b else f">{text(b - step, places)}"
    return f">{out}" if x > b else f"<{out}"


def _ends(iv: Sequence[float], near: Sequence[float], text: Any, ends: Sequence[float] = ()) -> tuple[str, str]:
    """An interval's two ends in `text`: at the decimals that tell them apart where one would read as the other
    ([0.01%, 0.03%], not [0.0%, 0.0%]), each then kept apart from `near` as `_apart` keeps it."""
    lo, hi = iv[0], iv[1]
    start = 1
    while start < _MOST_PLACES and lo != hi and text(lo, start) == text(hi, start):
        start += 1
    return _apart(lo, near, text, start, ends), _apart(hi, near, text, start, ends)


def _percent(x: float, places: int) -> str:
    return f"{x:.{places}%}"


def rate_ends(iv: Sequence[float], near: Sequence[float] = ()) -> tuple[str, str]:
    """A rate's interval's two ends in percent, as `rate_interval` writes them (a chart's tooltips)."""
    return _ends(iv, (*near, *_RATE_ENDS), _percent, _RATE_ENDS)


def rate_interval(iv: Sequence[float] | None, near: Sequence[float] = ()) -> str:
    """A rate's interval in percent, as the rate reads: [10.7%, 27.3%]; ends that would read alike, or as a region's
    bound in `near` (or 0) that they are not, get the decimals that tell them apart ([0.01%, 0.03%]; [2.02%, 4.4%]
    beside <= 2%)."""
    if not iv:
        return "no interval"
    lo, hi = rate_ends(iv, near)
    return f"[{lo}, {hi}]"


def _signed(x: float, places: int = 1) -> str:
    s = f"{100 * x:+.{places}f}"
    return "0" + "." * (places > 0) + "0" * places if s.lstrip("+-").strip("0.") == "" else s


def points(d: float) -> str:
    """A difference of two rates in percentage points: 0.03 -> +3.0 points; one that is not 0 never reads 0.0."""
    return f"{_apart(d, (0.0,), _signed)} points"


def points_interval(iv: Sequence[float] | None, near: Sequence[float] = ()) -> str:
    """A difference's interval in percentage points: [-1.2, +7.4] points; its ends told apart from each other, from
    0 and from the region's bounds `near`, as `rate_interval`'s ([+0.03, +7.4] points beside <= 0, not [0.0, +7.4])."""
    if not iv:
        return "no interval"
    lo, hi = _ends(iv, (*near, 0.0), _signed)
    return f"[{lo}, {hi}] points"


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


def keyed(x: float, digits: int = 3) -> str:
    """`number` for the value of a key=value pair: no thousands separator (1425, not 1,425), which would split the
    value for grep and awk. Tables and prose keep theirs."""
    return number(x, digits).replace(",", "")


def recorded(x: float) -> str:
    """A value as it was recorded, every digit it carries (to a float's 15) and thousands separated: 346.3, 1,234.56,
    1,234,567, 0.00012. `number`'s three significant digits are for estimates and intervals: they read a run's wall
    time of 346.3 s as 346, the same as one of 346.4."""
    if isinstance(x, int) and not isinstance(x, bool):
        return f"{x:,}"
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    d = Decimal(f"{x:.15g}")  # 15 digits: a sum's 0.30000000000000004 reads 0.3
    return f"{d:,f}" if -9 <= d.adjusted() < 21 else f"{x:.15g}"


def glance(x: float, proportion: bool = False) -> str:
    """A value as a terminal's table gives it, to read at a glance: a proportion in percent as the summaries give it
    (96.7%, 0.0%), a whole number whole (80), any other to at most 4 significant digits, every integer digit from
    1000 on and no thousands separator, which would split a key=value pair (12.35, 0.001235, 346.3, 12346). CSV,
    TSV and JSON keep every digit."""
    if proportion and math.isfinite(x):
        return rate(x)
    if isinstance(x, int) or not math.isfinite(x):
        return str(x)
    return f"{x:.0f}" if abs(x) >= 999.5 else f"{x:.4g}"


def fraction(k: float, n: float) -> str:
    """A count of a total as recorded: "14/80", "1,400,001/1,425,000" ('{:g}' read it 1.4e+06/1.425e+06)."""
    return f"{recorded(k)}/{recorded(n)}"


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
    """The largest difference an A/A check's interval allows, in percentage points: ±11.4 points; one that is not 0
    gets the decimals that keep it from reading ±0.0 (±0.04 points), as a difference in `points` does."""
    return f"±{_apart(abs(x), (0.0,), _unsigned, ends=(0.0,))} points"


def _unsigned(x: float, places: int) -> str:
    return f"{100 * x:.{places}f}"


def _bound(x: float, how: str) -> str:
    v = round(100 * x, 9)  # 0.07 * 100 is 7.000000000000001
    if how == PERCENT:
        return f"{v:g}%"
    return "0" if v == 0 else f"{v:+g}"


def region_bound(x: float, how: str) -> str:
    """One bound of a region in the terms `beside_region` writes it: 2%, +5 points."""
    return _bound(x, how) + (" points" if how == POINTS else "")


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


P_FLOOR = 1e-300  # a p-value below this underflowed (or nearly) a float: it is small, never 0


def p_value(p: float, times: int = 1) -> str:
    """A p-value with two significant digits, e-notation once small (0.012, 2.7e-36); one that underflowed to 0
    reads < 1e-300: a p-value is never 0. `times`: the p is shown beside its Bonferroni-adjusted value,
    min(1, times * p), and takes a digit or two more where that value would not read as its multiple: p 0.00137
    adjusted over 2 reads "0.00137" and "0.0027", where "0.0014" and "0.0027" read as two roundings of one number
    (another test's 0.00139 read "0.0014" and "0.0028")."""
    if 0 <= p < P_FLOOR:
        return f"< {P_FLOOR:.0e}"
    text = f"{p:.2g}"
    if times > 1:
        adjusted = p_value(min(1.0, times * p))
        for digits in (2, 3, 4):
            text = f"{p:.{digits}g}"
            if p_value(min(1.0, times * float(text))) == adjusted:
                break
    return text


# The keys under which wb's JSON gives a p-value (a verdict's predictions and checks, a confound finding). A key a
# user named (a metric, an outcome, a variable's value) is never taken for one: what a `USER_NAMED` key holds (its
# keys are such names, or counts) is left as it is.
P_KEYS = frozenset({"p", "p_adjusted", "runs_p", "units_p", "units_p_adjusted", "fisher_p", "boschloo_p",
                    "mann_whitney_p", "p_for", "p_against", "p_against_holm", "p_over", "p_under", "p_trend",
                    "between_arms_p", "left_out_floor"})
USER_NAMED = frozenset({"totals", "metrics", "variables", "assignments", "overrides", "units", "by_outcome",
                        "fingerprint", "table", "values", "combinations"})


def p_number(p: float) -> float:
    """A p-value as a number for scripts (JSON, CSV, TSV): one that underflowed a float is the bound 1e-300, never 0
    (read a p of 1e-300 as "at most 1e-300"); any other is itself."""
    return P_FLOOR if 0 <= p < P_FLOOR else p


def p_numbers(doc: Any) -> Any:
    """A copy of the JSON-like `doc` with every p-value (a number under a `P_KEYS` key) as `p_number` gives it."""
    if isinstance(doc, dict):
        return {k: (v if k in USER_NAMED else
                    p_number(v) if k in P_KEYS and isinstance(v, (int, float)) and not isinstance(v, bool) else
                    p_numbers(v)) for k, v in doc.items()}
    if isinstance(doc, list):
        return [p_numbers(v) for v in doc]
    return doc


def p_is(p: float, times: int = 1) -> str:
    """What follows "p" in a sentence: "= 0.012", or "< 1e-300" for one that underflowed (`p_value`)."""
    text = p_value(p, times)
    return text if text.startswith("<") else f"= {text}"
