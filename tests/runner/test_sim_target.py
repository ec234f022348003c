"""The sim target's choice between a pdsim already serving in its folder and one it starts itself."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from runner_kit import run_hypothesis  # noqa: E402  (tests/runner is on sys.path)
from workbench.runner.execute import RunInterrupted
from workbench.runner.targets.sim import SimTarget
from workbench.sim import control
from workbench.sim.config import render_serve_file


def test_a_stopped_folder_whose_ports_another_pdsim_answers_gets_a_pdsim_of_its_own(tmp_path: Path):
    """`wb sim up` then `wb sim down` leave the serve file naming the ports it had. When another folder's
    pdsim serves on them, their /health answered 200, so a run took the stopped folder for serving: it
    restarted it on ports in use (every run failed) and its restore asked the user to start a pdsim that had
    been down. The folder's own servers must be the ones answering."""
    here, other = tmp_path / "here", tmp_path / "other"
    here.mkdir()
    ports = control.free_ports()
    serve = here / "serve.sh"
    serve.write_text(render_serve_file(ports))
    control.up(here)
    control.down(here)
    control.up(other, config=serve)  # another deployment on the ports the stopped folder's file names
    target = SimTarget(sim_dir=here, options={})
    try:
        assert control.status(other).state == "healthy" and control.status(here).state == "down"
        served = asyncio.run(target.setup(serve, {}))
        assert target.started_here, "the stopped folder was taken for a serving one"
        assert (served["prefill_port"], served["decode_port"]) != (ports["prefill_port"], ports["decode_port"])
        assert control.status(here).state == "healthy"
    finally:
        assert asyncio.run(target.teardown()) is None
        control.down(other)
    assert control.status(here).state == "down"


def test_a_pdsim_serving_in_its_folder_is_used_and_left_serving(tmp_path: Path):
    here = tmp_path / "here"
    here.mkdir()
    ports = control.free_ports()
    serve = here / "serve.sh"
    serve.write_text(render_serve_file(ports))
    control.up(here)
    target = SimTarget(sim_dir=here, options={})
    try:
        served = asyncio.run(target.setup(serve, {}))
        assert not target.started_here
        assert (served["prefill_port"], served["decode_port"]) == (ports["prefill_port"], ports["decode_port"])
        assert asyncio.run(target.teardown()) is None
        assert control.status(here).state == "healthy"  # the operator's pdsim stays up
    finally:
        control.down(here)


def test_a_run_starts_no_pdsim_on_the_original_serve_file_before_its_first_arm(bench):
    """A runner that found pdsim down started it on the original serve file (its ports rewritten into it) only for
    the first run's restart to stop it and start it again on the first arm's: two servers started and stopped
    for nothing in every such execution. The first run's restart starts pdsim: before it, the serve file is the
    original and pdsim is down; stopped there, the serve file stays the original and nothing is left serving."""
    seen: dict[str, object] = {}

    async def fault(stage, pr):
        if stage == "render" and not seen:
            seen.update(state=control.status(bench.sim_dir).state, serve=bench.serve())
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(5)  # the handler cancels this task before the sleep ends

    with pytest.raises(RunInterrupted):
        run_hypothesis("wedge-confound", db=bench.db, replicates=1, seed=7, fault=fault)
    assert seen == {"state": "down", "serve": bench.original}
    assert bench.serve() == bench.original
    assert control.status(bench.sim_dir).state == "down"
