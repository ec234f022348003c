"""Children of a runner that was killed: each local command's process group is noted in a file while it
runs, so a `--resume` can stop what a kill -9 left running (a workload, a `wb sim repro`, a restart)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from workbench.processes import pid_alive, process_start

GRACE_S = 3.0


def note(folder: Path | None, pid: int) -> Path | None:
    """Record a child's process group (its pid and start time); the caller removes the file when it ends."""
    if folder is None:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / str(pid)
        path.write_text(process_start(pid) or "", encoding="ascii")
        return path
    except OSError:
        return None


def forget(path: Path | None) -> None:
    if path is not None:
        try:
            path.unlink()
        except OSError:
            pass


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def reap(folder: Path) -> list[str]:
    """Stop every process group still running from `folder`'s notes (only when the pid is still the child
    that was noted, not a reused one); returns what was stopped, for the log."""
    said = []
    if not folder.is_dir():
        return said
    for path in sorted(folder.iterdir()):
        if not path.name.isdigit():
            continue
        pid = int(path.name)
        start = path.read_text(encoding="ascii").strip() or None
        # A leader that exited unwaited (a zombie, which pid_alive reads as gone) still names its group, whose
        # members may run on: the group is the noted one while the pid keeps its start time.
        if start is not None and (pid_alive(pid, start) or process_start(pid) == start):
            _signal_group(pid, signal.SIGTERM)
            t0 = time.monotonic()
            while pid_alive(pid, start) and time.monotonic() - t0 < GRACE_S:
                time.sleep(0.1)
            _signal_group(pid, signal.SIGKILL)
            said.append(f"stopped process group {pid} left running by the interrupted runner")
        forget(path)
    return said
