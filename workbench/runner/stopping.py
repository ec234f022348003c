"""How an execution is stopped: the error a stop raises, what a stop before the loop takes the stop signals over
says (a fresh run's or a resume's, from the command's first moment on), and signals held back while a record is
written whole."""

from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator

from workbench.errors import RunFailure, WbError, in_chain

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


def not_started(resume: str | None = None, signum: int = signal.SIGINT) -> RunInterrupted:
    """A stop before the first run. A fresh run's recorded nothing and touched nothing (no hint: nothing to
    resume). A resume's leaves the execution as it was, runs kept, and says how to continue it; it says nothing
    of the target, which a runner killed earlier may have left holding its config (the resume would restore it)."""
    if resume is None:
        return RunInterrupted(f"interrupted before the first run: {NOTHING_STARTED}", signum=signum)
    return RunInterrupted("interrupted before the resume started: nothing was run or recorded, and any interrupted "
                          "execution is as it was, its recorded runs kept", hint=f"continue with: {resume}",
                          signum=signum, resume=resume)


class StopSignal(KeyboardInterrupt):
    """SIGTERM or SIGHUP raised as Ctrl-C raises KeyboardInterrupt (`stop_signals_raised`), with its number: a
    stop before the loop catches it as it catches a Ctrl-C (`is_a_stop`) and exits 128 + the number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)


def stop_signum(exc: BaseException) -> int:
    """The signal a stop (`is_a_stop`) came from: SIGTERM or SIGHUP for a `StopSignal` in its chain, else SIGINT."""
    found = in_chain(exc, (StopSignal,))
    return found.signum if isinstance(found, StopSignal) else signal.SIGINT


@contextmanager
def stop_signals_raised() -> Iterator[None]:
    """SIGTERM and SIGHUP raise `StopSignal` while the body runs, where Ctrl-C raises KeyboardInterrupt: from an
    execution's opening until its loop takes the stop signals over (and gives them back) they are told as a Ctrl-C
    is, not left to their default, which ended the process with the execution's row "running". The handlers the
    body found are put back after it; a signal the process ignores (nohup's SIGHUP) stays ignored."""
    import threading

    if threading.current_thread() is not threading.main_thread():  # only the main thread handles signals
        yield
        return

    def stop(signum: int, _frame: object) -> None:
        if signum == signal.SIGHUP:  # the terminal is gone: what is still said goes nowhere instead of failing
            from workbench.runner.progress import to_devnull

            to_devnull(ttys_only=True)
        raise StopSignal(signum)

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)
              if signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


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
    """Whether `exc` is a Ctrl-C: a KeyboardInterrupt (a `StopSignal` too), or DuckDB's error for a query it ended
    (not a wb error)."""
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
