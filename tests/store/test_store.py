"""The store on real DuckDB files: migrations equal the models, revision checks, locks, corruption, bulk writes."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workbench.errors import StoreLocked, StoreOutdated
from workbench.store import head_revision, open_store, records, upgrade
from workbench.store.schema_check import schema_diff


def test_upgrade_empty_path_then_current_is_head(tmp_path: Path, cli):
    db = tmp_path / "wb.duckdb"  # a new store, in a folder that exists
    code, out, err = cli("db", "upgrade", "--db", str(db))
    assert code == 0, err
    assert "-> " + head_revision() in out
    code, out, _ = cli("db", "current", "--db", str(db), "--json")
    assert code == 0
    info = json.loads(out)
    assert info["revision"] == head_revision() and info["is_head"] is True
    code, out, _ = cli("db", "upgrade", "--db", str(db))
    assert "already at" in out


def test_an_empty_database_read_names_where_the_store_came_from(tmp_path: Path, cli):
    """A database with no tables (a PostgreSQL database made with createdb, an empty DuckDB file) read before
    wb wrote to it: StoreOutdated named no flag (where: null, the message without --db or $WB_DB), unlike every
    other error about the store's value, and the hint gave --db where $WB_DB had named the store."""
    import duckdb

    path = tmp_path / "empty.duckdb"
    duckdb.connect(str(path)).close()
    code, out, _ = cli("runs", "list", "--db", str(path), "--json")
    error = json.loads(out)["error"]
    assert code == 2 and error["kind"] == "StoreOutdated" and error["where"] == "--db", error
    assert f"{path} (--db) is at revision none" in error["message"]
    assert error["hint"] == f"run: wb db upgrade --db {path}"
    code, out, _ = cli("runs", "list", "--json", env={"WB_DB": str(path)})
    error = json.loads(out)["error"]
    assert code == 2 and error["where"] == "$WB_DB" and "($WB_DB)" in error["message"], error
    assert error["hint"] == "run: wb db upgrade", error


def test_migrations_build_exactly_the_models(tmp_path: Path):
    upgrade(str(tmp_path / "m.duckdb"))
    store = open_store(str(tmp_path / "m.duckdb"))
    try:
        assert schema_diff(store) == []
    finally:
        store.dispose()


def test_schema_diff_sees_a_drifted_store(tmp_path: Path):
    """The diff check itself can fail: a column added by hand is reported."""
    path = tmp_path / "d.duckdb"
    upgrade(str(path))
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("ALTER TABLE runs ADD COLUMN stray VARCHAR")
    con.close()
    store = open_store(str(path))
    try:
        diff = schema_diff(store)
    finally:
        store.dispose()
    assert any("stray" in line for line in diff)


def test_a_store_of_a_newer_wb_is_refused_without_the_upgrade_hint(tmp_path: Path, cli):
    """A revision this wb's migrations do not hold was written by a newer wb: wb db upgrade cannot help (it
    stopped on alembic's 'Can't locate revision' with a traceback), so it is not what the error names."""
    path = tmp_path / "new.duckdb"
    upgrade(str(path))
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("UPDATE alembic_version SET version_num = '0999_from_a_newer_wb'")
    con.close()
    before = path.read_bytes()
    with pytest.raises(StoreOutdated) as exc:
        open_store(str(path))
    assert "newer wb" in exc.value.message and "wb db upgrade" not in (exc.value.hint or "")
    for args in (["runs", "list"], ["report", "--out", str(tmp_path / "site")], ["db", "upgrade"]):
        code, _, err = cli(*args, "--db", str(path))
        assert code == 2, (args, err)
        assert "0999_from_a_newer_wb" in err and "newer wb" in err and "Traceback" not in err
        assert "run: wb db upgrade" not in err
    code, out, _ = cli("db", "current", "--db", str(path))
    assert code == 0 and "a newer wb wrote it" in out and "wb db upgrade" not in out
    assert path.read_bytes() == before and not (tmp_path / "site").exists()


