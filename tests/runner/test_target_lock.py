"""One experiment at a time per target: a lock file on the target host, held from snapshot to restore."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runner_kit import add_toy_ssh_profile, edit_profile, store_rows

from runner_kit import run_hypothesis  # noqa: E402  (tests/runner is on sys.path)
from workbench.runner.lock import LOCK_NAME, TargetBusy

WB = [sys.executable, "-m", "workbench.cli.main"]


def _lock_file(toy) -> Path:
    return toy.state / f".serve.conf.{LOCK_NAME}"


def _holder(pid: int, execution: str = "f" * 32) -> str:
    import socket

    from workbench.runner.lock import process_start

    return json.dumps({"execution": execution, "host": socket.gethostname(), "pid": pid,
                       "pid_start": process_start(pid), "since": "2026-12-01T09:00:00+00:00"}, sort_keys=True)


def test_a_held_lock_refuses_the_second_run_before_touching_the_target(toy):
    _lock_file(toy).write_text(_holder(os.getpid()) + "\n")
    with pytest.raises(TargetBusy, match=rf"target local is in use by execution f{{32}} \(pid {os.getpid()} .*since "):
        run_hypothesis("toy-fix", db=toy.db, show_progress=False, seed=7, build_report=False)
    assert toy.conf.read_bytes() == toy.original
    assert toy.restarts() == []  # not restarted, not written
    assert _lock_file(toy).read_text().startswith(_holder(os.getpid()))  # the owner's lock is left alone


def test_a_live_owner_on_this_machine_is_only_waited_for_or_stopped(toy):
    """Its runner lives on this machine: the hint said "or put the original back by hand and remove LOCK; if its
    runner is gone, resume it", advice that breaks a live run, with `kill PID` and the lock's path run into the
    prose (at 60 columns too). It says only to wait or stop it, the `kill` command ending its line."""
    from workbench.wrapping import wrap

    _lock_file(toy).write_text(_holder(os.getpid()) + "\n")
    with pytest.raises(TargetBusy) as ei:
        run_hypothesis("toy-fix", db=toy.db, show_progress=False, seed=7, build_report=False)
    hint = ei.value.hint or ""
    assert hint.startswith("wait for it to finish, or stop it (Ctrl-C where it runs, or its pid), which restores "
                           f"the target:\n  kill {os.getpid()}\n"), hint
    assert "remove" not in hint and "resume it" not in hint and str(_lock_file(toy)) not in hint, hint
    lines = [line for part in hint.splitlines() for line in wrap(part, 60)]
    assert [line for line in lines if "kill" in line] == [f"  kill {os.getpid()}"], lines


def test_a_lock_names_its_holder_as_the_user_knows_it_and_how_to_resume_it(toy):
    """A lock records the execution's name in its store and the command that resumes it: a refusal names the
    holder by them (not by the uuid the lock is keyed by), with its pid, host and since when, and says to wait,
    or to resume it where its runner is gone; `wb sim` names a holder of pdsim the same way (tests/sim)."""
    holder = {"execution": "f" * 32, "host": "gpu-box-7", "pid": 4242, "pid_start": "1", "since":
              "2026-12-01T09:00:00+00:00", "what": "hypothesis toy-fix", "name": "execution 3 of toy-fix",
              "resume": "wb hypothesis run toy-fix --resume"}
    _lock_file(toy).write_text(json.dumps(holder, sort_keys=True) + "\n")
    with pytest.raises(TargetBusy) as ei:
        run_hypothesis("toy-fix", db=toy.db, show_progress=False, seed=7, build_report=False)
    assert str(ei.value) == ("target local is in use by execution 3 of toy-fix (pid 4242 on gpu-box-7, since "
                             "2026-12-01T09:00:00+00:00)"), str(ei.value)
    hint = ei.value.hint or ""
    # Its runner is on another machine, which alone can tell whether it is gone: each way on, each command ending
    # its line.
    assert hint.startswith("wait for it to finish, or stop it (Ctrl-C where it runs, or its pid on gpu-box-7), which "
                    "restores the target:\n  kill 4242\nif its runner is gone (only gpu-box-7 can tell), resume it "
                    "on gpu-box-7, which puts the original config back and frees the lock:\n  wb hypothesis run "
                    "toy-fix --resume\nor give that run up: put the original config back by hand, then remove the "
                    f"lock:\n  rm -f {_lock_file(toy)}\n"), hint
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == []


def test_a_lock_records_its_users_login_and_a_refusal_names_it(toy):
    """Who to ask about a busy target is a person: the lock records the runner's login name (not its store, whose
    URL may hold a password), and a refusal names it beside the pid and host."""
    import getpass

    from workbench.runner.lock import Holder

    assert json.loads(Holder.me("e" * 32, store="postgresql://ada:***@db/wb").text())["user"] == getpass.getuser()
    holder = {"execution": "f" * 32, "host": "gpu-box-7", "pid": 4242, "pid_start": "1", "user": "ada",
              "since": "2026-12-01T09:00:00+00:00", "name": "execution 3 of toy-fix"}
    _lock_file(toy).write_text(json.dumps(holder, sort_keys=True) + "\n")
    with pytest.raises(TargetBusy) as ei:
        run_hypothesis("toy-fix", db=toy.db, show_progress=False, seed=7, build_report=False)
    assert str(ei.value) == ("target local is in use by execution 3 of toy-fix (pid 4242 of user ada on gpu-box-7, "
                             "since 2026-12-01T09:00:00+00:00)"), str(ei.value)


def test_a_refused_run_prints_its_error_alone_and_exits_2(toy):
    """Refused for a busy target, nothing ran: the one `Error:` and its hint, exit 2, and no run counts
    ("0 of 4 run(s) ok" read as if four runs had been tried)."""
    _lock_file(toy).write_text(_holder(os.getpid()) + "\n")
    res = subprocess.run(WB + ["hypothesis", "run", "toy-fix", "--db", toy.db], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stdout == ""
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines[0].startswith("Error: target local is in use by execution "), res.stderr
    assert all(line.startswith("Hint:") or line.startswith(" ") for line in lines[1:]), res.stderr
    assert "runs ok" not in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == []


def _saved_original(toy, execution: str, data: bytes) -> None:
    """The snapshot a runner of `execution` took before it died (as runner.restore.take_snapshots writes it)."""
    import hashlib

    folder = toy.root / ".wb" / "artifacts" / f"execution-{execution}"
    folder.mkdir(parents=True)
    copy = folder / "original-x"
    copy.write_bytes(data)
    (folder / "snapshot.json").write_text(json.dumps({"execution": execution, "hosts": {"local": {
        "host": "local", "path": str(toy.conf), "exists": True, "mode": 0o644, "local_copy": str(copy),
        "sha256": hashlib.sha256(data).hexdigest()}}}))


def test_a_stale_lock_of_a_dead_process_is_taken_over_and_released(toy):
    """Its runner died after putting the original back (the file is what it saved): taken over."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    _lock_file(toy).write_text(_holder(dead.pid) + "\n")
    _saved_original(toy, "f" * 32, toy.original)
    summary = run_hypothesis("toy-fix", db=toy.db, show_progress=False, seed=7, build_report=False)
    assert [r["status"] for r in summary["runs"]] == ["ok"] * 4
    assert not _lock_file(toy).exists()
    assert toy.conf.read_bytes() == toy.original


