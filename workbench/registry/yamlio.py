"""YAML loading that remembers where every value came from, so errors can name file and line."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from workbench.errors import ConfigError

Loc = tuple[Any, ...]


class LocatedYaml:
    """Parsed YAML data plus the 1-based line of every mapping key and sequence item, and the words that YAML 1.1
    read as booleans (`no`, `off`, `yes`…) as they were written, so a variable value keeps its word and an error
    can show the value to quote."""

    def __init__(self, data: Any, lines: dict[Loc, int], file: str, booleans: dict[Loc, str] | None = None,
                 folded: dict[Loc, tuple[int, list[str]]] | None = None,
                 blocks: dict[Loc, int] | None = None) -> None:
        self.data = data
        self.lines = lines
        self.file = file
        self.booleans = booleans or {}
        # A value folded from several source lines (`>`, plain or quoted): its first line and its source lines.
        self.folded = folded or {}
        # A block value's (`|` or `>`) first line of text: the value's own line holds only its indicator.
        self.blocks = blocks or {}

    def folded_nth_line(self, loc: Loc, needle: str, n: int) -> int | None:
        """The line of folded value `loc` whose source holds its `n`-th (0-based) `needle`, or None."""
        first, source = self.folded.get(tuple(loc), (0, []))
        for i, text in enumerate(source):
            n -= text.count(needle)
            if n < 0:
                return first + i
        return None

    def text_line(self, loc: Loc, n: int) -> int | None:
        """The line of line `n` (0-based) of the text of value `loc`: counted from a block value's first line of
        text; any other value's text starts on its own line, and a quoted one's escaped `\\n` breaks no line."""
        first = self.blocks.get(tuple(loc))
        return first + n if first is not None else self.line_of(loc)

    def line_of(self, loc: Loc) -> int | None:
        """The line of `loc`, or of its nearest located ancestor."""
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get((), 1)

    def error(self, message: str, loc: Loc = (), *, hint: str | None = None) -> ConfigError:
        return ConfigError(message, file=self.file, line=self.line_of(loc), field=field_name(loc, self.data), hint=hint)


# What an item of a list is called where the registry's vocabulary has a word for it (an item of another list is
# "NAME item N").
_ITEMS = {"hypotheses": "hypothesis", "predicts": "prediction", "requires": "guard", "assumptions": "assumption"}


def field_name(loc: Loc, data: Any = None) -> str | None:
    """Where `loc` stands, as an error names it beside its file:line, one way wherever it is found: a hypothesis
    by its id (from `data`, the parsed file, where the entry gives one), an item of a list by its place counted
    from 1 as a reader counts ("prediction 2"), and a key path after the word "field" ("field arms.control.hicache",
    "field profiles.sim.restart item 1"). pydantic's and YAML's paths count from 0 (`hypotheses.1.predicts.0.arm`):
    a reader took `hypotheses.1` for the first hypothesis. A bare list at the top of a file is the list of
    hypotheses (the loader reads it as format 1)."""
    parts: list[str] = []
    keys: list[str] = []
    node = data
    for p in loc:
        # A whole number is a list's index only where the node is no mapping: a mapping's key may be one too
        # (`hold: {5: on}`, the key 5, not a sixth item).
        if isinstance(p, int) and not isinstance(p, bool) and not isinstance(node, dict):
            item = node[p] if isinstance(node, list) and 0 <= p < len(node) else None
            hypotheses = not parts and keys in ([], ["hypotheses"])
            named = item.get("id") if isinstance(item, dict) and hypotheses else None
            if isinstance(named, str) and named.strip() and named.isprintable():
                parts.append(f"hypothesis {named}")
            elif hypotheses:
                parts.append(f"hypothesis {p + 1}")
            elif len(keys) == 1 and keys[0] in _ITEMS:
                parts.append(f"{_ITEMS[keys[0]]} {p + 1}")
            elif keys:
                parts.append(f"field {'.'.join(keys)} item {p + 1}")
            else:  # a list in a list
                parts.append(f"item {p + 1}")
            keys = []
            node = item
            continue
        keys.append(str(p))
        node = node.get(p) if isinstance(node, dict) else None
    if keys:
        parts.append(f"field {'.'.join(keys)}")
    return ", ".join(parts) or None


def _scalar_key(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    try:
        return loader.construct_object(node, deep=True)
    except Exception:  # a key that is not a plain scalar; fall back to its text
        return getattr(node, "value", None)


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # tab, newline and CR are text
MAX_BYTES = 8 * 1024 * 1024  # a registry file is hand-written text; anything larger is a mistake or an attack
MAX_DEPTH = 64
MAX_NODES = 200_000  # after aliases are followed: bounds an "alias bomb" (aliases of aliases of lists)


_BOOL_TAG = "tag:yaml.org,2002:bool"
_WORDS = re.compile(r"\S\s+\S")  # a value of several words (prose, a command), not a number or a name


def _too_deep(file: str, line: int | None = None) -> ConfigError:
    return ConfigError(f"the YAML is nested more than {MAX_DEPTH} levels deep", file=file, line=line)


def _too_many(file: str, line: int, aliased: bool) -> ConfigError:
    if aliased:
        return ConfigError(f"the YAML expands to more than {MAX_NODES:,} values (aliases that refer to aliases?)",
                           file=file, line=line, hint="write the values out instead of nesting aliases")
    return ConfigError(f"the file holds more than {MAX_NODES:,} values", file=file, line=line,
                       hint="a registry file is written by hand: split it, or remove what is not hypotheses or "
                            "experiments")


class _Problem(NamedTuple):
    """A problem the YAML's own checks found, before the file is parsed into data: the place it names is said
    from that data (`field_name`), so it reads as the same place found by any later check."""

    message: str
    line: int
    loc: Loc
    hint: str | None = None


def _walk(loader: yaml.SafeLoader, root: yaml.Node, root_loc: Loc, lines: dict[Loc, int], file: str,
          booleans: dict[Loc, str], quoted: list[tuple[yaml.ScalarNode, Loc]],
          worded: list[tuple[yaml.ScalarNode, Loc]], spanning: list[tuple[yaml.ScalarNode, Loc]]) -> _Problem | None:
    """Record the line of every key and item, the words read as booleans, the quoted scalars that span lines, the
    plain (unquoted) values of several words and the values of several source lines; iterative, and bounded in
    depth and in nodes visited. Returns the first duplicate key or control character met: the walk goes on to the
    end, so the file is known to be bounded before it is parsed to name that problem's place."""
    stack: list[tuple[yaml.Node, Loc]] = [(root, root_loc)]
    problem: _Problem | None = None
    visited = 0
    collections: set[int] = set()  # an alias is the node it names, met again
    aliased = False
    while stack:
        node, loc = stack.pop()
        visited += 1
        line = node.start_mark.line + 1
        if visited > MAX_NODES:
            raise _too_many(file, line, aliased)
        if isinstance(node, yaml.CollectionNode):
            aliased = aliased or id(node) in collections
            collections.add(id(node))
        if len(loc) > MAX_DEPTH:
            raise _too_deep(file, line)
        lines.setdefault(loc, line)
        if isinstance(node, yaml.ScalarNode) and node.tag == _BOOL_TAG:
            booleans.setdefault(loc, node.value)
        if isinstance(node, yaml.ScalarNode) and node.style in ("'", '"') and node.end_mark.line > node.start_mark.line:
            quoted.append((node, loc))
        if isinstance(node, yaml.ScalarNode) and not node.style and _WORDS.search(node.value):
            worded.append((node, loc))
        if isinstance(node, yaml.ScalarNode) and node.end_mark.line > node.start_mark.line:
            spanning.append((node, loc))
        if isinstance(node, yaml.ScalarNode) and _CONTROL.search(node.value or ""):
            bad = _CONTROL.search(node.value).group()
            problem = problem or _Problem(f"a value holds the control character {bad!r}", line, loc,
                                          "registry text is printable; remove the character")
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, value_node in node.value:
                key = _norm_key(_scalar_key(loader, key_node))
                kline = key_node.start_mark.line + 1
                if key in seen:
                    problem = problem or _Problem(f"duplicate key {key!r} (first at line {seen[key]})", kline,
                                                  (*loc, key))
                else:
                    seen[key] = kline
                lines[(*loc, key)] = kline
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag == _BOOL_TAG:
                    # A bare yes/no/on/off key is a boolean too: pydantic names it (loc, bool, "[key]").
                    booleans.setdefault((*loc, _scalar_key(loader, key_node), "[key]"), key_node.value)
                    lines.setdefault((*loc, key_node.value), kline)
                stack.append((value_node, (*loc, key)))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines[(*loc, i)] = item.start_mark.line + 1
                stack.append((item, (*loc, i)))
    return problem


