"""The experiment loop: plan, snapshot the target, run blocks (hosts in parallel), record, always restore.

Ctrl-C, SIGTERM and SIGHUP (a closed terminal, a dropped ssh session) cancel the loop; the run in flight is
recorded `interrupted`, the target is restored in `finally`, and `--resume` later continues the same execution
without redoing finished runs.
"""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator, Protocol

from workbench.errors import BadInput, RestoreFailed, WbError
from workbench.registry.folder import Registry
from workbench.registry.timeouts import timeouts
from workbench.runner.harness import Harness
from workbench.runner.lifecycle import execute_run, wait_healthy
from workbench.runner.outcome import RunOutcome
from workbench.runner.lock import note_runner
from workbench.runner.plan import Plan, PlannedRun, make_plan, per_replicate_names
from workbench.runner.prepare import Prepared, arms_config_diff, preflight, preview_values, resolve
from workbench.runner import progress as progress_mod
from workbench.runner.progress import RunProgress
from workbench.runner.record import Recorder, patient
from workbench.runner.render import render_command, render_text
from workbench.runner.restore import Snapshot, discard_snapshots, restore_host, restores_failed
from workbench.runner.setup_failed import setup_failed_everywhere
from workbench.runner.stopping import (STOP_SIGNALS, HeldStops, RunInterrupted, close_start_window, is_a_stop,
                                      not_started, signals_held, stop_signals_raised, stop_signum,
                                      unblock_stops)
from workbench.runner.summary import ExecutionResult, result
from workbench.runner.takeover import (FINISHED, config_paths, continue_with, ended_runs, locks_kept, resume_command,
                                      take_target)
from workbench.runner.targets.base import Target
from workbench.store.engine import Store

if TYPE_CHECKING:
    from workbench.runner.lock import TargetLock
from workbench.store.entities import ExecutionRecord


class Stopping(Protocol):
    """What a stopping rule answers after a replicate block (`SequentialDecision` is one)."""

    stop: bool
    reasoning: str


# A caller's own stopping rule for a sequential execution: (store, execution id, the replicate whose block was just
# run) -> stop or go on. It judges the runs through that replicate: a resumed execution looks again after each block
# its killed runner had run, with the runs of later blocks already stored.
StopRule = Callable[[Store, int, int], Stopping]


@dataclass
class State:
    prepared: Prepared
    store: Store
    execution_id: int
    plan: Plan
    done: set[int]
    exec_dir: Path
    artifacts_root: Path
    progress: RunProgress
    fault: Callable[[str, PlannedRun], Awaitable[None]] | None = None
    run_ids: list[int] = field(default_factory=list)
    outcomes: list[tuple[int, PlannedRun, RunOutcome]] = field(default_factory=list)
    # Each host's failed restore, in the order tried (`restores_failed` tells them, one block a host).
    restore_failures: list[RestoreFailed] = field(default_factory=list)
    restore_failed: set[str] = field(default_factory=set)  # hosts whose restore failed: their lock is left marked
    stop_reason: str | None = None
    attrition_held: list[int] = field(default_factory=list)  # the looks the attrition check held (stop line)
    invalid_by: tuple[str, ...] | None = None  # the stop's verdict is invalid: the checks that made it so
    target_desc: str = ""
    where: Callable[[str], str] = str  # a run's host as shown (Target.where)
    timing: dict[str, float] = field(default_factory=dict)
    recorder: Recorder | None = None
    execution_uuid: str = ""
    resumed: bool = False
    decide: StopRule | None = None  # replaces the hypothesis's own sequential test (see `execute`)
    stopping: bool = False  # a stop signal came: the restore does not wait for health afterwards
    restored: bool = False  # every host's restore was done: its snapshot is needed no more
    began: bool = False  # a run of this attempt started: it may have written its arm's config
    # No run began and wb started nothing: the target was left alone, no restore needed. The teardown says; until it
    # ran (a stop before the loop took the stop signals over) nothing was touched.
    untouched: bool = True
    # The target's lock was held and its snapshot taken: from then on it is restored. A stop before (a resume's
    # included, whose target may hold the config its killed runner left) leaves it as it was, not restored.
    taken: bool = False
    # Stopped again while the target was taken or restored (a lock, a snapshot or a restore that hangs, say): what was
    # given up, "taking" or "restore", as a kill would leave it, its lock and saved original kept for the resume that
    # restores the target; None while nothing was.
    abandoned: str | None = None
    # Each host's lock file, as messages name it ("PATH on HOST"): said when the taking is abandoned.
    lock_files: list[str] = field(default_factory=list)
    # The lock was taken over from another execution (its runner died, or its restore failed): the service may still
    # run an arm's config though the file holds the original, so the restore restarts it even if no run began.
    took_over: bool = False
    restore_notes: list[str] = field(default_factory=list)  # what the restore did, host by host, then the teardown
    # What the execution's end could not undo (its pdsim not stopped, a host's lock not removed): said after the
    # restore's notes and recorded with the execution, since the target may be left running or locked.
    left: list[str] = field(default_factory=list)
    restore_line: str | None = None  # those notes as one line (`_restore_line`): the result's `restore`
    # Who started the execution on whose behalf (`RunOptions.origin`; a resume's, else the one its plan kept): a
    # probe's names its search and the command that resumes that search, which the target lock records.
    origin: dict[str, Any] | None = None
    # The stop signals once the loop gives them back, held until the execution's end is recorded (`execute`).
    stops: HeldStops = field(default_factory=HeldStops)


