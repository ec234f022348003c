"""Nothing lost: a run's results survive a reader holding the store and a kill -9 after the run ended, and
`--resume` settles half-written rows, stops orphaned children and exits 0 once the plan is complete."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from runner_kit import edit_profile, store_rows

pytestmark = pytest.mark.slow  # end to end: runs first (tests/conftest.py)


WB = [sys.executable, "-m", "workbench.cli.main"]


def _start(toy, *extra: str, env: dict | None = None, blocked: bool = False) -> subprocess.Popen:
    """A runner as started from a terminal, whatever this process ignores: under `nohup pytest` SIGHUP is ignored,
    a started program inherits that, and wb honours it (the run outlives the terminal), so a test that hung the
    runner up waited out its whole timeout. A handled signal is at its default in a started program. A runner
    that hangs dumps its threads' stacks on SIGABRT (`_ended`). `blocked`: it starts with the stop signals blocked
    (a mask is kept across exec)."""
    ignored = signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGHUP, _hung_up_meanwhile)
    try:
        return subprocess.Popen(WB + ["hypothesis", "run", "toy-fix", "--db", toy.db, "--json", *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONFAULTHANDLER": "1", **(env or {})},
                                preexec_fn=_block_stop_signals if blocked else None)
    finally:
        if ignored:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)


STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _block_stop_signals() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)


def _hung_up_meanwhile(_signum, _frame) -> None:
    pass  # this process ignored SIGHUP: it still does


def _ended(proc: subprocess.Popen, timeout: float = 300) -> tuple[str, str]:
    """`proc.communicate(timeout)`; a runner still running after it fails the test with where it is stuck: its
    signal dispositions (a stop signal blocked or ignored is never seen), then, on SIGABRT, its threads' stacks
    (faulthandler) and what it wrote to stderr."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            sig = "".join(line for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines(True)
                          if line.startswith("Sig"))
        except OSError as exc:
            sig = f"(its status could not be read: {exc})"
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate(timeout=60)
        raise AssertionError(f"the runner (pid {proc.pid}) still ran after {timeout:g} s; its signal masks:\n"
                             f"{sig}its stderr, with its stacks:\n{err[-8000:]}") from None


def _until(cond, proc: subprocess.Popen | None = None, limit_s: float = 120) -> None:
    t0 = time.monotonic()
    while not cond():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(proc.communicate()[1][-2000:])
        assert time.monotonic() - t0 < limit_s
        time.sleep(0.05)


def _hold(db: str) -> duckdb.DuckDBPyConnection:
    """Take the store's file lock the way another process (a notebook, the duckdb shell) would."""
    t0 = time.monotonic()
    while True:
        try:
            return duckdb.connect(db)
        except duckdb.Error:
            assert time.monotonic() - t0 < 60
            time.sleep(0.05)


def _journal(toy) -> list[Path]:
    return list((toy.root / ".wb" / "artifacts").glob("execution-*/journal/run-*.json"))


def test_a_reader_holding_the_store_past_the_lock_wait_loses_no_run(toy):
    # One replicate: a run that ends while the store is held is what is tested, not how many more follow it.
    proc = _start(toy, "--replicates", "1", env={"WB_DB_LOCK_WAIT": "1"})
    _until(lambda: len(toy.restarts()) >= 1, proc)
    conn = _hold(toy.db)
    try:
        _until(lambda: bool(_journal(toy)), proc)  # a run ended while the store was held
        time.sleep(3)  # well past the 1 s lock wait
    finally:
        conn.close()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    assert [r["status"] for r in json.loads(out)["runs"]] == ["ok"] * 2
    assert store_rows(toy.db, "SELECT count(*) FROM units")[0][0] == 20
    assert not _journal(toy)
    assert toy.conf.read_bytes() == toy.original


