"""Benchmark: what opening a store costs a short command, with the head revision read from the migration
files (as wb does) against alembic's script loader (the baseline: what wb did before), in the same run.

    python benchmarks/store_open_bench.py [--repeat 5]

Prints, in CPU milliseconds (the median of --repeat fresh processes, each importing what it needs): the head
revision both ways, and `wb runs list --json` on a store holding the seed's evidence, with the ratio.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

HEAD_FROM_FILES = "from workbench.store import engine; engine.head_revision()"
HEAD_FROM_ALEMBIC = ("from alembic.script import ScriptDirectory; from workbench.store import engine; "
                     "ScriptDirectory.from_config(engine._alembic_config_for_url('duckdb:///:memory:'))"
                     ".get_current_head()")
TIMED = """
import time, sys
t0 = time.process_time()
exec(sys.argv[1])
print(time.process_time() - t0)
"""


def cpu_ms(code: str, setup: str = "from workbench.store import engine") -> float:
    """CPU milliseconds of `code` in a fresh process, after `setup` (imports both ways share)."""
    out = subprocess.run([sys.executable, "-c", setup + "\n" + TIMED, code], capture_output=True, text=True,
                         check=True)
    return 1000 * float(out.stdout.strip().splitlines()[-1])


def command_cpu_ms(args: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return 1000 * ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ns = ap.parse_args()
    print(f"cpus: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.2f}")
    files = statistics.median(cpu_ms(HEAD_FROM_FILES) for _ in range(ns.repeat))
    alembic = statistics.median(cpu_ms(HEAD_FROM_ALEMBIC) for _ in range(ns.repeat))
    print(f"head revision from the migration files: {files:.1f} ms CPU; with alembic (baseline): {alembic:.1f} ms "
          f"CPU; ratio {files / alembic:.4f}")
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "wbroot"
        root.mkdir()
        shutil.copy(REPO / "hypotheses.yaml", root)
        shutil.copytree(REPO / "experiments", root / "experiments")
        env = dict(os.environ, WB_ROOT=str(root), WB_DB=str(Path(d) / "wb.duckdb"))
        wb = [sys.executable, "-m", "workbench.cli.main"]
        subprocess.run(wb + ["import", "evidence", str(REPO / "evidence" / "seed-runs.csv")], env=env,
                       stdout=subprocess.DEVNULL, check=True)
        runs = statistics.median(command_cpu_ms(wb + ["runs", "list", "--json"], env) for _ in range(ns.repeat))
    print(f"`wb runs list --json` on the seed's store: {runs:.0f} ms CPU (median of {ns.repeat}); the alembic "
          f"head would add {alembic - files:.0f} ms ({(alembic - files) / runs:.0%} of it)")


if __name__ == "__main__":
    main()
