"""Deciding a hypothesis from the runs already stored, and recording the verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.errors import WbError


def analyze_stored(*, hypothesis_id: str, db: str | None, root: str | Path | None = None,
                   record: bool = True) -> dict[str, Any]:
    from workbench.registry import load_registry
    from workbench.store import open_store

    reg = load_registry(root)
    reg.hypothesis(hypothesis_id)  # bad id -> exit 2 before the store is touched
    try:
        from workbench.analysis import analyze, record_verdict
    except ImportError as exc:  # the analysis package is optional in partial builds
        raise WbError("the analysis module is not available in this build", hint=str(exc)) from exc
    store = open_store(db, read_only=not record)
    try:
        with store.session() as session:
            result = analyze(session, reg, hypothesis_id)
            if record:
                record_verdict(session, result)
            return result.to_dict()
    finally:
        store.dispose()
