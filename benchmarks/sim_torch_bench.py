"""Benchmark: what torch costs pdsim's servers, and which of them import it, in the same run.

    python benchmarks/sim_torch_bench.py [--sessions 80] [--rounds 4] [--repeat 3]

For bf16 with HiCache on (the prefill's transfers run on torch's CPU reference of the index-K kernel) and off
(no transfer: the baseline), prints each server's CPU seconds after its start and after one repro workload, read
from /proc, and whether it has mapped libtorch; then the CPU of `import torch` in a fresh process that has
imported what a server imports before it (the median of --repeat). torch is imported at a prefill's first
transfer: a server that serves no request, and every server without HiCache, never imports it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.sim import control, repro  # noqa: E402
from workbench.sim.config import render_serve_file  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
UNITS = ("prefill", "decode")
IMPORT_TORCH = """
import time, numpy, aiohttp
t0 = time.process_time()
import torch
torch.set_num_threads(1)
print(time.process_time() - t0)
"""


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def has_torch(pid: int) -> bool:
    return "libtorch" in Path(f"/proc/{pid}/maps").read_text()


def loaded(torch: bool) -> str:
    return "torch loaded" if torch else "torch not loaded"


def deployment(values: dict, *, sessions: int, rounds: int) -> dict:
    """{unit: (CPU after start, CPU after the workload, libtorch mapped after start, after the workload)}."""
    with tempfile.TemporaryDirectory() as d:
        sdir = Path(d)
        values = {**values, "prefill_port": control.free_port()}
        values["decode_port"] = control.free_port(avoid=(values["prefill_port"],))
        cfg = sdir / "serve.sh"
        cfg.write_text(render_serve_file(values))
        control.up(sdir, config=cfg)
        try:
            pids = {u: json.loads((sdir / "run" / f"{u}.json").read_text())["pid"] for u in UNITS}
            started = {u: (cpu_s(p), has_torch(p)) for u, p in pids.items()}
            repro.run_repro(sdir, sessions=sessions, rounds=rounds, ctx=300, max_tokens=2500, timeout=200,
                            tag="torch-bench")
            return {u: (started[u][0], cpu_s(p), started[u][1], has_torch(p)) for u, p in pids.items()}
        finally:
            control.down(sdir)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=80)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ns = ap.parse_args()
    print(f"cpus: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.2f}")
    figures = {}
    for hicache in ("on", "off"):
        got = deployment({"index_k_dtype": "bf16", "hicache": hicache}, sessions=ns.sessions, rounds=ns.rounds)
        figures[hicache] = got
        for unit, (start, end, torch_start, torch_end) in got.items():
            print(f"hicache={hicache:3} {unit:7}: {start:.2f} s CPU after start ({loaded(torch_start)}), {end:.2f} s "
                  f"after {ns.sessions}x{ns.rounds} ({loaded(torch_end)})")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    imports = [float(subprocess.run([sys.executable, "-c", IMPORT_TORCH], capture_output=True, text=True, check=True,
                                    env=env).stdout.split()[-1]) for _ in range(ns.repeat)]
    torch_s = statistics.median(imports)
    on, off = figures["on"]["prefill"][1], figures["off"]["prefill"][1]
    print(f"import torch in a fresh process: {torch_s:.2f} s CPU (median of {ns.repeat}); the prefill with "
          f"HiCache {on:.2f} s, without {off:.2f} s (ratio {on / off:.2f}); torch's import is {torch_s / on:.0%} of "
          "the prefill's CPU with HiCache")


if __name__ == "__main__":
    main()
