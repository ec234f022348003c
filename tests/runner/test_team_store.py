"""Two people run experiments at once against one PostgreSQL store: nothing is lost, each run says who ran it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from workbench.store import open_store

WB = [sys.executable, "-m", "workbench.cli.main"]


def _second_workbench(toy, tmp_path: Path) -> Path:
    """The toy workbench again, on its own copy of the deployment's state folder (its own target)."""
    root, state = tmp_path / "bench2", tmp_path / "state2"
    shutil.copytree(toy.root, root)
    shutil.copytree(toy.state, state)
    exp = root / "experiments" / "toy.yaml"
    exp.write_text(exp.read_text().replace(str(toy.state), str(state)))
    return root


def test_two_users_run_at_once_on_one_postgresql_store(toy, tmp_path: Path, pg_url: str):
    roots = {"ada": toy.root, "grace": _second_workbench(toy, tmp_path)}
    code, _, _ = 0, None, None
    assert subprocess.run([*WB, "db", "upgrade", "--db", pg_url], capture_output=True, timeout=120).returncode == 0
    procs = {}
    for user, root in roots.items():
        env = {**os.environ, "WB_USER": user, "WB_ROOT": str(root)}
        procs[user] = subprocess.Popen([*WB, "hypothesis", "run", "toy-fix", "--db", pg_url, "--replicates", "3"],
                                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for user, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, (user, out[-3000:], err[-6000:])
    store = open_store(pg_url)
    try:
        executions = store.executions(hypothesis_id="toy-fix")
        runs = store.runs()
    finally:
        store.dispose()
    assert sorted(e.user_name for e in executions) == ["ada", "grace"]
    assert all(e.user_source == "WB_USER" and e.host for e in executions)
    for e in executions:
        mine = [r for r in runs if r.execution_id == e.id]
        assert len(mine) == 6 and all(r.status == "ok" for r in mine), [(r.arm, r.status, r.error) for r in mine]
        assert all(r.metrics.get("sessions") == 10 for r in mine)


def _state(cli, db: str, env: dict[str, str]) -> dict:
    import json

    code, out, err = cli("review", "list", "toy-fix", "--json", "--db", db, env=env)
    assert code == 0, err
    return json.loads(out)[0]


def _review_round_trip(toy, cli, db: str) -> None:
    env = {"WB_ROOT": str(toy.root), "WB_USER": "ada"}

    def wb(*args: str) -> None:
        code, out, err = cli(*args, "--db", db, env=env)
        assert code == 0, (args, out[-2000:], err[-2000:])

    wb("hypothesis", "run", "toy-fix", "--replicates", "1")
    assert _state(cli, db, env)["state"] == "awaiting review"
    wb("review", "toy-fix", "--approve", "-m", "leaks gone with the fix")
    first = _state(cli, db, env)
    assert first["state"] == "approved" and first["reviews"][0]["author"] == "ada"
    assert first["reviews"][0]["evidence_digest"] == first["current_verdict"]["evidence_digest"]
    wb("hypothesis", "run", "toy-fix", "--replicates", "1")   # new runs: new evidence under the verdict
    stale = _state(cli, db, env)
    assert stale["state"] == "stale" and stale["reviews"][0]["stale"] is True
    wb("review", "toy-fix", "--approve", "-m", "still holds", "--as", "grace")
    again = _state(cli, db, env)
    assert again["state"] == "approved"
    assert [(r["author"], r["author_source"], r["stale"]) for r in again["reviews"]] == \
        [("ada", "WB_USER", True), ("grace", "flag", False)]


def test_review_round_trip_on_duckdb(toy, cli):
    _review_round_trip(toy, cli, toy.db)


def test_review_round_trip_on_postgresql(toy, cli, pg_url: str):
    _review_round_trip(toy, cli, pg_url)
