"""JSON text columns: one place that writes them (sorted keys, so hashes and diffs are stable)."""

from __future__ import annotations

import json
import math
from typing import Any


def dumps(value: Any) -> str | None:
    """JSON that any reader takes: a number JSON cannot write (nan, inf, a unit's 1e999) is null, as unknown.
    Python would write NaN or Infinity, which DuckDB's and PostgreSQL's JSON functions refuse as malformed."""
    if value is None:
        return None
    try:
        return json.dumps(value, sort_keys=True, default=str, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), sort_keys=True, default=str, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def whole(value: Any) -> Any:
    """A count as every JSON output writes it: an int where it is a whole number (the store keeps every number as
    a double, and sums of them stay doubles), else as it is. The one rule for a count of units, a metric of kind
    count and the totals and medians of one; other numbers keep their type."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, tuple)):
        return type(value)(whole(v) for v in value)
    if isinstance(value, dict):
        return {k: whole(v) for k, v in value.items()}
    return value


def loads(text: str | None, default: Any = None) -> Any:
    if text is None or text == "":
        return default
    return json.loads(text)
