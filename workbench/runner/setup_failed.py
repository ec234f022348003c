"""When an execution stops early because its deployment does not come up in any arm.

A restart that never brings the service up fails every run of every arm the same way, each after the full health
wait: running the rest of the plan only repeats it. Once the first run of every arm failed before its workload and no
run of the execution got that far, the execution stops, failed, with the first such run's error. An arm whose runs
fail while another arm's reach their workload is evidence (a treatment that breaks the service), and goes on.
"""

from __future__ import annotations

from typing import Any

from workbench.analysis import display
from workbench.errors import RunFailure
from workbench.runner.lifecycle import STAGES
from workbench.runner.takeover import ended_runs

SETUP_STAGES = STAGES[:STAGES.index("workload")]  # render … verify: before the workload the service must be up

# `state` is the execution loop's `runner.execute.State` (not imported: execute imports this module).
State = Any


def _failed_in_setup(out: Any) -> bool:
    return out.status == "failed" and out.stage in SETUP_STAGES


def setup_failed_everywhere(state: "State") -> RunFailure | None:
    """The error that stops the execution once every arm's first run of this attempt, on every host that runs in
    it, failed before its workload and no run got that far (nor ended ok before a resume), while planned runs
    remain; else None. An execution with a caller's own stopping rule (`wb isolate`'s probes, which weigh failed
    runs themselves) is left to it."""
    if state.decide is not None or all(r.order_index in state.done for r in state.plan.runs):
        return None
    if any(not _failed_in_setup(out) for _, _, out in state.outcomes):
        return None  # a run reached its workload (or was cut short): the service came up
    # Every host that runs in this attempt, each arm on it: a host whose run is still under way (hosts run their
    # blocks side by side) may be the one where the service comes up.
    hosts = ({r.host for r in state.plan.runs if r.order_index not in state.done}
             | {pr.host for _, pr, _ in state.outcomes})
    arms = {r.arm for r in state.plan.runs}
    if any((host, arm) not in {(pr.host, pr.arm) for _, pr, _ in state.outcomes} for host in hosts for arm in arms):
        return None
    first: dict[str, tuple[int, Any, Any]] = {}
    for run_id, pr, out in sorted(state.outcomes, key=lambda o: o[0]):
        first.setdefault(pr.arm, (run_id, pr, out))
    ended = ended_runs(state.store, state.execution_id)  # a resume's earlier runs too
    if "ok" in ended.values():  # it came up then
        return None
    run_id, pr, out = min(first.values(), key=lambda f: f[0])
    # Another host's last run may be ended here and not yet in the store.
    made = set(ended) | {r.order_index for _, r, _ in state.outcomes}
    every = ("its one arm" if len(first) == 1 else f"each of its {len(first)} arms") + (
        f" on each of its {len(hosts)} hosts" if len(hosts) > 1 else "")
    planned = display.count(len(state.plan.runs), "planned run")
    return RunFailure(
        f"stopped after {len(made)} of {planned}: the first run of {every} "
        f"failed before its workload and no run got that far, so the rest would fail the same way; run {run_id} "
        f"({pr.arm} {display.replicate(pr.replicate)}) {out.describe()}",
        hint=f"see `wb runs show {run_id}`; fix the deployment, then run the hypothesis again (a fresh execution: "
             "--resume would keep these failed runs)")
