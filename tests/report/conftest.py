"""A store filled like a pdsim session leaves it (seed lineage) and the site built from it, shared by the tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # noqa: E402

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """{root, db, registry, ids, store} for a workbench with the seed lineage and stored runs."""
    from workbench.registry import load_registry
    from workbench.store import open_store

    base = tmp_path_factory.mktemp("seeded")
    root = synth.copy_workbench(base / "wb")
    registry = load_registry(root)
    db = base / "wb.duckdb"
    store = open_store(str(db))
    try:
        with store.session() as session:
            ids = synth.seed_store(session, registry, base / "logs")
    finally:
        store.dispose()
    return {"root": root, "db": db, "registry": registry, "ids": ids, "base": base}


@pytest.fixture(scope="session")
def site(seeded: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The site built once from the seeded store: build_site's result plus `out`."""
    from workbench.report import build_site
    from workbench.store import open_store

    out = tmp_path_factory.mktemp("site") / "reports"
    store = open_store(str(seeded["db"]), read_only=True)
    try:
        result = build_site(store, seeded["registry"], out)
    finally:
        store.dispose()
    return {**result, "out": out}
