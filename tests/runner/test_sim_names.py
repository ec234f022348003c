"""The `sim` target names itself as users know it (the `sim` profile's pdsim in its folder), not as the
local target it is built on: "target local is in use", "RESTORE INCOMPLETE on local" pointed nowhere."""

from __future__ import annotations

import json
import os
import socket

import pytest

from runner_kit import run_hypothesis  # noqa: E402  (tests/runner is on sys.path)
from workbench.runner.lock import TargetBusy, process_start
from workbench.runner.targets.sim import sim_lock


def test_the_sim_target_describes_itself_as_pdsim_in_its_folder(tmp_path):
    from workbench.runner.targets.sim import SimTarget

    target = SimTarget(sim_dir=tmp_path / "sim", options={})
    shown = target.describe(target.hosts[0])
    assert shown == f"sim (pdsim in {tmp_path / 'sim'})", shown


def test_a_busy_pdsim_is_refused_by_its_name(bench):
    holder = {"execution": "f" * 32, "host": socket.gethostname(), "pid": os.getpid(),
              "pid_start": process_start(os.getpid()), "since": "2026-12-01T09:00:00+00:00"}
    sim_lock(bench.sim_dir).write_text(json.dumps(holder, sort_keys=True) + "\n")
    with pytest.raises(TargetBusy) as caught:
        run_hypothesis("wedge-confound", db=bench.db, seed=7, build_report=False)
    message = caught.value.message
    assert message.startswith(f"target sim (pdsim in {bench.sim_dir}) is in use by execution "), message
    assert "target local" not in message and "on local" not in (caught.value.hint or ""), caught.value.hint
