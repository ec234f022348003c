"""A template's names and its first syntax error, found as `wb hypothesis validate` tells them: the error at the
line where the broken tag starts, and the names of the rest of the template (Jinja stops at its first error)."""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

_CLOSERS = {"{{": "}}", "{%": "%}", "{#": "#}"}
_OPENER = re.compile(r"\{[{%#]")
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'" r'|"(?:[^"\\]|\\.)*"', re.S)  # as Jinja's lexer reads one
_INSIDE = re.compile(_STRING.pattern + r"|\{[{%#]|[%}]\}|[(\[{)\]}]", re.S)  # a string, an opener, a closer, a bracket
_RAW = re.compile(r"\{%[-+]?\s*raw\s*[-+]?%\}")
_ENDRAW = re.compile(r"\{%[-+]?\s*endraw\s*[-+]?%\}")
_SET_TO = re.compile(r"\{%[-+]?\s*set\s+[\w\s,.()]+=")
_BLOCK = re.compile(r"\{%[-+]?\s*(end)?(\w+)")
_NEEDS_CLOSING = r".*innermost block that needs to be closed is '(\w+)'"
_ENDED = re.compile(r"^Unexpected end of template\." + _NEEDS_CLOSING, re.S)
_STRAY_END = re.compile(r"^Encountered unknown tag 'end(\w+)'\." + _NEEDS_CLOSING, re.S)
_MAX_REPAIRS = 20  # tags cut out of a broken template before its names are given up
_BASH_LENGTH = re.compile(r"\$\{#[^}\n]{0,60}\}")  # bash's `${#arr[@]}`, as an error shows it


@dataclass(frozen=True)
class TemplateScan:
    """The names a template uses, each with the line (1-based, in the template) of its first use, and its first
    syntax error: the message, its line and the offset of the broken tag (None where no tag was found broken)."""
    names: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    error_line: int | None = None
    error_at: int | None = None

    @property
    def problem(self) -> str | None:
        """The syntax error as wb tells it, everywhere (validate at the file's line, a renderer at the template's)."""
        return None if self.error is None else f"template syntax error: {self.error}"

    def where(self) -> str:
        """The syntax error's line in the template, as a renderer (which knows no file) tells it."""
        return f"line {self.error_line or 1} of the template: {self.problem}"


@dataclass(frozen=True)
class _Tag:
    start: int
    end: int
    closed: bool


def _tags(text: str) -> list[_Tag]:
    """Each tag of `text` as Jinja's lexer delimits it, without parsing it: a string or a bracket inside a tag
    holds a closer (`{{ "a}}b" }}`, `{{ {"a": {"b": 1}} }}`), a comment holds anything to its `#}` and a raw
    block's text holds no tag. A tag whose closer does not come before the next tag opens (or the end) is unclosed,
    and ends where that tag opens: Jinja notices it there at the latest."""
    return list(_each_tag(text))


def _each_tag(text: str, pos: int = 0) -> Iterator[_Tag]:
    """The tags of `text` (as `_tags` tells them) from `pos` on, one at a time."""
    while (m := _OPENER.search(text, pos)) is not None:
        if m.group() == "{#":
            end = text.find("#}", m.end())
            tag = _Tag(m.start(), end + 2, True) if end >= 0 else _Tag(m.start(), len(text), False)
        else:
            tag = _tag(text, m.start(), _CLOSERS[m.group()])
        if tag.closed and (raw := _RAW.match(text, tag.start, tag.end)) is not None and raw.end() == tag.end:
            endraw = _ENDRAW.search(text, tag.end)  # the raw text between holds no tag
            tag = _Tag(tag.start, endraw.end(), True) if endraw is not None else _Tag(tag.start, len(text), False)
        yield tag
        pos = tag.end


