"""Fixtures for probe tests: a throwaway package of target code and a function that starts probed Python processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workbench.probes import probe_environment

TARGET_MODULE = '''
"""Code the tests probe: a function, a class with and without __init__, methods of every kind."""
import time


def add(x, y):
    return x + y


class Pool:
    def __init__(self, size):
        self.size = size

    def grow(self, n):
        self.size += n
        return self.size

    @staticmethod
    def kind():
        return "pool"

    @classmethod
    def make(cls):
        return cls(1)


class Plain:
    pass


class SubPool(Pool):
    pass


def never():
    return "never called"
'''

LATE_MODULE = '''
def late():
    return "late"
'''


@pytest.fixture
def target_pkg(tmp_path: Path) -> Path:
    """A folder holding package `probepkg` (modules `mod` and `latemod`), to put on PYTHONPATH."""
    root = tmp_path / "src"
    pkg = root / "probepkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(TARGET_MODULE)
    (pkg / "latemod.py").write_text(LATE_MODULE)
    return root


@pytest.fixture
def probed(tmp_path: Path, target_pkg: Path):
    """Start `python -c CODE` with the probe environment; returns (Popen, out_dir)."""
    procs: list[subprocess.Popen] = []

    def start(code: str, targets: list[str], *, python: str = sys.executable, interval: float = 0.2,
              extra_env: dict[str, str] | None = None, extra_path: list[str] | None = None,
              out: Path | None = None) -> tuple[subprocess.Popen, Path]:
        out_dir = out or tmp_path / f"counts{len(procs)}"
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        env.update(probe_environment(targets, str(out_dir), interval_s=interval,
                                     base_pythonpath=os.pathsep.join([str(target_pkg), *(extra_path or [])])))
        env.update(extra_env or {})
        p = subprocess.Popen([python, "-c", textwrap.dedent(code)], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(p)
        return p, out_dir

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)
        for stream in (p.stdin, p.stdout, p.stderr):
            if stream:
                stream.close()


def by_target(rows: list[dict]) -> dict[str, dict]:
    return {r["target"]: r for r in rows}


def read_line(p: subprocess.Popen, timeout: float = 60) -> str:
    """The child's next stdout line; kills it and fails if none comes within `timeout` seconds."""
    import threading

    box: list[str] = []
    t = threading.Thread(target=lambda: box.append(p.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    if not box:
        p.kill()
        t.join(10)
        pytest.fail(f"no line from pid {p.pid} within {timeout}s")
    return box[0].strip()


def finish(p: subprocess.Popen, timeout: float = 60) -> tuple[str, str]:
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"exit {p.returncode}: {err}"
    return out, err


def other_pythons() -> list[str]:
    """Interpreters besides this one that can run the stdlib-only probe (3.12+ exercises sys.monitoring)."""
    found = []
    for ver in ("3.12", "3.13"):
        for cand in (f"/usr/bin/python{ver}", f"/usr/local/bin/python{ver}"):
            if os.access(cand, os.X_OK):
                found.append(cand)
                break
        else:
            pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
            for d in sorted(pyenv.glob(f"{ver}.*")) if pyenv.is_dir() else []:
                if os.access(d / "bin" / "python", os.X_OK):
                    found.append(str(d / "bin" / "python"))
                    break
    return found
