"""`wb db upgrade|current`: the store's schema revision."""

from __future__ import annotations

import typer

from workbench.cli._common import DbOption, JsonOption, RootOption, new_app, open_workbench, print_json

app = new_app("The store's schema (migrations).")


@app.command("upgrade")
def upgrade(db: DbOption = None, json_: JsonOption = False, root: RootOption = None) -> None:
    """Create the store or bring it to the newest schema revision."""
    name, before, after = open_workbench(db, root).db_upgrade()
    if json_:
        print_json({"store": name, "before": before, "after": after, "changed": before != after})
    elif before == after:
        typer.echo(f"{name}: already at {after} (head)")
    else:
        typer.echo(f"{name}: upgraded {before or 'empty'} -> {after} (head)")


@app.command("current")
def current(db: DbOption = None, json_: JsonOption = False, root: RootOption = None) -> None:
    """Print the store's revision and whether it is the head."""
    info = open_workbench(db, root).db_current()
    if json_:
        print_json(info.to_dict())
        return
    suffix = (" (head)" if info.is_head else f" (this wb's newest is {info.head}: a newer wb wrote it)" if info.newer
              else f" (head is {info.head}); upgrade it: wb db upgrade")
    typer.echo(f"{info.store}: {info.revision or 'none'}{suffix}")
