"""Reading metrics from a run: regexes over the workload output, command outputs, and counts over per-unit JSONL.

Only measured counts and values are produced; proportions and `same_as` aliases are derived by the
analysis from these, never stored.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from workbench.analysis import display


class ExtractError(Exception):
    """A metric could not be read; the run is invalid. `excerpt` shows what was searched, `label` names it."""

    def __init__(self, message: str, excerpt: str = "", label: str = "output excerpt") -> None:
        super().__init__(message)
        self.excerpt = excerpt
        self.label = label


def _excerpt(text: str, limit: int = 800) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


class NotFinite(ValueError):
    """A number that no metric can hold: inf, nan, or one beyond a double's range (1e999)."""


def parse_number(text: str, kind: str) -> float | int:
    """The number `text` writes; ValueError when it writes none, NotFinite when it writes inf or nan."""
    value = float(text.strip())
    if not math.isfinite(value):
        raise NotFinite(text.strip())
    return int(value) if kind == "int" else value


def from_regex(name: str, pattern: str, text: str, kind: str) -> float | int:
    """The last match's `value` group (else its first group, else the whole match)."""
    matches = list(re.finditer(pattern, text, re.MULTILINE))
    if not matches:
        raise ExtractError(f"metric {name!r}: regex {pattern!r} matched nothing in the workload output",
                           _excerpt(text))
    m = matches[-1]
    raw = m.groupdict().get("value") if "value" in m.groupdict() else (m.group(1) if m.groups() else m.group(0))
    try:
        return parse_number(raw or "", kind)
    except NotFinite:
        raise ExtractError(f"metric {name!r}: matched {raw!r}, which is not a finite number",
                           _excerpt(text)) from None
    except ValueError:
        raise ExtractError(f"metric {name!r}: matched {raw!r}, which is not a number", _excerpt(text)) from None


def from_command_output(name: str, text: str, kind: str) -> float | int:
    """A command's value: the last non-empty line of its output."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        raise ExtractError(f"metric {name!r}: the command printed nothing", "")
    try:
        return parse_number(lines[-1], kind)
    except NotFinite:
        raise ExtractError(f"metric {name!r}: the command printed {lines[-1]!r}, not a finite number",
                           _excerpt(text)) from None
    except ValueError:
        raise ExtractError(f"metric {name!r}: the command printed {lines[-1]!r}, not a number",
                           _excerpt(text)) from None


def read_units(text: str, where: str = "units file") -> list[dict[str, Any]]:
    """The units of a JSONL file; `where` names the file in an error (its line is shown under that name)."""
    units = []
    for i, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ExtractError(f"{where} line {i} is not JSON: {exc.msg}", line[:300], f"{where}, line {i}") from None
        if not isinstance(obj, dict):
            raise ExtractError(f"{where} line {i} is not a JSON object", line[:300], f"{where}, line {i}")
        units.append(obj)
    return units


def undeclared_outcomes_warning(units: list[dict[str, Any]], unit_spec: Any, where: str) -> str | None:
    """A warning naming each outcome the units hold that `unit.outcomes` does not declare, and how many units
    ended so: no outcome filter can count them, so a misspelt outcome in the workload would go unnoticed."""
    if unit_spec is None or not unit_spec.outcomes:
        return None
    field, declared = unit_spec.outcome_field, set(unit_spec.outcomes)
    counts: dict[str, int] = {}
    for u in units:
        value = u.get(field)
        key = "(none)" if value is None else str(value)
        if key not in declared:
            counts[key] = counts.get(key, 0) + 1
    if not counts:
        return None
    found = ", ".join(f"{name!r} ({display.count(n, 'unit')})" for name, n in sorted(counts.items()))
    odd = sum(counts.values())
    return (f"warning: {where}: {odd} of {display.count(len(units), 'unit')} {'has' if odd == 1 else 'have'} a {field} "
            f"that unit.outcomes does not declare: {found}; declared: {', '.join(unit_spec.outcomes)}")


# The words YAML 1.1 reads as booleans (a filter keeps the word written; `put_back_words`).
_BOOL_WORDS = {True: frozenset({"true", "yes", "on"}), False: frozenset({"false", "no", "off"})}


def _same(have: Any, want: str) -> bool:
    """Whether a unit's JSON value is the filter's value: a JSON boolean is any YAML word for it, a JSON number
    the same number however written (2, 2.0), anything else the same text."""
    if isinstance(have, bool):
        return want.lower() in _BOOL_WORDS[have]
    if isinstance(have, (int, float)):
        for parse in (int, float):
            try:
                return parse(want) == have
            except ValueError:
                continue
    return str(have) == want


def _matches(unit: dict[str, Any], filt: dict[str, Any]) -> bool:
    for field, want in filt.items():
        have = unit.get(field)
        wanted = want if isinstance(want, list) else [want]
        if have is None or not any(_same(have, str(w)) for w in wanted):
            return False
    return True


def unit_counts(metric_specs: dict[str, Any], units: list[dict[str, Any]]) -> dict[str, int]:
    """Every count metric the experiment defines over units (`units: {outcome: leak}`; `{}` counts all)."""
    out: dict[str, int] = {}
    for name, spec in metric_specs.items():
        if spec.units is None:
            continue
        out[name] = sum(1 for u in units if _matches(u, spec.units))
    return out


def _finite(value: float | int) -> bool:
    """Whether a double holds `value` as a finite number (a JSON integer of 400 digits is none)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def unit_aggregate(name: str, units: list[dict[str, Any]], field: str, aggregate: str, kind: str) -> float | int:
    """Sum of a numeric unit field, or the number of units where it is non-zero (absent counts as 0)."""
    total: float = 0
    for u in units:
        v = u.get(field, 0) or 0
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise ExtractError(f"metric {name!r}: unit field {field!r} is {v!r}, not a number", str(u)[:300],
                               "the unit")
        if not _finite(v):
            raise ExtractError(f"metric {name!r}: unit field {field!r} is {v!r}, not a finite number",
                               str(u)[:300], "the unit")
        total += (1 if v else 0) if aggregate == "nonzero" else v
    if not _finite(total):
        raise ExtractError(f"metric {name!r}: the sum of unit field {field!r} over {display.count(len(units), 'unit')} "
                           f"is {total!r}, not a finite number")
    return int(total) if kind == "int" else float(total)
