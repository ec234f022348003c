"""Fixtures for the analysis tests: a real DuckDB store (tests/conftest.py) and a writer of runner-shaped runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def registry(workbench_dir: Path):
    from workbench.registry import load_registry

    return load_registry(workbench_dir)
