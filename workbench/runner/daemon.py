"""Commands that leave a background process behind (a restart that starts a server with `&`).

The rule: wb waits for the command's own process, never for end-of-file on its output. A server
started in the background inherits the command's stdout and stderr and keeps them open for as long
as it lives; waiting for EOF there would block the run until the server dies. Once the command has
exited, what its output already holds is read for at most DRAIN_S, then the pipes are closed.

Every wait of a profile comes from its `options` (defaults below, documented in docs/own-service.md).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Callable

POLL_S = 0.02

# options key -> default seconds
TIMEOUT_DEFAULTS = {
    "restart_timeout_s": 300.0,      # each restart command, in a run and in the final restore
    "check_timeout_s": 60.0,         # the local check of a rendered config (config.check)
    "fingerprint_timeout_s": 60.0,   # each fingerprint command
    "verify_timeout_s": 30.0,        # the verify step (its command, or each of its URL's attempts)
}

HELD_OPEN_WARNING = (
    "warning: `{command}` exited but left a background process holding its output open; wb did not wait "
    "for it. Redirect the background process's output (e.g. `svc serve CONF > svc.log 2>&1 &`) so its "
    "messages are kept in a log.")


@dataclass(frozen=True)
class Timeouts:
    restart_s: float
    check_s: float
    fingerprint_s: float
    verify_s: float


def timeouts(options: dict[str, Any]) -> Timeouts:
    """The profile's timeouts (options override the defaults); validated when the experiment loads."""
    def get(key: str) -> float:
        return float(options.get(key, TIMEOUT_DEFAULTS[key]))

    return Timeouts(get("restart_timeout_s"), get("check_timeout_s"), get("fingerprint_timeout_s"),
                    get("verify_timeout_s"))


def check_options(options: dict[str, Any]) -> str | None:
    """What is wrong with a profile's timeout options, or None."""
    for key in TIMEOUT_DEFAULTS:
        if key not in options:
            continue
        value = options[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 7 * 24 * 3600:
            return f"options.{key} must be a number of seconds above 0, got {value!r}"
    if "check_restart" in options and not isinstance(options["check_restart"], bool):
        return f"options.check_restart must be true or false, got {options['check_restart']!r}"
    return None


async def exited(returncode: Callable[[], int | None]) -> int:
    """Wait until the process itself has exited (its return code is known), whatever holds its pipes."""
    while (rc := returncode()) is None:
        await asyncio.sleep(POLL_S)
    return rc


async def remote_exited(proc: Any) -> None:
    """An SSH command's end: its exit status (or signal) arrived, or the channel closed without one.
    The channel itself stays open while a background process holds the remote command's output."""
    closed = asyncio.ensure_future(proc.wait_closed())
    try:
        while not closed.done() and proc.exit_status is None and proc.exit_signal is None:
            await asyncio.wait({closed}, timeout=POLL_S)
    finally:
        if not closed.done():
            closed.cancel()


def failure_reason(res: Any, timeout: float) -> str:
    """Why a command failed, in words, with its output or the fact that it printed nothing."""
    why = f"timed out after {timeout:g} s (killed)" if res.timed_out else f"exited {res.rc}"
    text = res.excerpt(400)
    return f"{why}: {text}" if text else f"{why}, printing nothing"
