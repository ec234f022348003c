"""The earlier attempt of a search that `wb isolate --resume` continues, as the probing reads it.

Apart from `workbench.isolate.resume`, which finds it in the store, so that the oracle can take one
without importing the store's side of the search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

REQUEST_KEYS = ("index", "applied", "phase", "parent", "alpha", "max_units")


@dataclass(frozen=True)
class PriorAttempt:
    """The attempt a `--resume` continues: its decided probes by index, and the probe it left in flight."""

    search_id: str
    created_at: str | None
    status: str
    decided: dict[int, dict[str, Any]]  # index -> the probe as the search record holds it
    pending: dict[str, Any] | None  # the request in flight when it stopped (None: none was)

    def reusable(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The earlier probe that asked exactly `request` (same index, config, alpha and units), or None."""
        probe = self.decided.get(int(request["index"]))
        return probe if probe is not None and request_key(probe) == request_key(request) else None

    def continues(self, request: dict[str, Any]) -> bool:
        return self.pending is not None and request_key(self.pending) == request_key(request)


def request_key(d: dict[str, Any]) -> tuple[Any, ...]:
    """What a probe's request asks, comparable between a live request and one read back from JSON."""
    def norm(k: str, v: Any) -> Any:
        if k == "applied":
            return tuple(v)
        if k == "max_units" and (v is None or (isinstance(v, float) and math.isinf(v))):
            return None
        return v

    return tuple(norm(k, d.get(k)) for k in REQUEST_KEYS)
