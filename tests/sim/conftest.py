"""Fixtures for the embedded deployment's tests: a private state dir that is always brought down,
and CPU + disk stressors beside a test module."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.sim import control
from workbench.sim.stress import Stress


@pytest.fixture
def sim_dir(tmp_path: Path):
    """A state dir whose deployment is always brought down, whatever the test did."""
    d = tmp_path / "sim"
    d.mkdir()
    yield d
    control.down(d)


@pytest.fixture(scope="module")
def stress(tmp_path_factory):
    """2 CPU loops and 1 writer of 200 MB fsyncing in a loop, for the whole module; always stopped
    by pid. pdsim's outcomes must not change under them."""
    with Stress(cpu=2, writers=1, mb=200, dir=tmp_path_factory.mktemp("stress")) as s:
        yield s
