"""Host keys are verified whatever ~/.ssh/config says; a missing known_hosts file is named as such."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from runner_kit import add_toy_ssh_profile, edit_profile

from workbench.errors import ConfigError, TargetError
from workbench.runner.lock import TargetRefused
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
    with pytest.raises(TargetRefused, match="host key") as ei:  # nothing on the host changed: exit 2
        run_hypothesis("toy-fix", db=toy.db, target="ssh", show_progress=False, build_report=False)
    assert ei.value.exit_code == 2
    assert f"{tmp_path}/home/.ssh/known_hosts holds no host key" in ei.value.message  # the file consulted
    assert not ssh_server.commands  # nothing ran on the unverified host
    assert toy.conf.read_bytes() == toy.original


def test_missing_known_hosts_file_is_named_not_cannot_reach(toy, ssh_server, tmp_path, monkeypatch):
    _without_known_hosts(toy, ssh_server)
    home = _home(tmp_path, monkeypatch, known_hosts=False)
    with pytest.raises(ConfigError) as exc:  # bad input at the profile's target, exit 2: nothing is recorded
        run_hypothesis("toy-fix", db=toy.db, target="ssh", show_progress=False, build_report=False)
    assert f"known_hosts file {home}/.ssh/known_hosts does not exist" in exc.value.message
    assert "cannot reach" not in exc.value.message
    assert exc.value.field == "field profiles.ssh.target" and exc.value.exit_code == 2
    assert not ssh_server.commands and not Path(toy.db).exists()


def test_jump_host_from_ssh_config_is_verified_too(toy, ssh_server, tmp_path, monkeypatch):
    """A ProxyJump that ~/.ssh/config names for the host is a connection of wb's as well: its key is checked
    against the profile's known_hosts, even where the config switches checking off."""
    from sshserver import SshServer

    jump = SshServer(tmp_path / "jump").start()  # its key is in no known_hosts file wb reads
    jump.client_key = ssh_server.client_key
    try:
        add_toy_ssh_profile(toy, ssh_server)
        edit_profile(toy.root, "hosts: [127.0.0.1]", "hosts: [deploy-host]")
        home = _home(tmp_path, monkeypatch, known_hosts=True)
        (home / ".ssh" / "config").write_text(
            f"Host deploy-host\n  HostName 127.0.0.1\n  ProxyJump {ssh_server.user}@127.0.0.1:{jump.port}\n"
            f"Host *\n  IdentityFile {ssh_server.client_key_path}\n  UserKnownHostsFile none\n"
            f"  StrictHostKeyChecking no\n")
        with pytest.raises(TargetRefused) as ei:
            run_hypothesis("toy-fix", db=toy.db, target="ssh", show_progress=False, build_report=False)
        assert (f"refusing jump host {ssh_server.user}@127.0.0.1:{jump.port}: {ssh_server.known_hosts} holds no "
                "host key") in ei.value.message
        assert not ssh_server.commands and not jump.commands  # nothing ran through the unverified jump host
        assert toy.conf.read_bytes() == toy.original
    finally:
        jump.stop()


