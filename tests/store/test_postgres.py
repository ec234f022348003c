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


def test_a_url_naming_a_database_or_role_the_server_lacks_is_bad_input(pg_server, cli):
    """--db that names no database (a typo) was exit 1, "a failure while running", where a DuckDB path that names
    no store is bad input (exit 2); the server's own words say what is missing."""
    for url, missing in ((pg_server.url("no_such_db"), 'database "no_such_db" does not exist'),
                         (pg_server.url().replace("postgres@", "nobody@"), 'role "nobody" does not exist')):
        code, out, err = cli("db", "current", "--db", url, "--json")
        assert code == 2, err
        e = json.loads(out)["error"]
        assert missing in e["message"] and e["where"] == "--db" and e["exit_code"] == 2, e


def test_a_url_whose_driver_is_missing_is_bad_input_naming_it(cli, tmp_path: Path):
    from typer.testing import CliRunner

    from workbench.cli.main import app

    result = CliRunner().invoke(app, ["db", "upgrade", "--db", "postgresql+pg8000://u@127.0.0.1:1/x"])
    assert result.exit_code == 2
    assert "Error:" in result.stderr and "pg8000" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_a_url_whose_port_is_no_number_is_bad_input_naming_db_not_a_bug(cli, monkeypatch):
    """A mistyped port (`:54x2`, a placeholder left in) made SQLAlchemy's URL parser raise ValueError, reported as
    a bug in wb with its traceback (exit 1); it is --db's value at fault, and the password stays hidden."""
    for args in (("--db", "postgresql://ada:s3cret@127.0.0.1:PORT/wb"), ()):
        if not args:
            monkeypatch.setenv("WB_DB", "postgresql://ada:s3cret@127.0.0.1:PORT/wb")
        code, out, err = cli("runs", "list", *args, "--json")
        where = "--db" if args else "$WB_DB"
        assert code == 2, err
        assert "Traceback" not in err and "s3cret" not in err + out
        e = json.loads(out)["error"]
        assert e["where"] == where and e["kind"] == "BadInput" and "PORT" in e["message"], e
        assert err.startswith("Error: ") and where in err.splitlines()[0], err


