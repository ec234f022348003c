"""`wb import evidence FILE.csv`: historical runs with their provenance."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from workbench.analysis import display
from workbench.cli._common import DbOption, JsonOption, RootOption, new_app, open_workbench, print_json

app = new_app("Import evidence gathered outside wb.")


@app.command("evidence")
def evidence(file: Annotated[Path, typer.Argument(metavar="FILE.csv")], db: DbOption = None,
             json_: JsonOption = False, root: RootOption = None,
             experiment: Annotated[Optional[str], typer.Option(
                 help="The experiment the runs belong to (default: the one whose columns fit the header).")] = None,
             replace: Annotated[bool, typer.Option(
                 "--replace", help="Replace a stored run whose run_id a row repeats with other values "
                                   "(without it such a row is an error and nothing is imported).")] = False) -> None:
    """Store each CSV row as a historical run, keyed on run_id (blank cells stay unknown).

    A row whose run_id is already stored with the same values is skipped; with other values it is refused
    unless --replace is given. A replacing row is stored as a new run with a new id (the output names both:
    "run 7 (LABEL) replaced by run 12"), and the verdicts that rested on the replaced run are deleted."""
    result = open_workbench(db, root).import_evidence(file, experiment=experiment, replace=replace)
    if json_:
        print_json(result.to_dict())
        return
    new = len(result.imported) - len(result.replaced)
    typer.echo(f"imported {display.count(new, 'run')} from {result.file} as experiment {result.experiment}"
               + (f"; replaced {len(result.replaced)}" if result.replaced else "")
               + (f"; skipped {len(result.skipped)} already imported" if result.skipped else ""))
    for r in result.replaced_runs:
        typer.echo(f"run {r['run']} ({r['label']}) replaced by run {r['by']}")
    for v in result.verdicts_deleted:
        typer.echo("deleted " + v.describe("it rests on a replaced run"))
