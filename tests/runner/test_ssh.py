"""The ssh target against a real SSH server on loopback: runs, host keys, unreachable hosts, dropped links."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from pathlib import Path

from workbench.errors import ConfigError
from workbench.runner.lock import TargetRefused
from runner_kit import run_hypothesis  # noqa: E402  (tests/runner is on sys.path)

from runner_kit import add_toy_ssh_profile, edit_profile  # noqa: E402
from pgserver import free_port as _closed_port  # noqa: E402  (tests/ is on sys.path)


STAGES = ["render", "check", "apply", "restart", "health", "workload", "collect"]


def _run(toy, **kw):
    kw.setdefault("show_progress", False)
    kw.setdefault("build_report", False)
    return run_hypothesis("toy-fix", db=toy.db, target="ssh", **kw)


def test_toy_over_ssh_records_and_restores_its_env_unseen_and_no_file_at_the_temporary_name_written_through(
        toy, ssh_server):
    """One run over SSH proves three things (each was a test with a run of its own):
    - it records both arms and restores the target;
    - the profile's env (a token here) is exported to every command, but sent on the command's input: a
      command line is the remote shell's argv, which every user of the host sees in `ps` while it runs;
    - something at serve.conf.wb-tmp before the run (a link someone planted there, or a leftover of a killed
      write): wb writes a fresh file of its own, so the link's target is untouched and serve.conf stays a file
      (the arm went through the link into its target, the link was renamed over serve.conf, and the restore then
      wrote the original into that target too, leaving serve.conf a link)."""
    import json

    from runner_kit import edit_profile, store_rows

    victim = toy.state / "victim.txt"
    victim.write_text("not wb's\n")
    (toy.state / "serve.conf.wb-tmp").symlink_to(victim)
    add_toy_ssh_profile(toy, ssh_server)
    edit_profile(toy.root, 'uname: "uname -s"\n',
                 'uname: "uname -s"\n      env_check: \'printf %s "$SERVICE_API_TOKEN" | wc -c\'\n')
    s = _run(toy, replicates=1)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"]
    assert s["arms"]["control"]["totals"]["leak"] == 3 and s["arms"]["treatment"]["totals"]["leak"] == 0
    assert s["target"].startswith("ssh:") and s["runs"][0]["host"] == "127.0.0.1"
    assert toy.conf.read_bytes() == toy.original
    # the env: never on a command line, yet seen by the command
    assert ssh_server.commands and not [c for c in ssh_server.commands if "s3cret-value" in c]
    (fp,) = store_rows(toy.db, "SELECT fingerprint_json FROM runs WHERE id = :r", r=s["runs"][0]["id"])[0]
    assert json.loads(fp)["env_check"] == str(len("s3cret-value"))  # the token itself is masked there
    # the planted temporary name
    assert victim.read_text() == "not wb's\n"
    assert not toy.conf.is_symlink()
    assert not (toy.state / "serve.conf.wb-tmp").exists()


def test_host_key_mismatch_is_refused_with_how_to_verify(toy, ssh_server, tmp_path):
    import asyncssh

    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    kh = tmp_path / "wrong_known_hosts"
    kh.write_text(f"[127.0.0.1]:{ssh_server.port} {other}\n")
    add_toy_ssh_profile(toy, ssh_server, known_hosts=str(kh))
    with pytest.raises(TargetRefused) as ei:
        _run(toy, replicates=1)
    assert "host key does not match" in ei.value.message
    assert "ssh-keyscan" in (ei.value.hint or "") and "ssh-keygen -lf" in ei.value.hint
    assert ssh_server.commands == [] and toy.restarts() == []
    assert toy.conf.read_bytes() == toy.original


def test_unreachable_host_fails_before_touching_anything(toy, ssh_server):
    closed_port = _closed_port()
    add_toy_ssh_profile(toy, ssh_server, port=closed_port)
    with pytest.raises(TargetRefused) as ei:
        _run(toy, replicates=1)
    assert "cannot reach" in ei.value.message
    assert toy.restarts() == [] and toy.conf.read_bytes() == toy.original


@pytest.mark.parametrize("case", ["unknown host key", "closed port"])
def test_a_host_refused_before_anything_changed_is_exit_2_naming_host_port_and_cause(toy, ssh_server, cli,
                                                                                     tmp_path, case):
    """A host whose key known_hosts does not hold, or whose port is closed, ended `wb hypothesis run` with exit 1,
    as a failure while running; nothing on the host had been touched: it is a refused target, exit 2."""
    port = ssh_server.port
    if case == "closed port":
        port = _closed_port()
        add_toy_ssh_profile(toy, ssh_server, port=port)
        said = f"127.0.0.1 refused the connection on port {port}"
    else:
        kh = tmp_path / "empty_known_hosts"
        kh.write_text("")
        add_toy_ssh_profile(toy, ssh_server, known_hosts=str(kh))
        said = f"{kh} holds no host key for [127.0.0.1]:{port}"
    code, out, err = cli("hypothesis", "run", "toy-fix", "--target", "ssh", "--db", toy.db, "--replicates", "1")
    assert code == 2 and "Traceback" not in err, (code, out, err)
    (error,) = [line for line in err.splitlines() if line.startswith("Error:")]
    assert f"{ssh_server.user}@127.0.0.1:{port}" in error and said in error, err
    assert ssh_server.commands == [] and toy.restarts() == [] and toy.conf.read_bytes() == toy.original
    # Kept on record as the README's "what a refusal records" says: an execution `refused`, the cause its error.
    from runner_kit import store_rows

    ((status, recorded),) = store_rows(toy.db, "SELECT status, error FROM executions")
    assert status == "refused" and said in recorded, (status, recorded)
    assert "this attempt is recorded as execution 1, status refused" in err, err


@pytest.mark.parametrize("key", ["missing", "not a key", "encrypted"])
def test_an_unusable_identity_file_is_named_before_touching_anything(toy, ssh_server, tmp_path, key):
    """A key file that is not there, is no key, or needs a passphrase is named as such (it was 'cannot reach
    the host: No such file or directory', or a KeyImportError traceback)."""
    from runner_kit import edit_profile

    path = tmp_path / "id_deploy"
    if key == "not a key":
        path.write_text("not a key\n")
    elif key == "encrypted":
        ssh_server.client_key.write_private_key(str(path), format_name="pkcs8-pem", passphrase="a passphrase",
                                                cipher_name="aes256-cbc")
    add_toy_ssh_profile(toy, ssh_server)
    edit_profile(toy.root, f"identity_file: {ssh_server.client_key_path}", f"identity_file: {path}")
    with pytest.raises(ConfigError) as ei:  # bad input at the profile's key, exit 2: nothing is recorded
        _run(toy, replicates=1)
    assert f"identity_file {path}" in ei.value.message and "cannot reach" not in ei.value.message
    assert ei.value.field == "field profiles.ssh.target.identity_file" and ei.value.exit_code == 2
    if key == "missing":
        assert "does not exist" in ei.value.message
    assert ssh_server.commands == [] and toy.restarts() == [] and toy.conf.read_bytes() == toy.original
    assert not Path(toy.db).exists()  # the store was not even opened


@pytest.mark.parametrize("stage", STAGES)
def test_dropped_connection_at_every_stage_restores(toy, ssh_server, stage):
    add_toy_ssh_profile(toy, ssh_server)
    dropped = {"n": 0}

    async def fault(st, pr):
        if st == stage and dropped["n"] == 0:
            dropped["n"] += 1
            ssh_server.drop()
            await asyncio.sleep(0.2)

    s = _run(toy, replicates=1, fault=fault)
    assert dropped["n"] == 1
    assert toy.conf.read_bytes() == toy.original
    statuses = [r["status"] for r in s["runs"]]
    assert statuses.count("ok") >= 1  # the runner reconnected for the next run
    assert len(toy.restarts()) >= 2   # ...and for the restore's restart


def test_a_connection_dropped_while_a_command_runs_leaves_no_stray_traceback(toy, ssh_server, caplog):
    """The link drops while the workload runs: the run fails with the drop named, the target is restored, and
    both of the command's output streams' errors are dealt with (the second one was logged at exit as
    'Task exception was never retrieved', with a ConnectionLost traceback, under the run's summary)."""
    import gc
    import logging

    add_toy_ssh_profile(toy, ssh_server)
    dropped = {"n": 0}

    async def fault(st, pr):
        if st == "workload" and dropped["n"] == 0:
            dropped["n"] += 1
            asyncio.get_running_loop().call_later(1.0, ssh_server.drop)

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        s = _run(toy, replicates=1, fault=fault, sets={"mode": "slow"})
        gc.collect()
    assert dropped["n"] == 1 and "dropped during a command" in s["runs"][0]["error"], s["runs"][0]
    assert toy.conf.read_bytes() == toy.original
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()], caplog.text


