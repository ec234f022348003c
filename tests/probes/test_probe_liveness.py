"""`read_counts(since=...)` waits only for probed processes that still run on this machine."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from workbench.probes import read_counts


def test_a_probed_process_left_a_zombie_is_not_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A probed process killed outright stays a zombie until its parent waits for it (for good under one that never
    does). It was judged by kill(pid, 0), which succeeds on a zombie: `read_counts` waited its whole timeout for a
    flush that could never come, then marked the row stale. Liveness is read from /proc
    (workbench.processes.pid_alive): a zombie is gone."""
    probed = subprocess.Popen(["sleep", "600"])
    try:
        os.kill(probed.pid, signal.SIGKILL)
        os.waitid(os.P_PID, probed.pid, os.WEXITED | os.WNOWAIT)  # it died, and is left a zombie
        doc = {"format": 1, "pid": probed.pid, "process": "sleep", "host": socket.gethostname(),
               "written_at": time.time() - 60, "final": False,
               "targets": {"pkg.mod:f": {"calls": 2, "resolved": True, "state": "instrumented"}}}
        (tmp_path / f"probe-{probed.pid}-0000.json").write_text(json.dumps(doc), encoding="utf-8")

        def waited(_s: float) -> None:
            raise AssertionError("read_counts waited for a process that is gone")

        monkeypatch.setattr(time, "sleep", waited)
        [row] = read_counts(tmp_path, since=time.time(), timeout_s=600)
        assert (row["calls"], row["stale"]) == (2, True), row
    finally:
        monkeypatch.undo()
        probed.wait()
