"""What every run of one execution shares (Harness): the experiment, the profile, the target and the hooks."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Awaitable, Callable

from workbench.runner.plan import PlannedRun
from workbench.runner.targets.base import Target

if TYPE_CHECKING:
    from workbench.registry.experiment import Experiment, Profile
    from workbench.registry.hypothesis import Hypothesis


@dataclass
class Harness:
    """Everything a run needs that does not change between runs of one execution."""

    root: Path
    experiment: Experiment
    hypothesis: Hypothesis
    profile_name: str
    profile: Profile
    target: Target
    context: dict[str, str]
    env: dict[str, str]
    config_template: str | None
    artifacts_root: Path
    remote_work: str | None  # per-run folders on the target; None: the local artifact folder
    on_stage: Callable[[PlannedRun, str], None] = lambda pr, st: None
    # awaited as each stage begins (tests inject faults)
    fault: Callable[[str, PlannedRun], Awaitable[None]] | None = None
    probe_targets: list[str] = field(default_factory=list)
    restart_timeout_s: float = 300.0
    warn: Callable[[str], None] = lambda text: None
    warned: set[str] = field(default_factory=set)
