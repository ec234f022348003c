"""What `wb sim` says of a lock whose runner is gone: `status` and `down` (text and --json) tell it, each way on is
whole and consistent, and following one leads to no refusal. The lock, the saved original and the serve file are
written by hand, as a runner killed mid-run leaves them (tests/runner/test_sim_under_run.py kills a real one)."""

from __future__ import annotations

import hashlib
import json
import shlex
import socket
import subprocess
from pathlib import Path

import pytest

from workbench.runner.lock import pid_space
from workbench.runner.restore import saved_snapshots
from workbench.runner.targets.sim import refuse_while_in_use, sim_lock

UUID = "f" * 32
ARM = "# written by the run for its treatment arm\nnixl_abort_fix=on\n"


def _killed_run(tmp_path: Path, *, saved: bool = True) -> tuple[Path, Path, Path, str]:
    """pdsim's folder as a runner killed mid-run leaves it: the serve file holds an arm's config where there was no
    file before, the lock names the dead runner, and its folder holds the saved original (`saved`), whose absence
    means the execution ended (its restore done). Returns the sim folder, the lock, the execution's folder and the
    command that resumes it."""
    sim, folder = tmp_path / "sim", tmp_path / "bench" / ".wb" / "artifacts" / f"execution-{UUID}"
    sim.mkdir()
    folder.mkdir(parents=True)
    (sim / "serve.sh").write_text(ARM)
    if saved:
        (folder / "snapshot.json").write_text(json.dumps({"execution": UUID, "hosts": {"local": {
            "host": "local", "path": str(sim / "serve.sh"), "exists": False, "mode": 0o644,
            "local_copy": str(folder / "original-x"), "sha256": hashlib.sha256(b"").hexdigest()}}}))
        (folder / "sim-started").write_text(str(sim))
    dead = subprocess.Popen(["true"])
    dead.wait()
    resume = f"wb hypothesis run wedge-confound --resume --db {tmp_path / 'bench' / 'wb.duckdb'} --root " \
             f"{tmp_path / 'bench'}"
    holder = {"execution": UUID, "host": socket.gethostname(), "pid": dead.pid, "pid_start": "1",
              "since": "2026-12-06T21:00:00+00:00", "pid_space": pid_space(), "what": "hypothesis wedge-confound",
              "name": "execution 1 of wedge-confound", "resume": resume, "folder": str(folder)}
    lock = sim_lock(sim)
    lock.write_text(json.dumps(holder, sort_keys=True) + "\n")
    return sim, lock, folder, resume


def _lines(text: str, width: int) -> list[str]:
    from workbench.wrapping import wrap

    return [line for part in text.splitlines() for line in wrap(part, width)]


