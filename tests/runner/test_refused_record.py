"""A `wb hypothesis run` refused because another execution holds the target (exit 2): nothing ran and the target
was not touched, and the attempt is on record as an execution with status `refused`, as the README says."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from runner_kit import store_rows

from workbench.runner.lock import LOCK_NAME, process_start

WB = str(Path(sys.executable).with_name("wb"))


def _held_by_me(toy) -> None:
    holder = {"execution": "f" * 32, "host": socket.gethostname(), "pid": os.getpid(),
              "pid_start": process_start(os.getpid()), "since": "2026-12-01T09:00:00+00:00"}
    (toy.state / f".serve.conf.{LOCK_NAME}").write_text(json.dumps(holder, sort_keys=True) + "\n")


def test_a_refused_run_is_recorded_as_refused_and_says_so(toy) -> None:
    _held_by_me(toy)
    env = {**os.environ, "WB_ROOT": str(toy.root)}
    res = subprocess.run([WB, "hypothesis", "run", "toy-fix", "--db", toy.db, "--json"], capture_output=True,
                         text=True, env=env, timeout=300)
    assert res.returncode == 2, res.stderr[-2000:]
    doc = json.loads(res.stdout)
    assert doc["ok"] is False and doc["error"]["exit_code"] == 2
    assert "this attempt is recorded as execution 1, status refused" in doc["error"]["hint"]
    assert "  (this attempt is recorded as execution 1, status refused: no run, no verdict" in res.stderr
    rows = store_rows(toy.db, "SELECT id, status, error FROM executions")
    assert [(r[0], r[1]) for r in rows] == [(1, "refused")] and "is in use by execution " + "f" * 32 in rows[0][2]
    assert store_rows(toy.db, "SELECT count(*) FROM runs") == [(0,)]
    assert store_rows(toy.db, "SELECT count(*) FROM verdicts") == [(0,)]
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == []
    # Not an interrupted execution: --resume has nothing to continue.
    res = subprocess.run([WB, "hypothesis", "run", "toy-fix", "--resume", "--db", toy.db], capture_output=True,
                         text=True, env=env, timeout=300)
    assert res.returncode == 2 and res.stderr.startswith("Error: no interrupted execution of 'toy-fix'"), res.stderr


def test_the_readme_says_what_a_refusal_records() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    text = " ".join(readme.split())
    assert "recorded as an execution with status `refused`" in text


def test_the_readme_section_on_refusals_names_every_refusal_it_records() -> None:
    # "A target held or left: what a refusal records" described a held target only, while an ssh host refused before
    # anything on it changed, or a config.path folder missing on the host, is recorded as `refused` the same way.
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("**A target held or left: what a refusal records.**")
    section = " ".join(readme[start:readme.index("\n\n", start)].split())
    for cause in ("is held", "an ssh host refused it before anything on it changed", "host key unknown",
                  "port closed", "login refused", "config.path",
                  "the host with the cause (and the port when it was closed)"):
        assert cause in section, cause


def test_the_readme_exit_table_gives_a_refused_ssh_host_as_exit_2() -> None:
    # An ssh host that refuses wb before anything on it changed (its key unknown or changed, its port closed, the
    # login refused) exits 2 and is kept on record as refused; the exit codes' table listed only a held target.
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    (row,) = [line for line in readme.splitlines() if line.startswith("| 2 |")]
    for cause in ("an ssh host refused it", "host key unknown", "changed", "port closed", "login refused"):
        assert cause in row, cause
    # Only a closed port's Error names the port it was dialled on (a refused login or an unknown key on port 22
    # names none); one behind a jump host is refused as well (tests/runner/test_ssh.py).
    assert "the `Error:` names the host and port" not in row
    assert "the `Error:` names the host, or the jump host, that refused and the cause, with the port when it " \
           "was closed" in row
    assert "port closed behind a jump host" in row


def test_a_busy_target_names_its_holder_as_the_store_shows_it(toy, cli) -> None:
    """The holder of the lock is an execution of this store: the Error names it by the id `wb report` and
    `wb runs list` show (and its hypothesis), as the Hint names the refused attempt, never by its uuid."""
    _held_by_me(toy)
    code, _, _ = cli("hypothesis", "run", "toy-fix", "--db", toy.db)
    assert code == 2
    (uuid,) = store_rows(toy.db, "SELECT uuid FROM executions WHERE id = 1")[0]
    lock = toy.state / f".serve.conf.{LOCK_NAME}"
    lock.write_text(lock.read_text().replace("f" * 32, uuid))
    code, out, err = cli("hypothesis", "run", "toy-fix", "--db", toy.db)
    assert code == 2 and out == "", err
    assert "Error: target local is in use by execution 1 of toy-fix (pid " in err, err
    assert uuid not in err, err
    assert "this attempt is recorded as execution 2, status refused" in err, err


def test_a_holder_in_another_store_is_named_with_its_store(toy, cli, pg_url: str) -> None:
    """ada's run on the team store held the target; bob's run on a DuckDB file was refused with "in use by
    execution 1 of toy-fix" and "(this attempt is recorded as execution 1 ...)": two executions of two stores, one
    number. The holder is named with its store (its password masked), in the Error and on the refused execution's
    page."""
    import html
    import time

    from runner_kit import edit_profile

    team = pg_url.replace("postgres@", "postgres:s3cret@")
    go = toy.state / "go"
    edit_profile(toy.root, 'workload: {command: "{{ python }}',
                 f'workload: {{command: "while [ ! -e {go} ]; do sleep 0.05; done; {{{{ python }}}}')
    edit_profile(toy.root, 'units_path }}", timeout_s: 3}', 'units_path }}", timeout_s: 600}')
    assert cli("db", "upgrade", "--db", team)[0] == 0
    lock = toy.state / f".serve.conf.{LOCK_NAME}"
    env = {**os.environ, "WB_ROOT": str(toy.root), "WB_USER": "ada"}
    ada = subprocess.Popen([WB, "hypothesis", "run", "toy-fix", "--replicates", "1", "--db", team], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not lock.exists():
            assert ada.poll() is None, ada.communicate()[1][-2000:]
            time.sleep(0.05)
        assert "s3cret" not in lock.read_text()
        res = subprocess.run([WB, "hypothesis", "run", "toy-fix", "--db", toy.db], capture_output=True, text=True,
                             env={**env, "WB_USER": "bob"}, timeout=300)
    finally:
        go.touch()
        ada.communicate(timeout=300)
    assert res.returncode == 2, res.stderr[-2000:]
    first = res.stderr.splitlines()[0]
    shown = "postgresql+psycopg://postgres:<redacted>@127.0.0.1:"
    assert first.startswith("Error: target local is in use by execution 1 of toy-fix in the store " + shown), first
    assert "s3cret" not in res.stderr and "this attempt is recorded as execution 1, status refused" in res.stderr
    assert cli("report", "--db", toy.db)[0] == 0
    page = (toy.root / "reports" / "hypotheses" / "toy-fix.html").read_text()
    assert "refused: target local is in use by execution 1 of toy-fix in the store " + html.escape(shown) in page
    assert "s3cret" not in page
