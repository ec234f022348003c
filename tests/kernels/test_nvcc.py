"""The CUDA source compiles for sm_90 wherever nvcc is on PATH (no GPU needed)."""

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # end to end: runs first (tests/conftest.py)

SRC = Path(__file__).resolve().parents[2] / "kernels" / "cuda" / "transfer.cu"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("name", ["transfer.cu", "order.cu"])
def test_cuda_sources_compile_for_sm90(tmp_path, name):
    proc = subprocess.run(
        ["nvcc", "-c", "-std=c++17", "-arch=sm_90", str(SRC.parent / name), "-o",
         str(tmp_path / "t.o")],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "t.o").stat().st_size > 0


def test_gpu_script_parses():
    script = SRC.parents[1] / "gpu_check.sh"
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_rowprobe_cu_compiles_for_sm90(tmp_path):
    """The random-row ceiling probe (plain nvcc, no torch) builds as gpu_check.sh builds it."""
    probe = SRC.parent / "rowprobe.cu"
    proc = subprocess.run(
        ["nvcc", "-c", "-std=c++17", "-gencode=arch=compute_90,code=sm_90", str(probe),
         "-o", str(tmp_path / "p.o")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
