"""`--resume`: find the interrupted execution, and refuse it when its definition changed since.

An execution is one experiment: its runs are pooled into one verdict. Resuming it after the hypothesis
or the experiment was edited would mix two definitions in one execution (runs of the old arms and of
the new ones, judged by whichever predictions hold now), so a resume first compares what decides the
runs and the verdict with what the execution recorded when it started: each arm's variables, each
arm's rendered config, the hypothesis's arms, holds, predictions, guards and design, and the
experiment's variables, unit, metrics, design and the profile in use. Prose (claims, notes,
descriptions, a prediction's `why`) may change. Any other difference is refused with what changed;
the way on is a fresh run, which records the new definition as a new execution.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

from workbench.analysis import display
from workbench.errors import BadInput

if TYPE_CHECKING:
    from workbench.registry.folder import Registry
    from workbench.runner.plan import Plan
    from workbench.runner.prepare import Prepared
    from workbench.store.engine import Store
    from workbench.store.entities import ExecutionRecord

RESUMABLE = ("interrupted", "failed", "running")
PROSE = frozenset({"claim", "notes", "falsified_if", "assumptions", "status", "generated", "parent", "why",
                   "description"})
HYPOTHESIS_KEYS = ("experiment", "kind", "isolates", "arms", "hold", "predicts", "requires", "probe", "design")
EXPERIMENT_KEYS = ("variables", "unit", "metrics", "design")
SHOWN = 5  # differences named in the error; the rest are counted


def find_resumable(store: "Store", hypothesis_id: str) -> "ExecutionRecord | None":
    """The newest stopped execution, unless a finished one came after it: that one's verdict is the
    hypothesis's status, and resuming an older execution would put a verdict of older runs over it. Refused
    executions (nothing ran) are passed over."""
    return newest_resumable(store.executions(hypothesis_id=hypothesis_id), lambda ex: ex.status)


_E = TypeVar("_E")


def newest_resumable(executions: Sequence[_E], status: Callable[[_E], Any]) -> _E | None:
    """`find_resumable`'s rule over one hypothesis's `executions` (oldest first), each read by `status`: the
    newest stopped one, None where a finished one came after it (or none stopped)."""
    for ex in reversed(executions):
        if status(ex) in RESUMABLE:
            return ex
        if status(ex) == "done":
            return None
    return None


def nothing_to_resume(store: "Store", hypothesis_id: str) -> BadInput:
    """Why --resume found nothing, naming the stopped executions a later finished one superseded (the store
    keeps their status, how they ended; superseded is what `find_resumable` reads from the order)."""
    start = f"start one with: wb hypothesis run {hypothesis_id}"
    executions = store.executions(hypothesis_id=hypothesis_id)
    stopped = [ex for ex in executions if ex.status in RESUMABLE]
    if not stopped:
        return BadInput(f"no interrupted execution of {hypothesis_id!r} to resume", hint=start)
    done = [ex.id for ex in executions if ex.status == "done"]
    named = [f"{ex.id} ({ex.status}, superseded by execution {min(d for d in done if d > ex.id)})"
             for ex in stopped[-SHOWN:]]
    more = f" and {len(stopped) - SHOWN} older" if len(stopped) > SHOWN else ""
    return BadInput(f"no execution of {hypothesis_id!r} to resume: execution {', '.join(named)}{more} stopped, "
                    "but a later execution finished, and --resume continues only a stopped execution no finished "
                    "one followed",
                    hint=f"the finished execution's verdict stands (resuming an older one would put that one's "
                         f"verdict over it); to measure again, {start}")


def resume(registry: "Registry", store: "Store", hypothesis_id: str, sets: dict[str, str],
           given: dict[str, Any] | None = None) -> tuple["Prepared", "Plan", "ExecutionRecord"]:
    """The interrupted execution, resolved again with its own profile, mode and --set values (`sets`, the
    --set values given now, must be none or those). `given`: the other flags of the command, by flag name
    (None or False: not given); each must be what the execution was started with."""
    from workbench.runner.plan import Plan
    from workbench.runner.prepare import resolve

    prior = find_resumable(store, hypothesis_id)
    if prior is None:
        raise nothing_to_resume(store, hypothesis_id)
    _refuse_anothers(registry.root, prior)
    saved = prior.plan or {}
    overrides = _resumed_overrides(prior, saved.get("overrides") or {}, sets)
    plan = Plan.from_dict(saved["plan"])
    _refuse_other_flags(prior, plan, given or {})
    p = resolve(registry, hypothesis_id, profile=prior.profile, replicates=None, overrides=overrides,
                sequential=prior.mode == "sequential", aa=prior.mode == "aa", seed=None)
    p.max_replicates = int(saved.get("max_replicates", plan.replicates))
    return p, plan, prior


def _resumed_overrides(prior: "ExecutionRecord", saved: dict[str, str], sets: dict[str, str]) -> dict[str, str]:
    """The --set values the execution goes on with: its own. A secret one is stored masked, so it must be
    given again (`--resume --set NAME=VALUE`); whether it is the same value is checked by the rendered
    configs' hashes (`changes_since`), which were taken with the real one. Any other --set must repeat its
    recorded value."""
    from workbench.secrets import MASK

    masked = [k for k, v in saved.items() if MASK in str(v)]
    others = {k: v for k, v in sets.items() if k not in masked}
    if others and others != {k: v for k, v in saved.items() if k in others}:
        shown = {k: v for k, v in saved.items() if k not in masked} or "none"
        raise BadInput("--resume continues the interrupted execution with its own --set values",
                       hint=f"it used {shown}; drop --set or start afresh")
    missing = [k for k in masked if k not in sets]
    if missing:
        given = " ".join(f"--set {k}=VALUE" for k in missing)
        raise BadInput(f"--resume: execution {prior.id} was started with the secret --set {', '.join(missing)}, "
                       "whose value is not stored. Nothing was run",
                       hint=f"give it again, the same value: wb hypothesis run {prior.hypothesis_id} --resume {given}")
    return {**saved, **{k: sets[k] for k in masked}}


def _refuse_anothers(root: Any, prior: "ExecutionRecord") -> None:
    """An execution another person started is theirs to resume: the runs a resume adds are recorded under the
    execution, with its person and host, as if they had made them. One recorded without a person (an older
    store) is anyone's."""
    from pathlib import Path

    from workbench.team.identity import current_person

    if not prior.user_name:
        return
    me = current_person(Path(root))
    if me.name.strip().casefold() == prior.user_name.strip().casefold():
        return
    where = f" on {prior.host}" if prior.host else ""
    raise BadInput(f"--resume: execution {prior.id} of {prior.hypothesis_id!r} was started by "
                   f"{prior.user_name}{where}; "
                   f"you are {me.describe()}, and the runs a resume adds would be recorded as theirs. Nothing was run",
                   hint=f"ask {prior.user_name} to resume it, or start your own execution: "
                        f"wb hypothesis run {prior.hypothesis_id}")


