"""The pdsim bench the isolate tests share: a private workbench copy and sim folder, pdsim stopped afterwards."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from workbench.sim import control
from workbench.sim.config import render_serve_file

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "bench"
    shutil.copytree(REPO / "experiments", root / "experiments")
    shutil.copy(REPO / "hypotheses.yaml", root / "hypotheses.yaml")
    sim_dir = tmp_path / "sim"
    sim_dir.mkdir()
    original = render_serve_file(control.free_ports()).encode()
    (sim_dir / "serve.sh").write_bytes(original)
    monkeypatch.setenv("WB_ROOT", str(root))
    monkeypatch.setenv("WB_SIM_DIR", str(sim_dir))
    monkeypatch.delenv("WB_FAULT", raising=False)
    yield type("Bench", (), {"root": root, "sim_dir": sim_dir, "original": original, "db": str(root / "wb.duckdb")})
    control.down(sim_dir)
