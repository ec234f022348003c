"""`wb isolate` as one use case: check the request, search with real probes, record the search, report it."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import BadInput, WbError
from workbench.isolate.adapter import (IsolateSpec, RunnerOracle, plain_request, probe_hypothesis, root_hypothesis,
                                      search_key)
from workbench.isolate.assignments import parse_assignments
from workbench.isolate.attempt import PriorAttempt
from workbench.isolate.records import ROOT_VERDICT, append_to_registry, record_search, registry_block
from workbench.isolate.region import parse_region
from workbench.isolate.resume import check_unchanged, find_attempt, resume_command
from workbench.isolate.search import SearchResult, isolate
from workbench.registry.common import did_you_mean, given_value_hint
from workbench.settings import Settings

if TYPE_CHECKING:
    from workbench.registry.folder import Registry
    from workbench.store.engine import Store

DEFAULT_BUDGET = 4000.0
DEFAULT_ALPHA = 0.05
# Held fixed, a workload seed replays the same units in every run of a probe, which its sequential test would
# count as new evidence each time.
PER_REPLICATE = ("{name} is a per-replicate variable: each run of a probe draws it afresh, so that its units are "
                 "new ones; held, every run would replay the same units")


def metric_problem(exp: Any, metric: str) -> tuple[str, str] | None:
    """Why `metric` cannot be searched on (message, hint), or None: it must be a proportion of `exp`."""
    spec_m = exp.metrics.get(metric)
    if spec_m is None:
        return (f"experiment {exp.id!r} has no metric {metric!r}",
                did_you_mean(metric, exp.metrics, f"metrics: {', '.join(exp.metrics)}"))
    if spec_m.kind != "proportion":
        return (f"{metric!r} is a {spec_m.kind} metric; wb isolate tests a proportion per probe",
                _proportions_hint(exp))
    return None


def experiment_hint(registry: Any, experiment: str) -> str | None:
    """The hint for an experiment id not among `registry`'s: the closest id, and the ids there are."""
    names = sorted(registry.experiments)
    return did_you_mean(experiment, names, f"experiments: {', '.join(names) or 'none'}")


def _proportions_hint(exp: Any) -> str:
    names = [name for name, m in exp.metrics.items() if m.kind == "proportion"]
    if not names:
        return f"experiment {exp.id!r} defines no proportion metric (kind: proportion, k of n units) to search on"
    return f"{exp.id}'s proportion metrics: {', '.join(names)}"


def prepare_spec(registry: Any, *, experiment: str, good: list[str], bad: list[str], metric: str, region: str,
                 profile: str | None = None, budget: float | None = None, alpha: float = DEFAULT_ALPHA,
                 seed: int | None = None, parent: str | None = None) -> IsolateSpec:
    """Check every flag against the experiment; bad input raises BadInput naming the flag."""
    exp = registry.experiments.get(experiment)
    if exp is None:
        raise BadInput(f"--experiment {experiment}: no experiments/{experiment}.yaml",
                       hint=experiment_hint(registry, experiment))
    if profile is not None and profile not in exp.profiles:
        raise BadInput(f"--target {profile}: experiment {experiment!r} has no profile {profile!r}",
                       hint=did_you_mean(profile, exp.profiles, f"profiles: {', '.join(exp.profiles)}"))
    problem = metric_problem(exp, metric)
    if problem:
        raise BadInput(f"--metric {metric}: {problem[0]}", hint=problem[1])
    if not (0 < alpha < 1):
        raise BadInput(f"--alpha {alpha}: must lie in (0, 1)")
    if budget is not None and not budget > 0:  # nan too: it ran a whole search with no budget at all
        raise BadInput(f"--budget {budget:g}: must be positive (units)")
    if parent is not None:
        try:
            registry.hypothesis(parent)
        except BadInput as exc:  # it said only "no hypothesis 'x'", not which flag named it
            raise BadInput(f"--parent {parent}: {exc.message}", hint=exc.hint) from None
    g, b = _assignments(exp, parse_assignments(good, "--good"), "--good"), _assignments(
        exp, parse_assignments(bad, "--bad"), "--bad")
    defaults = dict(exp.defaults())
    g_full, b_full = {**defaults, **g}, {**defaults, **b}
    changes = tuple(v for v in exp.variables if g_full.get(v) != b_full.get(v))
    if not changes:
        raise BadInput("--good and --bad give the same configuration: nothing to isolate")
    named = set(g) | set(b)
    hold = {v: g_full[v] for v in exp.variables if v in named and v not in changes}
    _register_secrets(exp, g_full, b_full)
    return IsolateSpec(experiment=experiment, good=g_full, bad=b_full, changes=changes, hold=hold, metric=metric,
                       region=parse_region(region, proportion=True), profile=profile, alpha=alpha,
                       budget=float(budget) if budget else DEFAULT_BUDGET,
                       seed=int(seed) if seed is not None else int.from_bytes(uuid.uuid4().bytes[:3], "big"),
                       search_id=uuid.uuid4().hex[:10], parent=parent)