def make_target(p: Prepared, sim_dir: Path | None = None) -> Target:
    """The profile's target. The kinds are the registry's; each class builds itself from the profile."""
    from workbench.runner.targets.kernel import KernelTarget
    from workbench.runner.targets.local import LocalTarget
    from workbench.runner.targets.sim import SimTarget, default_sim_dir
    from workbench.runner.targets.ssh import SshTarget

    builders: dict[str, Callable[[], Target]] = {
        "ssh": lambda: SshTarget(p.profile.target),
        "sim": lambda: SimTarget(sim_dir=default_sim_dir(p.root, p.profile.options, sim_dir),
                                 options=dict(p.profile.options), runs_restart=bool(p.profile.restart)),
        "kernel": lambda: KernelTarget(dict(p.profile.options)),
        "local": lambda: LocalTarget(p.profile.target.hosts or None, p.profile.target.ca_file),
    }
    return builders[p.profile.target.kind]()


# ----------------------------------------------------------------------------- the loop
def _next_on_host(state: State, pr: PlannedRun) -> PlannedRun | None:
    later = [r for r in state.plan.runs if r.host == pr.host and r.order_index > pr.order_index
             and r.order_index not in state.done]
    return later[0] if later else None


async def _run_block(state: State, h: Harness, runs: list[PlannedRun]) -> None:
    p = state.prepared
    rec = state.recorder
    for pr in runs:
        if pr.order_index in state.done:
            continue
        variables = {**p.assignments[pr.arm], **pr.values}
        state.began = True
        run_id = await rec.start(pr)
        state.run_ids.append(run_id)

        def on_stage(r: PlannedRun, st: str, run_id: int = run_id) -> None:
            state.progress.stage(r, st, run_id)
            if st == "workload":
                nxt = _next_on_host(state, r)
                # Sequential mode may stop after this block: only a run of the same block is certain to follow.
                if nxt is not None and (p.mode != "sequential" or nxt.block == r.block):
                    rec.prefetch(nxt)

        h.on_stage = on_stage
        out = RunOutcome(status="interrupted", error="interrupted")
        try:
            await execute_run(h, pr, run_id, variables, out)
        finally:
            if out.status == "running":
                out.status = "failed"
            rec.end(run_id, out)
            if out.status in FINISHED:
                state.done.add(pr.order_index)
            state.outcomes.append((run_id, pr, out))
            # How a run that did not end ok ended is said once, on its progress line; an interrupted run's in the
            # summary that follows.
            state.progress.finished(pr.order_index, out.status, pr, run_id, out.describe())
        await rec.settle()  # the run is in the store before the next one starts
        broken = setup_failed_everywhere(state)
        if broken is not None:  # the deployment comes up in no arm: the rest of the plan would fail the same way
            raise broken


async def _run_plan(state: State, h: Harness) -> None:
    try:
        await _run_blocks(state, h)
    finally:
        await state.recorder.flush()


async def _run_blocks(state: State, h: Harness) -> None:
    p = state.prepared
    plan = state.plan
    hosts = plan.hosts
    blocks = sorted({r.block for r in plan.runs})
    for i in range(0, len(blocks), len(hosts)):
        chunk = blocks[i:i + len(hosts)]
        tasks = [asyncio.ensure_future(_run_block(state, h, plan.block_runs(b))) for b in chunk]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        if p.mode == "sequential" and all(r.order_index in state.done for r in plan.runs if r.block in chunk):
            await state.recorder.flush()
            # Over the runs up to this chunk: a resumed execution walks the chunks its killed runner had run, and
            # makes their looks again as they were, not each over every stored run.
            decision = _sequential_decision(state, max(r.replicate for r in plan.runs if r.block in chunk))
            if decision.stop:
                state.stop_reason = decision.reasoning
                return


def _sequential_decision(state: State, through_replicate: int) -> Stopping:
    from workbench.analysis.stored import sequential_decision

    if state.decide is not None:
        return state.decide(state.store, state.execution_id, through_replicate)
    p = state.prepared
    decision = sequential_decision(state.store, p.registry, p.hypothesis.id, execution_id=state.execution_id,
                                   max_replicates=p.max_replicates, through_replicate=through_replicate)
    state.progress.looked(decision.look)
    if decision.stop and decision.verdict == "invalid":  # no check held it: one made it invalid, and it stops
        state.invalid_by = decision.invalid_by
    elif decision.look is not None and decision.look.held_by("attrition"):
        state.attrition_held.append(decision.look.look)
    return decision


def _restart_commands(p: Prepared, context: dict[str, str], host: str) -> list[str]:
    values = preview_values(p, p.arms[0], context, host)
    return [render_command(c, values, where=f"restart[{i}]") for i, c in enumerate(p.profile.restart)]