def _norm_key(key: Any) -> Any:
    # YAML 1.1 reads bare on/off/yes/no as booleans; wb's variables use the words.
    if key is True:
        return "on"
    if key is False:
        return "off"
    return key


_BREAK = re.compile(r"\r\n|[\r\n\x85\u2028\u2029]")  # YAML's line breaks, as the parser counts lines
_KEY_LIKE = re.compile(r"[ \t]*(?:-[ \t]+)?([^\s:#'\"{}\[\],][^:#]*?):(?:[ \t]|$)")
_FLOW_ITEM = re.compile(r"[ \t]*-[ \t]*\{")


def _swallowed_line(node: yaml.ScalarNode, source_lines: list[str], keys: set[str]) -> int | None:
    """The first line (0-based) that a quoted scalar of several lines takes in as text and that reads as a line
    of the file's own structure: `KEY:` with a key the file uses, or a `- {` item. None for prose."""
    start, end = node.start_mark, node.end_mark
    for n in range(start.line + 1, end.line + 1):
        text = source_lines[n][:end.column] if n == end.line else source_lines[n]
        key = _KEY_LIKE.match(text)
        if (key is not None and key.group(1).strip() in keys) or _FLOW_ITEM.match(text):
            return n
    return None


def _swallowed_keys(quoted: list[tuple[yaml.ScalarNode, Loc]], lines: dict[Loc, int], text: str) -> _Problem | None:
    """A quote left open that a later quote closes without breaking the YAML takes the lines between as its
    text, and the file loads with the wrong values. A quoted text of several lines is refused, at the quote that
    opened it, when a line it takes in reads as one of the file's keys (or a `- {` item); prose still loads."""
    if not quoted:
        return None
    keys = {str(loc[-1]) for loc in lines if loc and isinstance(loc[-1], str)} | _schema_keys()
    source_lines = _BREAK.split(text)
    for node, loc in sorted(quoted, key=lambda q: (q[0].start_mark.line, q[0].start_mark.column)):
        n = _swallowed_line(node, source_lines, keys)
        if n is None:
            continue
        start, end, q = node.start_mark, node.end_mark, node.style
        name = loc[-1] if loc and isinstance(loc[-1], str) else "key"
        return _Problem(
            f"the {q} at line {start.line + 1} (column {start.column + 1}) is closed only at line {end.line + 1} "
            f"(column {end.column}): its text takes in line {n + 1} ({source_lines[n].strip()!r}), which looks like "
            "a key of the file, not text: a quote left open?", start.line + 1, loc,
            f"close the {q} on line {start.line + 1}; text of several lines that must hold such a line goes in a "
            f"block scalar ({name}: >-)")
    return None


