"""`wb runs list|show|delete`: the runs in the store, imported evidence included."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from workbench.cli._common import (DbOption, FormatOption, JsonOption, RootOption, emit_rows, list_format, new_app,
                                   open_workbench, print_json)

if TYPE_CHECKING:
    from workbench.store.entities import RunDeletion

app = new_app("Runs recorded in the store.")


@app.command("list")
def list_(db: DbOption = None, json_: JsonOption = False,
          hypothesis: Annotated[Optional[str], typer.Option("--hypothesis", help="Only runs of this hypothesis.")] = None,
          limit: Annotated[Optional[int], typer.Option(help="Only the last N runs.")] = None,
          root: RootOption = None, fmt: FormatOption = None) -> None:
    """List runs with their arm, status and metrics."""
    chosen = list_format(fmt, json_)
    rows = open_workbench(db, root).runs(hypothesis_id=hypothesis, limit=limit)
    emit_rows(chosen, ["id", "label", "hypothesis", "arm", "status", "variables", "metrics"],
              [[r.id, r.label or "", r.hypothesis_id or "", r.arm or "", r.status,
                " ".join(f"{k}={v}" for k, v in sorted(r.variables.items())),
                " ".join(f"{k}={v:g}" for k, v in sorted(r.metrics.items()))] for r in rows],
              items=[r.to_dict(detail=False) for r in rows])


@app.command("show")
def show(run_id: Annotated[int, typer.Argument(metavar="RUN_ID")], db: DbOption = None, json_: JsonOption = False,
         root: RootOption = None) -> None:
    """Show one run: variables, metrics, units, artifacts, fingerprint, rendered config."""
    r = open_workbench(db, root).run_record(run_id)
    if json_:
        print_json(r.to_dict())
        return
    for key in ("id", "label", "hypothesis_id", "experiment_id", "arm", "replicate", "status", "stage", "host",
                "target", "started_at", "ended_at", "config_hash", "error"):
        if getattr(r, key) is not None:
            typer.echo(f"{key}: {getattr(r, key)}")
    typer.echo("variables: " + " ".join(f"{k}={v}" for k, v in sorted(r.variables.items())))
    typer.echo("metrics: " + " ".join(f"{k}={v:g}" for k, v in sorted(r.metrics.items())))
    typer.echo(f"units: {r.units_total} " + str(r.units))
    for a in r.artifacts:
        typer.echo(f"artifact {a.name}: {a.path} ({a.size_bytes} B, sha256 {a.sha256[:12]})")
    if r.provenance:
        typer.echo(f"provenance: {r.provenance}")


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
        lines.append(f"{d.blobs} stored artifact content(s) no remaining run refers to")
    return lines


def _interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


@app.command("delete")
def delete(run_ids: Annotated[list[int], typer.Argument(metavar="RUN_ID...", help="Ids of the runs to delete.")],
           yes: Annotated[bool, typer.Option("--yes", help="Delete without asking (needed off a terminal).")] = False,
           db: DbOption = None, json_: JsonOption = False, root: RootOption = None) -> None:
    """Delete runs recorded by mistake, with their units, metrics and artifacts, and the verdicts that rest on them."""
    from workbench.errors import BadInput, WbError

    wb = open_workbench(db, root)
    plan = wb.run_deletion(run_ids)  # unknown ids: exit 2 before anything is asked or written
    if not yes:
        if not _interactive():
            raise BadInput("wb runs delete asks before deleting, and there is no terminal to ask on",
                           hint="add --yes to delete without asking")
        err = typer.get_text_stream("stderr")
        err.write("".join(f"would delete {line}\n" for line in _describe(plan)))
        if not typer.confirm(f"Delete {len(plan.runs)} run(s)?", default=False, err=True):
            raise WbError("not confirmed: nothing was deleted")
    done, changed = wb.delete_runs(run_ids)
    if json_:
        print_json({**done.to_dict(), "status_changes": {h: {"before": b, "after": a} for h, (b, a) in changed.items()}})
        return
    for line in _describe(done):
        typer.echo(f"deleted {line}")
    for h, (b, a) in sorted(changed.items()):
        typer.echo(f"status of {h}: {b} -> {a}" if b != a else f"status of {h}: {a}, now from another verdict")