@pytest.mark.parametrize("saved", [None, b"# the operator's own serve file\nfix=on\nmode=ok\n"],
                         ids=["nothing-saved", "another-original"])
def test_a_stale_lock_is_refused_when_what_its_runner_left_cannot_be_told_original(toy, saved):
    """No saved original to compare with (another workbench's runner, or one killed before its snapshot),
    or a file that is not the original it saved: refused, nothing touched, the lock left for the user."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    _lock_file(toy).write_text(_holder(dead.pid) + "\n")
    if saved is not None:
        _saved_original(toy, "f" * 32, saved)
    with pytest.raises(TargetBusy, match="died before restoring it") as ei:
        run_hypothesis("toy-fix", db=toy.db, show_progress=False, seed=7, build_report=False)
    # Nothing saved: the lock is removed by hand once the original is back. A saved original: putting it back is
    # all (the next run takes the lock over), so the lock's removal is not asked for.
    hint = ei.value.hint or ""
    if saved is None:
        assert f"\n  rm -f {_lock_file(toy)}\n" in hint, hint
    else:
        assert str(_lock_file(toy)) not in hint and "\n  cp " in hint and "takes the lock over" in hint, hint
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == []
    assert _lock_file(toy).exists()


def _wait_for(path: Path, proc: subprocess.Popen, limit_s: float = 240) -> None:
    t0 = time.monotonic()
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() - t0 < limit_s, f"{path} never appeared"
        time.sleep(0.1)


def _concurrent(cmd_a: list[str], cmd_b: list[str], lock: Path) -> tuple[subprocess.CompletedProcess, tuple]:
    a = subprocess.Popen(cmd_a, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        _wait_for(lock, a)
        b = subprocess.run(cmd_b, capture_output=True, text=True, env=dict(os.environ), timeout=300)
        out_a = a.communicate(timeout=600)
    finally:
        if a.poll() is None:
            a.kill()
    return b, (a.returncode, *out_a)


def test_two_concurrent_runs_over_ssh_one_is_refused(toy, ssh_server):
    add_toy_ssh_profile(toy, ssh_server)
    edit_profile(toy.root, 'workload: {command: "{{ python }}', 'workload: {command: "sleep 2; {{ python }}')
    # The toy's 3 s workload limit left one second for SSH and Python beside the sleep: a loaded machine ran past it.
    edit_profile(toy.root, 'units_path }}", timeout_s: 3}', 'units_path }}", timeout_s: 600}')
    cmd = WB + ["hypothesis", "run", "toy-fix", "--target", "ssh", "--json"]
    b, (rc_a, out_a, err_a) = _concurrent(cmd + ["--db", str(toy.root / "a.duckdb")],
                                          cmd + ["--db", str(toy.root / "b.duckdb")], _lock_file(toy))
    assert b.returncode == 2, b.stderr[-2000:]
    assert "is in use by execution" in b.stderr and "Traceback" not in b.stderr
    assert rc_a == 0, err_a[-2000:]
    assert [r["status"] for r in json.loads(out_a)["runs"]] == ["ok"] * 4
    assert toy.conf.read_bytes() == toy.original and not _lock_file(toy).exists()


def _killed_execution(toy, uuid: str) -> int:
    """An execution of toy-fix whose runner was killed mid-run (kill -9): left "running" in the store, with its run
    in flight "running" and the next one's row, created ahead, "pending". Its id."""
    from workbench.registry import load_registry
    from workbench.store import open_store

    reg = load_registry(toy.root)
    h = reg.hypothesis("toy-fix")
    exp = reg.experiment_for(h)
    store = open_store(toy.db)
    try:
        ex = store.start_execution(
            hypothesis_id=h.id, hypothesis_body=h.model_dump(mode="json"), experiment_id=exp.id,
            experiment_version=exp.version, experiment_body=exp.model_dump(mode="json"), profile="local",
            target="local", mode="fixed", plan=None, overrides={}, config_diff=None, wb_version="0.0", uuid=uuid)
        for order, status in enumerate(["ok", "running", "pending"]):
            store.create_run(experiment_id=exp.id, variables={}, execution_id=ex, hypothesis_id=h.id, arm="control",
                             replicate=1, order_index=order, status=status, phase="run")
        return ex
    finally:
        store.dispose()


