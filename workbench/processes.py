"""Whether a process on this machine still runs, read from /proc: a lock's owner, a site build, a probed process.

`kill(pid, 0)` succeeds on a zombie (a process killed and not yet waited for by its parent, for good under one that
never waits), so every such check reads the process's state in /proc/PID/stat.
"""

from __future__ import annotations

import os

__all__ = ["pid_alive", "process_start"]


def process_start(pid: int) -> str | None:
    """The kernel's start time of `pid` (clock ticks since boot), which tells a reused pid from its first owner."""
    fields = _proc_stat(pid)
    return fields[19] if fields is not None and len(fields) > 19 else None


def _proc_stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields from the state on (the state is [0], the start time [19]); None where /proc does not
    say (no such process, or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
        return stat.rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


PF_EXITING = 0x4  # the kernel's flag of a process that is exiting (/proc/PID/stat's flags)


def pid_alive(pid: int, start: str | None) -> bool:
    """Whether `pid` is still the process that started at `start` (None: not recorded). A process killed outright
    (kill -9) stays in the process table until its parent waits for it (a zombie: for good, where that parent never
    does, as a container's first process may not), and `kill(pid, 0)` succeeds on it: a dead runner's lock read as
    a live runner's. /proc tells: a process that is a zombie, or exiting, with no other thread left, is gone. No
    process has a pid below 1 (kill() would signal a process group there, and succeed)."""
    if pid < 1:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: past any pid (a name or a file written by hand)
        return False
    except PermissionError:
        pass  # another user's process: /proc still tells its start and state
    fields = _proc_stat(pid)
    if fields is None or len(fields) < 20:
        return True  # cannot be told here (no /proc): taken as alive, as a pid that answers
    if start is not None and fields[19] != start:
        return False  # the pid was reused by another process
    dying = fields[0] in ("Z", "X") or int(fields[6]) & PF_EXITING
    return not (dying and int(fields[17]) <= 1)
