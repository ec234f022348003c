"""Runs each probe of a search as a real execution: a generated config hypothesis, the runner, the store.

A probe "does good + S fail?" becomes a hypothesis of kind `config` (one arm: the probed config;
prediction: the metric lies in the failure region), marked generated, child of the search's root
hypothesis (or of the probe whose failing set it reduces). The runner runs it in sequential mode with
this module's stopping rule (the probe's own alpha and units), restores the target afterwards as for
any hypothesis, and the probe's verdict is recorded next to the runner's own analysis.

The probe tests the metric as the experiment defines it (corruption_rate: leaks over all sessions).
Lost units (errors, timeouts) cannot show the failure, so each look reads the rate over all units
and over the completed ones (`judge`): a failure in either stands, a pass needs both, and a look
where most units were lost with no failure among the rest stops the probe undecided at once (bf16
without the abort fix wedges and 9 in 10 sessions time out: a pass read off them would rest on
sessions that never ran). The search then settles that change from the good side (see
`workbench.isolate.search`), where the fixes that keep sessions alive stay applied. Units are pooled
over a probe's runs as independent; runs of one probe share a deployment. A probe left undecided by
failed runs (the workload or a restart erred), unlike one short of units, raises `RunFailure`: the
search stops there instead of going on around a config it could not measure.

Resumed (`prior`, see `workbench.isolate.resume`), a probe the earlier attempt decided is read back
from its stored runs instead of run, and the probe it left in flight continues its own execution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

from workbench.analysis import display
from workbench.isolate.assignments import shown_set
from workbench.isolate.decision import Look, cumulative_path, decide
from workbench.isolate.search import ProbeRequest, ProbeResult
from workbench.settings import Settings

if TYPE_CHECKING:
    from workbench.isolate.attempt import PriorAttempt
    from workbench.registry.folder import Registry
    from workbench.store.engine import Store

VERDICT_OF = {"fails": "supported", "passes": "falsified", "inconclusive": "inconclusive"}
MAX_RUNS = 200
MAX_FAILED_RUNS = 2
FAILED_STATUSES = ("failed", "invalid")  # a run that ended without measuring (not one a stop cut short)
ATTRITION_STOP = 0.25  # a probe with fewer completed units than this share stops undecided


@dataclass(frozen=True)
class IsolateSpec:
    """A checked `wb isolate` request (see `workbench.isolate.app.prepare_spec`)."""

    experiment: str
    good: dict[str, str]
    bad: dict[str, str]
    changes: tuple[str, ...]
    hold: dict[str, str]
    metric: str
    region: Any  # registry Region: where the metric lies when the config fails
    profile: str | None
    alpha: float
    budget: float
    seed: int
    search_id: str
    parent: str | None = None

    @property
    def root_id(self) -> str:
        return f"iso-{self.search_id}"

    def probe_seed(self, index: int) -> int:
        """Probe `index`'s execution seed: the search's seed plus the index, kept in the seed's range."""
        from workbench.registry.common import SEED_MAX

        return (self.seed + index) % (SEED_MAX + 1)

    def probe_id(self, index: int) -> str:
        return f"iso-{self.search_id}-p{index}"

    def arm(self, applied: tuple[str, ...] | frozenset[str]) -> dict[str, str]:
        return {v: (self.bad[v] if v in applied else self.good[v]) for v in self.changes}


def _prediction(spec: IsolateSpec, why: str) -> dict[str, Any]:
    region = {k: v for k, v in spec.region.model_dump().items() if v is not None}
    return {"metric": spec.metric, "arm": "probe", **region, "why": why}


def search_key(spec: IsolateSpec) -> dict[str, Any]:
    """What determines the search (its probes' requests and seeds), as stored: in the search's record, and in
    each probe's verdict, so that a search killed before it recorded itself can still be resumed."""
    budget = None if math.isinf(spec.budget) else spec.budget
    return {"search_id": spec.search_id, "root_id": spec.root_id, "experiment": spec.experiment,
            "profile": spec.profile, "metric": spec.metric, "region": spec.region.model_dump(exclude_none=True),
            "good": spec.good, "bad": spec.bad, "changes": list(spec.changes), "hold": dict(spec.hold),
            "seed": spec.seed, "parent": spec.parent, "alpha": spec.alpha, "budget": budget}


