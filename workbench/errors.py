"""The one exception tree of wb: every error a user can cause or meet carries a message and a hint.

The CLI turns `BadInput` into exit code 2 and any other `WbError` into exit code 1; anything
that is not a `WbError` is a bug and keeps its traceback.
"""

from __future__ import annotations

import re
from typing import Callable

from workbench.plurals import count

__all__ = [
    "WbError",
    "BadInput",
    "ConfigError",
    "ConfigErrors",
    "NoEvidence",
    "StoreError",
    "StoreLocked",
    "StoreOutdated",
    "TargetError",
    "RunFailure",
    "RestoreFailed",
    "KernelError",
    "SimError",
    "SimNotRunning",
    "in_chain",
]


class WbError(Exception):
    """Root of every error wb reports to a user. `hint` says what to do about it; `where`, when known, is what
    was at fault: `file:line` of a file, or the flag (`--fail-on`)."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None, where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.where = where

    def __str__(self) -> str:
        return self.message

    def parts(self) -> list["WbError"]:
        """The problems this error reports, each told with its own `Error:` line and `Hint:`: itself, for most."""
        return [self]


class BadInput(WbError):
    """The user's input (a file, an argument, a value) is wrong; nothing was run or written. Without a `where`,
    a message that starts with what is at fault (`--set nope: ...`, `runs.csv:4: ...`) gives it."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None, where: str | None = None) -> None:
        super().__init__(message, hint=hint, where=where if where is not None else _named_at_start(message))


_AT_START = re.compile(r"(--?[A-Za-z][\w-]*)(?=[\s:=]|$)|(\S+?:\d+):\s")


def _named_at_start(message: str) -> str | None:
    """The flag (`--set`, `-o`) or the `file:line` a message opens with, or None."""
    m = _AT_START.match(message)
    return (m.group(1) or m.group(2)) if m else None


class NoEvidence(BadInput):
    """No stored run bears on what was asked (a hypothesis to analyze); nothing was decided or recorded."""


class ConfigError(BadInput):
    """A hypotheses/experiment file failed validation. `where` is `file:line` and `field` what stands there, as
    `registry.yamlio.field_name` says it ("hypothesis wedge-confound, field arms.control.hicache")."""

    def __init__(self, message: str, *, file: str, line: int | None = None,
                 field: str | None = None, hint: str | None = None) -> None:
        where = f"{file}:{line}" if line else file
        loc = f" ({field})" if field else ""
        super().__init__(f"{where}{loc}: {message}", hint=hint, where=where)
        self.file = file
        self.line = line
        self.field = field


class ConfigErrors(BadInput):
    """Every problem `wb hypothesis validate` found in the registry files, in file order (`problems`: each a
    ConfigError, or the BadInput of a file that cannot be read). `stopped`: one of them leaves what follows it in
    its file unchecked (YAML that does not parse, an entry that is not a mapping). Message, hint and where are the
    first's."""

    def __init__(self, problems: list[BadInput], *, stopped: bool = False, waiting: bool = False,
                 refused: str | None = None) -> None:
        first = problems[0]
        super().__init__(first.message, hint=first.hint, where=first.where)
        self.problems = problems
        self.stopped = stopped
        self.waiting = waiting  # some entry was not checked against its experiment: more may show once fixed
        self.refused = refused  # what these problems stop (a run of a hypothesis whose lineage holds them)

    def parts(self) -> list[WbError]:
        return list(self.problems)

    def summary(self) -> str:
        n = len(self.problems)
        found = f"{count(n, 'problem')} found"
        if self.refused:
            return f"{found}; {self.refused}"
        if self.stopped:
            return (f"{found}; a file that cannot be read or parsed, or an entry that is not a mapping, stops the "
                    "checking of its file there: what follows is checked once it is fixed")
        if self.waiting:
            fixed = "it is" if n == 1 else "they are"
            return (f"{found}; more may show once {fixed} fixed (a hypothesis with a problem in its fields or in "
                    "its experiment's file is not yet checked against that experiment)")
        return found


class StoreError(WbError):
    """The store could not be opened, read or written."""


class StoreLocked(StoreError):
    """Another process holds the store's write lock. Found as the command opens the store, nothing was read or
    written: exit 2, as bad input. `began`: found after the command had used the store, a failure while running."""

    def __init__(self, message: str, *, hint: str | None = None, began: bool = False) -> None:
        super().__init__(message, hint=hint)
        self.exit_code = 1 if began else 2


class StoreOutdated(BadInput):
    """The store's schema revision is not the one this wb needs."""


class TargetError(WbError):
    """A target (host, sim, local command) could not be reached or did not behave. `setting`: the key of the
    profile's target the error is about (a file it names, such as known_hosts), when there is one."""

    def __init__(self, message: str, *, hint: str | None = None, setting: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.setting = setting


class RunFailure(WbError):
    """An experiment failed while running."""


class RestoreFailed(RunFailure):
    """The target's original configuration could not be restored: the user must act by hand. `failures`: each
    host's own, where several hosts' restores failed, each told with its own hint (the message is the first's; the
    hint, none of a host's, is what a caller adds after them: `wb isolate` says how to resume)."""

    def __init__(self, message: str, *, hint: str | None = None, where: str | None = None,
                 failures: list["RestoreFailed"] | None = None) -> None:
        super().__init__(message, hint=hint, where=where)
        self.failures = failures or []

    def parts(self) -> list[WbError]:
        return list(self.failures) or [self]

    def record(self) -> str:
        """As the execution's recorded error keeps it: each host's message with its hint indented under it."""
        return "\n".join(f"{p.message}\n  {p.hint}" if p.hint else p.message for p in self.parts())


class KernelError(BadInput):
    """A transfer-kernel call was given inputs that would move wrong bytes; nothing moved."""


class SimError(WbError):
    """The embedded deployment could not be started, reached or configured."""


class SimNotRunning(SimError):
    """A command that needs the embedded deployment up found it stopped; nothing was run. Exit 2, as for a target
    another execution holds: the user starts it (the hint says how) before trying again."""

    exit_code = 2


def in_chain(exc: BaseException | None, kinds: tuple[type[BaseException], ...],
             test: Callable[[BaseException], bool] | None = None) -> BaseException | None:
    """The first exception of `kinds` (passing `test`, when given) in `exc`'s chain of causes and contexts, or
    None: a database reports its refusal or an interrupted query under the error its rollback raised after."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kinds) and (test is None or test(exc)):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None

