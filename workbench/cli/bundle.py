"""`wb bundle export HYPOTHESIS... -o FILE` and `wb bundle import FILE`: evidence from one store to another."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from workbench.cli._common import DbOption, JsonOption, RootOption, new_app, open_workbench, print_json

app = new_app("Move hypotheses with their evidence, verdicts and reviews between stores.")


def _count(n: int, key: str) -> str:
    """`1 verdict`, `2 verdicts`, `1 run updated` (keys are plural: executions, artifact_blobs, runs_updated)."""
    words = key.split("_")
    if n == 1:
        plural = 1 if words[-1] == "updated" and len(words) > 1 else 0
        words[-1 - plural] = words[-1 - plural].removesuffix("s")
    return f"{n} {' '.join(words)}"


def _say(verb: str, summary) -> None:
    names = ", ".join(summary.hypotheses)
    if verb == "imported" and not any(summary.added.values()):
        typer.echo(f"nothing new in {summary.path}: the store holds every row of it ({names})")
        return
    counts = ", ".join(_count(n, k) for k, n in summary.added.items())
    typer.echo(f"{verb} {names}: {counts} ({summary.path})")


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
        _say("imported", summary)
