"""Fixtures shared by every test area: a copy of the shipped workbench folder, a pdsim bench and a CLI runner."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

# pytest rewrites each test module's asserts as it imports it, and caches the result as a .pyc only where
# bytecode may be written: with PYTHONDONTWRITEBYTECODE set (as on many CI machines) every worker rewrote all
# the test modules anew on every run, over half of collection's CPU. The cache goes in tests/__pycache__.
sys.dont_write_bytecode = False

# torch's CPU ops spread over one OpenMP thread per core, and a waiting thread spins: with six workers on two
# cores every copy of the kernel's reference fought the others for the cores (`wb kernel check --quick`: 10 CPU-s
# with them, 3.6 with one; the bytes compared are the same). pdsim's servers already take one (sim/hicache.py).
# Set before any test imports torch; children (wb, pdsim) inherit it. A value given outside is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]
SEED_CSV = REPO / "evidence" / "seed-runs.csv"  # shipped in the repository: the README's tour imports it


def _build_once() -> None:
    """typer's test runner builds the whole click command tree from the app's signatures on every invoke (~60 ms
    of CPU: every command's type hints evaluated again); in-process tests invoke wb over a thousand times. The
    tree is built from static declarations, so one per app and process serves every invoke."""
    import typer.testing

    built: dict[int, tuple[object, object]] = {}
    build = typer.testing._get_command

    def get_command(app):
        if id(app) not in built:
            built[id(app)] = (app, build(app))   # the app is kept, so its id is never reused
        return built[id(app)][1]

    typer.testing._get_command = get_command


_build_once()


def _has_cuda() -> bool:
    """Whether torch sees a CUDA GPU. Without a device node of NVIDIA's driver (WSL's /dev/dxg) there is none,
    and torch is not imported to say so: every worker process decides this, and torch's import is ~2 s of CPU."""
    if not any(Path(node).exists() for node in ("/dev/nvidiactl", "/dev/dxg")):
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def pytest_configure(config):
    """Tests Ctrl-C the wb processes they start. A shell starting pytest in the background without job control
    (`pytest &` in a script) leaves SIGINT ignored, every process started after inherits that, and Python
    then installs no KeyboardInterrupt: such a test would wait for a wb that can never be interrupted. A
    handled signal returns to its default in a started program, so handling it here gives every child its
    default Ctrl-C again."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    _slow_files_first(items)
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def _slow_files_first(items) -> None:
    """Files holding a test marked slow run first, the longest (`slow(longest=True)`) before them. The
    workers take a file at a time in collection order (--dist loadfile --no-loadscope-reorder): a long file
    left for last keeps one worker busy while the others idle. The sort is stable, so each file stays
    whole and in its own order."""
    def rank(path) -> int:
        marks = [m for item in by_path[path] for m in item.iter_markers("slow")]
        return 0 if any(m.kwargs.get("longest") for m in marks) else 1 if marks else 2

    by_path: dict = {}
    for item in items:
        by_path.setdefault(item.path, []).append(item)
    ranks = {path: rank(path) for path in by_path}
    items.sort(key=lambda item: ranks[item.path])


@pytest.fixture
def workbench_dir(tmp_path: Path) -> Path:
    """A private copy of the shipped hypotheses.yaml and experiments/ to mutate."""
    root = tmp_path / "wbroot"
    root.mkdir()
    shutil.copy(REPO / "hypotheses.yaml", root / "hypotheses.yaml")
    shutil.copytree(REPO / "experiments", root / "experiments")
    return root


@pytest.fixture
def seed_csv() -> Path:
    assert SEED_CSV.is_file(), f"{SEED_CSV} is missing"
    return SEED_CSV


@pytest.fixture
def cli():
    """Invoke `wb` in-process; returns (exit_code, stdout, stderr)."""
    from typer.testing import CliRunner

    from workbench.cli.main import app

    runner = CliRunner()

    def invoke(*args: str, env: dict[str, str] | None = None):
        result = runner.invoke(app, list(args), env=env, catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return invoke


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server for the team-store tests, started once per session and always stopped."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pgserver

    if pgserver.pg_bindir() is None:
        pytest.skip("no PostgreSQL server binaries (scripts/setup.sh --test installs them)")
    server = pgserver.start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server) -> str:
    """A fresh, empty database on the shared test server."""
    return pg_server.create_database()


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The shipped hypotheses and experiments in a throwaway folder (WB_ROOT), and an operator's serve file
    (not running) in WB_SIM_DIR on free ports; `bench.serve()` reads it back; pdsim is stopped after."""
    from workbench.sim import control
    from workbench.sim.config import render_serve_file

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
    yield type("Bench", (), {"root": root, "sim_dir": sim_dir, "original": original, "db": str(root / "wb.duckdb"),
                             "serve": staticmethod(lambda: (sim_dir / "serve.sh").read_bytes())})
    control.down(sim_dir)


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
