"""Counts in what wb writes read in number ("1 run", "3 runs"; plurals.count), never "run(s)": every string the code
builds is scanned (docstrings and comments, which quote the old wording, are not output)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# After a letter, or opening a string: a noun built apart ("run" + "(s)", f"{noun}(s)") reads the same when printed.
UNSURE = re.compile(r"(?:^|[A-Za-z])\((?:s|es|ies)\)")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that stand alone as statements (docstrings)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


def unsure_counts(folder: Path) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip \
                    and UNSURE.search(node.value):
                found.append(f"{path.relative_to(folder)}:{node.lineno}: {node.value.strip()[:80]!r}")
    return found


def test_no_string_says_a_count_with_s_in_brackets():
    assert unsure_counts(ROOT / "workbench") == []


def test_no_template_says_one():
    said = [f"{t.name}:{n}" for t in sorted((ROOT / "workbench" / "report" / "templates").glob("*.j2"))
            for n, line in enumerate(t.read_text(encoding="utf-8").splitlines(), 1) if UNSURE.search(line)]
    assert said == []


def test_the_scan_finds_one(tmp_path):
    (tmp_path / "m.py").write_text('"""Says "1 run(s)" in a docstring."""\nx = f"{n} run(s) ok"\n', encoding="utf-8")
    assert [line.split(": ", 1)[0] for line in unsure_counts(tmp_path)] == ["m.py:2"]


def test_the_scan_finds_one_built_in_pieces(tmp_path):
    # The bracket as a string of its own, joined to the noun: what is printed is "3 run(s)" all the same.
    (tmp_path / "m.py").write_text('a = "run" + "(s)"\nb = f"{n} {noun}(es) left"\nc = f"{n} run{\'(s)\'}"\n'
                                   'd = "f(x) and g(y)"\n', encoding="utf-8")
    assert [line.split(": ", 1)[0] for line in unsure_counts(tmp_path)] == ["m.py:1", "m.py:2", "m.py:3"]
