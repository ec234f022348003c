"""`wb hypothesis list|show|validate|analyze` (and `run`, added by the runner's module)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from workbench.cli._common import DbOption, JsonOption, RootOption, new_app, print_json, table

app = new_app("Hypotheses: list, show, validate, analyze and run them.")


@app.command("list")
def list_(db: DbOption = None, json_: JsonOption = False, root: RootOption = None) -> None:
    """List the hypotheses with their parent and latest verdict."""
    from workbench.views import list_hypotheses

    rows = list_hypotheses(db=db, root=root)
    if json_:
        print_json(rows)
        return
    table(["id", "parent", "kind", "isolates", "status"],
          [[r["id"], r["parent"] or "-", r["kind"], r["isolates"] or "-", r["status"]] for r in rows])


@app.command("show")
def show(hypothesis_id: Annotated[str, typer.Argument(metavar="ID")], db: DbOption = None,
         json_: JsonOption = False, root: RootOption = None) -> None:
    """Show one hypothesis: claim, arms, predictions, guards, assumptions and the latest verdict."""
    from workbench.views import show_hypothesis

    h = show_hypothesis(hypothesis_id=hypothesis_id, db=db, root=root)
    if json_:
        print_json(h)
        return
    d = h["definition"]
    typer.echo(f"{h['id']}  [{h['kind']}]  status: {h['status']}")
    if h["parent"]:
        typer.echo(f"parent: {h['parent']}")
    typer.echo(f"claim: {h['claim']}")
    typer.echo(f"experiment: {h['experiment']}   isolates: {h['isolates'] or '-'}")
    for arm, values in h["arms"].items():
        typer.echo(f"  arm {arm}: " + ", ".join(f"{k}={v}" for k, v in values.items()))
    for p in d.get("predicts", []):
        typer.echo(f"  predicts: {_region_text(p)}")
    for g in d.get("requires", []):
        typer.echo(f"  requires: {_region_text(g)}")
    for a in d.get("assumptions", []):
        tested = f"  (tested by {a['tested_by']})" if a.get("tested_by") else ""
        typer.echo(f"  assumes: {a['text']}{tested}")
    if h["verdict"]:
        typer.echo(f"verdict: {h['verdict']} ({h['verdict_at']})")
        typer.echo(h["reasoning"] or "")
        for c in h["checks"]:
            mark = {True: "pass", False: "FAIL", None: "n/a"}.get(c.get("passed"), "?")
            typer.echo(f"  [{mark}] {c.get('name')}: {c.get('detail', '')}")
    else:
        typer.echo("verdict: none yet (wb hypothesis run " + h["id"] + ")")


def _region_text(p: dict) -> str:
    what = p.get("target") or p.get("metric")
    where = (f"{p['difference'][0]} - {p['difference'][1]}" if p.get("difference") else p.get("arm") or "every arm")
    bounds = []
    for key, sym in (("at_least", ">="), ("at_most", "<="), ("equals", "==")):
        if p.get(key) is not None:
            bounds.append(f"{sym} {p[key]}")
    if p.get("between") is not None:
        bounds.append(f"in {p['between']}")
    return f"{what} ({where}) {' and '.join(bounds)}"


@app.command("validate")
def validate(files: Annotated[Optional[list[Path]], typer.Argument(metavar="[FILE...]")] = None,
             root: RootOption = None) -> None:
    """Validate hypotheses.yaml and experiments/*.yaml (or the named files); exit 2 on the first problem."""
    from workbench.registry import validate_files

    for line in validate_files(list(files or []), Path(root) if root else None):
        typer.echo(line)


@app.command("analyze")
def analyze(hypothesis_id: Annotated[str, typer.Argument(metavar="ID")], db: DbOption = None,
            json_: JsonOption = False, root: RootOption = None,
            record: Annotated[bool, typer.Option(help="Store the verdict.")] = True) -> None:
    """Decide a verdict from the runs already stored (imported evidence included)."""
    from workbench.verdicts import analyze_stored

    result = analyze_stored(hypothesis_id=hypothesis_id, db=db, root=root, record=record)
    if json_:
        print_json(result)
        return
    typer.echo(f"{hypothesis_id}: {result['verdict']}")
    typer.echo(result.get("reasoning") or "")
    for c in result.get("checks", []):
        mark = {True: "pass", False: "FAIL", None: "n/a"}.get(c.get("passed"), "?")
        typer.echo(f"  [{mark}] {c.get('name')}: {c.get('detail', '')}")
