"""`wb sim` through a shell, the repro's output shape and JSON lines, the throughput check, and
the dead class under the repro workload (counted by a probe injected through the environment)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from workbench.sim import control, repro

from pdsim_kit import pid_alive, write_serve

REPO = Path(__file__).resolve().parents[2]
WALL = re.compile(r'^wall=\d+\.\ds counts=\{("(error|done|leak|maxrounds|no_tool)": \d+(, )?)+\}$')
CORR = re.compile(r"^CORRUPTION sessions: (\d+)/(\d+) = \d+%  \(leak=(\d+) no_tool=(\d+) "
                  r"error=(\d+) ok-ish\[done/maxrounds\]=(\d+)\)$")


def wb(*args: str, env=None) -> subprocess.CompletedProcess:
    e = dict(os.environ if env is None else env)
    e["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), e.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", "workbench.cli.main", "sim", *args],
                          capture_output=True, text=True, env=e, timeout=120)


@pytest.fixture(scope="module")
def fixed_sim(tmp_path_factory):
    """One running pdsim (nixl_abort_fix=on) for the tests that only bench it, run a short repro on it or are
    refused by it: none of them changes its config, and each asserts nothing of the others' requests."""
    d = tmp_path_factory.mktemp("fixed") / "sim"
    d.mkdir()
    control.up(d, config=write_serve(d, nixl_abort_fix="on"))
    yield d
    control.down(d)


def _loads_torch(pid: int) -> bool:
    return "libtorch" in Path(f"/proc/{pid}/maps").read_text()


def test_cli_up_repro_journal_status_down(sim_dir):
    cfg = write_serve(sim_dir, nixl_abort_fix="on")
    r = wb("up", "--dir", str(sim_dir), "--config", str(cfg))
    assert r.returncode == 0, r.stderr
    assert "healthy" in r.stdout
    prefill = json.loads(wb("status", "--dir", str(sim_dir), "--json").stdout)["units"]["prefill"]["pid"]
    assert not _loads_torch(prefill)  # torch (~2 s of CPU to import) waits for the first transfer
    t0 = datetime.now(timezone.utc).isoformat()
    jl = sim_dir / "s.jsonl"
    r = wb("repro", "--dir", str(sim_dir), "--sessions", "12", "--rounds", "3", "--ctx", "300",
           "--max-tokens", "2500", "--timeout", "200", "--tag", "T1", "--jsonl", str(jl))
    assert r.returncode == 0, r.stderr
    assert _loads_torch(prefill)      # HiCache backed the prompts up through the transfer kernel's API
    lines = r.stdout.strip().splitlines()
    assert WALL.match(lines[-2]), lines[-2]
    m = CORR.match(lines[-1])
    assert m, lines[-1]
    rows = [json.loads(x) for x in jl.read_text().splitlines()]
    assert len(rows) == 12 == int(m.group(2))
    assert {r["tag"] for r in rows} == {"T1"}
    assert all(r["outcome"] in {"done", "leak", "error", "maxrounds", "no_tool"} for r in rows)
    assert all({"session", "outcome", "rounds", "timings"} <= set(r) for r in rows)
    assert sum(r["outcome"] == "leak" for r in rows) == int(m.group(3))
    # the seed's journal count, as a one-line shell pipeline
    sh = (f"{sys.executable} -m workbench.cli.main sim journal --dir {sim_dir} --unit decode "
          f"--since '{t0}' | grep -ic WaitingForInput")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    count = subprocess.run(sh, shell=True, capture_output=True, text=True, env=env)
    assert count.stdout.strip() == "0"
    r = wb("status", "--dir", str(sim_dir), "--json")
    st = json.loads(r.stdout)
    assert st["state"] == "healthy" and set(st["units"]) == {"prefill", "decode"}
    pids = [u["pid"] for u in st["units"].values()]
    r = wb("down", "--dir", str(sim_dir))
    assert r.returncode == 0 and not any(pid_alive(p) for p in pids)


