"""How a line of prose is wrapped to a terminal's width: between words, a bracketed phrase kept whole where it fits.

Only for a terminal: piped, each item stays one line, for grep (the callers decide).
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\S+\s*")  # a word and the spaces after it (two apart stay two apart within a line)


def wrap(text: str, width: int, indent: str | None = None) -> list[str]:
    """`text` as lines of at most `width` characters, broken only between words: a phrase in parentheses or braces
    that fits on a line is kept on one ("(it was down before)", "{hicache, geometry_fix}"), a word wider than a line
    runs on, never broken.
    The lines after the first start with `indent` (default: the text's own indent and two spaces more, so a wrapped
    line reads as going on the one above); no line ends in a space."""
    lead = text[:len(text) - len(text.lstrip(" "))]
    indent = lead + "  " if indent is None else indent
    lines: list[str] = []
    line = lead
    queue = _phrases(_WORD.findall(text))
    while queue:
        unit = queue.pop(0)
        shown = unit.rstrip()
        if " " in shown and len(indent) + len(shown) > width:  # too wide for any line: by its words
            queue[:0] = _WORD.findall(unit)
            continue
        if len(line) + len(shown) <= width or not line.strip():
            line += unit
            continue
        lines.append(line.rstrip())
        line = indent + unit
    lines.append(line.rstrip())
    return lines


def _phrases(words: list[str]) -> list[str]:
    """`words` with each phrase in parentheses or braces joined into one unit (the words from a `(` to its `)`)."""
    out: list[str] = []
    depth = 0
    for w in words:
        if depth > 0:
            out[-1] += w
        else:
            out.append(w)
        depth = max(0, depth + w.count("(") + w.count("{") - w.count(")") - w.count("}"))
    return out