def test_a_lock_taken_over_is_named_as_the_store_names_its_execution(toy, capfd):
    """The takeover's note named the execution by the uuid the lock is keyed by ("taking over the lock of execution
    ffff…"), which no command shows; every refusal names it as its store does ("execution 3 of toy-fix").

    The execution whose lock is taken over was killed: the store held it "running" for good, and its run in flight
    too (`wb runs show` said `status: running`, `execution: 1 (running)`, and a resume "execution 1 (running,
    superseded by execution 2) stopped"). The takeover records both interrupted, and says so."""
    from workbench.runner.resume import nothing_to_resume
    from workbench.store import open_store

    dead = subprocess.Popen(["true"])
    dead.wait()
    killed = _killed_execution(toy, "f" * 32)
    holder = {**json.loads(_holder(dead.pid)), "name": "execution 3 of toy-fix"}
    _lock_file(toy).write_text(json.dumps(holder, sort_keys=True) + "\n")
    _saved_original(toy, "f" * 32, toy.original)
    run_hypothesis("toy-fix", db=toy.db, show_progress=True, replicates=1, build_report=False)
    err = capfd.readouterr().err
    assert f"taking over the lock of execution 3 of toy-fix: its runner (pid {dead.pid}) is gone" in err, err
    assert f"; execution {killed} is recorded interrupted" in err, err
    assert "f" * 32 not in err, err
    store = open_store(toy.db, read_only=True)
    try:
        [ex] = [e for e in store.executions() if e.id == killed]
        runs = sorted(store.runs(execution_id=killed), key=lambda r: r.order_index)
        resumed = str(nothing_to_resume(store, "toy-fix"))
    finally:
        store.dispose()
    assert ex.status == "interrupted" and f"its runner (pid {dead.pid} on " in (ex.error or ""), ex
    assert [r.status for r in runs] == ["ok", "interrupted"], runs  # the row created ahead is gone
    assert "found when execution 2 took over the lock of its target" in (runs[1].error or ""), runs[1].error
    assert f"execution {killed} (interrupted, superseded by execution 2) stopped" in resumed, resumed


