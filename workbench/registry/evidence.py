"""Reading historical evidence (a CSV of past runs, like the seed's) as runs with provenance.

Blank cells stay unknown: a metric absent from the CSV is never stored, so analysis cannot use a
number nobody measured. The import is all-or-nothing: one bad row and nothing is written.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from workbench.errors import BadInput
from workbench.registry.common import hint_of
from workbench.registry.evidence_columns import REPORTED_PREFIX, EvidenceColumns, evidence_columns, pick_experiment

MAX_NUMBER = 1e12  # a count or a duration beyond this is a typo or an overflow, never a measurement
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(inf|infinity|nan)", re.I)

if TYPE_CHECKING:
    from workbench.registry.experiment import Experiment
    from workbench.registry.folder import Registry


def _number(text: str, *, integer: bool, where: str, column: str, signed: bool = False) -> float | int:
    """The cell as a number. Only a `signed` column (a continuous metric: a latency delta, a throughput change)
    may be negative; a count, and so each part of a proportion, or a workload size never is."""
    try:
        if not _NUMBER.fullmatch(text.strip()):  # float() also reads 1_000 and other scripts' digits
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise BadInput(f"{where}: column {column!r} holds {text!r}, not a number",
                       hint="leave the cell blank when the value is unknown") from None
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        raise BadInput(f"{where}: column {column!r} holds {text!r}, not a finite number of a sane size "
                       f"(at most {MAX_NUMBER:g})", hint="leave the cell blank when the value is unknown")
    if value < 0 and not signed:
        raise BadInput(f"{where}: column {column!r} is negative ({text})",
                       hint="counts and workload parameters are never negative; only a continuous metric may be")
    if integer:
        if value != int(value):
            raise BadInput(f"{where}: column {column!r} must be a whole count, got {text}")
        return int(value)
    return value


def _setting(text: str, *, where: str, column: str) -> float | int:
    """A workload setting as the CSV writes it: a whole number written as one stays one (concurrency 4, which
    read 4.0), anything else is a float (2.5, 300.0, 1e3)."""
    value = _number(text, integer=False, where=where, column=column)
    return int(value) if re.fullmatch(r"[+-]?[0-9]+", text) else value


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


def pick_for(registry: Registry, path: Path) -> Experiment:
    """The experiment an evidence file belongs to, from its header (when --experiment is not given)."""
    exps = list(registry.experiments.values())
    return pick_experiment(registry, _read(path, exps[0] if len(exps) == 1 else None)[2], str(path))


def parse_evidence(path: Path, exp: Experiment) -> list[dict[str, Any]]:
    """Rows of the CSV as {label, phase, variables, metrics, workload, provenance}; BadInput on any problem.
    The columns are `exp`'s (see workbench/registry/evidence_columns.py)."""
    text, reader, header = _read(path, exp)
    cols = evidence_columns(exp)
    unknown = cols.unknown(header)
    if (problem := cols.derived_problem(unknown)) is not None:
        raise BadInput(f"{path}:1: {problem[0]}", hint=problem[1])
    if unknown:
        what, hint = cols.refusal(unknown)
        raise BadInput(f"{path}:1: {what} for experiment {exp.id!r}", hint=hint)
    rows = []
    labels: dict[str, int] = {}
    sha = hashlib.sha256(text.encode()).hexdigest()
    for rec in reader:
        line = reader.line_num
        where = f"{path}:{line}"
        if None in rec:
            raise BadInput(f"{where}: more cells ({len(header) + len(rec[None])}) than columns ({len(header)})")
        if None in rec.values():  # DictReader fills a short row's missing cells with None
            given = sum(v is not None for v in rec.values())
            raise BadInput(f"{where}: fewer cells ({given}) than columns ({len(header)})",
                           hint="a blank cell still needs its comma (x1,on,,50)")
        _check_cells(rec, where)
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


