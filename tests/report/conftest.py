"""A store filled like a pdsim session leaves it (seed lineage) and the site built from it, shared by the tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # noqa: E402


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """{root, db, registry, ids, store} for a workbench with the seed lineage and stored runs."""
    from workbench.registry import load_registry
    from workbench.store import open_store

    base = tmp_path_factory.mktemp("seeded")
    root = synth.copy_workbench(base / "wb")
    registry = load_registry(root)
    db = base / "wb.duckdb"
    store = open_store(str(db))
    try:
        with store.session() as session:
            ids = synth.seed_store(session, registry, root / ".wb" / "artifacts" / "seed")
    finally:
        store.dispose()
    return {"root": root, "db": db, "registry": registry, "ids": ids, "base": base}


@pytest.fixture
def seed_site(tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch, workbench_dir: Path) -> Path:
    """The shipped workbench (WB_ROOT, WB_DB) with the seed's evidence imported through the CLI, wedge-confound
    analysed, and the site built: the site's folder."""
    monkeypatch.setenv("WB_ROOT", str(workbench_dir))
    monkeypatch.setenv("WB_DB", str(tmp_path / "wb.duckdb"))
    site = tmp_path / "site"
    for args in (("import", "evidence", str(Path(__file__).resolve().parents[2] / "evidence" / "seed-runs.csv")),
                 ("hypothesis", "analyze", "wedge-confound"), ("report", "--out", str(site))):
        code, _, err = cli(*args)
        assert code == 0, err
    return site


@pytest.fixture(scope="session")
def cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the chart runtime is cached during the tests (never the user's ~/.cache)."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def _private_cache(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))


@pytest.fixture(scope="session")
def site(seeded: dict[str, Any], cache_home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The site built once from the seeded store: build_site's result plus `out`."""
    from workbench.report import build_site
    from workbench.store import open_store

    out = tmp_path_factory.mktemp("site") / "reports"
    store = open_store(str(seeded["db"]), read_only=True)
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache_home)
    try:
        result = build_site(store, seeded["registry"], out)
    finally:
        store.dispose()
        if saved is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = saved
    assert (cache_home / "wb").is_dir()
    return {**result, "out": out}


@pytest.fixture(scope="session")
def rich(tmp_path_factory: pytest.TempPathFactory, cache_home: Path) -> dict[str, Any]:
    """A store with every verdict state on the board (invalid included), imported seed evidence (provenance,
    runs without units) and a DSML tool call in a log; and the site built from it:
    {root, db, registry, ids, out, site}."""
    from workbench.app import Workbench
    from workbench.registry import load_registry
    from workbench.report import build_site
    from workbench.store import open_store, records

    base = tmp_path_factory.mktemp("rich")
    root = synth.copy_workbench(base / "wb")
    registry = load_registry(root)
    db = base / "wb.duckdb"
    store = open_store(str(db))
    try:
        with store.session() as session:
            # Logs under the workbench's artifact root: the report embeds only artifacts found there.
            logs = root / ".wb" / "artifacts" / "rich"
            ids = synth.seed_store(session, registry, logs)
            ids["dsml"] = synth.add_ab_execution(
                session, registry, "token-granular-geometry-deployment", art_dir=logs, replicates=1,
                leak_rate={"control": 0.3, "treatment": 0.3}, seed=9,
                log_lines=[f"[decode] tool call: {synth.DSML_CALL}"])
            # The over-commit as its run shows it: errors in the control arm only, leaks in both.
            ids["overcommit"] = synth.add_ab_execution(
                session, registry, "pool-configurator-overcommit", art_dir=logs, replicates=1,
                errors={"control": 30}, leak_rate={"control": 0.2, "treatment": 0.2}, seed=11, verdict="inconclusive",
                reasoning="one replicate: 0/80 errors cannot support error_rate <= 0.02")
            for hid, verdict in (("live-hostpool-control", "supported"), ("dead-code-hicache-off", "inconclusive"),
                                 ("token-granular-geometry", "invalid")):
                records.add_verdict(session, hypothesis_id=hid, verdict=verdict,
                                    reasoning=f"the test store says {verdict}")
    finally:
        store.dispose()
    from workbench.settings import Settings

    Workbench.open(Settings(db=str(db), root=root)).import_evidence(synth.REPO / "evidence" / "seed-runs.csv")
    out = base / "reports"
    store = open_store(str(db), read_only=True)
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache_home)
    try:
        result = build_site(store, registry, out)
    finally:
        store.dispose()
        if saved is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = saved
    return {"root": root, "db": db, "registry": registry, "ids": ids, "out": out, "site": result}
