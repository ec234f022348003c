"""Before touching any target: resolve the hypothesis, profile, arms and design, and render every template.

Anything wrong here is bad input (exit 2): an unknown profile or variable, a template naming an
undefined value, a rendered config its local check rejects.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import BadInput
from workbench.registry.common import did_you_mean
from workbench.runner.plan import PlannedRun
from workbench.runner.render import config_diff, render_command, render_text

if TYPE_CHECKING:
    from workbench.registry.experiment import Experiment, Profile
    from workbench.registry.hypothesis import Hypothesis
    from workbench.registry.folder import Registry


@dataclass
class Prepared:
    registry: Registry
    hypothesis: Hypothesis
    experiment: Experiment
    profile_name: str
    profile: Profile
    arms: list[str]
    assignments: dict[str, dict[str, str]]
    overrides: dict[str, str]
    replicates: int
    max_replicates: int
    blocks: str
    seed: int | None
    mode: str  # fixed | sequential | aa
    config_template: str | None
    probe_targets: list[str] = field(default_factory=list)
    rendered: dict[str, str] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return Path(self.registry.root)

    def profile_line(self, field: tuple[str, ...] = ()) -> str | None:
        """`FILE:LINE` of the profile's `field` in the experiment file (of the profile where the field is not
        written), or None where the experiment came from no file."""
        doc = self.registry.experiment_docs.get(self.experiment.id)
        return None if doc is None else f"{doc.file}:{doc.line_of(('profiles', self.profile_name, *field))}"

    def profile_error(self, message: str, field: tuple[str, ...] = (), *, hint: str | None = None) -> BadInput:
        """Bad input at the profile's `field` in the experiment file (file:line), or plain where there is no file."""
        doc = self.registry.experiment_docs.get(self.experiment.id)
        if doc is None:
            return BadInput(message, hint=hint)
        return doc.error(message, ("profiles", self.profile_name, *field), hint=hint)


MAX_REPLICATES = 10_000  # as the design's max_replicates: a plan is held in memory and stored as JSON


def resolve(registry: Registry, hypothesis_id: str, *, profile: str | None, replicates: int | None,
            overrides: dict[str, str], sequential: bool, aa: bool, seed: int | None) -> Prepared:
    h = registry.hypothesis(hypothesis_id)
    exp = registry.experiment_for(h)
    pname = profile or h.profile or exp.default_profile
    if pname not in exp.profiles:
        raise BadInput(f"--target {pname}: experiment {exp.id!r} has no profile {pname!r}",
                       hint=did_you_mean(pname, exp.profiles, f"profiles: {', '.join(exp.profiles)}"))
    if sequential and aa:
        raise BadInput("--sequential and --aa do not combine", hint="an A/A run checks the harness at a fixed size")
    if profile is not None and not profile.strip():
        raise BadInput("--target is empty", hint="name one of the experiment's profiles, or leave --target out")
    if replicates is not None and not 1 <= replicates <= MAX_REPLICATES:
        shown = str(replicates) if len(str(replicates)) <= 24 else str(replicates)[:20] + "…"
        raise BadInput(f"--replicates {shown} is out of range: give 1 to {MAX_REPLICATES}",
                       hint="each replicate is one block of runs of every arm")
    if h.kind == "reachability":
        arms = ["probe"]
        assignments = {"probe": registry.arm_assignment(h, "probe", overrides)}
        if aa:
            raise BadInput("--aa needs an A/B hypothesis; a reachability hypothesis runs one arm")
    else:
        names = list(h.arms)
        assignments = {a: registry.arm_assignment(h, a, overrides) for a in names}
        arms = names
        if aa:
            base = "control" if "control" in assignments else names[0]
            arms = [base, f"{base}_aa"]
            assignments = {base: assignments[base], f"{base}_aa": dict(assignments[base])}
    design = h.design
    reps = replicates or (design.replicates if design and design.replicates else None) or exp.design.replicates
    max_reps = (design.max_replicates if design and design.max_replicates else None) or exp.design.max_replicates
    if sequential and replicates:
        max_reps = replicates
    if seed is None:
        seed = design.seed if design and design.seed is not None else exp.design.seed
    prof = exp.profiles[pname]
    template = None
    if prof.config is not None:
        if prof.config.template is not None:
            template = prof.config.template
        else:
            from workbench.registry.experiment_checks import read_template_file

            tf = registry.experiment_path(exp.id).parent / str(prof.config.template_file)
            template, why = read_template_file(tf)
            if template is None:
                raise BadInput(f"template_file {str(tf)!r} cannot be read: {why}")
    probe_targets: list[str] = []
    if h.kind == "reachability" and h.probe is not None:
        probe_targets = list(h.probe.targets)
        if h.probe.positive_control and h.probe.positive_control not in probe_targets:
            probe_targets.append(h.probe.positive_control)
    mode = "sequential" if sequential else ("aa" if aa else "fixed")
    return Prepared(registry, h, exp, pname, prof, arms, assignments, overrides, reps,
                    max_reps if sequential else reps, exp.design.blocks, seed, mode, template, probe_targets)


