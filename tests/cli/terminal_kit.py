"""Run the real `wb` with a pseudo-terminal as its stdout (rich help and colour are for terminals only)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

WB = str(Path(sys.executable).with_name("wb"))


def in_a_terminal(args: list[str], env: dict[str, str], *, timeout_s: float = 120) -> bytes:
    """What `wb ARGS` wrote to its terminal, read until it closed it."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([WB, *args], stdout=slave, stderr=subprocess.DEVNULL, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=timeout_s)
    os.close(master)
    return b"".join(chunks)