async def _restore(state: State, target: Target, snaps: dict[str, Snapshot], context: dict[str, str],
                   env: dict[str, str]) -> None:
    p = state.prepared
    started_here = target.started_here
    for host, snap in snaps.items():
        restart = _restart_commands(p, context, host)
        values = preview_values(p, p.arms[0], context, host)
        urls = [render_text(u, values) for u in p.profile.health.urls] if p.profile.health else []

        health: list[str] = []

        async def healthy(_host: str = host, urls: list[str] = urls) -> None:
            if not urls or started_here:
                return
            if state.stopping:
                health.append("not waited for healthy (stopped by a signal)")
                # Stopped by a signal: a supervisor's SIGKILL may follow soon. The config is back and the
                # service restarted; its health is for the user to look at, not a reason to linger.
                state.progress.log(f"not waiting for {target.describe(_host)} to report healthy after the restore "
                                   f"(stopped by a signal): check {', '.join(urls)}")
            else:
                hp = p.profile.health
                problem = await wait_healthy(target, _host, urls, hp.attempts, hp.interval_s, hp.timeout_s)
                health.append("not healthy (see the warning above)" if problem else "healthy")
                if problem:
                    state.progress.log(f"warning: after restoring, {target.describe(_host)}: {problem}")
        secrets = {n: str(values[n]) for n, spec in p.experiment.variables.items()
                   if getattr(spec, "secret", False) and values.get(n) not in (None, "")}
        try:
            await restore_host(target, snap, restart, env=env, restart_timeout=timeouts(p.profile.options).restart_s,
                               do_restart=not started_here and bool(restart), after=healthy, secrets=secrets)
            state.restore_notes.append(_restored(target, snap, len(restart) if not started_here else 0, health,
                                                 several=len(snaps) > 1))
        except RestoreFailed as exc:
            # Kept at once, each host's after the last: a second stop may abandon the hosts after this one.
            state.restore_failures.append(exc)
            state.restore_failed.add(host)
    state.restored = not state.restore_failed


def _restored(target: Target, snap: Snapshot, restarts: int, health: list[str], *, several: bool) -> str:
    """What one host's restore did, in a few words: "/srv/serve.conf put back byte for byte, restarted (1
    command), healthy"."""
    where = f"{target.describe(snap.host)}: " if several else ""
    what = (f"{snap.path} removed (it did not exist before)" if snap.data is None
            else f"{snap.path} put back byte for byte")
    if restarts:
        what += f", restarted ({restarts} command{'s' if restarts > 1 else ''})"
    return where + what + "".join(f", {h}" for h in health)


async def _teardown(state: State, target: Target) -> None:
    """Stop the deployment wb started for the execution (pdsim), and note it beside the restore."""
    try:
        ours, state.untouched = target.started_here, _untouched(state, target)
        problem = await target.teardown()
        if problem:
            state.progress.log(f"warning: {problem}")
            state.left.append(_not_stopped(target, problem))
        elif ours:  # a resume may stop the pdsim its killed runner left up: down before the execution, not the resume
            before = "before the execution began" if state.resumed else "before"
            state.restore_notes.append(f"{target.where('local')} stopped (it was down {before})")
    except WbError as exc:  # the restore already happened; stopping our own pdsim is best effort
        state.progress.log(f"warning: stopping the deployment failed: {exc.message}")
        state.left.append(_not_stopped(target, exc.message))


def _not_stopped(target: Target, why: str) -> str:
    """The note of a deployment wb started and could not stop."""
    from workbench.runner.restore import one_line

    return (f"{target.where('local')} was NOT stopped ({one_line(why)}): it may still be running, though it was down "
            "before the execution; stop it by hand once the cause is fixed")


def _untouched(state: State, target: Target) -> bool:
    """No run of this attempt began and wb started no deployment: nothing on the target was changed. (A resume's
    target may hold the arm a killed runner left, and one whose lock was taken over may run the arm its dead
    runner wrote, or its failed restore did not restart away from: both are restored.)"""
    return not (state.began or state.resumed or state.took_over or target.started_here)


def _restore_line(state: State) -> str | None:
    """What the restore did, in one line: "restored: /srv/serve.conf put back byte for byte, restarted (1 command),
    healthy"; "the target was not touched (no run began): nothing to restore"; then what the end left (`State.left`:
    a lock not released, a pdsim not stopped). Only that, or None, where nothing was snapshotted (the target
    unreachable, or one with no config file) or the restore failed (its error says what to do)."""
    if state.untouched:
        return "; ".join(["the target was not touched (no run began): nothing to restore", *state.left])
    if state.restore_failures or state.abandoned or not state.restore_notes:
        return "; ".join(state.left) or None  # the restore's error says the rest
    return "restored: " + "; ".join(state.restore_notes + state.left)


def _remove_handler(loop: asyncio.AbstractEventLoop, sig: int) -> None:
    try:
        loop.remove_signal_handler(sig)
    except (NotImplementedError, RuntimeError):
        pass


def _leave_terminal() -> None:
    """After SIGHUP the terminal is gone and writing to it fails (EIO): what the restore prints goes nowhere
    instead of ending it half-way. Output to a file or a pipe is kept."""
    progress_mod.to_devnull(ttys_only=True)


async def _set_up_and_run(state: State, target: Target, snaps: dict[str, Snapshot], context: dict[str, str],
                          env: dict[str, str]) -> None:
    """Set the target up (pdsim started where wb starts it), then run the plan."""
    p = state.prepared
    serve = Path(next(iter(snaps.values())).path) if snaps else Path(context.get("sim_dir", ".")) / "serve.sh"
    context.update(await target.setup(serve, env))
    remote_work = target.work_root(p.profile.options)
    h = Harness(root=p.root, experiment=p.experiment, hypothesis=p.hypothesis, profile_name=p.profile_name,
                profile=p.profile, target=target, context=context, env=env,
                config_template=p.config_template, artifacts_root=state.exec_dir, remote_work=remote_work,
                fault=state.fault, probe_targets=p.probe_targets,
                restart_timeout_s=timeouts(p.profile.options).restart_s, warn=state.progress.log)
    await _run_plan(state, h)