def preview_values(p: Prepared, arm: str, context: dict[str, str], host: str = "host") -> dict[str, Any]:
    """Template values with placeholder run built-ins, for checking templates and diffing arms' configs."""
    from workbench.runner.harness import Harness
    from workbench.runner.lifecycle import builtins

    fake = Harness(root=p.root, experiment=p.experiment, hypothesis=p.hypothesis, profile_name=p.profile_name,
                   profile=p.profile,
                   target=None, context=context, env={}, config_template=None,  # type: ignore[arg-type]
                   artifacts_root=p.root, remote_work=None)
    start = datetime(2000, 1, 1, tzinfo=timezone.utc)
    from workbench.registry.experiment import per_replicate_names

    # A per-replicate variable (a workload seed) is drawn for each replicate; a placeholder stands for it here.
    values: dict[str, Any] = {name: "0" for name in per_replicate_names(p.experiment, p.hypothesis, p.overrides)}
    values.update(p.assignments[arm])
    values.update(context)
    values.update(builtins(fake, PlannedRun(0, arm, 0, 0, host), 0, "/run", start))
    if p.profile.config is not None:
        values["path"] = render_text(p.profile.config.path, values, where="config.path")
    values["file"] = "/tmp/config"
    return values


def preflight(p: Prepared, context: dict[str, str]) -> dict[str, str]:
    """Render every template for every arm; run the local check on each arm's config. Returns the configs."""
    prof = p.profile
    rendered: dict[str, str] = {}
    for arm in p.arms:
        values = preview_values(p, arm, context)
        where = f"profile {p.profile_name!r}"
        if p.config_template is not None:
            from workbench.runner.quoting import render_config as render_quoted

            rendered[arm] = render_quoted(p.config_template, values, p.profile.config.format if p.profile.config
                                          else "raw", where=f"{where} config template")
            if prof.config and prof.config.check:
                render_command(prof.config.check, values, where=f"{where} config.check")
        for i, cmd in enumerate(prof.restart):
            render_command(cmd, values, where=f"{where} restart[{i}]")
        if prof.health:
            for u in prof.health.urls:
                _check_url(p, render_text(u, values, where=f"{where} health.urls"), ("health", "urls"))
        if prof.verify and prof.verify.url:
            _check_url(p, render_text(prof.verify.url, values, where=f"{where} verify.url"), ("verify", "url"))
        if prof.workload:
            render_command(prof.workload.command, values, where=f"{where} workload.command")
        if prof.units:
            render_text(prof.units.path, values, where=f"{where} units.path")
        for name, ex in prof.collect.items():
            if ex.command:
                render_command(ex.command, values, where=f"{where} collect.{name}.command")
        for name, cmd in prof.fingerprint.items():
            render_command(cmd, values, where=f"{where} fingerprint.{name}")
        for name, path in prof.artifacts.items():
            render_text(path, values, where=f"{where} artifacts.{name}")
    for arm, text in rendered.items():
        values = preview_values(p, arm, context)
        problem = asyncio.run(_check(p, text, values))
        if problem:
            raise p.profile_error(f"arm {arm!r}: {problem}", ("config", "check"),
                                  hint="fix the template; nothing was sent to the target")
    p.rendered = rendered
    return rendered


def _check_url(p: Prepared, url: str, field: tuple[str, ...]) -> None:
    """A health or verify URL as rendered must be one wb can ask: http or https, a host, a port of 1 to 65535.
    A typo such as `:118080` was found only at the target, failing every run and the restore's health wait."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError as exc:  # an unclosed [ of an IPv6 address
        parts, problem = None, str(exc)
    if parts is not None:
        try:
            problem = None if parts.port != 0 else "its port is 0"
        except ValueError:  # .port raises for a port out of range or not a number
            problem = "its port is not a number from 1 to 65535"
        if parts.scheme not in ("http", "https") or not parts.hostname:
            problem = "not an http:// or https:// URL with a host name"
    if problem is None:
        return
    raise p.profile_error(f"profile {p.profile_name!r}: {'.'.join(field)} {url!r}: {problem}", field)


async def _check(p: Prepared, text: str, values: dict[str, Any]) -> str | None:
    from workbench.runner.harness import Harness
    from workbench.runner.lifecycle import local_check

    h = Harness(root=p.root, experiment=p.experiment, hypothesis=p.hypothesis, profile_name=p.profile_name,
                profile=p.profile, target=None, context={}, env={}, config_template=None,  # type: ignore[arg-type]
                artifacts_root=p.root, remote_work=None)
    return await local_check(h, text, values)


def arms_config_diff(p: Prepared) -> dict[str, str]:
    """The arms' config diff as it is stored and shown: each secret-named entry masked, the arms' values kept."""
    from workbench.secrets import mask_entries

    keep = {v for assigned in p.assignments.values() for v in assigned.values()}
    masked = {arm: mask_entries(text, keep=keep) or "" for arm, text in p.rendered.items()}
    return config_diff(masked, base=p.arms[0] if p.arms else None)
