"""`wb isolate` on an ssh profile (a real SSH server on loopback): a profile this machine cannot use is bad input."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli.main import app

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "runner"))

from sshserver import SshServer  # noqa: E402

SEARCH = ["isolate", "--experiment", "agent-repro", "--good", "geometry_fix=on", "--bad", "geometry_fix=off",
          "--metric", "corruption_rate", "--region", ">= 0.05", "--target", "sim-ssh", "--seed", "3"]


@pytest.fixture
def ssh_server(tmp_path: Path):
    server = SshServer(tmp_path / "ssh").start()
    yield server
    server.stop()


def _ssh_profile(bench, server: SshServer, **target: str) -> Path:
    """The shipped sim-ssh profile aimed at the loopback server, with `target`'s keys (None: left out)."""
    p = bench.root / "experiments" / "agent-repro.yaml"
    head, _, ssh = p.read_text().partition("  sim-ssh:\n")
    keys = {"user": server.user, "port": str(server.port), "known_hosts": str(server.known_hosts),
            "identity_file": str(server.client_key_path), **target}
    lines = "".join(f"\n      {k}: {v}" for k, v in keys.items() if v is not None)
    ssh = ssh.replace("hosts: [localhost]", "hosts: [127.0.0.1]" + lines).replace(
        "sim_dir: /tmp/wb-sim", f"sim_dir: {bench.sim_dir}")
    p.write_text(head + "  sim-ssh:\n" + ssh)
    return p


def _line(path: Path, key: str, after: str = "  sim-ssh:") -> int:
    lines = path.read_text().splitlines()
    start = lines.index(after)
    return next(i + 1 for i, line in enumerate(lines) if i > start and line.strip().startswith(f"{key}:"))


@pytest.mark.parametrize("case", ["missing", "a folder", "not text", "default, no ~/.ssh", "identity missing"])
def test_an_ssh_profile_this_machine_cannot_use_is_bad_input_and_records_nothing(bench, ssh_server, tmp_path,
                                                                                 monkeypatch, case):
    """A profile whose known_hosts file is missing or unreadable ended, once the first probe tried to connect, in
    exit 1 and an empty search recorded as "interrupted" (with a resume command for it), the probe's execution
    recorded as failed. Found before any probe, it is one `Error:` naming the experiment file's line and the
    profile, exit 2, no store written, the SSH server never reached."""
    kh = tmp_path / "known_hosts"
    if case == "a folder":
        kh.mkdir()
    elif case == "not text":
        kh.write_bytes(b"\xff\xfe\x00 not a known_hosts file\n")
    target = {"known_hosts": str(kh)}
    if case == "default, no ~/.ssh":
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        target = {"known_hosts": None}
    elif case == "identity missing":
        target = {"identity_file": str(tmp_path / "id_gone")}
    path = _ssh_profile(bench, ssh_server, **target)
    key = {"default, no ~/.ssh": "target", "identity missing": "identity_file"}.get(case, "known_hosts")
    line = _line(path, key)
    res = CliRunner().invoke(app, SEARCH + ["--db", bench.db])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and res.output.count("Error:") == 1, res.output
    error = res.output.split("Error: ", 1)[1]
    assert error.startswith(f"{path}:{line} (field profiles.sim-ssh.target"), error
    assert "profile 'sim-ssh': " in error, error
    assert {"identity missing": "identity_file", "a folder": "is not a file", "not text": "cannot read"}.get(
        case, "does not exist") in error, error
    assert "resume" not in res.output, res.output  # there is nothing to resume
    assert not Path(bench.db).exists()
    assert ssh_server.commands == [] and ssh_server.conns == []
    assert (bench.sim_dir / "serve.sh").read_bytes() == bench.original
