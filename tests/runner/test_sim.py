"""The runner on pdsim: the seed world over SSH on an operator-run pdsim, the wedge world with its own pdsim.

The seed world runs the seed's full repro size (80 sessions x 4 rounds). The wedge world through the
CLI runs a smaller repro that still wedges (120 sessions x 2 rounds) with a fixed --seed: pdsim is
deterministic for a given serve file and workload seed, so the verdict is too; the full-size wedge
world's verdict is measured by studies/wedge_verdict.py. After every test the serve file equals the original.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runner_kit import run_hypothesis  # noqa: E402  (tests/runner is on sys.path)
from workbench.sim import control
from workbench.sim.config import render_serve_file

pytestmark = pytest.mark.slow  # end to end: runs first (tests/conftest.py)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "bench"
    (root / "experiments").mkdir(parents=True)
    shutil.copy(REPO / "hypotheses.yaml", root / "hypotheses.yaml")
    for f in (REPO / "experiments").glob("*.yaml"):
        (root / "experiments" / f.name).write_text(f.read_text())
    shutil.copytree(REPO / "experiments" / "templates", root / "experiments" / "templates")
    sim_dir = tmp_path / "sim"
    sim_dir.mkdir()
    # An operator's serve file that is not running (the runner starts pdsim itself on free ports).
    original = render_serve_file(control.free_ports()).encode()
    (sim_dir / "serve.sh").write_bytes(original)
    monkeypatch.setenv("WB_ROOT", str(root))
    monkeypatch.setenv("WB_SIM_DIR", str(sim_dir))
    yield type("Bench", (), {"root": root, "sim_dir": sim_dir, "original": original, "db": str(root / "wb.duckdb")})
    control.down(sim_dir)


def _serve(bench) -> bytes:
    return (bench.sim_dir / "serve.sh").read_bytes()


# The smallest repro found that still wedges in the wedge world (aborts and leaks without the fix)
# and leaves enough completed sessions with the fix for a decision within a few replicates: at 80 x 2
# nothing wedges, at 160 x 2 the arm without the fix completes no session at all.
WEDGE_REPRO = ("--sessions 80 --rounds 4", "--sessions 120 --rounds 2")


def test_wedge_world_via_cli_starts_and_stops_its_own_pdsim(bench):
    """In the wedge world the corruption rides on the aborts, so the abort fix removes it: the
    hypothesis must come out supported (sequential mode adds replicates until it is decided)."""
    exp = bench.root / "experiments" / "agent-repro.yaml"
    text = exp.read_text()
    assert WEDGE_REPRO[0] in text
    exp.write_text(text.replace(WEDGE_REPRO[0], WEDGE_REPRO[1], 1))      # the first is the sim profile's
    out = subprocess.run([sys.executable, "-m", "workbench.cli.main", "hypothesis", "run", "wedge-confound",
                          "--set", "causal_model=wedge", "--sequential", "--replicates", "6", "--seed", "5",
                          "--json", "--db", bench.db],
                         capture_output=True, text=True, env=dict(os.environ), timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    s = json.loads(out.stdout)
    assert _serve(bench) == bench.original
    assert control.status(bench.sim_dir).state == "down"  # started for the experiment, stopped after it
    assert s["overrides"] == {"causal_model": "wedge"}
    assert {a["variables"]["causal_model"] for a in s["arms"].values()} == {"wedge"}
    assert {"hypothesis", "experiment", "target", "arms", "runs", "verdict", "reasoning", "checks"} <= set(s)
    assert s["verdict"] == "supported", s["reasoning"]
    assert [(r["status"], r["error"]) for r in s["runs"]] == [("ok", None)] * len(s["runs"])
    assert {c["name"] for c in s["checks"]} >= {"isolation"} and all("passed" in c for c in s["checks"])
    assert s["arms"]["control"]["totals"]["aborts"] > 0 and s["arms"]["control"]["totals"]["leak"] > 0
    assert s["arms"]["treatment"]["totals"]["leak"] == 0 and s["arms"]["treatment"]["totals"]["aborts"] == 0
    replicates = len({r["replicate"] for r in s["runs"]})
    assert s["arms"]["treatment"]["totals"]["sessions"] == 120 * replicates  # the smaller repro ran


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
    ports = {k: v for k, v in (line.split("=") for line in bench.original.decode().splitlines()
                                if line.endswith(tuple("0123456789")) and "_port=" in line)}
    p = bench.root / "experiments" / "agent-repro.yaml"
    text = p.read_text()
    head, _, ssh = text.partition("  sim-ssh:\n")
    ssh = (ssh.replace("hosts: [localhost]",
                       f"hosts: [127.0.0.1]\n      user: {ssh_server.user}\n      port: {ssh_server.port}\n"
                       f"      known_hosts: {ssh_server.known_hosts}\n      identity_file: {ssh_server.client_key_path}")
              .replace("sim_dir: /tmp/wb-sim", f"sim_dir: {bench.sim_dir}")
              .replace('prefill_port: "30000"', f'prefill_port: "{ports["prefill_port"]}"')
              .replace('decode_port: "30002"', f'decode_port: "{ports["decode_port"]}"'))
    p.write_text(head + "  sim-ssh:\n" + ssh + f"    options: {{work_dir: {bench.sim_dir.parent}/remote}}\n")
    control.up(bench.sim_dir)  # the operator's deployment (the systemd units' analogue)
    try:
        before = control.status(bench.sim_dir)
        s = run_hypothesis("wedge-confound", db=bench.db, replicates=1, target="sim-ssh", show_progress=False,
                           build_report=False, seed=4)
        assert _serve(bench) == bench.original
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

    from workbench.runner.lock import LOCK_NAME

    cmd = [sys.executable, "-m", "workbench.cli.main", "hypothesis", "run", "wedge-confound", "--replicates", "1",
           "--json"]
    lock = bench.sim_dir / LOCK_NAME
    a = subprocess.Popen(cmd + ["--db", str(bench.root / "a.duckdb")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        t0 = time.monotonic()
        while not lock.exists():
            assert a.poll() is None, a.communicate()[1][-2000:]
            assert time.monotonic() - t0 < 240
            time.sleep(0.1)
        b = subprocess.run(cmd + ["--db", str(bench.root / "b.duckdb")], capture_output=True, text=True,
                           env=dict(os.environ), timeout=300)
        out_a, err_a = a.communicate(timeout=600)
    finally:
        if a.poll() is None:
            a.kill()
    assert b.returncode == 1 and "is in use by execution" in b.stderr and "Traceback" not in b.stderr, b.stderr
    assert a.returncode == 0, err_a[-2000:]
    s = json.loads(out_a)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"]
    # Each arm ran on the config it is stored under: the abort fix removes the aborts, its absence shows them.
    assert s["arms"]["treatment"]["totals"]["aborts"] == 0
    assert s["arms"]["control"]["totals"]["aborts"] > 0
    assert _serve(bench) == bench.original and not lock.exists()
    assert control.status(bench.sim_dir).state == "down"


def test_kill_9_mid_run_then_resume_leaves_pdsim_as_it_was(bench):
    """The runner started pdsim and was killed mid-workload: --resume stops the orphaned `sim repro`, adopts
    the pdsim its execution started, finishes the plan, exits 0, and leaves serve.sh and pdsim as before."""
    import signal
    import time

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
    res = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert _serve(bench) == bench.original
    assert control.status(bench.sim_dir).state == "down"
    stat = Path(f"/proc/{orphan}/stat")
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
