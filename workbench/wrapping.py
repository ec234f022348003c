"""How a line of prose is wrapped to a terminal's width: between words, a bracketed phrase kept whole where it fits,
a command to paste never broken.

Only for a terminal: piped, each item stays one line, for grep (the callers decide).
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\S+\s*")  # a word and the spaces after it (two apart stay two apart within a line)

# wb's commands (the CLI's COMMAND_ORDER): "wb" before one of them starts a command to paste, not prose ("wb reads").
WB_COMMANDS = frozenset({"hypothesis", "runs", "report", "confounds", "isolate", "review", "lineage", "bundle",
                         "import", "sim", "kernel", "db", "schema"})
# A comparison between two words: kept with both ("n = 111", "92/325 = 28.3%", "P(X >= 15.3").
_OPERATORS = frozenset({"=", "==", "!=", "<", ">", "<=", ">=", "≤", "≥", "≈", "±"})
_BACKTICKED = re.compile(r"`[^`\n]+`")
# A number and the unit word after it ("0.24 s", "512 KiB", "3 x"), and a word the number after it completes ("run 1",
# "for 200", "after 0.7 s"): a line break between them left "analysis 0.24" / "s + report".
_NUMBER = re.compile(r"[(\[~≈≤≥<>±+-]*\d[\d,.]*")
_UNITS = frozenset({"s", "ms", "%", "B", "KiB", "MiB", "GiB", "x"})
_BEFORE_NUMBER = frozenset({"run", "for", "after"})

# The commands `keep_whole` was given, kept whole wherever a text shows them: the latest _KEPT_AT_MOST, oldest out
# first, so a long process (a search's many executions, a test session) neither grows it nor slows each wrap by it.
_commands: dict[str, None] = {}
_KEPT_AT_MOST = 256


def keep_whole(text: str) -> str:
    """`text`, a shell command a message gives to paste (`wb hypothesis run ID --resume --db PATH`, `rm -f PATH`, an
    ssh line), as it is; `wrap` keeps it whole on one line wherever it shows it, running past the width where it is
    longer: half of it pasted runs something else (`--db` with no value). A `wb COMMAND ...` written out in a message,
    and a phrase in backticks, are found without it."""
    if " " in text.strip():
        _commands.pop(text.strip(), None)
        _commands[text.strip()] = None
        while len(_commands) > _KEPT_AT_MOST:
            del _commands[next(iter(_commands))]
    return text


def wrap(text: str, width: int, indent: str | None = None) -> list[str]:
    """`text` as lines of at most `width` characters, broken only between words: a phrase in parentheses or braces
    that fits on a line is kept on one ("(it was down before)", "{hicache, geometry_fix}"), as is one within it where
    the outer does not fit, and a comparison ("14/80 = 18%"); a command to paste (one wb built, see `keep_whole`;
    one written out, `_written_commands`; one after a colon, `_COMMAND`) and a word wider than a line run on, never
    broken. A command wb built or one after a colon starts a line where it does not fit on the current one, and the
    text after it starts the next: a copy to the command's end takes nothing else along.
    The lines after the first start with `indent` (default: the text's own indent and two spaces more, so a wrapped
    line reads as going on the one above); no line ends in a space."""
    lead = text[:len(text) - len(text.lstrip(" "))]
    indent = lead + "  " if indent is None else indent
    lines: list[str] = []
    line = lead
    queue = _phrases(_atoms(_commands_kept(text)))[::-1]  # the next unit last: popped in linear time
    while queue:
        unit = queue.pop()
        shown = "".join(unit).rstrip()
        pasted = any(_KEPT in a for a in unit)
        if len(unit) > 1 and (pasted or len(indent) + len(shown) > width):  # too wide, or a command within: split
            queue += [unit[:1], *_phrases(unit[1:])][::-1]
            continue
        if len(line) + len(shown) <= width or not line.strip():
            line += "".join(unit)
        else:
            lines.append(line.rstrip())
            line = indent + "".join(unit)
        if pasted and queue:  # a copy to the command's end takes nothing after it along
            lines.append(line.rstrip())
            line = indent
    lines.append(line.rstrip())
    return [line.replace(_KEPT, " ") for line in lines]


# A command to paste after a colon ("continue with: wb hypothesis run ... --resume", a lock's "remove it: rm -f
# PATH" or the ssh line that runs that on its host): pasted from two lines, each would run as a command of its own.
# It is one unit, its spaces held by _KEPT while the text is wrapped, up to a phrase in parentheses after it or the
# next clause ("; "), outside quotes, or the line's end.
_COMMAND = re.compile(r"(?<=: )(?:wb (?:" + "|".join(sorted(WB_COMMANDS)) + r")\b|ssh |rm -f )[^\n]*")
_KEPT = "\x01"


def _commands_kept(text: str) -> str:
    for cmd in _commands:  # a command `keep_whole` was given: one word, told from prose by its _KEPT
        if cmd in text:
            text = text.replace(cmd, cmd.replace(" ", _KEPT))
    out: list[str] = []
    at = 0
    while (found := _COMMAND.search(text, at)) is not None:
        command, quote = found.group(), None
        for i, c in enumerate(command):
            if quote is not None:
                quote = None if c == quote else quote
            elif c in "'\"":
                quote = c
            elif command.startswith((" (", "; "), i):
                command = command[:i]
                break
        out += [text[at:found.start()], command.replace(" ", _KEPT)]
        at = found.start() + len(command)
    return "".join(out) + text[at:]


def _atoms(text: str) -> list[str]:
    """`text` as the pieces no line break goes into: each word with the spaces after it, except that a command to
    paste, a phrase in backticks and a comparison are each one piece."""
    words = [m.span() for m in _WORD.finditer(text)]
    spans = [(m.start(), m.end()) for m in _BACKTICKED.finditer(text)]
    spans += _written_commands(text, words)
    for i, (s, e) in enumerate(words):
        if text[s:e].strip() in _OPERATORS and 0 < i < len(words) - 1:
            spans.append((words[i - 1][0], words[i + 1][0] + 1))
        if i < len(words) - 1 and _with_next(text[s:e].strip(), text[slice(*words[i + 1])].strip()):
            spans.append((s, words[i + 1][0] + 1))
    # How many pieces cover each position past their first: a word starting where one does is inside it.
    inside = [0] * (len(text) + 1)
    for ss, se in spans:
        if se > ss + 1:
            inside[ss + 1] += 1
            inside[se] -= 1
    for k in range(1, len(inside)):
        inside[k] += inside[k - 1]
    atoms: list[str] = []
    for k, (s, e) in enumerate(words):
        if k and inside[s] > 0:  # inside a piece that began before this word
            atoms[-1] += text[s:e]
        else:
            atoms.append(text[s:e])
    return atoms


def _with_next(word: str, following: str) -> bool:
    """Whether `word` and the word after it are one piece: a number and its unit ("0.24 s", the unit ending a clause
    too: "40 ms,"), or "run", "for" or "after" and the number it is followed by ("(run 1:", "for 200")."""
    if _NUMBER.fullmatch(word):
        return following.rstrip(",;:.)]") in _UNITS
    return word.lstrip("(").lower() in _BEFORE_NUMBER and _NUMBER.fullmatch(following.rstrip(",;:.)]%")) is not None


def _written_commands(text: str, words: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Where `text` writes out a wb command (`wb hypothesis run ID --resume`, "(wb db upgrade)"): from its `wb` to
    the word that ends it with `:`, `;`, `,` or `)`, or a sentence's `.`, `?` or `!` (not a word of dots alone: `.`
    for a folder, `...` for flags left out), to before a word that opens a parenthesis, or to the end; a quoted
    argument ("-m 'two words'") is one of its words, whatever it holds."""
    out = []
    tokens = [text[s:e].strip() for s, e in words]
    i = 0
    while i < len(tokens) - 1:
        if tokens[i].lstrip("(") != "wb" or tokens[i + 1].rstrip(":;,)") not in WB_COMMANDS:
            i += 1
            continue
        start, j, quote = words[i][0], i, None
        while j < len(tokens):
            if j > i and quote is None and tokens[j].startswith("("):
                j -= 1
                break
            for ch in tokens[j]:
                quote = (None if ch == quote else quote) if quote else (ch if ch in "'\"" else None)
            if j > i and quote is None and (tokens[j][-1] in ":;,)" or tokens[j][-1] in ".?!" and tokens[j].strip(".")):
                break
            j += 1
        j = min(j, len(tokens) - 1)
        out.append((start, words[j][0] + len(tokens[j])))
        i = j + 1
    return out


def _phrases(atoms: list[str]) -> list[list[str]]:
    """`atoms` with each phrase in parentheses or braces joined into one unit (the atoms from a `(` to its `)`)."""
    out: list[list[str]] = []
    depth = 0
    for a in atoms:
        if depth > 0:
            out[-1].append(a)
        else:
            out.append([a])
        depth = max(0, depth + a.count("(") + a.count("{") - a.count(")") - a.count("}"))
    return out