def _cut_by_comments(worded: list[tuple[yaml.ScalarNode, Loc]], text: str) -> _Problem | None:
    """A plain value of several words ends where " #" begins a comment, and the rest of its line is dropped:
    `claim: the rate drops #2 of the fixes` loads as "the rate drops" without a word. Where the parser ended such
    a value and a comment follows it on its line, the file is refused with the value quoted in the hint. A comment
    after a number, a single word, a flow collection or a quoted value reads as a comment and still loads."""
    if not worded:
        return None
    rows = _BREAK.split(text)
    for node, loc in sorted(worded, key=lambda w: (w[0].end_mark.line, w[0].end_mark.column)):
        end = node.end_mark
        rest = rows[end.line][end.column:].rstrip() if end.line < len(rows) else ""
        comment = rest.lstrip(" \t")
        if not comment.startswith("#") or comment == rest:
            continue
        whole = _quoted(node.value + rest)
        shown = f"{loc[-1]}: {whole}" if loc and isinstance(loc[-1], str) else f"- {whole}"
        return _Problem(f'the text after " #" ({comment}) would be dropped as a comment: the value would read '
                        f'"{node.value}"', end.line + 1, loc,
                        f"quote the value: {shown} (or, if that text is a note, put the comment on a line of its "
                        "own)")
    return None


@functools.cache
def _schema_keys() -> frozenset[str]:
    """Every key the registry's files may hold (the fields of its models, by the names the files use): a quote
    that takes in `status: retired` swallowed a key even where no other entry of the file sets one."""
    import workbench.registry.experiment  # noqa: F401  (the models register as Strict's subclasses)
    import workbench.registry.hypothesis  # noqa: F401
    from workbench.registry.common import Strict

    out: set[str] = set()
    todo: list[type] = [Strict]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        out.update(f.alias or name for name, f in cls.model_fields.items())  # type: ignore[attr-defined]
    return frozenset(out)