def check_target(spec: IsolateSpec, registry: "Registry", settings: Settings | None = None) -> None:
    """Refuse, before the store is opened or any probe runs, a profile that cannot run here: its templates, and
    what this machine lacks to reach its target (runner.execute.check_target_here, which `prepare` applies)."""
    from workbench.runner.execute import RunOptions, prepare

    root = root_hypothesis(spec)
    reg = replace(registry, hypotheses=[*registry.hypotheses, root])
    opts = RunOptions(target=spec.profile, replicates=1, sequential=True, seed=spec.probe_seed(0), show_progress=False)
    prepare(reg, root.id, opts, sim_dir=(settings or Settings()).sim_dir)


def _register_secrets(exp: Any, *configs: dict[str, str]) -> None:
    """Secret variables' values are masked wherever wb shows them: in a refused --resume's differences and in
    the command that resumes a stopped search, too."""
    from workbench.secrets import register

    names = [n for n, v in exp.variables.items() if v.secret]
    register(values=[c.get(n) for c in configs for n in names], names=names)


def _assignments(exp: Any, values: dict[str, str], flag: str) -> dict[str, str]:
    out = {}
    for name, value in values.items():
        if name not in exp.variables:
            raise BadInput(f"{flag} {name}: experiment {exp.id!r} has no variable {name!r}",
                           hint=did_you_mean(name, exp.variables, f"variables: {', '.join(exp.variables)}"))
        if exp.variables[name].per_replicate:
            raise BadInput(f"{flag} {name}={value}: {PER_REPLICATE.format(name=name)}")
        try:
            out[name] = exp.variables[name].check(value)
        except ValueError as exc:
            raise BadInput(f"{flag} {name}={value}: {exc}", hint=given_value_hint(exc, f"{flag} {name}")) from None
    return out


@dataclass(frozen=True)
class WriteRefused:
    """--write refused after the search ran (hypotheses.yaml edited meanwhile so that the result would not
    validate, or not writable): why, naming the file and line, and the YAML that was not appended."""
    reason: str
    where: str | None
    yaml: str


@dataclass(frozen=True)
class IsolateOutcome:
    spec: IsolateSpec
    result: SearchResult
    record: dict[str, Any]
    written: str | None = None
    write_refused: WriteRefused | None = None

    @property
    def failed_runs(self) -> dict[int, int]:
        """Runs that ended without measuring, by probe index (probes with none left out): the search is
        recorded, but a probe that lost runs to failures is a failure while running, as in `wb hypothesis run`."""
        counts = {p.request.index: int(p.result.ref.get("failed_runs") or 0) for p in self.result.probes}
        return {i: n for i, n in counts.items() if n}


def search_record(spec: IsolateSpec, result: SearchResult, *, prior: PriorAttempt | None = None,
                  pending: dict[str, Any] | None = None) -> dict[str, Any]:
    """The search as stored and printed. `prior`: the attempt this one resumed; `pending`: the request of
    the probe in flight when the search stopped (what a `--resume` continues)."""
    probes = []
    for p in result.probes:
        d = p.to_dict()
        d["hypothesis_id"] = spec.probe_id(p.request.index)
        d["config"] = spec.arm(p.request.applied)
        probes.append(d)
    res = result.to_dict()
    res["probes"] = probes
    res["budget"] = None if math.isinf(result.budget) else result.budget
    key = {k: v for k, v in search_key(spec).items() if k not in ("alpha", "budget")}  # the result holds those
    return {**key, "result": res, "pending": pending, "resume": _resume_summary(prior, probes)}


