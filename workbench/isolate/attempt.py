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
class DecidedProbe:
    """A probe an earlier attempt ran to its end, as its verdict row records it."""

    request: dict[str, Any]  # the ProbeRequest, as plain JSON
    outcome: str
    k: float
    n: float
    execution_id: int


@dataclass(frozen=True)
class PriorAttempt:
    """The attempt a `--resume` continues: the probes its search decided, by index, and the one in flight."""

    search_id: str
    created_at: str | None
    status: str
    decided: dict[int, DecidedProbe]
    pending: dict[str, Any] | None  # the request in flight when it stopped (None: none was, or not recorded)

    def reusable(self, request: dict[str, Any]) -> DecidedProbe | None:
        """The earlier probe that asked exactly `request` (same index, config, alpha and units), or None."""
        probe = self.decided.get(int(request["index"]))
        return probe if probe is not None and request_key(probe.request) == request_key(request) else None

    def continues(self, request: dict[str, Any]) -> bool:
        """Is `request` the probe the attempt left in flight? (When that was not recorded, a process killed
        outright, any undecided probe whose own execution stopped part-way is continued: the runner's
        `--resume` still refuses one whose definition changed.)"""
        if self.pending is None:
            return int(request["index"]) not in self.decided
        return request_key(self.pending) == request_key(request)


def request_key(d: dict[str, Any]) -> tuple[Any, ...]:
    """What a probe's request asks, comparable between a live request and one read back from JSON."""
    def norm(k: str, v: Any) -> Any:
        if k == "applied":
            return tuple(v)
        if k == "max_units" and (v is None or (isinstance(v, float) and math.isinf(v))):
            return None
        return v

    return tuple(norm(k, d.get(k)) for k in REQUEST_KEYS)
