"""`wb runs list|show|delete`: the runs in the store, imported evidence included."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from workbench.analysis import display
from workbench.cli import _common
from workbench.cli._common import (DbOption, FormatOption, JsonOption, RootOption, echo_wrapped, emit_rows, list_format,
                                   new_app, open_workbench, print_json, when)

if TYPE_CHECKING:
    from workbench.analysis.run_metrics import RunMetrics
    from workbench.store.entities import RunDeletion, RunRecord

app = new_app("Runs recorded in the store.")


_MAX_ID = 2**63 - 1  # the stores' BIGINT


def _run_ids(values: list[str], after: str = "; nothing was deleted") -> list[int]:
    """RUN_ID arguments as ids; a value that is no run id is one Error naming it (the parser's named none)."""
    from workbench.errors import BadInput

    ids = []
    for v in values:
        if not (v.isascii() and v.isdigit() and 1 <= int(v) <= _MAX_ID):
            shown = (v if len(v) <= 24 else v[:20] + "…") if v.isprintable() else repr(v)
            # a whole number past the stores' ids is out of range, not "not a whole number"
            why = (f"out of range (a run id is a whole number from 1 to {_MAX_ID})"
                   if v.isascii() and v.isdigit() and int(v) > _MAX_ID else "not a run id (a whole number from 1)")
            raise BadInput(f"RUN_ID {shown}: {why}", hint="to see the run ids: wb runs list" + after)
        ids.append(int(v))
    return ids


@app.command("list")
def list_(db: DbOption = None, json_: JsonOption = False,
          hypothesis: Annotated[Optional[str], typer.Option(
              "--hypothesis", help="Only runs of this hypothesis.")] = None,
          limit: Annotated[Optional[int], typer.Option(help="Only the last N runs.")] = None,
          root: RootOption = None, fmt: FormatOption = None) -> None:
    """List runs with their arm, status and metrics."""
    chosen = list_format(fmt, json_)  # --limit below 1 (0 listed no run at all): refused by the CLI's _numbers
    wb = open_workbench(db, root)
    rows = wb.runs(hypothesis_id=hypothesis, limit=limit)
    if not rows and chosen == "table":  # the other formats keep their shape: an empty list, a header
        typer.echo(f"No runs{f' of {hypothesis}' if hypothesis else ''} recorded yet.")
        return
    shown = wb.run_metrics(rows)
    if chosen in ("csv", "tsv"):
        emit_rows(chosen, *_spreadsheet(rows, shown))
        return
    # On a terminal only: piped, the table is one header line and rows that each hold every variable (awk 'NR>1')
    common = _common_variables(rows) if chosen == "table" and _common.is_tty() else {}
    if common:
        echo_wrapped("all rows: " + ", ".join(f"{k}={v}" for k, v in sorted(common.items())))
    # `derived`: what the run's experiment derives from the stored values (never stored), apart from them. A
    # terminal's numbers are for reading (a rate in percent); piped, every digit
    pairs = _pairs if chosen != "table" or not _common.is_tty() else (lambda m, values: m.read(values))
    emit_rows(chosen, ["id", "label", "hypothesis", "arm", "status", "variables", "metrics", "derived"],
              [[r.id, r.label or "", r.hypothesis_id or "", r.arm or "", r.status,
                " ".join(f"{k}={v}" for k, v in sorted(r.variables.items()) if k not in common),
                pairs(m, r.metrics), pairs(m, m.derived)] for r, m in zip(rows, shown)],
              items=[{**r.to_dict(detail=False), **m.to_dict()} for r, m in zip(rows, shown)],
              # on a narrow terminal, least needed first (a label most rows lack before them: `table`); the values
              # read under each row rather than be left out, the label too (an imported run has no hypothesis nor arm)
              optional=("derived", "metrics", "variables", "label"), under=("label", "variables", "metrics", "derived"))


def _pairs(_: "RunMetrics", values: dict[str, float]) -> str:
    """Metrics as `name=value` pairs with every digit a float carries (to 15)."""
    return " ".join(f"{k}={v:.15g}" for k, v in sorted(values.items()))


def _common_variables(rows: list["RunRecord"]) -> dict[str, object]:
    """The variables with one value in every run of `rows` (of two or more): the table gives them once, above it,
    and each row those that tell it apart (in a typical store most are the same in every run listed)."""
    if len(rows) < 2:
        return {}
    first, *rest = rows
    return {k: v for k, v in first.variables.items() if all(k in r.variables and r.variables[k] == v for r in rest)}


def _spreadsheet(rows: list["RunRecord"], shown: list["RunMetrics"]) -> tuple[list[str], list[list[object]]]:
    """A column per variable (`var.NAME`), per measured metric (`metric.NAME`) and per derived one
    (`derived.NAME`): the union over the runs, each group by name; a run without the value has an empty cell.
    `experiment` names whose definitions a row's values follow (runs of several experiments share the header)."""
    variables = sorted({k for r in rows for k in r.variables})
    measured = sorted({k for m in shown for k in m.measured})
    derived = sorted({k for m in shown for k in m.derived})
    columns = ["id", "label", "hypothesis", "arm", "status", "experiment", *(f"var.{k}" for k in variables),
               *(f"metric.{k}" for k in measured), *(f"derived.{k}" for k in derived)]
    return columns, [[r.id, r.label, r.hypothesis_id, r.arm, r.status, r.experiment_id,
                      *(r.variables.get(k) for k in variables),
                      *(m.measured.get(k) for k in measured), *(m.derived.get(k) for k in derived)]
                     for r, m in zip(rows, shown)]


def _span(span: Any) -> str:
    """What a cut log artifact covers, as its listing line ends: "; bytes A-B of SOURCE (why)"."""
    from workbench.runner.collect import describe_span

    text = describe_span(span)
    return f"; {text}" if text else ""


@app.command("show")
def show(run_id: Annotated[str, typer.Argument(metavar="RUN_ID")], db: DbOption = None, json_: JsonOption = False,
         root: RootOption = None) -> None:
    """Show one run: how its execution ended, variables, metrics, units, artifacts, fingerprint, rendered config."""
    wb = open_workbench(db, root)
    r = wb.run_record(_run_ids([run_id], after="")[0])
    (m,) = wb.run_metrics([r])
    spans = wb.artifact_spans(r)
    ex = wb.run_execution(r)
    # How the run's execution ended: its recorded error says what the target may have been left with (a failed
    # restore, its lock not released, a deployment wb started and could not stop).
    execution = None if ex is None else {"id": ex.id, "status": ex.status, "error": ex.error}
    if json_:
        print_json({**r.to_dict(), **m.to_dict(), "artifact_spans": spans, "execution": execution})
        return
    # On a terminal each line wraps between words at its width and a value reads as `wb runs list` gives it (a rate
    # in percent); piped, one line an item with every digit, for grep and scripts.
    terminal = _common.is_tty()
    pairs = (lambda values: m.read(values)) if terminal else (lambda values: _pairs(m, values))
    for key in ("id", "label", "hypothesis_id", "experiment_id", "arm", "replicate", "status", "stage", "host",
                "target", "started_at", "ended_at", "config_hash", "error"):
        if getattr(r, key) is not None:
            shown = (when(getattr(r, key)) if key.endswith("_at") else display.replicate(r.replicate)
                     if key == "replicate" else getattr(r, key))
            echo_wrapped(f"{key}: {shown}")
    if ex is not None:
        echo_wrapped(f"execution: {ex.id} ({ex.status})")
        if ex.error:
            typer.echo("execution error:")
            for line in ex.error.splitlines():  # as recorded: its commands are pasted whole, never wrapped
                typer.echo(f"    {line}")
    echo_wrapped("variables: " + " ".join(f"{k}={v}" for k, v in sorted(r.variables.items())))
    echo_wrapped("metrics: " + (pairs(m.measured) or NONE))
    if m.note is not None:
        echo_wrapped(f"derived metrics: unknown ({m.note})")
    else:
        echo_wrapped(f"derived metrics (by {m.experiment}'s definitions, not measured): " + _derived(m, pairs))
    by_outcome = " ".join(f"{k}={n}" for k, n in sorted(r.units.items()))
    echo_wrapped(f"units: {r.units_total}" + (f" ({by_outcome})" if by_outcome else "") if r.units_total else
                 f"units: {NONE}")  # no unit rows (imported evidence, or a workload that wrote none): not "0"
    echo_wrapped("fingerprint: " + (" ".join(f"{k}={v}" for k, v in sorted(_flat(r.fingerprint))) or NONE))
    for a in r.artifacts:
        echo_wrapped(f"artifact {a.name}: {a.path} ({a.size_bytes} B, sha256 {a.sha256[:12]})"
                     + _span(spans.get(a.name)))
    if r.provenance:
        echo_wrapped("provenance: " + " ".join(f"{k}={_plain(v)}" for k, v in r.provenance.items()))
    if r.rendered_config is not None:
        typer.echo("rendered config:")
        for line in r.rendered_config.splitlines():  # the file as the target got it: never wrapped
            typer.echo(f"    {line}")


NONE = "none recorded"  # a line of `wb runs show` with no value: said, never left empty


def _derived(m: "RunMetrics", pairs: Any) -> str:
    """The derived values as `pairs` gives them, then each derivable one that is not with the stored values it
    needs and lacks ("corruption_rate needs sessions, not recorded")."""
    shown = pairs(m.derived)
    lacking = "; ".join(m.lacking())
    if not shown:
        return "none from these values" + (f" ({lacking})" if lacking else "")
    return shown + (f" (not derived: {lacking})" if lacking else "")


def _plain(value: object) -> str:
    """A value of a key=value pair: as it is where it holds no space, else as a JSON string (quoted)."""
    import json

    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if text and not any(c.isspace() for c in text) and '"' not in text else json.dumps(text)


def _flat(values: dict, prefix: str = "") -> list[tuple[str, object]]:
    """(dotted name, value) of a nested mapping: the fingerprint's `env` entries as `env.NAME`, as the analysis
    names them."""
    out: list[tuple[str, object]] = []
    for k, v in values.items():
        out += _flat(v, f"{prefix}{k}.") if isinstance(v, dict) else [(f"{prefix}{k}", v)]
    return out


def _describe(d: "RunDeletion") -> list[str]:
    """One line per thing a deletion removes (the same lines before the prompt and after the deletion)."""
    lines = []
    for r in d.runs:
        what = f"imported {r.label!r}" if r.source == "import" else \
            f"execution {r.execution_id}, {r.hypothesis_id or 'no hypothesis'}, {r.status}"
        lines.append(f"run {r.id} ({what})")
    lines += [v.describe("it rests on a deleted run") for v in d.verdicts]
    lines += [f"execution {e} (no run left)" for e in d.executions]
    if d.blobs:
        lines.append(f"{display.count(d.blobs, 'stored artifact content')} no remaining run refers to")
    return lines


def _status_lines(changes: dict[str, tuple[str, str]], *, planned: bool) -> list[str]:
    """Each status the deletion changes (planned: would change), before -> after."""
    out = []
    for h, (b, a) in sorted(changes.items()):
        if planned:
            out.append(f"status of {h} would be: {b} -> {a}" if b != a else
                       f"status of {h} would stay {a}, from another verdict")
        else:
            out.append(f"status of {h}: {b} -> {a}" if b != a else f"status of {h}: {a}, now from another verdict")
    return out


def _emit(d: "RunDeletion", changes: dict[str, tuple[str, str]], json_: bool, *, dry_run: bool = False,
          declined: bool = False) -> None:
    if json_:
        print_json({**d.to_dict(), "status_changes": {h: {"before": b, "after": a} for h, (b, a) in changes.items()},
                    "dry_run": dry_run, "declined": declined})
        return
    word = "would delete" if dry_run else "deleted"
    for line in _describe(d):  # on a terminal each wrapped between words; piped, one line each
        echo_wrapped(f"{word} {line}")
    for line in _status_lines(changes, planned=dry_run):
        echo_wrapped(line)
    if dry_run:
        typer.echo("Nothing deleted (--dry-run).")


def _interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _confirm(question: str) -> bool:
    """Ask on stderr, read one line of stdin; only y/yes says yes (end of input declines). The prompt is
    written here rather than by typer.confirm, which writes its last space to stdout (it broke --json)."""
    err = typer.get_text_stream("stderr")
    err.write(f"{question} [y/N]: ")
    err.flush()
    answer = sys.stdin.readline()
    if not answer.endswith("\n"):
        err.write("\n")  # end of input: the next line starts on a line of its own
    return answer.strip().lower() in ("y", "yes")


@app.command("delete")
def delete(run_ids: Annotated[list[str], typer.Argument(metavar="RUN_ID", help="Ids of the runs to delete.")],
           yes: Annotated[bool, typer.Option("--yes", help="Delete without asking (needed off a terminal).")] = False,
           dry_run: Annotated[bool, typer.Option(
               "--dry-run", help="Show what would be deleted and how statuses would change; delete nothing.")] = False,
           db: DbOption = None, json_: JsonOption = False, root: RootOption = None) -> None:
    """Delete runs recorded by mistake, with their units, metrics and artifacts, and the verdicts that rest on them.

    Lists what goes and each status it changes, then asks (at a terminal; elsewhere --yes is needed).
    Exit 0 done, declined at the prompt or --dry-run (nothing deleted then); 2 bad input, nothing deleted."""
    from workbench.errors import BadInput

    ids = _run_ids(run_ids)
    wb = open_workbench(db, root)
    plan, changes = wb.run_deletion(ids)  # unknown ids: exit 2 before anything is asked or written
    if dry_run:
        _emit(plan, changes, json_, dry_run=True)
        return
    if not yes:
        if not _interactive():
            raise BadInput("`wb runs delete` asks before deleting, and there is no terminal to ask on",
                           hint="add --yes to delete without asking, or --dry-run to see what would go", where="--yes")
        for line in [*(f"would delete {line}" for line in _describe(plan)), *_status_lines(changes, planned=True)]:
            echo_wrapped(line, err=True)
        if not _confirm(f"Delete {display.count(len(plan.runs), 'run')}?"):
            # Declining is an answer, not an error: nothing happened, as asked (exit 0).
            typer.echo("Nothing deleted.", err=json_)
            if json_:
                from workbench.store.entities import RunDeletion

                _emit(RunDeletion(), {}, json_, declined=True)
            return
    done, changed = wb.delete_runs(ids)
    _emit(done, changed, json_)
