"""A loaded workbench folder (Registry) and where its files lie in it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from workbench.errors import BadInput
from workbench.registry.common import did_you_mean, given_value_hint, id_meant
from workbench.registry.experiment import Experiment
from workbench.registry.hypothesis import Hypothesis
from workbench.registry.yamlio import LocatedYaml

HYPOTHESES_FILE = "hypotheses.yaml"
EXPERIMENTS_DIR = "experiments"
# Every file at the top of experiments/ that this matches is read as an experiment definition.
EXPERIMENT_FILES = "*.yaml"


def experiment_files(exp_dir: Path) -> list[Path]:
    """The experiment definitions of the experiments folder `exp_dir`, in name order."""
    return sorted(exp_dir.glob(EXPERIMENT_FILES)) if exp_dir.is_dir() else []


@dataclass
class Registry:
    """A loaded, cross-checked workbench folder."""

    root: Path
    hypotheses: list[Hypothesis]
    experiments: dict[str, Experiment]
    hypotheses_doc: LocatedYaml | None = None
    experiment_docs: dict[str, LocatedYaml] = field(default_factory=dict)
    # The ids of entries a read set apart for a problem of their own (validate.load_apart): not in `hypotheses`,
    # still ids a mistyped one may mean.
    left_out: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from workbench.secrets import register_registry

        # A secret variable's values are masked wherever wb shows or stores them from here on: a check's error,
        # `hypothesis show`, a report page, a bundle. Before the checks, whose errors quote a value.
        register_registry(self)

    @property
    def hypotheses_file(self) -> Path:
        return self.root / HYPOTHESES_FILE

    def hypothesis(self, hid: str) -> Hypothesis:
        for h in self.hypotheses:
            if h.id == hid:
                return h
        known = ", ".join(h.id for h in self.hypotheses) or "none"
        if self.left_out:
            known += f"; left out for a problem of its own: {', '.join(self.left_out)}"
        raise BadInput(f"no hypothesis {hid!r} in {self.hypotheses_file}",
                       hint=id_meant(hid, [*(h.id for h in self.hypotheses), *self.left_out], f"known ids: {known}",
                                     left_out=set(self.left_out) - {h.id for h in self.hypotheses}),
                       where=str(self.hypotheses_file))

    def experiment_for(self, h: Hypothesis) -> Experiment:
        return self.experiments[h.experiment]

    def experiment_path(self, eid: str) -> Path:
        return self.root / EXPERIMENTS_DIR / f"{eid}.yaml"

    def children(self, hid: str) -> list[Hypothesis]:
        return [h for h in self.hypotheses if h.parent == hid]

    def arm_assignment(self, h: Hypothesis, arm: str, overrides: dict[str, str] | None = None) -> dict[str, str]:
        """The full variable assignment of `arm`: experiment defaults, then hold, then overrides, then the arm."""
        exp = self.experiment_for(h)
        values = dict(exp.defaults())
        values.update(h.hold)
        for name, value in (overrides or {}).items():
            if name not in exp.variables:
                raise BadInput(f"--set {name}: experiment {exp.id!r} has no variable {name!r}",
                               hint=did_you_mean(name, exp.variables, f"variables: {', '.join(exp.variables)}"))
            if name == h.isolates:
                raise BadInput(f"--set {name}: {name!r} is the variable {h.id!r} isolates; it differs by arm",
                               hint="--set overrides held variables for every arm")
            try:
                values[name] = exp.variables[name].check(value)
            except ValueError as exc:
                raise BadInput(f"--set {name}: {exc}", hint=given_value_hint(exc, f"--set {name}")) from None
        values.update(h.arms.get(arm, {}))
        return values
