"""Schema of `experiments/*.yaml`: the harness — variables, metrics, design, and target profiles.

An experiment says *how* to run arms on a target: render a config, apply it, restart, wait for
health, run the workload, collect metrics, restore. Hypotheses say *which* arms to run.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from workbench.registry.common import (Flag, FormatOne, Ident, Int, NotAmong, Number, Port, ReplicateBudget,
                                       Replicates, Seed, Strict, VarValue, control_char, did_you_mean)
from workbench.secrets import MASK

# Names every template may use besides the experiment's variables and a profile's `context`.
BUILTIN_TEMPLATE_NAMES = frozenset({
    "arm", "replicate", "run_id", "run_dir", "run_start", "run_start_iso", "run_start_epoch",
    "host", "file", "path", "experiment_id", "hypothesis_id", "sim_dir", "work_dir", "units_path",
    "python", "wb", "workbench_dir", "config_sha256",
})
# Built-ins a profile's context may set: wb reads them from the context (the folder pdsim serves from).
SETTABLE_BUILTINS = frozenset({"sim_dir"})
# The rest are computed by wb for each run; a context key of the same name would be replaced silently.
RESERVED_TEMPLATE_NAMES = BUILTIN_TEMPLATE_NAMES - SETTABLE_BUILTINS


class VariableSpec(Strict):
    """One knob of the deployment. `values` lists the allowed values (text); `type` checks numbers."""

    values: list[VarValue] | None = None
    type: Literal["str", "int", "float"] = "str"
    default: VarValue | None = None
    description: str = ""
    secret: Flag = False  # its value is redacted wherever wb stores or shows it
    min: Number | None = Field(default=None, description="smallest allowed value (int and float variables)")
    max: Number | None = Field(default=None, description="largest allowed value (int and float variables)")
    per_replicate: Flag = Field(default=False, description=(
        "an int the runner draws afresh for each replicate (both arms of a replicate share it), "
        "from the execution's seed, unless --set, the hypothesis's hold or its arms fix it"))

    @field_validator("values")
    @classmethod
    def _single_line_values(cls, values: list[str] | None) -> list[str] | None:
        # An allowed value no default, arm or --set could ever take (each refuses a control character).
        seen: dict[str, int] = {}
        for i, value in enumerate(values or []):
            bad = control_char(str(value))
            if bad:
                raise ValueError(f"value {i + 1} of the list contains a {bad}: values are single-line text")
            # A repeat is a typo (one meant another value) or a paste: either way the list is not what was meant.
            if str(value) in seen:
                raise ValueError(f"value {i + 1} of the list ({value!r}) repeats value {seen[str(value)]}: each "
                                 "allowed value is listed once")
            seen[str(value)] = i + 1
        return values

    @model_validator(mode="after")
    def _default_allowed(self) -> "VariableSpec":
        if self.default is not None:
            self.check(self.default)
        if self.per_replicate and (self.type != "int" or self.values is not None):
            raise ValueError("per_replicate needs type: int (and no values list)")
        return self

    def check(self, value: str) -> str:
        """`value` (canonical text) if allowed, else ValueError naming the allowed values. A secret variable's
        errors name neither its value nor its allowed values: they are checked before they can be redacted."""
        shown = MASK if self.secret else repr(value)
        bad = control_char(str(value))
        if bad:
            raise ValueError(f"{shown} contains a {bad if not self.secret else 'control character'}: "
                             "values are single-line text")
        if self.values is not None and value not in self.values:
            allowed = f"{len(self.values)} allowed values (not shown: the variable is secret)" if self.secret \
                else ", ".join(self.values)
            raise NotAmong(f"{shown} is not one of {allowed}",
                           hint=None if self.secret else did_you_mean(value, self.values),
                           values=() if self.secret else self.values)
        if self.type == "int":
            try:
                int(value)
            except ValueError:
                raise ValueError(f"{shown} is not an integer") from None
        if self.type == "float":
            try:
                number = float(value)
            except ValueError:
                raise ValueError(f"{shown} is not a number") from None
            if number != number or number in (float("inf"), float("-inf")):
                raise ValueError(f"{shown} is not a finite number")
        if self.type in ("int", "float"):
            number = float(value)
            if self.min is not None and number < self.min:
                raise ValueError(f"{shown} is below the smallest allowed value {_whole(self.min)}")
            if self.max is not None and number > self.max:
                raise ValueError(f"{shown} is above the largest allowed value {_whole(self.max)}")
        return value


def _whole(bound: float) -> str:
    """A bound as written in the file: 4294967295, not 4.29497e+09."""
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


class MetricSpec(Strict):
    """A number per run. Extracted by a profile's `collect`, counted from units, or derived.

    kind: count (non-negative integer), proportion (numerator / denominator counts, analysed as
    binomial), continuous (medians, rank tests).
    """

    kind: Literal["count", "proportion", "continuous"]
    description: str = ""
    numerator: str | None = None
    denominator: str | None = None
    same_as: str | None = None
    units: dict[str, VarValue | list[VarValue]] | None = Field(
        default=None, description="count the units whose fields match (an empty mapping counts all units)")
    guard: Flag = Field(default=False, description="a health/validity signal (aborts, errors), scanned for confounds")

    @model_validator(mode="after")
    def _shape(self) -> "MetricSpec":
        sources = [self.numerator is not None, self.same_as is not None, self.units is not None]
        if self.kind == "proportion":
            if self.numerator is None or self.denominator is None:
                raise ValueError("a proportion needs numerator and denominator (names of count metrics)")
        elif self.numerator is not None or self.denominator is not None:
            raise ValueError("numerator/denominator belong to kind: proportion")
        if sum(sources) > 1:
            raise ValueError("give at most one of numerator/denominator, same_as, units")
        if self.units is not None and self.kind != "count":
            raise ValueError("a metric counted from units has kind: count")
        return self

    @property
    def derived(self) -> bool:
        return self.kind == "proportion" or self.same_as is not None or self.units is not None


class UnitSpec(Strict):
    """What one independent observation inside a run is (a session of the repro harness)."""

    name: str = "unit"
    outcome_field: str = "outcome"
    outcomes: list[str] = Field(default_factory=list)
    completed: list[str] = Field(default_factory=list,
                                 description="outcomes that count as completed (attrition check)")
    reason_field: str | None = Field(default="error", description=(
        "the unit field that says why a unit did not complete (an error message); the attrition and guard "
        "checks quote its commonest messages. Units without it say nothing; null turns it off"))

    @field_validator("reason_field", mode="before")
    @classmethod
    def _reason_field_is_a_name(cls, v: Any) -> Any:
        # The store reads it out of each unit's JSON by name. A number is told what a name is here: the generic
        # "must be text: quote it" sent `reason_field: 5` to "5", which is no name either. A yes/no word goes on
        # to the check that says to quote it (quoted, it is a name).
        number = isinstance(v, (int, float)) and not isinstance(v, bool)
        if number or isinstance(v, str) and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            raise ValueError(f"{v!r} is not a field name (letters, digits and '_', not starting with a digit)")
        return v


class Design(Strict):
    replicates: Replicates = 2
    blocks: Literal["abba", "random", "alternate"] = "abba"
    seed: Seed | None = Field(default=None, description=(
        "the execution seed (arm order in blocks, per-replicate values); --seed overrides it; drawn when absent"))
    max_replicates: ReplicateBudget = Field(default=12, description="budget for --sequential")


class HealthSpec(Strict):
    urls: list[str] = Field(min_length=1)
    attempts: Int = Field(default=36, ge=1, le=10000)
    interval_s: Number = Field(default=5.0, gt=0, le=3600)
    timeout_s: Number = Field(default=3.0, gt=0, le=600)


class ConfigSpec(Strict):
    """The config file the runner rewrites per arm (a serve script), and how to check it locally."""

    path: str
    template: str | None = None
    template_file: str | None = None
    check: str | None = Field(default=None, description="local command on the rendered file, e.g. bash -n {{ file }}")
    mode: str = "0644"
    format: Literal["bash", "env", "yaml", "json", "ini", "raw"] = Field(
        default="raw", description="the file's syntax: every value is quoted for it (raw: as written)")

    @field_validator("path")
    @classmethod
    def _path_named(cls, v: str) -> str:
        if not v.strip():  # at run time it named the current folder: 'cannot read serve file .'
            raise ValueError("config.path is empty: name the file the runner rewrites per arm "
                             "(e.g. \"{{ sim_dir }}/serve.sh\")")
        return v

    @field_validator("mode")
    @classmethod
    def _octal_mode(cls, v: str) -> str:
        if not re.fullmatch(r"0?[0-7]{3,4}", v):
            raise ValueError(f"mode {v!r} is not an octal permission such as \"0644\"")
        return v

    @model_validator(mode="after")
    def _one_template(self) -> "ConfigSpec":
        if (self.template is None) == (self.template_file is None):
            raise ValueError("give exactly one of template (inline) or template_file")
        return self


class WorkloadSpec(Strict):
    command: str
    timeout_s: Number = Field(default=1800, gt=0, le=7 * 24 * 3600)


class Extractor(Strict):
    """How to read one metric: a regex over the workload output, a command's output, or a numeric field
    of the per-unit records (`unit_field`: summed, or the number of units where it is non-zero)."""

    regex: str | None = None
    source: Literal["output", "stdout", "stderr"] = "output"
    command: str | None = None
    unit_field: str | None = None
    aggregate: Literal["sum", "nonzero"] = "nonzero"
    parse: Literal["int", "float"] = "float"
    timeout_s: Number = Field(default=60, gt=0, le=3600)

    @model_validator(mode="after")
    def _one(self) -> "Extractor":
        if sum(x is not None for x in (self.regex, self.command, self.unit_field)) != 1:
            raise ValueError("give exactly one of regex, command or unit_field")
        if self.regex is not None:
            import re

            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"invalid regex: {exc}") from None
        return self


class UnitsSource(Strict):
    path: str
    format: Literal["jsonl"] = "jsonl"


class TargetSpec(Strict):
    kind: Literal["sim", "local", "ssh", "kernel"]
    hosts: list[str] = Field(default_factory=list)
    user: str | None = None
    port: Port | None = None
    known_hosts: str | None = None
    identity_file: str | None = None
    jump: str | None = None
    keepalive_s: Number = 15
    connect_timeout_s: Number = 10
    ca_file: str | None = Field(default=None, description="PEM file of the CA certificates that https health and "
                                "verify URLs are checked against (on the machine running wb; default: those "
                                "$SSL_CERT_FILE / $SSL_CERT_DIR name, else the public CAs)")

    @field_validator("jump")
    @classmethod
    def _jump_hops(cls, jump: str | None) -> str | None:
        # The runner connects hop by hop through the comma-separated chain: an empty hop was the host "".
        if jump is not None:
            for i, hop in enumerate(jump.split(","), start=1):
                if not hop.strip():
                    raise ValueError(f"jump {jump!r}: hop {i} is empty (give [user@]host[:port] hops separated by "
                                     "commas, or leave jump out to connect directly)")
                port = hop.strip().rpartition("@")[2].rpartition(":")[2]  # as the runner reads it (parse_jump)
                if ":" in hop and port.isdigit() and not 1 <= int(port) <= 65535:
                    raise ValueError(f"jump {jump!r}: hop {i}'s port {port} is not 1-65535")
        return jump

    @model_validator(mode="after")
    def _hosts(self) -> "TargetSpec":
        if self.kind == "ssh" and not self.hosts:
            raise ValueError("an ssh target needs hosts")
        return self


class VerifySpec(Strict):
    """The manipulation check: a URL (GET, as the target sees it) or a command whose output must contain
    every `contains` text, rendered per arm, once the service is healthy."""

    url: str | None = None
    command: str | None = None
    contains: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def _one(self) -> "VerifySpec":
        if (self.url is None) == (self.command is None):
            raise ValueError("give exactly one of url or command")
        return self


class Profile(Strict):
    description: str = ""
    target: TargetSpec
    context: dict[str, str] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    config: ConfigSpec | None = None
    restart: list[str] = Field(default_factory=list)
    health: HealthSpec | None = None
    verify: VerifySpec | None = None
    workload: WorkloadSpec | None = None
    units: UnitsSource | None = None
    collect: dict[str, Extractor] = Field(default_factory=dict)
    fingerprint: dict[str, str] = Field(default_factory=dict)
    artifacts: dict[str, str] = Field(default_factory=dict,
                                      description="name -> path on the target, fetched after each run")
    options: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        # Over SSH each entry is exported by the remote shell (`export NAME=value`): a name it cannot take was
        # dropped there, while a local command gets any name in its environment.
        target = info.data.get("target")
        if target is not None and target.kind == "ssh":
            for name in env:
                if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                    raise ValueError(f"env name {name!r} is not a shell variable name (letters, digits and _, "
                                     "not starting with a digit): the ssh target exports it in the host's shell")
        return env


class Experiment(Strict):
    format: FormatOne = 1
    id: Ident
    version: Int = Field(default=1, ge=1, description="bump when the harness changes what it measures")
    description: str = ""
    variables: dict[str, VariableSpec]
    unit: UnitSpec | None = None
    metrics: dict[str, MetricSpec]
    workload_parameters: list[str] = Field(
        default_factory=list, description="workload settings a history CSV may record per run (kept as provenance)")
    design: Design = Field(default_factory=Design)
    default_profile: str
    profiles: dict[str, Profile] = Field(min_length=1)

    @field_validator("variables")
    @classmethod
    def _names(cls, v: dict[str, VariableSpec]) -> dict[str, VariableSpec]:
        for name in v:
            if not name.isidentifier():
                raise ValueError(f"variable name {name!r} is not an identifier")
        return v

    def defaults(self) -> dict[str, str]:
        return {k: spec.default for k, spec in self.variables.items() if spec.default is not None}

    def produced_metrics(self) -> set[str]:
        return set(self.metrics)

    def repeated(self, metric: str) -> str:
        """The metric whose values `metric` carries: itself, or the end of its same_as chain. An alias reads, and
        is judged, as the metric it repeats (an alias of a proportion is a proportion: k of n, not a median)."""
        seen = {metric}
        while (spec := self.metrics.get(metric)) is not None and spec.same_as and spec.same_as not in seen:
            metric = spec.same_as
            seen.add(metric)
        return metric


def per_replicate_names(experiment: "Experiment", hypothesis: Any, overrides: dict[str, str]) -> list[str]:
    """Per-replicate variables that nothing fixes (not --set, not the hypothesis's hold or arms)."""
    fixed = set(overrides) | set(hypothesis.hold)
    for assignment in hypothesis.arms.values():
        fixed |= set(assignment)
    return [n for n, spec in experiment.variables.items() if spec.per_replicate and n not in fixed]
