"""How an execution is stopped: the error a stop raises, what a stop before the loop takes the stop signals over
says (a fresh run's or a resume's, from the command's first moment on), and signals held back while a record is
written whole."""

from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator

from workbench.errors import RunFailure, WbError

if TYPE_CHECKING:
    from workbench.runner.summary import ExecutionResult


class RunInterrupted(RunFailure):
    """The experiment was stopped by Ctrl-C, SIGTERM or SIGHUP, or by its output's reader going away (as SIGPIPE;
    the target was restored). It exits 128 + the signal's number, as a shell reports a process the signal
    ended: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP, 141 for SIGPIPE."""

    def __init__(self, message: str, *, hint: str | None = None, signum: int = signal.SIGINT,
                 partial: "ExecutionResult | None" = None, resume: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.signum = int(signum)
        self.exit_code = 128 + self.signum
        # What the execution recorded before the stop (its id, seed, runs and per-arm counts), read back from
        # the store, and the command that continues it: the CLI prints them, as text or in the JSON envelope.
        self.partial = partial
        self.resume = resume


# What a stop before the loop takes the signals over leaves: said as a later stop says what it leaves.
NOTHING_STARTED = "nothing was run or recorded, and the target was not touched"


def not_started(resume: str | None = None) -> RunInterrupted:
    """A stop before the first run. A fresh run's recorded nothing and touched nothing (no hint: nothing to
    resume). A resume's leaves the execution as it was, runs kept, and says how to continue it; it says nothing
    of the target, which a runner killed earlier may have left holding its config (the resume would restore it)."""
    if resume is None:
        return RunInterrupted(f"interrupted before the first run: {NOTHING_STARTED}")
    return RunInterrupted("interrupted before the resume started: nothing was run or recorded, and any interrupted "
                          "execution is as it was, its recorded runs kept", hint=f"continue with: {resume}",
                          resume=resume)


# The first moments of `wb hypothesis run` (its flags parsed, the registry read, the modules it needs imported),
# before `stopped_before_start` and then the execution's opening take a stop over: the CLI opens this window as the
# command starts, the execution's opening closes it, and a Ctrl-C the CLI's boundary meets in it is `not_started`.
_start_window: dict[str, object] = {"open": False, "resume": None}


def open_start_window(resume: "Callable[[], str | None] | None" = None) -> None:
    """A Ctrl-C from now until the execution's opening stops a run before it started (`resume`: what gives the
    command that continues the execution a --resume names, asked only when a stop is told)."""
    _start_window.update(open=True, resume=resume)


def close_start_window() -> None:
    _start_window.update(open=False, resume=None)


def stopped_in_start_window() -> RunInterrupted | None:
    """What a Ctrl-C says now: `not_started` while the start window is open, else None (the caller's own words)."""
    if not _start_window["open"]:
        return None
    resume = _start_window["resume"]
    return not_started(resume() if callable(resume) else None)


@contextmanager
def stopped_before_start(resume: str | None = None) -> Iterator[None]:
    """Ctrl-C (KeyboardInterrupt, or DuckDB's error for a query it ended) while an execution is still prepared,
    before anything is recorded: `not_started` (exit 130), not the bare "Interrupted." that left the user to
    guess what state things are in. `resume` is the command that continues the execution a --resume names."""
    try:
        yield
    except (KeyboardInterrupt, Exception) as exc:
        if not is_a_stop(exc):
            raise
        raise not_started(resume) from None


def is_a_stop(exc: BaseException) -> bool:
    """Whether `exc` is a Ctrl-C: a KeyboardInterrupt, or DuckDB's error for a query it ended (not a wb error)."""
    from workbench.store.engine import interrupted_query

    return not isinstance(exc, WbError) and interrupted_query(exc)


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP back while the body runs (they are delivered when it ends): a record is
    written whole (an execution's row and its id known together, the verdict of runs that all ended), not lost to
    a stop in the moment between."""
    import threading

    if threading.current_thread() is not threading.main_thread():  # only the main thread handles signals
        yield
        return
    received: list[int] = []
    before = {sig: signal.signal(sig, lambda signum, _frame: received.append(signum))
              for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        if received:
            signal.raise_signal(received[0])  # to the handler it would have reached
