"""An arm of the design with no completed run: the execution did not run as designed, so it decides nothing."""

from __future__ import annotations

import json
import re

# The treatment's setting makes the toy's health check answer 503: every run of that arm fails before its workload.
CRASH_HYPOTHESIS = """\
  - id: toy-crash
    claim: The control leaks.
    experiment: toy
    isolates: mode
    arms:
      control: {mode: ok}
      treatment: {mode: unhealthy}
    hold: {fix: off}
    predicts:
      - {metric: corruption_rate, arm: control, at_least: 0.02}
"""


def test_an_arm_whose_runs_all_failed_leaves_no_verdict_standing(toy, cli):
    """`--replicates 1` of an A/B design whose treatment crashes the service: the control's 3/10 leaks lie inside
    the predicted region, and wb said "verdict: supported" beside "[n/a] data: ... treatment: 0 runs" and an
    attrition check that compared all and completed units of an arm that measured nothing ("the verdict stands").
    The design was not run: the verdict is invalid, the data check names the arm and its run's failure, and the
    board, `hypothesis show` and `hypothesis analyze` say the same."""
    path = toy.root / "hypotheses.yaml"
    path.write_text(path.read_text() + CRASH_HYPOTHESIS)
    code, out, err = cli("hypothesis", "run", "toy-crash", "--replicates", "1", "--db", toy.db)
    assert code == 1, (out, err)  # a run failed while running
    assert "verdict: invalid (claim: The control leaks.)" in out, out
    data = next(line for line in out.splitlines() if line.strip().startswith("[FAIL] data:"))
    assert re.search(r"no run of arm treatment completed: its 1 run failed \(run \d+ failed during its health "
                     r"stage: health never green after 4 attempts", data), data
    assert data.endswith("(this makes the result invalid)"), data
    attrition = next(line for line in out.splitlines() if "] attrition:" in line)
    assert "over all units and over completed units" not in attrition and "stands" not in attrition, attrition
    assert "treatment: 1 failed run was left out: the arm has no completed run" in attrition, attrition
    code, out, err = cli("hypothesis", "show", "toy-crash", "--json", "--db", toy.db)
    assert code == 0 and json.loads(out)["status"] == "invalid", (out, err)
    code, out, err = cli("hypothesis", "analyze", "toy-crash", "--no-record", "--db", toy.db)
    assert code == 0 and out.startswith("toy-crash: invalid\n"), (out, err)
