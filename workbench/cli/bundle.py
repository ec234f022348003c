"""`wb bundle export HYPOTHESIS... -o FILE` and `wb bundle import FILE`: evidence from one store to another."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from workbench.cli._common import DbOption, JsonOption, RootOption, new_app, open_workbench, print_json

app = new_app("Move hypotheses with their evidence, verdicts and reviews between stores.")


def _say(verb: str, summary) -> None:
    counts = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in summary.added.items())
    typer.echo(f"{verb} {', '.join(summary.hypotheses)}: {counts} ({summary.path})")


@app.command("export")
def export(hypotheses: Annotated[list[str], typer.Argument(metavar="HYPOTHESIS")],
           out: Annotated[Path, typer.Option("-o", "--out", help="The bundle file to write.")],
           db: DbOption = None, json_: JsonOption = False, root: RootOption = None) -> None:
    """Write one portable file: the hypotheses and experiments as they were, executions, runs, units,
    metrics, artifacts, verdicts and reviews."""
    summary = open_workbench(db, root).bundle_export(hypotheses, out)
    if json_:
        print_json(summary.to_dict())
    else:
        _say("exported", summary)


@app.command("import")
def import_(file: Annotated[Path, typer.Argument(metavar="FILE")], db: DbOption = None, json_: JsonOption = False,
            root: RootOption = None) -> None:
    """Merge a bundle into the store (idempotent; refused when its registry conflicts with this one)."""
    summary = open_workbench(db, root).bundle_import(file)
    if json_:
        print_json(summary.to_dict())
    else:
        _say("imported (new rows)", summary)