def _quote_run_on(text: str, exc: yaml.MarkedYAMLError) -> tuple[int, str] | None:
    """A quote left open (`claim: "The fix` with no closing quote) takes everything up to the next such quote in
    the file as its text, and the YAML breaks just after that one, often many lines later. When the parser fails
    on the line where a quoted scalar of several lines ended, the quote that opened it is the likely mistake:
    its line is the one to name. None when the failure is not of that shape."""
    mark = exc.problem_mark
    if mark is None:
        return None
    last = None
    try:  # the pure-Python scanner keeps each token's style and span; only a failed load pays for it
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if (token.start_mark.line, token.start_mark.column) >= (mark.line, mark.column):
                break
            last = token
    except yaml.YAMLError:
        pass
    if not isinstance(last, yaml.ScalarToken) or last.style not in ("'", '"'):
        return None
    start, end = last.start_mark, last.end_mark
    if start.line == end.line or end.line != mark.line:
        return None
    q = last.style
    return start.line + 1, (f"the {q} at line {start.line + 1} (column {start.column + 1}) is never closed: the "
                            f"quoted text runs on to the next {q}, at line {end.line + 1}, where the YAML breaks "
                            f"({exc.problem})")


def _yaml_problem(exc: yaml.MarkedYAMLError, line: int | None, text: str) -> tuple[int | None, str]:
    """The line to name and the problem in words. An unclosed flow collection or quoted scalar is noticed
    lines after it began (a '{' left open on line 14 fails on line 15): the line named is where it began,
    and the message says where the parser noticed it. For a block construct the problem's own line stays."""
    problem = exc.problem or exc.context or "invalid YAML"
    run_on = _quote_run_on(text, exc)
    if run_on is not None:
        return run_on
    ctx = exc.context_mark.line + 1 if exc.context_mark is not None else None
    if exc.problem is None or exc.context is None or ctx is None or ctx == line:
        return line, problem
    began = exc.context.removeprefix("while parsing ").removeprefix("while scanning ")
    began = began.removeprefix("a ").removeprefix("an ")
    col = exc.context_mark.column + 1
    if "quoted" in began:
        opened = text.splitlines()[ctx - 1][col - 1:col]
        quote = opened if opened in ("'", '"') else "quote"
        return ctx, f"the {quote} at line {ctx} (column {col}) is never closed (noticed at line {line}: {problem})"
    if "flow" in began:
        return ctx, f"{problem}: the {began} begun at line {ctx} (column {col}) is not closed (noticed at line {line})"
    return line, f"{problem} (in the {began} begun at line {ctx})"


_BLOCK_VALUE = re.compile(r"[ \t]*(?:-[ \t]+)?([\w.-]+):[ \t]+(?P<value>[^'\"{\[|>&*!#\s].*?)[ \t]*$")
_FLOW_VALUE = re.compile(r"[{,][ \t]*([\w.-]+):[ \t]+(?P<value>[^'\"{\[&*!#\s,}\]][^,}\]]*?)[ \t]*(?=[,}\]]|$)")


def _quoted(value: str) -> str:
    """`value` as a YAML quoted scalar that reads back as the same text."""
    if '"' in value or "\\" in value:
        return "'" + value.replace("'", "''") + "'"
    return f'"{value}"'


def _plain_value_hint(text: str, line: int | None) -> str | None:
    """The likely fix when the line the YAML broke on (or the line its text runs on from) holds an unquoted value
    with ': ' (read as a new key) or ' #' (the rest taken as a comment): that value quoted. None otherwise."""
    if line is None:
        return None
    rows = _BREAK.split(text)
    candidates = [line - 1]
    above = next((n for n in range(line - 2, -1, -1) if rows[n].strip() and not rows[n].lstrip().startswith("#")),
                 None)
    if above is not None and line - 1 < len(rows):  # a value that runs on: the line named continues the one above
        indent = len(rows[line - 1]) - len(rows[line - 1].lstrip(" "))
        if indent > len(rows[above]) - len(rows[above].lstrip(" ")):
            candidates.append(above)
    for n in candidates:
        if n >= len(rows):
            continue
        for found in (_BLOCK_VALUE.match(rows[n]), *_FLOW_VALUE.finditer(rows[n])):
            value = found.group("value") if found else ""
            if ": " in value or value.endswith(":") or " #" in value:
                why = ('": " in it reads as a new key' if ": " in value or value.endswith(":")
                       else '" #" in it starts a comment that drops the rest')
                return f"quote the value: {found.group(1)}: {_quoted(value)} (unquoted, {why})"
    return None