@pytest.mark.skipif(shutil.which("ssh") is None, reason="runs the printed command with OpenSSH's client")
def test_a_printed_restore_command_checks_the_jump_hosts_key_as_wb_does(toy, ssh_server, tmp_path):
    """The commands a failed restore prints reach the host through the profile's jump host with the profile's
    known_hosts and key for that hop too (ssh -J checked the jump host against ~/.ssh/known_hosts, under
    ~/.ssh/config's StrictHostKeyChecking, and without the key: 'Host key verification failed.')."""
    from sshserver import SshServer

    from workbench.registry.experiment import TargetSpec
    from workbench.runner.targets.ssh import SshTarget

    jump = SshServer(tmp_path / "jump").start()
    jump.client_key = ssh_server.client_key
    try:
        kh = tmp_path / "known_hosts"
        kh.write_text(ssh_server.known_hosts.read_text() + jump.known_hosts.read_text())
        spec = TargetSpec(kind="ssh", hosts=["127.0.0.1"], user=ssh_server.user, port=ssh_server.port,
                          known_hosts=str(kh), identity_file=str(ssh_server.client_key_path),
                          jump=f"{ssh_server.user}@127.0.0.1:{jump.port}")
        printed = SshTarget(spec).manual_command("127.0.0.1", "echo restored by hand")
        res = subprocess.run(printed + " </dev/null", shell=True, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, (printed, res.stderr)
        assert res.stdout == "restored by hand\n" and "echo restored by hand" in ssh_server.commands
        assert "-o StrictHostKeyChecking=yes" in printed

        kh.write_text(ssh_server.known_hosts.read_text())  # the jump host's key is not known: refused
        res = subprocess.run(printed + " </dev/null", shell=True, capture_output=True, text=True, timeout=60)
        assert res.returncode != 0 and "Host key verification failed" in res.stderr
        assert ssh_server.commands.count("echo restored by hand") == 1
    finally:
        jump.stop()


def test_an_unknown_or_changed_key_is_told_apart_and_the_hint_names_the_real_host_and_port(toy, ssh_server,
                                                                                         tmp_path, monkeypatch):
    """The host is a ~/.ssh/config alias whose HostName and Port the config gives: the hint's ssh-keyscan and
    ssh-keygen -R name that host and port (they named the alias and port 22, which matched no known_hosts
    line), and a host known_hosts has no key for is told to be unknown, not to have changed."""
    import asyncssh

    add_toy_ssh_profile(toy, ssh_server)
    edit_profile(toy.root, f"hosts: [127.0.0.1], user: {ssh_server.user}, port: {ssh_server.port}, ",
                 f"hosts: [deploy-host], user: {ssh_server.user}, ")
    home = _home(tmp_path, monkeypatch, known_hosts=True)
    (home / ".ssh" / "config").write_text(f"Host deploy-host\n  HostName 127.0.0.1\n  Port {ssh_server.port}\n")
    entry = f"[127.0.0.1]:{ssh_server.port}"

    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    ssh_server.known_hosts.write_text(f"{entry} {other}\n")
    with pytest.raises(TargetRefused) as ei:
        run_hypothesis("toy-fix", db=toy.db, target="ssh", show_progress=False, build_report=False)
    assert "its host key does not match" in ei.value.message
    assert f"ssh-keyscan -p {ssh_server.port} 127.0.0.1" in ei.value.hint
    assert f"ssh-keygen -R '{entry}' -f {ssh_server.known_hosts}" in ei.value.hint

    ssh_server.known_hosts.write_text("")
    with pytest.raises(TargetRefused) as ei:
        run_hypothesis("toy-fix", db=toy.db, target="ssh", show_progress=False, build_report=False)
    assert f"{ssh_server.known_hosts} holds no host key for {entry}" in ei.value.message
    assert "ssh-keygen -R" not in ei.value.hint and f"ssh-keyscan -p {ssh_server.port} 127.0.0.1" in ei.value.hint
    assert not ssh_server.commands and toy.conf.read_bytes() == toy.original


def test_a_line_of_ssh_config_wb_cannot_read_is_named_without_a_traceback(toy, ssh_server, tmp_path, monkeypatch):
    """~/.ssh/config is read for every connection: a line asyncssh refuses is an error naming the file and line
    (it was a ConfigParseError traceback)."""
    add_toy_ssh_profile(toy, ssh_server)
    home = _home(tmp_path, monkeypatch, known_hosts=True)
    (home / ".ssh" / "config").write_text("Host *\n  Port twenty-two\n")
    with pytest.raises(TargetError) as ei:
        run_hypothesis("toy-fix", db=toy.db, target="ssh", show_progress=False, build_report=False)
    assert f"{home}/.ssh/config line 2: Invalid Port integer value: twenty-two" in ei.value.message
    assert not ssh_server.commands and toy.conf.read_bytes() == toy.original


@pytest.mark.skipif(shutil.which("ssh") is None, reason="runs the printed command with OpenSSH's client")
def test_a_printed_restore_command_gives_the_command_the_profiles_env_with_secrets_by_reference(ssh_server):
    """A restore by hand runs its restart in the profile's env, as wb's own restore does: the env goes as export
    lines on the command's input, each value quoted by the pasting shell, a secret from the "$NAME" it is to be
    set in (the printed command had no env; a masked secret was a bare <redacted>, a redirection to the shell)."""
    from workbench.registry.experiment import TargetSpec
    from workbench.runner.targets.ssh import SshTarget

    spec = TargetSpec(kind="ssh", hosts=["127.0.0.1"], user=ssh_server.user, port=ssh_server.port,
                      known_hosts=str(ssh_server.known_hosts), identity_file=str(ssh_server.client_key_path))
    token = "tok with 'quotes' $and \\ spaces"
    printed = SshTarget(spec).manual_command("127.0.0.1", "printf '%s|%s' \"$LEVEL\" \"$HF_TOKEN\"",
                                             env={"LEVEL": shlex.quote("two words; it's"), "HF_TOKEN": '"$HF_TOKEN"'})
    assert "\n" not in printed and token not in printed
    res = subprocess.run(printed, shell=True, capture_output=True, text=True, timeout=60, executable="/bin/bash",
                         env={**os.environ, "HF_TOKEN": token})
    assert res.returncode == 0, (printed, res.stderr)
    assert res.stdout == f"two words; it's|{token}"


def test_a_key_filed_for_port_22_is_not_trusted_on_another_port(toy, ssh_server, tmp_path):
    """known_hosts holds the key for 127.0.0.1 (port 22) only and the deployment's sshd listens on another
    port: OpenSSH looks up [127.0.0.1]:PORT and refuses the key as unknown; asyncssh fell back to the
    port-22 line and connected (on a host where each port is another machine's sshd, a container's, one
    machine's key vouched for the other)."""
    kh = tmp_path / "known_hosts_22"
    kh.write_text(f"127.0.0.1 {ssh_server.host_key.export_public_key().decode().strip()}\n")
    add_toy_ssh_profile(toy, ssh_server, known_hosts=str(kh))
    with pytest.raises(TargetRefused) as exc:
        run_hypothesis("toy-fix", db=toy.db, target="ssh", show_progress=False, build_report=False)
    assert f"[127.0.0.1]:{ssh_server.port}" in exc.value.message + (exc.value.hint or "")
    assert not ssh_server.commands
    assert toy.conf.read_bytes() == toy.original


_SHELLS = [s for s in ("/bin/dash", "/bin/sh", "/bin/bash") if Path(s).exists()]


@pytest.mark.skipif(shutil.which("ssh") is None, reason="runs the printed command with OpenSSH's client")
@pytest.mark.parametrize("shell", _SHELLS)
def test_a_printed_restore_command_works_pasted_into_any_posix_shell(ssh_server, shell):
    """The printed restore command quoted its env with printf %q, which dash (Debian's /bin/sh) refuses
    ('%q: invalid directive') and whose $'...' output a host whose login shell is dash cannot read: pasted into
    sh it ran the restart with no env at all. It is now made with printf %s and sed, which every POSIX shell
    has, and the export lines it sends use plain '...' quoting, read by any shell on the host."""
    from workbench.registry.experiment import TargetSpec
    from workbench.runner.targets.ssh import SshTarget

    spec = TargetSpec(kind="ssh", hosts=["127.0.0.1"], user=ssh_server.user, port=ssh_server.port,
                      known_hosts=str(ssh_server.known_hosts), identity_file=str(ssh_server.client_key_path))
    level = "two words; it's \"$HOME\" `x` \\ \n second line\n"
    token = "tok with 'quotes' $and \\ spaces\nand a newline\n\n"
    command = "printf '%s|%s|%s' \"$LEVEL\" \"$HF_TOKEN\" \"$EMPTY\""
    printed = SshTarget(spec).manual_command("127.0.0.1", command, env={
        "LEVEL": shlex.quote(level), "HF_TOKEN": '"$HF_TOKEN"', "EMPTY": shlex.quote("")})
    assert token not in printed
    res = subprocess.run([shell, "-c", printed], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "HF_TOKEN": token})
    assert res.returncode == 0, (printed, res.stderr)
    assert res.stdout == f"{level}|{token}|"

    # What goes on the input is read by a host whose shell is dash too (bash's %q wrote $'...' for a newline).
    exports = printed[:printed.index(" | ssh ")]
    res = subprocess.run([shell, "-c", exports + " | /bin/sh -c " + shlex.quote('eval "$(cat)"; ' + command)],
                         capture_output=True, text=True, timeout=60, env={**os.environ, "HF_TOKEN": token})
    assert res.returncode == 0, (exports, res.stderr)
    assert res.stdout == f"{level}|{token}|"


