"""Same serve file + same workload seed -> the same per-session outcomes, on an idle host and beside
CPU and disk stressors (pdsim runs on simulated time, so host speed changes only how long it takes)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from workbench.sim import control, logs, repro
from workbench.sim.stress import Stress

from pdsim_kit import write_serve

pytestmark = pytest.mark.slow  # end to end: runs first (tests/conftest.py)

# The wedge world without the fix: timeouts, aborts, the wedge and the abort race, all of which
# used to follow the host's speed. A small pool makes them happen with a small, quick workload.
VALUES = {"causal_model": "wedge", "nixl_abort_fix": "off", "decode_pool_mb": 30, "seed": 3}


def _outcomes(sim_dir) -> tuple[list[tuple], int]:
    t0 = datetime.now(timezone.utc)
    # 16 sessions: seed 3 still times out, leaks and wedges (27 WaitingForInput lines), asserted below; the
    # stressors run as long as the loaded run does, so each session less is CPU saved twice.
    res = repro.run_repro(sim_dir, sessions=16, rounds=4, tag="det")
    wfi = sum(1 for line in logs.read_journal(sim_dir, "decode", t0)
              if "waitingforinput" in line.lower())
    rows = sorted((s.session, s.outcome, s.rounds, s.error, s.timings["wall_s"],
                   tuple(s.timings["rounds_s"])) for s in res.sessions)
    return rows, wfi


def test_same_outcomes_idle_and_under_stress(sim_dir, tmp_path):
    control.up(sim_dir, config=write_serve(sim_dir, **VALUES))  # a fresh start, as a restart gives
    idle, wfi_idle = _outcomes(sim_dir)
    with Stress(cpu=2, writers=1, mb=200, dir=tmp_path) as s:
        assert len(s.pids) == 3
        control.restart(sim_dir, timeout=300)   # beside the stressors, and the rest of a busy suite
        loaded, wfi_loaded = _outcomes(sim_dir)
    assert loaded == idle
    assert wfi_loaded == wfi_idle
    outcomes = {row[1] for row in idle}
    assert {"error", "leak"} <= outcomes and wfi_idle > 0    # timeouts, the wedge and the race ran
