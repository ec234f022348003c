"""What every command group shares: the error boundary, output helpers and common options."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

from workbench.errors import WbError

if TYPE_CHECKING:
    from workbench.app import Workbench


def _report(exc: WbError) -> None:
    from workbench.secrets import redact_text

    err = typer.get_text_stream("stderr")
    err.write(f"Error: {redact_text(exc.message)}\n")
    if exc.hint:
        err.write(f"Hint: {redact_text(exc.hint)}\n")
    err.flush()


class WbGroup(TyperGroup):
    """Turns a `WbError` raised by any command into its message, hint and exit code."""

    def invoke(self, ctx):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except WbError as exc:
            _report(exc)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            sys.stderr.write("Interrupted.\n")
            raise typer.Exit(130) from None


def open_workbench(db: str | None = None, root: str | None = None) -> "Workbench":
    """The one application object of a command: settings from the flags, the environment filling the rest."""
    from workbench.app import Workbench
    from workbench.settings import Settings

    return Workbench.open(Settings.from_env(db=db, root=root))


def new_app(help: str) -> typer.Typer:
    return typer.Typer(cls=WbGroup, help=help, no_args_is_help=True, add_completion=False,
                       pretty_exceptions_enable=False)


def print_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, sort_keys=False, default=str))


def check_mark(passed: bool | None) -> str:
    return {True: "pass", False: "FAIL", None: "n/a"}[passed]


def parse_sets(values: list[str] | None) -> dict[str, str]:
    """`--set var=value` pairs into a dict; a malformed one is bad input."""
    from workbench.errors import BadInput

    out: dict[str, str] = {}
    for item in values or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise BadInput(f"--set {item!r} is not of the form var=value",
                           hint="e.g. --set causal_model=wedge")
        out[name.strip()] = value.strip()
    return out


from typing import Annotated, Optional  # noqa: E402

DbOption = Annotated[Optional[str], typer.Option(
    "--db", envvar="WB_DB", help="Store: a DuckDB file path or a SQLAlchemy URL (default wb.duckdb).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
RootOption = Annotated[Optional[str], typer.Option(
    "--root", envvar="WB_ROOT", help="Workbench folder (default: nearest folder up holding hypotheses.yaml).")]


def table(columns: list[str], rows: list[list[Any]], title: str | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title, show_lines=False)
    for c in columns:
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*["" if v is None else str(v) for v in r])
    Console().print(t)
