"""A simulated noisy oracle: each configuration fails its units independently at a known rate.

For unit tests (deterministic rates 0 and 1 give exact answers) and for the study's model mode,
where the rates are pdsim's, measured once by real runs. It samples in batches of `batch` units
(one run of the repro harness) and stops by the same rule as a real probe.
"""

from __future__ import annotations

import random
from typing import Callable

from workbench.isolate.decision import decide
from workbench.isolate.search import ProbeRequest, ProbeResult


class BinomialOracle:
    """`rate(applied)` gives the failure probability of good + applied; `bounds` is the failure region."""

    def __init__(self, rate: Callable[[frozenset[str]], float], bounds: tuple[float, float], *,
                 batch: int = 80, seed: int = 0) -> None:
        self.rate = rate
        self.bounds = bounds
        self.batch = batch
        self.rng = random.Random(seed)
        self.requests: list[ProbeRequest] = []

    def probe(self, request: ProbeRequest) -> ProbeResult:
        self.requests.append(request)
        p = self.rate(frozenset(request.applied))
        path: list[tuple[float, float]] = []
        k = n = 0
        while True:
            k += sum(self.rng.random() < p for _ in range(self.batch))
            n += self.batch
            path.append((k, n))
            look = decide(path, self.bounds, request.alpha, request.max_units)
            if look.stop:
                return ProbeResult(look.outcome, k, n, n, look.looks, look.reasoning)


def conjunction(*groups: set[str], rate: float = 1.0, base: float = 0.0) -> Callable[[frozenset[str]], float]:
    """Fails at `rate` when every change of any one group is applied (OR of ANDs), else at `base`."""
    def f(applied: frozenset[str]) -> float:
        return rate if any(g <= applied for g in groups) else base
    return f