def test_corrupt_file_gives_a_clear_error_and_is_left_untouched(tmp_path: Path, cli):
    path = tmp_path / "corrupt.duckdb"
    path.write_bytes(b"this is not a database" * 500)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    code, _, err = cli("runs", "list", "--db", str(path))
    assert code == 2  # --db names something that is not a store: bad input
    assert f"--db {path} is not a DuckDB database file" in err and "Traceback" not in err
    code, _, err = cli("import", "evidence", str(Path(__file__).parents[2] / "evidence" / "seed-runs.csv"),
                       "--db", str(path))
    assert code == 2
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_a_file_that_is_no_store_gets_a_reads_hint_from_a_read_and_a_writes_from_a_write(tmp_path: Path, cli,
                                                                                        workbench_dir: Path):
    """`wb runs list --db hypotheses.yaml` hinted "point --db at ... a new file name (wb creates it)", which a read
    never does (README): a read's hint names a store that exists; a write's still offers a new file name."""
    yaml_file = workbench_dir / "hypotheses.yaml"
    code, _, err = cli("runs", "list", "--db", str(yaml_file), "--root", str(workbench_dir))
    assert code == 2 and f"--db {yaml_file} is not a DuckDB database file" in err, err
    assert "wb creates it" not in err and "Hint: " in err and "a read creates none" in err, err
    code, _, err = cli("import", "evidence", str(Path(__file__).parents[2] / "evidence" / "seed-runs.csv"),
                       "--db", str(yaml_file), "--root", str(workbench_dir))
    assert code == 2 and "a new file name (wb creates it)" in err, err


def test_missing_store_for_a_read_is_bad_input_and_not_created(tmp_path: Path, cli, workbench_dir, monkeypatch):
    path = tmp_path / "typo.duckdb"
    code, _, err = cli("runs", "list", "--db", str(path))
    assert code == 2 and f"Error: no store at {path} (--db)\n" in err
    assert not path.exists()
    # No --db and no $WB_DB: the workbench's own default store is missing, which no flag named. A read of its runs
    # sees none (test_missing_default_store.py); `db current`, which asks about the store itself, says it is not there.
    monkeypatch.delenv("WB_DB", raising=False)
    code, _, err = cli("db", "current", "--root", str(workbench_dir))
    assert code == 2 and err.startswith(f"Error: no store at {workbench_dir / 'wb.duckdb'} (the workbench's "
                                        "default store; --db or $WB_DB names another)\n"), err
    assert not (workbench_dir / "wb.duckdb").exists()


