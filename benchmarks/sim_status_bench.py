"""Benchmark: the CPU one `wb sim` status check costs, with one HTTP client per process (as wb does) against
a client built per request (the baseline: `httpx.get`, what wb did before), in the same run.

    python benchmarks/sim_status_bench.py [--checks 200]

Starts pdsim on free loopback ports, times --checks calls of `control.status(debug=False)` (what `sim up` and
`sim restart` poll every 50 ms while the servers start) both ways, prints CPU milliseconds per check and the
ratio, and stops pdsim.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def per_check_ms(status, sdir: Path, checks: int) -> float:
    t0 = time.process_time()
    for _ in range(checks):
        st = status(sdir, debug=False)
        assert all(u.health == 200 for u in st.units.values()), st
    return 1000 * (time.process_time() - t0) / checks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checks", type=int, default=200)
    args = ap.parse_args()
    import httpx

    from workbench.sim import control
    from workbench.sim.config import render_serve_file

    with tempfile.TemporaryDirectory() as tmp:
        sdir = Path(tmp)
        pp = control.free_port()
        cfg = sdir / "serve.sh"
        cfg.write_text(render_serve_file({"prefill_port": pp, "decode_port": control.free_port(avoid=(pp,))}))
        control.up(sdir, config=cfg)
        try:
            shared = per_check_ms(control.status, sdir, args.checks)
            one_client = control._http
            control._http = lambda: httpx  # the baseline: httpx.get, a client per request
            try:
                per_call = per_check_ms(control.status, sdir, args.checks)
            finally:
                control._http = one_client
        finally:
            control.down(sdir)
    print(f"status check, CPU ms each ({args.checks} checks, 2 requests each):")
    print(f"  one client per process   {shared:8.2f}")
    print(f"  a client per request     {per_call:8.2f}   (baseline)")
    print(f"  ratio                    {shared / per_call:8.3f}")


if __name__ == "__main__":
    main()
