"""What an execution returns: the plan it followed, each run's outcome and per-arm totals.

The runner records and restores; whether to analyse and report is the application's decision.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Sequence

from workbench.analysis import display
from workbench.analysis.run_metrics import typed
from workbench.registry.experiment import per_replicate_names
from workbench.store import jsonx
from workbench.store.entities import RunRecord


@dataclass(frozen=True)
class RunSummary:
    id: int
    arm: str | None
    replicate: int | None
    block: int | None
    order_index: int | None
    host: str | None
    status: str
    error: str | None
    stage_s: dict[str, float] = field(default_factory=dict)
    where: str | None = None  # the host as shown ("pdsim" for the sim target's "local": Target.where)

    def ending(self) -> str:
        """How the run ended, in the words the progress line uses ("failed during its workload stage: …"): the
        stored error leads with "[stage]", which shown after "failed:" read twice (and a console ate it)."""
        first = self.error.splitlines()[0] if self.error else ""
        if first.startswith("[") and "] " in first:
            stage, reason = first[1:].split("] ", 1)
            said = f": {reason}" if _says_more(reason, self.status) else ""
            return f"{self.status} during its {stage} stage{said}"
        return self.status + (f": {first}" if _says_more(first, self.status) else "")


def _says_more(reason: str, status: str) -> bool:
    """A reason worth showing after the status: not empty, and not the status again ("interrupted: interrupted")."""
    return bool(reason.strip()) and reason.strip() != status


@dataclass(frozen=True)
class ArmTotals:
    variables: dict[str, str]
    runs: int
    runs_ok: int
    metrics: dict[str, dict[str, Any]]  # name -> {"n": runs with a value, "values": [...]}
    totals: dict[str, float | None]  # counts summed over ok runs; proportions as their ratio
    planned: int = 0  # the arm's runs in the plan (a sequential execution's: its budget)
    deleted: int = 0  # the arm's planned runs that ended and were deleted since (`wb runs delete`): not in `runs`


@dataclass(frozen=True)
class ExecutionResult:
    hypothesis: str
    experiment: str
    experiment_version: int
    profile: str
    target: str
    execution_id: int
    mode: str
    seed: int
    blocks: str
    overrides: dict[str, str]
    order: tuple[str, ...]
    config_diff: dict[str, str]
    arms: dict[str, ArmTotals]
    runs: tuple[RunSummary, ...]
    stopped_early: str | None
    timing: dict[str, float]
    runs_deleted: int = 0  # planned runs that ended and were deleted since (`wb runs delete`): not in `runs`
    # Who ran it, as the store records it (README "Who ran what"): user, user_source, host, git_revision, git_dirty,
    # wb_version.
    ran_by: dict[str, Any] = field(default_factory=dict)
    # The metrics the experiment declares proportions: their totals are rates, shown in percent.
    proportions: tuple[str, ...] = ()
    # What the target's restore did, the line stderr's progress ends with ("restored: /srv/serve.conf put back byte
    # for byte, restarted (1 command), healthy"); None where nothing was restored (see execute._restore_line).
    restore: str | None = None
    # The failed runs whose ending stderr's progress gave as each ended (RunProgress.told): the summary does not name
    # them again. Not in the JSON: a script reads each run's status and error.
    told: tuple[int, ...] = ()

    @property
    def failed_runs(self) -> list[RunSummary]:
        """The planned runs whose last attempt did not finish ok (an interrupted attempt that a resume redid
        and completed does not count against the execution)."""
        last: dict[Any, RunSummary] = {}
        for r in sorted(self.runs, key=lambda r: r.id):
            last[r.order_index if r.order_index is not None else ("id", r.id)] = r
        return [r for r in last.values() if r.status != "ok"]

    @property
    def planned_runs(self) -> int:
        """The planned runs made: those stored (an attempt redone is one) and those deleted since."""
        return len({r.order_index if r.order_index is not None else ("id", r.id) for r in self.runs}) + \
            self.runs_deleted

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["order"] = list(self.order)
        d["proportions"] = list(self.proportions)
        del d["told"]
        return d


def _arms(state: Any, runs: list[RunRecord]) -> dict[str, ArmTotals]:
    p = state.prepared
    exp = p.experiment
    # A per-replicate variable has a value per replicate (each run records its own), none per arm.
    drawn = set(per_replicate_names(exp, p.hypothesis, p.overrides))
    arms: dict[str, ArmTotals] = {}
    gone = set(state.done) - {r.order_index for r in runs}  # ended, then deleted (ExecutionResult.runs_deleted)
    for arm in p.arms:
        ok = [r for r in runs if r.arm == arm and r.status == "ok"]
        metrics: dict[str, Any] = {}
        for name in sorted({k for r in ok for k in r.metrics}):
            values = [typed(exp, name, r.metrics[name]) for r in ok if name in r.metrics]
            metrics[name] = {"n": len(values), "values": values}
        totals: dict[str, float | None] = {}
        for name, spec in exp.metrics.items():
            if spec.kind == "count" and spec.same_as is None and name in metrics:
                totals[name] = jsonx.whole(sum(metrics[name]["values"]))
        for name, spec in exp.metrics.items():
            if spec.same_as is not None and spec.same_as in totals:
                totals[name] = totals[spec.same_as]
            if spec.kind == "proportion":
                num, den = totals.get(spec.numerator or ""), totals.get(spec.denominator or "")
                totals[name] = (num / den) if (num is not None and den) else None
        # Planned runs of the arm that were made: an interrupted attempt that a resume redid is one run, not two.
        made = {r.order_index if r.order_index is not None else ("id", r.id) for r in runs if r.arm == arm}
        variables = {k: v for k, v in p.assignments[arm].items() if k not in drawn}
        planned = sum(1 for r in state.plan.runs if r.arm == arm)
        deleted = sum(1 for r in state.plan.runs if r.arm == arm and r.order_index in gone)
        arms[arm] = ArmTotals(variables, len(made), len(ok), metrics, totals, planned, deleted)
    return arms


def result(state: Any) -> ExecutionResult:
    """The execution as it ended, read back from the store."""
    with state.store.held():  # two reads of the store: one open of a DuckDB file, not two
        return _result(state)


def _result(state: Any) -> ExecutionResult:
    from workbench.runner.prepare import arms_config_diff

    p = state.prepared
    runs = state.store.runs(execution_id=state.execution_id)
    stage_s = {rid: out.stage_s for rid, _pr, out in state.outcomes}
    plan = state.plan
    res = ExecutionResult(
        hypothesis=p.hypothesis.id, experiment=p.experiment.id, experiment_version=p.experiment.version,
        profile=p.profile_name, target=state.target_desc, execution_id=state.execution_id, mode=p.mode,
        seed=plan.seed, blocks=plan.blocks, overrides=dict(p.overrides),
        order=tuple(f"{r.arm}@{state.where(r.host)}" for r in plan.runs),
        config_diff=arms_config_diff(p) if p.rendered else {}, arms=_arms(state, runs),
        runs=tuple(RunSummary(r.id, r.arm, r.replicate, r.block, r.order_index, r.host, r.status, r.error,
                              stage_s.get(r.id, {}), state.where(r.host) if r.host is not None else None)
                   for r in runs),
        stopped_early=None, timing={k: round(v, 3) for k, v in state.timing.items()},
        runs_deleted=len(set(state.done) - {r.order_index for r in runs}), ran_by=_ran_by(state),
        proportions=tuple(n for n in p.experiment.metrics if display.is_proportion(p.experiment, n)),
        restore=state.restore_line, told=tuple(sorted(state.progress.told)))
    return replace(res, stopped_early=_why_stopped(state.stop_reason, res, state.attrition_held,
                                                   invalid_by=state.invalid_by))


def _ran_by(state: Any) -> dict[str, Any]:
    rec = state.store.execution(state.execution_id)
    if rec is None:
        return {}
    return {"user": rec.user_name, "user_source": rec.user_source, "host": rec.host,
            "git_revision": rec.git_revision, "git_dirty": rec.git_dirty, "wb_version": rec.wb_version}


def _why_stopped(reason: str | None, res: ExecutionResult, attrition_held: Sequence[int] = (), *,
                 invalid_by: Sequence[str] | None = None) -> str | None:
    """Why a sequential execution stopped where it did, in a line (the verdict's reasoning says the rest), and the
    looks at which the attrition check held a verdict the units as a whole had reached: the verdict shown may
    stand by the last look, but those looks are why the execution ran on. `invalid_by`: the verdict it stopped at
    is invalid, made so by these checks (a check makes a verdict invalid, it does not hold it; no test decided)."""
    from workbench.analysis.stored import BUDGET_SPENT, FUTILE

    if reason is None:
        return None
    blocks = len({run.block for run in res.runs})
    if reason.startswith(BUDGET_SPENT):
        line = f"budget spent: {display.count(blocks, 'block')} without a decision"
    elif reason.startswith(FUTILE):
        line = (f"stopped early after {display.count(blocks, 'block')}: no verdict is reachable within the budget "
                "(futility)")
    elif invalid_by is not None:
        names = list(invalid_by)
        made = f"the {names[0]} check made" if len(names) == 1 else \
            f"the {', '.join(names[:-1])} and {names[-1]} checks made" if names else "a validity check made"
        said = "their lines below say" if len(names) > 1 else "its line below says" if names else \
            "the checks below say"
        line = (f"stopped early after {display.count(blocks, 'block')}" if res.planned_runs < len(res.order) else
                f"stopped at the last block of the budget ({blocks})") + f": {made} the verdict invalid ({said} why)"
    elif res.planned_runs < len(res.order):
        line = f"stopped early after {display.count(blocks, 'block')}: the sequential test decided"
    else:
        line = f"the sequential test decided at the last block of the budget ({blocks})"
    if not attrition_held:
        return line
    looks = sorted(attrition_held)
    said = f"look {looks[0]}" if len(looks) == 1 else f"looks {looks[0]} to {looks[-1]}" \
        if len(looks) > 2 and looks == list(range(looks[0], looks[-1] + 1)) else \
        "looks " + ", ".join(map(str, looks[:-1])) + f" and {looks[-1]}"
    if looks[-1] >= blocks:  # it holds the verdict still: the check's line says what would let it decide
        return f"{line}; the attrition check held the verdict at {said} (its line below says what would decide it)"
    decided = not reason.startswith((BUDGET_SPENT, FUTILE)) and invalid_by is None
    return f"{line}; the attrition check held the verdict at {said}" + \
        (", until the completed units alone decided as all units did" if decided else "")