def _read(path: Path, exp: Experiment | None = None) -> tuple[str, csv.DictReader, list[str]]:
    """The file's text, a reader of its rows and its header; `exp`, where known, is whose columns a file that is
    no evidence CSV is told to name."""
    from workbench.registry.files import read_user_text

    try:
        text = read_user_text(path, encoding="utf-8-sig")  # a spreadsheet's UTF-8 BOM is not part of the header
    except FileNotFoundError:
        raise BadInput(f"{path}: file not found", where=str(path)) from None
    _check_text(path, text)
    # Lines end only at \n, \r\n or \r, as a CSV's do (a quoted cell's own line breaks read as \n): str.splitlines
    # also ended them at a form feed or U+2028 inside a cell, which cut its row in two and blamed the next line.
    reader = csv.DictReader(io.StringIO(text.replace("\r\n", "\n").replace("\r", "\n"), newline=""))
    header = reader.fieldnames or []
    if not text.strip():
        raise BadInput(f"{path}:1: the file is empty", hint="the first line names the columns (run_id, ...), "
                       "each line after it is one run")
    if "run_id" not in (name.strip() for name in header):
        # Before the names are checked one by one: a YAML file or a note read as CSV is no header with a bad name.
        _refuse_other_separator(path, header)
        first_line = text.lstrip("\ufeff").split("\n", 1)[0].strip()
        shown = first_line if len(first_line) <= 60 else first_line[:57] + "..."
        raise BadInput(f"{path}:1: not an evidence CSV: its first line ({shown!r}) is no header naming a run_id "
                       "column", hint=_header_needed(exp))
    first: dict[str, int] = {}
    for i, name in enumerate(header, 1):
        # Said here, by position: the unknown-column message showed these as nothing, or as the very name they miss.
        if not name.strip():
            raise BadInput(f"{path}:1: column {i} has no name",
                           hint="a comma at the end of the header line adds one; remove it, or name the column")
        if name != name.strip():
            raise BadInput(f"{path}:1: column {i} ({name!r}) has spaces around its name",
                           hint=f"write it as {name.strip()!r}")
        if name in first:  # a row is read into a dict: the later cell would silently replace the earlier one
            raise BadInput(f"{path}:1: column {name!r} appears twice in the header (columns {first[name]} and {i})",
                           hint="keep one of them, or rename the other to a column of the experiment")
        first[name] = i
    return text, reader, list(header)


def _header_needed(exp: Experiment | None) -> str:
    """The header an evidence CSV opens with: of `exp` where known, else where to read each experiment's."""
    head = "an evidence CSV's first line names its columns, comma-separated: run_id (each run's label), then "
    if exp is None:
        return head + "an experiment's variables, metrics and workload parameters (`wb schema` gives each experiment's)"
    return head + f"columns of experiment {exp.id} ({evidence_columns(exp).listing()})"


def _refuse_other_separator(path: Path, header: list[str]) -> None:
    """A sheet saved with `;` or tab between cells (a comma-decimal locale) reads as one column whose name holds
    run_id: "no run_id column" beside a header that shows it misleads."""
    if len(header) != 1:
        return
    sep = next((c for c in (";", "\t", "|") if c in header[0] and "run_id" in header[0].split(c)), None)
    if sep is not None:
        raise BadInput(f"{path}:1: the header is one column holding {sep!r} between the names: wb reads "
                       "comma-separated values", hint="save the sheet as CSV with commas (CSV UTF-8)")


def _check_cells(rec: dict[str, str], where: str) -> None:
    """A cell is shown as it is by `wb runs show` and the listings: a control character in it (an escape sequence
    that clears a terminal or retitles it) is refused, as in the registry's files. A tab or a newline (a quoted
    cell over several lines) is text."""
    import unicodedata

    for col, cell in rec.items():
        bad = next((c for c in cell if unicodedata.category(c) == "Cc" and c not in "\t\n"), None)
        if bad is not None:
            raise BadInput(f"{where}: column {col!r} holds the control character {bad!r}",
                           hint="remove it; cells are plain text")


def _check_fractions(exp: Experiment, metrics: dict[str, float | int], where: str) -> None:
    """A numerator larger than its denominator is a typo (80 stale of 50 clients); it would show rates above 1."""
    for name, spec in exp.metrics.items():
        if spec.kind != "proportion" or spec.numerator not in metrics or spec.denominator not in metrics:
            continue
        num, den = metrics[spec.numerator], metrics[spec.denominator]  # type: ignore[index]
        if num > den:
            raise BadInput(f"{where}: column {spec.numerator!r} ({num:g}) is larger than column "
                           f"{spec.denominator!r} ({den:g}), its denominator in proportion {name!r}")


