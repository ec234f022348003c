"""How a line of prose is wrapped to a terminal's width: between words, a bracketed phrase kept whole where it fits,
a command to paste never broken.

Only for a terminal: piped, each item stays one line, for grep (the callers decide).
"""

from __future__ import annotations

import bisect
import re
from typing import NamedTuple

_WORD = re.compile(r"\S+\s*")  # a word and the spaces after it (two apart stay two apart within a line)

# wb's commands, the one list of them: "wb" before one starts a command to paste, not prose ("wb reads"); `wb --help`
# lists them in this order, the work's (cli._common.COMMAND_ORDER). A test checks it against the CLI's commands.
WB_COMMANDS = ("hypothesis", "runs", "report", "confounds", "isolate", "review", "lineage", "bundle", "import",
               "sim", "kernel", "db", "schema")
# A comparison between two words: kept with both ("n = 111", "92/325 = 28.3%", "P(X >= 15.3").
_OPERATORS = frozenset({"=", "==", "!=", "<", ">", "<=", ">=", "≤", "≥", "≈", "±"})
_BACKTICKED = re.compile(r"`[^`\n]+`")
# A number and the unit word after it ("0.24 s", "512 KiB", "3 x") or the word it counts ("2 runs", "1 df"), and a
# name the number after it completes ("run 1", "for 200", "after 0.7 s", "design effect 2.58"): a line break between
# them left "analysis 0.24" / "s + report", "the 2" / "runs agree", "the design effect" / "2.58 [25.7%, 40.1%]".
_NUMBER = re.compile(r"[(\[~≈≤≥<>±+-]*\d[\d,.]*")
_UNITS = frozenset({"s", "ms", "%", "B", "KiB", "MiB", "GiB", "x"})
_COUNTED = frozenset({"run", "runs", "replicate", "replicates", "unit", "units", "block", "blocks", "df"})
_BEFORE_NUMBER = (("run",), ("for",), ("after",), ("design", "effect"))
_BEFORE_PROBABILITY = (("exact", "binomial"),)  # a test's name, kept with the start of its "P(X >= 14"

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
    one after a colon, `_COMMAND`; one written out, `_written_commands`) and a word wider than a line run on, never
    broken. A command to paste starts a line where it does not fit on the current one, and ends its line: a copy to
    the command's end takes nothing else along. The punctuation that ends its clause (`.`, `,`, `;`, `:`, `?`, `!`)
    is left out there, the line's end says as much; a `)` after it starts the next line, with the text after it,
    even where the command is only named: the words do not tell naming from giving ("(wb runs show 12)" is both) and
    a `)` copied along breaks the command, so a text names one in backticks or gives it after a colon, at its end
    (tests/structure/test_command_texts.py holds every text to that). The lines after the first start with `indent`
    (default: the text's own indent and two spaces more, so a wrapped line reads as going on the one above); no line
    ends in a space. Every other character comes out as it went in."""
    lead = text[:len(text) - len(text.lstrip(" "))]
    indent = lead + "  " if indent is None else indent
    lines: list[str] = []
    line = lead
    queue = _phrases(_atoms(text))[::-1]  # the next unit last: popped in linear time
    # The line holds one unit: a phrase too long to follow it on the line fills the line rather than leave the unit
    # alone there ("52/160 = 32.5%" on a line of its own, its "(Wilson 95% ...)" on the next).
    alone = False
    while queue:
        unit = queue.pop()
        shown = "".join(a.text for a in unit).rstrip()
        pasted = any(a.pasted for a in unit)
        if len(unit) > 1 and (pasted or len(indent) + len(shown) > width or alone and len(line) + len(shown) > width):
            queue += [unit[:1], *_phrases(unit[1:])][::-1]  # too wide, a command within, or a unit left alone: split
            continue
        if len(line) + len(shown) <= width or not line.strip():
            alone = not line.strip()
            line += "".join(a.text for a in unit)
        else:
            lines.append(line.rstrip())
            line = indent + "".join(a.text for a in unit)
            alone = True
        if pasted and queue:  # a copy to the command's end takes nothing after it along
            lines.append(line.rstrip())
            line, alone = indent, False
    lines.append(line.rstrip())
    return lines


class _Atom(NamedTuple):
    """A piece no line break goes into; `pasted`: a command to paste, which ends its line."""

    text: str
    pasted: bool = False


# A command to paste after a colon ("continue with: wb hypothesis run ... --resume", a lock's "remove it: rm -f
# PATH" or the ssh line that runs that on its host): pasted from two lines, each would run as a command of its own.
# It is one piece up to a phrase in parentheses after it or the next clause ("; "), outside quotes, or the line's end.
_COMMAND = re.compile(r"(?<=: )(?:wb (?:" + "|".join(sorted(WB_COMMANDS)) + r")\b|ssh |rm -f )[^\n]*")
_CLAUSE_END = ".,;:?!"  # after a command: left out where it ends its line


def _commands_in(text: str) -> list[tuple[int, int]]:
    """Where `text` holds a command to paste, in order, none within another: each one `keep_whole` was given, then
    each after a colon, then each written out, a later kind passed over where it starts within one found before and
    ended where it runs into one; a found command's end leaves out the punctuation that ends its clause."""
    built = []
    for cmd in _commands:
        at = text.find(cmd)
        while at >= 0:
            # Only where it stands as words: "rm -f /a" is not a command within "rm -f /ab" or "rm -f /a.lock".
            rest = text[at + len(cmd):].split(maxsplit=1)
            before = text[at - 1] if at else " "
            if (before.isspace() or before in "(['\"`") and (not rest or text[at + len(cmd)].isspace()
                                                              or not rest[0].strip(_CLAUSE_END + ")]}'\"`")):
                built.append((at, at + len(cmd)))
            at = text.find(cmd, at + len(cmd))
    taken = _beside([], built)
    after_colon = []
    for m in _COMMAND.finditer(text):
        command, quote = m.group(), None
        for i, c in enumerate(command):
            if quote is not None:
                quote = None if c == quote else quote
            elif c in "'\"":
                quote = c
            elif command.startswith((" (", "; "), i):
                command = command[:i]
                break
        after_colon.append((m.start(), m.start() + len(command)))
    taken = _beside(taken, after_colon, clause=text)
    words = [m.span() for m in _WORD.finditer(text)]
    return _beside(taken, _written_commands(text, words, taken))


def _beside(taken: list[tuple[int, int]], spans: list[tuple[int, int]], clause: str | None = None
            ) -> list[tuple[int, int]]:
    """`taken` (in order, apart) and those of `spans` that start outside them, each ended before the next of
    `taken` it runs into (and, with `clause`, the text, before the punctuation that ends its clause); of two that
    start at one place, the longer."""
    out = list(taken)
    starts = [s for s, _ in taken]
    for s, e in sorted(spans, key=lambda span: (span[0], -span[1])):
        k = bisect.bisect_right(starts, s)
        if k and s < out[k - 1][1]:
            continue
        if k < len(out):
            e = min(e, out[k][0])
        if clause is not None:
            e = _clause_end(clause, s, e)
        out.insert(k, (s, e))
        starts.insert(k, s)
    return out


def _clause_end(text: str, start: int, end: int) -> int:
    """`end` less the punctuation that ends the clause of the command `text[start:end]`: `.`, `,`, `;`, `:`, `?`, `!`
    (not a word of dots alone, `.` for a folder or `...` for flags left out), and a `)` that closes nothing in it."""
    end = len(text[:end].rstrip())
    while end > start:
        c = text[end - 1]
        if c in _CLAUSE_END and text[start:end].split()[-1].strip("."):
            end -= 1
        elif c == ")" and text.count(")", start, end) > text.count("(", start, end):
            end -= 1
        else:
            break
    return end


def _atoms(text: str) -> list[_Atom]:
    """`text` as the pieces no line break goes into: each word with the spaces after it, except that a command to
    paste, a phrase in backticks and a comparison are each one piece. A command's piece runs from the start of its
    first word (an opening parenthesis included) to its end; the punctuation that ends its clause right after it is
    left out, and what else follows it (a `)`) is a piece of its own."""
    commands = _commands_in(text)
    ends = [e for _, e in commands]
    words: list[tuple[int, int]] = []
    k = 0
    for m in _WORD.finditer(text):
        s, e = m.span()
        while k < len(ends) and ends[k] <= s:
            k += 1
        if k < len(ends) and ends[k] < s + len(m.group().rstrip()):  # a command ends within this word: cut there
            words += [(s, ends[k]), (ends[k], e)]
        else:
            words.append((s, e))
    spans = [(m.start(), m.end()) for m in _BACKTICKED.finditer(text)]
    tokens = [text[s:e].strip() for s, e in words]
    for i, (s, e) in enumerate(words):
        if tokens[i] in _OPERATORS and 0 < i < len(words) - 1:
            spans.append((words[i - 1][0], words[i + 1][0] + 1))
        joined = _with_next(tokens, i)
        if joined:
            spans.append((s, words[i + joined][0] + 1))
    # A command is a piece of its own: from the word it starts in to its end, nothing before or after joined to it.
    firsts: dict[int, int] = {}  # the word a command starts in: the command's end
    k = 0
    for i, (s, e) in enumerate(words):
        while k < len(commands) and commands[k][0] < s:
            k += 1
        if k < len(commands) and commands[k][0] < e:
            firsts[i] = commands[k][1]
    after = set(ends)
    bounds = set(firsts) | {i for i, (s, _) in enumerate(words) if s in after}
    spans += [(words[i][0], end) for i, end in firsts.items()]
    # How many pieces cover each position past their first: a word starting where one does is inside it.
    inside = [0] * (len(text) + 1)
    for ss, se in spans:
        if se > ss + 1:
            inside[ss + 1] += 1
            inside[se] -= 1
    for p in range(1, len(inside)):
        inside[p] += inside[p - 1]
    atoms: list[_Atom] = []
    for i, (s, e) in enumerate(words):
        if i and inside[s] > 0 and i not in bounds:  # inside a piece that began before this word
            atoms[-1] = _Atom(atoms[-1].text + text[s:e], atoms[-1].pasted)
        elif s in after and atoms[-1].pasted and not text[s:e].strip().strip(_CLAUSE_END):
            continue  # the punctuation that ends the command's clause: its line's end says it
        else:
            atoms.append(_Atom(text[s:e], i in firsts))
    return atoms


def _with_next(tokens: list[str], i: int) -> int:
    """How many of the words after `tokens[i]` are one piece with it: a number's unit ("0.24 s", the unit ending a
    clause too: "40 ms,"), or the word a whole number counts ("2 runs),"); the rest of a name ("run", "for", "after",
    "design effect") and the number after it ("(run 1:", "for 200", "design effect 2.58"); a test's name and the
    probability it gives ("(exact binomial P(X >= 14")."""
    if i + 1 >= len(tokens):
        return 0
    if _NUMBER.fullmatch(tokens[i]):
        following = tokens[i + 1].rstrip(",;:.)]")
        return int(following in _UNITS or following in _COUNTED and tokens[i].strip("([~≈≤≥<>±+-").isdigit())
    for name in _BEFORE_PROBABILITY:
        n = len(name)
        if i + n < len(tokens) and (tokens[i].lstrip("(").lower(), *(t.lower() for t in tokens[i + 1:i + n])) == name \
                and tokens[i + n].startswith("P("):
            return n
    for name in _BEFORE_NUMBER:
        n = len(name)
        if i + n < len(tokens) and (tokens[i].lstrip("(").lower(), *(t.lower() for t in tokens[i + 1:i + n])) == name \
                and _NUMBER.fullmatch(tokens[i + n].rstrip(",;:.)]%")):
            return n
    return 0


def _written_commands(text: str, words: list[tuple[int, int]], taken: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Where `text` writes out a wb command (`wb hypothesis run ID --resume`, "(wb db upgrade)"), outside the spans
    `taken` (commands found before): from its `wb` to the word that ends it with `:`, `;`, `,` or `)`, or a
    sentence's `.`, `?` or `!` (not a word of dots alone: `.` for a folder, `...` for flags left out), to before a
    word that opens a parenthesis, or to the end, less the punctuation that ends its clause; a quoted argument
    ("-m 'two words'") is one of its words, whatever it holds."""
    out = []
    tokens = [text[s:e].strip() for s, e in words]
    i = k = 0
    while i < len(tokens) - 1:
        while k < len(taken) and taken[k][1] <= words[i][0]:
            k += 1
        if k < len(taken) and taken[k][0] <= words[i][0]:  # within a command found before
            i += 1
            continue
        if tokens[i].lstrip("(") != "wb" or tokens[i + 1].rstrip(":;,)") not in WB_COMMANDS:
            i += 1
            continue
        start, j, quote = words[i][0] + len(tokens[i]) - 2, i, None
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
        out.append((start, _clause_end(text, start, words[j][0] + len(tokens[j]))))
        i = j + 1
    return out


def _phrases(atoms: list[_Atom]) -> list[list[_Atom]]:
    """`atoms` with each phrase in parentheses or braces joined into one unit (the atoms from a `(` to its `)`)."""
    out: list[list[_Atom]] = []
    depth = 0
    for a in atoms:
        if depth > 0:
            out[-1].append(a)
        else:
            out.append([a])
        depth = max(0, depth + a.text.count("(") + a.text.count("{") - a.text.count(")") - a.text.count("}"))
    return out
