"""`wb sim status` exits by the deployment's state, so a script can tell healthy from wedged from down."""

from __future__ import annotations

import time

import httpx

from pdsim_kit import write_serve
from workbench.sim import control
from workbench.sim import datapath as dp


def test_status_exit_code_tells_healthy_wedged_and_down(sim_dir, cli):
    """It printed `pdsim: wedged ... (bootstrap thread is dead; /health still 200)` and exited 0, as for a
    healthy deployment and a stopped one: now 0 healthy, 1 wedged (or unhealthy, degraded), 3 down; --json too."""
    code, out, err = cli("sim", "status", "--dir", str(sim_dir))
    assert (code, out.split()[:2]) == (3, ["pdsim:", "down"]), out + err
    # The wedge as tests/sim/test_wedge.py makes it: a transfer into a page without memory aborts its room,
    # and without the fix the ABORT kills prefill's bootstrap thread.
    st = control.up(sim_dir, config=write_serve(sim_dir, decode_pool_mb=1.84, nixl_abort_fix="off"))
    code, out, err = cli("sim", "status", "--dir", str(sim_dir))
    assert code == 0 and out.startswith("pdsim: healthy"), out + err
    toks = dp.filler_tokens(1, 1799).tolist() + [dp.turn_token(1, 1)]
    try:
        httpx.post(f"http://127.0.0.1:{st.units['decode'].port}/generate", timeout=30, trust_env=False,
                   json={"input_ids": toks, "max_tokens": 2500})
    except httpx.TimeoutException:
        pass
    for _ in range(200):
        if control.status(sim_dir).state == "wedged":
            break
        time.sleep(0.05)
    for args in ((), ("--json",)):
        code, out, err = cli("sim", "status", "--dir", str(sim_dir), *args)
        assert code == 1 and "wedged" in out and "Traceback" not in err, out + err
    control.down(sim_dir)
    code, out, err = cli("sim", "status", "--dir", str(sim_dir), "--json")
    assert code == 3 and '"down"' in out, out + err
