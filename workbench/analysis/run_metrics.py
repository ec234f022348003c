"""One stored run's metrics as `wb runs list|show` give them: what was measured (a count as a whole number)
apart from what its experiment derives from it (proportions, `same_as` aliases), which is never stored."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from workbench.analysis.data import rate_counts, stored_value
from workbench.analysis.display import glance, is_proportion
from workbench.store import jsonx

if TYPE_CHECKING:
    from workbench.registry.experiment import Experiment
    from workbench.store.entities import RunRecord

Number = int | float


@dataclass(frozen=True)
class RunMetrics:
    """`measured`: the stored values; `derived`: those the experiment's definitions give from them (a rate
    whose counts are missing, zero or impossible is absent). `note` says why nothing could be derived (no
    experiment to define the metrics); None when the definitions were applied."""

    run_id: int
    measured: dict[str, Number]
    derived: dict[str, Number] = field(default_factory=dict)
    experiment: str | None = None  # whose definitions derived them
    note: str | None = None
    # A derivable metric that could not be derived: the stored values it needs that are missing (empty where all are
    # there and their counts are no rate).
    missing: dict[str, list[str]] = field(default_factory=dict)
    # The metrics (measured or derived) the definitions declare proportions: a table for reading gives them in percent.
    proportions: frozenset[str] = frozenset()

    def lacking(self) -> list[str]:
        """Each derivable metric that is not, with what it lacks: "corruption_rate needs sessions, not recorded"."""
        return [f"{k} needs {' and '.join(need)}, not recorded" if need else f"{k}: its counts give no rate"
                for k, need in sorted(self.missing.items())]

    def read(self, values: Mapping[str, Number]) -> str:
        """`values` (its measured or its derived ones) as `name=value` pairs for reading: `display.glance`."""
        return " ".join(f"{k}={glance(v, k in self.proportions)}" for k, v in sorted(values.items()))

    def to_dict(self) -> dict[str, object]:
        """The keys a run's JSON gives them under (`metrics` holds only what was measured)."""
        return {"metrics": dict(self.measured), "derived_metrics": dict(self.derived),
                "derived_metrics_note": self.note, "derived_metrics_missing": dict(self.missing)}


def run_metrics(run: "RunRecord", exp: "Experiment | None", note: str | None = None) -> RunMetrics:
    """`run`'s metrics by `exp`'s definitions; without `exp`, the stored values as they are and `note` (why)."""
    return metrics_of(run.id, run.metrics, exp, note)


def definitions(run_id: int, experiment_id: str | None, experiment_version: int | None,
                experiments: Mapping[str, "Experiment"], unread: Exception | None = None
                ) -> tuple["Experiment | None", str | None]:
    """(the experiment whose definitions derive a run's metrics, None) or (None, why none does). `unread`: why
    the workbench's experiments could not be read (a ConfigError: its files do not load; else no workbench)."""
    from workbench.errors import ConfigError

    exp = experiments.get(experiment_id) if experiment_id else None
    if exp is not None and experiment_version is not None and experiment_version != exp.version:
        return None, (f"run {run_id} is of {experiment_id} v{experiment_version}; this workbench "
                      f"declares v{exp.version}, whose definitions may differ")
    if exp is not None:
        return exp, None
    if experiment_id is None:
        return None, f"run {run_id} records no experiment to define them"
    if isinstance(unread, ConfigError):
        return None, f"the workbench's files do not load, at {unread.where}: wb hypothesis validate says why"
    if unread is not None:
        return None, f"read without a workbench (--root DIR): {experiment_id}'s definitions are not known"
    return None, f"this workbench declares no experiment {experiment_id!r} to define them"


def metrics_of(run_id: int, stored: Mapping[str, Number], exp: "Experiment | None",
               note: str | None = None) -> RunMetrics:
    """A run's `stored` metrics by `exp`'s definitions; without `exp`, as they are and `note` (why)."""
    if exp is None:
        return RunMetrics(run_id, dict(stored), note=note)
    measured = {k: typed(exp, k, v) for k, v in stored.items()}
    derived: dict[str, Number] = {}
    missing: dict[str, list[str]] = {}
    for name, spec in exp.metrics.items():
        if name not in measured and (spec.kind == "proportion" or spec.same_as is not None):
            value = derived_value(exp, measured, name)
            if value is not None:
                derived[name] = value
            else:
                missing[name] = sorted(set(_lacking(exp, measured, name)))
    rates = frozenset(k for k in [*measured, *derived] if is_proportion(exp, k))
    return RunMetrics(run_id, measured, derived, exp.id, missing=missing, proportions=rates)


def _lacking(exp: "Experiment", measured: Mapping[str, Number], name: str, depth: int = 0) -> list[str]:
    """The stored values `name` is derived from (derived_value's rule) that `measured` lacks."""
    spec = exp.metrics.get(name)
    if name in measured or depth > 8:
        return []
    if spec is None or (spec.same_as is None and spec.kind != "proportion"):
        return [name]
    if spec.same_as is not None:
        return _lacking(exp, measured, spec.same_as, depth + 1)
    return [*_lacking(exp, measured, spec.numerator or "", depth + 1),
            *_lacking(exp, measured, spec.denominator or "", depth + 1)]


def typed(exp: "Experiment", name: str, value: Number) -> Number:
    """A count by its definition is an integer (the store keeps every number as a double), any other declared
    metric a float; an undeclared one as the store gave it."""
    spec = exp.metrics.get(name)
    if spec is None:
        return value
    return jsonx.whole(float(value)) if spec.kind == "count" else float(value)


def derived_value(exp: "Experiment", measured: Mapping[str, Number], name: str) -> Number | None:
    """`name`'s value from a run's stored values: stored, else derived as `exp` declares it (an alias's metric, a
    proportion's numerator over its denominator, by the analysis' `data.stored_value` and `data.rate_counts`); None
    when a value it needs is missing, or the counts are no rate (a zero denominator included). The runs listing and
    the site read derived values through this one rule."""
    spec = exp.metrics.get(exp.repeated(name))
    if name in measured or spec is None or spec.kind != "proportion" or exp.repeated(name) in measured:
        return stored_value(measured, name, exp)
    counts = rate_counts(measured, spec, exp)
    return None if counts is None or not counts[1] else counts[0] / counts[1]