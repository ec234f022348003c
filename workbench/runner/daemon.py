"""Commands that leave a background process behind (a restart that starts a server with `&`).

The rule: wb waits for the command's own process, never for end-of-file on its output. A server
started in the background inherits the command's stdout and stderr and keeps them for as long as it
lives. Locally, wb gives a command files, not pipes (Capture): the server can write to them forever
without blocking anything or dying of a closed pipe, and wb reads what the command wrote once the
command itself has exited. Over SSH, wb waits for the command's exit status, reads what already
arrived, and closes the channel (remote_exited): a server left holding that channel's output gets
a closed pipe on its next write there, so its output must be redirected (`svc ... > svc.log 2>&1 &`).
When a command leaves a process holding its output, wb warns once (HELD_OPEN_WARNING).

Every wait of a profile comes from its `options` (defaults in registry/timeouts.py, documented in
docs/own-service.md).
"""

from __future__ import annotations

import asyncio
from typing import Any

POLL_S = 0.02

HELD_OPEN_WARNING = (
    "warning: `{command}` exited but left a background process holding its output open; wb did not wait "
    "for it. Redirect the background process's output (e.g. `svc serve CONF > svc.log 2>&1 &`) so its "
    "messages are kept in a log.")


async def remote_exited(proc: Any) -> None:
    """An SSH command's end: its exit status (or signal) arrived, or the channel closed without one.
    The channel itself stays open while a background process holds the remote command's output."""
    closed = asyncio.ensure_future(proc.wait_closed())
    try:
        while not closed.done() and proc.exit_status is None and proc.exit_signal is None:
            await asyncio.wait({closed}, timeout=POLL_S)
    finally:
        if not closed.done():
            closed.cancel()


def failure_reason(res: Any, timeout: float) -> str:
    """Why a command failed, in words, with its output or the fact that it printed nothing."""
    why = f"timed out after {timeout:g} s (killed)" if res.timed_out else f"exited {res.rc}"
    text = res.excerpt(400)
    return f"{why}: {text}" if text else f"{why}, printing nothing"


class Capture:
    """A command's stdout or stderr as a file the command writes itself (never a pipe): a background
    process that inherits it can neither block wb nor die of a closed pipe when wb stops reading.
    `sink`, when given, is the artifact file to write into (so a killed run keeps its output)."""

    def __init__(self, sink: Any = None) -> None:
        import os
        import tempfile

        self._own = None
        self.start = 0
        fileno = getattr(sink, "fileno", None)
        try:
            self.fd = fileno() if fileno is not None else None
        except (OSError, ValueError):
            self.fd = None
        self.path = getattr(sink, "name", None) if self.fd is not None else None
        if self.fd is not None and isinstance(self.path, str):
            sink.flush()
            self.start = os.lseek(self.fd, 0, os.SEEK_CUR)
            self.sink = None
        else:
            handle, path = tempfile.mkstemp(prefix="wb-out-")
            os.unlink(path)  # anonymous: whatever a background process writes later goes nowhere visible
            self._own = self.fd = handle
            self.sink = sink

    def text(self) -> str:
        """What the command wrote (read without moving the file offset the command shares)."""
        import os

        if self._own is None:  # the artifact file, open for writing only: read it by name
            with open(str(self.path), "rb") as f:
                f.seek(self.start)
                data = f.read()
        else:
            end = os.fstat(self.fd).st_size
            data = os.pread(self.fd, max(end - self.start, 0), self.start)
        if self.sink is not None and data:
            self.sink.write(data)
            self.sink.flush()
        return data.decode("utf-8", "replace")

    def close(self) -> None:
        import os

        if self._own is not None:
            os.close(self._own)
            self._own = None


def holds_output(pgid: int, captures: list[Capture]) -> bool:
    """Whether a process the command left behind (its process group) still has the command's stdout or
    stderr open: output not redirected. Where /proc cannot say, any survivor in the group counts."""
    import os

    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    ours = set()
    for c in captures:
        st = os.fstat(c.fd)
        ours.add((st.st_dev, st.st_ino))
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return True
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            if int(fields[2]) != pgid:  # fields after the name: state, ppid, pgrp, ...
                continue
            for n in (1, 2):
                st = os.stat(f"/proc/{pid}/fd/{n}")
                if (st.st_dev, st.st_ino) in ours:
                    return True
        except (OSError, ValueError, IndexError):
            continue
    return False
