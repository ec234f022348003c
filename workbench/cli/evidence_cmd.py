"""`wb import evidence FILE.csv`: historical runs with their provenance."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from workbench.cli._common import DbOption, JsonOption, RootOption, new_app, open_workbench, print_json

app = new_app("Import evidence gathered outside wb.")


@app.command("evidence")
def evidence(file: Annotated[Path, typer.Argument(metavar="FILE.csv")], db: DbOption = None,
             json_: JsonOption = False, root: RootOption = None,
             experiment: Annotated[Optional[str], typer.Option(
                 help="The experiment the runs belong to (default: the one whose columns fit the header).")] = None) -> None:
    """Store each CSV row as a historical run (blank cells stay unknown)."""
    result = open_workbench(db, root).import_evidence(file, experiment=experiment)
    if json_:
        print_json(result.to_dict())
        return
    typer.echo(f"imported {len(result.imported)} run(s) from {result.file} as experiment {result.experiment}"
               + (f"; skipped {len(result.skipped)} already imported" if result.skipped else ""))
