"""Host keys are verified whatever ~/.ssh/config says; a missing known_hosts file is named as such."""

from __future__ import annotations

from pathlib import Path

import pytest
from runner_kit import add_toy_ssh_profile, edit_profile

from workbench.errors import TargetError
from runner_kit import run_hypothesis  # noqa: E402  (tests/runner is on sys.path)


def _without_known_hosts(toy, ssh_server) -> None:
    add_toy_ssh_profile(toy, ssh_server)
    edit_profile(toy.root, f"known_hosts: {ssh_server.known_hosts}, ", "")


def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, known_hosts: bool) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text("Host *\n  UserKnownHostsFile none\n  StrictHostKeyChecking no\n")
    if known_hosts:
        (home / ".ssh" / "known_hosts").write_text("")
    monkeypatch.setenv("HOME", str(home))
    return home


def test_ssh_config_cannot_switch_host_key_checking_off(toy, ssh_server, tmp_path, monkeypatch):
    _without_known_hosts(toy, ssh_server)
    _home(tmp_path, monkeypatch, known_hosts=True)
    with pytest.raises(TargetError, match="host key"):
        run_hypothesis("toy-fix", db=toy.db, target="ssh", show_progress=False, build_report=False)
    assert not ssh_server.commands  # nothing ran on the unverified host
    assert toy.conf.read_bytes() == toy.original


def test_missing_known_hosts_file_is_named_not_cannot_reach(toy, ssh_server, tmp_path, monkeypatch):
    _without_known_hosts(toy, ssh_server)
    home = _home(tmp_path, monkeypatch, known_hosts=False)
    with pytest.raises(TargetError) as exc:
        run_hypothesis("toy-fix", db=toy.db, target="ssh", show_progress=False, build_report=False)
    assert f"known_hosts file {home}/.ssh/known_hosts does not exist" in exc.value.message
    assert "cannot reach" not in exc.value.message
    assert not ssh_server.commands
