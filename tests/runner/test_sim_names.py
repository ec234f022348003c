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


def test_a_run_on_pdsim_is_shown_on_pdsim_while_its_host_stays_local(tmp_path, capsys):
    """The progress line and the summary's order read "control r0 on local", "control@local" for a run of the
    embedded deployment; they name pdsim, while the stored host stays the sim target's one host, `local`
    (a resume compares it). A local profile's runs are shown on their host as before."""
    from workbench.app import RunReport
    from workbench.cli.run_cmd import summary_lines
    from workbench.runner.plan import PlannedRun
    from workbench.runner.progress import RunProgress
    from workbench.runner.summary import ExecutionResult, RunSummary
    from workbench.runner.targets.local import LocalTarget
    from workbench.runner.targets.sim import SimTarget

    target = SimTarget(sim_dir=tmp_path / "sim", options={})
    assert target.hosts == ["local"] and target.where("local") == "pdsim"
    assert LocalTarget().where("local") == "local" and LocalTarget(["box"]).where("box") == "box"
    pr = PlannedRun(order_index=0, arm="control", replicate=0, block=0, host="local")
    with RunProgress(2, enabled=True, title="wedge-confound on sim", where=target.where) as progress:
        progress.finished(0, "ok", pr, 1)
    err = capsys.readouterr().err
    assert "[1/2] run 1 control r0 on pdsim: ok (" in err and "on local" not in err, err
    runs = tuple(RunSummary(i + 1, arm, 0, 0, i, "local", "ok", None, where="pdsim")
                 for i, arm in enumerate(["control", "treatment"]))
    e = ExecutionResult(hypothesis="wedge-confound", experiment="agent-repro", experiment_version=1, profile="sim",
                        target="sim", execution_id=1, mode="fixed", seed=5, blocks="abba", overrides={},
                        order=("control@pdsim", "treatment@pdsim"), config_diff={}, arms={}, runs=runs,
                        stopped_early=None, timing={})
    (order,) = [ln for ln in summary_lines(RunReport(e, None, "none")) if ln.startswith("order: ")]
    assert order == "order: control@pdsim treatment@pdsim", order
