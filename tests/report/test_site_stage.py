"""A site build's staging folder (`report.site._stage`): what a killed build left is removed by the next."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def test_a_killed_builds_staging_folder_is_removed_though_its_process_was_not_waited_for(tmp_path: Path) -> None:
    """A build killed outright stays a zombie until its parent waits for it (for good under one that never does);
    the staging folder's owner was judged by kill(pid, 0), which succeeds on a zombie, so its folder stayed beside
    the site. Liveness is read from /proc (workbench.processes.pid_alive): a zombie is gone."""
    from workbench.report.site import STAGE_PREFIX, _stage

    builder = subprocess.Popen(["sh", "-c", "exit 0"])
    try:
        os.waitid(os.P_PID, builder.pid, os.WEXITED | os.WNOWAIT)  # it ended, and is left a zombie
        left = tmp_path / f"{STAGE_PREFIX}{builder.pid}"
        (left / "hypotheses").mkdir(parents=True)
        mine = _stage(tmp_path)
        assert not left.exists()
        assert mine == tmp_path / f"{STAGE_PREFIX}{os.getpid()}"
    finally:
        builder.wait()


def test_a_staging_folder_named_for_no_possible_pid_is_removed_not_a_traceback(tmp_path: Path) -> None:
    """`.wb-build-` and digits past any pid (a folder copied in, or named by hand): kill() raised OverflowError,
    which the check did not catch, and `wb report` stopped with a traceback. No process has that pid."""
    from workbench.report.site import STAGE_PREFIX, _stage

    left = tmp_path / f"{STAGE_PREFIX}{10 ** 20}"
    left.mkdir()
    _stage(tmp_path)
    assert not left.exists()


def test_a_staging_folder_named_for_pid_0_is_removed_and_no_pid_below_1_is_alive(tmp_path: Path) -> None:
    """kill(0, 0) signals the caller's own process group and kill(-1, 0) every process it may signal: both succeed,
    so `.wb-build-0` (a folder copied in, or named by hand) was kept as a live build's for good, and a lock naming
    pid 0 or -1 read as a live runner's."""
    from workbench.processes import pid_alive
    from workbench.report.site import STAGE_PREFIX, _stage

    left = tmp_path / f"{STAGE_PREFIX}0"
    left.mkdir()
    _stage(tmp_path)
    assert not left.exists()
    assert not any(pid_alive(pid, None) for pid in (0, -1, -2))
