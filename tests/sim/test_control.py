"""up / down / restart / status of real server processes on free loopback ports."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time

import httpx
import pytest

from workbench.errors import BadInput, SimError
from workbench.sim import control
from workbench.sim.config import read_serve_file

from pdsim_kit import free_port, pid_alive, write_serve


def test_up_status_down_leaves_no_process_and_children_inherit_the_environment(sim_dir, monkeypatch):
    monkeypatch.setenv("PDSIM_PROBE_MARK", "x42")
    cfg = write_serve(sim_dir)
    t0 = time.monotonic()
    st = control.up(sim_dir, config=cfg)
    assert time.monotonic() - t0 < 15
    assert st.state == "healthy"
    pids = [u.pid for u in st.units.values()]
    for u in st.units.values():
        env = open(f"/proc/{u.pid}/environ", "rb").read().split(b"\0")
        assert b"PDSIM_PROBE_MARK=x42" in env
        # They make no TLS connection: their trust store is empty (the system's CA bundle costs each start ~70 ms).
        assert f"SSL_CERT_FILE={os.devnull}".encode() in env
    for u in st.units.values():
        assert httpx.get(f"http://127.0.0.1:{u.port}/health", timeout=2).status_code == 200
    assert all(pid_alive(p) for p in pids)
    assert control.status(sim_dir).state == "healthy"
    stopped = control.down(sim_dir)
    assert sorted(stopped) == sorted(pids)
    assert not any(pid_alive(p) for p in pids)
    assert control.status(sim_dir).state == "down"


def test_set_writes_the_serve_file_and_restart_rereads_it(sim_dir):
    cfg = write_serve(sim_dir)
    control.up(sim_dir, config=cfg, sets={"seed": "5"})
    assert read_serve_file(cfg)["seed"] == "5"
    st = control.status(sim_dir)
    assert st.units["decode"].debug["config"]["seed"] == 5
    # the runner's step: rewrite the file, then restart
    text = cfg.read_text().replace("index_k_dtype=bf16", "index_k_dtype=fp8")
    cfg.write_text(text)
    old = {u.pid for u in st.units.values()}
    st = control.restart(sim_dir)
    assert st.state == "healthy"
    assert {u.pid for u in st.units.values()}.isdisjoint(old)
    assert st.units["prefill"].debug["config"]["index_k_dtype"] == "fp8"
    assert not any(pid_alive(p) for p in old)


def test_kill_9_of_one_server_is_reported_and_down_cleans_up(sim_dir):
    st = control.up(sim_dir, config=write_serve(sim_dir))
    victim = st.units["decode"].pid
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and pid_alive(victim):
        control._reap(victim)
        time.sleep(0.05)
    st = control.status(sim_dir)
    assert st.units["decode"].state == "down"
    assert st.units["prefill"].state == "healthy"
    assert st.state == "degraded"
    other = st.units["prefill"].pid
    control.down(sim_dir)
    assert not pid_alive(other)


def test_a_restart_waits_for_its_own_servers_ports_to_be_released(sim_dir, monkeypatch):
    """A restart with requests in flight failed now and then on a busy machine with "port N (decode) is already in
    use": the old server's port was not yet released when the new one was checked. A restart waits for its own
    ports (bounded) before it calls them taken; `up` on a port someone else holds still refuses at once."""
    import threading

    st = control.up(sim_dir, config=write_serve(sim_dir))
    port = st.units["decode"].port
    real_down = control.down
    held = []

    def down_slowly(*args, **kw):  # the old decode's port still bound for a moment after its process is gone
        stopped = real_down(*args, **kw)
        busy = socket.socket()
        busy.bind(("127.0.0.1", port))
        busy.listen(1)
        held.append(busy)
        threading.Timer(0.5, busy.close).start()
        return stopped

    monkeypatch.setattr(control, "down", down_slowly)
    st = control.restart(sim_dir)
    assert held and st.units["decode"].port == port and st.state == "healthy"


def test_port_in_use_is_a_clear_error(sim_dir):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        with pytest.raises(SimError, match=f"port {port} .*already in use"):
            control.up(sim_dir, config=write_serve(sim_dir, prefill_port=port))
        assert control.status(sim_dir).state == "down"
    finally:
        busy.close()


def test_bad_serve_file_names_the_line_and_starts_nothing(sim_dir):
    cfg = sim_dir / "bad.sh"
    cfg.write_text("# ok\nhicache=on\nindex_k_dtype=int4\n")
    with pytest.raises(BadInput, match=r"bad\.sh:3: index_k_dtype='int4'"):
        control.up(sim_dir, config=cfg)
    assert control.status(sim_dir).state == "down"


def test_a_refused_set_writes_nothing(tmp_path, sim_dir):
    """`wb sim up --set hicache=maybe --dir NEW` was refused after it had made NEW and its default serve file;
    on an existing serve file a refused --set leaves it as it was."""
    new = tmp_path / "fresh"
    with pytest.raises(BadInput, match="hicache"):
        control.up(new, sets={"hicache": "maybe"})
    assert not new.exists()
    cfg = sim_dir / "mine.sh"
    cfg.write_text("# mine\nhicache=on\n")
    with pytest.raises(BadInput, match="hicache"):
        control.up(sim_dir, config=cfg, sets={"hicache": "maybe"})
    assert cfg.read_text() == "# mine\nhicache=on\n" and not (sim_dir / "config_path").exists()


def test_a_set_giving_both_servers_one_port_writes_nothing(tmp_path, sim_dir):
    """`wb sim up --set prefill_port=30002` was refused only after it had written the port into the serve file, so
    every later plain `wb sim up` failed on it too."""
    new = tmp_path / "fresh"
    with pytest.raises(BadInput, match="prefill_port and decode_port are both 30002"):
        control.up(new, sets={"prefill_port": "30002"})
    assert not new.exists()
    cfg = write_serve(sim_dir)
    before = cfg.read_text()
    port = read_serve_file(cfg)["decode_port"]
    with pytest.raises(BadInput, match=f"prefill_port and decode_port are both {port}"):
        control.up(sim_dir, config=cfg, sets={"prefill_port": port})
    assert cfg.read_text() == before and not (sim_dir / "config_path").exists()


def test_a_clock_left_at_nan_starts_afresh(sim_dir):
    """A repro given --timeout nan (refused now) moved the shared clock to nan, and every later start of that
    state dir failed: 'cannot convert float NaN to integer', from wb sim up and wb hypothesis run alike."""
    from workbench.sim import clock

    cfg = write_serve(sim_dir)
    control.up(sim_dir, config=cfg)
    control.down(sim_dir)
    w = clock._Words(sim_dir)
    w.d[clock._H_NOW] = float("nan")
    w.close()
    assert control.up(sim_dir, config=cfg).state == "healthy"
    assert clock.current(sim_dir)[1] > 0


def test_restart_with_requests_in_flight(sim_dir):
    import threading

    from workbench.sim.clock import Clock

    st = control.up(sim_dir, config=write_serve(sim_dir, nixl_abort_fix="on"))
    port = st.units["decode"].port
    results = []

    def call():
        try:
            r = httpx.post(f"http://127.0.0.1:{port}/generate", timeout=10,
                           json={"input_ids": list(range(100)) + [1 << 26], "max_tokens": 5000,
                                 "ignore_eos": True})
            results.append(r.status_code)
        except httpx.HTTPError as exc:
            results.append(type(exc).__name__)

    # Holding the simulated clock keeps the requests in flight however long the host takes.
    clock = Clock(sim_dir, "test")
    try:
        with clock.hold():
            threads = [threading.Thread(target=call) for _ in range(4)]
            for t in threads:
                t.start()
            time.sleep(0.5)
            assert results == []                   # nothing can finish while the clock is held
            old = [u.pid for u in st.units.values()]
            st = control.restart(sim_dir)
            for t in threads:
                t.join(timeout=15)
    finally:
        clock.close()
    assert st.state == "healthy"
    assert not any(pid_alive(p) for p in old)
    assert len(results) == 4 and all(r != 200 for r in results)   # in-flight requests got errors
    r = httpx.post(f"http://127.0.0.1:{port}/generate", timeout=10,
                   json={"input_ids": list(range(100)) + [1 << 26], "max_tokens": 20})
    assert r.status_code == 200


STOP_WHILE_SPAWNING = """
import os, signal, sys
from workbench.sim import control

