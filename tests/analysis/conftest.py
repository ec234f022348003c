"""Fixtures for the analysis tests: a real DuckDB store and a writer of runner-shaped runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def store(tmp_path: Path):
    from workbench.store import open_store

    s = open_store(str(tmp_path / "wb.duckdb"))
    yield s
    s.dispose()


@pytest.fixture
def registry(workbench_dir: Path):
    from workbench.registry import load_registry

    return load_registry(workbench_dir)