def test_a_stop_landing_as_the_lock_is_written_leaves_no_lock(tmp_path):
    """A Ctrl-C about a second into `wb hypothesis run` (pdsim) could land after the shell had written the lock
    file and before wb had read that it had: the lock was not counted as held, so nothing released it, and every
    later run was refused as if a dead runner had left the target changed (with nothing to restore). A stop
    there now removes the lock when it holds this execution's own text, and never another's."""
    import asyncio

    from workbench.runner.lock import TargetLock
    from workbench.runner.targets.local import LocalTarget

    class StoppedAsTheLockIsWritten(LocalTarget):
        stopped = False

        async def run(self, host, command, **kw):
            res = await super().run(host, command, **kw)
            if "set -C" in command and not self.stopped:  # the lock's create: it ran, then the signal's cancel
                self.stopped = True
                raise asyncio.CancelledError
            return res

    path = tmp_path / f".serve.conf.{LOCK_NAME}"
    target = StoppedAsTheLockIsWritten()
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(TargetLock(target, {"local": str(path)}, "e" * 32).acquire())
    assert target.stopped and not path.exists()
    other = _holder(os.getpid())  # another execution's lock, met the same way, stays
    path.write_text(other + "\n")
    target.stopped = False
    with pytest.raises(TargetBusy):
        asyncio.run(TargetLock(LocalTarget(), {"local": str(path)}, "e" * 32).acquire())
    assert path.read_text() == other + "\n"