real = control._proc_start

def stopped_here(pid):  # the stop arrives right after the server's process exists
    os.kill(os.getpid(), getattr(signal, sys.argv[3]))
    return real(pid)

control._proc_start = stopped_here
control.up(sys.argv[1], config=sys.argv[2])
"""


def _servers_of(sim_dir) -> list[int]:
    """pids of live pdsim servers started on `sim_dir`, found by their command lines, not by pid files."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            argv = open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"--dir" in argv and str(sim_dir).encode() in argv and pid_alive(int(p)):
            found.append(int(p))
    return found


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_stop_while_a_server_spawns_leaves_it_named_for_down(sim_dir, sig):
    """A `sim up` stopped between starting a server and writing its pid file left a server no pid file named,
    which `sim down` could not stop. The stop now waits until the pid file is written."""
    import subprocess
    import sys

    cfg = write_serve(sim_dir)
    try:
        proc = subprocess.run([sys.executable, "-c", STOP_WHILE_SPAWNING, str(sim_dir), str(cfg), sig],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0, proc.stdout + proc.stderr  # it was stopped, not finished
        assert not (sim_dir / "run" / "decode.json").exists()  # stopped before the second server
        control.down(sim_dir)
        assert _servers_of(sim_dir) == []
    finally:
        for pid in _servers_of(sim_dir):
            os.kill(pid, signal.SIGKILL)


def _pid_file(sim_dir, unit: str, info: dict) -> None:
    import json

    (sim_dir / "run").mkdir(parents=True, exist_ok=True)
    (sim_dir / "run" / f"{unit}.json").write_text(json.dumps(info))


def test_a_pid_file_without_a_start_time_names_no_live_server(sim_dir):
    """A server that was already gone when `sim up` looked for its start time left a pid file with none: `_alive`
    compared None with None and took the missing process for a live server, so status said "unhealthy" for
    ever and `sim down` waited out its whole stop timeout, then failed on a process that did not exist."""
    import subprocess
    import sys

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _pid_file(sim_dir, "prefill", {"pid": gone.pid, "start": None, "unit": "prefill", "port": free_port()})
    assert control.status(sim_dir).units["prefill"].state == "down"
    assert control.down(sim_dir, timeout=30) == []


def test_a_server_ending_as_down_kills_it_is_not_an_error(sim_dir, monkeypatch):
    """`sim down` checked that a server outlived SIGTERM, then sent SIGKILL; a server that ended between the two
    made both kill calls fail with "No such process", and the failure escaped `down`."""
    import subprocess
    import sys

    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time\n"
                                 "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint(flush=True)\ntime.sleep(600)"],
                                stdout=subprocess.PIPE, start_new_session=True)
    stubborn.stdout.readline()  # SIGTERM is ignored from here on
    _pid_file(sim_dir, "prefill", {"pid": stubborn.pid, "start": control._proc_start(stubborn.pid),
                                   "unit": "prefill", "port": free_port()})
    real_killpg = os.killpg

    def ends_first(pid, sig):  # the server ends just before the SIGKILL reaches it
        real_killpg(pid, signal.SIGKILL)
        stubborn.wait()
        raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(control.os, "killpg", ends_first)
    assert control.down(sim_dir, timeout=0.5) == [stubborn.pid]
    assert not pid_alive(stubborn.pid)


