"""Loading runs for analysis: one SQL pass for runs, one for metrics, one aggregate over units.

Per-unit rows are never pulled into Python: counts per run (all, completed, each unit-counted
metric) are summed by the database, so 10^6 units cost one GROUP BY. Metrics that an experiment
derives (proportions, aliases, unit counts) are computed here from its declared definitions, the
same way for imported evidence and for new runs; a value nobody recorded stays None.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from workbench.registry.experiment import Experiment, MetricSpec

# Runs that carry evidence; the others (failed, interrupted, ...) are counted as attrition, not analysed.
USABLE_STATUSES = ("ok", "historical")


@dataclass
class RunData:
    id: int
    label: str | None
    arm: str | None
    status: str
    source: str
    execution_id: int | None
    experiment_version: int | None
    replicate: int | None
    block: int | None
    order_index: int | None
    variables: dict[str, str]
    config_hash: str | None
    fingerprint: dict[str, Any]
    metrics: dict[str, float] = field(default_factory=dict)
    units_total: int = 0
    units_completed: int = 0
    unit_counts: dict[str, int] = field(default_factory=dict)  # metric name -> units matching its filter
    outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.label or f"run {self.id}"


def _json(text: str | None) -> Any:
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return {}


def _fetch(conn: Any, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Rows as plain tuples. On DuckDB the driver fetches directly (no per-row SQLAlchemy objects):
    this is what keeps 10^4 runs and 10^5 metric rows well under a second."""
    import re

    if conn.dialect.name == "duckdb":
        raw = conn.connection.driver_connection
        used = {k: v for k, v in params.items() if re.search(rf":{k}\b", sql)}
        return raw.execute(re.sub(r":(\w+)\b", r"$\1", sql), used).fetchall()
    from sqlalchemy import text

    return [tuple(r) for r in conn.execute(text(sql), params).all()]


def _unit_condition(field_name: str, values: Any, exp: Experiment, dialect: str, params: dict[str, Any],
                    key: str) -> str | None:
    """SQL condition for one unit filter field; None when the field name is unsafe to put in SQL."""
    vals = values if isinstance(values, list) else [values]
    names = []
    for i, v in enumerate(vals):
        params[f"{key}_{i}"] = str(v)
        names.append(f":{key}_{i}")
    outcome_field = exp.unit.outcome_field if exp.unit else "outcome"
    if field_name == outcome_field:
        col = "outcome"
    elif field_name == "rounds":
        col = "CAST(rounds AS VARCHAR)"
    elif field_name.isidentifier():
        col = (f"json_extract_string(data_json, '$.{field_name}')" if dialect == "duckdb"
               else f"(CAST(data_json AS json) ->> '{field_name}')")
    else:
        return None
    return f"{col} IN ({', '.join(names)})"


