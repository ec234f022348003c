"""Device index tensors handed to `transfer()` again unchanged: read once on the host, then
launched as a validated plan.

On its second call (the same tensor objects, torch's version counters unchanged:
kernels.api._reused), a pair of device id tensors is copied to pinned memory behind an event,
with no synchronisation; the calls stay checked on the device until that copy has landed. Once
it has, the ids are checked on the host as `plan_transfer` checks them (range, duplicate
destinations). Valid ids then run as a plan: no device checks, and the plan's default path,
which needs the ids on the host for some of its choices (the staged DMA path of host pages in
long runs; the exact page counts of host rows with scales). Bad ids keep the checked launch,
which reports them as before. Ids changed in place get a new version: they are checked on the
device and read again; inference tensors keep no version counter and are never kept.
"""

from __future__ import annotations

from . import build

__all__ = ["ReusedIds", "host_valid"]

# Duplicate destinations are counted by a bincount when the id range is at most this many
# times the id count (linear), else found by a sort.
BINCOUNT_SPAN = 8


def host_valid(src_ids, dst_ids, src_limit: int, dst_limit: int) -> bool:
    """True when every cpu id is inside its limit and no destination id repeats."""
    import numpy as np

    a, b = src_ids.numpy(), dst_ids.numpy()
    if a.size == 0:
        return True
    if a.min() < 0 or a.max() >= src_limit or b.min() < 0 or b.max() >= dst_limit:
        return False
    if b.size == 1:
        return True
    if dst_limit <= BINCOUNT_SPAN * b.size:
        return int(np.bincount(b, minlength=dst_limit).max()) <= 1
    s = np.sort(b)
    return not bool((s[1:] == s[:-1]).any())


class ReusedIds:
    """The host copy of a reused pair of device id tensors and, once it has landed and the
    ids are valid, the plan that launches them (`plan()`: None until then, and for bad ids).
    The plan keeps no pool: `launch` lends it the pools for one call."""

    __slots__ = ("host", "event", "state", "_plan", "_make", "_one")

    def __init__(self, si, di, make_plan):
        """make_plan(cpu src ids, cpu dst ids) -> the validated plan of those ids (None when
        they are bad), called once the copy has landed."""
        import torch

        n = si.numel()
        self.host = torch.empty(2 * n, dtype=torch.int64, pin_memory=True)
        self.host[:n].copy_(si, non_blocking=True)
        self.host[n:].copy_(di, non_blocking=True)
        self.event = torch.cuda.Event()
        self.event.record(torch.cuda.current_stream(si.device))
        self.state = "copying"          # then "valid" or "bad"
        self._plan, self._make, self._one = None, make_plan, None

    def plan(self):
        """The validated plan, or None (the copy in flight, or bad ids)."""
        if self.state == "copying":
            if not self.event.query():
                return None
            n = self.host.numel() // 2
            self._plan = self._make(self.host[:n], self.host[n:])
            self.state = "bad" if self._plan is None else "valid"
            self._make = None
        return self._plan

    def launch(self, src, dst) -> None:
        """The plan's default path on these pools (the ones its ids were checked for). Where
        that is one launch, its arguments are kept from the first call and the binding called
        directly: the plan's choices cost ~13 us of host time per call, as much as a 33.6 MB
        copy takes on the device."""
        plan = self._plan
        if self._one is None:
            self._one = self._with_pools(plan, src, dst, build.one_launch) or ()
        if self._one:
            si, di, args = self._one
            build.load().transfer(src, dst, si, di, *args)
        else:
            self._with_pools(plan, src, dst, build.launch)

    @staticmethod
    def _with_pools(plan, src, dst, fn):
        plan.src, plan.dst = src, dst
        try:
            return fn(plan)
        finally:
            plan.src = plan.dst = None