def test_a_health_url_with_credentials_is_polled_with_them_over_the_forward(toy, ssh_server):
    """A health URL behind basic auth (http://user:password@127.0.0.1:port/health) answers through the SSH
    forward as it does locally: the rewritten URL kept its port and path but dropped the credentials, so every
    poll got 401 and every run failed its health stage."""
    import base64
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from runner_kit import edit_profile

    want = "Basic " + base64.b64encode(b"wb:h3alth-pass").decode()

    class Guarded(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200 if self.headers.get("Authorization") == want else 401)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Guarded)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        add_toy_ssh_profile(toy, ssh_server)
        text = (toy.root / "experiments" / "toy.yaml").read_text()
        ssh_part = text[text.index("  ssh:\n"):]
        edit_profile(toy.root, ssh_part, ssh_part.replace(
            '"http://127.0.0.1:{{ port }}/health"',
            f'"http://wb:h3alth-pass@127.0.0.1:{server.server_address[1]}/health"'))
        s = _run(toy, replicates=1)
        assert [r["status"] for r in s["runs"]] == ["ok", "ok"], [r["error"] for r in s["runs"]]
        assert toy.conf.read_bytes() == toy.original
    finally:
        server.shutdown()
        server.server_close()


def test_jump_host(toy, ssh_server):
    """Through a jump host (here the same server, reached as user@127.0.0.1:port, forwarding to itself)."""
    add_toy_ssh_profile(toy, ssh_server)
    p = toy.root / "experiments" / "toy.yaml"
    jump = f"{ssh_server.user}@127.0.0.1:{ssh_server.port}"
    p.write_text(p.read_text().replace("connect_timeout_s: 3}", f"connect_timeout_s: 3, jump: '{jump}'}}"))
    s = _run(toy, replicates=1)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"]
    assert len(ssh_server.conns) >= 2  # the jump connection and the tunnelled one
    assert toy.conf.read_bytes() == toy.original


