"""Who ran what: the person and the folder's revision, from real git repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from workbench.team.identity import current_person, provenance


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def _repo(tmp_path: Path, user: str | None) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    if user:
        _git(root, "config", "user.name", user)
    _git(root, "config", "user.email", "x@example.invalid")
    (root / "hypotheses.yaml").write_text("[]\n")
    _git(root, "add", "hypotheses.yaml")
    _git(root, "-c", "user.name=init", "commit", "-qm", "init")
    return root


def test_person_order_flag_env_git_login(tmp_path: Path, monkeypatch):
    root = _repo(tmp_path, "Ada Lovelace")
    monkeypatch.setenv("WB_USER", "grace")
    assert current_person(root, as_name="alan").name == "alan"
    assert current_person(root, as_name="alan").source == "flag"
    assert (current_person(root).name, current_person(root).source) == ("grace", "WB_USER")
    monkeypatch.delenv("WB_USER")
    assert (current_person(root).name, current_person(root).source) == ("Ada Lovelace", "git")
    outside = tmp_path / "plain"
    outside.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    assert current_person(outside).source == "login"


def test_names_with_control_characters_are_cleaned_or_refused(tmp_path: Path, monkeypatch):
    """A name from the environment is cleaned to one printable line; one typed with --as is refused (it was
    recorded with the characters silently dropped: `--as $'eve\\ttab'` became "evetab")."""
    from workbench.errors import BadInput

    monkeypatch.setenv("WB_USER", "eve\n\x1b[31mred")
    person = current_person(tmp_path)
    assert "\n" not in person.name and "\x1b" not in person.name and person.source == "WB_USER"
    with pytest.raises(BadInput, match=r"--as holds control characters \(U\+0009\)"):
        current_person(tmp_path, as_name="eve\ttab")


def test_provenance_records_revision_and_dirty(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("WB_USER", raising=False)
    root = _repo(tmp_path, "Ada")
    clean = provenance(root, wb_version="9.9")
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert clean.git_revision == head and clean.git_dirty is False and clean.wb_version == "9.9"
    (root / "hypotheses.yaml").write_text("[] # changed\n")
    assert provenance(root, wb_version="9.9").git_dirty is True
    outside = tmp_path / "no-git"
    outside.mkdir()
    bare = provenance(outside, wb_version="9.9")
    assert bare.git_revision is None and bare.git_dirty is None
