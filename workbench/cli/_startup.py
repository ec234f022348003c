"""A Ctrl-C in a command's first moments: held while the `wb` script imports wb's modules (`console.main`), then
told as the command would tell it (`wb hypothesis run`: nothing was run or recorded, README). Only the interpreter's
own start-up, before wb's first line runs, is left to Python."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any, Callable

_held: list[int] = []
_before: list[Any] = []


def hold() -> None:
    """Keep a Ctrl-C for later while the commands are imported: one raised inside an import would end in a
    traceback before any boundary runs. A Ctrl-C the shell made the process ignore stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        _before.append(signal.signal(signal.SIGINT, lambda signum, _frame: _held.append(signum)))


def let_go() -> None:
    """The imports are done: Ctrl-C acts at once again (one held meanwhile is raised by `begin`)."""
    while _before:
        signal.signal(signal.SIGINT, _before.pop())


def runs_an_execution(argv: list[str]) -> bool:
    """Whether the raw arguments are `wb [--root DIR] [--db STORE] hypothesis run ...` (before they are parsed)."""
    words: list[str] = []
    tokens = iter(argv[:argv.index("--")] if "--" in argv else argv)
    for t in tokens:
        if t in ("--root", "--db"):
            next(tokens, None)
        elif not t.startswith("-"):
            words.append(t)
            if len(words) == 2:
                break
    return words == ["hypothesis", "run"]


def begin(argv: list[str], cli: Callable[[], Any]) -> None:
    """A command line starts: for `wb hypothesis run`, a Ctrl-C from here until its execution opens says that
    nothing was run or recorded (a --resume's: how to continue, as `resume_command` gives it); a Ctrl-C held while
    the modules were imported is raised now, to be told so. `cli` gives wb's command tree (click's)."""
    from workbench.runner.stopping import close_start_window, open_start_window

    let_go()
    if runs_an_execution(argv):
        resume = "--resume" in (argv[:argv.index("--")] if "--" in argv else argv)
        open_start_window((lambda: resume_command(argv, cli())) if resume else None)
    else:
        close_start_window()
    if _held:
        _held.clear()
        raise KeyboardInterrupt


def resume_command(argv: list[str], cli: Any) -> str | None:
    """The command that continues the execution `wb ... hypothesis run ID --resume ...` names, as the run's own
    stop gives it (`takeover.resume_command_at`): no --json, no other flag, an absolute --db (none that carries a
    password), the workbench's absolute --root. None where the line names no ID."""
    from workbench.app import Workbench
    from workbench.errors import BadInput
    from workbench.registry.loader import find_root
    from workbench.runner.takeover import resume_command_at
    from workbench.settings import Settings
    from workbench.store.engine import resolve_url

    params = _run_params(argv, cli)
    if not params.get("hypothesis_id"):
        return None
    given = Path(params["root"]).expanduser() if params.get("root") else None
    db = str(Workbench(Settings(db=params.get("db") or None, root=given)).settings.db)  # the app's default store
    try:
        root = given or find_root()
    except BadInput:
        root = Path.cwd()
    try:
        url, path = resolve_url(db)
    except BadInput:  # the resume will say what is wrong with it
        url, path = db, None if "://" in db else Path(db).expanduser().resolve()
    return resume_command_at(url, path, root, str(params["hypothesis_id"]))


def _run_params(argv: list[str], cli: Any) -> dict[str, Any]:
    """`hypothesis run`'s parameters in the raw arguments, its parser's way (--db and --root from $WB_DB and
    $WB_ROOT too; given before the command, as its own, as `_hand_down_global_flags` places them)."""
    before, words, tokens = [], 0, iter(argv)
    for t in tokens:
        if t in ("--root", "--db"):
            before += [t, next(tokens, "")]
        elif t.startswith(("--root=", "--db=")):
            before.append(t)
        elif not t.startswith("-"):
            words += 1
            if words == 2:
                break
    run = cli.commands["hypothesis"].commands["run"]  # type: ignore[attr-defined]
    return run.make_context("run", [*before, *tokens], resilient_parsing=True).params


def end() -> None:
    """The command line is done (an in-process caller runs another next)."""
    from workbench.runner.stopping import close_start_window

    close_start_window()