def test_cli_bad_input_exit_code(sim_dir):
    bad = sim_dir / "bad.sh"
    bad.write_text("hicache=maybe\n")
    r = wb("up", "--dir", str(sim_dir), "--config", str(bad))
    assert r.returncode == 2
    assert f"{bad}:1" in r.stderr and "Error:" in r.stderr
    r = wb("up", "--dir", str(sim_dir), "--set", "nonsense")
    assert r.returncode == 2


def test_throughput_check(fixed_sim):
    one, many = repro.run_bench(fixed_sim, concurrency=(1, 32), tokens=256)
    # the batching model: ~52 tok/s alone, ~445 at C=32 on the seed's clock (end to end, so a
    # little less: prefill and the transfer are in the wall time too)
    assert 30 < one.tok_per_s < 60
    assert 300 < many.tok_per_s < 500
    assert many.tok_per_s > 5 * one.tok_per_s


PROBE = '''
import os, workbench.sim.hicache as hc
def _count(cls):
    orig = cls.__init__
    def init(self, *a, **k):
        with open(os.environ["PDSIM_PROBE_OUT"], "a") as fh:
            fh.write(cls.__name__ + "\\n")
        orig(self, *a, **k)
    cls.__init__ = init
_count(hc.DSAIndexerPoolHost)
_count(hc.DeepSeekV4PagedHostPool)
'''


def test_dsaindexerpoolhost_is_never_constructed_under_the_repro(sim_dir, tmp_path, monkeypatch):
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    (probe_dir / "sitecustomize.py").write_text(PROBE)
    out = tmp_path / "constructed.txt"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(probe_dir), str(REPO)]))
    monkeypatch.setenv("PDSIM_PROBE_OUT", str(out))
    control.up(sim_dir, config=write_serve(sim_dir, index_k_dtype="bf16", hicache="on",
                                           indexer_host_pool_fix="on", nixl_abort_fix="on"))
    res = repro.run_repro(sim_dir, sessions=16, rounds=3, tag="probe")
    assert len(res.sessions) == 16
    st = control.status(sim_dir)
    assert st.units["prefill"].debug["hicache"]["hits"] > 0       # the HiCache path ran
    names = out.read_text().split()
    assert names.count("DeepSeekV4PagedHostPool") == 1            # the live host pool
    assert names.count("DSAIndexerPoolHost") == 0                 # the fix's class: dead code


def test_a_jsonl_path_that_cannot_be_a_file_is_refused_before_the_repro_runs(fixed_sim, cli):
    """--jsonl naming a folder, or a path under a file, ended in IsADirectoryError or FileExistsError, and only
    after the whole repro had run."""
    sim_dir = fixed_sim
    (sim_dir / "afile").write_text("x\n")
    for jl, said in ((sim_dir, f"--jsonl {sim_dir} is a folder"),
                     (sim_dir / "afile" / "s.jsonl", f"--jsonl {sim_dir / 'afile' / 's.jsonl'}: {sim_dir / 'afile'} "
                                                     "is a file, not a folder")):
        code, out, err = cli("sim", "repro", "--dir", str(sim_dir), "--sessions", "4", "--rounds", "1", "--jsonl",
                             str(jl))
        assert code == 2 and out == "", (code, out, err)
        assert err.startswith(f"Error: {said}") and "Traceback" not in err, err
    assert (sim_dir / "afile").read_text() == "x\n"


def test_bench_and_repro_numbers_out_of_range_are_refused_before_any_request(fixed_sim, cli):
    """bench --tokens -5 or -c -1 reached the deployment (exit 1: 'bench request failed', or a 503 after 660
    simulated seconds), --tokens 0 measured 0 tok/s, and repro --timeout nan passed the check 'timeout > 0' (on a
    wedged deployment no request ever timed out)."""
    for args, said in ((["bench", "--tokens", "-5"], "--tokens -5"), (["bench", "--tokens", "0"], "--tokens 0"),
                       (["bench", "-c", "-1"], "--concurrency -1"),
                       (["bench", "-c", "32", "-c", "0"], "--concurrency 0"),
                       (["repro", "--sessions", "2", "--rounds", "1", "--timeout", "nan"],
                        "--timeout nan: not a number")):
        code, out, err = cli("sim", *args, "--dir", str(fixed_sim))
        assert code == 2 and out == "", (args, code, out, err)
        assert err.startswith("Error: ") and said in err and "Traceback" not in err, err


