"""Shared functions for the registry's tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

from pathlib import Path

H = "hypotheses.yaml"


def edit(root: Path, *changes: tuple[str, str], file: str = H) -> Path:
    """`file` under `root` with each (old, new) replaced once, old asserted present; returns its path."""
    path = root / file
    text = path.read_text(encoding="utf-8")
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new, 1)
    path.write_text(text, encoding="utf-8")
    return path


def line_of(path: Path, fragment: str) -> int:
    """The number of the first line of `path` holding `fragment`."""
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if fragment in t)


def validate_errors(cli, root: Path) -> list[str]:
    """The Error lines of a `wb hypothesis validate` that must fail (exit 2, no traceback)."""
    code, _, err = cli("hypothesis", "validate", "--root", str(root))
    assert code == 2 and "Traceback" not in err, err
    return [ln for ln in err.splitlines() if ln.startswith("Error: ")]
