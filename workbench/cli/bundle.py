"""`wb bundle export HYPOTHESIS... -o FILE` and `wb bundle import FILE`: evidence from one store to another."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

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
        typer.echo(f"nothing new in {summary.path}: the store holds every row of it ({names}{_signed(verb, summary)})")
        return
    counts = ", ".join(_count(n, k) for k, n in summary.added.items())
    typer.echo(f"{verb} {names}: {counts} ({summary.path}{_signed(verb, summary)})")


def _signed(verb: str, summary) -> str:
    """What is known of the bundle's signature: written, verified (by whom), or lying beside it unchecked."""
    if summary.signed_by is not None:
        return f", signed by {summary.signed_by}"
    if summary.signature is None:
        return f"; the old {summary.removed_signature}, which signed the file replaced, was removed" \
            if summary.removed_signature else ""
    if verb == "exported":
        return f", signed: {summary.signature}"
    return f"; its signature {summary.signature} was not checked: give --signers FILE"


@app.command("export")
def export(hypotheses: Annotated[list[str], typer.Argument(metavar="HYPOTHESIS")],
           out: Annotated[Path, typer.Option("-o", "--out", help="The bundle file to write.")],
           sign: Annotated[Optional[Path], typer.Option(
               "--sign", metavar="KEY",
               help="Sign the bundle with this SSH key (ssh-keygen -Y, namespace wb-bundle) into FILE.sig.")] = None,
           db: DbOption = None, json_: JsonOption = False, root: RootOption = None) -> None:
    """Write one portable file: the hypotheses and experiments as they were, executions, runs, units,
    metrics, artifacts, verdicts and reviews."""
    summary = open_workbench(db, root).bundle_export(hypotheses, out, sign_with=sign)
    for e in summary.unfinished_executions:
        started = f" (started {e['started_at']})" if e["started_at"] else ""
        if e["status"] == "running":
            state, then = f"was still running{started}, no end recorded", "once it ends"
        else:
            state, then = f"{e['status']}{started}", "once a --resume has finished it"
        typer.echo(f"Warning: execution {e['id']} of {e['hypothesis']} {state}: the bundle holds only the runs it "
                   f"had made, so they are incomplete; export again {then} (importing the new bundle completes it)",
                   err=True)
    if json_:
        print_json(summary.to_dict())
    else:
        _say("exported", summary)


@app.command("import")
def import_(file: Annotated[Path, typer.Argument(metavar="FILE")],
            signers: Annotated[Optional[Path], typer.Option(
                "--signers", metavar="ALLOWED",
                help="Import only if FILE.sig verifies by a key of this allowed-signers file (ssh-keygen(1)).")] = None,
            db: DbOption = None, json_: JsonOption = False, root: RootOption = None) -> None:
    """Merge a bundle into the store (idempotent; refused when its registry conflicts with this one)."""
    summary = open_workbench(db, root).bundle_import(file, signers=signers)
    if json_:
        print_json(summary.to_dict())
    else:
        _say("imported", summary)
