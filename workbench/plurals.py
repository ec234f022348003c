"""A count with its noun in number ("1 run", "3 runs"), for every layer that words one: the registry's
`hypothesis validate` as much as the analysis and the CLI (analysis.display re-exports it)."""

from __future__ import annotations


def count(n: float, noun: str, plural: str | None = None) -> str:
    """A count with its noun in number: "1 run", "3 runs", "0 runs", "1,200 units" ("run(s)" read as unsure)."""
    shown = f"{int(n):,}" if float(n).is_integer() else f"{n:,g}"
    return f"{shown} {noun if n == 1 else (plural or noun + 's')}"
