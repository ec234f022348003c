"""The `wb` command line: joins one typer app per command group (`console.main` is the script's entry point).

Command modules import nothing heavy at module level, so `wb --help` stays fast.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from workbench.cli import _startup
from workbench.cli._common import JsonOption, RootOption, new_app, open_workbench, print_json

app = new_app("wb: hypothesis-driven debugging of ML inference deployments.", completion=True)


def _version(value: bool) -> None:
    if value:
        from workbench import __version__

        typer.echo(f"wb {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False,
          root: Annotated[Optional[str], typer.Option(
              "--root", help="Workbench folder for the command that follows (as its own --root).")] = None,
          db: Annotated[Optional[str], typer.Option(
              "--db", help="Store for the command that follows (as its own --db).")] = None) -> None:
    """wb: hypothesis-driven debugging of ML inference deployments."""
    # --root and --db are handed down to the subcommand as its own flags (WbGroup, before this runs).


@app.command("schema")
def schema(root: RootOption = None, json_: JsonOption = False) -> None:
    """Print the JSON Schema of hypotheses.yaml and experiments/*.yaml (for editors)."""
    import json

    schemas = open_workbench(root=root).schemas()
    if json_:
        print_json(schemas)
    else:
        # The schemas themselves, not a result about them: an editor reads this text as it is, so no envelope.
        typer.echo(json.dumps(schemas, indent=2))


def _register() -> None:
    from workbench.cli import (bundle, confounds, db, evidence_cmd, hypothesis, isolate, kernel, report, review,
                               run_cmd, runs, sim)

    run_cmd.register(hypothesis.app)
    app.add_typer(hypothesis.app, name="hypothesis")
    app.add_typer(runs.app, name="runs")
    app.add_typer(db.app, name="db")
    app.add_typer(evidence_cmd.app, name="import")
    app.add_typer(sim.app, name="sim")
    app.add_typer(kernel.app, name="kernel")
    app.add_typer(bundle.app, name="bundle")
    confounds.register(app)
    review.register(app)
    report.register(app)
    isolate.register(app)


_register()


def main() -> None:
    import sys

    from workbench.cli._pipes import quiet_when_gone

    argv = sys.argv[1:]
    with quiet_when_gone():  # around the Ctrl-C's own line too
        _main(argv)


def _main(argv: list[str]) -> None:
    from workbench.cli import _envelope
    from workbench.cli._common import interrupted
    from workbench.cli.completion import handle

    try:
        _startup.begin(argv, lambda: typer.main.get_command(app))
        code = handle(argv)
        if code is not None:
            raise SystemExit(code)
        app()  # typer builds the command tree before wb's boundary (`WbGroup.main`) runs
    except KeyboardInterrupt:
        _envelope.begin(wanted=_envelope.json_in_argv(argv))
        try:
            raise SystemExit(interrupted()) from None
        finally:
            _envelope.end()
            _startup.end()


if __name__ == "__main__":
    main()
