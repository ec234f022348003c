"""`wb confounds`: which recorded variables and guard metrics move with each predicted outcome."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from workbench.cli._common import DbOption, JsonOption, RootOption, open_workbench, print_json


def register(app: typer.Typer) -> None:
    """Add the top-level `wb confounds` command to `app`."""

    @app.command("confounds")
    def confounds(hypothesis: Annotated[Optional[str], typer.Option(
                      "--hypothesis", help="Only the outcomes this hypothesis predicts.")] = None,
                  db: DbOption = None, json_: JsonOption = False, root: RootOption = None) -> None:
        """Scan stored runs for confounds: variables and guard metrics associated with the outcome."""
        findings = open_workbench(db, root).confounds(hypothesis)
        if json_:
            print_json([f.to_dict() for f in findings])
            return
        if not findings:
            typer.echo("No runs with a recorded outcome to scan.")
            return
        for f in sorted(findings, key=lambda f: (not f.flagged, f.kind, f.factor)):
            mark = "FLAG" if f.flagged else "    "
            p = f" (Fisher p = {f.fisher_p:.2g})" if f.fisher_p is not None else ""
            typer.echo(f"{mark} [{f.experiment}] {f.outcome} vs {f.kind} {f.factor}{p}")
            typer.echo(f"     {f.message}")
            if f.proposal:
                typer.echo(f"     Proposed experiment: {f.proposal['text']}")
