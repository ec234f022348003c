"""Every text the code builds that writes out a wb command wraps with no line opening on the punctuation that closes
what the line above said: a command written out ends its line (`wrapping.wrap`), so "(wb runs show 12)" left its
")" alone on the next line. Such a text gives the command after a colon, ending the text, where it is to be pasted,
or names it in backticks. Docstrings, which are not output, are passed over."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Iterator

import pytest

from workbench import wrapping

ROOT = Path(__file__).resolve().parents[2]
WIDTHS = (80, 60)
CLOSING = ")]},.;:!?"
WRITTEN = re.compile(r"\bwb (?:" + "|".join(wrapping.WB_COMMANDS) + r")\b")


def _text(node: ast.AST) -> str | None:
    """The text a string expression writes: an f-string's values as "X" (a number's, with a format, as "12"), a
    `+` of strings with what else it adds as "X"; None for no string."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "12" if v.format_spec is not None else "X"
                       for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        return None if left is None and right is None else (left or "X") + (right or "X")
    return None


def _nodes(tree: ast.AST, source: str) -> Iterator[ast.AST]:
    """The nodes of `tree`, each before its parts, but for those on lines that never say "wb" (and their parts):
    most of a module, passed over far faster than `ast.walk` would go through it."""
    said = [0]  # said[n]: how many of the first n lines say "wb"
    for line in source.splitlines():
        said.append(said[-1] + ("wb" in line))
    todo = [tree]
    while todo:
        node = todo.pop()
        end = getattr(node, "end_lineno", None)
        if end is not None and said[end] == said[node.lineno - 1]:
            continue
        yield node
        todo += reversed(list(ast.iter_child_nodes(node)))


def texts(folder: Path) -> list[tuple[str, str]]:
    """(where, text) for each string expression in `folder`'s modules that writes "wb COMMAND" (each line apart), a
    docstring passed over: every constant and f-string, a `+` of them as a whole (not its parts)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if not WRITTEN.search(source):  # half the modules: not parsed at all
            continue
        nodes = list(_nodes(ast.parse(source), source))
        skip = {id(n.value) for n in nodes if isinstance(n, ast.Expr)}  # docstrings
        for node in nodes:
            text = _text(node) if isinstance(node, (ast.Constant, ast.JoinedStr, ast.BinOp)) else None
            if text is not None and not isinstance(node, ast.Constant):  # its parts are in it
                skip.update(map(id, node.values if isinstance(node, ast.JoinedStr) else (node.left, node.right)))
            if text and id(node) not in skip and WRITTEN.search(text):
                where = f"{path.relative_to(folder)}:{node.lineno}"
                found += [(where, line) for line in text.split("\n") if WRITTEN.search(line)]
    return found


def broken_lines(text: str) -> list[list[str]]:
    """`text` wrapped at each of WIDTHS where it writes out a wb command (as the wrapper finds one) and a line after
    the first opens on closing punctuation (")", ").", "); refused ...")."""
    if not any(text[s:e].startswith("wb ") for s, e in wrapping._commands_in(text)):
        return []
    out = []
    for width in WIDTHS:
        lines = wrapping.wrap(text, width)
        firsts = [line.split()[0] for line in lines[1:] if line.strip()]
        if any(not word.strip(CLOSING) and word.strip(".") for word in firsts):  # "..." opens a line of flags
            out.append(lines)
    return out


@pytest.fixture
def no_kept_commands(monkeypatch):
    """The wrapper without the commands other tests had it keep whole: only what a text writes is found."""
    monkeypatch.setattr(wrapping, "_commands", {})


def test_no_text_leaves_what_closes_it_to_the_line_after_a_command(no_kept_commands):
    faults = [f"{where}: {text!r} -> {lines}" for where, text in texts(ROOT / "workbench")
              for lines in broken_lines(text)]
    assert faults == [], "\n".join(faults)


def test_the_scan_finds_a_command_in_parentheses_and_passes_over_the_rest(no_kept_commands, tmp_path):
    (tmp_path / "m.py").write_text(
        '"""A docstring (wb runs show 12) is not output."""\n'
        'def f(run, h):\n'
        '    a = f"its output is in restart.txt of run {run} (wb runs show {run})"\n'
        '    b = "read it again (wb review list " + h + ") and review it"\n'
        '    c = "named in prose: `wb runs show 12` lists it (it ends)"\n'
        '    d = f"to see it: wb runs show {run}"\n'
        '    e = "left out; `wb hypothesis validate` lists every problem"\n')
    found = texts(tmp_path)
    assert [t for _, t in found] == ["its output is in restart.txt of run X (wb runs show X)",
                                     "read it again (wb review list X) and review it",
                                     "named in prose: `wb runs show 12` lists it (it ends)",
                                     "to see it: wb runs show X",
                                     "left out; `wb hypothesis validate` lists every problem"], found
    assert [bool(broken_lines(t)) for _, t in found] == [True, True, False, False, False]
