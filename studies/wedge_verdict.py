"""The wedge world's verdict at the seed's full repro size (C=80 x 4 rounds), through the CLI, per execution seed.

tests/runner/test_sim.py runs the same command on a smaller repro that still wedges; this study is the
full-size check: `wb hypothesis run wedge-confound --set causal_model=wedge --sequential` on a pdsim the
runner starts and stops itself, one fresh workbench copy and store per seed. It prints per seed the verdict,
the replicates the sequential test used, each arm's leaks, aborts and completed sessions, and the host
seconds; it exits 1 unless every seed comes out supported with the aborts and leaks only without the fix.

    python studies/wedge_verdict.py [--seeds 1 2 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from workbench.sim import control  # noqa: E402
from workbench.sim.config import render_serve_file  # noqa: E402


def _bench(base: Path) -> dict[str, str]:
    """A workbench copy and a serve file that is not running (the runner starts pdsim on its ports)."""
    root = base / "wb"
    shutil.copytree(REPO / "experiments", root / "experiments")
    shutil.copy(REPO / "hypotheses.yaml", root / "hypotheses.yaml")
    sim = base / "sim"
    sim.mkdir()
    (sim / "serve.sh").write_text(render_serve_file(control.free_ports()))
    return {**os.environ, "WB_ROOT": str(root), "WB_SIM_DIR": str(sim), "WB_DB": str(base / "wb.duckdb")}


def run_seed(seed: int, base: Path) -> tuple[bool, str]:
    env = _bench(base)
    t0 = time.monotonic()
    try:
        out = subprocess.run([sys.executable, "-m", "workbench.cli.main", "hypothesis", "run", "wedge-confound",
                              "--set", "causal_model=wedge", "--sequential", "--seed", str(seed), "--json"],
                             capture_output=True, text=True, env=env, timeout=3600)
    finally:
        control.down(Path(env["WB_SIM_DIR"]))
    host_s = time.monotonic() - t0
    if out.returncode != 0:
        return False, f"seed {seed}: exit {out.returncode}: {out.stderr[-500:]}"
    s = json.loads(out.stdout)
    t = {arm: s["arms"][arm]["totals"] for arm in ("control", "treatment")}
    reps = len({r["replicate"] for r in s["runs"]})
    ok = (s["verdict"] == "supported" and t["control"]["aborts"] > 0 and t["control"]["leak"] > 0
          and t["treatment"]["aborts"] == 0 and t["treatment"]["leak"] == 0)
    arms = "  ".join(f"{arm}: leak {v['leak']:g} aborts {v['aborts']:g} sessions {v['sessions']:g}"
                     for arm, v in t.items())
    return ok, f"seed {seed}: {s['verdict']} after {reps} replicate(s)  {arms}  ({host_s:.0f} s)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="wedge-verdict-") as tmp:
        for seed in args.seeds:
            base = Path(tmp) / f"seed-{seed}"
            base.mkdir()
            ok, line = run_seed(seed, base)
            failed += not ok
            print(("" if ok else "FAIL ") + line, flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
