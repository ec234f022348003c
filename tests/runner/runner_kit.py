"""Helpers the runner tests import (kept out of conftest.py, whose module name is shared by every test folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def add_toy_ssh_profile(toy: Any, server, *, known_hosts: str | None = None, port: int | None = None) -> None:
    """The toy's local profile again, as an ssh target on the test server."""
    p = toy.root / "experiments" / "toy.yaml"
    text = p.read_text()
    local = text[text.index("  local:\n"):]
    ssh = local.replace("  local:\n", "  ssh:\n", 1).replace(
        "    target: {kind: local}",
        f"    target: {{kind: ssh, hosts: [127.0.0.1], user: {server.user}, port: {port or server.port}, "
        f"known_hosts: {known_hosts or server.known_hosts}, identity_file: {server.client_key_path}, "
        f"connect_timeout_s: 3}}").replace(
        "    options: {check_restart: false}", f"    options: {{check_restart: false, work_dir: {toy.state}/remote}}")
    p.write_text(text + ssh)


def edit_profile(root: Path, old: str, new: str, experiment: str = "toy") -> None:
    p = root / "experiments" / f"{experiment}.yaml"
    text = p.read_text()
    assert old in text, old
    p.write_text(text.replace(old, new))