def _resume_summary(prior: PriorAttempt | None, probes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Which probes a resumed search read back from the earlier attempt and which it ran (execution ids)."""
    if prior is None:
        return None
    by = {how: [{"probe": p["index"], "execution_id": p["ref"].get("execution_id")}
                for p in probes if p["ref"].get("how") == how] for how in ("reused", "continued", "ran")}
    return {"from_attempt": prior.created_at, "from_status": prior.status, **by}


def attach_prior(spec: IsolateSpec, registry: "Registry", store: "Store", *, seed_given: bool, parent_given: bool,
                 settings: Settings | None = None) -> tuple[IsolateSpec, PriorAttempt]:
    """For `--resume`: the spec that continues the earlier attempt of this search, and that attempt; bad input
    (nothing run) when there is none, or when what a reused probe ran under has changed since."""
    spec, prior = find_attempt(store, spec, seed_given=seed_given, parent_given=parent_given)
    check_unchanged(spec, registry, store, prior, sim_dir=(settings or Settings()).sim_dir)
    return spec, prior


def run_isolate(spec: IsolateSpec, registry: "Registry", store: "Store", *, settings: Settings | None = None,
                write: bool = False, show_progress: bool = True, prior: PriorAttempt | None = None) -> IsolateOutcome:
    """Search, probing on the experiment's target; the search is recorded even when a probe fails or is stopped,
    and the error then says the command that resumes it.

    `settings` gives the sim folder and the artifacts folder the probes' executions use; `prior`, the
    earlier attempt of this search whose probes are reused (see `workbench.isolate.resume`)."""
    settings = settings or Settings()
    resume = resume_command(spec, settings, write, store=store, root=registry.root)
    oracle = RunnerOracle(spec, registry, store, settings, show_progress=show_progress, prior=prior, resume=resume)
    from workbench.runner.execute import RunInterrupted
    from workbench.store.engine import interrupted_query

    try:
        result = isolate(list(spec.changes), oracle, alpha=spec.alpha, budget=spec.budget)
    except WbError as exc:
        from workbench.runner.lock import TargetRefused

        if isinstance(exc, (BadInput, TargetRefused)) and not _ran_any(oracle):
            raise  # refused before any probe touched the target: no attempt to record (a resume would pick it)
        _record_partial(spec, oracle, store, prior)
        if not isinstance(exc, BadInput):  # a probe failed or was stopped: the search can go on from here
            exc.hint = _resume_hint(exc.hint, resume, len(oracle.results))
        if isinstance(exc, TargetRefused):  # its exit 2 says nothing ran; probes before it did, and were recorded
            from workbench.errors import RunFailure

            raise RunFailure(exc.message, hint=exc.hint) from exc
        raise
    except (KeyboardInterrupt, Exception) as exc:  # Ctrl-C between the probes, or reaching a store query
        if not interrupted_query(exc):
            raise
        _record_partial(spec, oracle, store, prior)
        raise RunInterrupted("the search was interrupted between its probes; the target is as it was before them",
                             hint=_resume_hint(None, resume,
                                               len(oracle.results))) from None
    record = search_record(spec, result, prior=prior)
    record_search(store, spec, record)
    written, refused = _write(Path(registry.root), generated_hypotheses(spec, result)) if write else (None, None)
    return IsolateOutcome(spec, result, record, written, refused)


def _write(root: Path, hypotheses: list[Any]) -> tuple[str | None, WriteRefused | None]:
    """--write, once the search is recorded: a refusal leaves the file as it was and the search recorded, and
    is returned (not raised as bad input: the probes ran) with the YAML to append by hand once the file is fixed."""
    from workbench.registry.folder import HYPOTHESES_FILE

    try:
        return str(append_to_registry(root, hypotheses)), None
    except BadInput as exc:
        reason, where = exc.message, exc.where
    except OSError as exc:
        reason, where = f"{root / HYPOTHESES_FILE}: {exc.strerror or exc}", str(root / HYPOTHESES_FILE)
    return None, WriteRefused(reason, where, registry_block(hypotheses))


def _ran_any(oracle: RunnerOracle) -> bool:
    """Did this attempt run a probe (not one read back)? Bad input or a busy target before that leaves the
    store as it was, so a `--resume` still finds the earlier attempt as it left it."""
    return any(r.ref.get("how") != "reused" for _, r in oracle.results)


def _resume_hint(hint: str | None, command: str, decided: int) -> str:
    """How to resume; `decided`: the probes decided so far (none: there is nothing kept to speak of)."""
    lead = f"{hint}\n" if hint else ""
    from workbench.runner.takeover import continue_with

    if not decided:
        return f"{lead}no probe was decided yet; " + continue_with(command, "the search resumes with")
    return (f"{lead}the probes decided so far stay recorded and are not run again when "
            + continue_with(command, "the search resumes with"))


def _record_partial(spec: IsolateSpec, oracle: RunnerOracle, store: "Store", prior: PriorAttempt | None) -> None:
    from workbench.isolate.search import METHOD, Probe, SearchResult

    probes = tuple(Probe(r, res) for r, res in oracle.results)
    partial = SearchResult(spec.changes, "interrupted", None, (), spec.changes, probes,
                           sum(p.result.units for p in probes), spec.alpha, sum(p.request.alpha for p in probes),
                           spec.budget, METHOD,
                           "the search stopped before it finished (a probe failed or was interrupted); "
                           "its probes so far are recorded")
    pending = plain_request(oracle.current) if oracle.current is not None else None
    record_search(store, spec, search_record(spec, partial, prior=prior, pending=pending))


def generated_hypotheses(spec: IsolateSpec, result: SearchResult) -> list[Any]:
    """The root and one hypothesis per probe, with their verdicts as status (for --write)."""
    from workbench.isolate.adapter import VERDICT_OF

    status = ROOT_VERDICT.get(result.status, "inconclusive")
    out = [root_hypothesis(spec, status=status, verdict=result.status)]
    for p in result.probes:
        parent = spec.root_id if p.request.parent is None else spec.probe_id(p.request.parent)
        v = VERDICT_OF[p.result.outcome]
        out.append(probe_hypothesis(spec, p.request, parent, status=v, verdict=p.result.outcome))
    return out
