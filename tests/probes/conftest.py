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
