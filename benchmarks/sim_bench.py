"""pdsim benchmark and calibration table.

    python benchmarks/sim_bench.py perf                 # start-up time, C=80x4 wall, RSS, tok/s
    python benchmarks/sim_bench.py calibrate [--seeds 0 1 ... 9] [--stress N]

`calibrate` runs every config of the calibration table in both worlds on free ports, one restart
per run as the runner does, and prints per config and seed: leaks k/n, the WaitingForInput count
in the decode journal since the run started, errors, client timeouts, simulated and host seconds.
With `--stress N` it runs the whole table a second time beside N CPU-bound processes and 2 writers
of 2 GB that fsync in a loop (started before, always stopped by pid after) and prints both side by
side, with `same` when every number of the row is unchanged by the load. The baseline for perf
ratios is the seed's own run (346.3 s for C=80 x 4).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.sim import control, logs, repro  # noqa: E402
from workbench.sim.config import render_serve_file  # noqa: E402
from workbench.sim.stress import Stress  # noqa: E402

SEED_WALL_S = 346.3

CONFIGS = [
    ("seed", "bf16 hicache=on fix=off", {"index_k_dtype": "bf16", "hicache": "on", "nixl_abort_fix": "off"}),
    ("seed", "bf16 hicache=on fix=on", {"index_k_dtype": "bf16", "hicache": "on", "nixl_abort_fix": "on"}),
    ("seed", "fp8 hicache=on fix=off", {"index_k_dtype": "fp8", "hicache": "on", "nixl_abort_fix": "off"}),
    ("seed", "fp8 hicache=on fix=on", {"index_k_dtype": "fp8", "hicache": "on", "nixl_abort_fix": "on"}),
    ("seed", "bf16 hicache=off fix=off", {"index_k_dtype": "bf16", "hicache": "off", "nixl_abort_fix": "off"}),
    ("seed", "bf16 hicache=on geometry_fix=on", {"index_k_dtype": "bf16", "hicache": "on", "nixl_abort_fix": "off", "geometry_fix": "on"}),
    ("wedge", "bf16 hicache=on fix=off", {"index_k_dtype": "bf16", "hicache": "on", "nixl_abort_fix": "off"}),
    ("wedge", "bf16 hicache=on fix=on", {"index_k_dtype": "bf16", "hicache": "on", "nixl_abort_fix": "on"}),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_one(sdir: Path, values: dict, *, sessions: int, rounds: int, timeout: float) -> dict:
    cfg_file = sdir / "serve.sh"
    cfg_file.write_text(render_serve_file(values))
    control.up(sdir, config=cfg_file)
    control.restart(sdir)                      # the runner's per-arm step
    t0 = datetime.now(timezone.utc)
    res = repro.run_repro(sdir, sessions=sessions, rounds=rounds, ctx=300, max_tokens=2500,
                          timeout=timeout, tag="calib", jsonl=sdir / "sessions.jsonl")
    wfi = sum(1 for line in logs.read_journal(sdir, "decode", t0) if "waitingforinput" in line.lower())
    return {"leak": res.counts.get("leak", 0), "n": len(res.sessions),
            "errors": res.counts.get("error", 0), "timeouts": res.timeouts, "wfi": wfi,
            "sim": res.wall_s, "host": res.host_s,
            "outcomes": sorted((x.session, x.outcome) for x in res.sessions)}


def _table(args, base: Path, phase: str) -> dict:
    rows = {}
    only = set(args.only or [])
    for world, name, cfg in CONFIGS:
        if only and not any(o in f"{world} {name}" for o in only):
            continue
        for seed in args.seeds:
            sdir = base / phase / f"{world}-{name.replace(' ', '_').replace('=', '')}-{seed}"
            sdir.mkdir(parents=True)
            values = {**cfg, "causal_model": world, "seed": seed,
                      "prefill_port": control.free_port()}
            values["decode_port"] = control.free_port(avoid=(values["prefill_port"],))
            try:
                r = run_one(sdir, values, sessions=args.sessions, rounds=args.rounds,
                            timeout=args.timeout)
            finally:
                control.down(sdir)
            rows[(world, name, seed)] = r
            print(f"# {phase}: {world} | {name} | seed {seed}: {_cells(r)} | host {r['host']:.1f} s",
                  file=sys.stderr, flush=True)
    return rows


def _cells(r: dict) -> str:
    return f"{r['leak']}/{r['n']} | {r['wfi']} | {r['errors']} | {r['timeouts']} | {r['sim']:.1f}"


def calibrate(args) -> None:
    base = Path(tempfile.mkdtemp(prefix="pdsim-calib-"))
    idle = _table(args, base, "idle")
    loaded = {}
    if args.stress:
        with Stress(cpu=args.stress, writers=2, mb=2048, dir=base) as st:
            print(f"# stressors: {args.stress} CPU loops + 2 writers of 2 GB with fsync, pids "
                  f"{' '.join(map(str, st.pids))}", file=sys.stderr, flush=True)
            loaded = _table(args, base, "stress")
    stress = f" --stress {args.stress}" if args.stress else ""
    print(f"# python benchmarks/sim_bench.py calibrate --seeds {' '.join(map(str, args.seeds))} "
          f"--sessions {args.sessions} --rounds {args.rounds}{stress}")
    cols = "leak k/n | WaitingForInput | errors | timeouts | simulated s"
    if args.stress:
        print(f"| world | config | seed | idle: {cols} | stress {args.stress}: {cols} | host s idle / stress | unchanged |")
        print("|---" * 17 + "|")
    else:
        print(f"| world | config | seed | {cols} | host s |")
        print("|---" * 9 + "|")
    for key, r in idle.items():
        world, name, seed = key
        if args.stress:
            q = loaded[key]
            same = all(r[k] == q[k] for k in ("leak", "wfi", "errors", "timeouts", "sim", "outcomes"))
            print(f"| {world} | {name} | {seed} | {_cells(r)} | {_cells(q)} | "
                  f"{r['host']:.1f} / {q['host']:.1f} | {'same' if same else 'DIFFERENT'} |")
        else:
            print(f"| {world} | {name} | {seed} | {_cells(r)} | {r['host']:.1f} |")
    _summary(idle)
    shutil.rmtree(base, ignore_errors=True)


def _summary(rows: dict) -> None:
    """Per config over the seeds: leak rate mean and range, how many runs wedged (WaitingForInput)."""
    print("\n| world | config | leak % mean (min-max) over seeds | runs with WaitingForInput | errors mean |")
    print("|---|---|---|---|---|")
    for world, name, _ in CONFIGS:
        rs = [r for (w, n, _s), r in rows.items() if (w, n) == (world, name)]
        if not rs:
            continue
        pct = [100.0 * r["leak"] / r["n"] for r in rs]
        print(f"| {world} | {name} | {sum(pct) / len(pct):.1f} ({min(pct):.0f}-{max(pct):.0f}) | "
              f"{sum(1 for r in rs if r['wfi'] > 0)}/{len(rs)} | "
              f"{sum(r['errors'] for r in rs) / len(rs):.1f} |")


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a live process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def perf(args) -> None:
    sdir = Path(tempfile.mkdtemp(prefix="pdsim-perf-"))
    values = {"prefill_port": free_port(), "decode_port": free_port(), "seed": args.seed,
              "nixl_abort_fix": "on"}
    (sdir / "serve.sh").write_text(render_serve_file(values))
    try:
        t0 = time.monotonic()
        st = control.up(sdir, config=sdir / "serve.sh")
        t_up = time.monotonic() - t0
        pids = [u.pid for u in st.units.values()]
        units = {name: u.pid for name, u in st.units.items()}
        peak = 0
        res = None
        import threading

        done = threading.Event()

        def sample():
            nonlocal peak
            while not done.is_set():
                peak = max(peak, sum(_rss_kb(p) for p in pids))
                time.sleep(0.1)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        c0 = time.process_time()
        res = repro.run_repro(sdir, sessions=80, rounds=4, ctx=300, max_tokens=2500, timeout=200,
                              tag="perf")
        client_s = time.process_time() - c0
        cpu = {name: _cpu_s(pid) for name, pid in units.items()}   # start-up included
        done.set()
        th.join()
        bench = repro.run_bench(sdir, concurrency=(1, 32))
        print(f"up -> both /health 200: {t_up:.2f} s (goal <= 3 s)")
        for line in repro.summary_lines(res):
            print(line)
        print(f"C=80 x 4 rounds: {res.host_s:.2f} s on this host for {res.wall_s:.1f} simulated s "
              f"(goal <= 10 s; the seed's run: {SEED_WALL_S} s, ratio {SEED_WALL_S / res.host_s:.0f}x)")
        print("CPU of that run: " + ", ".join(f"{name} {s:.2f} s" for name, s in cpu.items())
              + f", the client {client_s:.2f} s (in all {sum(cpu.values()) + client_s:.2f} s)")
        print(f"peak RSS of the deployment: {peak / 1024:.0f} MB (goal < 1024 MB)")
        for b in bench:
            print(b.line())
        print("seed's no-regression line: 52.5 tok/s at C=1, 448 tok/s at C=32")
    finally:
        control.down(sdir)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("calibrate")
    c.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    c.add_argument("--stress", type=int, default=0, metavar="N",
                   help="also run beside N CPU loops + 2 writers of 2 GB with fsync")
    c.add_argument("--sessions", type=int, default=80)
    c.add_argument("--rounds", type=int, default=4)
    c.add_argument("--timeout", type=float, default=200.0)
    c.add_argument("--only", nargs="*")
    p = sub.add_parser("perf")
    p.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    calibrate(args) if args.cmd == "calibrate" else perf(args)


if __name__ == "__main__":
    main()
