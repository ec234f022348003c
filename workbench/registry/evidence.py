"""Reading historical evidence (a CSV of past runs, like the seed's) as runs with provenance.

Blank cells stay unknown: a metric absent from the CSV is never stored, so analysis cannot use a
number nobody measured. The import is all-or-nothing: one bad row and nothing is written.
"""

from __future__ import annotations

import csv
import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import BadInput

# CSV columns that are variables of the run (validated against the experiment), and those that are
# workload parameters (kept as provenance), and those that are metrics.
VARIABLE_COLUMNS = ("index_k_dtype", "hicache", "nixl_abort_fix", "geometry_fix", "indexer_host_pool_fix",
                    "causal_model")
WORKLOAD_COLUMNS = ("rounds", "ctx", "max_tokens", "timeout_s")
TEXT_COLUMNS = ("run_id", "phase", "source_quote", "reported_corruption")
MAX_NUMBER = 1e12  # a count or a duration beyond this is a typo or an overflow, never a measurement
INTEGER_METRICS = ("sessions", "leak", "error", "done", "maxrounds", "no_tool", "timeouts", "waiting_for_input")
FLOAT_METRICS = ("wall_s",)


def _number(text: str, *, integer: bool, where: str, column: str) -> float | int:
    try:
        value = float(text)
    except ValueError:
        raise BadInput(f"{where}: column {column!r} holds {text!r}, not a number",
                       hint="leave the cell blank when the value is unknown") from None
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        raise BadInput(f"{where}: column {column!r} holds {text!r}, not a finite number of a sane size "
                       f"(at most {MAX_NUMBER:g})", hint="leave the cell blank when the value is unknown")
    if value < 0:
        raise BadInput(f"{where}: column {column!r} is negative ({text})")
    if integer:
        if value != int(value):
            raise BadInput(f"{where}: column {column!r} must be a whole count, got {text}")
        return int(value)
    return value


MAX_CSV_BYTES = 64 * 1024 * 1024


def _check_text(path: Path, text: str) -> None:
    """Refuse what the csv module would silently accept: NUL bytes, an unterminated quote, a huge file."""
    if len(text) > MAX_CSV_BYTES:
        raise BadInput(f"{path}: the file is too large ({len(text) / 1e6:.0f} MB; at most "
                       f"{MAX_CSV_BYTES / 1e6:.0f} MB)")
    if "\x00" in text:
        raise BadInput(f"{path}:{text.count(chr(10), 0, text.index(chr(0))) + 1}: the file holds a NUL byte "
                       "(binary data, or a UTF-16 export?)", hint="save the sheet as CSV UTF-8")
    open_at = None
    line = 1
    for i, ch in enumerate(text):
        if ch == '"':
            open_at = line if open_at is None else None  # "" inside a quoted cell toggles twice
        elif ch == "\n":
            line += 1
    if open_at is not None:
        raise BadInput(f"{path}:{open_at}: a quote opened here is never closed",
                       hint="close the quoted cell, or double a quote inside it (\"\")")


def parse_evidence(path: Path, variables: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of the CSV as {label, phase, variables, metrics, workload, provenance}; BadInput on any problem."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a spreadsheet's UTF-8 BOM is not part of the header
    except FileNotFoundError:
        raise BadInput(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read: {exc}") from exc
    _check_text(path, text)
    reader = csv.DictReader(text.splitlines())
    header = reader.fieldnames or []
    if "run_id" not in header:
        raise BadInput(f"{path}:1: no run_id column (header: {', '.join(header) or 'empty'})",
                       hint="the first line must name the columns; run_id identifies each run")
    known = set(VARIABLE_COLUMNS) | set(WORKLOAD_COLUMNS) | set(TEXT_COLUMNS) | set(INTEGER_METRICS) | set(FLOAT_METRICS)
    unknown = [c for c in header if c not in known]
    if unknown:
        raise BadInput(f"{path}:1: unknown column(s) {', '.join(unknown)}",
                       hint=f"known columns: {', '.join(sorted(known))}")
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
        vars_: dict[str, str] = {}
        for col in VARIABLE_COLUMNS:
            cell = (rec.get(col) or "").strip()
            if not cell:
                continue
            spec = variables.get(col)
            if spec is not None:
                try:
                    spec.check(cell)
                except ValueError as exc:
                    raise BadInput(f"{where}: column {col!r}: {exc}") from None
            vars_[col] = cell
        metrics: dict[str, float | int] = {}
        for col in INTEGER_METRICS + FLOAT_METRICS:
            cell = (rec.get(col) or "").strip()
            if cell:
                metrics[col] = _number(cell, integer=col in INTEGER_METRICS, where=where, column=col)
        workload = {c: _number(rec[c].strip(), integer=False, where=where, column=c)
                    for c in WORKLOAD_COLUMNS if (rec.get(c) or "").strip()}
        if "sessions" in metrics:
            workload["sessions"] = metrics["sessions"]
        provenance = {"file": path.name, "sha256": sha, "line": line,
                      "quote": (rec.get("source_quote") or "").strip(),
                      "reported_corruption": (rec.get("reported_corruption") or "").strip() or None}
        rows.append({"label": label, "phase": (rec.get("phase") or "").strip() or None, "variables": vars_,
                     "metrics": metrics, "workload": workload, "provenance": provenance})
    if not rows:
        raise BadInput(f"{path}: no rows after the header")
    return rows