def test_a_url_option_the_driver_rejects_is_bad_input_not_an_unreachable_server(cli):
    """An option mistyped in --db's query (`?sslmode=requre`, `?connect_timeout=5s`, an unknown one) was exit 1 with
    the hint for a server that is down; the driver refuses it before connecting: it is --db's value at fault."""
    for option, said in (("sslmode=bogus", "invalid sslmode value"), ("connect_timeout=5s", "connect_timeout"),
                         ("no_such_option=1", "no_such_option")):
        code, out, err = cli("runs", "list", "--db", f"postgresql://ada:s3cret@127.0.0.1:1/wb?{option}", "--json")
        assert code == 2, err
        e = json.loads(out)["error"]
        assert e["where"] == "--db" and e["kind"] == "BadInput" and said in e["message"], e
        assert "up and reachable" not in e["hint"] and "s3cret" not in err + out, e


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
              "pathlib.Path(sys.argv[3]).touch()\n"  # imported: ready
              "while not pathlib.Path(sys.argv[2]).exists(): time.sleep(0.01)\n"  # all start together
              "upgrade(sys.argv[1])\n")
    ready = [tmp_path / f"ready-{i}" for i in range(3)]
    procs = [subprocess.Popen([sys.executable, "-c", script, pg_url, str(go), str(r)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in ready]
    deadline = time.monotonic() + 120
    try:
        while not all(r.exists() for r in ready):  # each has imported wb and waits (a fixed 3 s guessed at that)
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), [p.poll() for p in procs]
            time.sleep(0.02)
    except BaseException:
        for p in procs:
            p.kill()
        raise
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


def _relations_and_rows(url: str) -> tuple[list, list]:
    """The database's relations, and the rows of every wb table that evidence touches."""
    from sqlalchemy import create_engine, pool, text

    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            relations = sorted(tuple(r) for r in conn.execute(text(
                "SELECT relname, relkind FROM pg_class JOIN pg_namespace n ON n.oid = relnamespace "
                "WHERE nspname = 'public' AND relkind IN ('r', 'S', 'i')")))
            rows = [] if ("runs", "r") not in relations else [
                [tuple(r) for r in conn.execute(text(f"SELECT * FROM {t} ORDER BY 1, 2"))]
                for t in ("runs", "metrics", "verdicts")]
    finally:
        engine.dispose()
    return relations, rows


def _workbench(db: str, root: Path):
    from workbench.app import Workbench
    from workbench.settings import Settings

    return Workbench.open(Settings(db=db, root=root))


def test_an_evidence_import_that_fails_part_way_leaves_postgresql_as_it_was(pg_server, workbench_dir: Path,
                                                                             seed_csv: Path, monkeypatch):
    """The import read what was stored, planned, then wrote in separate transactions, and into an empty database
    it first committed wb's schema on its own: a failure after that left the schema behind. A failure between
    deleting the runs a --replace replaces and storing their replacements leaves every run and verdict too."""
    import pytest

    from workbench.store import records

    def broken(*args, **kwargs):
        raise RuntimeError("injected: the connection dropped here")

    empty = pg_server.create_database()
    monkeypatch.setattr(records, "add_imported_runs", broken)
    with pytest.raises(RuntimeError, match="injected"):
        _workbench(empty, workbench_dir).import_evidence(seed_csv)
    assert _relations_and_rows(empty) == ([], [])

    monkeypatch.undo()
    used = pg_server.create_database()
    wb = _workbench(used, workbench_dir)
    wb.import_evidence(seed_csv)
    wb.analyze("wedge-confound")
    lines = seed_csv.read_text().splitlines()
    edited = workbench_dir / "edited.csv"
    edited.write_text("\n".join(lines[:-1] + [lines[-1].replace(",346.3,", ",346.4,", 1)]) + "\n")
    assert edited.read_text() != seed_csv.read_text()
    before = _relations_and_rows(used)
    assert before[1][2], "the analysis recorded a verdict resting on the imported runs"
    monkeypatch.setattr(records, "add_imported_runs", broken)
    with pytest.raises(RuntimeError, match="injected"):
        _workbench(used, workbench_dir).import_evidence(edited, replace=True)
    assert _relations_and_rows(used) == before


def test_two_imports_of_one_evidence_file_at_once_store_its_runs_once(pg_url: str, workbench_dir: Path,
                                                                     seed_csv: Path, monkeypatch):
    """Both read no stored run, both stored all six: twelve historical runs, each counted twice by every
    analysis. Now the second waits for the first and skips its rows, as a second import of a file does."""
    import threading
    import time

    from sqlalchemy import create_engine, pool, text

    from workbench.registry import evidence

    real_plan = evidence.plan_import
    planning: list[str] = []
    watcher = create_engine(pg_url, poolclass=pool.NullPool)

    def waiting_on_a_lock() -> bool:
        with watcher.connect() as conn:
            return bool(conn.execute(text("SELECT count(*) FROM pg_locks WHERE NOT granted")).scalar_one())

    def rendezvous(*args, **kwargs):
        # Each import plans only once the other has planned too, or is held back from reading by a lock:
        # without the lock both read the store before either wrote, whatever the machine's speed.
        planning.append(threading.current_thread().name)
        deadline = time.monotonic() + 120
        while len(planning) < 2 and not waiting_on_a_lock():
            assert time.monotonic() < deadline, "the other import neither planned nor waited"
            time.sleep(0.05)
        return real_plan(*args, **kwargs)

    monkeypatch.setattr(evidence, "plan_import", rendezvous)
    results: dict[str, object] = {}

    def run(name: str) -> None:
        try:
            results[name] = _workbench(pg_url, workbench_dir).import_evidence(seed_csv)
        except BaseException as exc:  # noqa: BLE001  (the assertion below shows it)
            results[name] = exc

    threads = [threading.Thread(target=run, args=(n,), name=n) for n in ("first", "second")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    watcher.dispose()
    assert not any(t.is_alive() for t in threads)
    assert not any(isinstance(r, BaseException) for r in results.values()), results
    assert sorted((len(r.imported), len(r.skipped)) for r in results.values()) == [(0, 6), (6, 0)]
    rows = _relations_and_rows(pg_url)[1][0]
    assert len(rows) == 6
