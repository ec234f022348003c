"""Size limits the code keeps: every function under 80 lines (a longer one is split by what it does)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_FUNCTION_LINES = 80


def functions(folder: Path):
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield f"{path.relative_to(ROOT)}:{node.lineno} {node.name}", node.end_lineno - node.lineno + 1


def longest(folder: Path, n: int = 5) -> list[tuple[str, int]]:
    return sorted(functions(folder), key=lambda f: -f[1])[:n]


def test_every_function_is_under_80_lines():
    # Alembic writes the migrations; they are kept as generated.
    over = [f"{where}: {lines} lines" for where, lines in functions(ROOT / "workbench")
            if lines >= MAX_FUNCTION_LINES and "migrations" not in where]
    assert over == []


if __name__ == "__main__":  # python tests/structure/test_sizes.py: the longest functions
    for where, lines in [f for f in longest(ROOT / "workbench", 12) if "migrations" not in f[0]][:10]:
        print(f"{lines:4d}  {where}")
