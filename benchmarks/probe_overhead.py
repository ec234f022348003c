"""Probe overhead on the pdsim repro: the same repro with the probe off and on, interleaved in one run.

Starts a private pdsim deployment (free ports, its own folder), then for each replicate restarts it
without and with the probe environment (ABBA order) and times the repro. Prints both median walls
and their ratio (the probe's overhead), plus the calls the probe counted so the "on" runs are shown
to be probing. Usage:

    python benchmarks/probe_overhead.py [--reps 3] [--sessions 80] [--rounds 4] [--target T ...]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_TARGETS = ["workbench.sim.hicache:DSAIndexerPoolHost", "workbench.sim.hicache:DeepSeekV4PagedHostPool",
                   "workbench.sim.hicache:HiCache.match", "workbench.sim.hicache:HiCache.load"]


def wb() -> list[str]:
    exe = shutil.which("wb") or str(Path(sys.executable).with_name("wb"))
    return [exe] if os.access(exe, os.X_OK) else [sys.executable, "-m", "workbench.cli.main"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` exited {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r


PER_CALL = """
import time
import wb_bench_target as m
f = m.work
n = 200_000
best = float("inf")
for _ in range(5):
    t0 = time.perf_counter()
    for _ in range(n):
        f(1)
    best = min(best, time.perf_counter() - t0)
print(best / n)
"""


def per_call_cost(work: Path, base_env: dict[str, str]) -> tuple[float, float, str]:
    """Seconds per call of a tiny function without and with the probe counting it (best of 5 x 200k calls)."""
    from workbench.probes import probe_environment

    src = work / "percall"
    src.mkdir()
    (src / "wb_bench_target.py").write_text("def work(x):\n    return x + 1\n")
    plain = dict(base_env, PYTHONPATH=str(src))
    probed = dict(base_env)
    probed.update(probe_environment(["wb_bench_target:work"], str(work / "percall-out"), base_pythonpath=str(src)))
    off = float(run([sys.executable, "-c", PER_CALL], env=plain).stdout)
    on = float(run([sys.executable, "-c", PER_CALL], env=probed).stdout)
    mech = "sys.monitoring" if sys.version_info >= (3, 12) else "wrapper"
    return off, on, mech


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3, help="replicates per arm (ABBA order)")
    ap.add_argument("--sessions", type=int, default=80)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--set", dest="sets", action="append", default=[],
                    help="var=value in the serve file (default: the dead-code hypothesis's config, abort fix on "
                         "so the wedge's timeouts do not swamp the comparison)")
    ap.add_argument("--target", action="append", help="probe target (repeatable); default: the hicache classes "
                                                       "and two per-request HiCache methods")
    args = ap.parse_args()

    from workbench.probes import probe_environment, read_counts
    from workbench.sim.config import DEFAULTS, render_serve_file

    targets = args.target or DEFAULT_TARGETS
    work = Path(tempfile.mkdtemp(prefix="wb-probe-bench-"))
    sim_dir = work / "sim"
    sim_dir.mkdir()
    config = sim_dir / "serve.sh"
    values = dict(DEFAULTS, index_k_dtype="bf16", hicache="on", indexer_host_pool_fix="on", nixl_abort_fix="on",
                  prefill_port=str(free_port()), decode_port=str(free_port()))
    for item in args.sets:
        name, _, value = item.partition("=")
        values[name.strip()] = value.strip()
    config.write_text(render_serve_file(values))
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("WB_PROBE")}
    cli = wb()
    walls: dict[str, list[float]] = {"off": [], "on": []}
    reported: dict[str, list[float]] = {"off": [], "on": []}
    calls: dict[str, int] = {}
    order = [("off", "on", "on", "off")[i % 4] for i in range(2 * args.reps)]
    try:
        run(cli + ["sim", "up", "--dir", str(sim_dir), "--config", str(config)], env=base_env)
        for i, arm in enumerate(order):
            env = dict(base_env)
            out_dir = work / f"probe-{i}"
            if arm == "on":
                env.update(probe_environment(targets, str(out_dir)))
            run(cli + ["sim", "restart", "--dir", str(sim_dir)], env=env)
            t0 = time.perf_counter()
            r = run(cli + ["sim", "repro", "--dir", str(sim_dir), "--sessions", str(args.sessions), "--rounds",
                           str(args.rounds), "--ctx", "300", "--max-tokens", "2500", "--timeout", "200",
                           "--tag", f"{arm}{i}"], env=base_env)
            wall = time.perf_counter() - t0
            walls[arm].append(wall)
            m = re.search(r"wall=([0-9.]+)s", r.stdout)
            if m:
                reported[arm].append(float(m.group(1)))
            if arm == "on":
                # restart without the probe so the probed servers exit and write their final counts
                run(cli + ["sim", "restart", "--dir", str(sim_dir)], env=base_env)
                for row in read_counts(out_dir):
                    calls[row["target"]] = calls.get(row["target"], 0) + row["calls"]
            print(f"  run {i + 1}/{len(order)} probe {arm:3s} wall {wall:7.3f}s"
                  + (f" (repro reports {reported[arm][-1]:.3f}s)" if m else ""), flush=True)
    finally:
        subprocess.run(cli + ["sim", "down", "--dir", str(sim_dir)], env=base_env, capture_output=True, timeout=60)
        shutil.rmtree(work, ignore_errors=True)

    call_off, call_on, mech = per_call_cost(Path(tempfile.mkdtemp(prefix="wb-probe-percall-")), base_env)
    off, on = statistics.median(walls["off"]), statistics.median(walls["on"])
    shown = {k: values[k] for k in ("index_k_dtype", "hicache", "nixl_abort_fix", "geometry_fix", "time_scale")}
    print(f"pdsim repro C={args.sessions} x {args.rounds} rounds, {args.reps} replicate(s) per arm, ABBA order; {shown}")
    print(f"probe targets: {', '.join(targets)}")
    print(f"probe off: median wall {off:.3f}s  ({', '.join(f'{w:.3f}' for w in walls['off'])})")
    print(f"probe on:  median wall {on:.3f}s  ({', '.join(f'{w:.3f}' for w in walls['on'])})")
    print(f"ratio on/off: {on / off:.4f}  (overhead {100 * (on / off - 1):+.2f}%; budget +3%)")
    if reported["off"] and reported["on"]:
        r_off, r_on = statistics.median(reported["off"]), statistics.median(reported["on"])
        print(f"repro-reported wall: off {r_off:.3f}s, on {r_on:.3f}s, ratio {r_on / r_off:.4f}")
    print("calls counted with the probe on (all on runs): "
          + ", ".join(f"{t.partition(':')[2]}={n}" for t, n in sorted(calls.items())))
    extra = call_on - call_off
    per_run_calls = sum(calls.values()) / max(1, len(walls["on"]))
    print(f"per counted call ({mech}): {call_off * 1e9:.0f} ns -> {call_on * 1e9:.0f} ns (+{extra * 1e9:.0f} ns); "
          f"{per_run_calls:.0f} counted calls per run -> {per_run_calls * extra * 1e3:.3f} ms, "
          f"{100 * per_run_calls * extra / off:.4f}% of the off wall")


if __name__ == "__main__":
    main()
