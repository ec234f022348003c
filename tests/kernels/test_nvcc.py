"""The CUDA source compiles for sm_90 wherever nvcc is on PATH (no GPU needed)."""

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # end to end: runs first (tests/conftest.py)

SRC = Path(__file__).resolve().parents[2] / "kernels" / "cuda" / "transfer.cu"


# The kernel's own file is compiled whole (front end, PTX, ptxas to sm_90 SASS, the host object); the
# other two stop at PTX: the front end still parses and checks all of their code, host code included,
# and what is skipped, host compilation of cub's headers and ptxas, was two thirds of their CPU time.
COMPILES = {"transfer.cu": ["-c", "-arch=sm_90"], "order.cu": ["-ptx", "-arch=sm_90"],
            "rowprobe.cu": ["-ptx", "-arch=sm_90"]}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("name", sorted(COMPILES))
def test_cuda_sources_compile_for_sm90(tmp_path, name):
    out = tmp_path / "out"
    proc = subprocess.run(["nvcc", "-std=c++17", *COMPILES[name], str(SRC.parent / name), "-o", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 0


def test_gpu_script_parses():
    script = SRC.parents[1] / "gpu_check.sh"
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
