"""The store on a real PostgreSQL server: the same flow as on DuckDB, by URL alone."""

from __future__ import annotations

import json
from pathlib import Path


def test_whole_flow_on_postgresql(pg_url: str, workbench_dir: Path, seed_csv: Path, cli, monkeypatch):
    monkeypatch.chdir(workbench_dir)
    for args in (["db", "upgrade"], ["import", "evidence", str(seed_csv)]):
        code, out, err = cli(*args, "--db", pg_url)
        assert code == 0, err
    code, out, err = cli("hypothesis", "analyze", "wedge-confound", "--db", pg_url, "--json")
    assert code == 0, err
    assert json.loads(out)["verdict"] == "falsified"
    code, out, err = cli("report", "--db", pg_url)
    assert code == 0, err
    page = (workbench_dir / "reports" / "hypotheses" / "wedge-confound.html")
    assert "falsified" in page.read_text()


def test_plain_postgresql_url_uses_the_installed_driver(pg_url: str, cli):
    plain = pg_url.replace("postgresql+psycopg://", "postgresql://")
    code, out, err = cli("db", "upgrade", "--db", plain)
    assert code == 0, err
    code, out, err = cli("db", "current", "--db", plain, "--json")
    assert code == 0, err
    assert json.loads(out)["is_head"] is True


def test_a_url_whose_driver_is_missing_is_bad_input_naming_it(cli, tmp_path: Path):
    from typer.testing import CliRunner

    from workbench.cli.main import app

    result = CliRunner().invoke(app, ["db", "upgrade", "--db", "postgresql+pg8000://u@127.0.0.1:1/x"])
    assert result.exit_code == 2
    assert "Error:" in result.stderr and "pg8000" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_two_writers_snapshot_the_same_hypothesis_at_once(pg_url: str):
    """Both see no snapshot, both insert: the second must reuse the first's row, not fail (seen with two
    `wb hypothesis run` started together on one PostgreSQL store)."""
    import threading

    from workbench.store import open_store, records, upgrade

    upgrade(pg_url)
    store = open_store(pg_url)
    body = {"id": "h", "claim": "c"}
    got: dict[str, object] = {}

    def second() -> None:
        try:
            with store.session() as s:
                got["id"] = records.snapshot_hypothesis(s, hypothesis_id="h", body=body).id
        except Exception as exc:  # noqa: BLE001  (the assertion below names it)
            got["error"] = exc

    try:
        with store.session() as s:
            first = records.snapshot_hypothesis(s, hypothesis_id="h", body=body).id
            t = threading.Thread(target=second)
            t.start()
            t.join(timeout=2)       # the second writer now waits on the unique index
            assert t.is_alive()
        t.join(timeout=60)          # the first committed: the second sees its row
        assert "error" not in got, got.get("error")
        assert got["id"] == first
    finally:
        store.dispose()


def test_two_upgrades_of_a_fresh_store_at_once_both_succeed(pg_url: str, tmp_path: Path):
    """Two people setting up one fresh PostgreSQL store at once (`wb db upgrade`, or a `wb bundle import` that
    creates the schema): the second crashed with a traceback (relation "alembic_version" already exists)."""
    import subprocess
    import sys
    import time

    go = tmp_path / "go"
    script = ("import sys, time, pathlib\n"
              "from workbench.store import upgrade\n"
              "while not pathlib.Path(sys.argv[2]).exists(): time.sleep(0.01)\n"  # all start together
              "upgrade(sys.argv[1])\n")
    procs = [subprocess.Popen([sys.executable, "-c", script, pg_url, str(go)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    time.sleep(3)  # each has imported wb and waits
    go.touch()
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err[-1500:] for _, err in outs]
    from workbench.store import head_revision
    from workbench.store.engine import Store, current_revision

    store = Store(pg_url, None, read_only=True)
    try:
        assert current_revision(store) == head_revision()
    finally:
        store.dispose()