def test_repro_and_bench_on_a_stopped_deployment_are_refused_naming_it_and_how_to_start_it(tmp_path, cli):
    """A deployment brought down (or never started) is a state the user fixes before anything can run, as a
    target another execution holds is: exit 2, one Error line naming the folder, and the command that starts
    it, quoted for the shell (it was exit 1, a failure while running, though nothing ran)."""
    import shlex

    sdir = tmp_path / "my sim"
    sdir.mkdir()
    try:
        code, out, err = cli("sim", "up", "--dir", str(sdir), "--config", str(write_serve(sdir)))
        assert code == 0, err
    finally:
        control.down(sdir)
    jl = tmp_path / "units.jsonl"
    for args in (("repro", "--sessions", "2", "--jsonl", str(jl)), ("bench",)):
        code, out, err = cli("sim", *args, "--dir", str(sdir))
        assert code == 2, (args, out, err)
        assert err.startswith(f"Error: pdsim in {sdir} is not running"), err
        assert f"wb sim up --dir {shlex.quote(str(sdir))}" in err, err
        assert "Traceback" not in err and not jl.exists()


def test_the_shipped_pdsim_profiles_keep_real_and_simulated_time_apart(fixed_sim):
    """`wall_s` on pdsim read the repro's `wall=`, its simulated duration (213.5 s for a run of ~10 s), under a
    name that means real time on a real deployment: now `wall_s` is real seconds on every profile and the
    simulated duration is `sim_s`."""
    from workbench.registry import load_registry
    from workbench.runner.extract import from_regex

    lines: list[str] = []
    res = repro.run_repro(fixed_sim, sessions=6, rounds=2, tag="t", out=lines.append)
    out = "\n".join(lines)
    assert WALL.match(lines[-2]) and CORR.match(lines[-1]), lines  # the seed's two lines stay last
    exp = load_registry(REPO).experiments["agent-repro"]
    assert "simulated" in exp.metrics["sim_s"].description and "real" in exp.metrics["wall_s"].description
    for name in ("sim", "sim-ssh"):
        collect = exp.profiles[name].collect
        assert abs(from_regex("wall_s", collect["wall_s"].regex, out, "continuous") - res.host_s) <= 0.05, name
        assert abs(from_regex("sim_s", collect["sim_s"].regex, out, "continuous") - res.wall_s) <= 0.05, name


def test_a_sim_refusal_names_the_holder_as_the_runner_refusal_does(tmp_path, cli):
    """It named the holder by the uuid its lock is keyed by. The lock records the execution's name and the command
    that resumes it: the refusal names the holder as `wb hypothesis run`'s own refusal does (tests/runner/
    test_target_lock.py), with pid, host and since when, and says to wait or, its runner gone, to resume it."""
    from workbench.runner.targets.sim import sim_lock

    sdir = tmp_path / "sim"
    sdir.mkdir()
    lock = sim_lock(sdir)
    holder = {"execution": "e" * 32, "host": "gpu-box-7", "pid": 4242, "pid_start": "1", "since":
              "2026-12-01T09:00:00+00:00", "what": "hypothesis wedge-confound",
              "name": "execution 3 of wedge-confound", "resume": "wb hypothesis run wedge-confound --resume"}
    lock.write_text(json.dumps(holder, sort_keys=True) + "\n")
    code, out, err = cli("sim", "restart", "--dir", str(sdir))
    assert code == 2, (out, err)
    first, _, hint = err.partition("\nHint: ")
    assert first == (f"Error: pdsim in {sdir} is in use by execution 3 of wedge-confound (pid 4242 on gpu-box-7, "
                     "since 2026-12-01T09:00:00+00:00): `wb sim restart` would change the deployment under its "
                     "runs. Nothing was changed"), err
    assert hint.startswith("wait for it to finish, or stop it (Ctrl-C where it runs, or its pid on gpu-box-7), "
                           "which restores the target:\n  kill 4242\nif its runner is gone (only gpu-box-7 can "
                           "tell), resume it on gpu-box-7, which puts the original config back and frees the lock:\n"
                           "  wb hypothesis run wedge-confound --resume\nor give that run up: put the original "
                           f"config back by hand, then remove the lock:\n  rm -f {lock}\n"), hint
    assert "e" * 32 not in err and sorted(p.name for p in sdir.iterdir()) == [lock.name]