@pytest.mark.parametrize("elsewhere", [True, False], ids=["another-machine", "this-machine"])
def test_wb_sim_judges_a_lock_dead_only_where_its_runners_pid_means_something(tmp_path, cli, elsewhere,
                                                                             monkeypatch):
    """`wb sim` runs on the host whose pdsim it drives and reads the lock there, which a runner on another machine
    took over ssh: a pid on another machine cannot be checked, so that lock is live. A host name alone did not tell
    the machines apart (two hosts, or a container and its host, may share one): the lock of a runner elsewhere with
    this host's name, its pid not running here, read as a dead runner's, and `wb sim down` stopped pdsim under it.
    The lock records the pid's namespace and the kernel's boot; a dead runner's lock of this machine is stale as
    before."""
    import socket

    from workbench.runner.targets.sim import sim_lock

    space = "another-boot/pid:[1]"
    if not elsewhere:
        from workbench.runner.lock import pid_space

        space = pid_space()
    sim = tmp_path / "sim"
    sim.mkdir()
    holder = {"execution": "f" * 32, "host": socket.gethostname(), "pid": 2 ** 22 + 1, "pid_start": "1",
              "since": "2026-12-01T09:00:00+00:00", "pid_space": space}
    lock = sim_lock(sim)
    lock.write_text(json.dumps(holder, sort_keys=True) + "\n")
    code, out, err = cli("sim", "down", "--dir", str(sim))
    if elsewhere:
        assert code == 2 and err.startswith(f"Error: pdsim in {sim} is in use by execution f"), (code, out, err)
        assert lock.read_text() == json.dumps(holder, sort_keys=True) + "\n"
    else:  # a dead runner here, its original not saved: down stops the servers and keeps the lock for a resume
        assert code == 0 and "killed before it restored it" in err, (code, out, err)
        # Put back by hand, the lock is freed by the commands that check it (through _left_changed), not by any wb
        # command (`wb sim status` left it): the note names them.
        from workbench.runner.targets import sim as sim_target

        monkeypatch.setattr(sim_target, "_not_original",
                            lambda holder: ("changed", "serve.sh was changed", "rm -f serve.sh"))
        by_hand = sim_target._left_changed(sim).hint
        assert by_hand.endswith("put the original back by hand; the next `wb sim up`, `down`, `restart`, `repro` or "
                                "`bench` then frees the lock and drops the saved original, so that a later resume of "
                                "that run takes pdsim as it finds it then (`wb sim status` and `journal` only read):"
                                "\n  rm -f serve.sh"), by_hand
        monkeypatch.setattr(sim_target, "_not_original", lambda holder: (None, "", None))  # and it was put back
        _, _, err = cli("sim", "status", "--dir", str(sim))
        assert lock.exists(), err
        _, _, err = cli("sim", "repro", "--dir", str(sim))  # refused all the same: pdsim is down
        assert not lock.exists(), err


def test_a_runner_killed_outright_is_seen_dead_at_once_though_not_yet_waited_for(tmp_path, cli):
    """A runner killed with SIGKILL stays in the process table until its parent waits for it (a zombie: for good
    under a parent that never does), and `kill(pid, 0)` succeeded on it: the next `wb sim down` read its lock as a
    live runner's and refused (exit 2, "in use by"). /proc tells the zombie from a live process."""
    import signal
    import socket

    from workbench.runner.lock import pid_space, process_start
    from workbench.runner.targets.sim import sim_lock

    sim = tmp_path / "sim"
    sim.mkdir()
    runner = subprocess.Popen(["sleep", "600"])  # the runner: a child of this process, which does not wait for it
    try:
        holder = {"execution": "f" * 32, "host": socket.gethostname(), "pid": runner.pid,
                  "pid_start": process_start(runner.pid), "since": "2026-12-01T09:00:00+00:00",
                  "pid_space": pid_space()}
        sim_lock(sim).write_text(json.dumps(holder, sort_keys=True) + "\n")
        code, _, err = cli("sim", "down", "--dir", str(sim))
        assert code == 2 and err.startswith(f"Error: pdsim in {sim} is in use by execution f"), (code, err)
        os.kill(runner.pid, signal.SIGKILL)
        os.waitid(os.P_PID, runner.pid, os.WEXITED | os.WNOWAIT)  # it ended, and is left a zombie: not waited for
        code, out, err = cli("sim", "down", "--dir", str(sim))
        assert code == 0 and "killed before it restored it" in err, (code, out, err)
    finally:
        runner.kill()
        runner.wait()


