"""CPU and disk stressors for showing that pdsim's outcomes do not depend on the host's load.

`Stress(cpu=N, writers=W, mb=M, dir=D)` starts N busy-looping processes and W processes that each
write M MB to a file under D with fsync, over and over (as package installs or a browser cache
do); leaving the `with` block stops every one of them by pid and removes the files, whatever
happened inside it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["Stress"]

_CPU = "while True:\n    pass\n"
_WRITER = """
import os, sys
path, mb = sys.argv[1], int(sys.argv[2])
block = os.urandom(1 << 20)
while True:
    with open(path, "wb") as fh:
        for _ in range(mb):
            fh.write(block)
            fh.flush()
            os.fsync(fh.fileno())
    os.remove(path)
"""


class Stress:
    def __init__(self, *, cpu: int = 2, writers: int = 1, mb: int = 300,
                 dir: str | Path | None = None) -> None:
        self.cpu, self.writers, self.mb = cpu, writers, mb
        self.dir = Path(dir) if dir else None
        self.procs: list[subprocess.Popen] = []
        self._tmp: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> "Stress":
        if self.dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="pdsim-stress-")
            self.dir = Path(self._tmp.name)
        try:
            for _ in range(self.cpu):
                self._spawn([sys.executable, "-c", _CPU])
            for i in range(self.writers):
                self._spawn([sys.executable, "-c", _WRITER, str(self.dir / f"stress-{i}.bin"),
                             str(self.mb)])
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, argv: list[str]) -> None:
        self.procs.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def stop(self) -> None:
        """Kill every stressor by pid and wait for it; remove what the writers left."""
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        self.procs = []
        if self.dir is not None:
            for f in self.dir.glob("stress-*.bin"):
                f.unlink(missing_ok=True)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __exit__(self, *exc) -> None:
        self.stop()