def test_a_closed_port_behind_a_jump_host_is_a_refused_host_exit_2(toy, ssh_server, cli, tmp_path, monkeypatch):
    """The jump host reached, the deployment host's port closed: the jump answers the forward with a
    ChannelOpenError ('Connection refused' from sshd), which ended the run with exit 1 as a failure while
    running. Nothing on the host changed: the same refusal as a closed port dialled directly."""
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ssh/config of the machine's
    port = _closed_port()
    add_toy_ssh_profile(toy, ssh_server, port=port)
    jump = f"{ssh_server.user}@127.0.0.1:{ssh_server.port}"
    edit_profile(toy.root, "connect_timeout_s: 3}", f"connect_timeout_s: 3, jump: '{jump}'}}")
    code, out, err = cli("hypothesis", "run", "toy-fix", "--target", "ssh", "--db", toy.db, "--replicates", "1")
    assert code == 2 and "Traceback" not in err, (code, out, err)
    (error,) = [line for line in err.splitlines() if line.startswith("Error:")]
    assert f"{ssh_server.user}@127.0.0.1:{port}: 127.0.0.1 refused the connection on port {port}" in error, err
    assert "jump host" not in error, err
    assert ssh_server.commands == [] and toy.restarts() == [] and toy.conf.read_bytes() == toy.original


