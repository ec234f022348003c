"""The wedge world through the CLI, with its own pdsim, sequential to its decision (the suite's longest
test: a file of its own, so the runner's other pdsim tests go to another worker meanwhile).

It runs a smaller repro that still wedges (120 sessions x 2 rounds) with a fixed --seed: pdsim is
deterministic for a given serve file and workload seed, so the verdict is too; the full-size wedge
world's verdict is measured by studies/wedge_verdict.py. After the test the serve file equals the original.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from workbench.sim import control

pytestmark = pytest.mark.slow(longest=True)  # the suite's longest: starts first (tests/conftest.py)


# The smallest repro found that still wedges in the wedge world (aborts and leaks without the fix)
# and leaves enough completed sessions with the fix for a decision within a few replicates: at 80 x 2
# nothing wedges, at 160 x 2 the arm without the fix completes no session at all.
WEDGE_REPRO = ("--sessions 80 --rounds 4", "--sessions 120 --rounds 2")


def test_wedge_world_via_cli_starts_and_stops_its_own_pdsim(bench):
    """In the wedge world the corruption rides on the aborts, so the abort fix removes it: the
    hypothesis must come out supported (sequential mode adds replicates until it is decided)."""
    exp = bench.root / "experiments" / "agent-repro.yaml"
    text = exp.read_text()
    assert WEDGE_REPRO[0] in text
    exp.write_text(text.replace(WEDGE_REPRO[0], WEDGE_REPRO[1], 1))      # the first is the sim profile's
    out = subprocess.run([sys.executable, "-m", "workbench.cli.main", "hypothesis", "run", "wedge-confound",
                          "--set", "causal_model=wedge", "--sequential", "--replicates", "6", "--seed", "5",
                          "--json", "--db", bench.db],
                         capture_output=True, text=True, env=dict(os.environ), timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    s = json.loads(out.stdout)
    assert bench.serve() == bench.original
    assert control.status(bench.sim_dir).state == "down"  # started for the experiment, stopped after it
    # Started by each run's restart on its arm's serve file, and never on the original one before the first run.
    starts = (bench.sim_dir / "logs" / "prefill.log").read_text(encoding="utf-8").count(" starting: ")
    assert starts == len(s["runs"]), (starts, len(s["runs"]))
    assert s["overrides"] == {"causal_model": "wedge"}
    assert {a["variables"]["causal_model"] for a in s["arms"].values()} == {"wedge"}
    assert {"hypothesis", "experiment", "target", "arms", "runs", "verdict", "reasoning", "checks"} <= set(s)
    assert s["verdict"] == "supported", s["reasoning"]
    assert [(r["status"], r["error"]) for r in s["runs"]] == [("ok", None)] * len(s["runs"])
    assert {c["name"] for c in s["checks"]} >= {"isolation"} and all("passed" in c for c in s["checks"])
    assert s["arms"]["control"]["totals"]["aborts"] > 0 and s["arms"]["control"]["totals"]["leak"] > 0
    assert s["arms"]["treatment"]["totals"]["leak"] == 0 and s["arms"]["treatment"]["totals"]["aborts"] == 0
    replicates = len({r["replicate"] for r in s["runs"]})
    assert s["arms"]["treatment"]["totals"]["sessions"] == 120 * replicates  # the smaller repro ran
    # Its runs are shown on pdsim, as the user knows the deployment (they read "control@local"); the stored
    # host stays "local", the sim target's one host, which a resume compares.
    assert s["order"] and all(o.endswith("@pdsim") for o in s["order"]), s["order"]
    assert {r["host"] for r in s["runs"]} == {"local"} and {r["where"] for r in s["runs"]} == {"pdsim"}
    assert " control r0 on pdsim: ok (" in out.stderr and " on local" not in out.stderr, out.stderr[-2000:]
