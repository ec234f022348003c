"""The runs an analysis reads, and the metrics an experiment derives from them.

Runs come from the store as `RunData` (variables, declared metrics, unit aggregates; the SQL is the
store's). Metrics that an experiment derives (proportions, aliases, unit counts) are computed here
from its declared definitions, the same way for imported evidence and for new runs; a value nobody
recorded stays None.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from workbench.registry.experiment import Experiment, MetricSpec
from workbench.store.entities import USABLE_STATUSES, RunData, RunQuery

__all__ = ["USABLE_STATUSES", "RunData", "run_query", "metric_value", "proportion_counts", "completed_units",
           "counts_lost_units", "has_completed_reading"]


def run_query(exp: Experiment, *, execution_id: int | None = None, include_imported: bool = True,
              statuses: tuple[str, ...] | None = None, hypothesis_id: str | None = None) -> RunQuery:
    """What to read for `exp`: its declared metrics, unit outcomes and unit-counted metric filters; with
    `hypothesis_id`, only the runs of that hypothesis's executions (and imported evidence, where included)."""
    filters = []
    for name, spec in exp.metrics.items():
        if spec.units is not None:
            filters.append((name, tuple((f, tuple(str(v) for v in (vals if isinstance(vals, list) else [vals])))
                                        for f, vals in spec.units.items())))
    return RunQuery(experiment_id=exp.id, metrics=tuple(exp.metrics),
                    outcome_field=exp.unit.outcome_field if exp.unit else "outcome",
                    completed=tuple(exp.unit.completed) if exp.unit else (),
                    outcomes=tuple(exp.unit.outcomes) if exp.unit else (), unit_filters=tuple(filters),
                    reason_field=exp.unit.reason_field if exp.unit else None,
                    execution_id=execution_id, include_imported=include_imported, statuses=statuses,
                    hypothesis_id=hypothesis_id)


# ----------------------------------------------------------------------------- metric definitions

def metric_value(run: RunData, name: str, exp: Experiment) -> float | None:
    """A count or continuous metric of one run: stored, else derived by the experiment's definition."""
    return stored_value(run.metrics, name, exp, run.unit_counts if run.units_total > 0 else None)


def stored_value(values: Mapping[str, float], name: str, exp: Experiment,
                 units: Mapping[str, float] | None = None, _depth: int = 0) -> float | None:
    """`name`'s value among a run's stored `values`: stored, else its alias's (same_as), else its count among the
    run's `units` counts (where it recorded units); None when none of them has it. A proportion is not derived
    here (`rate_counts` gives its counts)."""
    if name in values:
        return values[name]
    spec = exp.metrics.get(name)
    if spec is None or _depth > 8:  # the loader refuses alias loops; the bound only keeps a bug from recursing
        return None
    if spec.same_as is not None:
        return stored_value(values, spec.same_as, exp, units, _depth + 1)
    if spec.units is not None and units and name in units:
        return float(units[name])
    return None


def proportion_counts(run: RunData, spec: MetricSpec, exp: Experiment) -> tuple[float, float] | None:
    """(numerator, denominator) of a proportion for one run, or None when either is unknown or the pair is no
    rate (`impossible_counts`)."""
    return rate_counts(run.metrics, spec, exp, run.unit_counts if run.units_total > 0 else None)


def rate_counts(values: Mapping[str, float], spec: MetricSpec, exp: Experiment,
                units: Mapping[str, float] | None = None) -> tuple[float, float] | None:
    """(numerator, denominator) of the proportion `spec` from a run's stored `values` (and `units` counts), or None
    when either is unknown or the pair is no rate (`impossible_counts`). The analysis, the runs listing and the
    site read a rate's counts through this one rule."""
    assert spec.numerator is not None and spec.denominator is not None
    k = stored_value(values, spec.numerator, exp, units)
    n = stored_value(values, spec.denominator, exp, units)
    if k is None or n is None or impossible_counts(k, n):
        return None
    return (k, n)


def impossible_counts(k: float, n: float) -> bool:
    """A numerator above its denominator, or below 0: the run measured no rate. wb's collect stage makes such a
    run invalid, but a store may hold one an older wb recorded, and the analysis leaves it out rather than fail."""
    return k < 0 or k > n


def counts_lost_units(spec: MetricSpec, exp: Experiment) -> bool:
    """Whether a proportion's numerator counts units that did not complete (errored sessions of all sessions),
    alone or among completed ones, or units of any outcome (a filter on another field, such as the error's text):
    over completed units such a rate has no reading, since its numerator holds units the denominator leaves out
    (a rate above 1 where most of them were lost). A numerator not counted from units is taken as it is."""
    num = exp.metrics.get(exp.repeated(spec.numerator)) if spec.numerator else None
    if exp.unit is None or num is None or num.units is None:
        return False
    if exp.unit.outcome_field not in num.units:
        return True
    wanted = num.units[exp.unit.outcome_field]
    return any(str(v) not in exp.unit.completed for v in (wanted if isinstance(wanted, list) else [wanted]))


def has_completed_reading(spec: MetricSpec, exp: Experiment, runs: Iterable[RunData] = ()) -> bool:
    """Whether a rate is read over completed units too (the attrition check, an isolate probe's look): a
    proportion of an experiment that declares which outcomes complete, unless its numerator counts lost units,
    by its definition or, for a count not taken from units (a collected `timeouts`), by one of `runs` counting
    more than the units it completed."""
    if spec.kind != "proportion" or exp.unit is None or not exp.unit.completed or counts_lost_units(spec, exp):
        return False
    for run in runs:
        kn, cu = proportion_counts(run, spec, exp), completed_units(run, exp)
        if kn is not None and cu is not None and kn[0] > cu[1]:
            return False
    return True


def completed_units(run: RunData, exp: Experiment) -> tuple[float, float] | None:
    """(all units, completed units) of a run, from its unit rows, else from per-outcome count metrics."""
    if run.units_total > 0:
        return (float(run.units_total), float(run.units_completed))
    if exp.unit is None or not exp.unit.completed:
        return None
    by_outcome: dict[str, str] = {}
    total_metric = None
    for mname, spec in exp.metrics.items():
        if spec.units is None:
            continue
        if not spec.units:
            total_metric = mname
            continue
        if list(spec.units) == [exp.unit.outcome_field]:
            val = spec.units[exp.unit.outcome_field]
            if isinstance(val, str):
                by_outcome[val] = mname
    if total_metric is None:
        return None
    total = metric_value(run, total_metric, exp)
    if total is None:
        return None
    done = 0.0
    for outcome in exp.unit.completed:
        mname = by_outcome.get(outcome)
        v = metric_value(run, mname, exp) if mname else None
        if v is None:
            # Completed = total minus the non-completed outcomes, when those are all known instead.
            lost = 0.0
            for other in exp.unit.outcomes:
                if other in exp.unit.completed:
                    continue
                om = by_outcome.get(other)
                ov = metric_value(run, om, exp) if om else None
                if ov is None:
                    return None
                lost += ov
            return (total, total - lost)
        done += v
    return (total, done)