def _tag(text: str, start: int, closer: str) -> _Tag:
    """The `{{` or `{%` tag opening at `start`: it ends at its closer outside strings and brackets, as Jinja's lexer
    ends it, or is unclosed where the next tag opens."""
    depth = 0
    pos = start + 2
    while (m := _INSIDE.search(text, pos)) is not None:
        token, pos = m.group(), m.end()
        if token[0] in "'\"":
            continue
        if token in _CLOSERS:
            return _Tag(start, m.start(), False)
        if len(token) == 2 and depth > 0:  # a closer inside brackets is an operator: `}}` closes two brackets
            depth -= token[0] == "}"
            pos = m.start() + 1
        elif len(token) == 2:
            if token == closer:
                return _Tag(start, m.end(), True)
        elif token in "([{":
            depth += 1
        else:
            depth = max(depth - 1, 0)
    return _Tag(start, len(text), False)


def _bash_lengths(text: str) -> tuple[str, list[int]]:
    """`text` with the `{#` of each bash `${#...}` (a length) blanked, and where each opens: Jinja reads it as a
    comment's start, and drops the text up to the next `#}` (or fails, with none). One inside a tag's string, a
    comment or a raw block is text."""
    found: list[int] = []
    pos = 0
    while (at := next((t.start for t in _each_tag(text, pos)
                       if text.startswith("{#", t.start) and text[t.start - 1:t.start] == "$"), None)) is not None:
        found.append(at)
        pos = at + 2  # read on as if its `{#` were blanked: a later `${#` the first would have swallowed is told
    return _blanked(text, [_Tag(at, at + 2, True) for at in found]), found


def _bash_length_error(text: str, at: int) -> tuple[str, int, int]:
    """The bash length whose `{#` opens at `at`, as (the error, its line, `at`) in `scan`'s first error."""
    m = _BASH_LENGTH.match(text, at - 1)
    written = m.group() if m is not None else "${#...}"
    return (f"bash's `{written}` reads as the start of a Jinja comment (`{{#` up to the next `#}}`): write it "
            f"`{{% raw %}}{written}{{% endraw %}}`", _line(text, at), at)


def first_tag_using(text: str, name: str) -> int | None:
    """The offset of the first tag of `text` using `name` outside its strings (a tag as Jinja's lexer delimits it),
    or None: where a value folded into one line uses the name, whose source line Jinja cannot tell."""
    word = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
    text, _ = _bash_lengths(text)  # scanned with them blanked: what follows one is read for names
    for tag in _tags(text):
        if text.startswith("{#", tag.start) or _RAW.match(text, tag.start):
            continue
        if word.search(_STRING.sub(" ", text[tag.start:tag.end])):
            return tag.start
    return None


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _lines(text: str) -> Callable[[int], int]:
    """The line (1-based) of an offset in `text`, from one list of its line breaks: asked for every tag."""
    breaks = [m.start() for m in re.finditer("\n", text)]
    return lambda at: bisect.bisect_left(breaks, at) + 1


def _left_open(text: str, tags: list[_Tag], message: str, line: int) -> tuple[str, _Tag, int] | None:
    """The block Jinja's error tells is left open, as (its name, its tag, where its end tag is missing): at the
    template's end, or before an end tag of a block around it (`{% endfor %}` after an `{% if %}` lacking its
    endif). None where no such block is found (a stray end tag is itself the broken tag)."""
    if (ended := _ENDED.search(message)) is not None:
        name, stack = ended.group(1), _open_blocks(text, tags)
        at = len(text)
    elif (stray := _STRAY_END.search(message)) is not None:
        end, line_of = ("end", stray.group(1)), _lines(text)
        end_tag = next((t for t in tags if t.closed and line_of(t.start) == line
                        and (m := _BLOCK.match(text, t.start)) is not None and m.groups() == end), None)
        if end_tag is None:
            return None
        name, at = stray.group(2), end_tag.start
        stack = _open_blocks(text, [t for t in tags if t.start < at])
        around = [i for i, (block, _) in enumerate(stack) if block == stray.group(1)]
        stack = stack[around[-1] + 1:] if around else []  # the end tag closes a block around the one left open
    else:
        return None
    tag = next((tag for block, tag in reversed(stack) if block == name), None)
    return (name, tag, at) if tag is not None else None