def test_the_default_state_folder_is_the_one_wb_hypothesis_run_uses(tmp_path, monkeypatch):
    """`wb sim status` from a workbench's subfolder looked in ./.wb/sim there and said "down" while the
    runner's pdsim served in the workbench's .wb/sim."""
    root = tmp_path / "bench"
    (root / "experiments").mkdir(parents=True)
    (root / "hypotheses.yaml").write_text("format: 1\nhypotheses: []\n")
    for var in ("WB_SIM_DIR", "WB_ROOT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(root / "experiments")
    assert control.state_dir() == root.resolve() / ".wb" / "sim"
    monkeypatch.setenv("WB_ROOT", str(tmp_path / "other"))
    assert control.state_dir() == (tmp_path / "other").resolve() / ".wb" / "sim"
    monkeypatch.setenv("WB_SIM_DIR", str(tmp_path / "mine"))
    assert control.state_dir() == (tmp_path / "mine").resolve()
    monkeypatch.chdir(tmp_path)
    for var in ("WB_SIM_DIR", "WB_ROOT"):
        monkeypatch.delenv(var)
    assert control.state_dir() == tmp_path.resolve() / ".wb" / "sim"  # outside a workbench: here


def test_a_dir_in_a_folder_that_does_not_exist_is_refused_not_created(tmp_path, cli, monkeypatch):
    """`wb sim up --dir /tmp/typo/a/sim` made /tmp/typo/a, as `mkdir -p` would, and started pdsim there: a
    mistyped folder is an error naming --dir (or $WB_SIM_DIR), as a report's --out and a bundle's -o are. The
    state folder itself is still made when its parent exists."""
    missing = tmp_path / "nodir" / "sub" / "sim"
    ports = [f"--set={k}={v}" for k, v in control.free_ports().items()]
    monkeypatch.delenv("WB_SIM_DIR", raising=False)
    try:
        for args, given in ((["up", "--dir", str(missing), *ports], f"--dir {missing}"),
                            (["restart", "--dir", str(missing)], f"--dir {missing}")):
            code, out, err = cli("sim", *args)
            assert code == 2 and out == "" and "Traceback" not in err, (args, code, out, err)
            assert err.startswith(f"Error: {given}: the folder {missing.parent} does not exist"), err
            assert f"mkdir -p {missing.parent}" in err, err
        monkeypatch.setenv("WB_SIM_DIR", str(missing))
        code, _, err = cli("sim", "up", *ports)
        assert code == 2 and err.startswith(f"Error: $WB_SIM_DIR {missing}: the folder {missing.parent}"), err
        assert not (tmp_path / "nodir").exists()
    finally:
        control.down(missing)
    (tmp_path / "nodir" / "sub").mkdir(parents=True)
    monkeypatch.delenv("WB_SIM_DIR")
    try:
        code, _, err = cli("sim", "up", "--dir", str(missing), *ports)
        assert code == 0, err
    finally:
        control.down(missing)
    assert (missing / "serve.sh").is_file()


@pytest.mark.parametrize("text", ["[]", "{}", '{"pid": "abc", "start": "1"}', '{"pid": true, "start": "1"}',
                                  '{"pid": 1.5, "start": "1"}', "{\"pid\": 12"])
def test_a_pid_file_of_another_shape_names_no_server(sim_dir, cli, text):
    """A pid file holding JSON of another shape than wb writes (a list, no pid, a pid that is no number) ended
    `wb sim status` in a TypeError, KeyError or ValueError traceback, and `wb sim down` too; it names no server
    wb can find, as a truncated one already did: the unit is down, said so, and `down` removes the file."""
    (sim_dir / "run").mkdir()
    (sim_dir / "run" / "decode.json").write_text(text)
    code, out, err = cli("sim", "status", "--dir", str(sim_dir))
    assert code == 3 and "Traceback" not in err, err  # down
    assert "decode   down" in out and "unreadable pid file" in out, out
    code, out, err = cli("sim", "down", "--dir", str(sim_dir))
    assert (code, out.strip()) == (0, "stopped 0 processes"), err
    assert not (sim_dir / "run" / "decode.json").exists()


def test_bad_input_to_restart_or_up_and_a_copied_state_folder_leave_the_running_servers_alone(sim_dir, tmp_path,
                                                                                                  cli):
    """Three ways a running deployment was taken down or taken over, checked on one deployment (each leaves it
    running with the same servers, which the next one checks again).

    `wb sim restart` after an edit that broke the serve file stopped both servers, then refused the file
    (exit 2): bad input had taken the deployment down. The file is now read first; the servers keep running.

    `wb sim up --config FILE` on running servers of other values stopped them (`down`), then refused FILE
    for naming one port twice: bad input took the deployment down, as restart once did.

    A state folder copied while its pdsim ran (cp -r .wb/sim elsewhere) holds pid files naming the original's
    live servers: `wb sim status` of the copy said healthy, and `wb sim down` of the copy stopped the original's
    deployment. A pdsim server serves the folder it runs in: the copy's pid files now name no server of its own."""
    import shutil

    cfg = write_serve(sim_dir)
    pids = sorted(u.pid for u in control.up(sim_dir, config=cfg).units.values())
    before, ports = cfg.read_text(), read_serve_file(cfg)
    # restart: a broken serve file is refused while the servers run
    one_port = before.replace(f"decode_port={ports['decode_port']}", f"decode_port={ports['prefill_port']}")
    for broken, said in ((before.replace("hicache=on", "hicache=maybe"), "hicache='maybe' is not one of"),
                         (one_port, "prefill_port and decode_port are both")):
        cfg.write_text(broken)
        code, out, err = cli("sim", "restart", "--dir", str(sim_dir))
        assert code == 2 and err.startswith(f"Error: {cfg}:") and said in err, (code, out, err)
        assert "Traceback" not in err and cfg.read_text() == broken
        st = control.status(sim_dir)
        assert st.state == "healthy" and sorted(u.pid for u in st.units.values()) == pids
    cfg.write_text(before)
    # up --config: a serve file naming one port twice is refused while the servers run
    other = sim_dir.parent / "one-port.sh"
    other.write_text(one_port)
    code, out, err = cli("sim", "up", "--dir", str(sim_dir), "--config", str(other))
    assert code == 2 and "prefill_port and decode_port are both" in err and "Traceback" not in err, (code, out, err)
    st = control.status(sim_dir)
    assert st.state == "healthy" and sorted(u.pid for u in st.units.values()) == pids
    # a copy of the running state folder
    copy = tmp_path / "copy"
    shutil.copytree(sim_dir, copy)
    code, out, err = cli("sim", "status", "--dir", str(copy))
    assert code == 3 and "pdsim: down" in out, out + err
    assert f"serves pdsim in {sim_dir}" in out, out
    code, out, err = cli("sim", "down", "--dir", str(copy))
    assert (code, out.strip()) == (0, "stopped 0 processes"), out + err
    assert all(pid_alive(p) for p in pids)
    assert control.status(sim_dir).state == "healthy"
    assert sorted(control.down(sim_dir)) == pids


def test_a_copied_state_folder_reads_and_writes_its_own_serve_file(sim_dir, tmp_path, cli):
    """`wb sim up --config DIR/serve.sh` noted the serve file by its absolute path: a copy of the folder (cp -r)
    kept reading, and its --set kept writing, the ORIGINAL folder's serve file, and the sim target refused the
    copy ('pdsim reads its serve file from <original>/serve.sh'). A serve file inside the folder is now noted
    relative to it, so the copy is self-contained."""
    import subprocess

    from workbench.runner.targets.sim import SimTarget

    cfg = write_serve(sim_dir, seed=3)
    control.up(sim_dir, config=cfg)
    control.down(sim_dir)
    original = cfg.read_bytes()
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(sim_dir), str(copy)], check=True)
    pp = free_port()
    dp = free_port(avoid=(pp,))
    try:
        code, out, err = cli("sim", "up", "--dir", str(copy), "--set", "seed=9", "--set", f"prefill_port={pp}",
                             "--set", f"decode_port={dp}")
        assert code == 0, out + err
        assert cfg.read_bytes() == original  # the original's serve file is untouched
        assert read_serve_file(copy / "serve.sh")["seed"] == "9"
        st = control.status(copy)
        assert st.config_path == str(copy / "serve.sh")
        assert st.units["decode"].debug["config"]["seed"] == 9
        SimTarget(sim_dir=copy, options={}).check_config_path(str(copy / "serve.sh"))  # a run may use the copy
        (copy / "serve.sh").write_text((copy / "serve.sh").read_text().replace("seed=9", "seed=11"))
        assert control.restart(copy).units["decode"].debug["config"]["seed"] == 11
        assert cfg.read_bytes() == original
    finally:
        control.down(copy)


