"""`var=value` as wb isolate's --good and --bad take it, and as wb shows it back."""

from __future__ import annotations

import re
import shlex
from typing import Any, Iterable

from workbench.errors import BadInput

# Where one `var=value` of a list ends: at the space before the next `name=` (a variable name is an identifier).
_NEXT_ASSIGNMENT = re.compile(r"\s+(?=[^\W\d]\w*=)")


def parse_assignments(items: list[str], flag: str) -> dict[str, str]:
    """`var=value` items, each one or a list of them: a value runs to the next `name=`, so `note=it broke` is
    one value with its space, and `a=1 b=2` two."""
    out: dict[str, str] = {}
    for item in items:
        for part in _NEXT_ASSIGNMENT.split(str(item).strip()):
            name, sep, value = part.partition("=")
            name, value = name.strip(), value.strip()
            if not sep or not name or not value:
                raise BadInput(f"{flag} {part!r}: expected var=value")
            if name in out and out[name] != value:
                raise BadInput(f"{flag} sets {name} twice ({out[name]} and {value})")
            out[name] = value
    return out


def shown(name: str, value: Any) -> str:
    """`name=value` with the value quoted as a shell reads it when it holds a space or a quote (note='it broke'),
    so that a value is seen whole, and can be pasted back as one --good or --bad."""
    return f"{name}={shlex.quote(str(value))}"


def shown_set(config: dict[str, Any], names: Iterable[str]) -> str:
    """`{a=1, note='it broke'}`: the named variables of a config."""
    return "{" + ", ".join(shown(n, config.get(n)) for n in names) + "}"
