"""The decode server's KV page pool (sized by the dtype-blind pool configurator) and its
continuous-batching scheduler, both on the deployment's simulated clock."""

from __future__ import annotations

import asyncio
import itertools

import numpy as np

from workbench.sim import datapath as dp
from workbench.sim.clock import Clock

__all__ = ["RoomFailed", "DecodeKVPool", "Scheduler", "STEP_S"]

PAGE = dp.PAGE
STEP_S = (0.0175, 0.0017)      # one decode step for a batch of B: a + b*B simulated seconds


class RoomFailed(Exception):
    pass


class DecodeKVPool:
    """Token pages for KV + index-K rows, sized by the pool configurator: dtype-blind (the seed's bug) unless
    `configurator_fix`."""

    def __init__(self, budget_mb: float, index_k_dtype: str, clock: Clock, configurator_fix: bool = False) -> None:
        budget = int(budget_mb * 1e6)
        self.clock = clock
        self.idx_bytes = dp.idx_bytes(index_k_dtype)
        # The pool configurator's bug: it budgets index-K at the fp8 row size, whatever the dtype.
        self.budget_row_bytes = dp.KV_BYTES + dp.idx_bytes(index_k_dtype if configurator_fix else "fp8")
        self.logical_pages = budget // (PAGE * self.budget_row_bytes)
        self.physical_pages = budget // (PAGE * (dp.KV_BYTES + self.idx_bytes))
        n = self.physical_pages * PAGE
        self.kv = np.zeros((n, dp.KV_BYTES), dtype=np.uint8)
        self.idx = np.zeros((n, self.idx_bytes), dtype=np.uint8)
        self._free = list(range(self.logical_pages - 1, -1, -1))   # LIFO: recently freed first
        self.failed_writes: set[int] = set()     # pages a write has found without memory
        self._waiters: list[list] = []           # [pages wanted, future], in arrival order

    @property
    def free_pages(self) -> int:
        return len(self._free)

    def _take(self, n: int) -> list[int]:
        return [self._free.pop() for _ in range(n)]

    def _grant(self) -> None:
        """Wake waiters in arrival order; each takes its pages if they are there now."""
        for w in list(self._waiters):
            if not w[1].done() and len(self._free) >= w[0]:
                w[1].set_result(self._take(w[0]))
                self._waiters.remove(w)

    async def admit(self, n: int, until: float) -> list[int]:
        if n > self.logical_pages:
            raise RoomFailed(f"request needs {n} pages; the pool has {self.logical_pages}")
        if len(self._free) >= n:
            return self._take(n)
        fut = asyncio.get_running_loop().create_future()
        w = [n, fut]
        self._waiters.append(w)
        timer = self.clock.at(until, (41,), lambda: fut.done()
                              or fut.set_exception(asyncio.TimeoutError()))
        try:
            return await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self._free.extend(reversed(fut.result()))     # granted as we were cancelled
                self._grant()
            raise
        finally:
            timer.cancel()
            if w in self._waiters:
                self._waiters.remove(w)

    async def keep_working(self, old: list[int]) -> list[int]:
        """Hand the pages of `old` that no write has failed on to a retry, free the rest;
        returns the kept pages in `old`'s order."""
        self._free.extend(p for p in reversed(old) if p in self.failed_writes)
        self._grant()
        return [p for p in old if p not in self.failed_writes]

    async def free(self, pages: list[int]) -> None:
        self._free.extend(reversed(pages))
        self._grant()

    def write_page(self, page: int, ntok: int, payload: bytes) -> bool:
        """One-sided write of a page of rows; False if the page has no physical memory."""
        if page >= self.physical_pages:
            self.failed_writes.add(page)
            return False
        rows = np.frombuffer(payload, dtype=np.uint8)
        kv_n = ntok * dp.KV_BYTES
        base = page * PAGE
        self.kv[base:base + ntok] = rows[:kv_n].reshape(ntok, dp.KV_BYTES)
        self.idx[base:base + ntok] = rows[kv_n:].reshape(ntok, self.idx_bytes)
        return True

    def rows(self, pages: list[int], n: int) -> tuple[np.ndarray, np.ndarray]:
        slots = (np.asarray(pages, dtype=np.int64)[np.arange(n) // PAGE] * PAGE
                 + np.arange(n) % PAGE)
        return self.kv[slots], self.idx[slots]


class Scheduler:
    """Continuous batching: every active request advances one token per step; a step of a batch
    of B takes a + b*B simulated seconds (52 tok/s at B=1, ~445 tok/s at B=32)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._active: dict[int, list] = {}
        self._ids = itertools.count()
        self._last = clock.now()
        self._timer = None
        self.tokens = 0

    @staticmethod
    def step_s(batch: int) -> float:
        return STEP_S[0] + STEP_S[1] * batch

    def _advance(self) -> None:
        """Credit the requests in the batch for the time since the last call."""
        now = self.clock.now()
        batch = len(self._active)
        if batch:
            adv = (now - self._last) / self.step_s(batch)
            for key, item in list(self._active.items()):
                item[0] -= adv
                if item[0] <= 1e-3:      # float resolution of epoch seconds is ~0.2 us
                    if not item[1].done():
                        item[1].set_result(None)
                    del self._active[key]
            self.tokens += int(adv * batch)
        self._last = now

    def _reschedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._active:
            rest = min(v[0] for v in self._active.values())
            due = self._last + max(rest, 0.0) * self.step_s(len(self._active))
            self._timer = self.clock.at(due, (40,), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._advance()
        self._reschedule()

    async def run(self, n_tokens: int) -> None:
        fut = asyncio.get_running_loop().create_future()
        key = next(self._ids)
        self._advance()                  # a newcomer gets no credit for time before it joined
        self._active[key] = [float(n_tokens), fut]
        self._reschedule()
        try:
            await fut
        finally:
            if key in self._active:      # cancelled: leave the batch
                self._advance()
                self._active.pop(key, None)
                self._reschedule()