def test_a_config_that_names_no_serve_file_is_refused_naming_the_flag(tmp_path, cli):
    """`wb sim up --config missing.sh` said `Error: serve file PATH does not exist`, naming no flag (and said the
    same of /dev/null, which exists). No state folder is made."""
    sdir, missing = tmp_path / "sim", tmp_path / "missing.sh"
    for given, said in ((missing, "does not exist"), ("/dev/null", "is not a regular file")):
        code, out, err = cli("sim", "up", "--dir", str(sdir), "--config", str(given))
        assert code == 2 and out == "" and "Traceback" not in err, (code, out, err)
        assert err.splitlines()[0] == f"Error: --config {given}: the serve file {said}", err
    code, out, _ = cli("sim", "up", "--dir", str(sdir), "--config", str(missing), "--json")
    assert code == 2 and json.loads(out)["error"]["where"] == "--config", out
    assert not sdir.exists()


def test_a_serve_file_named_by_an_earlier_config_and_gone_since_says_so(tmp_path, cli):
    """After `wb sim up --config FILE`, restart and a plain up re-read FILE; once it was deleted they said
    `cannot read serve file FILE` and to `create it with wb sim up`, which fails the same way: the file is named as
    the one --config chose, and the way out is a new --config."""
    sdir, gone = tmp_path / "sim", tmp_path / "mine.sh"
    sdir.mkdir()
    (sdir / "config_path").write_text(str(gone))
    for args in (["restart"], ["up"]):
        code, out, err = cli("sim", *args, "--dir", str(sdir))
        assert code == 2 and out == "" and "Traceback" not in err, (args, code, out, err)
        first, hint = err.splitlines()[:2]
        assert first == f"Error: serve file {gone} does not exist (named by an earlier `wb sim up --config`)", err
        assert hint == f"Hint: name an existing one: wb sim up --dir {sdir} --config FILE", err
    assert sorted(p.name for p in sdir.iterdir()) == ["config_path"]


def test_status_of_a_unit_never_started_prints_no_python_none(sim_dir, cli):
    """A unit with no pid file read "prefill  down  pid=None port=None health=None (no pid file)": Python's None is
    no value wb knows; a missing one reads "-"."""
    code, out, err = cli("sim", "status", "--dir", str(sim_dir))
    assert code == 3, err
    assert "None" not in out, out
    assert re.search(r"^  prefill +down +pid=- port=- health=- \(no pid file\)$", out, re.M), out
