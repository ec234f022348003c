"""End to end: `wb hypothesis run dead-code-dsaindexerpoolhost` on pdsim, with the shipped registry, stored and
reported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.store import open_store

pytestmark = pytest.mark.slow  # end to end: runs first (tests/conftest.py)

REPO = Path(__file__).resolve().parents[2]
DEAD = "workbench.sim.hicache:DSAIndexerPoolHost"
LIVE = "workbench.sim.hicache:DeepSeekV4PagedHostPool"


def test_dead_code_hypothesis_is_falsified_stored_and_reported(tmp_path: Path):
    root = tmp_path / "wbroot"
    root.mkdir()
    shutil.copy(REPO / "hypotheses.yaml", root / "hypotheses.yaml")
    shutil.copytree(REPO / "experiments", root / "experiments")
    db = tmp_path / "wb.duckdb"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WB_PROBE", "WB_SIM_DIR", "WB_DB", "WB_ROOT"))}
    r = subprocess.run([sys.executable, "-m", "workbench.cli.main", "hypothesis", "run",
                        "dead-code-dsaindexerpoolhost", "--replicates", "1", "--db", str(db), "--root", str(root),
                        "--json", "--report"], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    out = json.loads(r.stdout)
    assert out["verdict"] == "falsified", out["reasoning"]
    assert "DSAIndexerPoolHost: 0 calls" in out["reasoning"]
    assert "positive control DeepSeekV4PagedHostPool was hit in every run" in out["reasoning"]

    with open_store(str(db), read_only=True) as store:
        (run,) = store.runs(hypothesis_id="dead-code-dsaindexerpoolhost")
        full = store.run(run.id)
        verdict = store.latest_verdict("dead-code-dsaindexerpoolhost")
    assert full.status == "ok"
    assert full.metrics[f"calls:{DEAD}"] == 0 and full.metrics[f"calls:{LIVE}"] >= 1
    rows = full.probe_counts
    prefill = [p for p in rows if p.process.startswith("workbench.sim.prefill") and p.target == LIVE]
    assert prefill and prefill[0].calls >= 1 and prefill[0].resolved, rows
    assert all(p.calls == 0 and p.resolved for p in rows if p.target == DEAD)
    assert verdict is not None and verdict.verdict == "falsified"

    # The runner stopped the pdsim it started: no process of this workbench folder is left.
    left = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(root) in (proc / "cmdline").read_bytes().decode(errors="replace"):
                left.append(proc.name)
        except OSError:
            continue
    assert not left, f"processes left running: {left}"
    page = (root / "reports" / "hypotheses" / "dead-code-dsaindexerpoolhost.html").read_text()
    assert "DSAIndexerPoolHost" in page and "workbench.sim.prefill" in page
