"""The runner on pdsim: the seed world over SSH on an operator-run pdsim, two runs at once, kill -9 and
--resume (the wedge world through the CLI is in test_sim_wedge.py, a file of its own so that another
worker takes this one meanwhile).

The seed world runs the seed's full repro size (80 sessions x 4 rounds). After every test the serve file
equals the original (`bench`: tests/runner/conftest.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from runner_kit import run_hypothesis  # noqa: E402  (tests/runner is on sys.path)
from workbench.sim import control

pytestmark = pytest.mark.slow  # end to end: runs first (tests/conftest.py)

REPO = Path(__file__).resolve().parents[2]


def test_each_replicate_draws_its_workload_seed_from_the_execution_seed():
    from workbench.runner.plan import make_plan, replicate_value

    a = make_plan(["control", "treatment"], 4, seed=11, per_replicate=["seed"])
    b = make_plan(["control", "treatment"], 4, seed=11, per_replicate=["seed"])
    assert [r.values for r in a.runs] == [r.values for r in b.runs]        # reproducible from --seed
    by_rep = {}
    for r in a.runs:
        by_rep.setdefault(r.replicate, set()).add(r.values["seed"])
    assert all(len(v) == 1 for v in by_rep.values())                        # both arms share it
    assert len({v.pop() for v in by_rep.values()}) == 4                     # a fresh one per replicate
    assert a.runs[0].values["seed"] == replicate_value(11, a.runs[0].replicate, "seed")
    assert make_plan(["control"], 2, seed=11).runs[0].values == {}
    assert type(a).from_dict(a.to_dict()).runs == a.runs                     # --resume keeps them


def test_seed_world_over_ssh_end_to_end(bench, ssh_server):
    """The sglang-pd shape (upload, bash -n, restart, health x2, repro, journal count) through a real SSH
    server, on a pdsim the operator runs: the seed world's decisive experiment, both arms recorded."""
    from typer.testing import CliRunner

    from workbench.cli.main import app

    ports = {k: v for k, v in (line.split("=") for line in bench.original.decode().splitlines()
                                if line.endswith(tuple("0123456789")) and "_port=" in line)}
    p = bench.root / "experiments" / "agent-repro.yaml"
    text = p.read_text()
    head, _, ssh = text.partition("  sim-ssh:\n")
    ssh = (ssh.replace("hosts: [localhost]",
                       f"hosts: [127.0.0.1]\n      user: {ssh_server.user}\n      port: {ssh_server.port}\n"
                       f"      known_hosts: {ssh_server.known_hosts}\n"
                       f"      identity_file: {ssh_server.client_key_path}")
              .replace("sim_dir: /tmp/wb-sim", f"sim_dir: {bench.sim_dir}")
              .replace('prefill_port: "30000"', f'prefill_port: "{ports["prefill_port"]}"')
              .replace('decode_port: "30002"', f'decode_port: "{ports["decode_port"]}"'))
    # Its commands reach pdsim through sshd, as no child of the runner: each names the lock it works under.
    ssh = ssh.replace('      wb_version: "{{ wb }} --version"\n',
                      '      wb_version: "{{ wb }} --version"\n      holder: "printenv WB_TARGET_HOLDER"\n')
    p.write_text(head + "  sim-ssh:\n" + ssh + f"    options: {{work_dir: {bench.sim_dir.parent}/remote}}\n")
    control.up(bench.sim_dir)  # the operator's deployment (the systemd units' analogue)
    try:
        before = control.status(bench.sim_dir)
        s = run_hypothesis("wedge-confound", db=bench.db, replicates=1, target="sim-ssh", show_progress=False,
                           build_report=False, seed=4)
        assert bench.serve() == bench.original
        after = control.status(bench.sim_dir)
        assert after.state == "healthy"  # left serving, restarted on the original config
        assert {u: v.pid for u, v in after.units.items()} != {u: v.pid for u, v in before.units.items()}
        assert control.running_config(bench.sim_dir).nixl_abort_fix is False
    finally:
        control.down(bench.sim_dir)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"], [(r["status"], r["error"]) for r in s["runs"]]
    cmds = " ".join(ssh_server.commands)
    assert "sim restart --dir" in cmds and "sim journal --dir" in cmds and "sim repro --dir" in cmds
    assert s["target"].startswith("ssh:")
    # The stored records, read in this process: the runner above ran in it too (no subprocess boundary to test).
    shown = [json.loads(CliRunner().invoke(app, ["runs", "show", str(r["id"]), "--json", "--db", bench.db, "--root",
                                                 str(bench.root)]).stdout) for r in s["runs"]]
    holders = {r["fingerprint"]["holder"] for r in shown}  # the execution's UUID, the one its lock names
    assert len(holders) == 1 and re.fullmatch(r"[0-9a-f]{32}", holders.pop()), shown[0]["fingerprint"]
    for arm in ("control", "treatment"):
        t = s["arms"][arm]["totals"]
        assert t["sessions"] == 80 and t["corruption_rate"] is not None
        assert t["waiting_for_input"] is not None and t["aborts"] == t["waiting_for_input"]
    assert s["arms"]["control"]["variables"]["causal_model"] == "seed"
    # The seed's shape: the wedge (aborts) without the fix, and corruption with the fix all the same.
    assert s["arms"]["control"]["totals"]["aborts"] > 0
    assert s["arms"]["treatment"]["totals"]["leak"] > 0


