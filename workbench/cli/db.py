"""`wb db upgrade|current`: the store's schema revision."""

from __future__ import annotations

import typer

from workbench.cli._common import DbOption, JsonOption, new_app, print_json

app = new_app("The store's schema (migrations).")


@app.command("upgrade")
def upgrade(db: DbOption = None) -> None:
    """Create the store or bring it to the newest schema revision."""
    from workbench.store import upgrade as do_upgrade

    name, before, after = do_upgrade(db)
    if before == after:
        typer.echo(f"{name}: already at {after} (head)")
    else:
        typer.echo(f"{name}: upgraded {before or 'empty'} -> {after} (head)")


@app.command("current")
def current(db: DbOption = None, json_: JsonOption = False) -> None:
    """Print the store's revision and whether it is the head."""
    from workbench.views import db_current

    info = db_current(db=db)
    if json_:
        print_json(info)
        return
    suffix = " (head)" if info["is_head"] else f" (head is {info['head']}; run wb db upgrade)"
    typer.echo(f"{info['store']}: {info['revision'] or 'none'}{suffix}")