def test_symlinked_config_is_written_through_and_restored_over_sftp(toy, ssh_server):
    """The serve file is a link on the host: each arm lands in the file it points to, the link stays a link,
    and the restore puts back that file's bytes and mode."""
    import json
    import os

    real = toy.state / "etc" / "serve.conf"
    real.parent.mkdir()
    toy.conf.rename(real)
    os.chmod(real, 0o640)
    toy.conf.symlink_to("etc/serve.conf")  # relative, as `ln -s` is usually written
    add_toy_ssh_profile(toy, ssh_server)
    s = _run(toy, replicates=1)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"]
    assert toy.conf.is_symlink() and os.readlink(toy.conf) == "etc/serve.conf"
    assert real.read_bytes() == toy.original and (real.stat().st_mode & 0o777) == 0o640
    seen = [json.loads(line)["fix"] for line in toy.restarts()]
    assert "on" in seen and seen[-1] == "off"  # the restart read the arm through the link, then the original
    assert not list(toy.state.glob("**/*.wb-tmp"))


@pytest.mark.skipif(os.geteuid() != 0, reason="giving the serve file another owner needs root")
def test_restore_keeps_the_serve_files_owner_and_group(toy, ssh_server):
    """Logged in as root, wb writes each arm and the original back into a file the service's own user owns:
    the file keeps that owner and group (a service that reads its config as that user must still read it)."""
    os.chown(toy.conf, 65534, 65534)
    os.chmod(toy.conf, 0o640)
    add_toy_ssh_profile(toy, ssh_server)
    s = _run(toy, replicates=1)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"]
    st = toy.conf.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (65534, 65534, 0o640)
    assert toy.conf.read_bytes() == toy.original


def test_an_https_health_url_is_verified_for_its_own_name_over_the_forward(toy, ssh_server, tmp_path):
    """https://localhost:port/health, its certificate for localhost from the profile's ca_file: the URL was
    rewritten to https://127.0.0.1:<forward>/health, so the certificate was checked against 127.0.0.1 (and the
    server was sent Host: 127.0.0.1:<forward>) and every poll failed its health stage."""
    from runner_kit import edit_profile
    from tls_kit import https_health_server

    tls = https_health_server(tmp_path)
    try:
        add_toy_ssh_profile(toy, ssh_server)
        text = (toy.root / "experiments" / "toy.yaml").read_text()
        ssh_part = text[text.index("  ssh:\n"):]
        edit_profile(toy.root, ssh_part, ssh_part.replace(
            '"http://127.0.0.1:{{ port }}/health"', f'"https://localhost:{tls.port}/health"').replace(
            "connect_timeout_s: 3}", f"connect_timeout_s: 3, ca_file: {tls.ca_file}}}"))
        s = _run(toy, replicates=1)
        assert [r["status"] for r in s["runs"]] == ["ok", "ok"], [r["error"] for r in s["runs"]]
        assert tls.hosts_seen and set(tls.hosts_seen) == {f"localhost:{tls.port}"}
        assert toy.conf.read_bytes() == toy.original
    finally:
        tls.close()


def _running(marker: str) -> list[int]:
    """Pids of this machine's processes whose command line holds `marker` (the loopback 'host' is this one)."""
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if marker.encode() in f.read().replace(b"\0", b" "):
                        found.append(int(d))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("env", [None, {"WB_PROBE": "it's set"}])
