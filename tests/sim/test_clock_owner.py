"""A slot of the simulated clock is its owner's while that very process runs, not while its pid does."""

from __future__ import annotations

import os


def test_a_slot_whose_pid_was_reused_is_freed(tmp_path) -> None:
    """The clock freed a slot only when no process had its pid: a pid reused by another process (the owner killed
    outright, its number taken since) kept the slot, for good, as a live participant's. The slot records its
    owner's start time beside the pid (`workbench.processes.pid_alive`), as a lock does."""
    from workbench.sim import clock

    c = clock.Clock(tmp_path, "test")
    try:
        q, other = c._q, clock._BASES[(c.slot + 1) % clock.SLOTS]
        assert not c._reap_dead()  # our own slot stays
        q[other + clock._STATE], q[other + clock._PID] = clock._BUSY, clock._owner(os.getpid(), "1")
        assert c._reap_dead() and q[other + clock._STATE] == clock._FREE  # our pid, another start: reused
        q[other + clock._STATE], q[other + clock._PID] = clock._BUSY, q[c._base + clock._PID]
        assert not c._reap_dead() and q[other + clock._STATE] == clock._BUSY  # the very process: kept
    finally:
        c.close()
