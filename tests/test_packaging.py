"""Packaging: the explicit package list names every package, and the data a store needs ships inside."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _config() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_is_listed():
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "workbench").rglob("__init__.py")}
    listed = set(_config()["packages"])
    assert found - listed == set(), "packages missing from pyproject.toml"
    data = {"workbench.migrations", "workbench.migrations.versions", "workbench.report.templates",
            "workbench.report.static", "wb_kernels.cuda"}  # folders of data files, listed for setuptools
    assert listed - found == {"wb_kernels"} | data


def test_kernels_install_under_their_own_name():
    cfg = _config()
    assert cfg["package-dir"] == {"wb_kernels": "kernels"}
    assert "kernels" not in cfg["packages"]


def test_migrations_live_inside_the_package():
    from workbench.store.engine import MIGRATIONS_DIR

    assert MIGRATIONS_DIR.is_relative_to(REPO / "workbench")
    assert (MIGRATIONS_DIR / "env.py").is_file() and list((MIGRATIONS_DIR / "versions").glob("0*.py"))
    cfg = _config()
    assert {"workbench.migrations", "workbench.migrations.versions"} <= set(cfg["packages"])
    assert {"alembic.ini", "script.py.mako"} <= set(cfg["package-data"]["workbench.migrations"])
