"""A Ctrl-C in a command's first moments: held while wb's modules are imported, then told as the command would tell
it (`wb hypothesis run`: nothing was run or recorded, README). Only the interpreter's own start-up, before wb's
first line runs, is left to Python."""

from __future__ import annotations

import shlex
import signal
import threading
from typing import Any

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


def begin(argv: list[str]) -> None:
    """A command line starts: for `wb hypothesis run`, a Ctrl-C from here until its execution opens says that
    nothing was run or recorded (a --resume's: how to continue, with the command as typed); a Ctrl-C held while
    the modules were imported is raised now, to be told so."""
    from workbench.runner.stopping import close_start_window, open_start_window

    let_go()
    if runs_an_execution(argv):
        resume = "--resume" in (argv[:argv.index("--")] if "--" in argv else argv)
        open_start_window("wb " + shlex.join(argv) if resume else None)
    else:
        close_start_window()
    if _held:
        _held.clear()
        raise KeyboardInterrupt


def end() -> None:
    """The command line is done (an in-process caller runs another next)."""
    from workbench.runner.stopping import close_start_window

    close_start_window()
