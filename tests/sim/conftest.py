"""Fixtures for the embedded deployment's tests: a private state dir that is always brought down.
(test_determinism.py starts its own CPU and disk stressors.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.sim import control


@pytest.fixture
def sim_dir(tmp_path: Path):
    """A state dir whose deployment is always brought down, whatever the test did."""
    d = tmp_path / "sim"
    d.mkdir()
    yield d
    control.down(d)

