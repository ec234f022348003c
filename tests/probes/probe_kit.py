"""Helpers the probe tests import (kept out of conftest.py, whose module name is shared by every test folder)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


def by_target(rows: list[dict]) -> dict[str, dict]:
    return {r["target"]: r for r in rows}


def read_line(p: subprocess.Popen, timeout: float = 60) -> str:
    """The child's next stdout line; kills it and fails if none comes within `timeout` seconds."""
    import threading

    box: list[str] = []
    t = threading.Thread(target=lambda: box.append(p.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    if not box:
        p.kill()
        t.join(10)
        pytest.fail(f"no line from pid {p.pid} within {timeout}s")
    return box[0].strip()


def finish(p: subprocess.Popen, timeout: float = 60) -> tuple[str, str]:
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"exit {p.returncode}: {err}"
    return out, err


def other_pythons() -> list[str]:
    """Interpreters besides this one that can run the stdlib-only probe (3.12+ exercises sys.monitoring)."""
    found = []
    for ver in ("3.12", "3.13"):
        for cand in (f"/usr/bin/python{ver}", f"/usr/local/bin/python{ver}"):
            if os.access(cand, os.X_OK):
                found.append(cand)
                break
        else:
            pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
            for d in sorted(pyenv.glob(f"{ver}.*")) if pyenv.is_dir() else []:
                if os.access(d / "bin" / "python", os.X_OK):
                    found.append(str(d / "bin" / "python"))
                    break
    return found
