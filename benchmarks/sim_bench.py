"""pdsim benchmark and calibration table.

    python benchmarks/sim_bench.py perf                 # start-up time, C=80x4 wall, RSS, tok/s
    python benchmarks/sim_bench.py calibrate --seeds 0 1 2 [--sessions 80 --rounds 4]

`calibrate` runs every config of the calibration table in both worlds (where the issue asks) on
free ports, one restart per run as the runner does, and prints per config and seed: leaks k/n,
the WaitingForInput count in the decode journal since the run started, errors, client timeouts,
and the wall time. The baseline for perf ratios is the seed's own run (346.3 s for C=80 x 4).
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.sim import control, logs, repro  # noqa: E402
from workbench.sim.config import render_serve_file  # noqa: E402

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
    st = control.status(sdir)
    return {"leak": res.counts.get("leak", 0), "n": len(res.sessions),
            "errors": res.counts.get("error", 0), "timeouts": res.timeouts, "wfi": wfi,
            "wall": res.wall_s, "counts": res.counts,
            "aborts_sent": st.units["decode"].debug.get("counters", {}).get("aborts_sent"),
            "state": st.state}


def calibrate(args) -> None:
    base = Path(tempfile.mkdtemp(prefix="pdsim-calib-"))
    print(f"# python benchmarks/sim_bench.py calibrate --seeds {' '.join(map(str, args.seeds))} "
          f"--sessions {args.sessions} --rounds {args.rounds}")
    print("| world | config | seed | leak k/n | WaitingForInput | errors | timeouts | ABORTs sent | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    only = set(args.only or [])
    try:
        for world, name, cfg in CONFIGS:
            if only and not any(o in f"{world} {name}" for o in only):
                continue
            for seed in args.seeds:
                sdir = base / f"{world}-{name.replace(' ', '_').replace('=', '')}-{seed}"
                sdir.mkdir(parents=True)
                values = {**cfg, "causal_model": world, "seed": seed,
                          "prefill_port": free_port(), "decode_port": free_port()}
                if args.time_scale:
                    values["time_scale"] = args.time_scale
                try:
                    r = run_one(sdir, values, sessions=args.sessions, rounds=args.rounds,
                                timeout=args.timeout)
                finally:
                    control.down(sdir)
                print(f"| {world} | {name} | {seed} | {r['leak']}/{r['n']} | {r['wfi']} | "
                      f"{r['errors']} | {r['timeouts']} | {r['aborts_sent']} | {r['wall']:.1f} |",
                      flush=True)
    finally:
        print(f"# state dirs under {base}")


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


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
        res = repro.run_repro(sdir, sessions=80, rounds=4, ctx=300, max_tokens=2500, timeout=200,
                              tag="perf")
        done.set()
        th.join()
        bench = repro.run_bench(sdir, concurrency=(1, 32))
        print(f"up -> both /health 200: {t_up:.2f} s (goal <= 3 s)")
        for line in repro.summary_lines(res):
            print(line)
        print(f"C=80 x 4 rounds: {res.host_s:.2f} s on this host for {res.wall_s:.1f} simulated s "
              f"(goal <= 10 s; the seed's run: {SEED_WALL_S} s, ratio {SEED_WALL_S / res.host_s:.0f}x)")
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
    c.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    c.add_argument("--sessions", type=int, default=80)
    c.add_argument("--rounds", type=int, default=4)
    c.add_argument("--timeout", type=float, default=200.0)
    c.add_argument("--time-scale", type=float, default=None)
    c.add_argument("--only", nargs="*")
    p = sub.add_parser("perf")
    p.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    calibrate(args) if args.cmd == "calibrate" else perf(args)


if __name__ == "__main__":
    main()