def _refuse_other_flags(prior: "ExecutionRecord", plan: "Plan", given: dict[str, Any]) -> None:
    """A flag given with --resume that asks for another profile, plan or mode than the execution's own is
    refused (it would otherwise be dropped without a word); one that repeats the recorded value is fine."""
    recorded = {"--target": prior.profile, "--replicates": plan.replicates, "--seed": plan.seed,
                "--sequential": prior.mode == "sequential", "--aa": prior.mode == "aa"}
    for flag, value in given.items():
        if value is None or value is False or value == recorded.get(flag, value):
            continue
        shown = flag if value is True else f"{flag} {value}"
        was = {"--target": f"on profile {prior.profile!r}",
               "--replicates": f"with {display.count(plan.replicates, 'replicate')}",
               "--seed": f"with seed {plan.seed}"}.get(flag, f"in {prior.mode} mode")
        raise BadInput(f"{shown}: --resume continues execution {prior.id} as it was started, {was}",
                       hint=f"drop {flag} to resume it, or start a fresh execution with it (without --resume)")


def rendered_hashes(p: "Prepared") -> dict[str, str]:
    """Each arm's rendered config by sha256: recorded when an execution starts, compared on resume."""
    return {arm: hashlib.sha256(text.encode("utf-8")).hexdigest() for arm, text in p.rendered.items()}


