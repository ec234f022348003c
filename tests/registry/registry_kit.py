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
