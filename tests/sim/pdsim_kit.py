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


def start_wedged(d: Path):
    """pdsim started without the abort fix and wedged as tests/sim/test_wedge.py wedges it: a transfer into a page
    without memory aborts its room, and the ABORT kills prefill's bootstrap thread (health stays 200)."""
    import time

    import httpx

    from workbench.sim import control
    from workbench.sim import datapath as dp

    st = control.up(d, config=write_serve(d, decode_pool_mb=1.84, nixl_abort_fix="off"))
    toks = dp.filler_tokens(1, 1799).tolist() + [dp.turn_token(1, 1)]
    try:
        httpx.post(f"http://127.0.0.1:{st.units['decode'].port}/generate", timeout=30, trust_env=False,
                   json={"input_ids": toks, "max_tokens": 2500})
    except httpx.TimeoutException:
        pass
    for _ in range(200):
        if control.status(d).state == "wedged":
            break
        time.sleep(0.05)
    return control.status(d)