def refuse_if_changed(store: "Store", prior: "ExecutionRecord", p: "Prepared") -> None:
    """BadInput naming what changed since `prior` started (call after preflight rendered `p`'s configs)."""
    changes = changes_since(store, prior, p)
    if not changes:
        return
    hid = p.hypothesis.id
    more = f" (and {len(changes) - SHOWN} more)" if len(changes) > SHOWN else ""
    raise BadInput(
        f"--resume: execution {prior.id} of {hid!r} was started with another definition; changed since: "
        + "; ".join(changes[:SHOWN]) + more + ". Nothing was run",
        hint=f"undo the edit to resume it, or start a fresh execution with the new definition: "
             f"wb hypothesis run {hid}")


def changes_since(store: "Store", prior: "ExecutionRecord", p: "Prepared") -> list[str]:
    from workbench.secrets import redact

    saved = prior.plan or {}
    out: list[str] = []
    secret = {n for n, spec in p.experiment.variables.items() if spec.secret}
    if "arms" in saved and list(saved["arms"]) != list(p.arms):
        out.append(f"arms {_show(saved['arms'])} -> {_show(p.arms)}")
    now = redact(p.assignments)  # the store keeps secrets redacted: compare like with like
    for arm, before in (saved.get("assignments") or {}).items():
        for name, old, new in _pairs(before, now.get(arm, {})):
            shown = "" if name in secret else f" {_show(old)} -> {_show(new)}"
            out.append(f"arm {arm}: {name}{shown}")
    hashes = saved.get("rendered_sha256")
    if hashes is not None:
        current = rendered_hashes(p)
        out += [f"the rendered config of arm {arm}" for arm in hashes if current.get(arm) != hashes[arm]]
    hyp_body, exp_body = store.execution_definitions(prior.id)
    if hyp_body is not None:
        now_h = redact(p.hypothesis.model_dump(mode="json"))
        out += [f"hypothesis {d}" for k in HYPOTHESIS_KEYS for d in _diff(hyp_body.get(k), now_h.get(k), k, secret)]
    if exp_body is not None:
        now_e = redact(p.experiment.model_dump(mode="json"))
        for k in EXPERIMENT_KEYS:
            out += [f"experiment {d}" for d in _diff(exp_body.get(k), now_e.get(k), k, secret)]
        key = f"profiles.{p.profile_name}"
        before = (exp_body.get("profiles") or {}).get(p.profile_name)
        out += [f"experiment {d}" for d in _diff(before, now_e["profiles"].get(p.profile_name), key, secret,
                                                    values=False)]
    return list(dict.fromkeys(out))


def _pairs(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    return [(k, old.get(k), new.get(k)) for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]


def _diff(old: Any, new: Any, path: str, secret: set[str], *, values: bool = True) -> list[str]:
    """Dotted paths where `old` and `new` differ, prose left out. Values are shown for short scalars of
    non-secret paths (`values=False`: never, for a profile, whose env and commands may carry secrets)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [d for k in sorted(set(old) | set(new)) if k not in PROSE
                for d in _diff(old.get(k), new.get(k), f"{path}.{k}", secret, values=values)]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new)) for d in _diff(a, b, f"{path}[{i}]", secret, values=values)]
    if old == new:
        return []
    hide = not values or any(part in secret for part in path.replace("[", ".").split("."))
    if hide or not all(isinstance(v, (str, int, float, bool, type(None))) for v in (old, new)):
        return [f"{path} changed"]
    return [f"{path} {_show(old)} -> {_show(new)}"]


def _show(value: Any) -> str:
    text = "none" if value is None else (repr(value) if isinstance(value, str) else str(value))
    return text if len(text) <= 60 else text[:57] + "..."