def root_hypothesis(spec: IsolateSpec, *, status: str = "open", verdict: str | None = None) -> Any:
    """The search itself as a hypothesis: the bad config fails, and a subset of its changes is why."""
    from workbench.registry.hypothesis import Hypothesis

    changes = shown_set(spec.bad, spec.changes)
    return Hypothesis(
        id=spec.root_id, parent=spec.parent, kind="config", status=status, experiment=spec.experiment,
        profile=spec.profile,
        claim=f"Some subset of the changes {changes} from the good config causes {spec.metric} in the "
              "failure region; `wb isolate` searches for the minimal one.",
        arms={"probe": spec.arm(spec.changes)}, hold=dict(spec.hold),
        predicts=[_prediction(spec, "the bad config reproduces the failure")],
        falsified_if="The bad config does not reproduce the failure.",
        generated={"by": "isolate", "search": spec.search_id, "verdict": verdict})


def probe_hypothesis(spec: IsolateSpec, req: ProbeRequest, parent_id: str, *, status: str = "open",
                     verdict: str | None = None) -> Any:
    from workbench.registry.hypothesis import Hypothesis

    applied = shown_set(spec.bad, req.applied) if req.applied else "{nothing}"
    return Hypothesis(
        id=spec.probe_id(req.index), parent=parent_id, kind="config", status=status,
        experiment=spec.experiment, profile=spec.profile,
        claim=f"The good config with {applied} applied fails ({req.phase} probe: {req.question})",
        arms={"probe": spec.arm(req.applied)}, hold=dict(spec.hold),
        predicts=[_prediction(spec, f"{req.phase} probe {req.index} of search {spec.search_id}")],
        falsified_if=f"{spec.metric} lies outside the failure region (the config passes).",
        design={"max_replicates": MAX_RUNS, "seed": spec.probe_seed(req.index)},
        generated={"by": "isolate", "search": spec.search_id, "probe": req.index, "verdict": verdict})


