"""JSON text columns: one place that writes them (sorted keys, so hashes and diffs are stable)."""

from __future__ import annotations

import json
from typing import Any


def dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, default=str)


def loads(text: str | None, default: Any = None) -> Any:
    if text is None or text == "":
        return default
    return json.loads(text)
