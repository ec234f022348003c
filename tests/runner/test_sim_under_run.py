"""pdsim changed under a run: `wb sim` commands refuse while an execution holds the sim folder's lock, and a run
whose serve file was rewritten or whose servers were restarted during its workload is invalid, not evidence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.runner.targets.sim import sim_lock
from workbench.sim import control

pytestmark = pytest.mark.slow  # end to end on pdsim

WB = [sys.executable, "-m", "workbench.cli.main"]
REPRO = "{{ wb }} sim repro --dir {{ sim_dir }} --sessions 80 --rounds 4"


def _workload(bench, before: str) -> None:
    """Run `before` (a shell command) ahead of a smaller repro in each run's workload: what these tests check does
    not depend on its size."""
    exp = bench.root / "experiments" / "agent-repro.yaml"
    text = exp.read_text()
    assert REPRO in text
    exp.write_text(text.replace(REPRO, before + " && {{ wb }} sim repro --dir {{ sim_dir }} --sessions 8 --rounds 1",
                                1))


def _sim(*args: str):
    """`wb sim ARGS` run in this process (its refusal is the command's, not the process boundary's): the result's
    exit_code and stderr. An exception it did not turn into an Error (a traceback from the CLI) fails here."""
    from typer.testing import CliRunner

    from workbench.cli.main import app

    res = CliRunner().invoke(app, ["sim", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), (args, res.exception, res.output)
    return res


def _wait(cond, proc: subprocess.Popen, what: str, limit_s: float = 300) -> None:
    t0 = time.monotonic()
    while not cond():
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() - t0 < limit_s, f"{what} never happened"
        time.sleep(0.1)


def _held_run(bench, *flags: str, stdout=subprocess.PIPE) -> tuple[subprocess.Popen, Path, dict]:
    """`wb hypothesis run wedge-confound` started (its workload waits for the file bench.root/go, see `_workload`)
    and waited for until its first workload runs on a healthy pdsim: the process, the lock and its record."""
    a = subprocess.Popen(WB + ["hypothesis", "run", "wedge-confound", "--replicates", "1", "--seed", "3", *flags,
                               "--db", bench.db], stdout=stdout, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ))
    lock = sim_lock(bench.sim_dir)
    try:
        # The status (two HTTP requests) is asked last, once the workload has started: not at every poll before.
        _wait(lambda: lock.exists() and list((bench.root / ".wb" / "artifacts").glob("execution-*/run-*/stdout.txt"))
              and control.status(bench.sim_dir, debug=False).state == "healthy", a, "first workload")
        return a, lock, json.loads(lock.read_text())
    except BaseException:
        a.kill()
        raise


def _sim_here(bench) -> None:
    """A profile `sim-here`: sim-ssh's steps on this machine (a `local` target), on the bench's pdsim folder."""
    exp = bench.root / "experiments" / "agent-repro.yaml"
    text = exp.read_text()
    ssh = text.partition("  sim-ssh:\n")[2]
    assert "kind: ssh\n      hosts: [localhost]\n" in ssh and "sim_dir: /tmp/wb-sim" in ssh
    here = (ssh.replace("kind: ssh\n      hosts: [localhost]\n", "kind: local\n")
            .replace("sim_dir: /tmp/wb-sim", f"sim_dir: {bench.sim_dir}"))
    exp.write_text(text + "  sim-here:\n" + here)


def test_sim_commands_refuse_while_a_run_holds_pdsim(bench):
    """The user's trial: `wb sim up --set nixl_abort_fix=off; wb sim restart` during `wb hypothesis run` exited 0
    and rewrote the serve file mid-run. Each command that changes, stops or loads pdsim is refused while the run
    is in its workload (held there by a file it waits for): exit 2, the execution, hypothesis and pid named,
    the serve file and the servers untouched; status and journal still answer; the run then ends as usual."""
    from typer.testing import CliRunner

    from workbench.cli.main import app

    go = bench.root / "go"
    _workload(bench, f"for i in $(seq 3000); do [ -e {go} ] && break; sleep 0.1; done")
    _sim_here(bench)
    a, lock, holder = _held_run(bench, "--json")
    try:
        # The lock records the execution as the store names it and the command that resumes it: the refusal
        # names the holder by them, not by the uuid the lock is keyed by.
        assert holder["name"] == "execution 1 of wedge-confound", holder
        assert holder["resume"].startswith(f"wb hypothesis run wedge-confound --resume --db {bench.db}"), holder
        serve, pids = bench.serve(), {u: s.pid for u, s in control.status(bench.sim_dir).units.items()}
        for cmd in (["up", "--set", "nixl_abort_fix=off"], ["restart"], ["down"], ["repro", "--sessions", "2"],
                    ["bench", "-c", "1"]):
            res = _sim(*cmd)
            assert res.exit_code == 2, (cmd, res.stdout, res.stderr)
            first = res.stderr.splitlines()[0]
            assert first.startswith(f"Error: pdsim in {bench.sim_dir} is in use by execution 1 of wedge-confound "
                                    f"in the store {bench.db} (pid {a.pid} of user {holder['user']} on "
                                    f"{holder['host']}, since {holder['since']})"), first
            # Its runner lives here: wait or stop it, never remove its lock or resume it.
            assert f"restores the target:\n  kill {a.pid}\n" in res.stderr, res.stderr
            assert "--resume" not in res.stderr and "rm -f" not in res.stderr, res.stderr
            assert f"`wb sim {cmd[0]}`" in first and "Traceback" not in res.stderr, res.stderr
            assert bench.serve() == serve
            assert {u: s.pid for u, s in control.status(bench.sim_dir).units.items()} == pids
        # A profile that reaches the same pdsim as a service (it rewrites the folder's serve file, as sim-ssh
        # does over ssh) is refused too: both kinds of profile lock the one deployment in one place.
        res = CliRunner().invoke(app, ["hypothesis", "run", "wedge-confound", "--target", "sim-here", "--replicates",
                                       "1", "--db", bench.db])
        assert res.exit_code == 2, res.output[-2000:]
        assert res.output.startswith("Error: target local is in use by execution 1 of wedge-confound (pid "), res.output
        assert bench.serve() == serve
        for cmd in (["status"], ["journal", "--unit", "decode"]):
            res = _sim(*cmd)
            assert "in use by" not in res.stderr and res.exit_code in (0, 1), (cmd, res.stderr)
        go.touch()
        out, err = a.communicate(timeout=600)
    finally:
        go.touch()
        if a.poll() is None:
            a.kill()
    assert a.returncode == 0, err[-2000:]
    s = json.loads(out)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"]
    assert bench.serve() == bench.original and not lock.exists()
    # Free again once the run ended: the same command works.
    assert _sim("down").exit_code == 0


@pytest.mark.parametrize("change", ["set", "restart"])
def test_a_run_whose_pdsim_changed_under_it_is_invalid(bench, cli, change):
    """The serve file rewritten (`wb sim up --set nixl_abort_fix=off`) or the servers restarted during the
    workload: the treatment measured the control's config (or a fresh deployment), and was recorded as evidence
    (two identical arms, a verdict with isolation passing). Here the workload itself does it, as the runner's
    child (which the lock lets through), so it happens at a known point: the run is invalid with the reason,
    the verdict does not rest on it, and wb exits 1."""
    sim = "{{ wb }} sim " + ("up --dir {{ sim_dir }} --set nixl_abort_fix=off" if change == "set"
                             else "restart --dir {{ sim_dir }}")
    # Only the treatment is disturbed: with --set the control's config is already off (no change, no restart).
    _workload(bench, "{ [ {{ arm }} = control ] || " + sim + " >/dev/null; }")
    # wb in this process (`cli`): the run's record and exit code are the command's, not a process boundary's.
    code, out, err = cli("hypothesis", "run", "wedge-confound", "--replicates", "1", "--seed", "3", "--json",
                         "--db", bench.db)
    assert code == 1, err[-2000:]
    s = json.loads(out)
    runs = {r["arm"]: r for r in s["runs"]}
    assert runs["control"]["status"] == "ok", runs["control"]
    assert runs["treatment"]["status"] == "invalid", runs["treatment"]
    why = runs["treatment"]["error"]
    if change == "set":
        assert "the config changed during the run" in why and "wrote nixl_abort_fix=on, now nixl_abort_fix=off" in why
    else:
        assert "the deployment was restarted during the run" in why
    assert "not evidence" in why
    assert s["verdict"] in ("inconclusive", "invalid"), s["verdict"]
    assert s["arms"]["treatment"]["totals"].get("sessions") in (0, None), s["arms"]["treatment"]
    assert bench.serve() == bench.original


def _stop_orphans(bench) -> None:
    """Stop the workloads a killed runner left (their process groups, noted under its execution's folder)."""
    import signal

    for p in (bench.root / ".wb" / "artifacts").glob("execution-*/children/*"):
        if p.name.isdigit():
            try:
                os.killpg(int(p.name), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def test_a_runner_killed_mid_run_keeps_pdsim_for_its_resume(bench, cli, monkeypatch: pytest.MonkeyPatch):
    """kill -9 of the runner mid-run leaves an arm's serve file in pdsim and a lock whose holder is dead. `wb sim
    up --set nixl_abort_fix=off` and `wb sim restart` took that lock for free: they rewrote the serve file the
    resume would then put back over (or refuse on). They refuse, exit 2, with one Error that says a killed run
    left pdsim changed and a hint holding the exact command that restores it; nothing changes. `wb sim status`
    answers; `wb sim down` stops the servers but keeps the serve file, the lock and the saved original, so that
    command, run as printed, still puts the original back."""
    import shlex
    import signal

    go = bench.root / "go"
    _workload(bench, f"for i in $(seq 3000); do [ -e {go} ] && break; sleep 0.1; done")
    a, lock, holder = _held_run(bench, stdout=subprocess.DEVNULL)
    try:
        a.send_signal(signal.SIGKILL)
        a.wait(30)
    finally:
        if a.poll() is None:
            a.kill()
        _stop_orphans(bench)
    left = bench.serve()
    assert left != bench.original
    pids = {u: s.pid for u, s in control.status(bench.sim_dir).units.items()}
    for cmd in (["up", "--set", "nixl_abort_fix=off"], ["restart"]):
        res = _sim(*cmd)
        assert res.exit_code == 2, (cmd, res.stdout, res.stderr)
        errors = [line for line in res.stderr.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1 and "Traceback" not in res.stderr, res.stderr
        assert errors[0].startswith(f"Error: pdsim in {bench.sim_dir} was left changed by execution 1 of "
                                    f"wedge-confound in the store {bench.db}, whose runner (pid {a.pid}") \
            and "killed" in errors[0], errors
        assert f"`wb sim {cmd[0]}`" in errors[0], errors
        assert holder["resume"] in res.stderr, res.stderr
        assert bench.serve() == left
        assert {u: s.pid for u, s in control.status(bench.sim_dir).units.items()} == pids
    res = _sim("status")
    assert res.exit_code == 0 and "Error" not in res.stderr, res.stderr
    with monkeypatch.context() as m:  # stderr a terminal of 80 columns
        m.setattr("workbench.cli._common.stderr_is_tty", lambda: True)
        m.setenv("COLUMNS", "80")
        res = _sim("down")
    assert res.exit_code == 0, res.stderr
    # It says what still restores the serve file: the command whole on one line (the note ran on, one line), the
    # prose around it wrapped between words.
    note = res.stderr.splitlines()
    assert len(note) > 2 and any(line.strip() == holder["resume"] for line in note), res.stderr
    assert all(len(line) <= 80 or " " not in line.strip() or holder["resume"] in line
               or line.lstrip().startswith("cp ") for line in note), res.stderr  # a path, a command: whole
    assert control.status(bench.sim_dir).state == "down" and bench.serve() == left and lock.exists()
    go.touch()
    # The printed command, run in this process (`cli`: the console script's command tree) as `wb` would run it.
    code, _, err = cli(*shlex.split(holder["resume"])[1:])
    assert code == 0, err[-2000:]
    assert bench.serve() == bench.original and not lock.exists()
    assert _sim("up", "--set", "nixl_abort_fix=off").exit_code == 0
