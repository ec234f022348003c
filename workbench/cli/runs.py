"""`wb runs list|show`: the runs in the store, imported evidence included."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from workbench.cli._common import (DbOption, FormatOption, JsonOption, RootOption, emit_rows, list_format, new_app,
                                   open_workbench, print_json)

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
