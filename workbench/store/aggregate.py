"""Runs for analysis: one SQL pass for runs, one for metrics, one aggregate over units.

Per-unit rows are never pulled into Python: counts per run (all, completed, each unit-counted
metric) are summed by the database, so 10^6 units cost one GROUP BY.
"""

from __future__ import annotations

import json
import re
from typing import Any

from workbench.secrets import register_stored
from workbench.store.entities import LONG_NUMBER, ProbeCountRecord, RunData, RunQuery


def _json(text: str | None) -> Any:
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return {}


def fetch(conn: Any, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Rows as plain tuples. On DuckDB the driver fetches directly (no per-row SQLAlchemy objects):
    this is what keeps 10^4 runs and 10^5 metric rows well under a second."""
    if conn.dialect.name == "duckdb":
        raw = conn.connection.driver_connection
        used = {k: v for k, v in params.items() if re.search(rf":{k}\b", sql)}
        return raw.execute(re.sub(r":(\w+)\b", r"$\1", sql), used).fetchall()
    from sqlalchemy import text

    return [tuple(r) for r in conn.execute(text(sql), params).all()]


def _unit_condition(field_name: str, values: tuple[str, ...], q: RunQuery, dialect: str,
                    params: dict[str, Any], key: str) -> str | None:
    """SQL condition for one unit filter field; None when the field name is unsafe to put in SQL."""
    names = []
    for i, v in enumerate(values):
        params[f"{key}_{i}"] = str(v)
        names.append(f":{key}_{i}")
    if field_name == q.outcome_field:
        col = "outcome"
    elif field_name == "rounds":
        col = "CAST(rounds AS VARCHAR)"
    elif field_name.isidentifier():
        col = (f"json_extract_string(data_json, '$.{field_name}')" if dialect == "duckdb"
               else f"(CAST(data_json AS json) ->> '{field_name}')")
    else:
        return None
    return f"{col} IN ({', '.join(names)})"


def _where(q: RunQuery, params: dict[str, Any]) -> str:
    where = ["experiment_id = :e"]
    params["e"] = q.experiment_id
    if q.execution_id is not None:
        where.append("(execution_id = :x OR source = 'import')" if q.include_imported else "execution_id = :x")
        params["x"] = q.execution_id
    elif not q.include_imported:
        where.append("source <> 'import'")
    if q.hypothesis_id is not None:
        where.append("(hypothesis_id = :h OR source = 'import')" if q.include_imported else "hypothesis_id = :h")
        params["h"] = q.hypothesis_id
    if q.statuses is not None:
        where.append("status IN (" + ", ".join(f":s{i}" for i in range(len(q.statuses))) + ")")
        params.update({f"s{i}": s for i, s in enumerate(q.statuses)})
    return " AND ".join(where)


def _base_rows(conn: Any, cond: str, params: dict[str, Any]) -> dict[int, dict[str, Any]]:
    rows = fetch(conn, "SELECT id, label, arm, status, source, execution_id, experiment_version, replicate, block, "
                       "order_index, variables_json, config_hash, fingerprint_json, hypothesis_id, error "
                       f"FROM runs WHERE {cond} ORDER BY id", params)
    parsed: dict[str, Any] = {}  # runs of one arm share their JSON text: parse each text once

    def once(txt: str | None, variables: bool) -> Any:
        key = ("v" if variables else "f") + (txt or "")
        if key not in parsed:
            val = _json(txt) or {}
            if variables:
                register_stored(val)
            parsed[key] = {k: str(v) for k, v in val.items()} if variables and isinstance(val, dict) else val
        return parsed[key]

    return {int(r[0]): {"id": int(r[0]), "label": r[1], "arm": r[2], "status": r[3], "source": r[4],
                        "execution_id": r[5], "experiment_version": r[6], "replicate": r[7], "block": r[8],
                        "order_index": r[9], "variables": once(r[10], True), "config_hash": r[11],
                        "fingerprint": once(r[12], False), "hypothesis_id": r[13], "error": r[14]}
            for r in rows}


def _metrics(conn: Any, runs: dict[int, dict[str, Any]], q: RunQuery, sub: str, params: dict[str, Any]) -> None:
    # The declared metrics, pivoted by the database into one row per run (names outside the experiment's
    # declaration cannot enter a verdict, so they are not read).
    names = list(q.metrics)
    if not names:
        return
    cols = []
    for i, name in enumerate(names):
        params[f"m{i}"] = name
        cols.append(f"MAX(CASE WHEN name = :m{i} THEN value END)")
    for rec in fetch(conn, f"SELECT run_id, {', '.join(cols)} FROM metrics WHERE run_id IN ({sub}) GROUP BY run_id",
                     params):
        run = runs.get(int(rec[0]))
        if run is not None:
            run["metrics"] = {n: float(v) for n, v in zip(names, rec[1:]) if v is not None}


def _unit_sums(q: RunQuery, dialect: str, uparams: dict[str, Any]) -> tuple[list[str], list[str]]:
    sums = ["COUNT(*)"]
    if q.completed:
        sums.append("SUM(CASE WHEN outcome IN (" + ", ".join(f":c{i}" for i in range(len(q.completed))) +
                    ") THEN 1 ELSE 0 END)")
        uparams.update({f"c{i}": c for i, c in enumerate(q.completed)})
    else:
        sums.append("COUNT(*)")
    for i, o in enumerate(q.outcomes):
        sums.append(f"SUM(CASE WHEN outcome = :o{i} THEN 1 ELSE 0 END)")
        uparams[f"o{i}"] = o
    counted: list[str] = []
    for j, (mname, filters) in enumerate(q.unit_filters):
        conds = []
        for i, (fname, fvals) in enumerate(filters):
            c = _unit_condition(fname, fvals, q, dialect, uparams, f"u{j}_{i}")
            if c is None:
                break
            conds.append(c)
        else:
            sums.append(f"SUM(CASE WHEN {' AND '.join(conds)} THEN 1 ELSE 0 END)" if conds else "COUNT(*)")
            counted.append(mname)
    return sums, counted


def _units(conn: Any, runs: dict[int, dict[str, Any]], q: RunQuery, sub: str, params: dict[str, Any]) -> None:
    # One aggregate over units, per run: total, completed, each declared outcome, each unit-counted metric.
    uparams = dict(params)
    sums, counted = _unit_sums(q, conn.dialect.name, uparams)
    outcomes = list(q.outcomes)
    for rec in fetch(conn, f"SELECT run_id, {', '.join(sums)} FROM units WHERE run_id IN ({sub}) GROUP BY run_id",
                     uparams):
        run = runs.get(int(rec[0]))
        if run is None:
            continue
        total = int(rec[1] or 0)
        by_outcome = {o: int(v or 0) for o, v in zip(outcomes, rec[3:3 + len(outcomes)])}
        other = total - sum(by_outcome.values())
        if other:
            by_outcome["other"] = other
        run.update(units_total=total, units_completed=int(rec[2] or 0),
                   outcomes={o: n for o, n in by_outcome.items() if n},
                   unit_counts={m: int(v or 0) for m, v in zip(counted, rec[3 + len(outcomes):])})


def _reasons(conn: Any, runs: dict[int, dict[str, Any]], q: RunQuery, sub: str, params: dict[str, Any]) -> None:
    # Why units did not complete, grouped by the database per run, outcome and message shape (long numbers masked:
    # ids and page numbers would make every message its own), so a run with 10^5 errors still returns a few rows.
    # Only a string is a message: `error: 0`, `false` or an object would read as "0", "false" or JSON text.
    fname = q.reason_field
    if not fname or not fname.isidentifier() or not q.completed:
        return
    col = (f"CASE WHEN json_type(data_json, '$.{fname}') = 'VARCHAR' "
           f"THEN json_extract_string(data_json, '$.{fname}') END" if conn.dialect.name == "duckdb"
           else f"CASE WHEN json_typeof(CAST(data_json AS json) -> '{fname}') = 'string' "
                f"THEN CAST(data_json AS json) ->> '{fname}' END")
    rparams = dict(params)
    rparams.update({f"c{i}": c for i, c in enumerate(q.completed)})
    done = ", ".join(f":c{i}" for i in range(len(q.completed)))
    sql = (f"SELECT run_id, outcome, MIN(r), MAX(r), COUNT(*) FROM (SELECT run_id, outcome, {col} AS r FROM units "
           f"WHERE run_id IN ({sub}) AND (outcome IS NULL OR outcome NOT IN ({done}))) lost "
           f"WHERE r IS NOT NULL AND r <> '' GROUP BY run_id, outcome, regexp_replace(r, '{LONG_NUMBER}', '#', 'g') "
           "ORDER BY run_id, COUNT(*) DESC, MIN(r)")
    for rec in fetch(conn, sql, rparams):
        run = runs.get(int(rec[0]))
        if run is not None:
            run.setdefault("lost_reasons", []).append((rec[1], rec[2], int(rec[4]), rec[2] != rec[3]))


def _probes(conn: Any, runs: dict[int, dict[str, Any]], sub: str, params: dict[str, Any]) -> None:
    for rec in fetch(conn, "SELECT run_id, process, pid, target, calls, resolved, state, detail FROM probe_counts "
                           f"WHERE run_id IN ({sub}) ORDER BY id", params):
        run = runs.get(int(rec[0]))
        if run is not None:
            run.setdefault("probe_counts", []).append(
                ProbeCountRecord(process=rec[1], pid=int(rec[2]), target=rec[3], calls=int(rec[4]),
                                 resolved=bool(rec[5]), state=rec[6], detail=rec[7]))


def load_runs(conn: Any, q: RunQuery, *, with_probes: bool = False) -> list[RunData]:
    """Every run `q` selects, with stored metrics, unit aggregates and (when asked) probe counts."""
    params: dict[str, Any] = {}
    cond = _where(q, params)
    runs = _base_rows(conn, cond, params)
    if not runs:
        return []
    sub = f"SELECT id FROM runs WHERE {cond}"
    _metrics(conn, runs, q, sub, params)
    _units(conn, runs, q, sub, params)
    _reasons(conn, runs, q, sub, params)
    if with_probes:
        _probes(conn, runs, sub, params)
    return [RunData(**{**r, "probe_counts": tuple(r.get("probe_counts", ())),
                       "lost_reasons": tuple(r.get("lost_reasons", ()))}) for r in runs.values()]


def rendered_configs(conn: Any, hashes: list[str]) -> dict[str, str]:
    """One rendered config per config hash (only the distinct ones are read)."""
    from sqlalchemy import text

    if not hashes:
        return {}
    params = {f"h{i}": h for i, h in enumerate(hashes)}
    rows = conn.execute(text(
        "SELECT config_hash, MIN(rendered_config) FROM runs WHERE config_hash IN (" +
        ", ".join(f":h{i}" for i in range(len(hashes))) + ") GROUP BY config_hash"), params).all()
    return {r[0]: r[1] for r in rows if r[1] is not None}