def test_sim_commands_refuse_while_a_sim_ssh_run_holds_the_folder(tmp_path, cli):
    """`wb sim` checked only the lock the `sim` profile took (DIR/wb-target.lock, before it moved beside the serve
    file); the `sim-ssh` profile reaches the same folder over ssh and locks beside the serve file it rewrites, so a
    local `wb sim restart` changed the deployment under its run. Each command that changes pdsim is refused while
    any profile's run holds the folder;
    the runner's own commands, which reach it over ssh (no child of the runner), pass by the holder they carry."""
    import socket

    from workbench.registry.loader import load_experiment
    from workbench.runner.lock import HOLDER_ENV, lock_path, process_start
    from workbench.runner.targets.ssh import SshTarget

    sdir = tmp_path / "sim"
    sdir.mkdir()
    profile = load_experiment(REPO / "experiments" / "agent-repro.yaml")[0].profiles["sim-ssh"]
    serve = profile.config.path.replace("{{ sim_dir }}", str(sdir))
    lock = Path(lock_path(SshTarget(profile.target), "localhost", serve, dict(profile.options)))
    runner = subprocess.Popen(["sleep", "120"])  # the run's runner: alive, and no parent of this process
    try:
        holder = {"execution": "e" * 32, "host": socket.gethostname(), "pid": runner.pid,
                  "pid_start": process_start(runner.pid), "since": "2026-12-01T09:00:00+00:00",
                  "what": "hypothesis wedge-confound"}
        lock.write_text(json.dumps(holder, sort_keys=True) + "\n")
        for args in (["up"], ["down"], ["restart"], ["repro", "--sessions", "2"], ["bench"]):
            code, out, err = cli("sim", *args, "--dir", str(sdir))
            assert code == 2, (args, out, err)
            assert err.startswith(f"Error: pdsim in {sdir} is in use by execution {'e' * 32}, hypothesis "
                                  f"wedge-confound (pid {runner.pid} "), err
            # Its runner lives here: stop it or wait; its lock is never to be removed under it.
            assert f"`wb sim {args[0]}`" in err and f"\n  kill {runner.pid}\n" in err and "Traceback" not in err, err
            assert str(lock) not in err, err
        assert sorted(p.name for p in sdir.iterdir()) == [lock.name]  # nothing started, nothing written
        code, out, err = cli("sim", "down", "--dir", str(sdir), env={HOLDER_ENV: "e" * 32})
        assert code == 0, err
    finally:
        runner.kill()
        runner.wait()


def test_a_repro_number_out_of_range_is_refused_naming_its_flag(tmp_path, cli):
    """`wb sim repro --sessions 0` said only 'repro needs sessions >= 1, rounds >= 1, ctx >= 18, ...': every
    bound, not which flag was wrong (bench names its flag). The refusal comes before pdsim is looked at, in the
    shape of every numeric flag's (tests/cli/test_flag_checks.py): the first flag out of range, what it takes."""
    for args, said in ((["--sessions", "0"], "--sessions 0"), (["--rounds", "-2"], "--rounds -2"),
                       (["--ctx", "5"], "--ctx 5"), (["--max-tokens", "0"], "--max-tokens 0"),
                       (["--timeout", "-1"], "--timeout -1"), (["--sessions", "0", "--rounds", "0"],
                                                               "--sessions 0")):
        code, out, err = cli("sim", "repro", "--dir", str(tmp_path), *args)
        assert code == 2 and out == "", (args, code, out, err)
        assert err.startswith(f"Error: {said}: out of range\nHint: give "), (args, err)
        assert "Traceback" not in err
    code, out, err = cli("sim", "repro", "--dir", str(tmp_path), "--sessions", "0", "--json")
    assert code == 2 and json.loads(out)["error"]["where"] == "--sessions", out