def _rm_refusing_locks(tmp_path, monkeypatch) -> None:
    """An `rm` first on PATH that refuses a lock file (and removes anything else): a lock this runner may not
    remove (tests may run as root, whom a folder's mode does not stop)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "rm").write_text('#!/bin/sh\ncase "$*" in *wb-target.lock*)\n'
                               '  echo "rm: cannot remove: Operation not permitted" >&2; exit 1;;\n'
                               'esac\nexec /bin/rm "$@"\n')
    (bindir / "rm").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


def test_a_lock_that_cannot_be_removed_is_recorded_and_said_with_the_restore(toy, tmp_path, monkeypatch, cli):
    """The lock's removal as the execution ended failed, and nothing said so (a best-effort `rm; true`): the
    execution was recorded done, its restore line said the target was restored, and the next run was refused by
    a lock nobody had been told about. The failure is now recorded with the execution and said beside the restore
    (`restore`, the line stderr ends with) and by `wb runs show`, with the command that removes it. The `rm`
    refusing the lock stands for a lock file this runner may not remove (tests may run as root, whom a folder's
    mode does not stop)."""
    _rm_refusing_locks(tmp_path, monkeypatch)
    s = run_hypothesis("toy-fix", db=toy.db, replicates=1, build_report=False)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"] and toy.conf.read_bytes() == toy.original
    assert _lock_file(toy).exists()
    said = (f"its lock {_lock_file(toy)} was NOT released (rm: cannot remove: Operation not permitted): the "
            f"target may be left locked, refusing the next run; once no run of wb is on it, remove it: rm -f "
            f"{_lock_file(toy)}")
    assert s["restore"].startswith("restored: ") and s["restore"].endswith(f"; {said}"), s["restore"]
    [(status, error)] = store_rows(toy.db, "SELECT status, error FROM executions")
    assert status == "done" and error == said, (status, error)
    run = str(s["runs"][0]["id"])
    code, out, err = cli("runs", "show", run, "--db", toy.db)  # where a run's evidence is read later
    assert code == 0 and f"execution: {s['execution_id']} (done)\nexecution error:\n    {said}\n" in out, (out, err)
    code, out, err = cli("runs", "show", run, "--db", toy.db, "--json")
    assert json.loads(out)["execution"] == {"id": s["execution_id"], "status": "done", "error": said}, out


def test_a_lock_left_by_a_failed_taking_is_said_with_the_error_and_recorded(toy, tmp_path, monkeypatch, cli):
    """The lock written, the snapshot of the config failed (here a link that loops), and the lock's release that
    followed failed too (`rm` refused, as in the test above): only the snapshot's error was said and recorded, and
    the next run was refused by a lock nobody had been told about. Now the lock left is said as after runs (the
    restore's line; without progress, the error's hint) and recorded with the execution, after the error."""
    from workbench.errors import TargetError

    _rm_refusing_locks(tmp_path, monkeypatch)
    toy.conf.unlink()
    toy.conf.symlink_to(toy.conf.name)  # a link to itself: reading it fails once the lock is written
    said = (f"its lock {_lock_file(toy)} was NOT released (rm: cannot remove: Operation not permitted): the "
            f"target may be left locked, refusing the next run; once no run of wb is on it, remove it: rm -f "
            f"{_lock_file(toy)}")
    with pytest.raises(TargetError, match="^cannot read .*serve.conf: Too many levels of symbolic links$") as ei:
        run_hypothesis("toy-fix", db=toy.db, replicates=1)  # no progress: the hint says it
    assert ei.value.hint is not None and ei.value.hint.endswith(said), ei.value.hint
    assert _lock_file(toy).exists()
    _lock_file(toy).unlink()
    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--db", toy.db)
    assert code == 1 and "Traceback" not in err, (code, out, err)
    assert ("the target was not touched (no run began): nothing to restore; " + said) in " ".join(err.split()), err
    assert err.rstrip().splitlines()[-1].startswith("Error: cannot read "), err
    assert _lock_file(toy).exists()
    for status, error in store_rows(toy.db, "SELECT status, error FROM executions"):
        assert status == "failed" and error.startswith("cannot read ") and error.endswith(f"\n{said}"), error
    # Stopped (Ctrl-C) as the config is read: the hint says the lock left, then the command that resumes, last.
    from workbench.runner.execute import RunInterrupted
    from workbench.runner.targets.local import LocalTarget

    async def stopped(self, host, path):
        raise KeyboardInterrupt

    _lock_file(toy).unlink()
    monkeypatch.setattr(LocalTarget, "read_file", stopped)
    with pytest.raises(RunInterrupted) as ei:
        run_hypothesis("toy-fix", db=toy.db, replicates=1)
    hint = ei.value.hint or ""
    assert hint.startswith(f"{said}\ncontinue with: wb hypothesis run toy-fix --resume "), hint


def test_a_holder_that_recorded_no_command_is_resumed_by_one_built_from_the_store(tmp_path: Path, store) -> None:
    """Where the holder recorded no command to resume it (a probe or a lock of an older wb), a refusal gave 'wb
    isolate --resume with the flags of search S (experiment E)' or 'wb hypothesis run ID --resume against the store
    that holds it', prose where a command goes. A probe's search is resumed by the real command, built from its
    flags as the store holds them (the probe's key, else the search's record), with this store and workbench; where
    the store holds none, and for a lock of another store, the hint says what the user must add, in words."""
    import math
    import shlex
    from types import SimpleNamespace

    from workbench.isolate.adapter import IsolateSpec, search_key
    from workbench.isolate.records import record_search
    from workbench.isolate.region import parse_region
    from workbench.runner.lock import Holder
    from workbench.runner.takeover import _holder_resume, _resume_of
    from workbench.wrapping import wrap

    db, root = store.path, tmp_path / "my bench"
    spec = IsolateSpec(experiment="agent-repro", good={"geometry_fix": "on", "index_k_dtype": "fp8"},
                       bad={"geometry_fix": "off", "index_k_dtype": "bf16"},
                       changes=("geometry_fix", "index_k_dtype"), hold={}, metric="corruption_rate",
                       region=parse_region(">= 0.05"), profile=None, alpha=0.05, budget=math.inf, seed=7,
                       search_id="a1b2c3")
    state = SimpleNamespace(store=store, prepared=SimpleNamespace(root=root))
    expected = ("wb isolate --experiment agent-repro --good 'geometry_fix=on index_k_dtype=fp8' "
                "--bad 'geometry_fix=off index_k_dtype=bf16' --metric corruption_rate --region '>= 0.05' "
                f"--budget inf --alpha 0.05 --seed 7 --db {db} --root {shlex.quote(str(root))} --resume")
    # A probe that recorded its search's key but not the command (wb before the command was recorded) ...
    assert _resume_of(state, spec.probe_id(1), {"isolate": search_key(spec)}) == expected
    # ... one whose execution knew only the search's id: the search's own record in the store has its flags.
    only_id = {"isolate": {"search_id": "a1b2c3", "experiment": "agent-repro"}}
    assert _resume_of(state, spec.probe_id(1), only_id) is None  # not recorded yet: nothing to build it from
    key = {k: v for k, v in search_key(spec).items() if k not in ("alpha", "budget")}
    record_search(store, spec, {**key, "result": {"status": "stopped", "explanation": "stopped", "alpha": 0.05,
                                                  "budget": None, "probes": []}})
    assert _resume_of(state, spec.probe_id(1), only_id) == expected
    # A lock of an older wb, of another store: no command, and neither its store nor its folder; the hint says so.
    old = Holder("e" * 32, "gpu-1", 4242, None, "2026-12-06T19:00:00", what="hypothesis wedge-confound")
    assert _holder_resume(state, None, old) is None
    for holder, named in ((old, "`wb hypothesis run wedge-confound --resume`"),
                          (Holder("e" * 32, "gpu-1", 4242, None, "2026-12-06T19:00:00",
                                  what="hypothesis iso-a1b2c3-p1"), "`wb isolate --resume`")):
        hint = holder.busy_hint("rm -f /srv/wb.lock")
        assert named in hint and "records neither the" in hint and "the store" in hint, hint
        assert not any(line.lstrip().startswith("wb ") for line in wrap(hint, 80)), hint
    ran = Holder("e" * 32, "gpu-1", 4242, None, "2026-12-06T19:00:00", resume=expected)
    assert f"frees the lock:\n  {expected}\n" in ran.busy_hint("rm -f /srv/wb.lock")