@pytest.mark.parametrize("shape", ["sleep {t}", "sleep {t}; echo done", "sleep {t} | cat",
                                   "sleep {t} & sleep {t}; wait"])
def test_a_command_stopped_by_its_timeout_leaves_nothing_running_on_the_host(ssh_server, shape, env):
    """OpenSSH without a terminal neither ends a command when its channel closes nor delivers a signal to a root
    session: a workload past its timeout (or stopped by Ctrl-C) ran on, loading the service during the next
    arm's run. wb's own end of the command's input now stops the command's whole process group."""
    from workbench.registry.experiment import TargetSpec
    from workbench.runner.targets.ssh import SshTarget

    spec = TargetSpec(kind="ssh", hosts=["127.0.0.1"], user=ssh_server.user, port=ssh_server.port,
                      known_hosts=str(ssh_server.known_hosts), identity_file=str(ssh_server.client_key_path))
    t = f"9{os.getpid() % 1000}.{len(shape)}{0 if env is None else 1}"  # a duration no other test sleeps
    command = shape.format(t=t)

    async def go():
        target = SshTarget(spec)
        await target.open()
        try:
            res = await target.run("127.0.0.1", command, env=env, timeout=2)
            assert res.timed_out
        finally:
            await target.close()

    asyncio.run(go())
    for _ in range(100):  # bounded: the group is signalled at once, it may take a moment to go
        if not _running(f"sleep {t}"):
            break
        time.sleep(0.1)
    left = _running(f"sleep {t}")
    for pid in left:
        os.kill(pid, 9)
    assert left == [], f"{command!r} still running on the host after its timeout"


def test_a_daemon_a_finished_command_started_keeps_running(ssh_server):
    """A restart command that starts the service in the background and returns (nohup server &) leaves it
    running: only a command stopped before its end has its process group stopped."""
    from workbench.registry.experiment import TargetSpec
    from workbench.runner.targets.ssh import SshTarget

    spec = TargetSpec(kind="ssh", hosts=["127.0.0.1"], user=ssh_server.user, port=ssh_server.port,
                      known_hosts=str(ssh_server.known_hosts), identity_file=str(ssh_server.client_key_path))
    t = f"8{os.getpid() % 1000}.5"

    async def go():
        target = SshTarget(spec)
        await target.open()
        try:
            res = await target.run("127.0.0.1", f"nohup sleep {t} >/dev/null 2>&1 & echo started", env={"A": "1"},
                                   timeout=60)
            assert res.rc == 0 and res.stdout.strip() == "started"
        finally:
            await target.close()

    asyncio.run(go())
    time.sleep(1)
    left = _running(f"sleep {t}")
    for pid in left:
        os.kill(pid, 9)
    assert len(left) == 1


def test_a_name_whose_every_address_refuses_is_a_refused_host_exit_2(toy, ssh_server, cli, tmp_path, monkeypatch):
    """A host name with two addresses (localhost as ::1 and 127.0.0.1), the port closed on both: asyncio raises
    one plain OSError, 'Multiple exceptions: [Errno 111] ...', not ConnectionRefusedError, and the run ended
    with exit 1 in asyncio's words. Every address refused the connection: the same refusal as one address's."""
    import socket

    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ssh/config of the machine's
    port = _closed_port()
    name = "two-addresses.wb-test"
    real_lookup = socket.getaddrinfo

    def lookup(host, *args, **kw):
        if host != name:
            return real_lookup(host, *args, **kw)
        return [info for addr in ("127.0.0.1", "127.0.0.2") for info in real_lookup(addr, *args, **kw)]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    add_toy_ssh_profile(toy, ssh_server, port=port)
    edit_profile(toy.root, "hosts: [127.0.0.1]", f"hosts: [{name}]")
    code, out, err = cli("hypothesis", "run", "toy-fix", "--target", "ssh", "--db", toy.db, "--replicates", "1")
    assert code == 2 and "Traceback" not in err and "Multiple exceptions" not in err, (code, out, err)
    (error,) = [line for line in err.splitlines() if line.startswith("Error:")]
    assert f"{name} refused the connection on port {port}" in error, err
    assert ssh_server.commands == [] and toy.restarts() == [] and toy.conf.read_bytes() == toy.original