def test_kill_9_after_a_run_ended_then_resume_keeps_that_run(toy):
    proc = _start(toy, "--replicates", "1", env={"WB_DB_LOCK_WAIT": "1"})  # one replicate: see the test above
    _until(lambda: len(toy.restarts()) >= 1, proc)
    conn = _hold(toy.db)
    try:
        _until(lambda: bool(_journal(toy)), proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        conn.close()
    assert toy.conf.read_bytes() != toy.original
    (journaled,) = [json.loads(p.read_text()) for p in _journal(toy)]
    res = _run_here("toy-fix", "--db", toy.db, "--resume", "--json")
    assert res.exit_code == 0, res.stderr[-2000:]
    assert toy.conf.read_bytes() == toy.original
    runs = {r["id"]: r for r in json.loads(res.stdout)["runs"]}
    assert runs[journaled["run_id"]]["status"] == "ok"  # written from the journal, not redone
    (n,) = store_rows(toy.db, f"SELECT count(*) FROM units WHERE run_id = {journaled['run_id']}")[0]
    assert n == 10
    assert sorted(r["status"] for r in runs.values() if r["status"] == "ok") == ["ok"] * 2
    assert not [r for r in runs.values() if r["status"] in ("pending", "running")]


def test_kill_9_mid_workload_then_resume_stops_the_orphan_and_exits_0(toy):
    flag, workload = _slow_workload(toy)
    proc = _start(toy, "--replicates", "1")  # one replicate: the orphan is the first run's workload
    _until(lambda: bool(workload()), proc)
    (pgid,) = workload()
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    os.kill(pgid, 0)  # the workload outlived its runner
    flag.unlink()
    flag.touch()  # still slow: only the reaping can end the orphan before the resume's own runs
    res_proc = _start(toy, "--resume")
    _until(lambda: not _alive(pgid), res_proc, limit_s=60)
    flag.unlink()
    out, err = res_proc.communicate(timeout=300)
    assert res_proc.returncode == 0, err[-2000:]
    statuses = [r["status"] for r in json.loads(out)["runs"]]
    assert statuses.count("ok") == 2 and set(statuses) <= {"ok", "interrupted"}
    assert toy.conf.read_bytes() == toy.original


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (already reaped by nobody) counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _slow_workload(toy) -> tuple[Path, callable]:
    """Make the toy's workload wait on a flag file; returns the flag and a finder of the workload's pgids."""
    flag = toy.state / "slow"
    flag.touch()
    edit_profile(toy.root, 'workload: {command: "{{ python }}',
                 f'workload: {{command: "while [ -e {flag} ]; do sleep 0.2; done; {{{{ python }}}}')
    children = toy.root / ".wb" / "artifacts"

    def workload() -> list[int]:
        found = []
        for p in children.glob("execution-*/children/*"):
            try:
                if p.name.isdigit() and b"while [ -e" in Path(f"/proc/{p.name}/cmdline").read_bytes():
                    found.append(int(p.name))
            except OSError:
                pass
        return found

    return flag, workload


def _delete(toy, *ids: int):
    """`wb runs delete IDS` in this process (the runner whose runs it deletes is another): see `_wb_here`."""
    return _wb_here("runs", "delete", *map(str, ids), "--yes", "--db", toy.db, "--json")


def _held_runner(toy, *, blocked: bool = False) -> tuple[subprocess.Popen, int, Path]:
    """A runner held in its first run's workload (until the returned flag file goes): the process, the
    workload's process group, the flag. The toy's workload would time out after 3 s and end its run (on a
    loaded machine before the test looks); here the run ends only with the flag. `blocked`: see `_start`. One
    replicate (two runs): what the tests hold, kill or resume is the first run, and the runs after it were only
    more of the same."""
    flag, workload = _slow_workload(toy)
    edit_profile(toy.root, 'units_path }}", timeout_s: 3}', 'units_path }}", timeout_s: 600}')
    proc = _start(toy, "--replicates", "1", blocked=blocked)
    try:
        _until(lambda: bool(workload()), proc)
    except BaseException:
        proc.kill()
        proc.wait(30)
        raise
    (pgid,) = workload()
    return proc, pgid, flag


def test_runs_of_a_killed_runner_can_be_deleted_and_a_live_runners_cannot(toy):
    # A runner killed mid-run leaves its execution and its run "running"; only a --resume (which runs the
    # experiment again) could settle them. Its runs may go once its pid is provably gone, never before.
    proc, pgid, flag = _held_runner(toy)
    try:
        running = store_rows(toy.db, "SELECT id FROM runs WHERE status = 'running'")
        assert len(running) == 1, running
        live = running[0][0]
        res = _delete(toy, live)
        assert res.exit_code == 2 and f"run {live} is running" in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
        assert proc.poll() is None, "the runner must still be alive for the refusal to mean anything"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    try:
        assert store_rows(toy.db, f"SELECT status FROM runs WHERE id = {live}") == [("running",)]
        assert store_rows(toy.db, "SELECT status FROM executions") == [("running",)]
        res = _delete(toy, live)
        assert res.exit_code == 0, res.stderr[-2000:]
        assert [r["id"] for r in json.loads(res.stdout)["deleted"]] == [live]
        assert store_rows(toy.db, f"SELECT count(*) FROM runs WHERE id = {live}") == [(0,)]
    finally:
        flag.unlink()
        try:
            os.killpg(pgid, signal.SIGKILL)  # the orphaned workload: no --resume reaps it here
        except ProcessLookupError:
            pass


def test_resume_while_the_runner_is_alive_is_refused_and_touches_nothing(toy):
    # --resume continues an execution whose runner is gone. Against a live runner it stopped that runner's
    # workload as an "orphan", took over its lock and wrote into its execution: it must refuse, exit 2,
    # before anything on the target or in the store moves.
    proc, pgid, flag = _held_runner(toy)
    try:
        # The held runner creates its next run's row in the background (prefetch): on a loaded machine after
        # the workload started. Wait for it, so that the rows compared below move only if the resume moves them.
        _until(lambda: ("pending",) in store_rows(toy.db, "SELECT status FROM runs"), proc)
        before = store_rows(toy.db, "SELECT id, status FROM runs ORDER BY id")
        res = _run_here("toy-fix", "--resume", "--db", toy.db)
        assert res.exit_code == 2, res.stderr[-2000:]
        assert "still running" in res.stderr and f"pid {proc.pid}" in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
        assert _alive(pgid) and proc.poll() is None          # its workload was not stopped as an orphan
        assert store_rows(toy.db, "SELECT id, status FROM runs ORDER BY id") == before
        flag.unlink()                                        # let the runner finish on its own
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
    finally:
        flag.unlink(missing_ok=True)
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert toy.conf.read_bytes() == toy.original


def _wb_here(*args: str):
    """`wb ARGS` in this process (the runners killed here are other processes; these run to the end, so one
    interpreter's imports serve them all): the result's exit_code, stdout and stderr. An exception the CLI did not
    turn into an Error (a traceback) fails here."""
    from typer.testing import CliRunner

    from workbench.cli.main import app

    res = CliRunner().invoke(app, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), (args, res.exception, res.output[-2000:])
    return res


def _run_here(*args: str):
    """`wb hypothesis run ARGS` in this process: see `_wb_here`."""
    return _wb_here("hypothesis", "run", *args)


def test_a_new_run_after_kill_9_refuses_the_config_the_dead_runner_left(toy):
    """kill -9 mid-run leaves the target lock of a dead runner and an arm's config in the file. A new
    execution used to take the lock over silently and snapshot that arm's config as "the original", so its
    restore left the arm's config in place for good. Now it refuses, naming the execution to resume; once
    the file is the original again (here: the resume put it back), a new run takes the lock over."""
    proc, pgid, flag = _held_runner(toy)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    os.killpg(pgid, signal.SIGKILL)
    left = toy.conf.read_bytes()
    assert left != toy.original  # an arm's config, still in place
    fresh = _run_here("toy-fix", "--db", toy.db, "--replicates", "1")
    assert fresh.exit_code != 0, fresh.stdout
    assert "Traceback" not in fresh.stderr
    (error,) = [line for line in fresh.stderr.splitlines() if line.startswith("Error:")]
    assert "died before restoring" in error and str(toy.conf) in error, fresh.stderr
    assert "wb hypothesis run toy-fix --resume" in fresh.stderr, fresh.stderr
    assert toy.conf.read_bytes() == left  # nothing touched
    flag.unlink()
    resumed = _run_here("toy-fix", "--db", toy.db, "--resume")
    assert resumed.exit_code == 0, resumed.stderr[-2000:]
    assert toy.conf.read_bytes() == toy.original
    # A runner killed after its restore (the file is the original, the lock still there) is taken over.
    proc = _start(toy, "--replicates", "1")
    _until(lambda: len(toy.restarts()) >= 1 and toy.conf.read_bytes() != toy.original, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    toy.conf.write_bytes(toy.original)
    again = _run_here("toy-fix", "--db", toy.db, "--replicates", "1")
    assert again.exit_code == 0, again.stderr[-2000:]
    assert toy.conf.read_bytes() == toy.original


def test_sighup_restores_the_target_as_sigterm_does(toy):
    """Closing the terminal (or an ssh session dropping) sends SIGHUP: the runner used to die at once,
    leaving the arm's config in place and the workload running."""
    proc, pgid, flag = _held_runner(toy)
    proc.send_signal(signal.SIGHUP)
    try:
        out, err = _ended(proc)
    except AssertionError:
        flag.unlink()  # its workload, left behind, ends
        raise
    assert proc.returncode == 128 + signal.SIGHUP, err[-2000:]
    assert toy.conf.read_bytes() == toy.original
    _until(lambda: not _alive(pgid), limit_s=30)  # the runner stopped it: the flag still holds it
    flag.unlink()


def test_a_runner_started_with_the_stop_signals_blocked_restores_on_sigterm(toy):
    """A runner that inherited SIGTERM, SIGHUP and SIGINT blocked (a parent's mask is kept across exec) never saw
    them: a `kill` could not make it restore the target, and it ran on with the arm's config in place. It lets
    them through as its execution opens."""
    proc, pgid, flag = _held_runner(toy, blocked=True)
    try:
        status = Path(f"/proc/{proc.pid}/status").read_text()
        mask = int(next(line for line in status.splitlines() if line.startswith("SigBlk:")).split()[1], 16)
        assert [sig.name for sig in STOPS if mask & (1 << (sig - 1))] == [], status
        proc.send_signal(signal.SIGTERM)
        out, err = _ended(proc)
    finally:
        flag.unlink(missing_ok=True)  # its workload, if left behind, ends
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "the target was restored" in err and toy.conf.read_bytes() == toy.original, err[-2000:]


def test_a_runner_started_under_nohup_runs_on_through_sighup(toy):
    """`nohup wb hypothesis run ...` asks the run to outlive the terminal: SIGHUP is ignored when wb starts. The
    run loop took SIGHUP over all the same, so closing the terminal stopped the execution (exit 129) in the middle
    of its runs. A stop signal the process ignores stays ignored: the runs go on and the execution ends well."""
    flag, workload = _slow_workload(toy)
    edit_profile(toy.root, 'units_path }}", timeout_s: 3}', 'units_path }}", timeout_s: 600}')
    proc = subprocess.Popen(["nohup", *WB, "hypothesis", "run", "toy-fix", "--db", toy.db, "--json",
                             "--replicates", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _until(lambda: bool(workload()), proc)
        proc.send_signal(signal.SIGHUP)  # pending before the workload can end: the loop meets it first
    finally:
        flag.unlink()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    assert [r["status"] for r in json.loads(out)["runs"]] == ["ok", "ok"], out
    assert toy.conf.read_bytes() == toy.original
