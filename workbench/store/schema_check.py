"""Compare a migrated store with the table models: the migrations must build exactly the models.

DuckDB's reflection through SQLAlchemy loses index and time-zone detail, so the comparison is made
in DuckDB's own catalog: the models are created in an in-memory database and both catalogs compared.
"""

from __future__ import annotations

from typing import Any

_CATALOG = {
    "columns": "SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns "
               "WHERE table_schema = 'main' AND table_name <> 'alembic_version' ORDER BY ALL",
    "indexes": "SELECT table_name, index_name, is_unique, expressions FROM duckdb_indexes() ORDER BY ALL",
    "sequences": "SELECT sequence_name FROM duckdb_sequences() ORDER BY ALL",
    "constraints": "SELECT table_name, constraint_type, constraint_column_names FROM duckdb_constraints() "
                   "WHERE table_name <> 'alembic_version' AND constraint_type IN ('PRIMARY KEY', 'UNIQUE', "
                   "'FOREIGN KEY') ORDER BY ALL",
}


def _catalog(raw: Any) -> dict[str, set[tuple]]:
    return {k: {tuple(str(x) for x in row) for row in raw.execute(q).fetchall()} for k, q in _CATALOG.items()}


def models_catalog() -> dict[str, set[tuple]]:
    from sqlalchemy import create_engine, pool
    from sqlmodel import SQLModel

    import workbench.store.models  # noqa: F401

    engine = create_engine("duckdb:///:memory:", poolclass=pool.StaticPool)
    with engine.begin() as conn:
        SQLModel.metadata.create_all(conn)
        return _catalog(conn.connection.driver_connection)


def schema_diff(store) -> list[str]:
    """Lines describing every difference between the store's schema and the models; empty when equal."""
    with store.connect() as conn:
        actual = _catalog(conn.connection.driver_connection)
    expected = models_catalog()
    out = []
    for kind in _CATALOG:
        for row in sorted(expected[kind] - actual[kind]):
            out.append(f"missing in store {kind}: {row}")
        for row in sorted(actual[kind] - expected[kind]):
            out.append(f"extra in store {kind}: {row}")
    return out
