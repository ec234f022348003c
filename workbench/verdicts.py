"""Deciding a hypothesis from the runs already stored, and recording the verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def analyze_stored(*, hypothesis_id: str, db: str | None, root: str | Path | None = None,
                   record: bool = True) -> dict[str, Any]:
    from workbench.analysis.stored import analyze_stored as analyze, record_verdict
    from workbench.registry import load_registry
    from workbench.store import open_store

    reg = load_registry(root)
    reg.hypothesis(hypothesis_id)  # bad id -> exit 2 before the store is touched
    with open_store(db, read_only=not record) as store:
        result = analyze(store, reg, hypothesis_id)
        if record:
            record_verdict(store, result)
        return result.to_dict()
