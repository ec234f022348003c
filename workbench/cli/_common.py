"""What every command group shares: the error boundary, output helpers and common options.

Output conventions (README "Output for scripts"): `--json` prints one envelope per command,
`{"wb": JSON_VERSION, "command": "runs list", "ok": true, ...}` (a dict result's keys beside those, a list
result under "items"; "ok": false and "error" when the command fails, see `_envelope`); listings take
`--format table|json|csv|tsv`; a table piped elsewhere than a terminal is plain aligned text with every value
whole; NO_COLOR is honoured; a closed pipe ends quietly.

A command adopts them by: building its app with `new_app` (error boundary, closed pipe, plain help off a
terminal); taking `DbOption`/`RootOption` and `open_workbench(db, root)`; `JsonOption` + `print_json(result)`
(the envelope and the command's name come for free); a listing adds `FormatOption`, `list_format(fmt, json_)`
and `emit_rows(...)`; a verdict-producing command adds `FailOnOption`, `fail_on()` before it works and
`exit_on_verdict()` after.
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Iterator

import typer
from typer._click.parser import _OptionParser  # typer bundles its own click (no `import click`)
from typer.core import TyperCommand, TyperGroup

from workbench.cli import _envelope, _startup
from workbench.cli._pipes import quiet_when_gone
from workbench.errors import ConfigErrors, WbError
from workbench.settings import colour_system
from workbench.wrapping import WB_COMMANDS

if TYPE_CHECKING:
    from workbench.app import Workbench


def when(stamp: str | None) -> str:
    """A stored time as the text outputs give it: to the second, with its offset (2026-12-06T03:43:50+00:00), every
    one alike (the store keeps microseconds where the clock gave them). The JSON outputs keep it exact."""
    from datetime import datetime

    if not stamp:
        return "-"
    try:
        return datetime.fromisoformat(stamp).isoformat(timespec="seconds")
    except ValueError:  # not a time wb wrote: as stored
        return stamp


def _report(exc: WbError, label: str = "Error") -> None:
    """The `Error:` line and `Hint:` of an error; of each problem in turn, then how many, for several at once. On a
    terminal each line is wrapped at its width as prose is, a hint's later lines too (under their own indent); a
    command to paste in any of them (a resume, a failed restore's) is kept whole (`wrapping.wrap`)."""
    from workbench.wrapping import wrap

    err = typer.get_text_stream("stderr")
    width = _stderr_width()

    def said(line: str, indent: str | None = "  ") -> str:
        return "\n".join(wrap(line, width, indent)) if width else line

    parts = exc.parts()
    own = exc.hint if len(parts) > 1 and exc.hint and all(exc.hint != p.hint for p in parts) else None
    for hint, message in [*((one.hint, one.message) for one in parts), *([(own, None)] if own else [])]:
        if message is not None:
            err.write(said(f"{label}: {message}") + "\n")
        if hint:  # the whole's own (`own`) after its parts'
            first, _, rest = hint.partition("\n")
            later = "".join(f"\n{said(line, None if line.startswith(' ') else '  ')}" for line in rest.split("\n"))
            err.write(said(f"Hint: {first}") + (later if rest else "") + "\n")
    if isinstance(exc, ConfigErrors):
        err.write(said(exc.summary()) + "\n")
    err.flush()


@contextmanager
def telling_left_out(wb: "Workbench", asked: str | None = None) -> Iterator[None]:
    """A command that reads the registry without its broken entries (`Workbench.left_out`): after it, their problems
    on stderr as `wb hypothesis list` tells them, each a `Warning:` line, and the entries under "broken" in the
    --json envelope. `asked`, the entry asked for by id, is told as the command's error, not warned about again; so
    is an entry whose problems the command's error tells (that of a parent of the entry asked for)."""
    told: list[Any] = []
    try:
        yield
    except ConfigErrors as exc:
        told = list(exc.problems)
        raise
    finally:
        apart = wb.left_out()
        if apart is not None:
            _envelope.add(broken=apart.to_dicts())
            warning = apart.left_out(asked, told)
            if warning is not None:
                _report(warning, label="Warning")


@contextmanager
def _redacted_output() -> Iterator[None]:
    """stdout and stderr through the secrets' redaction while a command runs (workbench.secrets)."""
    from workbench.secrets import RedactedStream

    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactedStream(out), RedactedStream(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


# `wb --help` lists the root's commands as the work goes: state and run hypotheses, read the runs, report, look for
# confounds and minimal changes, review, share; then the simulated deployment, the kernel and the store. The list is
# the wrapping's too (a `wb COMMAND` in a message is one to paste), kept once, there.
COMMAND_ORDER = WB_COMMANDS


class WbGroup(TyperGroup):
    """Turns a `WbError` raised by any command into its message, hint and exit code; its own options show
    what their values are, as every command's do (`option_metavar`). What any command prints, its error
    included, goes through the secrets' redaction: no command has to ask for it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _name_option_values(self.params)

    def list_commands(self, ctx):  # type: ignore[override]
        """The commands in the order of the work (COMMAND_ORDER), not of their registration (which put `schema`
        first); a group's own subcommands keep theirs."""
        rank = {name: i for i, name in enumerate(COMMAND_ORDER)}
        return sorted(super().list_commands(ctx), key=lambda name: rank.get(name, len(rank)))

    def parse_args(self, ctx, args):  # type: ignore[override]
        try:
            return super().parse_args(ctx, args)
        except Exception as exc:
            _in_context(exc, ctx)
            raise

    def make_context(self, *args: Any, **kwargs: Any):  # type: ignore[override]
        """A Ctrl-C while the flags are parsed, before `invoke`'s boundary: told as that boundary tells one (typer
        turned it into a silent exit 130)."""
        try:
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt:
            raise typer.Exit(interrupted()) from None

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:  # type: ignore[override]
        """As click's standalone mode, but a mistake the parser finds (an unknown option, a missing argument, a
        value of the wrong type) is one `Error:` line and a `Hint:` with the usage, as wb's own errors are,
        not click's usage block, its "Try ..." line and a blank line before the error."""
        from typer._click.exceptions import ClickException, NoArgsIsHelpError
        from typer.exceptions import Abort

        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        argv = kwargs.get("args") if "args" in kwargs else (args[0] if args else None)
        argv = list(sys.argv[1:] if argv is None else argv)
        _help_styles()
        with quiet_when_gone():  # a reader gone ends the output, never the command: its exit code stands
            _envelope.begin(wanted=_envelope.json_in_argv(argv))
            try:
                _startup.begin(argv, lambda: self)
                rv = super().main(*args, standalone_mode=False, **kwargs)
            except KeyboardInterrupt:  # one held while the commands were imported
                sys.exit(interrupted())
            except NoArgsIsHelpError as exc:  # a group given no command: its help
                exc.show()
                sys.exit(exc.exit_code)
            except ClickException as exc:
                _usage_error(exc)
                sys.exit(exc.exit_code)
            except Abort:
                sys.stderr.write("Aborted!\n")
                _envelope.emit({"message": "aborted", "hint": None, "where": None, "exit_code": 1, "kind": "Abort"})
                sys.exit(1)
            finally:
                _envelope.end()
                _startup.end()
        sys.exit(rv if isinstance(rv, int) and not isinstance(rv, bool) else 0)

    def invoke(self, ctx):  # type: ignore[override]
        root = ctx.parent is None
        with _redacted_output() if root else nullcontext():
            try:
                if root:
                    _hand_down_global_flags(ctx)
                rv = super().invoke(ctx)
                if root:
                    _envelope.emit()
                sys.stdout.flush()  # a closed pipe is told here (`_pipes`), not at interpreter exit
                return rv
            except WbError as exc:
                _report(exc)
                _envelope.emit(_envelope.error_of(exc, exc.exit_code), command=command_name())
                raise typer.Exit(exc.exit_code) from None
            except typer.Exit as exc:
                # A command group's own boundary has spoken (`wb runs list` passes through two): the Exit still
                # carries the interrupt as its context, which must not be reported a second time.
                if root:
                    _envelope.emit(_envelope.exit_error(exc.exit_code))
                raise
            except (KeyboardInterrupt, Exception) as exc:  # Ctrl-C, also one that reached a query of the store
                from typer._click.exceptions import ClickException

                from workbench.store.engine import interrupted_query

                if isinstance(exc, ClickException):  # the parser's: `main` reports it
                    raise
                if not interrupted_query(exc):  # a bug: its traceback, and the envelope says so
                    _envelope.emit(_envelope.error_of(exc, 1) | {"kind": "bug", "message": f"a bug in wb: "
                                                                 f"{type(exc).__name__}: {exc}"})
                    raise
                raise typer.Exit(interrupted()) from None


def interrupted() -> int:
    """Tell a Ctrl-C no command handled itself; its exit code (130). One in the first moments of `wb hypothesis
    run`, before its execution opened, says what the run's own early stop says: nothing was run or recorded, and
    the target was not touched, with the envelope's "status" and "resume" (README); any other is "Interrupted."."""
    with _redacted_output():  # outside a command's own boundary too (a Ctrl-C before it ran)
        return _tell_interrupted()


def _tell_interrupted() -> int:
    from workbench.runner.stopping import stopped_in_start_window

    early = stopped_in_start_window()
    if early is None:
        sys.stderr.write("Interrupted.\n")
        _envelope.emit({"message": "interrupted", "hint": None, "where": None, "exit_code": 130,
                        "kind": "KeyboardInterrupt"})
        return 130
    _report(early)
    _envelope.add(status="interrupted", resume=early.resume)
    _envelope.emit(_envelope.error_of(early, early.exit_code), command="hypothesis run")
    return early.exit_code


def _in_context(exc: BaseException, ctx: Any) -> None:
    """Give a usage error the option parser raised without a context (an option given no value: "Option '--as'
    requires an argument.", or a flag given one) the command's, so it gets the usage hint every other has."""
    from typer._click.exceptions import UsageError

    if isinstance(exc, UsageError) and exc.ctx is None:
        exc.ctx, exc.cmd = ctx, ctx.command


def _usage_error(exc: Any) -> None:
    """A mistake the parser found: one `Error:` line and a `Hint:` with the usage; with --json the envelope too,
    naming the flag at fault as `where` when the parser knows it."""
    from typer._click.exceptions import NoSuchOption, UsageError

    if isinstance(exc, NoSuchOption) and exc.possibilities:
        exc.possibilities = close_options(exc.option_name, exc.possibilities)
    err = typer.get_text_stream("stderr")
    err.write(f"Error: {exc.format_message()}\n")
    ctx = exc.ctx if isinstance(exc, UsageError) else None
    hint = None
    if ctx is not None:
        usage = ctx.get_usage().removeprefix("Usage: ")
        hint = f"usage: {usage}  ({ctx.command_path} --help lists the options)"
        err.write(f"Hint: {hint}\n")
    err.flush()
    param = getattr(exc, "param", None)
    opts = [o for o in getattr(param, "opts", []) if o.startswith("--")] or list(getattr(param, "opts", []))
    where = getattr(exc, "option_name", None) or (opts[0] if opts else getattr(param, "name", None))
    command = " ".join(ctx.command_path.split()[1:]) if ctx is not None else ""
    _envelope.emit({"message": exc.format_message(), "hint": hint, "where": where, "exit_code": exc.exit_code,
                       "kind": "UsageError"}, command=command)


def close_options(given: str, options: Any) -> list[str]:
    """The `options` whose names are close to the unknown option `given`, compared without their dashes: click
    compares them with the dashes, so `--db` was offered `--dir` ("--d" alike), `--dri` still is."""
    import difflib

    name = given.lstrip("-")
    return [o for o in options if difflib.get_close_matches(name, [o.lstrip("-")], n=1)]


GLOBAL_FLAGS = ("root", "db")  # accepted before the subcommand too: `wb --root DIR --db FILE runs list`


def _hand_down_global_flags(ctx) -> None:
    """`wb --root DIR --db FILE CMD ...` means `wb CMD --root DIR --db FILE ...`: the flags are placed right
    after the command's name, so the command parses them as its own (over $WB_ROOT / $WB_DB), and one given
    again after the command comes later and wins. A command that reads no workbench (`wb sim`, `wb kernel`)
    refuses them rather than ignoring them. Unknown command names are left for the parser to report."""
    from workbench.errors import BadInput

    given = [(name, ctx.params[name]) for name in GLOBAL_FLAGS if ctx.params.get(name) is not None]
    if not given:
        return
    tokens = [*ctx._protected_args, *ctx.args]  # what follows the root's options (typer 0.29's bundled click)
    cmd, i = ctx.command, 0
    while isinstance(cmd, TyperGroup) and i < len(tokens):
        cmd = cmd.get_command(ctx, tokens[i])
        if cmd is None:
            return
        i += 1
    if isinstance(cmd, TyperGroup):
        return  # `wb --root X hypothesis`: the group's help or "missing command" follows
    takes = {p.name for p in cmd.params}
    refused = [f"--{name}" for name, _ in given if name not in takes]
    if refused:
        raise BadInput(f"{' and '.join(refused)} given before the subcommand, but wb {' '.join(tokens[:i])} "
                       f"takes no {' or '.join(refused)}", hint="leave it out for this command")
    tokens[i:i] = [t for name, value in given for t in (f"--{name}", value)]
    ctx._protected_args, ctx.args = tokens[:1], tokens[1:]


def open_workbench(db: str | None = None, root: str | None = None) -> "Workbench":
    """The one application object of a command: settings from the flags, the environment filling the rest. The
    parser reads --db and --root from $WB_DB and $WB_ROOT too (the options' envvars): an error about either names
    which gave it."""
    from typer._click.core import ParameterSource
    from typer._click.globals import get_current_context

    from workbench.app import Workbench
    from workbench.settings import Settings

    ctx = get_current_context(silent=True)

    def from_env(name: str, value: str | None) -> bool:
        return ctx is not None and value is not None and ctx.get_parameter_source(name) == ParameterSource.ENVIRONMENT

    return Workbench.open(Settings.from_env(db=db, root=root, db_from="$WB_DB" if from_env("db", db) else "--db",
                                            root_from="$WB_ROOT" if from_env("root", root) else "--root"))


def is_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def stderr_beside_stdout() -> bool:
    """Whether stderr lands where stdout does (one terminal, one file, one pipe: `2>&1`), so that a line the
    progress wrote on stderr is read with the summary; False where either is not a file (captured in-process)."""
    try:
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (AttributeError, ValueError, OSError):
        return False
    return (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino)


_WORD = re.compile(r"[A-Za-z0-9_.-]+")


def argument_usage(param: Any) -> str:
    """An argument as usage lines write it elsewhere: `ID`, `[FILE]`, `RUN_ID...`, `[FILE]...` (typer writes
    `{RUN_ID}...`). A metavar that spells out a grammar of its own ("HYPOTHESIS | list [HYPOTHESIS]") is
    shown as written, in brackets when the argument is optional."""
    name = param.metavar or (param.name or "").upper()
    word = name.removesuffix("...")
    if not _WORD.fullmatch(word):
        return name if param.required or name.startswith("[") else f"[{name}]"
    return (word if param.required else f"[{word}]") + ("..." if param.nargs != 1 else "")


# typer converts a flag's value through pydantic, whose words reach the user unless said again in wb's.
_CONVERSION_WORDS = {"int_parsing": "must be a whole number", "int_from_float": "must be a whole number",
                     "float_parsing": "must be a number", "bool_parsing": "must be true or false"}


def _command_of(ctx: Any) -> str:
    """The command as typed after `wb` ("runs list"), from its context's chain of names: not the command path less
    its first word, which misses every command where the program was started by a name of several words
    (`python -m workbench.cli`), leaving every numeric flag unchecked."""
    names: list[str] = []
    while ctx.parent is not None:
        names.append(ctx.info_name)
        ctx = ctx.parent
    return " ".join(reversed(names))


def _given(exc: typer.BadParameter) -> Any:
    """The value typer could not convert, as given."""
    from pydantic import ValidationError

    cause = exc.__cause__
    return cause.errors()[0].get("input") if isinstance(cause, ValidationError) and cause.errors() else None


def _in_wb_words(exc: typer.BadParameter) -> None:
    """A flag value typer could not convert (`--replicates abc`): the message names what it must be and what
    was given; any other BadParameter keeps its own message."""
    from pydantic import ValidationError

    first = exc.__cause__.errors()[0] if isinstance(exc.__cause__, ValidationError) else None
    if first is not None and first.get("type") in _CONVERSION_WORDS:
        exc.message = f"{_CONVERSION_WORDS[first['type']]}, got {first.get('input')!r}"


# What an option's value is, as its help shows it (typer writes the Python type: `--db <str>`,
# `--set <list[str]>`). An option not named here shows its own name in capitals (`--widgets WIDGETS`).
OPTION_METAVARS = {
    "--db": "STORE", "--root": "DIR", "--dir": "DIR", "--out": "PATH", "--config": "FILE",
    "--hypothesis": "ID", "--experiment": "ID", "--parent": "ID", "--target": "PROFILE", "--metric": "METRIC",
    "--set": "VAR=VALUE", "--good": "VAR=VALUE", "--bad": "VAR=VALUE", "--pair": "FILE",
    "--seed": "N", "--replicates": "N", "--limit": "N", "--layers": "N", "--budget": "UNITS",
    "--alpha": "LEVEL", "--timeout": "SECONDS", "--region": "REGION", "--message": "TEXT", "--as": "NAME",
    "--variants": "IDS", "--sessions": "N", "--rounds": "N", "--ctx": "TOKENS", "--max-tokens": "N",
    "--tokens": "N", "--concurrency": "N", "--jsonl": "FILE", "--tag": "TEXT", "--since": "TIME",
}


def option_metavar(param: Any) -> str | None:
    """The metavar an option's help shows: its own, else the table's, else its long name in capitals; none
    for a flag."""
    if param.param_type_name != "option" or param.metavar or getattr(param, "is_flag", False):
        return param.metavar
    longs = [o for o in param.opts if o.startswith("--")] or list(param.opts)
    return next((OPTION_METAVARS[o] for o in longs if o in OPTION_METAVARS),
                longs[0].lstrip("-").replace("-", "_").upper())


def _name_option_values(params: list[Any]) -> None:
    for param in params:
        if param.param_type_name == "option":
            param.metavar = option_metavar(param)
        elif param.param_type_name == "argument":
            # typer's Arguments section adds the Python type after the name (`RUN_ID <str>`); the name says it.
            param.display_type_rich = lambda ctx: None


_TYPED = "wb.typed"  # the context's note of each numeric flag's values as typed (`_numbers.typed`)


class WbCommand(TyperCommand):
    """Every wb command: its usage line names arguments the usual way (see `argument_usage`), for the plain
    and the rich help and for typer's own usage errors alike, which all read `collect_usage_pieces`; each
    option shows what its value is (`option_metavar`); a flag value of the wrong type is refused in wb's
    words."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _name_option_values(self.params)

    def invoke(self, ctx):  # type: ignore[override]
        from workbench.cli import _numbers

        params = ctx.params
        fmt = params.get("fmt")
        _envelope.want(any(params.get(n) is True for n in ("json_", "as_json", "json_out"))
                       or (isinstance(fmt, str) and fmt.lower() == "json"), command_name())
        _numbers.check(_command_of(ctx), self.params, params, ctx.meta.get(_TYPED, {}))  # before the command works
        return super().invoke(ctx)

    def parse_args(self, ctx, args):  # type: ignore[override]
        from workbench.cli import _numbers

        ctx.meta[_TYPED] = _numbers.typed(self.params, args)
        try:
            return super().parse_args(ctx, args)
        except typer.BadParameter as exc:
            from workbench.cli import _numbers

            refused = _numbers.not_read(_command_of(ctx), exc.param, _given(exc))
            if refused is not None:  # a numeric flag: said as a value out of its range is
                _envelope.named(_command_of(ctx))  # the parser's context is still the group's ("runs")
                raise refused from None
            _in_wb_words(exc)
            raise
        except Exception as exc:
            _in_context(exc, ctx)
            raise

    def make_parser(self, ctx):  # type: ignore[override]
        parser = _NegativeNumbersAreValues(ctx)  # as click's, with the parser below
        for param in self.get_params(ctx):
            param.add_to_parser(parser, ctx)
        return parser

    def collect_usage_pieces(self, ctx):  # type: ignore[override]
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(argument_usage(param))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


_NEGATIVE_NUMBER = re.compile(r"-(\d+\.?\d*|\.\d+)")


class _NegativeNumbersAreValues(_OptionParser):
    """A command's parser: a negative number no flag is named for (`wb runs show -1`) is a value for its arguments,
    refused by their own check ("RUN_ID -1: not a run id"), not "No such option: -1"."""

    def _process_opts(self, arg: str, state: Any) -> None:
        if _NEGATIVE_NUMBER.fullmatch(arg) and arg not in self._short_opt and arg not in self._long_opt:
            state.largs.append(arg)
            return
        super()._process_opts(arg, state)


def _help_styles() -> None:
    """typer's rich help and usage errors draw on a console of its own, styled by a setting of its module: it gets
    wb's colour system (none at all under NO_COLOR, as wb's own consoles). The module is imported only for that."""
    if colour_system() is None or "typer.rich_utils" in sys.modules:
        from typer import rich_utils

        rich_utils.COLOR_SYSTEM = colour_system()  # type: ignore[assignment]


class WbTyper(typer.Typer):
    """A command group whose commands are `WbCommand`s unless one asks for another class."""

    def command(self, name: str | None = None, *, cls: type[TyperCommand] | None = None,  # type: ignore[override]
                **kwargs: Any):
        return super().command(name, cls=cls or WbCommand, **kwargs)


def new_app(help: str, *, completion: bool = False) -> typer.Typer:
    # Rich help costs about 0.3 s of rendering: only a terminal gets it; a pipe, a pager or a test gets
    # click's plain help, which is instant and greps the same.
    return WbTyper(cls=WbGroup, help=help, no_args_is_help=True, add_completion=completion,
                       pretty_exceptions_enable=False, rich_markup_mode="rich" if is_tty() else None)


JSON_VERSION = _envelope.JSON_VERSION
envelope = _envelope.envelope


def command_name() -> str:
    """The running command as typed after `wb` ("runs list"), from the parser's context."""
    from typer._click.globals import get_current_context  # typer bundles its own click (no `import click`)

    names: list[str] = []
    ctx = get_current_context(silent=True)
    while ctx is not None and ctx.parent is not None:  # the root's name is the program's (wb, python -m ...)
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(reversed(names))


def print_json(obj: Any, command: str | None = None) -> None:
    """The command's envelope (`_envelope`): held for the error boundary, which prints it once the outcome is
    known (`"ok"`, and the error when it failed); printed at once when no boundary runs. A p-value that underflowed
    a float is the bound 1e-300 in it, never 0 (`display.p_numbers`)."""
    from workbench.analysis.display import p_numbers

    obj = p_numbers(obj)
    name = command if command is not None else command_name()
    if not _envelope.hold(name, obj):
        _envelope.print_now(name, obj)


def parse_sets(values: list[str] | None) -> dict[str, str]:
    """`--set var=value` pairs into a dict; a malformed one is bad input.

    A variable given two different values is bad input naming both: taking the last one silently would run
    a config the user may not have meant (a flag added by a script, another left over from a copied command
    line). The same value twice says nothing contradictory and is taken once."""
    from workbench.errors import BadInput

    out: dict[str, str] = {}
    for item in values or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise BadInput(f"--set {item!r} is not of the form var=value",
                           hint="e.g. --set causal_model=wedge", where="--set")
        name, value = name.strip(), value.strip()
        if name in out and out[name] != value:
            raise BadInput(f"--set {name}={out[name]} and --set {name}={value} give {name} two values",
                           hint=f"keep one --set {name}=...", where="--set")
        out[name] = value
    return out


from typing import Annotated, Optional  # noqa: E402

DbOption = Annotated[Optional[str], typer.Option(
    "--db", envvar="WB_DB",
    help="Store: a DuckDB file path or a SQLAlchemy URL (default wb.duckdb in the workbench folder).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as versioned JSON ({\"wb\": 1, ...}).")]
FormatOption = Annotated[Optional[str], typer.Option(
    "--format", help="table, json, csv or tsv (table: whole values when piped).", metavar="FORMAT")]
FailOnOption = Annotated[Optional[str], typer.Option(
    "--fail-on", metavar="VERDICTS", help="Exit 3 when the verdict is one of these, comma-separated: "
                                          "falsified, invalid, inconclusive, supported.")]
LIST_FORMATS = ("table", "json", "csv", "tsv")
VERDICTS = ("supported", "falsified", "inconclusive", "invalid")
EXIT_VERDICT = 3
RootOption = Annotated[Optional[str], typer.Option(
    "--root", envvar="WB_ROOT", help="Workbench folder (default: nearest folder up holding hypotheses.yaml).")]


def list_format(fmt: str | None, as_json: bool = False) -> str:
    """--format's value (`--json` is short for --format json); an unknown one, or another beside --json, is bad
    input."""
    from workbench.errors import BadInput

    if as_json and fmt is not None and fmt.lower() != "json":
        raise BadInput(f"--json and --format {fmt}: give one", hint="--json is --format json", where="--format")
    chosen = "json" if as_json else (fmt or "table").lower()
    if chosen not in LIST_FORMATS:
        from workbench.registry.common import did_you_mean

        raise BadInput(f"--format {fmt!r} is not one of {', '.join(LIST_FORMATS)}",
                       hint=did_you_mean(chosen, LIST_FORMATS) or "e.g. --format tsv", where="--format")
    return chosen


def emit_rows(fmt: str, columns: list[str], rows: list[list[Any]], items: list[Any] | None = None,
              command: str | None = None, optional: tuple[str, ...] = (), below: str | None = None,
              under: tuple[str, ...] = ()) -> None:
    """A listing in the chosen format. JSON prints `items` (the full records) when given, else one object a row;
    `command` names the envelope's command where the parser's path does not (`review list` is one command
    whose first argument is `list`); `optional`: columns a narrow terminal may leave out, `below`: a column of
    prose a terminal shows under its row, `under`: optional columns it shows there rather than leave out (see
    `table`)."""
    if fmt == "json":
        print_json(items if items is not None else [dict(zip(columns, r)) for r in rows], command)
    elif fmt == "csv":
        import csv

        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(columns)
        w.writerows([["" if v is None else v for v in r] for r in rows])
    elif fmt == "tsv":  # one row a line, no quoting (cut -f, awk -F'\t'): a tab or line break in a value is a space
        for r in [columns, *rows]:
            typer.echo("\t".join(re.sub(r"[\t\r\n]", " ", "" if v is None else str(v)) for v in r))
    else:
        table(columns, rows, optional=optional, below=below, under=under)


def echo_wrapped(text: str, indent: str | None = None, *, err: bool = False) -> None:
    """A line of prose or of a summary: on a terminal wrapped between words at its width (`wrapping.wrap`: later lines
    indented by `indent`, by default two more than the text's own); piped, one line whatever its length, for grep.
    `err`: on stderr (a warning), wrapped where stderr is a terminal, at its width (`_stderr_width`, as errors)."""
    from workbench.wrapping import wrap

    width = _stderr_width() if err else terminal_width() if is_tty() else None
    if width is None:
        typer.echo(text, err=err)
        return
    typer.echo("\n".join(out for line in text.split("\n") for out in wrap(line, width, indent)), err=err)


def _stderr_width() -> int | None:
    """The width errors are wrapped at: the terminal's when stderr is one, else None (a file, a pipe: one line).
    Measured on stderr's own terminal ($COLUMNS first, as for tables): stdout may be piped, or on another."""
    if not stderr_is_tty():
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns or terminal_width()
    except (AttributeError, OSError, ValueError):  # no descriptor of its own (a test's capture): as tables take it
        return terminal_width()


def terminal_width() -> int:
    """The terminal's width in columns, as a table takes it (rich reads $COLUMNS, then the terminal itself)."""
    from rich.console import Console

    return Console().width


def table(columns: list[str], rows: list[list[Any]], title: str | None = None, *,
          optional: tuple[str, ...] = (), below: str | None = None, under: tuple[str, ...] = ()) -> None:
    """A rich table on a terminal; elsewhere plain columns, two spaces apart, no value cut or folded
    (`wb runs list | grep wedge-confound` finds whole rows).

    On a terminal too narrow for every column, the columns named in `optional` (the least needed first) are
    left out, as few as make the rest fit, and a line under the table names them; piped output and the
    other formats keep every column, whatever the width.

    A column empty in every row (no run has a label, no hypothesis a note) is left out here, on a terminal or
    not: it says nothing and takes the width of its name. CSV, TSV and JSON keep it (their columns are fixed).

    `below` names a column of prose (a finding's message): on a terminal each row's text of it goes under the row,
    across the table's width, rather than into a column of its own, where it folded to a word or two a line.
    `under` names optional columns that a terminal without room for them shows there too, each row's value on a
    line of its own after the column's name (`metrics: leak=14 sessions=80`), rather than leave out: the values a
    reader came for (a run's metrics) or one that cannot be folded to fit (a confound's factor)."""
    cells = [["" if v is None else str(v).replace("\n", " ") for v in r] for r in rows]
    kept = [i for i in range(len(columns)) if i == 0 or not cells or any(r[i] for r in cells)]
    columns, cells = [columns[i] for i in kept], [[r[i] for i in kept] for r in cells]
    if not is_tty():
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
        if title:
            typer.echo(title)
        for r in [columns] + cells:
            typer.echo("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # An id or a status is never broken; other columns wrap between words, folding only a word wider than
    # WORD_FOLD. Where even that does not fit the terminal, the line runs on.
    widths = [max([len(c)] + [len(r[i]) if c in WHOLE_COLUMNS else min(WORD_FOLD, _longest_word(r[i]))
                              for r in cells]) for i, c in enumerate(columns)]
    console = Console(color_system=colour_system())
    sparse = _sparse(columns, cells, optional, under)
    shown = _columns_that_fit(columns, widths, optional, console.width, sparse)
    left_out = [c for c in columns if c not in shown]
    if below in columns or set(left_out) & set(under):
        _rows_with_text_below(columns, cells, title, optional, below, under, sparse)
        return
    t = Table(title=title, show_lines=False)
    for i, c in enumerate(columns):
        if c in shown:
            t.add_column(c, overflow="fold", no_wrap=c in WHOLE_COLUMNS, min_width=widths[i])
    for r in cells:
        t.add_row(*(Text(v) for v, c in zip(r, columns) if c in shown))  # plain text: a bracket is not markup
    least = sum(w + 3 for w, c in zip(widths, columns) if c in shown)  # each column's padding and its rule
    if least + 1 > console.width:
        console = Console(width=least + 1, color_system=colour_system())
    console.print(t)
    _left_out_note(left_out)


def _left_out_note(left_out: list[str]) -> None:
    """The line under a table naming the columns it left out: wrapped between words at the terminal's width, not
    the table's (a caption wrapped there, padded with spaces to it)."""
    if left_out:
        echo_wrapped(f"not shown at this width: {', '.join(left_out)} (--format tsv shows every column)", indent="")


def _sparse(columns: list[str], cells: list[list[str]], optional: tuple[str, ...],
            under: tuple[str, ...]) -> tuple[str, ...]:
    """The `under` columns most rows leave empty: on a terminal too narrow for every column they go under their rows
    first, and stay there (the label of a few imported runs among a hypothesis' runs took its width in every row)."""
    filled = {c: sum(1 for r in cells if r[i]) for i, c in enumerate(columns)}
    return tuple(c for c in optional if c in under and 2 * filled.get(c, 0) < len(cells))


def _rows_with_text_below(columns: list[str], cells: list[list[str]], title: str | None, optional: tuple[str, ...],
                          below: str | None, under: tuple[str, ...], sparse: tuple[str, ...] = ()) -> None:
    """`table` on a terminal with text under each row: the columns of the row whole, two spaces apart (optional ones
    left out as there, to fit), a rule between rows; under the row, across the table's width, the `under` columns
    it has no room for, each named, then the `below` column's text."""
    from rich.console import Console, Group
    from rich.table import Table
    from rich.text import Text

    at = columns.index(below) if below in columns else len(columns)
    names = columns[:at] + columns[at + 1:]
    rest = [r[:at] + r[at + 1:] for r in cells]
    widths = [max([len(c)] + [len(r[i]) for r in rest]) for i, c in enumerate(names)]
    console = Console(color_system=colour_system())
    # A column here takes its width and a gap of 2; the box 4 in all: the need `_columns_that_fit` counts, less 1.
    shown = _columns_that_fit(names, [w - 1 for w in widths], optional, console.width - 1, sparse)
    keep = [i for i, c in enumerate(names) if c in shown]
    moved = [i for i, c in enumerate(names) if c not in shown and c in under]
    left_out = [c for c in names if c not in shown and c not in under]

    def line(values: list[str]) -> Table:
        grid = Table.grid(padding=(0, 2))
        for i in keep:
            grid.add_column(width=widths[i], no_wrap=True)
        grid.add_row(*(Text(values[i]) for i in keep))  # plain text: a bracket is not markup
        return grid

    t = Table(title=title, show_lines=True)
    t.add_column(Group(line(names), Text(below, style="italic")) if below in columns else line(names))
    for r, full in zip(rest, cells):
        texts = [Text.assemble((f"{names[i]}: ", "italic"), r[i]) for i in moved if r[i]]
        texts += [Text(full[at])] if below in columns and full[at] else []
        t.add_row(Group(line(r), *texts) if texts else line(r))
    least = sum(widths[i] + 2 for i in keep) + 2
    if least > console.width:  # the columns kept do not fit even so: the line runs on
        console = Console(width=least, color_system=colour_system())
    console.print(t)
    _left_out_note(left_out)


def _columns_that_fit(columns: list[str], widths: list[int], optional: tuple[str, ...], width: int,
                      sparse: tuple[str, ...] = ()) -> set[str]:
    """The columns to show in `width`: the optional ones are left out, the `sparse` ones then the rest least needed
    first, until the rest fit; then each left out but a sparse one, most needed first, comes back if it still fits."""
    need = dict(zip(columns, (w + 3 for w in widths)))
    shown = set(columns)
    dropped: list[str] = []
    for c in (*sparse, *(c for c in optional if c not in sparse)):
        if sum(need[s] for s in shown) + 1 <= width:
            break
        if c in shown:
            shown.discard(c)
            dropped.append(c)
    for c in reversed(dropped):
        if c not in sparse and sum(need[s] for s in shown) + need[c] + 1 <= width:
            shown.add(c)
    return shown


# Columns that name something (ids, labels) or say a state: a reader greps and copies them whole.
WHOLE_COLUMNS = frozenset({"id", "parent", "hypothesis", "label", "arm", "status", "state", "verdict", "experiment",
                           "flag", "kind", "outcome", "factor", "isolates", "decided_by"})
WORD_FOLD = 24


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def comma_items(flag: str, value: str, hint: str) -> list[str]:
    """The items of a comma-separated flag value, stripped; an empty one is bad input naming the flag and its place."""
    from workbench.errors import BadInput

    items = [v.strip() for v in value.split(",")]
    if "" in items:
        # `a,,b` or `$A,$B` with one variable unset: whatever that item was to add would be silently dropped.
        raise BadInput(f"{flag} {value!r}: item {items.index('') + 1} is empty", hint=hint, where=flag)
    return items


def fail_on(value: str | None) -> frozenset[str]:
    """--fail-on's verdicts; an unknown one, or an empty item, is bad input (exit 2) before anything runs."""
    from workbench.errors import BadInput

    if value is None:
        return frozenset()
    if not value.replace(",", "").strip():
        # `--fail-on ""` (an unset CI variable, say) would gate on nothing while looking like a gate.
        raise BadInput(f"--fail-on {value!r} names no verdict",
                       hint="use a comma-separated subset of " + ",".join(VERDICTS) + ", or leave --fail-on out",
                       where="--fail-on")
    chosen = frozenset(v.lower() for v in comma_items(
        "--fail-on", value, hint="use a comma-separated subset of " + ",".join(VERDICTS) + " with no empty item"))
    unknown = sorted(chosen - set(VERDICTS))
    if unknown:
        from workbench.registry.common import did_you_mean

        raise BadInput(f"--fail-on {value!r}: unknown verdict {', '.join(unknown)}",
                       hint=did_you_mean(unknown[0], VERDICTS, "use a comma-separated subset of " + ",".join(VERDICTS)),
                       where="--fail-on")
    return chosen


def exit_on_verdict(verdict: str | None, failing: frozenset[str]) -> None:
    """Exit 3 when the verdict is one the caller asked to fail on (CI gates on it)."""
    if verdict is not None and verdict in failing:
        message = f"verdict {verdict} is in --fail-on ({','.join(sorted(failing))})"
        typer.echo(f"{message}: exit {EXIT_VERDICT}", err=True)
        _envelope.note_error({"message": message, "hint": None, "where": "--fail-on", "exit_code": EXIT_VERDICT,
                              "kind": "VerdictInFailOn"})
        raise typer.Exit(EXIT_VERDICT)
