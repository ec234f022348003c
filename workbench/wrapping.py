"""How a line of prose is wrapped to a terminal's width: between words, a bracketed phrase kept whole where it fits.

Only for a terminal: piped, each item stays one line, for grep (the callers decide).
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\S+\s*")  # a word and the spaces after it (two apart stay two apart within a line)


def wrap(text: str, width: int, indent: str | None = None) -> list[str]:
    """`text` as lines of at most `width` characters, broken only between words: a phrase in parentheses or braces
    that fits on a line is kept on one ("(it was down before)", "{hicache, geometry_fix}"), a word wider than a line
    runs on, never broken, and so does a command to paste after a colon ("continue with: wb hypothesis run ...": see
    _COMMAND).
    The lines after the first start with `indent` (default: the text's own indent and two spaces more, so a wrapped
    line reads as going on the one above); no line ends in a space."""
    lead = text[:len(text) - len(text.lstrip(" "))]
    indent = lead + "  " if indent is None else indent
    lines: list[str] = []
    line = lead
    queue = _phrases(_WORD.findall(_commands_kept(text)))
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
    return [line.replace(_KEPT, " ") for line in lines]


# A command to paste after a colon ("continue with: wb hypothesis run ... --resume", a lock's "remove it: rm -f
# PATH" or the ssh line that runs that on its host): pasted from two lines, each would run as a command of its own.
# It is one unit, its spaces held by _KEPT while the text is wrapped, up to a phrase in parentheses after it or the
# next clause ("; "), outside quotes, or the line's end.
_COMMAND = re.compile(r"(?<=: )(?:wb (?:bundle|confounds|db|hypothesis|import|isolate|kernel|lineage|report|review|"
                      r"runs|schema|sim)\b|ssh |rm -f )[^\n]*")
_KEPT = "\x01"


def _commands_kept(text: str) -> str:
    found = _COMMAND.search(text)
    if found is None:
        return text
    command, quote = found.group(), None
    for i, c in enumerate(command):
        if quote is not None:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif command.startswith((" (", "; "), i):
            command = command[:i]
            break
    start, end = found.start(), found.start() + len(command)
    return text[:start] + command.replace(" ", _KEPT) + _commands_kept(text[end:])


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
