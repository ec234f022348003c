"""The experiment loop: plan, snapshot the target, run blocks (hosts in parallel), record, always restore.

Ctrl-C and SIGTERM cancel the loop; the run in flight is recorded `interrupted`, the target is
restored in `finally`, and `--resume` later continues the same execution without redoing finished runs.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

from workbench.errors import BadInput, RestoreFailed, RunFailure, TargetError, WbError
from workbench.runner.lifecycle import Harness, RunOutcome, execute_run, wait_healthy
from workbench.runner.plan import Plan, PlannedRun, make_plan
from workbench.runner.prepare import Prepared, arms_config_diff, preflight, preview_values, resolve
from workbench.runner.progress import RunProgress
from workbench.runner.record import Recorder, patient
from workbench.runner.render import render_command, render_text
from workbench.runner.restore import Snapshot, restore_host, take_snapshots
from workbench.runner.targets.base import Target

FINISHED = ("ok", "invalid", "failed")


class RunInterrupted(RunFailure):
    """The experiment was stopped by Ctrl-C or SIGTERM (the target was restored)."""

    exit_code = 130


@dataclass
class State:
    prepared: Prepared
    store: Any
    execution_id: int
    plan: Plan
    done: set[int]
    exec_dir: Path
    artifacts_root: Path
    progress: RunProgress
    fault: Callable[[str, PlannedRun], Awaitable[None]] | None = None
    run_ids: list[int] = field(default_factory=list)
    outcomes: list[tuple[int, PlannedRun, RunOutcome]] = field(default_factory=list)
    restore_error: str | None = None
    stop_reason: str | None = None
    target_desc: str = ""
    timing: dict[str, float] = field(default_factory=dict)
    recorder: Any = None
    execution_uuid: str = ""
    resumed: bool = False


def make_target(p: Prepared) -> Target:
    kind = p.profile.target.kind
    if kind == "ssh":
        from workbench.runner.targets.ssh import SshTarget

        return SshTarget(p.profile.target)
    if kind == "sim":
        from workbench.runner.targets.sim import SimTarget, default_sim_dir

        return SimTarget(sim_dir=default_sim_dir(p.root, p.profile.options), options=dict(p.profile.options))
    if kind == "kernel":
        from workbench.runner.targets.kernel import KernelTarget

        return KernelTarget(dict(p.profile.options))
    from workbench.runner.targets.local import LocalTarget

    return LocalTarget(p.profile.target.hosts or None)


def artifacts_root(root: Path) -> Path:
    env = os.environ.get("WB_ARTIFACTS")
    return Path(env).resolve() if env else (root / ".wb" / "artifacts").resolve()


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
        variables = p.assignments[pr.arm]
        run_id = await rec.start(pr)
        state.run_ids.append(run_id)
        position = min(len(state.done) + 1, len(state.plan.runs))

        def on_stage(r: PlannedRun, st: str, _pos: int = position) -> None:
            state.progress.stage(r, st, _pos)
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
            state.progress.finished(out.status)
            if out.status != "ok":
                state.progress.log(f"run {run_id} ({pr.arm} r{pr.replicate}) {out.status}: {out.error}")
        await rec.settle()  # the run is in the store before the next one starts


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
            decision = _sequential_decision(state)
            if decision is not None and getattr(decision, "stop", False):
                state.stop_reason = getattr(decision, "reasoning", "the sequential test decided")
                return


def _sequential_decision(state: State) -> Any:
    try:
        from workbench.analysis import sequential_decision
    except ImportError:
        return None
    p = state.prepared
    with state.store.session() as s:
        return sequential_decision(s, p.registry, p.hypothesis.id, execution_id=state.execution_id,
                                   max_replicates=p.max_replicates)


def _restart_commands(p: Prepared, context: dict[str, str], host: str) -> list[str]:
    values = preview_values(p, p.arms[0], context, host)
    return [render_command(c, values, where=f"restart[{i}]") for i, c in enumerate(p.profile.restart)]


async def _restore(state: State, target: Target, snaps: dict[str, Snapshot], context: dict[str, str],
                   env: dict[str, str]) -> None:
    p = state.prepared
    started_here = getattr(target, "started_here", False)
    problems: list[RestoreFailed] = []
    for host, snap in snaps.items():
        restart = _restart_commands(p, context, host)
        values = preview_values(p, p.arms[0], context, host)
        urls = [render_text(u, values) for u in p.profile.health.urls] if p.profile.health else []

        async def healthy(_host: str = host, urls: list[str] = urls) -> None:
            if urls and not started_here:
                hp = p.profile.health
                problem = await wait_healthy(target, _host, urls, hp.attempts, hp.interval_s, hp.timeout_s)
                if problem:
                    state.progress.log(f"warning: after restoring, {target.describe(_host)}: {problem}")
        try:
            await restore_host(target, snap, restart, env=env, restart_timeout=300.0,
                               do_restart=not started_here and bool(restart), after=healthy)
        except RestoreFailed as exc:
            problems.append(exc)
    if problems:
        msg = "\n".join(f"{e.message}\n  {e.hint}" for e in problems)
        state.restore_error = msg


async def _main(state: State, target: Target) -> None:
    p = state.prepared
    loop = asyncio.get_running_loop()
    me = asyncio.current_task()
    signalled: list[int] = []

    def on_signal(sig: int) -> None:
        if not signalled and me is not None:
            me.cancel()
        signalled.append(sig)
        if len(signalled) > 1:
            state.progress.log("restoring the target; wait for it (or press Ctrl-C again: it is not skipped)")

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal, sig)
        except (NotImplementedError, RuntimeError):
            pass
    t0 = time.monotonic()
    context = dict(p.profile.context)
    env = {k: render_text(v, {**p.assignments[p.arms[0]], **context}) for k, v in p.profile.env.items()}
    from workbench.secrets import register

    register(values=env.values())
    snaps: dict[str, Snapshot] = {}
    lock = None
    try:
        await target.open()
        sim_dir = getattr(target, "sim_dir", None)
        if sim_dir is not None:
            context["sim_dir"] = str(sim_dir)
        paths = ({host: preview_values(p, p.arms[0], context, host)["path"] for host in state.plan.hosts}
                 if p.profile.config is not None else {})
        lock = target_lock(target, state, paths)
        await lock.acquire()  # before anything on the target changes; held until after the restore
        if state.resumed:
            await asyncio.to_thread(_recover, state)
        target.children_dir = state.exec_dir / "children"
        if sim_dir is not None:
            target.marker = state.exec_dir / "sim-started"  # type: ignore[attr-defined]
        if paths:
            snaps = await take_snapshots(target, paths, state.exec_dir, owner=state.execution_uuid)
        setup = getattr(target, "setup", None)
        if setup is not None:
            serve = Path(next(iter(snaps.values())).path) if snaps else Path(context.get("sim_dir", ".")) / "serve.sh"
            context.update(await setup(serve, env))
        remote_work = None
        if target.kind == "ssh":
            remote_work = str(p.profile.options.get("work_dir", "/tmp/wb-runs")) + f"/{uuid.uuid4().hex[:12]}"
        h = Harness(root=p.root, experiment=p.experiment, hypothesis=p.hypothesis, profile_name=p.profile_name,
                    profile=p.profile, target=target, context=context, env=env, config_template=p.config_template,
                    artifacts_root=state.exec_dir, remote_work=remote_work, fault=state.fault,
                    probe_targets=p.probe_targets,
                    restart_timeout_s=float(p.profile.options.get("restart_timeout_s", 300)))
        try:
            await _run_plan(state, h)
        finally:
            if snaps:
                await _restore(state, target, snaps, context, env)
    finally:
        teardown = getattr(target, "teardown", None)
        if teardown is not None:
            try:
                problem = await teardown()
                if problem:
                    state.progress.log(f"warning: {problem}")
            except Exception as exc:  # the restore already happened; stopping our own pdsim is best effort
                state.progress.log(f"warning: stopping pdsim failed: {exc}")
        if lock is not None:
            await lock.release()
        await target.close()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.remove_signal_handler(sig)
            except (NotImplementedError, RuntimeError):
                pass
        wall = time.monotonic() - t0
        busy = max(target.clock.target_s.values(), default=0.0)
        state.timing = {"wall_s": wall, "target_s": busy, "overhead_s": max(wall - busy, 0.0),
                        "overhead_pct": 100.0 * max(wall - busy, 0.0) / wall if wall > 0 else 0.0}
        if signalled:
            raise RunInterrupted("interrupted", hint="")


def target_lock(target: Target, state: State, paths: dict[str, str]) -> Any:
    from workbench.runner.lock import TargetLock, lock_path

    opts = dict(state.prepared.profile.options)
    where = {h: lock_path(target, h, paths.get(h), opts) for h in state.plan.hosts}
    return TargetLock(target, {h: w for h, w in where.items() if w}, state.execution_uuid)


# ----------------------------------------------------------------------------- entry point
def _find_resumable(store: Any, hypothesis_id: str) -> Any:
    from workbench.store import queries

    with store.session() as s:
        for ex in reversed(queries.executions(s, hypothesis_id=hypothesis_id)):
            if ex.status in ("interrupted", "failed", "running"):
                s.expunge(ex)
                return ex
            if ex.status == "done":
                return None
    return None


def _register_secrets(p: Prepared) -> None:
    """Secret variables' values (every arm's and --set's) and the profile's env values are never stored or shown."""
    from workbench.secrets import register

    names = [n for n, spec in p.experiment.variables.items() if getattr(spec, "secret", False)]
    values = [a.get(n) for a in p.assignments.values() for n in names] + [p.overrides.get(n) for n in names]
    values += [p.experiment.variables[n].default for n in names]
    values += [v for v in p.profile.env.values() if "{{" not in v]
    register(values=values, names=names + list(p.profile.env))


def _recover(state: State) -> None:
    """Before resuming (holding the target's lock): write what the journal kept, settle rows a crash left
    half-way, stop the children a killed runner left behind, and count again what is done."""
    from workbench.runner.orphans import reap
    from workbench.store import queries

    rec = Recorder(state.store, state.prepared, state.execution_id, state.exec_dir)
    try:
        rec.replay()
        rec.reconcile()
    finally:
        rec.close()
    for line in reap(state.exec_dir / "children"):
        state.progress.log(line)
    with state.store.session() as s:
        state.done |= {int(r["order_index"]) for r in queries.list_runs(s, execution_id=state.execution_id)
                       if r["status"] in FINISHED and r["order_index"] is not None}
    state.progress.done = len(state.done)


def run_hypothesis(hypothesis_id: str, *, root: str | Path | None = None, db: str | None = None,
                   target: str | None = None, replicates: int | None = None, sets: dict[str, str] | None = None,
                   sequential: bool = False, aa: bool = False, resume: bool = False, seed: int | None = None,
                   show_progress: bool = True, fault: Callable[[str, PlannedRun], Awaitable[None]] | None = None,
                   build_report: bool = True) -> dict[str, Any]:
    """Run a hypothesis's experiment end to end and return the summary (see `workbench.runner.summary.finish`)."""
    from workbench import __version__
    from workbench.registry import load_registry
    from workbench.runner.summary import finish
    from workbench.store import jsonx, open_store, queries, records
    from workbench.store.models import utcnow

    reg = load_registry(root)
    reg.hypothesis(hypothesis_id)
    store = None
    try:
        prior = None
        if resume:
            from workbench.store.engine import resolve_url

            if (path := resolve_url(db)[1]) is not None and not path.exists():
                raise BadInput(f"no interrupted execution of {hypothesis_id!r} to resume (no store at {path})",
                               hint=f"start one with: wb hypothesis run {hypothesis_id}")
            store = open_store(db)
            prior = _find_resumable(store, hypothesis_id)
            if prior is None:
                raise BadInput(f"no interrupted execution of {hypothesis_id!r} to resume",
                               hint=f"start one with: wb hypothesis run {hypothesis_id}")
            saved = jsonx.loads(prior.plan_json, {})
            if sets and sets != saved.get("overrides", {}):
                raise BadInput("--resume continues the interrupted execution with its own --set values",
                               hint=f"it used {saved.get('overrides') or 'none'}; drop --set or start afresh")
            p = resolve(reg, hypothesis_id, profile=prior.profile, replicates=None,
                        overrides=saved.get("overrides", {}), sequential=prior.mode == "sequential",
                        aa=prior.mode == "aa", seed=None)
            plan = Plan.from_dict(saved["plan"])
            p.max_replicates = int(saved.get("max_replicates", plan.replicates))
        else:
            p = resolve(reg, hypothesis_id, profile=target, replicates=replicates, overrides=dict(sets or {}),
                        sequential=sequential, aa=aa, seed=seed)
        _register_secrets(p)
        ctx0 = dict(p.profile.context)
        preflight(p, ctx0)
        tgt = make_target(p)
        if not resume:
            plan = make_plan(p.arms, p.max_replicates if p.mode == "sequential" else p.replicates,
                             blocks=p.blocks, seed=p.seed, hosts=tgt.hosts)
        if store is None:
            store = open_store(db)
        target_desc = p.profile.target.kind + (":" + ",".join(tgt.describe(x) for x in tgt.hosts)
                                               if p.profile.target.kind == "ssh" else "")
        # The execution's UUID keys its snapshot and artifact folders (a row id is only unique in one store).
        exec_uuid = (saved.get("execution_uuid") if prior is not None else None) or uuid.uuid4().hex
        body = {"plan": plan.to_dict(), "assignments": p.assignments, "overrides": p.overrides,
                "max_replicates": p.max_replicates, "arms": p.arms, "execution_uuid": exec_uuid}
        art_root = artifacts_root(p.root)
        exec_dir = art_root / f"execution-{exec_uuid}"
        with store.session() as s:
            if prior is not None:
                execution_id = int(prior.id)
                records.update_execution(s, execution_id=execution_id, status="running", ended_at=None, error=None,
                                         plan=body)
                done = {int(r["order_index"]) for r in queries.list_runs(s, execution_id=execution_id)
                        if r["status"] in FINISHED and r["order_index"] is not None}
            else:
                hs = records.snapshot_hypothesis(s, hypothesis_id=p.hypothesis.id,
                                                 body=p.hypothesis.model_dump(mode="json"))
                es = records.snapshot_experiment(s, experiment_id=p.experiment.id, version=p.experiment.version,
                                                 body=p.experiment.model_dump(mode="json"))
                ex = records.create_execution(
                    s, hypothesis_id=p.hypothesis.id, experiment_id=p.experiment.id,
                    experiment_version=p.experiment.version, profile=p.profile_name, target=target_desc,
                    mode=p.mode, plan=body, overrides=p.overrides, config_diff=arms_config_diff(p),
                    hypothesis_snapshot_id=hs.id, experiment_snapshot_id=es.id, wb_version=__version__)
                execution_id = int(ex.id)
                done = set()
        total = len(plan.runs)
        with RunProgress(total, enabled=show_progress,
                         title=f"{p.hypothesis.id} on {p.profile_name}") as progress:
            progress.done = len(done)
            state = State(prepared=p, store=store, execution_id=execution_id, plan=plan, done=done,
                          exec_dir=exec_dir, artifacts_root=art_root, progress=progress, fault=fault,
                          target_desc=target_desc, recorder=Recorder(store, p, execution_id, exec_dir),
                          execution_uuid=exec_uuid, resumed=prior is not None)
            error: BaseException | None = None
            status = "done"
            try:
                asyncio.run(_main(state, tgt))
            except RunInterrupted as exc:
                status, error = "interrupted", exc
            except KeyboardInterrupt as exc:
                status, error = "interrupted", exc
            except WbError as exc:
                status, error = "failed", exc
            except Exception as exc:
                status, error = "failed", exc
            finally:
                state.recorder.close()
        if state.restore_error:
            status = "failed" if status == "done" else status
        msg = None if error is None else (getattr(error, "message", None) or f"{type(error).__name__}: {error}")
        if state.restore_error:
            msg = (msg + "\n" if msg else "") + state.restore_error

        def close_execution() -> None:
            with store.session() as s:
                records.update_execution(s, execution_id=execution_id, status=status, ended_at=utcnow(), error=msg)

        patient(close_execution)
        if state.restore_error:
            raise RestoreFailed(state.restore_error.splitlines()[0], hint="\n".join(state.restore_error.splitlines()[1:]))
        if isinstance(error, RunInterrupted) or isinstance(error, KeyboardInterrupt):
            raise RunInterrupted(f"interrupted; the target was restored. {len(state.done)}/{total} runs finished",
                                 hint=f"continue with: wb hypothesis run {hypothesis_id} --resume")
        if isinstance(error, TargetError):
            raise error
        if isinstance(error, WbError):
            raise error
        if error is not None:
            raise RunFailure(f"the experiment failed: {type(error).__name__}: {error}",
                             hint="the target was restored; see the run records (wb runs list)") from error
        from workbench.secrets import redact

        return redact(finish(state, build_report=build_report))
    finally:
        if store is not None:
            store.dispose()
