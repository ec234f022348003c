"""The failure region of `wb isolate --region`: when a probed configuration counts as failing.

Syntax (one region, the metric named separately by --metric):
  ">= 0.05"  or "at_least 0.05"      fails when the rate is at least 0.05
  "<= 0.02"  or "at_most 0.02"       fails when the rate is at most 0.02
  "== 0"     or "equals 0"           fails when the rate is exactly 0
  "0.05..0.3" or "between 0.05 0.3"  fails when the rate lies in [0.05, 0.3]
The result is the registry's own `Region`, so a probe's prediction reads like any hand-written one.
"""

from __future__ import annotations

import math
import re
from typing import Any

from workbench.errors import BadInput
from workbench.registry.common import Region, region_text

_NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
_FORMS = [
    (re.compile(rf"^(?:>=|at_least)\s*{_NUM}$"), lambda a: {"at_least": float(a[0])}),
    (re.compile(rf"^(?:<=|at_most)\s*{_NUM}$"), lambda a: {"at_most": float(a[0])}),
    (re.compile(rf"^(?:==|=|equals)\s*{_NUM}$"), lambda a: {"equals": float(a[0])}),
    (re.compile(rf"^between\s+{_NUM}\s+{_NUM}$"), lambda a: {"between": (float(a[0]), float(a[1]))}),
    (re.compile(rf"^{_NUM}\s*\.\.\s*{_NUM}$"), lambda a: {"between": (float(a[0]), float(a[1]))}),
]

_STRICT = re.compile(rf"^([<>])\s*{_NUM}$")
_ACCEPTED = "'>= 0.05', '<= 0.02', '== 0', '0.05..0.3' (or at_least / at_most / equals / between)"


def parse_region(text: str, *, flag: str = "--region", proportion: bool = False) -> Region:
    """Parse `text` into a Region; bad input names the flag and the accepted forms. `proportion`: every
    bound must lie in [0, 1] (a region beyond it could never hold, and a search would run for nothing)."""
    s = " ".join(str(text).strip().split())
    for pattern, build in _FORMS:
        m = pattern.match(s)
        if m:
            try:
                region = Region(**build(m.groups()))
            except ValueError as exc:
                raise BadInput(f"{flag} {text!r}: {_first_error(exc)}") from None
            outside = [b for b in region.bounds() if math.isfinite(b) and not 0 <= b <= 1]
            if proportion and outside:
                raise BadInput(f"{flag} {text!r}: a proportion lies in [0, 1]; {outside[0]:g} is outside it")
            lo, hi = region.bounds()
            if proportion and lo <= 0 and hi >= 1:  # every config would fail: nothing to tell good from bad
                raise BadInput(f"{flag} {text!r} holds every proportion, so every config would count as failing",
                               hint="bound the failure away from 0 or from 1, e.g. '>= 0.01' for any failing units "
                                    "at a rate of 1% or more")
            return region
    strict = _STRICT.match(s)
    if strict:
        # Regions are closed (a bound belongs to them); for a rate judged by an interval the difference between
        # > and >= never decides a verdict, but reading one as the other silently would misstate the region.
        op, num = strict.groups()
        word = "at_least" if op == ">" else "at_most"
        raise BadInput(f"{flag} {text!r}: a region includes its bound, so it takes {op}= rather than {op}",
                       hint=f"write '{op}= {num}' (or {word} {num}); accepted forms: {_ACCEPTED}")
    raise BadInput(f"{flag} {text!r} is not a region", hint=f"accepted forms: {_ACCEPTED}")


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        msg = str(errors()[0].get("msg", exc))
        return msg.removeprefix("Value error, ")
    return str(exc)


def stored_text(region: Any) -> str:
    """A stored region (the record's dict) as the user wrote it, e.g. ">= 0.05"."""
    try:
        return region_text(Region(**region)) if isinstance(region, dict) else str(region)
    except (TypeError, ValueError):
        return str(region)