# A second stop abandons what a stop does not cut short (taking the target, its restore) only once that has run this
# long: two stops within it are a key's bounce or an impatient double Ctrl-C, not a decision to leave the target
# changed or locked, while a lock, a snapshot or a restore that hangs has hung for longer than this by the time
# anyone stops wb again.
ABANDON_GRACE_S = 3.0


@dataclass
class _OnStop:
    """The loop's handler of a stop signal. The first cancels the loop's task, except in a phase a stop does not cut
    ("taking": from the lock to the snapshot, cut short, a resume left its target with the config its killed runner
    wrote and no lock, and the next resume was refused; the stop waits for the snapshot, then the restore runs.
    "winding down": the restore and the teardown began; one cut short would leave an arm's config). In such a phase
    a second stop, once the phase has run `ABANDON_GRACE_S`, abandons it (one that hangs must have a way out),
    leaving what a kill leaves; one before is told that the phase goes on, and in how long a stop abandons it (told
    only "stop again", a user who did so at once saw the same line again and nothing abandoned)."""

    state: State
    task: "asyncio.Task[Any] | None"
    signalled: list[int] = field(default_factory=list)
    uncut: set[str] = field(default_factory=set)
    late: list[int] = field(default_factory=list)  # the stops within the phase not cut short
    began: float = 0.0  # when that phase began (`clock`)
    clock: Callable[[], float] = time.monotonic

    def enter(self, phase: str) -> None:
        """Begin a phase a stop does not cut short ("taking", "winding down"); its stops are counted afresh."""
        if phase not in self.uncut:
            self.uncut.add(phase)
            self.late.clear()
            self.began = self.clock()

    def __call__(self, sig: int) -> None:
        state = self.state
        state.stopping = True
        if sig == signal.SIGHUP:
            _leave_terminal()
        phase = "winding down" if "winding down" in self.uncut else "taking" if "taking" in self.uncut else None
        if not self.signalled and phase is None and self.task is not None:
            self.task.cancel()
        elif phase is not None and sig in STOP_SIGNALS:
            self.late.append(sig)
        self.signalled.append(sig)
        if state.abandoned:
            return
        left = ABANDON_GRACE_S - (self.clock() - self.began)  # until a stop abandons the phase
        if phase is not None and len(self.late) > 1 and left <= 0:
            self._abandon(phase)
        elif phase == "winding down" and self.late:
            state.progress.log(f"still restoring the target: stop again{_in(left)} to abandon the restore (the target "
                               "may then keep an arm's config)")
        elif phase == "taking" and len(self.late) > 1:
            state.progress.log(f"still taking the target: stop again{_in(left)} to abandon it (its lock may then be "
                               "left)")
        elif phase == "taking":  # not cut short: said, or the stop would seem unheard until the restore
            state.progress.log("taking the target first (its lock, what the stopped runner left, the saved "
                               "original); the restore follows" if state.resumed else
                               "taking the target first (its lock, the saved original); then wb stops")
        elif len(self.signalled) > 1:
            state.progress.log("restoring the target; wait for it")

    def _abandon(self, phase: str) -> None:
        """Give the phase up, as a kill would leave it: no restore, no teardown, the lock and the saved original
        kept for the resume that restores the target (`_close` says so)."""
        state = self.state
        state.abandoned, state.untouched = "taking" if phase == "taking" else "restore", False
        if phase == "taking":
            state.progress.log("abandoning the taking of the target: " + (
                "it may keep the config the stopped runner left" if state.resumed else "its config was not changed")
                + ", and its lock may be left (the error says how to free it)")
        else:
            state.progress.log("abandoning the restore: the target may keep an arm's config, and its lock is left "
                               "for the resume that restores it")
        if self.task is not None:
            self.task.cancel()


def _in(left: float) -> str:
    """When a stop abandons a phase that has `left` seconds of its grace to run: "" once it has run it, else " in
    2.4 s or later" (rounded up, so that a stop at the time said does abandon)."""
    import math

    return "" if left <= 0 else f" in {math.ceil(round(left * 10, 6)) / 10:.1f} s or later"