def test_sim_status_and_down_say_what_a_killed_runner_left(tmp_path, cli):
    """Right after kill -9 of the runner `wb sim status` said only the servers' state, showing the arm's config as
    pdsim's, with no word of the lock or of the run that left it; `wb sim down --json` returned only the pids, its
    note on stderr alone. Both say it, text and --json, with the command that resumes the run; status frees
    nothing."""
    sim, lock, folder, resume = _killed_run(tmp_path)
    code, out, err = cli("sim", "status", "--dir", str(sim))
    assert code == 3, (out, err)  # the servers' state, which scripts wait on: no server runs
    said = out.split("Note: ", 1)[1] if "Note: " in out else ""
    assert said.startswith(f"pdsim in {sim} was left changed by execution 1 of wedge-confound, whose runner (pid "), out
    assert f"{sim / 'serve.sh'} is there, though there was no such file before that run; the serve file holds that " \
        "run's config (one of its arms), not pdsim's own, and its lock is still held though its runner is gone" \
        in said, out
    assert f"\n  {resume}\n" in said, out
    code, out, _ = cli("sim", "status", "--dir", str(sim), "--json")
    left = json.loads(out)["left"]
    assert (left["left"], left["lock"], left["resume"], left["execution"]) == (
        "changed", str(lock), resume, "execution 1 of wedge-confound"), left
    assert lock.exists() and saved_snapshots(folder, UUID)
    code, out, err = cli("sim", "down", "--dir", str(sim), "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["stopped"] == [] and d["left"]["resume"] == resume and d["left"]["what"] in err, (d, err)


def test_the_ways_on_after_a_killed_run_are_whole_and_lead_to_no_refusal(tmp_path, cli, monkeypatch):
    """The note said to put the original back by hand and that the next `wb sim up` frees the lock; done so, the
    resume refused ("its lock has been removed since"), and after a second rm -f it stopped the pdsim the user had
    started since. Each way on is one path: the resume (one command), or giving the run up (the original put back),
    after which the next command that changes pdsim frees the lock and drops the saved original and the note that
    the run started pdsim: a later resume takes pdsim as it finds it, and leaves it so."""
    sim, lock, folder, resume = _killed_run(tmp_path)
    with monkeypatch.context() as m:  # stderr a terminal of 60 columns
        m.setattr("workbench.cli._common.stderr_is_tty", lambda: True)
        m.setenv("COLUMNS", "60")
        code, _, err = cli("sim", "down", "--dir", str(sim))
    assert code == 0, err
    lines = err.splitlines()
    rm = shlex.join(["rm", "-f", str(sim / "serve.sh")])
    assert [line.strip() for line in lines if "rm -f" in line or "--resume" in line] == [resume, rm], err
    prose = " ".join(line.strip() for line in lines)
    assert "either resume that run" in prose and "or give that run up" in prose, err
    subprocess.run(rm, shell=True, check=True)  # the way that gives the run up, as printed
    assert refuse_while_in_use(sim, "up") is None  # `wb sim up` then passes ...
    assert not lock.exists()  # ... freeing the lock, the saved original and the note that the run started pdsim
    assert saved_snapshots(folder, UUID) == {} and not (folder / "sim-started").exists()


def test_a_lock_of_an_execution_that_ended_is_stale_and_removed_by_the_command_given(tmp_path, cli):
    """A lock naming an execution whose saved original is gone from its folder (it ended, its restore done): `wb sim
    down` said "its saved original is not in ..." and then "the serve file, the lock and the saved original are
    kept", offered a resume that answers "no interrupted execution", and "remove PATH" in place of a command. It
    says the lock is stale and gives the one `rm -f`, which frees pdsim."""
    sim, lock, _, resume = _killed_run(tmp_path, saved=False)
    code, _, err = cli("sim", "down", "--dir", str(sim))
    assert code == 0, err
    assert f"pdsim in {sim} holds a stale lock of execution 1 of wedge-confound" in err, err
    assert "--resume" not in err and "kept" not in err, err
    rm = shlex.join(["rm", "-f", str(lock)])
    assert [line.strip() for line in err.splitlines() if "rm -f" in line] == [rm], err
    code, _, err = cli("sim", "restart", "--dir", str(sim))
    assert code == 2 and f"\n  {rm}\n" in err, err
    subprocess.run(rm, shell=True, check=True)
    assert refuse_while_in_use(sim, "up") is None


@pytest.mark.parametrize("resumed", [False, True])
def test_the_pdsim_a_run_stops_is_told_as_it_was(resumed, monkeypatch):
    """A resume stopped the pdsim its killed runner had left up and said "(it was down before)", though it was up
    when the resume began: it says it was down before the execution began."""
    import asyncio
    from types import SimpleNamespace

    from workbench.runner import execute

    class Target:
        started_here = True

        def where(self, host: str) -> str:
            return "pdsim"

        async def teardown(self) -> None:
            return None

    state = SimpleNamespace(resumed=resumed, restore_notes=[], left=[], progress=None)
    monkeypatch.setattr(execute, "_untouched", lambda state, target: False)
    asyncio.run(execute._teardown(state, Target()))
    assert state.restore_notes == ["pdsim stopped (it was down before the execution began)" if resumed
                                   else "pdsim stopped (it was down before)"]