def test_two_concurrent_runs_on_pdsim_one_is_refused_none_mislabelled(bench):
    """Two `wb hypothesis run` on one pdsim: the second is refused before it touches anything; the first
    runs every arm on the server its config asked for and leaves serve.sh and the simulator as they were."""
    import time

    from workbench.runner.targets.sim import sim_lock

    from typer.testing import CliRunner

    from workbench.cli.main import app

    # The seed's full repro: smaller ones (8 x 1, 40 x 2, 80 x 2 at --seed 3) show no aborts without the fix.
    args = ["hypothesis", "run", "wedge-confound", "--replicates", "1", "--json"]
    lock = sim_lock(bench.sim_dir)
    a = subprocess.Popen([sys.executable, "-m", "workbench.cli.main", *args, "--db", str(bench.root / "a.duckdb")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        t0 = time.monotonic()
        while not lock.exists():
            assert a.poll() is None, a.communicate()[1][-2000:]
            assert time.monotonic() - t0 < 240
            time.sleep(0.1)
        # The second run in this process: its refusal is the command's, not the process boundary's.
        b = CliRunner().invoke(app, [*args, "--db", str(bench.root / "b.duckdb")])
        out_a, err_a = a.communicate(timeout=600)
    finally:
        if a.poll() is None:
            a.kill()
    assert b.exit_code == 2 and "is in use by execution" in b.stderr and "Traceback" not in b.stderr, b.stderr
    assert b.exception is None or isinstance(b.exception, SystemExit), b.exception
    assert a.returncode == 0, err_a[-2000:]
    s = json.loads(out_a)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"]
    # Each arm ran on the config it is stored under: the abort fix removes the aborts, its absence shows them.
    assert s["arms"]["treatment"]["totals"]["aborts"] == 0
    assert s["arms"]["control"]["totals"]["aborts"] > 0
    assert bench.serve() == bench.original and not lock.exists()
    assert control.status(bench.sim_dir).state == "down"


def test_kill_9_mid_run_then_resume_leaves_pdsim_as_it_was(bench):
    """The runner started pdsim and was killed mid-workload: --resume stops the orphaned workload (here still
    waiting to start its `sim repro`), adopts the pdsim its execution started, finishes the plan, exits 0, and
    leaves serve.sh and pdsim as before."""
    import signal
    import time

    # What is killed and resumed here does not depend on the workload's size: a smaller repro than the seed's.
    # Each workload waits for the file `go` first, so the one the killed runner left is still running when the
    # resume starts (a repro that ended on its own would pass the check below without any stop).
    go = bench.root / "go"
    exp = bench.root / "experiments" / "agent-repro.yaml"
    exp.write_text(exp.read_text().replace("--sessions 80 --rounds 4", "--sessions 8 --rounds 1", 1)
                   .replace("{{ wb }} sim repro", f"for i in $(seq 3000); do [ -e {go} ] && break; sleep 0.1; done && "
                            "{{ wb }} sim repro", 1))
    cmd = [sys.executable, "-m", "workbench.cli.main", "hypothesis", "run", "wedge-confound", "--replicates", "1",
           "--db", bench.db]
    a = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ))
    arts = bench.root / ".wb" / "artifacts"

    def repro_pids() -> list[int]:
        out = []
        for p in arts.glob("execution-*/children/*"):
            try:
                if b"repro" in Path(f"/proc/{p.name}/cmdline").read_bytes():
                    out.append(int(p.name))
            except OSError:
                pass
        return out

    t0 = time.monotonic()
    while not repro_pids():
        assert a.poll() is None, a.communicate()[1][-2000:]
        assert time.monotonic() - t0 < 240
        time.sleep(0.1)
    (orphan,) = repro_pids()
    a.send_signal(signal.SIGKILL)
    a.wait(30)
    assert control.status(bench.sim_dir).state != "down"  # the killed runner's pdsim is still up
    stat = Path(f"/proc/{orphan}/stat")

    def gone() -> bool:
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True

    assert not gone()  # the orphan waits for `go`: only the resume can end it
    res = subprocess.Popen(cmd + ["--resume"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ))
    try:
        t0 = time.monotonic()
        while not gone():  # the resume stops it before its own runs, whose workloads wait for `go` too
            assert res.poll() is None, res.communicate()[1][-2000:]
            assert time.monotonic() - t0 < 240
            time.sleep(0.1)
        go.touch()
        _, err = res.communicate(timeout=600)
    finally:
        go.touch()
        if res.poll() is None:
            res.kill()
    assert res.returncode == 0, err[-2000:]
    assert bench.serve() == bench.original
    assert control.status(bench.sim_dir).state == "down"
    assert gone()