async def _main(state: State, target: Target) -> None:
    p = state.prepared
    loop = asyncio.get_running_loop()
    on_signal = _OnStop(state, asyncio.current_task())
    signalled, uncut = on_signal.signalled, on_signal.uncut

    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) is signal.SIG_IGN:  # nohup's SIGHUP: the run was asked to outlive the terminal
            continue
        try:
            loop.add_signal_handler(sig, on_signal, sig)
        except (NotImplementedError, RuntimeError):
            pass
    # The output's reader gone stops the run as SIGPIPE would end a shell's writer (progress.output_gone).
    progress_mod.on_output_gone = lambda: loop.call_soon_threadsafe(on_signal, signal.SIGPIPE)
    t0 = time.monotonic()
    context = dict(p.profile.context)
    env = {k: render_text(v, {**p.assignments[p.arms[0]], **context}, where=f"env.{k}")
           for k, v in p.profile.env.items()}
    from workbench.secrets import register, secret_env

    register(values=secret_env(env).values())
    snaps: dict[str, Snapshot] = {}
    lock: TargetLock | None = None
    try:
        target.check_tls()
        await target.open()
        context.update(target.context())
        paths = await config_paths(state, target, context)
        on_signal.enter("taking")
        try:
            lock, snaps = await take_target(state, target, paths)
            state.taken = True
        finally:
            uncut.discard("taking")
        try:  # from the snapshot on, the target is restored whatever happens (a signal while pdsim starts too)
            if not signalled:  # one while the target was taken: no run starts, the restore follows
                await _set_up_and_run(state, target, snaps, context, env)
        finally:
            on_signal.enter("winding down")
            if snaps and _untouched(state, target):
                # Nothing was written, restarted or started: putting the original back and restarting the service
                # would be the first change to it.
                state.restored = True
            elif snaps:
                await _restore(state, target, snaps, context, env)
    finally:
        on_signal.enter("winding down")
        try:
            if not state.abandoned:  # abandoned: left as a kill leaves it (its deployment, its lock)
                await _teardown(state, target)
                if lock is not None:
                    locks_kept(state, target, lock, await lock.release(restore_failed=state.restore_failed))
        except asyncio.CancelledError:
            if not state.abandoned:
                raise
        # After the lock's release: a runner killed before (or abandoned: its lock kept) leaves the snapshot to check.
        if state.restored and not state.abandoned:
            discard_snapshots(state.exec_dir)
        await target.close()
        progress_mod.on_output_gone = None
        state.stops.give_back(lambda sig: _remove_handler(loop, sig))  # held until the end is recorded
        wall = time.monotonic() - t0
        busy = max(target.clock.target_s.values(), default=0.0)
        state.timing = {"wall_s": wall, "target_s": busy, "overhead_s": max(wall - busy, 0.0),
                        "overhead_pct": 100.0 * max(wall - busy, 0.0) / wall if wall > 0 else 0.0}
        if signalled:
            raise RunInterrupted("interrupted", hint="", signum=signalled[0])


# ----------------------------------------------------------------------------- entry point
def _register_secrets(p: Prepared) -> None:
    """Secret variables' values as this execution assigns them (--set's, and a generated hypothesis's arms) are
    never stored or shown; what the files declare (defaults, holds, arms, secret-named env values) the registry
    registered as it was loaded (`secrets.register_registry`)."""
    from workbench.secrets import register

    names = [n for n, spec in p.experiment.variables.items() if spec.secret]
    values = [a.get(n) for a in p.assignments.values() for n in names] + [p.overrides.get(n) for n in names]
    register(values=values, names=names)


def artifacts_root(root: Path, configured: Path | None = None) -> Path:
    """The folder every execution's snapshots and run artifacts go under (`$WB_ARTIFACTS`, read by the
    settings, or .wb/artifacts in the workbench); the report embeds artifacts from here only."""
    return (configured or root / ".wb" / "artifacts").resolve()


@dataclass(frozen=True)
class RunOptions:
    """What `wb hypothesis run` was asked for."""

    target: str | None = None
    replicates: int | None = None
    sets: dict[str, str] = field(default_factory=dict)
    sequential: bool = False
    aa: bool = False
    resume: bool = False
    seed: int | None = None
    show_progress: bool = True
    # Who started the execution on whose behalf, kept with its plan: `wb isolate` puts its search's key here,
    # so a search killed in its first probe (no probe verdict yet) is still found by `wb isolate --resume`.
    origin: dict[str, Any] | None = None


def _open_execution(store: Store, p: Prepared, plan: Plan, target_desc: str,
                    prior: ExecutionRecord | None, origin: dict[str, Any] | None = None) -> tuple[int, str, set[int]]:
    """(execution id, execution UUID, order indexes already finished): a new execution, or the one being
    resumed. The UUID keys its snapshot and artifact folders (a row id is only unique in one store)."""
    from workbench import __version__
    from workbench.team.identity import provenance

    if prior is not None and prior.uuid:
        store.update_execution(prior.id, status="running", ended_at=None, error=None)
        return prior.id, prior.uuid, set(ended_runs(store, prior.id))
    exec_uuid = uuid.uuid4().hex
    if prior is not None:  # a store written before executions had keys; the migration normally fills them
        store.update_execution(prior.id, status="running", ended_at=None, error=None, uuid=exec_uuid)
        return prior.id, exec_uuid, set(ended_runs(store, prior.id))
    from workbench.runner.resume import rendered_hashes

    body = {"plan": plan.to_dict(), "assignments": p.assignments, "overrides": p.overrides,
            "max_replicates": p.max_replicates, "arms": p.arms, "rendered_sha256": rendered_hashes(p)}
    if origin:
        body["origin"] = origin
    execution_id = store.start_execution(
        hypothesis_id=p.hypothesis.id, hypothesis_body=p.hypothesis.model_dump(mode="json"),
        experiment_id=p.experiment.id, experiment_version=p.experiment.version,
        experiment_body=p.experiment.model_dump(mode="json"), profile=p.profile_name, target=target_desc,
        mode=p.mode, plan=body, overrides=p.overrides, config_diff=arms_config_diff(p), wb_version=__version__,
        uuid=exec_uuid, who=provenance(p.root, wb_version=__version__).columns())
    return execution_id, exec_uuid, set()