def load_runs(session: Any, exp: Experiment, *, execution_id: int | None = None,
              include_imported: bool = True, statuses: tuple[str, ...] | None = None) -> list[RunData]:
    """Every run of `exp` (of one execution when given), with stored metrics and unit aggregates."""
    conn = session.connection()
    dialect = conn.dialect.name
    params: dict[str, Any] = {"e": exp.id}
    where = ["experiment_id = :e"]
    if execution_id is not None:
        if include_imported:
            where.append("(execution_id = :x OR source = 'import')")
        else:
            where.append("execution_id = :x")
        params["x"] = execution_id
    elif not include_imported:
        where.append("source <> 'import'")
    if statuses is not None:
        where.append("status IN (" + ", ".join(f":s{i}" for i in range(len(statuses))) + ")")
        params.update({f"s{i}": s for i, s in enumerate(statuses)})
    cond = " AND ".join(where)
    rows = _fetch(conn,
                  "SELECT id, label, arm, status, source, execution_id, experiment_version, replicate, block, "
                  f"order_index, variables_json, config_hash, fingerprint_json FROM runs WHERE {cond} ORDER BY id",
                  params)
    parsed: dict[str | None, Any] = {}  # runs of one arm share their JSON text: parse each text once

    def once(txt: str | None, variables: bool) -> Any:
        key = ("v" if variables else "f") + (txt or "")
        if key not in parsed:
            val = _json(txt) or {}
            parsed[key] = {k: str(v) for k, v in val.items()} if variables and isinstance(val, dict) else val
        return parsed[key]

    runs = {int(r[0]): RunData(id=int(r[0]), label=r[1], arm=r[2], status=r[3], source=r[4], execution_id=r[5],
                               experiment_version=r[6], replicate=r[7], block=r[8], order_index=r[9],
                               variables=once(r[10], True), config_hash=r[11], fingerprint=once(r[12], False))
            for r in rows}
    if not runs:
        return []
    sub = f"SELECT id FROM runs WHERE {cond}"
    # The declared metrics, pivoted by the database into one row per run (names outside the experiment's
    # declaration cannot enter a verdict, so they are not read).
    names = list(exp.metrics)
    cols = []
    for i, name in enumerate(names):
        params[f"m{i}"] = name
        cols.append(f"MAX(CASE WHEN name = :m{i} THEN value END)")
    if names:
        for rec in _fetch(conn, f"SELECT run_id, {', '.join(cols)} FROM metrics WHERE run_id IN ({sub}) "
                                "GROUP BY run_id", params):
            run = runs.get(int(rec[0]))
            if run is not None:
                run.metrics = {n: float(v) for n, v in zip(names, rec[1:]) if v is not None}

    # One aggregate over units, per run: total, completed, each declared outcome, each unit-counted metric.
    uparams = dict(params)
    sums = ["COUNT(*)"]
    completed = list(exp.unit.completed) if exp.unit else []
    if completed:
        sums.append("SUM(CASE WHEN outcome IN (" + ", ".join(f":c{i}" for i in range(len(completed))) +
                    ") THEN 1 ELSE 0 END)")
        uparams.update({f"c{i}": c for i, c in enumerate(completed)})
    else:
        sums.append("COUNT(*)")
    outcomes = list(exp.unit.outcomes) if exp.unit else []
    for i, o in enumerate(outcomes):
        sums.append(f"SUM(CASE WHEN outcome = :o{i} THEN 1 ELSE 0 END)")
        uparams[f"o{i}"] = o
    counted: list[str] = []
    for j, (mname, spec) in enumerate(exp.metrics.items()):
        if spec.units is None:
            continue
        conds = []
        for i, (fname, fval) in enumerate(spec.units.items()):
            c = _unit_condition(fname, fval, exp, dialect, uparams, f"u{j}_{i}")
            if c is None:
                break
            conds.append(c)
        else:
            sums.append(f"SUM(CASE WHEN {' AND '.join(conds)} THEN 1 ELSE 0 END)" if conds else "COUNT(*)")
            counted.append(mname)
    for rec in _fetch(conn, f"SELECT run_id, {', '.join(sums)} FROM units WHERE run_id IN ({sub}) GROUP BY run_id",
                      uparams):
        run = runs.get(int(rec[0]))
        if run is None:
            continue
        run.units_total = int(rec[1] or 0)
        run.units_completed = int(rec[2] or 0)
        by_outcome = {o: int(v or 0) for o, v in zip(outcomes, rec[3:3 + len(outcomes)])}
        other = run.units_total - sum(by_outcome.values())
        if other:
            by_outcome["other"] = other
        run.outcomes = {o: n for o, n in by_outcome.items() if n}
        run.unit_counts = {m: int(v or 0) for m, v in zip(counted, rec[3 + len(outcomes):])}
    return list(runs.values())


def rendered_configs(session: Any, hashes: list[str]) -> dict[str, str]:
    """One rendered config per config hash (only the distinct ones are read)."""
    from sqlalchemy import text

    if not hashes:
        return {}
    params = {f"h{i}": h for i, h in enumerate(hashes)}
    rows = session.connection().execute(text(
        "SELECT config_hash, MIN(rendered_config) FROM runs WHERE config_hash IN (" +
        ", ".join(f":h{i}" for i in range(len(hashes))) + ") GROUP BY config_hash"), params).all()
    return {r[0]: r[1] for r in rows if r[1] is not None}


# ----------------------------------------------------------------------------- metric definitions

def metric_value(run: RunData, name: str, exp: Experiment, _depth: int = 0) -> float | None:
    """A count or continuous metric of one run: stored, else derived by the experiment's definition."""
    if name in run.metrics:
        return run.metrics[name]
    spec = exp.metrics.get(name)
    if spec is None or _depth > 8:
        return None
    if spec.same_as is not None:
        return metric_value(run, spec.same_as, exp, _depth + 1)
    if spec.units is not None and run.units_total > 0 and name in run.unit_counts:
        return float(run.unit_counts[name])
    return None


def proportion_counts(run: RunData, spec: MetricSpec, exp: Experiment) -> tuple[float, float] | None:
    """(numerator, denominator) of a proportion for one run, or None when either is unknown."""
    assert spec.numerator is not None and spec.denominator is not None
    k = metric_value(run, spec.numerator, exp)
    n = metric_value(run, spec.denominator, exp)
    if k is None or n is None:
        return None
    return (k, n)


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