@dataclass
class RunnerOracle:
    """An `Oracle` whose every probe is a recorded sequential execution on the experiment's target."""

    spec: IsolateSpec
    registry: "Registry"
    store: "Store"
    settings: Settings = field(default_factory=Settings)
    show_progress: bool = False
    hypotheses: list[Any] = field(default_factory=list)
    results: list[tuple[ProbeRequest, ProbeResult]] = field(default_factory=list)
    units_per_run: float | None = None
    prior: "PriorAttempt | None" = None  # an earlier attempt of this search (`--resume`): its probes are reused
    current: ProbeRequest | None = None  # the probe in flight, recorded if the search stops during it
    # The command that resumes the search (`isolate.resume.resume_command`): each probe's execution keeps it, and
    # its target lock records it, so a command refused while a probe holds the target (or left it) prints it.
    resume: str = ""

    def _parent_id(self, req: ProbeRequest) -> str:
        return self.spec.root_id if req.parent is None else self.spec.probe_id(req.parent)

    def probe(self, req: ProbeRequest) -> ProbeResult:
        h = probe_hypothesis(self.spec, req, self._parent_id(req))
        self.hypotheses.append(h)
        reused = self._reused(req, h.id)
        if reused is not None:
            return self._done(req, reused)
        self.current = req
        execution_id, how = self._execute(h, req)
        look = self._look(self.store, execution_id, req)
        failed = self._failed_runs(self.store, execution_id)
        if look.outcome == "inconclusive" and failed and (failed >= MAX_FAILED_RUNS or look.n == 0):
            # Undecided because its runs failed, not for want of units: the search stops here (no verdict is
            # recorded, so a resume runs the probe again) rather than go on around a hole.
            raise self._broken(req, execution_id, failed)
        result = ProbeResult(look.outcome, look.k, look.n, look.n, look.looks, look.reasoning,
                             {"execution_id": execution_id, "hypothesis_id": h.id, "how": how,
                              "failed_runs": failed})
        self.store.add_verdict(hypothesis_id=h.id, verdict=VERDICT_OF[result.outcome], execution_id=execution_id,
                               reasoning=f"{h.id} ({req.question}) {result.outcome}: {result.reasoning}", checks=[],
                               details={"kind": "isolate-probe", "search": self.spec.search_id,
                                        "search_key": search_key(self.spec),
                                        "request": plain_request(req), "outcome": result.outcome,
                                        "k": look.k, "n": look.n,
                                        "looks": look.looks, "e_fail": look.e_fail, "e_pass": look.e_pass},
                               hypothesis_sha256=None)
        return self._done(req, result)

    def _broken(self, req: ProbeRequest, execution_id: int, failed: int) -> Exception:
        """The error that stops the search at a probe whose runs failed, with the first failed run's own error."""
        from workbench.errors import RunFailure

        runs = self.store.runs(execution_id=execution_id)
        first = next(r for r in runs if r.status in FAILED_STATUSES)
        config = f"good with {shown_set(self.spec.bad, req.applied)}" if req.applied else "the good config"
        count = f"its {display.count(failed, 'run')}" if failed == len(runs) else \
            f"{failed} of its {display.count(len(runs), 'run')}"
        stage = f" ({first.stage} stage)" if first.stage else ""
        return RunFailure(f"`wb isolate` probe {req.index} ({config}): {count} failed, so it decided nothing; the "
                          f"search stopped there. First: run {first.id}{stage}: {first.error or first.status}",
                          hint=f"see `wb runs show {first.id}`; fix what failed the runs, then resume the search")

    def _done(self, req: ProbeRequest, result: ProbeResult) -> ProbeResult:
        if result.n > 0 and result.looks:
            self.units_per_run = result.n / result.looks
        self.results.append((req, result))
        self.current = None
        return result

    def _reused(self, req: ProbeRequest, hypothesis_id: str) -> ProbeResult | None:
        """The earlier attempt's result for this very request, read again from its stored runs (None: run it).

        The look is recomputed rather than copied, so a probe whose runs were deleted since is run again."""
        earlier = self.prior.reusable(plain_request(req)) if self.prior is not None else None
        if earlier is None:
            return None
        execution_id = earlier.execution_id
        look = self._look(self.store, execution_id, req)
        if (look.outcome, look.k, look.n) != (earlier.outcome, earlier.k, earlier.n):
            return None
        return ProbeResult(look.outcome, look.k, look.n, look.n, look.looks, look.reasoning,
                           {"execution_id": execution_id, "hypothesis_id": hypothesis_id, "how": "reused",
                            "failed_runs": self._failed_runs(self.store, execution_id)})

    def _execute(self, h: Any, req: ProbeRequest) -> tuple[int, str]:
        """Run the probe's hypothesis under this probe's stopping rule (the target restored after it),
        record the runner's own analysis as `wb hypothesis run` does; (the execution's id, "ran" or
        "continued": the earlier attempt's execution of this probe resumed where it stopped)."""
        from workbench.analysis.stored import analyze_stored, record_verdict
        from workbench.errors import WbError
        from workbench.runner.execute import RunInterrupted, execute

        reg = replace(self.registry, hypotheses=[*self.registry.hypotheses, *self.hypotheses])
        launch, how = self._launch(reg, h, req)
        try:
            done = execute(launch, self.store, show_progress=self.show_progress, artifacts=self.settings.artifacts,
                           decide=self.stop_rule(req))
        except RunInterrupted as exc:
            # The runner's hint names the probe's own hypothesis, which exists only inside this search.
            # `run_isolate` adds the command that resumes the whole search.
            raise RunInterrupted(f"`wb isolate` probe {req.index} {exc.message}", hint=None,
                                 signum=exc.signum) from None
        try:
            record_verdict(self.store, analyze_stored(self.store, reg, h.id, execution_id=done.execution_id),
                           execution_id=done.execution_id)
        except WbError:
            pass  # the probe's own verdict follows; the runs are recorded either way
        return int(done.execution_id), how

    def stop_rule(self, req: ProbeRequest) -> Callable[["Store", int, int], Look]:
        """The probe's stopping rule as the runner asks it after each replicate block (`runner.execute.StopRule`):
        over the runs through that block's replicate, so a resumed execution makes its killed runner's looks again
        as they were, not each over the runs stored after it."""

        def rule(store: "Store", execution_id: int, through_replicate: int) -> Look:
            return self._look(store, execution_id, req, through_replicate)

        return rule

    def _launch(self, reg: "Registry", h: Any, req: ProbeRequest) -> tuple[Any, str]:
        """The probe's execution, prepared: the earlier attempt's, continued by the runner's `--resume` when
        this probe was in flight when it stopped; else a new one."""
        from workbench.runner.execute import RunOptions, prepare
        from workbench.runner.resume import find_resumable

        origin = {"isolate": search_key(self.spec), "resume": self.resume}
        if self.prior is not None and self.prior.continues(plain_request(req)) and find_resumable(self.store, h.id):
            opts = RunOptions(target=self.spec.profile, sequential=True, resume=True, show_progress=self.show_progress,
                              origin=origin)
            return prepare(reg, h.id, opts, store=self.store, sim_dir=self.settings.sim_dir), "continued"
        runs = planned_runs(req.max_units, self.units_per_run)
        opts = RunOptions(target=self.spec.profile, replicates=runs, sequential=True,
                          seed=self.spec.probe_seed(req.index), show_progress=self.show_progress, origin=origin)
        return prepare(reg, h.id, opts, sim_dir=self.settings.sim_dir), "ran"

    def _runs(self, store: "Store", execution_id: int, through_replicate: int | None = None) -> list[Any]:
        """The probe's runs; with `through_replicate`, those of the replicates up to it (a look after its block)."""
        from workbench.analysis.data import run_query

        exp = self.registry.experiments[self.spec.experiment]
        runs = store.analysis_runs(run_query(exp, execution_id=execution_id, include_imported=False))
        if through_replicate is None:
            return runs
        return [r for r in runs if r.replicate is None or r.replicate <= through_replicate]

    def _failed_runs(self, store: "Store", execution_id: int) -> int:
        """The probe's runs that ended without measuring (runs cut short by a stop are run again when the
        execution resumes: only finished ones count as failed)."""
        return sum(r.status in FAILED_STATUSES for r in self._runs(store, execution_id))

    def _look(self, store: "Store", execution_id: int, req: ProbeRequest, through_replicate: int | None = None) -> Look:
        from workbench.analysis.data import USABLE_STATUSES, has_completed_reading
        from workbench.analysis.predictions import pooled

        exp = self.registry.experiments[self.spec.experiment]
        every = self._runs(store, execution_id, through_replicate)
        runs = [r for r in every if r.status in USABLE_STATUSES]
        failed = sum(r.status in FAILED_STATUSES for r in every)
        bounds = self.spec.region.bounds()
        every_unit = cumulative_path(pooled(runs, self.spec.metric, exp)["per_run"])
        # A rate of lost units (error_rate) has no reading over the completed ones: all units are its only one.
        completed = (cumulative_path(pooled(runs, self.spec.metric, exp, basis="completed")["per_run"])
                     if has_completed_reading(exp.metrics[exp.repeated(self.spec.metric)], exp, runs) else every_unit)
        look = judge(every_unit, completed, bounds, req.alpha, req.max_units)
        if failed >= MAX_FAILED_RUNS and not look.stop:
            # Runs that measure nothing would never spend the units: stop, and say why the probe is open.
            return replace(look, stop=True,
                           reasoning=f"{look.reasoning}; stopped after {display.count(failed, 'failed run')}")
        return look