@contextmanager
def _stopped_while_opening(store: Store, launch: "Launch") -> Iterator[list[int]]:
    """Ctrl-C (or DuckDB's error for a query it ended), SIGTERM or SIGHUP (`stop_signals_raised`) from the
    execution's opening until the loop takes the stop signals over. Before its row is written it is `not_started`.
    Once written (its id appended to the list this yields) the row ends interrupted, as a later stop leaves it: a
    resumed one with the error and end it had, not "running" with its error wiped; and the stop says how to
    continue it. It exits 128 + the signal's number."""
    from datetime import datetime

    from workbench.store.models import utcnow

    opened: list[int] = []
    close_start_window()  # a stop is this block's to tell from here (the command's first moments are over)
    try:
        unblock_stops()  # one the process inherited blocked is seen from here (one pending is told as it lands)
        yield opened
    except (KeyboardInterrupt, Exception) as exc:
        if not is_a_stop(exc):
            raise
        p, prior, signum = launch.prepared, launch.prior, stop_signum(exc)
        if opened:
            error, ended = ("interrupted", None) if prior is None else (prior.error, prior.ended_at)
            at = datetime.fromisoformat(ended) if ended else utcnow()
            with signals_held():  # a second stop waits for the record
                patient(lambda: store.update_execution(opened[0], status="interrupted", ended_at=at, error=error))
        if prior is None and not opened:
            raise not_started(signum=signum) from None
        command = resume_command(store, p.root, p.hypothesis.id)
        if prior is not None:
            raise not_started(command, signum) from None
        raise RunInterrupted(f"interrupted before the first run of execution {opened[0]}: no run was started, and "
                             "the target was not touched", hint=continue_with(command), signum=signum,
                             resume=command) from None


def _run_main(state: State, target: Target) -> None:
    """`asyncio.run(_main(state, target))`, leaving no moment where a stop ends in Python's internals on stderr. The
    event loop and `_main`'s coroutine are made with the stop signals held: one landing while the loop was half made
    left it to fail in its `__del__` ("no attribute '_signal_handlers'") and the coroutine never awaited. A coroutine
    the loop never ran is closed; the signals are given back held before the loop is closed, as `_main` gives them."""
    runner, loop, main = asyncio.Runner(), None, None
    try:
        with signals_held():  # a stop meanwhile is raised here, once the loop is whole
            loop = runner.get_loop()
            main = _main(state, target)
        runner.run(main)
    finally:
        try:
            if loop is not None:
                state.stops.give_back(lambda sig: _remove_handler(loop, sig))
            runner.close()
        finally:
            if main is not None:
                main.close()  # a no-op for one the loop ran to its end


def _loop(state: State, target: Target) -> tuple[str, BaseException | None]:
    """Run the plan; (execution status, the error that ended it). The target is restored either way."""
    from workbench.runner.lock import TargetRefused

    try:
        _run_main(state, target)
    except (RunInterrupted, KeyboardInterrupt) as exc:
        return "interrupted", exc
    except TargetRefused as exc:
        # Nothing ran and the target was not touched: a fresh execution is "refused", which --resume passes
        # over (it would otherwise take it for the interrupted one the error names); a resumed one stays
        # as it was, to be resumed once the target is free. Either way no run was tried: no counts.
        state.progress.refused = True
        return ("interrupted" if state.resumed else "refused"), exc
    except Exception as exc:  # recorded as failed first; `_close` re-raises it
        return "failed", exc
    finally:
        state.recorder.close()
    return "done", None


def _close(state: State, status: str, error: BaseException | None) -> None:
    """Record how the execution ended, then raise what ended it: a known error as it is, an interrupt
    as RunInterrupted, and anything else (a bug) unchanged, with its traceback."""
    from workbench.store.models import utcnow

    failed = restores_failed(state.restore_failures) if state.restore_failures else None
    restore_error = failed.record() if failed else None
    if restore_error:
        status = "failed" if status == "done" else status
    msg = None if error is None else (error.message if isinstance(error, WbError)
                                      else "interrupted" if isinstance(error, KeyboardInterrupt)  # a StopSignal too
                                      else f"{type(error).__name__}: {error}")
    command = resume_command(state.store, state.prepared.root, state.prepared.hypothesis.id)
    if state.abandoned:  # before the restore's errors, whose last line is a command to paste whole
        msg = f"{msg or 'interrupted'}; {_abandoned(state, command)[2]}"
    if restore_error:
        msg = (msg + "\n" if msg else "") + restore_error
    if state.left:  # the target may be left running or locked: the record says so, whatever the status
        msg = "\n".join([*([msg] if msg else []), *state.left])
    patient(lambda: state.store.update_execution(state.execution_id, status=status, ended_at=utcnow(), error=msg))
    if failed and not state.abandoned:  # abandoned: the stop below says both
        raise failed  # each host's failure its own `Error:` line and `Hint:`
    if isinstance(error, (RunInterrupted, KeyboardInterrupt)):
        # The count is the progress line's own (the same runs, the same words), so the two never disagree.
        left, hint = "restored", continue_with(command)
        if state.abandoned:
            left, hint, _ = _abandoned(state, command)
            if restore_error:  # the hosts whose restore failed before the stop abandoned the others'
                hint = f"{restore_error}\n{hint}"
        elif state.untouched:
            left = "not touched"
        elif not state.taken:  # a resume stopped before it held the target: what its killed runner left stays
            left = ("not restored: the stop came before this runner had taken it, and it may still hold the config "
                    "the stopped execution's runner left")
            hint = (f"restore it by continuing: {command} (the original is put back when it ends, or when it is "
                    "stopped once it has taken the target)")
        if state.left and not state.progress.said_restored:  # what the end left, unsaid; the command stays last
            hint = "\n".join([*state.left, hint])
        raise RunInterrupted(f"interrupted after {state.progress.count_text()}; the target was {left}",
                             hint=hint, signum=getattr(error, "signum", signal.SIGINT),
                             partial=_recorded(state), resume=command)
    if status == "refused" and isinstance(error, WbError):
        # Kept for the record (who was kept off which target, by which execution, when); said here, since a
        # refusal of anything else writes nothing.
        note = (f"  (this attempt is recorded as execution {state.execution_id}, status refused: no run, no "
                "verdict; --resume passes over it)")
        error.hint = f"{error.hint}\n{note}" if error.hint else note.strip()
    if error is not None:
        if state.left and isinstance(error, WbError) and not state.progress.said_restored:
            # What the end left (a lock not released) is said by the restore's line; without one, by the error.
            error.hint = "\n".join([*([error.hint] if error.hint else []), *state.left])
        raise error


