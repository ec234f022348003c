"""A profile's options: which ones each target reads, the timeouts' defaults, their validation when the
experiment loads, and the values a run uses. Every wait of a profile comes from here (documented in
docs/own-service.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench.registry.common import did_you_mean

# options key -> default seconds
TIMEOUT_DEFAULTS = {
    "restart_timeout_s": 300.0,      # each restart command, in a run and in the final restore
    "check_timeout_s": 60.0,         # the local check of a rendered config (config.check)
    "fingerprint_timeout_s": 60.0,   # each fingerprint command
    "verify_timeout_s": 30.0,        # the verify step (its command, or each of its URL's attempts)
}


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


# The options each target kind reads besides the timeouts; a `kernel` profile's options are the kernel call's
# keyword arguments, whatever their names.
_READ_BY_KIND = {
    "local": ("check_restart", "lock_path"),
    "ssh": ("check_restart", "lock_path", "work_dir"),
    "sim": ("check_restart", "lock_path", "dir"),
}


def unknown_options(options: dict[str, Any], kind: str) -> list[tuple[str, str, str]]:
    """(key, message, hint) for each option a `kind` target never reads (a misspelt timeout would otherwise leave
    its default in force without a word)."""
    known = _READ_BY_KIND.get(kind)
    if known is None:
        return []
    names = (*TIMEOUT_DEFAULTS, *known)
    return [(key, f"unknown option {key!r}: a {kind} target does not read it",
             did_you_mean(key, names, f"the options a {kind} target reads: {', '.join(names)}") or "")
            for key in options if key not in names]


def option_problems(options: dict[str, Any]) -> list[str]:
    """What is wrong with each of a profile's timeout options (and check_restart), in that order."""
    out: list[str] = []
    for key in TIMEOUT_DEFAULTS:
        if key not in options:
            continue
        value = options[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 7 * 24 * 3600:
            out.append(f"options.{key} must be a number of seconds above 0, got {value!r}")
    if "check_restart" in options and not isinstance(options["check_restart"], bool):
        out.append(f"options.check_restart must be true or false, got {options['check_restart']!r}")
    return out
