"""Shared functions for the embedded deployment's tests (imported by name: pytest puts this dir on sys.path)."""

from __future__ import annotations

from pathlib import Path

from workbench.sim.config import render_serve_file
from workbench.sim.control import free_port  # noqa: F401  (the tests import it from here)


def write_serve(d: Path, **values) -> Path:
    """A serve file with free ports (never the defaults) plus the given values."""
    values.setdefault("prefill_port", free_port())
    values.setdefault("decode_port", free_port(avoid=(int(values["prefill_port"]),)))
    path = d / "serve.sh"
    path.write_text(render_serve_file(values))
    return path


def pid_alive(pid: int) -> bool:
    """True if the pid is a live, non-zombie process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