def _open_blocks(text: str, tags: list[_Tag]) -> list[tuple[str, _Tag]]:
    """The block tags of `tags` their end tags do not close, outermost first."""
    stack: list[tuple[str, _Tag]] = []
    for tag in tags:
        m = _BLOCK.match(text, tag.start) if tag.closed else None
        if m is None or m.group(2) == "raw":  # a raw block is one tag, its endraw within it
            continue
        if _SET_TO.match(text, tag.start):  # `{% set a = 1 %}` is one tag; `{% set a %}` opens a block
            continue
        if m.group(1) is None:
            stack.append((m.group(2), tag))
        elif any(block == m.group(2) for block, _ in stack):  # tags without an end (`set`, `else`) go with it
            del stack[max(i for i, (block, _) in enumerate(stack) if block == m.group(2)):]
    return stack


def _broken(text: str, tags: list[_Tag], line: int) -> list[_Tag]:
    """The tags Jinja's error at `line` may be in: the first unclosed tag opening on or before the line (Jinja reads
    on past it, and notices where the next tag opens or later), else the tags on the line."""
    line_of = _lines(text)
    unclosed = [t for t in tags if not t.closed and line_of(t.start) <= line][:1]
    return unclosed or [t for t in tags if line_of(t.start) <= line <= line_of(max(t.start, t.end - 1))]


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
    name mistyped below a syntax error is told with it, not after it is fixed. A bash length (`${#arr[@]}`) is an
    error Jinja does not see (it reads a comment), told unless a syntax error comes before it."""
    import jinja2

    env = jinja2.Environment()
    env.filters.update(q=str, raw=str)  # the renderer's own filters (runner.render)
    blanked, lengths = _bash_lengths(text)
    bash = _bash_length_error(text, lengths[0]) if lengths else None
    text = blanked
    first: tuple[str, int, int | None] | None = None
    for _ in range(_MAX_REPAIRS):
        ast, exc = _parse(env, text)
        if exc is None:
            return TemplateScan(_first_uses(ast), *(_earlier(first, bash) or (None, None, None)))
        line, message = exc.lineno or 1, exc.message or ""
        tags = _tags(text)
        opened = _left_open(text, tags, message, line)
        broken = [opened[1]] if opened is not None else _broken(text, tags, line)
        tag = _cut(env, text, line, broken) if broken else None
        if first is None:  # told where the broken tag starts, not where Jinja noticed (a line later, the end)
            first = (message, line, None) if tag is None else (message, _line(text, tag.start), tag.start)
        if tag is None:
            break
        if opened is not None:  # its end tag put where it lacks, on the same line: a loop's variable stays declared
            name, _, at = opened
            text = text[:at] + "{% end" + name + " %}" + text[at:]
        else:
            text = _blanked(text, [tag])
    assert first is not None
    return TemplateScan({}, *(_earlier(first, bash) or first))


def _earlier(first: tuple[str, int, int | None] | None,
             bash: tuple[str, int, int] | None) -> tuple[str, int, int | None] | None:
    """Of Jinja's first syntax error and the first bash length, the one on the earlier line (the bash length on the
    same line): the error `scan` tells."""
    if first is None or bash is None:
        return first or bash
    return first if first[1] < bash[1] else bash


def _first_uses(ast: Any) -> dict[str, int]:
    """The names the template uses undeclared, each at the line of its first use. Jinja's meta counts a name set
    inside an `{% if %}` undeclared even where that branch uses it after setting it (the template renders): a name
    is told only where a use comes before the template sets it."""
    from jinja2 import meta, nodes

    undeclared = meta.find_undeclared_variables(ast)
    first: dict[str, int] = {}
    stored: set[str] = set()
    for node in ast.find_all(nodes.Name):  # in the template's order
        if node.ctx != "load":
            stored.add(node.name)
        elif node.name in undeclared and node.name not in stored:
            first[node.name] = min(first.get(node.name, node.lineno), node.lineno)
    return first
