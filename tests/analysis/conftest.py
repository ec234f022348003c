"""Fixtures for the analysis tests: a real DuckDB store and a writer of runner-shaped runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def _empty_store(tmp_path_factory) -> Path:
    """One migrated empty store; each test gets a copy (migrating per test would dominate the run time)."""
    from workbench.store import open_store

    path = tmp_path_factory.mktemp("template") / "empty.duckdb"
    open_store(str(path)).dispose()
    return path


@pytest.fixture
def store(tmp_path: Path, _empty_store: Path):
    import shutil

    from workbench.store import open_store

    shutil.copy(_empty_store, tmp_path / "wb.duckdb")
    # Held open for the test, as a wb command holds its store: each session then reuses the open database,
    # where opening the file afresh for every run a test writes cost ~20 ms of CPU a session.
    s = open_store(str(tmp_path / "wb.duckdb"), held=True)
    yield s
    s.dispose()


@pytest.fixture
def registry(workbench_dir: Path):
    from workbench.registry import load_registry

    return load_registry(workbench_dir)
