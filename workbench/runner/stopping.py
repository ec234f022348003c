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
    from workbench.runner.takeover import continue_with

    if resume is None:
        return RunInterrupted(f"interrupted before the first run: {NOTHING_STARTED}", signum=signum)
    return RunInterrupted("interrupted before the resume started: nothing was run or recorded, and any interrupted "
                          "execution is as it was, its recorded runs kept", hint=continue_with(resume),
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


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def unblock_stops() -> None:
    """Let the stop signals through where the process inherited them blocked (a mask is kept across exec: a
    supervisor's, a parent's section that held them when it started wb): blocked, neither Ctrl-C nor a `kill`
    could make the runner restore the target. One left pending meanwhile is delivered now. A stop signal the process
    ignores (nohup's SIGHUP) is left as it is: ignored, it stays so."""
    import threading

    if threading.current_thread() is threading.main_thread():  # only the main thread handles signals
        signal.pthread_sigmask(signal.SIG_UNBLOCK,
                               [sig for sig in STOP_SIGNALS if signal.getsignal(sig) is not signal.SIG_IGN])


class HeldStops:
    """The stop signals from where an execution's loop gives them back until the window of `stop_signals_raised`
    closes (the execution's end recorded): held, then delivered to the handler each would have reached. asyncio's
    loop, removing its handlers, leaves each at its default: SIGTERM ended the process there and Ctrl-C raised
    anywhere, the row left "running" though the runs had ended and the target was restored."""

    def __init__(self, active: bool = False, ignored: frozenset[int] = frozenset()) -> None:
        self.active = active  # only the main thread handles signals
        self.ignored = ignored  # ignored by the process before (nohup's SIGHUP): they stay ignored
        self.held = False
        self.received: list[int] = []

    def _hold(self, signum: int, _frame: object) -> None:
        self.received.append(signum)

    def give_back(self, remove: Callable[[int], object]) -> None:
        """`remove` the loop's handler of each stop signal, and hold those signals from then on: the swap is made
        with them blocked, so none meets the default in between."""
        if not self.active:
            for sig in STOP_SIGNALS:
                remove(sig)
            return
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            for sig in STOP_SIGNALS:
                remove(sig)
                signal.signal(sig, signal.SIG_IGN if sig in self.ignored else self._hold)
            self.held = True
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def hold(self) -> None:
        """Hold the stop signals from now where the loop did not (it stopped before taking them over)."""
        if self.active and not self.held:
            self.give_back(lambda _sig: None)


@contextmanager
def stop_signals_raised() -> Iterator[HeldStops]:
    """SIGTERM and SIGHUP raise `StopSignal` while the body runs, where Ctrl-C raises KeyboardInterrupt: from an
    execution's opening until its loop takes the stop signals over they are told as a Ctrl-C is, not left to their
    default, which ended the process with the execution's row "running". From where the loop gives them back
    (`HeldStops.give_back`) they are held until the body ends. The handlers the body found are put back after it,
    then the first signal held is delivered: a Ctrl-C only after a body that ended well (one that raised, a stop
    among them, already ends the command, with what its error says); a signal the process ignores (nohup's
    SIGHUP) stays ignored."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield HeldStops()
        return

    def stop(signum: int, _frame: object) -> None:
        if signum == signal.SIGHUP:  # the terminal is gone: what is still said goes nowhere instead of failing
            from workbench.runner.progress import to_devnull

            to_devnull(ttys_only=True)
        raise StopSignal(signum)

    found = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if found[sig] is not signal.SIG_IGN:
            signal.signal(sig, stop)
    stops = HeldStops(active=True, ignored=frozenset(sig for sig, h in found.items() if h is signal.SIG_IGN))
    ended_well = False
    try:
        yield stops
        ended_well = True
    finally:
        for sig, handler in found.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        held = [sig for sig in stops.received if ended_well or sig != signal.SIGINT]
        if held:
            signal.raise_signal(held[0])  # to the handler it would have reached


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
