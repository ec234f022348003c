"""Global keys are unique in a store (migration 0004), on DuckDB and on PostgreSQL: a second row with a stored
uuid is refused, and a store that already holds one is refused at upgrade, unchanged, with the fix named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import text

from workbench.store import head_revision, open_store, records, upgrade
from workbench.store.engine import Store, _alembic_config, current_revision, resolve_url

KEYED = ("executions", "runs", "verdicts", "reviews")
DUP = "d" * 32


def _store_at_0003_with_twins(db: str) -> None:
    """A store as wb at revision 0003 left it, holding two runs and two verdicts that share a uuid (as two
    merges of one bundle at once could store them), besides rows of their own."""
    from alembic import command

    url, path = resolve_url(db)
    store = Store(url, path, read_only=False)
    try:
        with store.connect() as conn:
            cfg = _alembic_config(store)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0003_team_review")
            for uuid in (DUP, DUP, "a" * 32):
                conn.execute(text("INSERT INTO runs (source, status, uuid) VALUES ('import', 'historical', :u)"),
                             {"u": uuid})
            for uuid in ("v" * 32, "v" * 32):
                conn.execute(text("INSERT INTO verdicts (hypothesis_id, verdict, created_at, uuid) "
                                  "VALUES ('h', 'supported', CURRENT_TIMESTAMP, :u)"), {"u": uuid})
    finally:
        store.dispose()


def _rows(db: str) -> dict[str, list[tuple]]:
    url, path = resolve_url(db)
    with Store(url, path, read_only=True) as store, store.connect() as conn:
        return {t: [tuple(r) for r in conn.execute(text(f"SELECT id, uuid FROM {t} ORDER BY id"))] for t in KEYED}


def _unique_keys(db: str) -> set[str]:
    """The tables whose uuid column a unique index covers."""
    url, path = resolve_url(db)
    with Store(url, path, read_only=True) as store, store.connect() as conn:
        if store.is_duckdb:
            rows = conn.execute(text("SELECT table_name, expressions FROM duckdb_indexes() WHERE is_unique"))
        else:
            rows = conn.execute(text("SELECT tablename, indexdef FROM pg_indexes WHERE indexdef LIKE 'CREATE UNIQUE%'"))
        return {t for t, expr in rows if re.search(r"\buuid\b", str(expr))}


def _refused_at_upgrade_unchanged(db: str, cli) -> None:
    _store_at_0003_with_twins(db)
    before = _rows(db)
    code, out, err = cli("db", "upgrade", "--db", db)
    assert code == 2, out + err
    assert err.startswith("Error:") and "Traceback" not in err + out
    assert "rows of runs (ids 1, 2) have the same uuid " + DUP in err
    assert "1 more duplicated key" in err and "nothing was changed" in err
    assert re.search(r"UPDATE runs SET uuid = '[0-9a-f]{32}' WHERE id = 2", err)
    assert re.search(r"UPDATE verdicts SET uuid = '[0-9a-f]{32}' WHERE id = 2", err)
    url, path = resolve_url(db)
    with Store(url, path, read_only=True) as store:
        assert current_revision(store) == "0003_team_review"
    assert _rows(db) == before and _unique_keys(db) == set()
    # The hint's fix, as given, lets the upgrade through.
    fixes = re.findall(r"UPDATE \w+ SET uuid = '[0-9a-f]{32}' WHERE id = \d+", err)
    with Store(url, path, read_only=False) as store, store.connect() as conn:
        for sql in fixes:
            conn.execute(text(sql))
    code, out, err = cli("db", "upgrade", "--db", db)
    assert code == 0, err
    assert _unique_keys(db) == set(KEYED)


def _second_row_with_a_stored_key_is_refused(db: str) -> None:
    from sqlalchemy.exc import IntegrityError

    upgrade(db)
    store = open_store(db)
    try:
        with store.session() as s:
            records.create_run(s, experiment_id="e", variables={}, uuid=DUP)
        with pytest.raises(IntegrityError):
            with store.session() as s:
                records.create_run(s, experiment_id="e", variables={}, uuid=DUP)
        with store.session() as s:  # no key at all stays allowed, many times
            for _ in range(2):
                s.exec(text("INSERT INTO reviews (hypothesis_id, author, decision, created_at) "
                            "VALUES ('h', 'a', 'comment', CURRENT_TIMESTAMP)"))
    finally:
        store.dispose()
    assert [u for _, u in _rows(db)["runs"]] == [DUP]


def test_duckdb_store_with_a_duplicated_key_is_refused_at_upgrade_unchanged(tmp_path: Path, cli):
    _refused_at_upgrade_unchanged(str(tmp_path / "twins.duckdb"), cli)


def test_postgresql_store_with_a_duplicated_key_is_refused_at_upgrade_unchanged(pg_url: str, cli):
    _refused_at_upgrade_unchanged(pg_url, cli)


def test_duckdb_refuses_a_second_row_with_a_stored_key(tmp_path: Path):
    _second_row_with_a_stored_key_is_refused(str(tmp_path / "k.duckdb"))


def test_postgresql_refuses_a_second_row_with_a_stored_key(pg_url: str):
    _second_row_with_a_stored_key_is_refused(pg_url)


def test_an_older_duckdb_store_with_rows_upgrades_through_the_keys_it_is_given(tmp_path: Path, cli):
    """0003 gives each old row a uuid and 0004 indexes them: DuckDB cannot do both in one transaction."""
    from alembic import command

    db = str(tmp_path / "old.duckdb")
    url, path = resolve_url(db)
    with Store(url, path, read_only=False) as store, store.connect() as conn:
        cfg = _alembic_config(store)
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0002_probe_state")
        for _ in range(3):
            conn.execute(text("INSERT INTO runs (source, status) VALUES ('import', 'historical')"))
    code, out, err = cli("db", "upgrade", "--db", db)
    assert code == 0, err
    assert f"0002_probe_state -> {head_revision()}" in out
    uuids = [u for _, u in _rows(db)["runs"]]
    assert len(set(uuids)) == 3 and None not in uuids
    assert _unique_keys(db) == set(KEYED)
