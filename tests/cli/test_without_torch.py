"""torch is optional (the `sim` extra): without it, a local target runs end to end, and what needs torch (pdsim,
the kernel) is refused up front with one `Error:` and exit 2, nothing run or written.

The processes run with an import hook (sitecustomize on PYTHONPATH, inherited by every child) that makes
`import torch` fail exactly as on a machine where it is not installed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a real local service is run through wb (tests/conftest.py runs these first)

REPO = Path(__file__).resolve().parents[2]
NO_TORCH = '''
import sys


class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
        return None


sys.meta_path.insert(0, _NoTorch())
'''


@pytest.fixture
def no_torch_env(tmp_path: Path) -> dict[str, str]:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(NO_TORCH)
    env = {k: v for k, v in os.environ.items() if k not in ("WB_DB", "WB_ROOT")}
    env["PYTHONPATH"] = os.pathsep.join([str(hook), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["WB_SIM_DIR"] = str(tmp_path / "sim")
    return env


def _wb(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench.cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_hook_really_hides_torch(no_torch_env, tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-c", "import torch"], env=no_torch_env, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode != 0 and "No module named 'torch'" in res.stderr


def test_a_local_target_runs_without_torch(no_torch_env, tmp_path: Path) -> None:
    kv = tmp_path / "kvcache"
    shutil.copytree(REPO / "examples" / "kvcache", kv)
    try:
        res = _wb(["hypothesis", "run", "compression-stale", "--replicates", "1", "--seed", "1", "--no-report"],
                  kv, no_torch_env)
        assert res.returncode == 0, res.stderr
        assert "verdict: " in res.stdout and "Traceback" not in res.stderr
    finally:
        pid_file = kv / "kv.pid"
        if pid_file.is_file():  # the restore leaves the operator's server serving: stop the one started here
            try:
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGTERM)
            except (ProcessLookupError, ValueError):
                pass


@pytest.mark.parametrize("args,what", [
    (["hypothesis", "run", "wedge-confound", "--replicates", "1"], "pdsim"),
    (["hypothesis", "run", "token-granular-geometry", "--replicates", "1"], "kernel target"),
    (["sim", "up"], "pdsim"),
    (["kernel", "check", "--quick"], "wb kernel check"),
])
def test_what_needs_torch_is_refused_up_front(no_torch_env, workbench_dir: Path, args: list[str], what: str) -> None:
    res = _wb(args, workbench_dir, no_torch_env)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stderr.startswith("Error: ") and what in res.stderr and "needs torch" in res.stderr, res.stderr
    assert "download.pytorch.org/whl/cpu" in res.stderr and "Traceback" not in res.stderr
    assert not (workbench_dir / "wb.duckdb").exists()
    assert not (Path(no_torch_env["WB_SIM_DIR"]) / "logs").exists()
