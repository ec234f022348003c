"""A run deleted while its execution still runs (a finished run may go: `wb runs delete`) is not counted as
made: the progress line, the summary's order line and --json say how many planned runs are gone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runner_kit import edit_profile, store_rows

pytestmark = pytest.mark.slow  # end to end: runs first (tests/conftest.py)

WB = [sys.executable, "-m", "workbench.cli.main"]


def _until(cond, proc: subprocess.Popen, limit_s: float = 120, every_s: float = 0.05) -> None:
    t0 = time.monotonic()
    while not cond():
        if proc.poll() is not None:
            raise AssertionError(proc.communicate()[1][-2000:])
        assert time.monotonic() - t0 < limit_s
        time.sleep(every_s)


def _store_when_waiting(toy, cond, proc: subprocess.Popen):
    """Wait for the held workload to say it waits (a file: polling the store instead opened it a few times a
    second, a core's worth of CPU taken from the runner), then for `cond` on the store."""
    _until(lambda: (toy.state / "waiting").exists(), proc)
    _until(cond, proc, every_s=0.5)


def _run_held_after_the_first(toy, *extra: str) -> tuple[subprocess.Popen, Path]:
    """A runner whose first run ends and whose second waits (in its workload) until the returned flag goes."""
    flag, once = toy.state / "hold", toy.state / "ran-once"
    flag.touch()
    edit_profile(toy.root, 'workload: {command: "{{ python }}',
                 f'workload: {{command: "if [ -e {once} ]; then touch {toy.state}/waiting; while [ -e {flag} ]; do '
                 f'sleep 0.2; done; fi; touch {once}; {{{{ python }}}}')
    edit_profile(toy.root, 'units_path }}", timeout_s: 3}', 'units_path }}", timeout_s: 600}')
    proc = subprocess.Popen(WB + ["hypothesis", "run", "toy-fix", "--db", toy.db, "--no-report", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    return proc, flag


def _ok_runs(toy) -> list[tuple]:
    """The ok runs stored so far (none before the runner has created the store)."""
    from workbench.errors import WbError

    try:
        return store_rows(toy.db, "SELECT id FROM runs WHERE status = 'ok'")
    except WbError:
        return []


@pytest.mark.parametrize("as_json", [False, True])
def test_a_run_deleted_while_its_execution_runs_is_counted_as_deleted(toy, cli, as_json: bool):
    proc, flag = _run_held_after_the_first(toy, *(["--json"] if as_json else []))
    try:
        _store_when_waiting(toy, lambda: bool(_ok_runs(toy)), proc)
        ((first,),) = _ok_runs(toy)
        code, _, err = cli("runs", "delete", str(first), "--yes", "--db", toy.db)  # in process, beside the runner's
        assert code == 0, err[-2000:]
    finally:
        flag.unlink()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    # The bar's last line: three planned runs ended ok and are stored, one ended ok and was deleted since.
    assert "toy-fix on local: 3 of 4 runs ok, 1 deleted\n" in err, err[-2000:]
    if as_json:
        d = json.loads(out)
        assert d["runs_deleted"] == 1 and len(d["runs"]) == 3, d
    else:
        (order,) = [ln for ln in out.splitlines() if ln.startswith("order: ")]
        assert order.endswith("(3 of 4 planned; 1 deleted after it ended)"), order
        # Every planned run began: the arm whose run was deleted read "runs ok 1/1 (1 of 2 planned began)".
        arms = [ln.split(None, 1)[1].split("  ")[0] for ln in out.splitlines() if "runs ok" in ln]
        assert sorted(arms) == ["runs ok 1/1", "runs ok 2/2"] and "began" not in out, out
        assert "4 of 4" not in out + err
    assert toy.conf.read_bytes() == toy.original


def test_deleting_the_attempt_a_resume_redid_keeps_the_execution_verdict(toy, cli):
    # A runner killed mid-run leaves its run interrupted; --resume redoes that planned run and records the
    # verdict on the execution, reading the redone run, not the attempt. The attempt is history: deleting it
    # must leave the verdict and the status (it once took both, by "any run of the execution").
    import signal

    flag, once = toy.state / "hold", toy.state / "ran-once"
    flag.touch()
    once.touch()  # the first run's workload waits too
    edit_profile(toy.root, 'workload: {command: "{{ python }}',
                 f'workload: {{command: "if [ -e {once} ]; then touch {toy.state}/waiting; while [ -e {flag} ]; do '
                 f'sleep 0.2; done; fi; {{{{ python }}}}')
    edit_profile(toy.root, 'units_path }}", timeout_s: 3}', 'units_path }}", timeout_s: 600}')
    # One replicate: the attempt and its redoing are the first run's; how many runs follow it changes nothing here.
    proc = subprocess.Popen(WB + ["hypothesis", "run", "toy-fix", "--db", toy.db, "--no-report", "--replicates", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _store_when_waiting(toy, lambda: bool(_rows_with(toy, "running")), proc)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the runner and its workload, as a kill -9 of the session would
        proc.communicate(timeout=30)
    once.unlink()
    flag.unlink()
    # The resume, the deletion and the listings run in process (`cli`): the killed runner was the process of its own.
    code, out, err = cli("hypothesis", "run", "toy-fix", "--resume", "--db", toy.db, "--no-report", "--json")
    assert code == 0, err[-2000:]
    execution = json.loads(out)["execution_id"]
    ((attempt,),) = _rows_with(toy, "interrupted")
    verdicts = store_rows(toy.db, "SELECT id, verdict FROM verdicts WHERE execution_id = :e", e=execution)
    assert len(verdicts) == 1, verdicts
    status = _status(toy, cli)
    code, out, err = cli("runs", "delete", str(attempt), "--yes", "--json", "--db", toy.db)
    assert code == 0, err[-2000:]
    d = json.loads(out)
    assert [r["id"] for r in d["deleted"]] == [attempt] and d["verdicts_deleted"] == [], d
    assert d["status_changes"] == {} and _status(toy, cli) == status
    assert store_rows(toy.db, "SELECT id, verdict FROM verdicts") == verdicts


def _rows_with(toy, status: str) -> list[tuple]:
    from workbench.errors import WbError

    try:
        return store_rows(toy.db, "SELECT id FROM runs WHERE status = :s", s=status)
    except WbError:
        return []


def _status(toy, cli) -> tuple[str, str]:
    code, out, err = cli("hypothesis", "list", "--json", "--db", toy.db)
    assert code == 0, err
    (row,) = [i for i in json.loads(out)["items"] if i["id"] == "toy-fix"]
    return row["status"], row["status_basis"]