def _tab_at(text: str, mark: Any) -> int | None:
    """The 1-based column of the tab in the indentation of the line the parser stopped at, or None."""
    if mark is None:
        return None
    lines = _BREAK.split(text)
    if mark.line >= len(lines):
        return None
    row = lines[mark.line]
    indent = row[:len(row) - len(row.lstrip(" \t"))]
    return indent.index("\t") + 1 if "\t" in indent and mark.column <= len(indent) else None


def load_located(path: str | Path, *, text: str | None = None) -> LocatedYaml:
    """Parse `path` (or `text`, reported as `path`) into data and a line map; bad YAML is a ConfigError."""
    file = str(path)
    if text is None:
        from workbench.registry.files import read_user_text

        try:
            text = read_user_text(path)
        except FileNotFoundError:
            raise ConfigError("file not found", file=file,
                              hint="check the path, or run wb from the workbench folder") from None
    if len(text) > MAX_BYTES:
        raise ConfigError(f"the file is too large ({len(text) / 1e6:.1f} MB; at most {MAX_BYTES / 1e6:.0f} MB)",
                          file=file, hint="split it, or remove what is not hypotheses/experiments")
    if "\x00" in text:
        raise ConfigError("the file holds a NUL byte (binary data?)", file=file,
                          line=text.count("\n", 0, text.index("\x00")) + 1)
    try:
        loader = yaml.CSafeLoader(text)  # libyaml: a third of the pure-Python parser's time, same nodes and marks
        try:
            node = loader.get_single_node()
            lines: dict[Loc, int] = {}
            booleans: dict[Loc, str] = {}
            quoted: list[tuple[yaml.ScalarNode, Loc]] = []
            worded: list[tuple[yaml.ScalarNode, Loc]] = []
            spanning: list[tuple[yaml.ScalarNode, Loc]] = []
            if node is not None:
                problem = _walk(loader, node, (), lines, file, booleans, quoted, worded, spanning) or \
                    _swallowed_keys(quoted, lines, text) or _cut_by_comments(worded, text)
                if problem is not None:
                    raise ConfigError(problem.message, file=file, line=problem.line, hint=problem.hint,
                                      field=field_name(problem.loc, _data_or_none(loader, node)))
                data = loader.construct_document(node)
            else:
                data = None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        if "maximum nesting depth" in str(exc.problem):  # libyaml's own bound, far above ours
            raise _too_deep(file, line) from None
        tab = _tab_at(text, exc.problem_mark)
        if tab is not None:
            raise ConfigError(f"invalid YAML: a tab at column {tab}: YAML indents with spaces only", file=file,
                              line=line, hint="replace the tab with spaces (an editor's 'indent with spaces')") \
                from exc
        line, problem = _yaml_problem(exc, line, text)
        hint = _plain_value_hint(text, line) or "fix the YAML syntax (indentation, quotes, colons, a closing bracket)"
        raise ConfigError(f"invalid YAML: {problem}", file=file, line=line, hint=hint) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", file=file) from exc
    except RecursionError:
        raise _too_deep(file) from None
    source = text.splitlines()
    folded = {loc: (n.start_mark.line + 1, _source_of(n, source)) for n, loc in spanning if n.style != "|"}
    blocks = {loc: n.start_mark.line + 2 for n, loc in spanning if n.style in ("|", ">")}
    return LocatedYaml(data, lines, file, booleans, folded, blocks)


def _data_or_none(loader: yaml.CSafeLoader, node: yaml.Node) -> Any:
    """The data of a document whose YAML parses but that is refused, for naming the refused value's place; None
    where it cannot be built (a key that is a list): the place is then named from the path alone."""
    try:
        return loader.construct_document(node)
    except yaml.YAMLError:
        return None


def _source_of(node: yaml.ScalarNode, source: list[str]) -> list[str]:
    """The source lines of a value over several, cut at its start and end (a flow mapping holds others beside it).
    A block's end mark is the next token's start, at column 0 of the line after it: that line holds none of it."""
    start, end = node.start_mark, node.end_mark
    rows = source[start.line:end.line] + [source[end.line][:end.column]] if end.line < len(source) \
        else source[start.line:]
    return [rows[0][start.column:], *rows[1:]]
