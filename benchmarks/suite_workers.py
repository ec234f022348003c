"""Benchmark: the test suite's wall time with N pytest-xdist workers against a baseline count (four by
default; measured in the same run, one after the other), and why more workers than cores pay here: pdsim's runs wait on
its simulated clock handing over between processes more than they compute, so two `wb hypothesis run
wedge-confound` at once take about as long as one.

    python benchmarks/suite_workers.py [--workers 6] [--baseline 4] [--skip-jobs] [--skip-suite] [PYTEST_ARGS...]

PYTEST_ARGS select the tests (default: the whole suite). Prints each figure and the ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def suite_wall(workers: int, args: list[str]) -> tuple[float, str]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers),
                           *args], cwd=REPO, capture_output=True, text=True)
    lines = proc.stdout.strip().splitlines()
    return time.monotonic() - t0, lines[-1] if lines else f"exit {proc.returncode}"


def main_job(tmp: Path, name: str) -> subprocess.Popen:
    root = tmp / name
    (root / "sim").mkdir(parents=True)
    shutil.copy(REPO / "hypotheses.yaml", root / "hypotheses.yaml")
    shutil.copytree(REPO / "experiments", root / "experiments")
    env = dict(os.environ, WB_ROOT=str(root), WB_SIM_DIR=str(root / "sim"))
    return subprocess.Popen([sys.executable, "-m", "workbench.cli.main", "hypothesis", "run", "wedge-confound",
                             "--db", str(root / "wb.duckdb")], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def jobs_wall(tmp: Path, n: int) -> float:
    t0 = time.monotonic()
    procs = [main_job(tmp, f"job{n}-{i}") for i in range(n)]
    for p in procs:
        if p.wait(timeout=1800) != 0:
            raise SystemExit(f"a main job failed (exit {p.returncode})")
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--baseline", type=int, default=4, help="the worker count measured first, for the ratio")
    ap.add_argument("--skip-jobs", action="store_true", help="skip the one-vs-two main jobs figure")
    ap.add_argument("--skip-suite", action="store_true", help="skip the suite's two timings")
    ns, rest = ap.parse_known_args()
    print(f"cpus: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.2f}")
    if not ns.skip_jobs:
        with tempfile.TemporaryDirectory() as d:
            one, two = jobs_wall(Path(d), 1), jobs_wall(Path(d), 2)
        print(f"main job alone: {one:.1f} s; two at once: {two:.1f} s (ratio {two / one:.2f}; "
              f"2.00 would mean compute-bound)")
    if not ns.skip_suite:
        base, base_res = suite_wall(ns.baseline, rest)
        print(f"suite, -n {ns.baseline} (baseline): {base:.0f} s  [{base_res}]")
        new, new_res = suite_wall(ns.workers, rest)
        print(f"suite, -n {ns.workers}: {new:.0f} s  [{new_res}]  ratio to baseline {new / base:.2f}")


if __name__ == "__main__":
    main()