def _check_unit_counts(exp: Experiment, metrics: dict[str, float | int], where: str) -> None:
    """A count of the units that ended one way cannot exceed the count of every unit (error=90 of 80 sessions),
    nor can counts of distinct outcomes together: the attrition check would read the other numbers."""
    totals = [(name, metrics[name]) for name, spec in exp.metrics.items()
              if spec.kind == "count" and spec.units == {} and spec.same_as is None and name in metrics]
    if not totals:
        return
    total_name, total = min(totals, key=lambda t: t[1])
    disjoint: dict[str, float | int] = {}
    seen: set[str] = set()
    for name, spec in exp.metrics.items():
        if spec.kind != "count" or not spec.units or spec.same_as is not None or name not in metrics:
            continue
        if metrics[name] > total:
            raise BadInput(f"{where}: column {name!r} ({metrics[name]:g}) counts more units than column "
                           f"{total_name!r} ({total:g}), which counts every unit")
        outcomes = spec.units.get(exp.unit.outcome_field) if exp.unit and set(spec.units) == {
            exp.unit.outcome_field} else None
        values = {str(v) for v in (outcomes if isinstance(outcomes, list) else [outcomes])} if outcomes else set()
        if values and not values & seen:
            seen |= values
            disjoint[name] = metrics[name]
    if sum(disjoint.values()) > total:
        raise BadInput(f"{where}: columns {', '.join(disjoint)} count {sum(disjoint.values()):g} units of distinct "
                       f"outcomes, more than column {total_name!r} ({total:g}) counts in all")


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
            raise BadInput(f"{where}: column {col!r}: {exc}", hint=hint_of(exc)) from None
        vars_[col] = cell
    metrics: dict[str, float | int] = {}
    for col in cols.integer_metrics + cols.float_metrics:
        cell = (rec.get(col) or "").strip()
        if cell:
            metrics[col] = _number(cell, integer=col in cols.integer_metrics, signed=col in cols.float_metrics,
                                   where=where, column=col)
    _check_unit_counts(exp, metrics, where)  # first: a count of units above all units is the plainer reading
    _check_fractions(exp, metrics, where)
    workload = {c: _setting(rec[c].strip(), where=where, column=c)
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


# Where a row came from, not what it says: the same run moved to another line or file is the same run.
_LOCATION = ("file", "sha256", "line")
REDACTED = "<redacted>"


class EvidenceRun(Protocol):
    """A run as an import compares it: a parsed row, or one the store holds (the store's EvidenceRun has these
    fields; the registry does not import the store)."""

    label: str
    phase: str | None
    variables: dict[str, str]
    metrics: dict[str, float | int]
    workload: dict[str, float | int]
    provenance: dict[str, Any]


@dataclass
class ImportPlan:
    """What an import does against the runs already stored: rows to add, stored run ids they replace, and the
    labels of rows skipped because the store holds them with the same values."""

    add: list[EvidenceRun] = field(default_factory=list)
    replace: list[int] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def plan_import(rows: list[EvidenceRun], stored: dict[str, list[tuple[int, EvidenceRun]]], *, replace: bool,
                path: Path) -> ImportPlan:
    """Key the import on run_id: a run already stored with the same values is skipped; one stored with other
    values is refused (BadInput at its line, before anything is written) unless `replace` says to replace it.
    Importing a corrected file again therefore neither doubles runs nor silently keeps the old numbers."""
    plan = ImportPlan()
    for row in rows:
        before = stored.get(row.label, [])
        diffs = [d for _, old in before for d in [_differences(old, row)] if d]
        if not before:
            plan.add.append(row)
        elif not diffs:
            plan.skipped.append(row.label)
        elif replace:
            plan.add.append(row)
            plan.replace.extend(rid for rid, _ in before)
            plan.replaced.append(row.label)
        else:
            raise BadInput(f"{path}:{row.provenance.get('line')}: run_id {row.label!r} is already stored with other "
                           f"values ({'; '.join(diffs[0][:4])}); nothing was imported",
                           hint="pass --replace to replace the stored run with this row, or give the row a new run_id")
    return plan


def _differences(old: EvidenceRun, new: EvidenceRun) -> list[str]:
    """'column: stored X, file Y' for each value that differs (numbers compared as numbers)."""
    def flat(r: EvidenceRun) -> dict[str, Any]:
        out: dict[str, Any] = {"phase": r.phase, **r.variables}
        out.update({k: v if isinstance(v, str) else float(v) for k, v in {**r.workload, **r.metrics}.items()})
        out.update({k: v for k, v in r.provenance.items() if k not in _LOCATION})
        return out

    a, b = flat(old), flat(new)
    # The store redacts values under secret-looking names (max_tokens); one it never kept cannot differ.
    return [f"{k}: stored {_show(a.get(k))}, file {_show(b.get(k))}"
            for k in sorted(set(a) | set(b), key=str) if a.get(k) != b.get(k) and a.get(k) != REDACTED]


def _show(value: Any) -> str:
    if value is None:
        return "blank"
    return f"{value:g}" if isinstance(value, float) else repr(value)
