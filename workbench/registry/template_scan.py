"""A template's names and its first syntax error, found as `wb hypothesis validate` tells them: the error at the
line where the broken tag starts, and the names of the rest of the template (Jinja stops at its first error)."""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field
from typing import Any

_CLOSERS = {"{{": "}}", "{%": "%}", "{#": "#}"}
_OPENER = re.compile(r"\{[{%#]")
_BLOCK = re.compile(r"\{%[-+]?\s*(end)?(\w+)")
_INNERMOST = re.compile(r"innermost block that needs to be closed is '(\w+)'")
_MAX_REPAIRS = 20  # tags cut out of a broken template before its names are given up


@dataclass(frozen=True)
class TemplateScan:
    """The names a template uses, each with the line (1-based, in the template) of its first use, and its first
    syntax error: the message, its line and the offset of the broken tag (None where no tag was found broken)."""
    names: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    error_line: int | None = None
    error_at: int | None = None


@dataclass(frozen=True)
class _Tag:
    start: int
    end: int
    closed: bool


def _tags(text: str) -> list[_Tag]:
    """Each tag of `text` as delimited, without parsing it: one whose closer does not come before the next tag
    opens (or before the end) is unclosed, and ends where that tag opens. A comment holds anything to its end."""
    out: list[_Tag] = []
    pos = 0
    while (m := _OPENER.search(text, pos)) is not None:
        end = text.find(_CLOSERS[m.group()], m.end())
        following = _OPENER.search(text, m.end()) if m.group() != "{#" else None
        if end >= 0 and (following is None or end < following.start()):
            out.append(_Tag(m.start(), end + 2, True))
            pos = end + 2
        else:
            pos = following.start() if following is not None else len(text)
            out.append(_Tag(m.start(), pos, False))
    return out


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _open_block(text: str, tags: list[_Tag], name: str) -> _Tag | None:
    """The innermost `{% name %}` tag its end tag never closes."""
    stack: list[tuple[str, _Tag]] = []
    for tag in tags:
        m = _BLOCK.match(text, tag.start) if tag.closed else None
        if m is None:
            continue
        if m.group(1) is None:
            stack.append((m.group(2), tag))
        elif any(block == m.group(2) for block, _ in stack):  # tags without an end (`set`, `else`) go with it
            del stack[max(i for i, (block, _) in enumerate(stack) if block == m.group(2)):]
    return next((tag for block, tag in reversed(stack) if block == name), None)


def _broken(text: str, line: int) -> list[_Tag]:
    """The tags Jinja's error at `line` may be in: an unclosed tag that reaches the line (Jinja tells where it
    noticed, a line or more later), else the tags on it."""
    breaks = [m.start() for m in re.finditer("\n", text)]

    def line_of(at: int) -> int:
        return bisect.bisect_left(breaks, at) + 1

    spans = [t for t in _tags(text) if line_of(t.start) <= line <= line_of(max(t.start, t.end - 1))]
    return [t for t in spans if not t.closed][:1] or spans


def _blanked(text: str, tags: list[_Tag]) -> str:
    """`text` with `tags` cut out, their line breaks kept: every line keeps its number."""
    chars = list(text)
    for t in tags:
        chars[t.start:t.end] = [c if c == "\n" else " " for c in chars[t.start:t.end]]
    return "".join(chars)


def _parse(env: Any, text: str) -> tuple[Any, Any]:
    """(the template's tree, None) or (None, its first syntax error)."""
    import jinja2

    try:
        ast = env.parse(text)
        env.compile(ast)  # an unknown filter or test is found when compiling, not when parsing
        return ast, None
    except jinja2.TemplateSyntaxError as exc:
        return None, exc


def _cut(env: Any, text: str, line: int, broken: list[_Tag]) -> _Tag:
    """Of the closed tags on the error's line, the first whose cutting gets the parse past that line (a stray
    `{% endif %}` beside a good `{% endfor %}`), else the first."""
    for tag in broken if len(broken) > 1 else []:
        _, again = _parse(env, _blanked(text, [tag]))
        if again is None or (again.lineno or 1) > line:
            return tag
    return broken[0]


@functools.lru_cache(maxsize=1024)
def scan(text: str) -> TemplateScan:
    """`text`'s names and first syntax error, parsed and compiled once per text in a process (a registry is loaded
    again and again by a long-lived caller). A tag Jinja cannot read is cut out and the rest parsed again, so a
    name mistyped below a syntax error is told with it, not after it is fixed."""
    import jinja2

    env = jinja2.Environment()
    env.filters.update(q=str, raw=str)  # the renderer's own filters (runner.render)
    first: tuple[str, int, int | None] | None = None
    for _ in range(_MAX_REPAIRS):
        ast, exc = _parse(env, text)
        if exc is None:
            return TemplateScan(_first_uses(ast), *(first or (None, None, None)))
        line, message = exc.lineno or 1, exc.message or ""
        innermost = _INNERMOST.search(message)  # a block left open: Jinja tells the end of the template
        opened = _open_block(text, _tags(text), innermost.group(1)) if innermost is not None else None
        broken = [opened] if opened is not None else _broken(text, line)
        tag = _cut(env, text, line, broken) if broken else None
        if first is None:  # told where the broken tag starts, not where Jinja noticed (a line later, the end)
            first = (message, line, None) if tag is None else (message, _line(text, tag.start), tag.start)
        if tag is None:
            break
        if opened is not None and innermost is not None:  # closed at the end: a loop's variable stays declared
            text += "{% end" + innermost.group(1) + " %}"
        else:
            text = _blanked(text, [tag])
    assert first is not None
    return TemplateScan({}, *first)


def _first_uses(ast: Any) -> dict[str, int]:
    from jinja2 import meta, nodes

    names = meta.find_undeclared_variables(ast)
    first: dict[str, int] = {}
    for node in ast.find_all(nodes.Name):
        if node.name in names and node.ctx == "load":
            first[node.name] = min(first.get(node.name, node.lineno), node.lineno)
    return {n: first.get(n, 1) for n in names}