@pytest.mark.skipif(shutil.which("ssh") is None, reason="runs the printed command with OpenSSH's client")
def test_a_printed_restore_command_survives_the_masking_of_what_wb_prints(ssh_server):
    """Everything wb prints goes through the secrets' masking, and the export line of an env entry named like a
    secret (`KV_API_TOKEN`) had that shape: sed's `1s/^/export KV_API_TOKEN='/;$s/$/'/` was printed as
    `export KV_API_TOKEN='<redacted>'/`, a command that no longer quoted the value and left a quote open."""
    from workbench.registry.experiment import TargetSpec
    from workbench.runner.targets.ssh import SshTarget
    from workbench.secrets import redact_text

    spec = TargetSpec(kind="ssh", hosts=["127.0.0.1"], user=ssh_server.user, port=ssh_server.port,
                      known_hosts=str(ssh_server.known_hosts), identity_file=str(ssh_server.client_key_path))
    made = SshTarget(spec).manual_command("127.0.0.1", "printf '%s|%s' \"$KV_LOG_LEVEL\" \"$KV_API_TOKEN\"",
                                          env={"KV_LOG_LEVEL": "info", "KV_API_TOKEN": '"$KV_API_TOKEN"'})
    printed = redact_text(made)
    assert printed == made
    res = subprocess.run(["/bin/sh", "-c", printed], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "KV_API_TOKEN": "tok-'quoted'-value"})
    assert res.returncode == 0, (printed, res.stderr)
    assert res.stdout == "info|tok-'quoted'-value"


