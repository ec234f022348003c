"""Reading historical evidence (a CSV of past runs, like the seed's) as runs with provenance.

Blank cells stay unknown: a metric absent from the CSV is never stored, so analysis cannot use a
number nobody measured. The import is all-or-nothing: one bad row and nothing is written.
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import BadInput
from workbench.registry.evidence_columns import REPORTED_PREFIX, EvidenceColumns, evidence_columns, pick_experiment

if TYPE_CHECKING:
    from workbench.registry.experiment import Experiment
    from workbench.registry.loader import Registry


def _number(text: str, *, integer: bool, where: str, column: str) -> float | int:
    try:
        value = float(text)
    except ValueError:
        raise BadInput(f"{where}: column {column!r} holds {text!r}, not a number",
                       hint="leave the cell blank when the value is unknown") from None
    if value < 0:
        raise BadInput(f"{where}: column {column!r} is negative ({text})")
    if integer:
        if value != int(value):
            raise BadInput(f"{where}: column {column!r} must be a whole count, got {text}")
        return int(value)
    return value


def pick_for(registry: Registry, path: Path) -> Experiment:
    """The experiment an evidence file belongs to, from its header (when --experiment is not given)."""
    return pick_experiment(registry, _read(path)[2], str(path))


def parse_evidence(path: Path, exp: Experiment) -> list[dict[str, Any]]:
    """Rows of the CSV as {label, phase, variables, metrics, workload, provenance}; BadInput on any problem.
    The columns are `exp`'s (see workbench/registry/evidence_columns.py)."""
    text, reader, header = _read(path)
    cols = evidence_columns(exp)
    unknown = cols.unknown(header)
    if unknown:
        raise BadInput(f"{path}:1: unknown column(s) {', '.join(unknown)} for experiment {exp.id!r}",
                       hint=f"{exp.id} columns: {cols.listing()}")
    rows = []
    labels: dict[str, int] = {}
    sha = hashlib.sha256(text.encode()).hexdigest()
    for rec in reader:
        line = reader.line_num
        where = f"{path}:{line}"
        if None in rec:
            raise BadInput(f"{where}: more cells than columns")
        label = (rec.get("run_id") or "").strip()
        if not label:
            raise BadInput(f"{where}: run_id is blank")
        if label in labels:
            raise BadInput(f"{where}: run_id {label!r} repeats line {labels[label]}")
        labels[label] = line
        rows.append(_row(rec, cols, exp, where, line, label, path, sha))
    if not rows:
        raise BadInput(f"{path}: no rows after the header")
    return rows


def _read(path: Path) -> tuple[str, csv.DictReader, list[str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read: {exc}") from exc
    reader = csv.DictReader(text.splitlines())
    header = reader.fieldnames or []
    if "run_id" not in header:
        raise BadInput(f"{path}:1: no run_id column (header: {', '.join(header) or 'empty'})",
                       hint="the first line must name the columns; run_id identifies each run")
    return text, reader, list(header)


def _row(rec: dict[str, str], cols: EvidenceColumns, exp: Experiment, where: str, line: int, label: str, path: Path,
         sha: str) -> dict[str, Any]:
    vars_: dict[str, str] = {}
    for col in cols.variables:
        cell = (rec.get(col) or "").strip()
        if not cell:
            continue
        try:
            exp.variables[col].check(cell)
        except ValueError as exc:
            raise BadInput(f"{where}: column {col!r}: {exc}") from None
        vars_[col] = cell
    metrics: dict[str, float | int] = {}
    for col in cols.integer_metrics + cols.float_metrics:
        cell = (rec.get(col) or "").strip()
        if cell:
            metrics[col] = _number(cell, integer=col in cols.integer_metrics, where=where, column=col)
    workload = {c: _number(rec[c].strip(), integer=False, where=where, column=c)
                for c in cols.workload if (rec.get(c) or "").strip()}
    for col in cols.all_units:  # the number of units is also the size of the workload
        if col in metrics:
            workload[col] = metrics[col]
    reported = {c: (rec.get(c) or "").strip() or None for c in rec if c and c.startswith(REPORTED_PREFIX)}
    provenance = {"file": path.name, "sha256": sha, "line": line, "quote": (rec.get("source_quote") or "").strip(),
                  **reported}
    notes = (rec.get("notes") or "").strip()
    if notes:
        provenance["notes"] = notes
    return {"label": label, "phase": (rec.get("phase") or "").strip() or None, "variables": vars_,
            "metrics": metrics, "workload": workload, "provenance": provenance}
