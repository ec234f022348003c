"""One run, stage by stage: render → check → apply → restart → health → verify → workload → collect → record
(the collect stage and the artifacts are in collect.py; a run's outcome in outcome.py).

Each stage is bounded. The outcome says ok / failed (the target misbehaved) / invalid (the run
produced no usable measurement) / interrupted, with the stage it ended in and why.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shlex
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from workbench.errors import TargetError, WbError
from workbench.registry.timeouts import timeouts
from workbench.runner import manipulation
from workbench.runner.collect import (collect, fetch_artifacts, note_log_ends, note_log_starts,
                                      note_workload_starts)
from workbench.runner.daemon import HELD_OPEN_WARNING, failure_reason
from workbench.runner.harness import Harness
from workbench.runner.outcome import RunOutcome, StageFailed
from workbench.runner.plan import PlannedRun
from workbench.runner.render import Raw, render_command, render_text
from workbench.runner.restore import one_line
from workbench.runner.targets.base import Target

STAGES = ("render", "check", "apply", "restart", "health", "verify", "workload", "collect", "record")


def builtins(h: Harness, pr: PlannedRun, run_id: int, run_dir: str, start: datetime) -> dict[str, Any]:
    from workbench.runner.targets.sim import wb_command

    return {
        "arm": pr.arm, "replicate": pr.replicate, "run_id": run_id, "run_dir": run_dir, "host": pr.host,
        "run_start": start.strftime("%Y-%m-%d %H:%M:%S UTC"), "run_start_iso": start.isoformat(timespec="seconds"),
        "run_start_epoch": int(start.timestamp()), "experiment_id": h.experiment.id,
        "hypothesis_id": h.hypothesis.id, "work_dir": run_dir, "units_path": f"{run_dir}/units.jsonl",
        "python": Raw(shlex.quote(sys.executable)), "wb": Raw(wb_command()),
        "sim_dir": h.context.get("sim_dir", str(h.root / ".wb" / "sim")),
        "workbench_dir": str(Path(h.root).resolve()), "config_sha256": "",
    }


def template_values(h: Harness, pr: PlannedRun, variables: dict[str, str], run_id: int, run_dir: str,
                    start: datetime) -> dict[str, Any]:
    values: dict[str, Any] = dict(variables)
    values.update(h.context)
    values.update(builtins(h, pr, run_id, run_dir, start))
    if h.profile.config is not None:
        values["path"] = render_text(h.profile.config.path, values, where="config.path")
    return values


def render_config(h: Harness, values: dict[str, Any]) -> str | None:
    if h.config_template is None:
        return None
    from workbench.runner.quoting import render_config as render_quoted

    return render_quoted(h.config_template, values, h.profile.config.format if h.profile.config else "raw")


async def local_check(h: Harness, rendered: str, values: dict[str, Any]) -> str | None:
    """Run the profile's local check (e.g. `bash -n FILE`) on the rendered config; the error text or None."""
    if h.profile.config is None or not h.profile.config.check:
        return None
    from workbench.runner.targets.local import LocalTarget

    with tempfile.TemporaryDirectory(prefix="wb-check-") as d:
        f = Path(d) / (Path(values.get("path", "config")).name or "config")
        f.write_text(rendered, encoding="utf-8")
        cmd = render_command(h.profile.config.check, {**values, "file": str(f)}, where="config.check")
        res = await LocalTarget().run("local", cmd, timeout=timeouts(h.profile.options).check_s)
    if res.ok:
        return None
    why = failure_reason(res, timeouts(h.profile.options).check_s)
    return f"`{h.profile.config.check}` rejected the rendered config: {why}"


def run_env(h: Harness, values: dict[str, Any]) -> dict[str, str]:
    """The profile's `env` rendered with one run's values: each run's commands see its own arm's variables
    (`h.env`, rendered once for the first arm, is what setting the target up and restoring it use)."""
    from workbench.secrets import register, secret_env

    env = {k: render_text(v, values, where=f"env.{k}") for k, v in h.profile.env.items()}
    register(values=secret_env(env).values())
    return env


