"""The columns of an evidence CSV (historical runs for `wb import evidence`), derived from an experiment.

A history CSV has one row per past run. Its columns are the experiment's own names:
- each declared variable (the value the run had; blank when unknown),
- each metric the run can carry as a number: counts (whole numbers, including counts of units such
  as `clients` or `stale`) and continuous metrics; proportions and aliases are derived, never given,
- each name in the experiment's `workload_parameters` (numbers kept as provenance, not variables),
- bookkeeping: `run_id` (required, unique), `phase`, `source_quote`, `notes`, and any `reported_<what>`
  (a figure as the source reported it, kept as text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.errors import BadInput
from workbench.registry.common import did_you_mean

if TYPE_CHECKING:
    from workbench.registry.experiment import Experiment
    from workbench.registry.folder import Registry

BOOKKEEPING = {
    "run_id": "required: a unique label of the run (the source's name for it)",
    "phase": "free text: when or in which campaign it ran (e.g. 'before abort fix')",
    "source_quote": "free text: the sentence of the source the row transcribes",
    "notes": "free text",
}
REPORTED_PREFIX = "reported_"


@dataclass(frozen=True)
class EvidenceColumns:
    experiment: str
    variables: tuple[str, ...]
    integer_metrics: tuple[str, ...]
    float_metrics: tuple[str, ...]
    workload: tuple[str, ...]
    all_units: tuple[str, ...]  # count metrics that count every unit: also the run's workload size
    # metrics the experiment derives (proportions, same_as aliases), never a column: name -> (how, what to give)
    derived: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    def known(self) -> set[str]:
        return set(self.variables) | set(self.integer_metrics) | set(self.float_metrics) | set(self.workload) \
            | set(BOOKKEEPING)

    def unknown(self, header: list[str]) -> list[str]:
        known = self.known()
        return [c for c in header if c not in known and not c.startswith(REPORTED_PREFIX)]

    def listing(self) -> str:
        parts = [f"variables: {', '.join(self.variables) or 'none'}",
                 f"metrics: {', '.join(self.integer_metrics + self.float_metrics) or 'none'}"]
        if self.workload:
            parts.append(f"workload parameters: {', '.join(self.workload)}")
        parts.append(f"bookkeeping: {', '.join(BOOKKEEPING)}, {REPORTED_PREFIX}*")
        return "; ".join(parts)

    def derived_problem(self, unknown: list[str]) -> tuple[str, str] | None:
        """(what is wrong, what to do) when every unknown column is a metric the experiment derives."""
        how = {name: (formula, inputs) for name, formula, inputs in self.derived}
        if not unknown or any(c not in how for c in unknown):
            return None
        columns, are = ("columns", "are") if len(unknown) > 1 else ("column", "is")
        said = "; ".join(f"{c} {how[c][0]}" for c in unknown)
        give = sorted({i for c in unknown for i in how[c][1]})
        kept = ", ".join(f"{REPORTED_PREFIX}{c}" for c in unknown)
        return (f"{columns} {', '.join(unknown)} {are} derived by experiment {self.experiment!r} ({said}), never "
                f"imported", f"give {', '.join(give)} instead, or keep the figure as text in {kept}")

    def refusal(self, unknown: list[str]) -> tuple[str, str]:
        """(what is wrong, the hint) for columns this experiment does not take (`unknown`, as `unknown` gives them)
        when some are not metrics it derives (see `derived_problem`): those derived are named so in the hint."""
        how = {name: (formula, inputs) for name, formula, inputs in self.derived}
        others = [c for c in unknown if c not in how]
        notes = [f"{c} is derived ({c} {how[c][0]}), never imported: give {', '.join(how[c][1])} instead"
                 for c in unknown if c in how]
        columns = "columns" if len(others) > 1 else "column"
        return f"unknown {columns} {', '.join(others)}", self.hint(others, notes)

    def hint(self, unknown: list[str], notes: list[str] | None = None) -> str:
        """For unknown columns: the column each was likely meant to be, `notes`, then the experiment's columns."""
        listing = f"{self.experiment} columns: {self.listing()}"
        known = sorted(self.known())
        if len(unknown) == 1 and not notes:
            return did_you_mean(unknown[0], known, listing) or listing
        guesses = [f"{c}: {guess}" for c in unknown if (guess := did_you_mean(c, known))]
        return "; ".join([*guesses, *(notes or []), listing])


def evidence_columns(exp: Experiment) -> EvidenceColumns:
    ints, floats, all_units, derived = [], [], [], []
    for name, spec in exp.metrics.items():
        if spec.same_as is not None:
            derived.append((name, f"= {spec.same_as}", (exp.repeated(name),)))
            continue
        if spec.kind == "proportion":
            derived.append((name, f"= {spec.numerator} / {spec.denominator}",
                            (exp.repeated(spec.numerator or ""), exp.repeated(spec.denominator or ""))))
            continue
        (ints if spec.kind == "count" else floats).append(name)
        if spec.units == {}:
            all_units.append(name)
    return EvidenceColumns(exp.id, tuple(exp.variables), tuple(ints), tuple(floats),
                           tuple(exp.workload_parameters), tuple(all_units), tuple(derived))


def pick_experiment(registry: Registry, header: list[str], where: str) -> Experiment:
    """The one experiment whose columns cover the header (used when --experiment is not given)."""
    fits = [e for e in registry.experiments.values() if not evidence_columns(e).unknown(header)]
    if len(fits) == 1:
        return fits[0]
    if len(fits) > 1:
        raise BadInput(f"{where}: the columns fit several experiments ({', '.join(e.id for e in fits)})",
                       hint="name one with --experiment ID")
    if not registry.experiments:
        raise BadInput(f"{where}: this workbench declares no experiment", hint="add experiments/ID.yaml first")
    best = min(registry.experiments.values(), key=lambda e: len(evidence_columns(e).unknown(header)))
    cols = evidence_columns(best)
    unknown = cols.unknown(header)
    if (problem := cols.derived_problem(unknown)) is not None:
        raise BadInput(f"{where}:1: {problem[0]}", hint=problem[1])
    what, hint = cols.refusal(unknown)
    them = "them" if what.startswith("unknown columns") else "it"
    raise BadInput(f"{where}:1: {what} (no experiment has {them}; the closest experiment is {best.id!r})",
                   hint=hint)


def csv_format(registry: Registry | None = None) -> dict[str, Any]:
    """What `wb schema` says about evidence CSVs; with a workbench, each experiment's columns."""
    out: dict[str, Any] = {
        "description": "One row per historical run, imported with `wb import evidence FILE.csv "
                       "[--experiment ID]`. The first line names the columns. Blank cells stay unknown. "
                       "Counts are whole non-negative numbers, never above the denominator of a proportion "
                       "built on them; continuous metrics any finite number (a delta may be negative). "
                       "Keyed on run_id: a row already stored with the same values is skipped, with other "
                       "values refused unless --replace is given.",
        "bookkeeping": {**BOOKKEEPING, f"{REPORTED_PREFIX}<what>": "free text: a figure as the source reported it"},
        "experiment_columns": "each declared variable, each count and continuous metric (not proportions or "
                              "same_as aliases), each name in workload_parameters",
    }
    if registry is not None:
        out["experiments"] = {
            e.id: {"variables": list(c.variables), "count_metrics": list(c.integer_metrics),
                   "continuous_metrics": list(c.float_metrics), "workload_parameters": list(c.workload)}
            for e in registry.experiments.values() for c in [evidence_columns(e)]}
    return out
