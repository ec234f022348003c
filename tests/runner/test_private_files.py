"""What a runner keeps on disk for a crash: the target's saved original (which the restore must put back byte for
byte, a token in it included) is readable by its owner only and removed once restored; a run's journal (its
outcome before the store has it) is masked and readable by its owner only."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from runner_kit import edit_profile, run_hypothesis, store_rows
from test_durability import WB, _hold, _journal, _until

from workbench import secrets

TOKEN = "hf_abcdefghijklmnopqrstuvwxyz0123"
PW = "Sup3r-S3cret-77"
ORIGINAL = f"# the operator's own serve file\nfix=off\nmode=ok\nHF_TOKEN={TOKEN}\n".encode()


@pytest.fixture(autouse=True)
def _umask_and_secrets():
    secrets.clear()
    old = os.umask(0o022)  # the usual one: files are world-readable unless made otherwise
    yield
    os.umask(old)
    secrets.clear()


def _saved(toy) -> list[Path]:
    return [p for p in (toy.root / ".wb" / "artifacts").glob("execution-*/*")
            if p.name.startswith("original-") or p.name == "snapshot.json"]


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_the_saved_original_is_private_while_it_is_needed_and_removed_once_restored(toy):
    """The snapshot's copy of the original config (here with an HF token in it) was written 0644 and kept in
    .wb/artifacts for good after every successful restore: the token stayed on disk, readable by anyone."""
    toy.conf.write_bytes(ORIGINAL)
    seen: dict[str, object] = {}

    async def look(stage: str, pr: object) -> None:
        if stage == "workload" and not seen:
            seen.update({p.name: _mode(p) for p in _saved(toy)})
            seen["copies"] = [p.read_bytes() for p in _saved(toy) if p.name.startswith("original-")]

    summary = run_hypothesis("toy-fix", db=toy.db, replicates=1, fault=look)
    assert [r["status"] for r in summary["runs"]] == ["ok", "ok"]
    assert seen.pop("copies") == [ORIGINAL]  # what the restore needs: the original, token and all
    assert len(seen) == 2 and set(seen.values()) == {0o600}, seen
    assert toy.conf.read_bytes() == ORIGINAL
    assert _saved(toy) == []
    for p in (toy.root / ".wb").rglob("*"):
        assert not p.is_file() or TOKEN.encode() not in p.read_bytes(), p
    assert TOKEN.encode() not in Path(toy.db).read_bytes()


def test_a_journal_left_by_kill_9_is_masked_private_and_the_resume_stores_no_secret(toy):
    """A run's journal (the outcome a kill -9 between the run's end and its commit would lose) held the rendered
    config as the runner had it, a secret variable's value in it, in a file of mode 0644 that stays on disk until
    a resume replays it. The saved original outlives the kill (the resume restores from it) and is removed once
    the resume has restored the target; nothing secret reaches the store."""
    toy.conf.write_bytes(ORIGINAL)
    edit_profile(toy.root, "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n",
                 "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n"
                 f"  db_password: {{secret: true, default: {PW}}}\n")
    edit_profile(toy.root, "        mode={{ mode }}\n", "        mode={{ mode }}\n        dsn='{{ db_password }}'\n")
    proc = subprocess.Popen(WB + ["hypothesis", "run", "toy-fix", "--db", toy.db, "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "WB_DB_LOCK_WAIT": "1"})
    try:
        _until(lambda: len(toy.restarts()) >= 1, proc)
        conn = _hold(toy.db)
        try:
            _until(lambda: bool(_journal(toy)), proc)  # a run ended while the store was held
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        finally:
            conn.close()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
    (journal,) = _journal(toy)
    assert _mode(journal) == 0o600
    body = json.loads(journal.read_text())
    assert "dsn='<redacted>'" in body["rendered_config"], body["rendered_config"]
    assert PW not in journal.read_text()
    assert sorted(_mode(p) for p in _saved(toy)) == [0o600, 0o600]  # the dead runner's: needed to restore

    res = subprocess.run(WB + ["hypothesis", "run", "toy-fix", "--db", toy.db, "--resume", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert toy.conf.read_bytes() == ORIGINAL
    assert not _journal(toy) and _saved(toy) == []
    configs = [c for (c,) in store_rows(toy.db, "SELECT rendered_config FROM runs WHERE rendered_config IS NOT NULL")]
    assert configs and all("dsn='<redacted>'" in c for c in configs), configs
    for secret in (PW, TOKEN):
        assert secret.encode() not in Path(toy.db).read_bytes()
