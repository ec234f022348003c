"""What the read-only commands show: hypotheses with their latest verdicts, runs, the store's revision.

Each function opens what it needs, returns plain data, and closes; the CLI only formats.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.errors import BadInput


def _verdicts(db: str | None) -> dict[str, dict[str, Any]]:
    """Latest stored verdict per hypothesis; empty when there is no store yet."""
    from workbench.store import open_store, resolve_url
    from workbench.store.queries import latest_verdicts

    _, path = resolve_url(db)
    if path is not None and not path.exists():
        return {}
    store = open_store(db, read_only=True)
    try:
        with store.session() as session:
            return latest_verdicts(session)
    finally:
        store.dispose()


def hypothesis_summary(h: Any, verdict: dict[str, Any] | None) -> dict[str, Any]:
    return {"id": h.id, "parent": h.parent, "kind": h.kind, "claim": h.claim, "experiment": h.experiment,
            "isolates": h.isolates, "declared_status": h.status,
            "status": verdict["verdict"] if verdict else h.status,
            "verdict": verdict["verdict"] if verdict else None,
            "verdict_at": verdict["created_at"] if verdict else None}


def list_hypotheses(*, db: str | None, root: str | Path | None = None) -> list[dict[str, Any]]:
    from workbench.registry import load_registry

    reg = load_registry(root)
    verdicts = _verdicts(db)
    return [hypothesis_summary(h, verdicts.get(h.id)) for h in reg.hypotheses]


def show_hypothesis(*, hypothesis_id: str, db: str | None, root: str | Path | None = None) -> dict[str, Any]:
    from workbench.registry import load_registry

    reg = load_registry(root)
    h = reg.hypothesis(hypothesis_id)
    verdict = _verdicts(db).get(h.id)
    out = hypothesis_summary(h, verdict)
    out["definition"] = h.model_dump(mode="json", exclude_none=True)
    out["arms"] = {arm: reg.arm_assignment(h, arm) for arm in h.arm_names}
    out["children"] = [c.id for c in reg.children(h.id)]
    out["reasoning"] = verdict["reasoning"] if verdict else None
    out["checks"] = verdict["checks"] if verdict else []
    return out


def list_runs(*, db: str | None, hypothesis_id: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    from workbench.store import open_store
    from workbench.store import queries

    store = open_store(db, read_only=True)
    try:
        with store.session() as session:
            return queries.list_runs(session, hypothesis_id=hypothesis_id, limit=limit)
    finally:
        store.dispose()


def show_run(*, db: str | None, run_id: int) -> dict[str, Any]:
    from workbench.store import open_store
    from workbench.store import queries

    store = open_store(db, read_only=True)
    try:
        with store.session() as session:
            run = queries.get_run(session, run_id=run_id)
    finally:
        store.dispose()
    if run is None:
        raise BadInput(f"no run {run_id} in the store", hint="wb runs list shows the run ids")
    return run


def db_current(*, db: str | None) -> dict[str, Any]:
    from workbench.store import resolve_url
    from workbench.store.engine import Store, current_revision, head_revision

    url, path = resolve_url(db)
    if path is not None and not path.exists():
        raise BadInput(f"no store at {path}", hint=f"create it with: wb db upgrade --db {path}")
    store = Store(url, path, read_only=True)
    try:
        rev = current_revision(store)
    finally:
        store.dispose()
    head = head_revision()
    return {"store": store.name, "revision": rev, "head": head, "is_head": rev == head}


def json_schemas() -> dict[str, Any]:
    from workbench.registry.experiment import Experiment
    from workbench.registry.hypothesis import HypothesesFile

    return {"hypotheses.yaml": HypothesesFile.model_json_schema(),
            "experiments/*.yaml": Experiment.model_json_schema(),
            "evidence CSV": evidence_csv_format()}


def evidence_csv_format() -> dict[str, Any]:
    """The evidence CSV's columns, with each experiment's own when run inside a workbench."""
    from workbench.errors import BadInput
    from workbench.registry import load_registry
    from workbench.registry.evidence_columns import csv_format

    try:
        reg = load_registry()
    except BadInput:
        reg = None
    return csv_format(reg)
