"""`wb bundle export HYPOTHESIS... -o FILE` and `wb bundle import FILE`: evidence from one store to another."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from workbench.cli._common import (DbOption, JsonOption, RootOption, echo_wrapped, new_app, open_workbench,
                                   print_json, telling_left_out, when)

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
        echo_wrapped(f"nothing new in {summary.path}: the store holds every row of it "
                     f"({names}{_signed(verb, summary)})")
        return
    counts = ", ".join(_count(n, k) for k, n in summary.added.items())
    echo_wrapped(f"{verb} {names}: {counts} ({summary.path}{_signed(verb, summary)})")


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
    wb = open_workbench(db, root)
    with telling_left_out(wb):
        summary = wb.bundle_export(hypotheses, out, sign_with=sign)
    for e in summary.unfinished_executions:
        started = f" (started {when(e['started_at'])})" if e["started_at"] else ""
        if e["status"] == "running":
            state, then = f"was still running{started}, no end recorded", "once it ends"
        else:
            state, then = f"{e['status']}{started}", "once a --resume has finished it"
        echo_wrapped(f"Warning: execution {e['id']} of {e['hypothesis']} {state}: the bundle holds only the runs it "
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


@app.command("show")
def show(file: Annotated[Path, typer.Argument(metavar="FILE")],
         extract: Annotated[Optional[Path], typer.Option(
             "--extract", metavar="DIR",
             help="Write the bundle's hypotheses and experiments into this new folder (never over a file).")] = None,
         json_: JsonOption = False, root: RootOption = None) -> None:
    """Say what a bundle carries (who made it, its hypotheses and experiments, how many rows) and which of its
    definitions this workbench lacks; --extract DIR writes them out, for a workbench to take the bundle."""
    c = open_workbench(None, root).bundle_show(file, extract=extract)
    if json_:
        print_json(c.to_dict())
        return
    echo_wrapped(f"bundle {c.path}: made by {c.created_by or '?'} at {when(c.created_at) if c.created_at else '?'} "
                 f"with wb {c.wb_version or '?'}")
    words = {"same": "the same here", "differs": "defined differently here", "absent": "not defined in this workbench",
             "no workbench": "no workbench here to compare with"}
    for h in c.hypotheses:
        echo_wrapped(f"hypothesis {h['id']}: {words.get(h['here'], h['here'])} (experiment {h['experiment']}; "
                     f"claim: {h['claim']})")
    for e in c.experiments:
        echo_wrapped(f"experiment {e['id']} version {e['version']}: {words.get(e['here'], e['here'])}")
    echo_wrapped("; ".join(f"{k.replace('_', ' ')}: {n}" for k, n in c.rows.items()))
    for w in c.written:
        echo_wrapped(f"wrote {w}")
    for why in c.left_out:
        echo_wrapped(f"left out {why}")
    for why in c.parsed:
        echo_wrapped(f"written from parsed data, its comments lost: {why}")
    if c.written:
        import shlex

        root = Path(c.written[0]).parent  # a command to paste: each path quoted for the shell
        echo_wrapped(f"next: wb bundle import {shlex.quote(str(file))} --root {shlex.quote(str(root))} (or copy the "
                     "definitions you want into your workbench first)")
