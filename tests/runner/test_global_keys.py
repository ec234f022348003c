"""Snapshots and artifacts are keyed by the execution's UUID, so two stores in one folder never mix them up."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
from pathlib import Path

import pytest

from runner_kit import run_hypothesis, store_rows  # noqa: E402  (tests/runner is on sys.path)


def test_a_second_store_restores_its_own_snapshot_and_leaves_the_firsts_artifacts(toy):
    """Two stores in one folder, one after the other: the second restores the config it found (its own snapshot,
    not the first store's), and the first store's artifacts survive the second's runs, which keep their own. One
    replicate each: neither depends on how many runs an execution makes."""
    db_a, db_b = str(toy.root / "a.duckdb"), str(toy.root / "b.duckdb")
    run_hypothesis("toy-fix", db=db_a, show_progress=False, seed=7, replicates=1, build_report=False)
    before = store_rows(db_a, "SELECT path, sha256 FROM artifacts")
    assert len(before) >= 8
    changed = b"# the operator changed it since\nfix=off\nmode=ok\nseed=7\n"
    toy.conf.write_bytes(changed)
    run_hypothesis("toy-fix", db=db_b, show_progress=False, seed=3, replicates=1, build_report=False)
    assert toy.conf.read_bytes() == changed
    for path, sha in before:
        assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == sha, path
    paths_b = {p for (p,) in store_rows(db_b, "SELECT path FROM artifacts")}
    assert paths_b and not paths_b & {p for p, _ in before}


def test_execution_records_its_uuid_and_its_folder_uses_it(toy):
    metas: list[dict] = []

    async def look(stage, pr):  # the snapshot lives until the target is restored
        if stage == "workload" and not metas:
            metas.extend(json.loads(p.read_text()) for p in (toy.root / ".wb" / "artifacts").glob("*/snapshot.json"))

    run_hypothesis("toy-fix", db=toy.db, show_progress=False, seed=7, replicates=1, build_report=False, fault=look)
    (uid,) = store_rows(toy.db, "SELECT uuid FROM executions")[0]
    assert len(uid) == 32
    folder = toy.root / ".wb" / "artifacts" / f"execution-{uid}"
    assert [m["execution"] for m in metas] == [uid]
    (path,) = store_rows(toy.db, "SELECT path FROM artifacts LIMIT 1")[0]
    assert Path(path).is_relative_to(folder)


async def _sigterm_at_workload(stage, pr):
    if stage == "workload":
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.sleep(5)  # the handler cancels this task before the sleep ends


def test_resume_refuses_a_snapshot_that_is_not_its_own(toy):
    from workbench.errors import RunFailure

    with pytest.raises(RunFailure):
        run_hypothesis("toy-fix", db=toy.db, show_progress=False, seed=7, build_report=False,
                       fault=_sigterm_at_workload)
    # The interrupted runner restored the target and removed its snapshot; one a killed runner would have left,
    # naming another execution (a folder copied over, or altered), is put in its place.
    (folder,) = list((toy.root / ".wb" / "artifacts").glob("execution-*"))
    assert not (folder / "snapshot.json").exists()
    (folder / "snapshot.json").write_text(json.dumps({"execution": "0" * 32, "hosts": {}}))
    toy.conf.write_bytes(b"# unrelated\n")
    with pytest.raises(RunFailure, match="not this execution's own"):
        run_hypothesis("toy-fix", db=toy.db, show_progress=False, resume=True, build_report=False)
    assert toy.conf.read_bytes() == b"# unrelated\n"
