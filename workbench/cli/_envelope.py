"""The `--json` envelope of one command, held until the command's outcome is known, then printed once.

A command hands its result over (`hold`); the error boundary (`_common.WbGroup`) prints it as
`{"wb": 1, "command": ..., "ok": true, ...}` when the command succeeds, and with `"ok": false` and an
`"error"` object (message, hint, where, exit_code, kind) when it fails: bad input, a failure while running,
an interrupt, a verdict in --fail-on, a mistake the parser finds. `ok` is true exactly when wb exits 0, so a
script reads stdout alone. The human `Error:` line still goes to stderr; a bug in wb keeps its traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import ConfigErrors, WbError

JSON_VERSION = 1  # bump when a key of an envelope changes meaning or goes away; new keys do not bump it


@dataclass
class _Held:
    active: bool = False  # a boundary will print what is held (else `print_json` prints at once)
    wanted: bool = False  # the command was asked for JSON (--json, or --format json on a listing)
    command: str = ""
    result: Any = None
    held: bool = False
    error: dict[str, Any] | None = None  # set before an exit the boundary cannot tell the reason of
    emitted: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


_state = _Held()


def envelope(command: str, result: Any, error: dict[str, Any] | None = None) -> dict[str, Any]:
    """The one JSON shape of every command: {"wb": 1, "command": ..., "ok": ..., <a dict's keys> | "items": [...],
    "error": {...} when it failed}."""
    head: dict[str, Any] = {"wb": JSON_VERSION, "command": command, "ok": error is None}
    if isinstance(result, dict):
        body = {k: v for k, v in result.items() if k not in head}
    else:
        body = {} if result is None else {"items": result}
    return {**head, **body, **({"error": error} if error is not None else {})}


def begin(*, wanted: bool) -> None:
    """A command line starts: nothing held yet; `wanted` is the parser-free guess from the raw arguments."""
    global _state
    _state = _Held(active=True, wanted=wanted)


def end() -> None:
    global _state
    _state = _Held()


def want(wanted: bool, command: str) -> None:
    """The command's own parsed flags say whether it prints JSON (more exact than the raw arguments)."""
    _state.wanted, _state.command = wanted, command


def named(command: str) -> None:
    """The command as typed, where its parser's name says less (`wb review list` is the `review` command's)."""
    _state.command = command


def hold(command: str, result: Any) -> bool:
    """Keep the result for the boundary to print; False when no boundary runs (the caller prints it now)."""
    if not _state.active:
        return False
    if _state.held and not _state.emitted:  # a second result: the first goes out as it always did
        _print(envelope(_state.command or command, _state.result))
    _state.command, _state.result, _state.held, _state.emitted = command, result, True, False
    _state.wanted = True
    return True


def note_error(error: dict[str, Any]) -> None:
    """The reason of an exit the command raises itself (the verdict gate's exit 3)."""
    _state.error = error


def exit_error(code: int) -> dict[str, Any] | None:
    """The error of a command that ended with `typer.Exit(code)`: none for 0, the noted one, else what is known."""
    if not code:
        return None
    return _state.error or {"message": f"exit {code}: see the Error line on stderr", "hint": None, "where": None,
                            "exit_code": code, "kind": "Exit"}


def add(**keys: Any) -> None:
    """Keys beside the result in a failed command's envelope (an interrupted run's status and resume command)."""
    _state.extra.update(keys)


def emit(error: dict[str, Any] | None = None, *, command: str | None = None) -> None:
    """Print the envelope once: the held result, or (for an error of a JSON command) the error alone."""
    if _state.emitted or not _state.active:
        return
    error = error if error is not None else _state.error
    if not _state.held and not (error is not None and _state.wanted):
        return
    _state.emitted = True
    result = _state.result
    if _state.extra:
        result = {**(result if isinstance(result, dict) else {} if result is None else {"items": result}),
                  **_state.extra}
    _print(envelope(_state.command or command or "", result, error))


def error_of(exc: BaseException, exit_code: int) -> dict[str, Any]:
    """The error object of an envelope: message, hint, where (file:line or the flag, when known), exit code and
    kind (the exception's class); for several problems found at once (`ConfigErrors`), the first's, each of them
    under "problems", whether checking stopped or more may show once they are fixed, and the count line."""
    out = {"message": getattr(exc, "message", None) or str(exc), "hint": getattr(exc, "hint", None),
           "where": getattr(exc, "where", None), "exit_code": exit_code, "kind": type(exc).__name__}
    parts = exc.parts() if isinstance(exc, WbError) else []
    if isinstance(exc, ConfigErrors) or len(parts) > 1:  # several hosts' failed restores too (RestoreFailed)
        out["problems"] = [{"message": p.message, "hint": p.hint, "where": p.where} for p in parts]
    if isinstance(exc, ConfigErrors):
        out.update(stopped=exc.stopped, waiting=exc.waiting, summary=exc.summary())
    return out


def _print(doc: dict[str, Any]) -> None:
    import typer

    from workbench.secrets import redact

    # Redacted as an object too: a secret's value written as JSON may be escaped past the stream's redaction.
    typer.echo(json.dumps(redact(doc), indent=2, sort_keys=False, default=str))


def print_now(command: str, result: Any) -> None:
    """The envelope of a success, printed at once (no boundary holds it)."""
    _print(envelope(command, result))


def json_in_argv(argv: list[str]) -> bool:
    """Whether the raw arguments ask for JSON (`--json`, `--format json`, `--format=json`), before `--`."""
    tokens = argv[:argv.index("--")] if "--" in argv else list(argv)
    for i, t in enumerate(tokens):
        if t == "--json" or t.lower() == "--format=json":
            return True
        if t == "--format" and i + 1 < len(tokens) and tokens[i + 1].lower() == "json":
            return True
    return False