async def fingerprint(h: Harness, host: str, values: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """The declared environment commands' output (run concurrently) plus what the runner knows itself."""
    import platform

    from workbench import __version__
    from workbench.store.records import redact_secrets

    fp: dict[str, Any] = {"wb_version": __version__, "runner_python": platform.python_version(),
                          "target": h.target.kind, "host": h.target.describe(host)}
    # The env entries written as templates are rendered from this run's values: where they differ between arms
    # they follow the arms' variables (which the isolation check verifies), so they are kept apart from the
    # environment the fingerprint check compares.
    from workbench.analysis.validity import ARM_ENV

    templated = {k for k, v in h.profile.env.items() if "{{" in v or "{%" in v}
    for key, part in (("env", {k: v for k, v in env.items() if k not in templated}),
                      (ARM_ENV, {k: v for k, v in env.items() if k in templated})):
        view = redact_secrets(part) or {}
        if view:
            fp[key] = view
    names = list(h.profile.fingerprint)
    cmds = [render_command(h.profile.fingerprint[n], values, where=f"fingerprint.{n}") for n in names]

    async def one(cmd: str) -> str:
        try:
            res = await h.target.run(host, cmd, env=env, timeout=timeouts(h.profile.options).fingerprint_s)
        except TargetError as exc:
            return f"<error: {exc}>"
        return res.stdout.strip() if res.ok else f"<rc={res.rc}> {res.excerpt(200)}"

    for n, out in zip(names, await asyncio.gather(*(one(c) for c in cmds))):
        fp[n] = out
    return fp


async def _inject(h: Harness, stage: str, pr: PlannedRun) -> None:
    if h.fault is not None:
        await h.fault(stage, pr)


async def wait_healthy(target: Target, host: str, urls: list[str], attempts: int, interval: float,
                       timeout: float) -> str | None:
    """None once every URL answers 200; else what the last attempt saw."""
    last: dict[str, int | None] = {}
    t0 = time.monotonic()
    try:
        for i in range(attempts):
            statuses = await asyncio.gather(*(target.http_status(host, u, timeout) for u in urls))
            last = dict(zip(urls, statuses))
            if all(s == 200 for s in statuses):
                return None
            if i < attempts - 1:
                await asyncio.sleep(interval)
    finally:
        target.clock.add(host, time.monotonic() - t0)
    seen = ", ".join(f"{u} -> {s if s is not None else 'no answer'}" for u, s in last.items())
    return f"health never green after {attempts} attempts every {interval:g} s ({seen})"


class _Stages:
    """The clock and the stage hooks of one run: each stage's time is added to `out.stage_s`."""

    def __init__(self, h: Harness, pr: PlannedRun, out: RunOutcome) -> None:
        self.h, self.pr, self.out = h, pr, out
        self.t0 = time.monotonic()

    async def enter(self, name: str) -> None:
        now = time.monotonic()
        if self.out.stage in STAGES:
            self.out.stage_s[self.out.stage] = round(self.out.stage_s.get(self.out.stage, 0.0) + now - self.t0, 4)
        self.t0 = now
        self.out.stage = name
        self.h.on_stage(self.pr, name)
        await _inject(self.h, name, self.pr)

    def close(self) -> None:
        out = self.out
        out.stage_s[out.stage] = round(out.stage_s.get(out.stage, 0.0) + time.monotonic() - self.t0, 4)


async def _render(h: Harness, pr: PlannedRun, run_id: int, variables: dict[str, str], run_dir: str,
                  out: RunOutcome, values: dict[str, Any]) -> tuple[dict[str, str], str | None]:
    """Fill `values` (the template values of this run) and render the config; (environment, config)."""
    values.update(template_values(h, pr, variables, run_id, run_dir, out.started_at))
    env = run_env(h, values)
    if h.probe_targets:
        env.update(await _probe_env(h, pr.host, f"{run_dir}/probe"))
    rendered = render_config(h, values)
    if rendered is not None:
        out.rendered_config = rendered
        out.config_hash = hashlib.sha256(rendered.encode("utf-8")).hexdigest()
        values["config_sha256"] = out.config_hash
    out.fingerprint = await fingerprint(h, pr.host, values, env)
    if h.remote_work:
        await h.target.mkdir(pr.host, run_dir)
    return env, rendered


async def _restart(h: Harness, pr: PlannedRun, values: dict[str, Any], env: dict[str, str], out: RunOutcome,
                   art: Path) -> list[str]:
    """Run the restart steps; each one's output is kept in the run's artifact restart.txt, since a service
    that then never turns healthy is diagnosed from it. The steps as run, each with how it ended and the end of
    its output, for the health stage's message."""
    steps: list[str] = []
    for i, cmd_t in enumerate(h.profile.restart):
        cmd = render_command(cmd_t, values, where=f"restart[{i}]")
        res = await h.target.run(pr.host, cmd, env=env, timeout=h.restart_timeout_s)
        said = res.excerpt(200)
        steps.append(f"restart[{i}] `{cmd if len(cmd) <= 160 else cmd[:160] + '…'}` (exited {res.rc}"
                     + (f": {one_line(said)})" if said else ", printing nothing)"))
        _keep_restart_output(out, art, f"restart[{i}]", res)
        _warn_held_open(h, cmd_t, cmd, res)
        if not res.ok:
            raise StageFailed("failed", f"restart `{cmd}` {failure_reason(res, h.restart_timeout_s)}")
    return steps


RESTART_OUTPUT_MAX = 256 * 1024  # per stream of one step: the end of a long log is the part that explains


def _keep_restart_output(out: RunOutcome, art: Path, step: str, res: Any) -> None:
    ended = "timed out" if res.timed_out else f"exit {res.rc}"
    parts = [f"== {step}: {res.command}\n({ended} after {res.duration_s:.1f} s)\n"]
    for name, text in (("stdout", res.stdout), ("stderr", res.stderr)):
        if text:
            cut = text if len(text) <= RESTART_OUTPUT_MAX else "…" + text[-RESTART_OUTPUT_MAX:]
            parts.append(f"-- {name} --\n{cut}" + ("" if cut.endswith("\n") else "\n"))
    path = art / "restart.txt"
    with open(path, "a", encoding="utf-8", errors="replace") as f:
        f.write("".join(parts))
    out.artifacts["restart"] = path


def _health_urls(h: Harness, values: dict[str, Any]) -> list[str]:
    hp = h.profile.health
    return [render_text(u, values, where="health.urls") for u in hp.urls] if hp is not None else []


async def _verify(h: Harness, pr: PlannedRun, values: dict[str, Any], env: dict[str, str],
                  before: Any) -> None:
    """The manipulation check: the service restarted (its listeners changed) and shows the arm's values."""
    after = await manipulation.listeners(h, pr.host, _health_urls(h, values))
    problem = manipulation.restart_problem(before, after, pr.arm)
    problem = problem or await manipulation.verify_problem(h, pr.host, values, env)
    if problem:
        raise StageFailed("invalid", problem)


async def _health(h: Harness, pr: PlannedRun, values: dict[str, Any], restarted: list[str]) -> None:
    hp = h.profile.health
    if hp is not None:
        urls = _health_urls(h, values)
        problem = await wait_healthy(h.target, pr.host, urls, hp.attempts, hp.interval_s, hp.timeout_s)
        if problem and restarted:
            run = values.get("run_id")
            if problem.count("-> no answer") == len(urls):  # not one URL answered (wait_healthy's words)
                problem += "; nothing answered: the restart did not bring the service up"
            problem += (f" following {', '.join(restarted)}; its output is in run {run}'s artifact restart.txt, "
                        f"listed by: wb runs show {run}")
        if problem:
            raise StageFailed("failed", problem)


async def _workload(h: Harness, pr: PlannedRun, variables: dict[str, str], values: dict[str, Any],
                    env: dict[str, str], out: RunOutcome, art: Path) -> Any:
    """Run the arm in process (a target that can) or the profile's workload command; its CmdResult or None."""
    await note_workload_starts(h, pr, values, out)  # before run_start: a log's copy holds all a count of it does
    values.update(_measure_start(datetime.now(timezone.utc)))
    in_process = await h.target.run_arm(variables, pr.replicate)
    if in_process is not None:
        metrics, extra = in_process
        out.fingerprint.update(extra)
        for k, v in metrics.items():
            if k in h.experiment.metrics:
                out.metrics[k] = v
                out.metric_sources[k] = "kernel"
        return None
    wl = h.profile.workload
    if wl is None:
        return None
    cmd = render_command(wl.command, values, where="workload.command")
    out.artifacts["stdout"] = art / "stdout.txt"
    out.artifacts["stderr"] = art / "stderr.txt"
    with open(art / "stdout.txt", "wb") as stdout_f, open(art / "stderr.txt", "wb") as stderr_f:
        result = await h.target.run(pr.host, cmd, env=env, timeout=wl.timeout_s, stdout_file=stdout_f,
                                    stderr_file=stderr_f)
    if result.timed_out:
        raise StageFailed("failed", f"workload timed out after {wl.timeout_s:g} s (killed); last output: "
                                    f"{result.excerpt(400)}")
    if result.rc != 0:
        raise StageFailed("failed", f"workload {failure_reason(result, wl.timeout_s)}")
    return result


async def _stages(h: Harness, pr: PlannedRun, run_id: int, variables: dict[str, str], run_dir: str,
                  out: RunOutcome, art: Path, clock: _Stages, values: dict[str, Any]) -> None:
    await clock.enter("render")
    env, rendered = await _render(h, pr, run_id, variables, run_dir, out, values)
    await note_log_starts(h, pr, values, out)
    await clock.enter("check")
    if rendered is not None:
        problem = await local_check(h, rendered, values)
        if problem:
            raise StageFailed("failed", problem)
    await clock.enter("apply")
    if rendered is not None and h.profile.config is not None:
        await h.target.write_file(pr.host, values["path"], rendered.encode("utf-8"), int(h.profile.config.mode, 8))
    await clock.enter("restart")
    before = await manipulation.listeners(h, pr.host, _health_urls(h, values))
    restarted = await _restart(h, pr, values, env, out, art)
    await clock.enter("health")
    await _health(h, pr, values, restarted)
    await clock.enter("verify")
    await _verify(h, pr, values, env, before)
    await clock.enter("workload")
    identity = await h.target.deployment_identity(pr.host)
    result = await _workload(h, pr, variables, values, env, out, art)
    await clock.enter("collect")
    await note_log_ends(h, pr, values, out)
    await collect(h, pr, values, env, result, out, art)
    changed = await manipulation.changed_under_run(h, pr.host, values, rendered, identity)
    if changed:  # after collect: its metrics stay with the run for diagnosis, but the run is no evidence
        raise StageFailed("invalid", changed)


async def execute_run(h: Harness, pr: PlannedRun, run_id: int, variables: dict[str, str],
                      out: RunOutcome | None = None) -> RunOutcome:
    """Do one run into `out`; never raises for target trouble (the outcome says what happened), re-raises
    cancellation and unexpected exceptions (with `out` filled in as far as it got)."""
    out = out if out is not None else RunOutcome()
    out.status, out.error = "running", None  # the caller's "interrupted" placeholder ends here
    out.started_at = datetime.now(timezone.utc).replace(microsecond=0)
    art = h.artifacts_root / f"run-{run_id}"
    art.mkdir(parents=True, exist_ok=True)
    run_dir = f"{h.remote_work}/run-{run_id}" if h.remote_work else str(art)
    values: dict[str, Any] = {}
    clock = _Stages(h, pr, out)
    try:
        await note_log_starts(h, pr, {"run_dir": run_dir, "work_dir": run_dir, **h.context}, out)
        await _stages(h, pr, run_id, variables, run_dir, out, art, clock, values)
        out.status = "ok"
    except StageFailed as exc:
        out.status, out.error = exc.status, f"[{out.stage}] {exc}"
    except asyncio.CancelledError:
        out.status, out.error = "interrupted", f"[{out.stage}] interrupted"
        raise
    except WbError as exc:  # TargetError included: the target misbehaved, the run failed
        out.status, out.error = "failed", f"[{out.stage}] {exc.message}"
    except Exception as exc:
        out.status, out.error = "failed", f"[{out.stage}] {type(exc).__name__}: {exc}"
        raise
    finally:
        clock.close()
        out.ended_at = datetime.now(timezone.utc)
        if out.status != "interrupted":
            t_fetch = time.monotonic()
            await fetch_artifacts(h, pr, values or {"run_dir": run_dir, "work_dir": run_dir, **h.context}, out, art)
            out.stage_s["artifacts"] = round(time.monotonic() - t_fetch, 4)
        try:
            (art / "timings.json").write_text(json.dumps(out.stage_s, indent=1), encoding="utf-8")
            out.artifacts["timings"] = art / "timings.json"
        except OSError:
            pass
    return out


def _warn_held_open(h: Harness, template: str, cmd: str, res: Any) -> None:
    """Say once per command that it left a background process holding its output (wb did not wait)."""
    if res.held_open and template not in h.warned:
        h.warned.add(template)
        h.warn(HELD_OPEN_WARNING.format(command=cmd))


def _measure_start(now: datetime) -> dict[str, Any]:
    """The run's start as later commands see it: the moment the workload began (after restart and health),
    so a log count since then holds the run's lines and none from the server that was stopped."""
    from datetime import timedelta

    ceil = (now + timedelta(seconds=1)).replace(microsecond=0) if now.microsecond else now
    return {"run_start": ceil.strftime("%Y-%m-%d %H:%M:%S UTC"), "run_start_iso": now.isoformat(),
            "run_start_epoch": int(ceil.timestamp())}


async def _probe_env(h: Harness, host: str, out_dir: str) -> dict[str, str]:
    from workbench.probes import probe_environment, probe_files

    if h.remote_work:
        base = f"{h.remote_work}/probe-lib"
        await h.target.put_files(host, base, probe_files())
        await h.target.mkdir(host, out_dir)
        return probe_environment(h.probe_targets, out_dir, probe_dir=base)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    return probe_environment(h.probe_targets, out_dir)
