"""Analysing what a store holds: read the runs an analysis needs, decide, record the verdict.

This is the one place where analysis meets the store; `verdict.analyze` itself sees typed runs only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from workbench.analysis.data import run_query
from workbench.analysis.looks import SequentialLook, sequential_look
from workbench.analysis.results import ANALYSIS_VERSION, Analysis
from workbench.analysis.verdict import analyze, arm_names
from workbench.errors import BadInput
from workbench.registry.experiment import per_replicate_names
from workbench.registry.hypothesis import Hypothesis
from workbench.store import holding

if TYPE_CHECKING:
    from workbench.registry.folder import Registry
    from workbench.store.engine import Store


def arm_assignments(registry: "Registry", h: Hypothesis, mode: str,
                    overrides: dict[str, str] | None) -> dict[str, dict[str, str]]:
    """Each arm's expected variables under the execution's `--set` overrides."""
    out = {}
    for a in arm_names(h, mode):
        base = "control" if a == "control_aa" else a
        try:
            out[a] = registry.arm_assignment(h, base, overrides)
        except BadInput as exc:
            raise BadInput(f"the overrides {overrides} recorded with this execution no longer apply to arm {base} "
                           f"of {h.id}: {exc.message}", hint=exc.hint) from exc
    return out


@holding
def analyze_stored(store: "Store", registry: "Registry", hypothesis_id: str, *, execution_id: int | None = None,
                   include_imported: bool | None = None, sequential: bool | None = None,
                   overrides: dict[str, str] | None = None, budget: int | None = None,
                   any_hypothesis: bool = False, through_replicate: int | None = None) -> Analysis:
    """Decide `hypothesis_id` from the runs in `store`.

    Without `execution_id` every stored run of the hypothesis's executions whose recorded variables match an
    arm is used, imported evidence included; with `any_hypothesis`, also the runs other hypotheses' executions
    made in those configurations (their runs answered another question: only when asked). With `execution_id`,
    that execution's runs (by their arm label), and imported evidence only when `include_imported=True` is passed.
    `sequential` defaults to the execution's mode; sequential executions are judged by always-valid tests.
    `budget` (most replicates) defaults to the one the execution recorded in its plan (`--sequential
    --replicates N` sets it), else the design's: futility and the median tests' alpha per look are spent over it.
    `through_replicate`: only the runs of the replicates up to it (a sequential look after that replicate's block).
    """
    h = registry.hypothesis(hypothesis_id)
    exp = registry.experiment_for(h)
    execution = None
    if execution_id is not None:
        execution = store.execution(execution_id)
        if execution is None:
            raise BadInput(f"no execution {execution_id} in the store", hint="to see the executions: wb runs list")
    mode = execution.mode if execution is not None else "pooled"
    if include_imported is None:
        include_imported = execution is None
    if overrides is None and execution is not None:
        overrides = execution.overrides
    if budget is None and execution is not None:
        budget = _recorded_budget(execution.plan)
    own = None if execution is not None or any_hypothesis else h.id
    runs = store.analysis_runs(run_query(exp, execution_id=execution_id, include_imported=bool(include_imported),
                                         hypothesis_id=own), with_probes=h.kind == "reachability")
    if through_replicate is not None:
        runs = [r for r in runs if r.replicate is None or r.replicate <= through_replicate]
    configs = store.rendered_configs(sorted({r.config_hash for r in runs if r.config_hash}))
    result = analyze(h, exp, runs, assignments=arm_assignments(registry, h, mode, overrides), configs=configs,
                     execution_id=execution_id, mode=mode,
                     sequential=mode == "sequential" if sequential is None else bool(sequential),
                     per_replicate=frozenset(per_replicate_names(exp, h, overrides or {})), budget=budget)
    if own is None and execution is None:
        return replace(result, any_hypothesis=True)
    # A sequential execution stops when it decides: no size to fall short of. One under --set never sets the status,
    # which is all a smoke run's mark is about.
    if mode != "fixed" or result.sequential or overrides:
        return result
    planned = (h.design.replicates if h.design and h.design.replicates else None) or exp.design.replicates
    return replace(result, planned_replicates=planned)


def _recorded_budget(plan: object) -> int | None:
    """The max_replicates an execution recorded in its plan; None for a store written without one."""
    value = plan.get("max_replicates") if isinstance(plan, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def record_verdict(store: "Store", analysis: Analysis, *, execution_id: int | None = None) -> int:
    """Store the analysis as a verdict (reasoning, checks, and the full analysis as details); its id."""
    d = analysis.to_dict()
    return store.add_verdict(hypothesis_id=analysis.hypothesis_id, verdict=analysis.verdict,
                             reasoning=analysis.reasoning, checks=d["checks"], details=d,
                             execution_id=execution_id if execution_id is not None else analysis.execution_id,
                             hypothesis_sha256=analysis.hypothesis_sha256, evidence_run_ids=analysis.run_ids,
                             analysis_version=ANALYSIS_VERSION)


# How a stop's reasoning begins when no test decided (the CLI's stop line tells them apart by it).
BUDGET_SPENT = "The budget of"
FUTILE = "Stopped for futility"


@dataclass(frozen=True)
class SequentialDecision:
    """What the runner does after a replicate block: stop (with this verdict) or run another block."""

    stop: bool
    verdict: str
    reasoning: str
    replicates: int = 0
    max_replicates: int = 0
    futile: bool = False  # stopped because no verdict is reachable within the budget (sequential.reachable)
    look: SequentialLook | None = None  # where each prediction stands at this look (the runner's progress line)
    invalid_by: tuple[str, ...] = ()  # an invalid verdict's: the failed checks that made it so (the stop line)


def sequential_decision(store: "Store", registry: "Registry", hypothesis_id: str, *, execution_id: int,
                        max_replicates: int | None = None, through_replicate: int | None = None) -> SequentialDecision:
    """Decide after a replicate block of a `--sequential` execution whether to stop: the look over the runs of the
    replicates up to `through_replicate` (default all), as the runner made it after that block. A look is decided
    from the stored runs alone, so a resumed execution makes each look of its killed runner again, the same.

    Stops when the always-valid tests decide (supported / falsified), when a validity check makes
    more data pointless (invalid), when the budget (design.max_replicates) is spent, or for futility:
    when no inconclusive prediction can be decided within the budget (`sequential.reachable` and
    `difference_reachable`: rates and differences of rates are judged so; a median never stops an
    execution) and no falsified prediction waits on a check that more replicates may release.
    """
    h = registry.hypothesis(hypothesis_id)
    exp = registry.experiment_for(h)
    budget = max_replicates or (h.design.max_replicates if h.design and h.design.max_replicates else None) \
        or exp.design.max_replicates
    a = analyze_stored(store, registry, hypothesis_id, execution_id=execution_id, sequential=True, budget=budget,
                       through_replicate=through_replicate)
    decision = _decision(a, budget)
    return replace(decision, look=sequential_look(a, budget, stop=decision.stop, verdict=decision.verdict,
                                                  futile=decision.futile))


def _decision(a: Analysis, budget: int) -> SequentialDecision:
    """Stop or go on after the analysis `a` of the runs so far (`sequential_decision`)."""
    reps = a.replicates
    if a.verdict in ("supported", "falsified", "invalid"):
        invalid_by = tuple(c.name for c in a.checks if c.passed is not True and c.effect == "invalid")
        return SequentialDecision(True, a.verdict, a.reasoning, reps, budget,
                                  invalid_by=invalid_by if a.verdict == "invalid" else ())
    if reps >= budget:
        return SequentialDecision(True, "inconclusive",
                                  f"{BUDGET_SPENT} {budget} replicates is spent without a decision. " + a.reasoning,
                                  reps, budget)
    open_ = [j for j in a.predictions if j.outcome == "inconclusive"]
    # A falsified prediction under an inconclusive verdict is held by a check (drift with too few runs to
    # rule a trend out), which more replicates can release: that execution is not futile.
    held = any(j.outcome == "falsified" for j in a.predictions)
    if a.verdict == "inconclusive" and open_ and not held and all(j.reachable is False for j in open_):
        return SequentialDecision(True, "inconclusive",
                                  f"{FUTILE} after {reps} of at most {budget} replicates: even if every "
                                  "remaining replicate came in at either end of the current 99% (Wilson) interval of "
                                  "each rate involved, none of " + ", ".join(j.describe for j in open_) +
                                  " could be decided within the budget. " + a.reasoning, reps, budget, futile=True)
    return SequentialDecision(False, "inconclusive",
                              f"After {reps} of at most {budget} replicates nothing is decided yet; "
                              "run another block. " + a.reasoning, reps, budget)
