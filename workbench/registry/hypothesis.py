"""Schema of `hypotheses.yaml`: falsifiable claims, their arms, predictions, guards and lineage."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from workbench.registry.common import (FormatOne, Ident, Index, Region, ReplicateBudget, Replicates, Seed, Strict,
                                       VarValue)


def _arm_name(name: str) -> str:
    if not name.isidentifier():
        raise ValueError(f"arm name {name!r} is not an identifier (letters, digits and _, not starting with a digit)")
    return name


# A check on the key itself: its error is located at the arm's line, not at `arms:`.
ArmName = Annotated[str, AfterValidator(_arm_name)]

Status = Literal["open", "supported", "falsified", "inconclusive", "invalid"]
Kind = Literal["ab", "reachability", "kernel", "config"]


class Prediction(Region):
    """A region for a metric in one arm, or for the difference `difference[0] - difference[1]`."""

    metric: str = "calls"
    arm: str | None = None
    difference: tuple[str, str] | None = None
    target: str | None = Field(default=None, description="reachability: the probed code object")
    why: str = ""

    @model_validator(mode="after")
    def _where(self) -> "Prediction":
        if self.arm is not None and self.difference is not None:
            raise ValueError("give arm or difference, not both")
        if self.difference is not None and self.difference[0] == self.difference[1]:
            raise ValueError("difference needs two different arms")
        return self

    @property
    def region(self) -> Region:
        return Region(at_least=self.at_least, at_most=self.at_most, equals=self.equals, between=self.between)

    def reads(self, arm_names: Iterable[str]) -> set[str]:
        """The arms it reads: its one arm, both arms of its difference, every arm where it names none."""
        return set(self.difference) if self.difference else {self.arm} if self.arm is not None else set(arm_names)

    def describe(self) -> str:
        where = f"{self.difference[0]} - {self.difference[1]}" if self.difference else (self.arm or "every arm")
        what = f"calls to {self.target}" if self.target else self.metric
        return f"{what} ({where}) {self.region.describe()}"


class Guard(Region):
    """A condition a metric must meet for the result to be valid (e.g. aborts == 0 in treatment)."""

    metric: str
    arm: str | None = Field(default=None, description="the arm it applies to; all arms when omitted")
    why: str = ""

    def describe(self) -> str:
        return f"{self.metric} ({self.arm or 'every arm'}) {Region.describe(self)}"


class Assumption(Strict):
    text: str
    tested_by: str | None = Field(default=None, description="id of the hypothesis that tests it")


class ProbeSpec(Strict):
    """Reachability: code objects to count calls to, and one that must be hit for 0 to mean anything."""

    targets: list[str] = Field(min_length=1)
    positive_control: str | None = None

    @field_validator("targets")
    @classmethod
    def _shape(cls, v: list[str]) -> list[str]:
        for t in v:
            if ":" not in t:
                raise ValueError(f"probe target {t!r} must look like package.module:Qualified.name")
        return v


class Generated(Strict):
    """Marks a hypothesis a tool wrote (e.g. a probe of `wb isolate`), not a person."""

    by: str = Field(min_length=1, description="the tool, e.g. isolate")
    search: str = Field(min_length=1, description="id of the search that generated it")
    probe: Index | None = Field(default=None, description="the probe's index in that search")
    verdict: str | None = Field(default=None, description="the verdict the search recorded for it")


class DesignOverride(Strict):
    replicates: Replicates | None = None
    max_replicates: ReplicateBudget | None = None
    seed: Seed | None = None


class Hypothesis(Strict):
    id: Ident
    parent: Ident | None = None
    claim: str = Field(min_length=1)
    kind: Kind = "ab"
    status: Status = "open"
    experiment: Ident
    profile: str | None = None
    isolates: str | None = None
    arms: dict[ArmName, dict[str, VarValue]] = Field(default_factory=dict)
    hold: dict[str, VarValue] = Field(default_factory=dict)
    predicts: list[Prediction] = Field(min_length=1)
    falsified_if: str = Field(default="", description="in words: the result that would falsify the claim")
    requires: list[Guard] = Field(default_factory=list)
    assumptions: list[Assumption] = Field(default_factory=list)
    probe: ProbeSpec | None = None
    design: DesignOverride | None = None
    generated: Generated | None = None
    notes: str = ""

    @field_validator("assumptions", mode="before")
    @classmethod
    def _assumption_text(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"text": a} if isinstance(a, str) else a for a in v]
        return v

    @model_validator(mode="after")
    def _kind_shape(self) -> "Hypothesis":
        if self.kind in ("ab", "kernel"):
            if not self.isolates:
                raise ValueError(f"a hypothesis of kind {self.kind} names the variable it isolates (isolates:)")
            if len(self.arms) < 2:
                raise ValueError("an A/B hypothesis needs at least two arms (control and treatment)")
        if self.kind == "reachability":
            if self.probe is None:
                raise ValueError("a reachability hypothesis needs probe: {targets: [...], positive_control: ...}")
            if len(self.arms) > 1:
                raise ValueError("a reachability hypothesis runs one arm")
        if self.kind == "config":
            # A claim about one configuration (its arm's metric lies in a region): nothing is isolated.
            if self.isolates is not None or len(self.arms) != 1:
                raise ValueError("a config hypothesis has exactly one arm and isolates nothing")
        return self

    @property
    def arm_names(self) -> list[str]:
        return list(self.arms) or ["probe"]


class HypothesesFile(Strict):
    format: FormatOne = 1
    hypotheses: list[Hypothesis]
