"""Per-call cost of pdsim's simulated clock, the work every participant's event loop does on each turn.

    python benchmarks/sim_clock_bench.py

Three participants share one clock file (as prefill, decode and a client do). Printed, in microseconds per call:
`_try_advance` when every participant is idle (the locked check that may move the clock), its fast path when one
is busy, one idle + busy publish of our slot, and `now()`. Run it in two checkouts to compare implementations
(the figures depend on the machine, not on a baseline of their own).
"""

from __future__ import annotations

import sys
import tempfile
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.sim.clock import Clock, reset  # noqa: E402

_IDLE, _BUSY = 2, 1
N = 20000


def per_call_us(fn) -> float:
    return min(timeit.repeat(fn, number=N, repeat=3)) / N * 1e6


def main() -> None:
    sdir = Path(tempfile.mkdtemp(prefix="pdsim-clock-"))
    reset(sdir)
    clocks = [Clock(sdir, unit) for unit in ("prefill", "decode", "client")]
    try:
        for c in clocks:
            c._publish(_IDLE)
        c = clocks[0]
        rows = [("_try_advance, every participant idle", per_call_us(c._try_advance))]
        clocks[1]._publish(_BUSY)
        rows.append(("_try_advance, one participant busy (fast path)", per_call_us(c._try_advance)))
        rows.append(("publish idle then busy", per_call_us(lambda: (c._publish(_IDLE), c._publish(_BUSY)))))
        rows.append(("now()", per_call_us(c.now)))
        for name, us in rows:
            print(f"{name:<50} {us:8.2f} us")
    finally:
        for c in clocks:
            c.close()


if __name__ == "__main__":
    main()