def _lock_holder(path: Path) -> subprocess.Popen:
    """Another process holding the store's file lock, as a notebook or a running wb would."""
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import duckdb, sys, time
        con = duckdb.connect({str(path)!r})
        print("locked", flush=True)
        time.sleep(120)
    """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_a_locked_store_is_one_error_naming_the_file_and_the_holder_exit_2(tmp_path: Path, cli, seed_csv: Path):
    """A command that finds the store locked (past WB_DB_LOCK_WAIT) has read and written nothing: exit 2 with one
    Error: line naming the file and the process DuckDB says holds it (it was exit 1, with no process named)."""
    path = tmp_path / "wb.duckdb"
    upgrade(str(path))
    holder = _lock_holder(path)
    env = {"WB_DB_LOCK_WAIT": "0.5"}
    try:
        for args in (["runs", "list"], ["import", "evidence", str(seed_csv)], ["db", "upgrade"]):
            code, out, err = cli(*args, "--db", str(path), env=env)
            assert code == 2 and out == "" and "Traceback" not in err, (args, code, out, err)
            first = err.splitlines()[0]
            assert first.startswith(f"Error: the store {path} is locked by another process (PID {holder.pid}"), first
            assert [line for line in err.splitlines() if line.startswith("Error:")] == [first], err
            assert "nothing was read or written" in err, err
            assert "(waited 0.5 s)" in err, err  # the setting's wait: `db upgrade` waited the default 15 s
    finally:
        holder.kill()
        holder.wait(timeout=10)
    with open_store(str(path), read_only=True) as store:
        assert store.runs() == []  # the import stored nothing


def test_a_store_locked_after_the_command_began_is_a_failure_while_running(tmp_path: Path):
    """Once a command has used the store, a lock taken by another process in between is exit 1: the command may
    have run or written something already."""
    path = tmp_path / "wb.duckdb"
    upgrade(str(path))
    store = open_store(str(path), lock_wait_s=0.3)
    try:
        assert store.runs() == []
        holder = _lock_holder(path)
        try:
            with pytest.raises(StoreLocked) as exc:
                store.runs()
        finally:
            holder.kill()
            holder.wait(timeout=10)
        assert exc.value.exit_code == 1 and f"(PID {holder.pid}" in exc.value.message, exc.value.message
        assert "nothing was read or written" not in exc.value.message + (exc.value.hint or "")
    finally:
        store.dispose()


def test_second_writer_gets_a_clear_message(tmp_path: Path, monkeypatch):
    path = tmp_path / "locked.duckdb"
    upgrade(str(path))
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import duckdb, sys, time
        con = duckdb.connect({str(path)!r})
        print("locked", flush=True)
        time.sleep(30)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(StoreLocked) as exc:
            store = open_store(str(path), lock_wait_s=0.5)
            store.dispose()
        assert holder.poll() is None  # it gave up while the lock was still held, not after
        assert "is locked by another process" in exc.value.message
    finally:
        holder.kill()
        holder.wait(timeout=10)
    # once the writer is gone the same store opens, and several readers can share it
    a = open_store(str(path), read_only=True)
    b = open_store(str(path), read_only=True)
    with a.session() as s1, b.session() as s2:
        assert s1 is not s2
    a.dispose()
    b.dispose()


def test_bulk_units_and_metrics_round_trip(tmp_path: Path):
    import pandas as pd
    from sqlalchemy import text

    store = open_store(str(tmp_path / "bulk.duckdb"))
    try:
        with store.session() as session:
            run = records.create_run(session, experiment_id="agent-repro", variables={"hicache": "on"},
                                     fingerprint={"HF_TOKEN": "hf_secret", "git": "abc", "env": {"API_KEY": "k"}})
            outcomes = ["done", "leak", "error", "maxrounds"]
            units = pd.DataFrame({"run_id": run.id, "idx": range(100_000),
                                  "outcome": [outcomes[i % 4] for i in range(100_000)], "rounds": 4,
                                  "duration_s": 1.5, "data_json": None})
            n = records.bulk_insert(session, "units", units,
                                    ["run_id", "idx", "outcome", "rounds", "duration_s", "data_json"])
            records.add_metrics(session, run_id=run.id, metrics={"leak": 25_000, "sessions": 100_000, "wall_s": None},
                                source="units")
            rid = run.id
        assert n == 100_000
        with store.session() as session:
            rows = dict(session.connection().execute(
                text("SELECT outcome, count(*) FROM units WHERE run_id = :r GROUP BY 1"), {"r": rid}).all())
            assert rows == {"done": 25_000, "leak": 25_000, "error": 25_000, "maxrounds": 25_000}
            metrics = dict(session.connection().execute(
                text("SELECT name, value FROM metrics WHERE run_id = :r"), {"r": rid}).all())
            assert metrics == {"leak": 25_000.0, "sessions": 100_000.0}  # unknown wall_s is absent, not 0
            fp = session.connection().execute(text("SELECT fingerprint_json FROM runs WHERE id = :r"),
                                              {"r": rid}).scalar()
        assert "hf_secret" not in fp and '"k"' not in fp and "abc" in fp
    finally:
        store.dispose()


def test_units_from_dicts_keep_nulls_and_types_without_importing_pandas(tmp_path: Path):
    """A run's units go in as the runner has them (dicts, some fields missing or None, ints and floats mixed,
    a column empty in its first rows) in a process that never imports pandas."""
    script = textwrap.dedent(f"""
        import json, sys
        from workbench.store import open_store, records
        store = open_store({str(tmp_path / "units.duckdb")!r})
        try:
            with store.session() as s:
                run = records.create_run(s, experiment_id="e", variables={{}}, fingerprint={{}})
                units = [{{"outcome": "done"}} for _ in range(1500)]
                units += [{{"outcome": None, "rounds": 3, "duration_s": 2}},
                          {{"outcome": 7, "rounds": 4.0, "wall_s": 0.5, "extra": "x"}}]
                n = records.add_units(s, run_id=run.id, units=units)
                records.add_metrics(s, run_id=run.id, metrics={{"leak": 1, "wall_s": None}}, source="units")
            with store.session() as s:
                c = s.connection()
                rows = c.exec_driver_sql("SELECT idx, outcome, rounds, duration_s FROM units WHERE idx >= 1499 "
                                         "ORDER BY idx").all()
                metrics = c.exec_driver_sql("SELECT name, value FROM metrics").all()
        finally:
            store.dispose()
        print(json.dumps({{"n": n, "rows": [list(r) for r in rows], "metrics": [list(m) for m in metrics],
                          "pandas": "pandas" in sys.modules}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    assert got["n"] == 1502
    assert got["rows"] == [[1499, "done", None, None], [1500, None, 3, 2.0], [1501, "7", 4, 0.5]]
    assert got["metrics"] == [["leak", 1.0]]
    assert got["pandas"] is False


def test_a_store_at_the_first_revision_upgrades_and_keeps_its_rows(tmp_path: Path, cli):
    """A store made by an older wb is refused until `wb db upgrade`, which keeps every row."""
    from alembic import command

    from workbench.store.engine import Store, _alembic_config, resolve_url

    path = tmp_path / "v1.duckdb"
    url, p = resolve_url(str(path))
    store = Store(url, p, read_only=False)
    with store.connect() as conn:
        cfg = _alembic_config(store)
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001_initial")
        conn.exec_driver_sql("INSERT INTO runs (source, status) VALUES ('import', 'historical')")
    store.dispose()
    code, _, err = cli("runs", "list", "--db", str(path))
    assert code == 2 and "0001_initial" in err and f"wb db upgrade --db {path}" in err
    code, out, _ = cli("db", "upgrade", "--db", str(path))
    assert code == 0 and f"0001_initial -> {head_revision()}" in out
    code, out, _ = cli("runs", "list", "--json", "--db", str(path))
    assert code == 0 and len(json.loads(out)["items"]) == 1
    store = open_store(str(path))
    try:
        assert schema_diff(store) == []
    finally:
        store.dispose()


def test_head_revision_read_from_the_files_is_alembics_head(tmp_path: Path):
    """head_revision() reads the migration files' revision lines instead of loading them with alembic;
    both must name the same head, for the shipped migrations and for a chain with one more."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from workbench.store import engine

    def alembic_head(location: Path) -> str:
        cfg = Config()
        cfg.set_main_option("script_location", str(location))
        return ScriptDirectory.from_config(cfg).get_current_head()

    assert head_revision() == alembic_head(engine.MIGRATIONS_DIR)
    copy = tmp_path / "migrations"
    shutil.copytree(engine.MIGRATIONS_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "versions" / "0009_next.py").write_text(
        f'"""next"""\nrevision = "0009_next"\ndown_revision = "{head_revision()}"\nbranch_labels = None\n'
        'depends_on = None\n\n\ndef upgrade():\n    pass\n\n\ndef downgrade():\n    pass\n')
    engine.head_revision.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(engine, "MIGRATIONS_DIR", copy)
            assert engine.head_revision() == alembic_head(copy) == "0009_next"
    finally:
        engine.head_revision.cache_clear()


def test_a_held_store_keeps_one_file_open_only_for_its_block(tmp_path: Path):
    """`held()` keeps the DuckDB file open over a block of sessions (each would open and checkpoint it again):
    another process is kept out while the block runs, and let in again when it ends, by an error too."""
    path = tmp_path / "wb.duckdb"
    upgrade(str(path))
    other = textwrap.dedent(f"""
        from workbench.errors import StoreLocked
        from workbench.store import open_store
        try:
            open_store({str(path)!r}, lock_wait_s=0).runs()
        except StoreLocked:
            print("locked")
        else:
            print("open")
    """)

    def other_process() -> str:
        return subprocess.run([sys.executable, "-c", other], capture_output=True, text=True, timeout=120).stdout.strip()

    store = open_store(str(path))
    with store.held():
        with store.held():  # nested: the outer block's connection serves
            assert store.runs() == []
        assert store.runs() == []
        assert other_process() == "locked"
    assert other_process() == "open"
    with pytest.raises(RuntimeError), store.held():
        store.runs()
        raise RuntimeError("a failure inside the block")
    assert other_process() == "open"
    store.dispose()


def test_an_import_stores_each_run_as_a_row_at_a_time_insert_does(tmp_path: Path, workbench_dir: Path,
                                                                    seed_csv: Path):
    """`import_runs` stores the runs and their metrics in two bulk inserts (a 2000-row CSV took 13 s a row at a
    time: benchmarks/evidence_import_bench.py), and stores what `create_run` and `add_metrics` store: the same
    columns, ids in the rows' order, every text redacted as the session's flush hook redacts it."""
    from workbench import secrets
    from workbench.app import Workbench
    from workbench.registry import load_registry
    from workbench.registry.evidence import parse_evidence
    from workbench.settings import Settings
    from workbench.store.entities import ImportedRun

    secret = "hunter2-EVIDENCE-QUOTE"
    secrets.register(values=[secret])
    csv_path = tmp_path / "evidence.csv"
    csv_path.write_text(seed_csv.read_text().replace("ran clean", f"ran clean {secret}"))
    bulk, by_row = str(tmp_path / "bulk.duckdb"), str(tmp_path / "by_row.duckdb")
    result = Workbench(Settings(db=bulk, root=workbench_dir)).import_evidence(csv_path)
    rows = [ImportedRun(**r) for r in parse_evidence(csv_path, load_registry(workbench_dir).experiments["agent-repro"])]
    upgrade(by_row)
    _evidence_bench().row_at_a_time(rows, by_row)

    def stored(db: str) -> tuple[list, list]:
        with open_store(db, read_only=True) as store, store.connect() as conn:
            from sqlalchemy import text

            runs = [tuple(r) for r in conn.execute(text("SELECT * EXCLUDE (uuid) FROM runs ORDER BY id"))]
            metrics = [tuple(r) for r in conn.execute(text("SELECT * FROM metrics ORDER BY run_id, name"))]
            uuids = [u for (u,) in conn.execute(text("SELECT uuid FROM runs"))]
        return runs, metrics, uuids

    (runs, metrics, uuids), (runs_by_row, metrics_by_row, _) = stored(bulk), stored(by_row)
    assert len(runs) == len(rows) == 6 and len(metrics) > len(runs)
    assert (runs, metrics) == (runs_by_row, metrics_by_row)
    assert [r["id"] for r in result.imported] == [r[0] for r in runs] == sorted(r[0] for r in runs)
    assert [r["label"] for r in result.imported] == [r.label for r in rows]
    assert len(set(uuids)) == 6 and all(len(u) == 32 for u in uuids)
    assert secret not in repr(runs) and "ran clean <redacted>" in repr(runs)


def _evidence_bench():
    """benchmarks/evidence_import_bench.py as a module: its row-at-a-time baseline is the reference the bulk import
    is checked against, here and in the benchmark."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "evidence_import_bench.py"
    spec = importlib.util.spec_from_file_location("evidence_import_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