def test_a_closed_port_is_told_by_each_addresss_own_error_not_by_a_message(monkeypatch) -> None:
    """Whether every address of a name refused the connection was read from the text of asyncio's "Multiple
    exceptions: ..." OSError (Python 3.11 keeps only the text). Each address is dialled on its own and its error
    kept: a real closed port on both addresses is a closed port, a real open one is reached, one address refusing
    while another fails otherwise is no closed port, and a message alone decides nothing."""
    import errno
    import socket

    from workbench.runner.targets.ssh_dial import Unreachable, _Dialer, port_closed

    name, real_lookup = "two-addresses.wb-test", socket.getaddrinfo

    def lookup(host, *args, **kw):
        if host != name:
            return real_lookup(host, *args, **kw)
        return [info for addr in ("127.0.0.1", "127.0.0.2") for info in real_lookup(addr, *args, **kw)]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    closed = _closed_port()
    with socket.create_server(("127.0.0.1", 0)) as server:
        async def go() -> None:
            with pytest.raises(Unreachable) as refused:
                await _Dialer().create_connection(asyncio.Protocol, name, closed)
            assert [type(a) for a in refused.value.attempts] == [ConnectionRefusedError] * 2, refused.value
            assert port_closed(refused.value)
            transport, _ = await _Dialer().create_connection(asyncio.Protocol, "127.0.0.1", server.getsockname()[1])
            transport.close()

        asyncio.run(go())
    assert not port_closed(Unreachable([ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed"),
                                        OSError(errno.ENETUNREACH, "Network is unreachable")]))
    both = "[Errno 111] Connect call failed ('::1', 22, 0, 0), [Errno 111] Connect call failed ('127.0.0.1', 22)"
    assert not port_closed(OSError(f"Multiple exceptions: {both}"))


def test_a_port_out_of_range_is_not_dialled_modulo_65536() -> None:
    """A port from ~/.ssh/config (asyncssh takes `Port 70000` as it is) was resolved by getaddrinfo, which wraps
    it: port 70000 reached port 4464. It is a failed connect naming the port, which says what to check."""
    import socket

    from workbench.runner.targets.ssh import SshTarget
    from workbench.runner.targets.ssh_dial import _Dialer

    with socket.create_server(("127.0.0.1", 0)) as server:
        wrapped = server.getsockname()[1] + 65536

        async def go() -> None:
            await _Dialer().create_connection(asyncio.Protocol, "127.0.0.1", wrapped)

        with pytest.raises(OSError) as failed:
            asyncio.run(go())
    spec = type("Spec", (), {"hosts": ["gpu1"], "ca_file": None, "user": None, "port": None, "connect_timeout_s": 5})
    err = SshTarget(spec)._translate("gpu1", failed.value, port=None)
    assert err.message == f"cannot reach gpu1: port {wrapped} is not 1-65535", err.message
    assert "~/.ssh/config" in (err.hint or "")


def test_a_jump_hosts_refused_forward_is_a_closed_port_in_sshds_words_too() -> None:
    """OpenSSH's sshd, as a jump host, answers a forward to a closed port with strerror's 'Connection refused';
    a forward it could not open for another cause (a name it could not look up, a policy) is no closed port."""
    import asyncssh

    from workbench.runner.targets.ssh_dial import port_closed

    assert port_closed(asyncssh.ChannelOpenError(asyncssh.OPEN_CONNECT_FAILED, "Connection refused"))
    assert not port_closed(asyncssh.ChannelOpenError(asyncssh.OPEN_CONNECT_FAILED, "No route to host"))
    assert not port_closed(asyncssh.ChannelOpenError(asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED, "Connection refused"))