@pytest.mark.parametrize("case", ["closed port", "unknown host key"])
def test_a_refused_jump_host_is_named_with_the_port_it_was_dialled_on(toy, ssh_server, tmp_path, monkeypatch,
                                                                     case):
    """The profile's jump is an alias whose Port ~/.ssh/config gives (a jump written without :port): it is
    dialled on that port, but a refusal named the deployment host's port, and the unknown-key hint filed the
    key as [host]:THAT_PORT and scanned that port, which no line and no sshd of the jump host answers to."""
    from pgserver import free_port
    from sshserver import SshServer

    jump = None
    if case == "closed port":
        jump_port = free_port()
    else:
        jump = SshServer(tmp_path / "jump").start()  # its key is in no known_hosts file wb reads
        jump.client_key = ssh_server.client_key
        jump_port = jump.port
    try:
        add_toy_ssh_profile(toy, ssh_server)
        edit_profile(toy.root, "connect_timeout_s: 3}", "connect_timeout_s: 3, jump: jumpbox}")
        home = _home(tmp_path, monkeypatch, known_hosts=True)
        (home / ".ssh" / "config").write_text(f"Host jumpbox\n  HostName 127.0.0.1\n  Port {jump_port}\n")
        with pytest.raises(TargetRefused) as ei:
            run_hypothesis("toy-fix", db=toy.db, target="ssh", show_progress=False, build_report=False)
        told = ei.value.message + " " + (ei.value.hint or "")
        assert str(ssh_server.port) not in told, told
        if case == "closed port":
            assert f"jump host jumpbox: 127.0.0.1 refused the connection on port {jump_port}" in told
            assert "the profile's jump:" in ei.value.hint and "the profile's port:" not in ei.value.hint
        else:
            assert f"holds no host key for [127.0.0.1]:{jump_port}" in told
            assert f"ssh-keyscan -p {jump_port} 127.0.0.1" in told
            assert not jump.commands
        assert not ssh_server.commands and toy.conf.read_bytes() == toy.original
    finally:
        if jump is not None:
            jump.stop()
