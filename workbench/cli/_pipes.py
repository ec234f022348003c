"""wb's stdout and stderr for a reader that may go away (`wb ... 2>&1 | head -1`, `| true`): a write to the closed
pipe ends that stream's output, never the command, so the exit code is the command's own (README, "Pipes")."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Any, Iterator


class _ReaderMayLeave:
    """A text stream whose writes and flushes, once its reader has gone (EPIPE), go nowhere: its descriptor is
    pointed at /dev/null, so the interpreter's last flush at exit is quiet too (it would make the exit code 120).
    A raised BrokenPipeError ended whatever wrote, an `Error:` line's writer included, and the boundary above read
    it as a success: `wb runs show 999 2>&1 | true` exited 0."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # as a text stream refuses it: click tells text streams from binary ones so
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if not self._gone:
            try:
                self._stream.write(text)
            except BrokenPipeError:
                self._lost()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._lost()

    def _lost(self) -> None:
        from workbench.runner.progress import reader_gone

        self._gone = True
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self._stream.fileno())
        except (OSError, ValueError, AttributeError):  # no descriptor of its own (a test's capture)
            pass
        finally:
            os.close(null)
        reader_gone()  # an experiment running stops as SIGPIPE would stop it

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":  # click writes to a text stream's buffer when it distrusts its encoding: past this
            raise AttributeError(name)
        return getattr(self._stream, name)


@contextmanager
def quiet_when_gone() -> Iterator[None]:
    """stdout and stderr through `_ReaderMayLeave` while wb runs a command line (once: a nested call keeps them)."""
    if isinstance(sys.stdout, _ReaderMayLeave) or isinstance(sys.stderr, _ReaderMayLeave):
        yield
        return
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _ReaderMayLeave(out), _ReaderMayLeave(err)
    try:
        yield
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            sys.stdout, sys.stderr = out, err
