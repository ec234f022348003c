"""Benchmark: `wb hypothesis run wedge-confound` on pdsim with its own design (3 replicates per arm, ABBA, the
seed's repro size), against a baseline measured in the same run: the same six runs, in the same order, done by
a plain bash script the way the seed did them (write the serve file, restart, curl health, repro, journal count).

Prints the command's wall time (goal <= 90 s on 2 cores), the runner's own overhead (wall time not
spent in target commands or waits; goal <= 2%), the ratio to the baseline, and per-arm results.

    python benchmarks/runner_bench.py [--world seed|wedge|both] [--skip-baseline]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WB = [sys.executable, "-m", "workbench.cli.main"]
REPRO = "--sessions 80 --rounds 4 --ctx 300 --max-tokens 2500 --timeout 200"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def workbench_copy(tmp: Path) -> Path:
    root = tmp / "bench"
    (root / "experiments").mkdir(parents=True)
    shutil.copy(REPO / "hypotheses.yaml", root)
    for f in (REPO / "experiments").glob("*.yaml"):
        shutil.copy(f, root / "experiments")
    shutil.copytree(REPO / "experiments" / "templates", root / "experiments" / "templates")
    return root


def baseline(tmp: Path, world: str, order: list[str]) -> float:
    """The seed's way, scripted: one bash script, no recording, no restore."""
    sim = tmp / "sim-baseline"
    pp, dp = free_port(), free_port()
    wb = shlex.join(WB)
    fix = {"control": "off", "treatment": "on"}
    lines = ["set -e", f"{wb} sim up --dir {sim} --set prefill_port={pp} --set decode_port={dp} >/dev/null"]
    for i, arm in enumerate(order):
        serve = "\\n".join([
            "index_k_dtype=bf16", "hicache=on", f"nixl_abort_fix={fix[arm]}", "geometry_fix=off",
            "indexer_host_pool_fix=off", f"causal_model={world}", "seed=0", f"prefill_port={pp}",
            f"decode_port={dp}"])
        lines += [
            f"printf '{serve}\\n' > {sim}/serve.sh", f"bash -n {sim}/serve.sh",
            f"{wb} sim restart --dir {sim} >/dev/null",
            f'for j in $(seq 1 60); do h0=$(curl -s -m3 -o /dev/null -w "%{{http_code}}" http://127.0.0.1:{pp}/health); '
            f'h2=$(curl -s -m3 -o /dev/null -w "%{{http_code}}" http://127.0.0.1:{dp}/health); '
            f'[ "$h0" = 200 ] && [ "$h2" = 200 ] && break; sleep 0.25; done',
            "T=$(date -u +%Y-%m-%dT%H:%M:%S.%6N+00:00)",
            f"{wb} sim repro --dir {sim} {REPRO} --tag {arm}-{i} --jsonl {tmp}/b{i}.jsonl | grep -E 'CORRUPTION|wall='",
            f'echo "aborts: $({wb} sim journal --dir {sim} --unit decode --since "$T" | grep -ic WaitingForInput || true)"',
        ]
    lines.append(f"{wb} sim down --dir {sim} >/dev/null")
    script = tmp / "baseline.sh"
    script.write_text("\n".join(lines) + "\n")
    t0 = time.monotonic()
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - t0
    if out.returncode != 0:
        print(out.stdout[-2000:], out.stderr[-2000:])
        raise SystemExit("baseline script failed")
    return wall


def runner(tmp: Path, root: Path, world: str) -> tuple[float, dict]:
    env = dict(os.environ, WB_ROOT=str(root), WB_SIM_DIR=str(tmp / f"sim-{world}"))
    cmd = WB + ["hypothesis", "run", "wedge-confound", "--json", "--report", "--db", str(tmp / "wb.duckdb")]
    if world != "seed":
        cmd += ["--set", f"causal_model={world}"]
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    wall = time.monotonic() - t0
    if out.returncode not in (0, 1):
        print(out.stderr[-3000:])
        raise SystemExit(f"wb hypothesis run failed with exit {out.returncode}")
    return wall, json.loads(out.stdout)


def report(world: str, wall: float, s: dict, base: float | None) -> None:
    t = s["timing"]  # the command's, as its `time:` line: wall_s = target_s + runner_s + analysis_s + report_s
    pct = 100.0 * t["runner_s"] / t["wall_s"] if t["wall_s"] else 0.0
    print(f"\n== {world} world: wb hypothesis run wedge-confound{'' if world == 'seed' else ' --set causal_model=' + world}")
    print(f"command wall            {wall:7.1f} s   (goal <= 90 s on 2 cores: {'ok' if wall <= 90 else 'OVER'})")
    print(f"wall wb measured        {t['wall_s']:7.1f} s")
    print(f"  target commands+waits {t['target_s']:7.1f} s")
    print(f"  runner overhead       {t['runner_s']:7.2f} s = {pct:.2f}% (goal <= 2%: {'ok' if pct <= 2 else 'OVER'})")
    print(f"  analysis + report     {t['analysis_s'] + t['report_s']:7.2f} s")
    print(f"outside wb's measure    {wall - t['wall_s']:7.1f} s   (interpreter start, imports)")
    stages: dict[str, float] = {}
    for r in s["runs"]:
        for k, v in (r.get("stage_s") or {}).items():
            stages[k] = stages.get(k, 0.0) + v
    print("  per stage (sum over runs): " + ", ".join(f"{k} {v:.1f} s" for k, v in stages.items()))
    if base is not None:
        print(f"baseline bash script    {base:7.1f} s   -> wb / baseline = {wall / base:.2f}x "
              "(wb also records, fingerprints, restores, analyses and reports)")
    print(f"order {' '.join(s['order'])}  seed {s['seed']}")
    for arm, a in s["arms"].items():
        tt = a["totals"]
        print(f"  {arm:<10} runs ok {a['runs_ok']}/{a['runs']}  corruption {int(tt.get('leak') or 0)}/"
              f"{int(tt.get('sessions') or 0)} = {100 * (tt.get('corruption_rate') or 0):.1f}%  "
              f"aborts (WaitingForInput) {int(tt.get('aborts') or 0)}  timeouts {int(tt.get('timeouts') or 0)}  "
              f"errors {int(tt.get('error') or 0)}")
    print(f"verdict: {s['verdict']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world", choices=["seed", "wedge", "both"], default="both")
    ap.add_argument("--skip-baseline", action="store_true")
    args = ap.parse_args()
    print(f"cores: {os.cpu_count()}  python: {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="wb-runner-bench-") as d:
        tmp = Path(d)
        root = workbench_copy(tmp)
        worlds = ["seed", "wedge"] if args.world == "both" else [args.world]
        for world in worlds:
            wall, s = runner(tmp, root, world)
            order = [o.split("@")[0] for o in s["order"]]
            base = None if args.skip_baseline else baseline(tmp, world, order)
            report(world, wall, s, base)


if __name__ == "__main__":
    main()