def planned_runs(max_units: float, units_per_run: float | None) -> int:
    """Runs to plan for a probe: as many as its units can use (a whole run past the share at most)."""
    if not units_per_run or not math.isfinite(max_units):
        return MAX_RUNS
    return max(1, min(MAX_RUNS, math.ceil(max_units / units_per_run)))


def judge(every_unit: list[tuple[float, float]], completed: list[tuple[float, float]], bounds: tuple[float, float],
          alpha: float, max_units: float) -> Look:
    """A probe's look over all its units and over the completed ones (those that could show the failure).

    Fails when either reading fails (a wedge that kills most sessions hides the failure in the rate
    over all of them, not among those that complete); each is one-sided at alpha/2, so a false
    failure has chance at most alpha, the probe's share. Passes only when both pass (the analysis
    reads attrition the same way). Stops undecided at once when fewer than ATTRITION_STOP of the
    units completed and none of those showed the failure: running on would buy units that cannot."""
    look = decide(every_unit, bounds, alpha, max_units)
    alive = decide(completed, bounds, alpha, max_units)
    k_done, n_done = completed[-1] if completed else (0.0, 0.0)
    if look.outcome == "fails" or alive.outcome == "fails":
        if look.outcome == "fails":
            return look
        return replace(alive, k=look.k, n=look.n, looks=look.looks, reasoning=(
            f"{look.k:g}/{look.n:g} over all units; over the {n_done:g} completed: {alive.reasoning}"))
    if look.n > 0 and n_done < ATTRITION_STOP * look.n and k_done == 0:
        return replace(look, outcome="inconclusive", stop=True, reasoning=(
            f"{look.k:g}/{look.n:g} with only {n_done:g} of {look.n:g} units completed: the rest did not complete "
            "(errors or timeouts) and could not show the failure, so no pass is read off them; stopped at this look"))
    if look.outcome == "passes" and alive.outcome != "passes":
        return replace(look, outcome="inconclusive", stop=look.n >= max_units, reasoning=(
            f"{look.reasoning}, but over the {n_done:g} completed units not yet ({alive.reasoning})"))
    return look


def plain_request(req: ProbeRequest) -> dict[str, Any]:
    from dataclasses import asdict

    d = asdict(req)
    d["max_units"] = None if math.isinf(d["max_units"]) else d["max_units"]
    return d
