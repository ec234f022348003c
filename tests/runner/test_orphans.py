"""A resume stops the process groups a killed runner's commands left running (`runner.orphans`)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def test_a_group_whose_leader_exited_unwaited_still_has_its_members_stopped(tmp_path: Path) -> None:
    """A noted command's group leader that exited and was not waited for (a zombie: its parent, the killed runner,
    gone, under a first process that never waits) leaves the members it started running in its group. Since
    pid_alive reads a zombie as dead, `reap` took the group for gone and left them running; the group is still
    the noted one (the leader's pid, its start time unchanged), so it is stopped."""
    from workbench.runner.lock import pid_alive, process_start
    from workbench.runner.orphans import note, reap

    leader = subprocess.Popen(["sh", "-c", "sleep 600 & echo $!; exit 0"], stdout=subprocess.PIPE,
                              start_new_session=True)
    assert leader.stdout is not None
    member = int(leader.stdout.readline())
    member_start = process_start(member)
    try:
        assert note(tmp_path, leader.pid) is not None
        os.waitid(os.P_PID, leader.pid, os.WEXITED | os.WNOWAIT)  # it exited, and is left a zombie
        assert pid_alive(member, member_start)
        said = reap(tmp_path)
        assert said == [f"stopped process group {leader.pid} left running by the interrupted runner"], said
        for _ in range(600):  # a bound on the wait for the kill to land, not a timing check
            if not pid_alive(member, member_start):
                break
            time.sleep(0.05)
        assert not pid_alive(member, member_start)
        assert list(tmp_path.iterdir()) == []
    finally:
        if pid_alive(member, member_start):
            os.kill(member, signal.SIGKILL)
        leader.stdout.close()
        leader.wait()