def test_sigterm_then_resume_restarts_pdsim_on_the_ports_it_had(bench, cli):
    """A runner stopped by SIGTERM stops the pdsim it started; --resume starts it again. The ports wb chose
    are part of the rendered serve file, so new ones made every resumed execution's replicates differ in
    config (flagged, verdict inconclusive): the resume reuses the ports noted by the execution."""
    import signal
    import time

    # The ports, not the workload, are what is checked: a repro as small as the one test_sim_under_run.py uses.
    exp = bench.root / "experiments" / "agent-repro.yaml"
    exp.write_text(exp.read_text().replace("--sessions 80 --rounds 4", "--sessions 8 --rounds 1", 1))
    cmd = [sys.executable, "-m", "workbench.cli.main", "hypothesis", "run", "wedge-confound", "--replicates", "2",
           "--db", bench.db]
    a = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ))
    children = bench.root / ".wb" / "artifacts"
    seen: set[str] = set()
    t0 = time.monotonic()
    while len(seen) < 2:                    # the second run's repro: the first run has ended
        assert a.poll() is None, a.communicate()[1][-2000:]
        assert time.monotonic() - t0 < 240
        for p in children.glob("execution-*/children/*"):
            try:
                if b"repro" in Path(f"/proc/{p.name}/cmdline").read_bytes():
                    seen.add(p.name)
            except OSError:
                pass
        time.sleep(0.05)
    a.send_signal(signal.SIGTERM)
    assert a.wait(120) == 143
    assert control.status(bench.sim_dir).state == "down"   # it stopped the pdsim it started
    # The resume in this process (`cli`): what is checked is the ports it reuses, not a process boundary.
    code, out, err = cli(*cmd[3:], "--resume", "--json")
    assert code in (0, 1), err[-2000:]
    s = json.loads(out)
    (config,) = [c for c in s["checks"] if c["name"] == "config"]
    assert config["passed"], config
    assert bench.serve() == bench.original


def test_ctrl_c_while_pdsim_comes_up_restores_the_serve_file_and_stops_it(bench):
    """A signal while `wb sim up` started pdsim (the ports already written into serve.sh) left serve.sh
    changed and pdsim running: the setup ran outside the restore's reach, and the pdsim it was starting was
    not yet "ours" to stop. The runner still said "the target was restored"."""
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "workbench.cli.main", "hypothesis", "run", "wedge-confound",
                             "--db", bench.db], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while bench.serve() == bench.original:  # `sim up` has written its ports: pdsim is coming up
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() - t0 < 300
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err[-3000:]
    assert bench.serve() == bench.original
    assert control.status(bench.sim_dir).state == "down"
