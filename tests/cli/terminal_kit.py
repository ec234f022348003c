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
    return run_in_a_terminal(args, env, timeout_s=timeout_s)[1]


def run_in_a_terminal(args: list[str], env: dict[str, str], *, on: str = "stdout",
                      timeout_s: float = 120) -> tuple[int, bytes]:
    """`wb ARGS` with a pseudo-terminal as its stdout, or its stderr (`on`), or both (`on="both"`, as a user's shell
    runs it); the other goes nowhere: the exit status and what it wrote to the terminal, read until it closed it."""
    master, slave = pty.openpty()
    streams = {"stdout": slave, "stderr": slave} if on == "both" else \
        {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, on: slave}
    proc = subprocess.Popen([WB, *args], env=env, **streams)
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
    return proc.returncode, b"".join(chunks)
