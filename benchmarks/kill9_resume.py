"""kill -9 at N moments of `wb hypothesis run` on pdsim, then `--resume`: count the points that lose a completed
run or leave the target different from its state before the run (serve.sh bytes, pdsim up or down, a lock).

    python benchmarks/kill9_resume.py [--points 20] [--hypothesis wedge-confound] [--replicates 1] [--jobs 1]

The kill moments are spread evenly over the length of one uninterrupted run (measured first, in the same
invocation). Prints one line per point and the tally.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WB = [sys.executable, "-m", "workbench.cli.main"]
SESSIONS = int(os.environ.get("WB_KILL9_SESSIONS", "16"))


def make_bench(base: Path) -> tuple[Path, Path, bytes]:
    from workbench.sim import control
    from workbench.sim.config import render_serve_file

    root = base / "bench"
    (root / "experiments").mkdir(parents=True)
    shutil.copy(REPO / "hypotheses.yaml", root / "hypotheses.yaml")
    for f in (REPO / "experiments").glob("*.yaml"):
        # A smaller repro than the seed's (same stages, same kill moments relative to the run), so 20 points fit.
        (root / "experiments" / f.name).write_text(f.read_text().replace("--sessions 80 --rounds 4",
                                                                         f"--sessions {SESSIONS} --rounds 2"))
    shutil.copytree(REPO / "experiments" / "templates", root / "experiments" / "templates")
    sim_dir = base / "sim"
    sim_dir.mkdir()
    original = render_serve_file(control.free_ports()).encode()
    (sim_dir / "serve.sh").write_bytes(original)
    return root, sim_dir, original


def ok_runs(db: Path) -> dict[int, int]:
    """{run id: units} of the runs stored ok."""
    from sqlalchemy import text

    from workbench.store import open_store

    from workbench.errors import WbError

    if not db.exists():
        return {}
    try:
        store = open_store(str(db), read_only=True)
    except WbError:  # killed while the store was being created: it holds no run yet
        return {}
    try:
        with store.connect() as conn:
            rows = conn.execute(text("SELECT r.id, (SELECT count(*) FROM units u WHERE u.run_id = r.id) "
                                     "FROM runs r WHERE r.status = 'ok'")).all()
        return {int(a): int(b) for a, b in rows}
    finally:
        store.dispose()


def one_point(args: argparse.Namespace, delay: float, env: dict[str, str]) -> tuple[bool, str]:
    from workbench.sim import control

    with tempfile.TemporaryDirectory(prefix="wb-kill9-") as d:
        root, sim_dir, original = make_bench(Path(d))
        db = root / "wb.duckdb"
        e = {**env, "WB_ROOT": str(root), "WB_SIM_DIR": str(sim_dir)}
        cmd = WB + ["hypothesis", "run", args.hypothesis, "--replicates", str(args.replicates), "--db", str(db)]
        try:
            proc = subprocess.Popen(cmd, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(delay)
            finished_first = proc.poll() is not None
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            before = ok_runs(db)
            res = subprocess.run(cmd[:6] + ["--resume", "--db", str(db)], env=e, capture_output=True, text=True,
                                 timeout=900)
            after = ok_runs(db)
            problems = []
            nothing_to_resume = res.returncode == 2 and "no interrupted" in res.stderr
            if finished_first and not nothing_to_resume:
                problems.append(f"resume of a finished run exited {res.returncode}")
            elif not finished_first and res.returncode != 0 and not nothing_to_resume:
                problems.append(f"resume exited {res.returncode}: {res.stderr.strip().splitlines()[-1:]}")
            lost = {r for r, n in before.items() if after.get(r) != n}
            if lost:
                problems.append(f"lost completed runs {sorted(lost)}")
            if (sim_dir / "serve.sh").read_bytes() != original:
                problems.append("serve.sh differs from the original")
            state = control.status(sim_dir).state
            if state != "down":
                problems.append(f"pdsim left {state}")
            if (sim_dir / "wb-target.lock").exists():
                problems.append("lock left behind")
            return not problems, "; ".join(problems) or f"ok ({len(before)} run(s) stored before the kill)"
        finally:
            control.down(sim_dir)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=20)
    ap.add_argument("--hypothesis", default="wedge-confound")
    ap.add_argument("--replicates", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1, help="points run at once (each in its own folder and ports)")
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("WB_FAULT", "WB_DB", "WB_ARTIFACTS")}
    from workbench.sim import control

    with tempfile.TemporaryDirectory(prefix="wb-kill9-") as d:
        root, sim_dir, _ = make_bench(Path(d))
        t0 = time.monotonic()
        subprocess.run(WB + ["hypothesis", "run", args.hypothesis, "--replicates", str(args.replicates),
                             "--db", str(root / "wb.duckdb")], env={**env, "WB_ROOT": str(root),
                                                                   "WB_SIM_DIR": str(sim_dir)},
                       capture_output=True, check=True, timeout=900)
        length = time.monotonic() - t0
        control.down(sim_dir)
    print(f"one uninterrupted run: {length:.1f} s; killing at {args.points} moments across it")
    from concurrent.futures import ThreadPoolExecutor

    delays = [length * (i + 0.5) / args.points for i in range(args.points)]
    bad = 0
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for delay, (good, note) in zip(delays, pool.map(lambda d: one_point(args, d, env), delays)):
            bad += not good
            print(f"kill at {delay:6.1f} s: {'OK ' if good else 'BAD'} {note}", flush=True)
    print(json.dumps({"points": args.points, "bad": bad, "run_length_s": round(length, 1)}))
    print(f"{bad} of {args.points} kill -9 points lost a completed run or left the target changed")


if __name__ == "__main__":
    main()