def _abandoned(state: State, command: str) -> tuple[str, str, str]:
    """What the phase a second stop abandoned (`State.abandoned`) left, as a kill leaves it: (the target's state as
    the stop says it, the hint, what the execution's recorded error adds). `command` resumes the execution."""
    if state.abandoned == "restore":
        return ("not restored: its restore was abandoned (stopped again while it ran), and it may still hold an arm's "
                "config", f"restore it by continuing: {command} (it puts the original back as it ends)",
                "the restore was abandoned: the target may still hold an arm's config")
    locks = ", ".join(state.lock_files)
    lock = f"its lock {locks} may still be held by this execution" if locks else "it holds no lock of wb's"
    if state.resumed:  # the config its killed runner left may still be there: only the resume restores it
        return (f"not restored: taking it was abandoned (stopped again while this runner took it); it may still hold "
                f"the config the stopped execution's runner left, and {lock}",
                f"restore it by continuing: {command} (it takes the lock over and puts the original back as it ends)",
                f"taking the target was abandoned: it may still hold the config the stopped runner left, and {lock}")
    return (f"not changed: taking it was abandoned (stopped again while wb took it) before any run began; its config "
            f"was not changed, and {lock}",
            f"{continue_with(command)} (it takes the lock over, runs what is left and restores the target)"
            + (f", or remove {locks}: no run began, so the config is the original" if locks else ""),
            f"taking the target was abandoned: its config was not changed, and {lock}")


def _recorded(state: State) -> ExecutionResult | None:
    """The execution as the store holds it after a stop; None when the store cannot say (the error that stopped
    the execution is reported all the same)."""
    try:
        return result(state)
    except WbError:
        return None


@dataclass
class Launch:
    """An execution checked and planned, before anything is written or touched."""

    prepared: Prepared
    plan: Plan
    target: Target
    prior: ExecutionRecord | None = None
    origin: dict[str, Any] | None = None


def prepare(registry: Registry, hypothesis_id: str, opts: RunOptions, *, store: Store | None = None,
            sim_dir: Path | None = None) -> Launch:
    """Resolve, render and check everything a run needs (bad input fails here, before the store or the
    target is touched); `--resume` needs the `store` to find the interrupted execution."""
    registry.hypothesis(hypothesis_id)
    prior = None
    if opts.resume:
        if store is None:
            raise ValueError("resuming needs the store")
        from workbench.runner.resume import resume

        p, plan, prior = resume(registry, store, hypothesis_id, dict(opts.sets),
                                {"--target": opts.target, "--replicates": opts.replicates, "--seed": opts.seed,
                                 "--sequential": opts.sequential, "--aa": opts.aa})
    else:
        p = resolve(registry, hypothesis_id, profile=opts.target, replicates=opts.replicates,
                    overrides=dict(opts.sets), sequential=opts.sequential, aa=opts.aa, seed=opts.seed)
    _register_secrets(p)
    preflight(p, dict(p.profile.context))
    if prior is not None:
        from workbench.runner.resume import refuse_if_changed

        refuse_if_changed(store, prior, p)
    tgt = make_target(p, sim_dir)
    check_target_here(p, tgt)
    if prior is None:
        plan = make_plan(p.arms, p.max_replicates if p.mode == "sequential" else p.replicates,
                         blocks=p.blocks, seed=p.seed, hosts=tgt.hosts,
                         per_replicate=per_replicate_names(p.experiment, p.hypothesis, p.overrides))
    return Launch(p, plan, tgt, prior, opts.origin)


def check_target_here(p: Prepared, tgt: Target) -> None:
    """Refuse, before the store is opened or the target touched, a profile this machine cannot use: what it
    lacks to reach its target (an ssh profile's known_hosts or key file missing or unreadable) is bad input at
    the profile's line (exit 2), named by profile (it may come from --target, a --pair file or the default).
    Found at the first connection instead, it failed the execution while running (exit 1) and recorded it."""
    from workbench.errors import TargetError

    try:
        tgt.check_local()
    except TargetError as exc:
        doc = p.registry.experiment_docs.get(p.experiment.id)
        if doc is None:
            raise BadInput(f"profile {p.profile_name!r}: {exc.message}", hint=exc.hint) from None
        loc: tuple[str, ...] = ("profiles", p.profile_name, "target")
        if exc.setting and (*loc, exc.setting) in doc.lines:  # the key the profile sets; else its target
            loc = (*loc, exc.setting)
        raise doc.error(f"profile {p.profile_name!r}: {exc.message}", loc, hint=exc.hint) from None


def _check_prior_runner(folder: Path, prior: ExecutionRecord) -> str | None:
    """--resume continues an execution whose runner is gone: one whose runner still runs on this machine is
    refused before anything is touched (its workload would be stopped as an orphan, its lock taken over).
    A runner noted on another machine cannot be checked from here: the warning that says so, or None."""
    from workbench.runner.lock import runner_alive, runner_elsewhere

    holder = runner_alive(folder, prior.uuid)
    if holder is not None:
        raise BadInput(f"execution {prior.id} of {prior.hypothesis_id} is still running "
                       f"(pid {holder.pid} on {holder.host}, since {holder.since})",
                       hint="--resume continues an execution whose runner is gone: wait for it to end, "
                            "or stop it (Ctrl-C restores the target) and then resume")
    other = runner_elsewhere(folder, prior.uuid)
    if other is None:
        return None
    return (f"warning: execution {prior.id} of {prior.hypothesis_id} was started by a runner on {other.host} "
            f"(pid {other.pid}, since {other.since}); whether it still runs could not be checked from here. "
            "If it does, stop it: two runners on one target overwrite each other's config.")


def _opened_and_run(launch: Launch, store: Store, stops: HeldStops, art_root: Path, *, show_progress: bool,
                    fault: Callable[[str, PlannedRun], Awaitable[None]] | None,
                    decide: StopRule | None) -> tuple[State, str, BaseException | None]:
    """The execution opened (or the one resumed reopened), its plan run and the target restored: (its state, its
    status, the error that ended it), for `_close` to record while the stop signals are still held (`stops`)."""
    p, plan, tgt = launch.prepared, launch.plan, launch.target
    unchecked = None
    with ExitStack() as stack:
        with _stopped_while_opening(store, launch) as opened:  # until the loop takes the stop signals over
            if launch.prior is not None and launch.prior.uuid:  # this runner, not the killed one, from here on
                unchecked = _check_prior_runner(art_root / f"execution-{launch.prior.uuid}", launch.prior)
                note_runner(art_root / f"execution-{launch.prior.uuid}", launch.prior.uuid)
            with signals_held():  # the row written and its id known together: a stop finds one or the other
                execution_id, exec_uuid, done = _open_execution(store, p, plan, tgt.summary(), launch.prior,
                                                                launch.origin)
                opened.append(execution_id)
            exec_dir = art_root / f"execution-{exec_uuid}"
            note_runner(exec_dir, exec_uuid)  # `wb runs delete` reads it: see runner.lock.runner_gone
            blocks = tuple(tuple(r.order_index for r in plan.block_runs(b))
                           for b in sorted({r.block for r in plan.runs}))  # as _run_blocks runs them
            progress = stack.enter_context(RunProgress(
                len(plan.runs), enabled=show_progress, title=f"{p.hypothesis.id} on {p.profile_name}",
                short_title=p.hypothesis.id, sequential=p.mode == "sequential", where=tgt.where,
                lanes=len(plan.hosts), blocks=blocks))
            if launch.prior is not None:
                progress.seed(ended_runs(store, execution_id))
            if unchecked:
                progress.log(unchecked)
            state = State(prepared=p, store=store, execution_id=execution_id, plan=plan, done=done,
                          exec_dir=exec_dir, artifacts_root=art_root, progress=progress, fault=fault,
                          target_desc=tgt.summary(), where=tgt.where,
                          recorder=Recorder(store, p, execution_id, exec_dir), execution_uuid=exec_uuid,
                          resumed=launch.prior is not None, decide=decide,
                          origin=launch.origin or ((launch.prior.plan or {}).get("origin") if launch.prior else None),
                          stops=stops)
            # Inside the block: a stop before the loop's own `try` is this block's to record, not left to escape
            # with the row "running". The loop catches every stop after it.
            status, error = _loop(state, tgt)
        stops.hold()  # the loop gives them back held; a stop before it took them over left them to `stops` here
        progress.restored = state.restore_line = _restore_line(state)  # said after the progress's last line
        try:  # a finished run may be deleted while the runner runs: count what the store holds
            progress.settle(ended_runs(store, execution_id))
        except WbError:
            pass  # the runner's own counts stand; recording how the execution ended matters more
    return state, status, error


def execute(launch: Launch, store: Store, *, show_progress: bool = True, artifacts: Path | None = None,
            fault: Callable[[str, PlannedRun], Awaitable[None]] | None = None,
            decide: StopRule | None = None) -> ExecutionResult:
    """Run a prepared execution end to end: record every run, always restore the target.

    `artifacts` is the artifacts folder (default .wb/artifacts in the workbench); `fault` is awaited as
    each stage of each run begins (tests inject faults through it); `decide`, for a sequential
    execution, replaces the hypothesis's own stopping rule after each block (`wb isolate` decides each
    probe with its own share of alpha and units).
    """
    p = launch.prepared
    if progress_mod.output_gone():  # an earlier execution of this process lost its reader: start none
        raise RunInterrupted("not started: the reader of wb's output is gone", hint="", signum=signal.SIGPIPE)
    art_root = artifacts_root(p.root, artifacts)
    # SIGTERM and SIGHUP as Ctrl-C until the loop takes the stop signals over; held once it gives them back, until
    # the execution's end is recorded.
    with stop_signals_raised() as stops:
        state, status, error = _opened_and_run(launch, store, stops, art_root, show_progress=show_progress,
                                               fault=fault, decide=decide)
        _close(state, status, error)
    return result(state)
