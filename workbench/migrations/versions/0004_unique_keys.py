"""unique global keys: executions, runs, verdicts and reviews each have one row per uuid

Revision ID: 0004_unique_keys
Revises: 0003_team_review
Create Date: 2026-12-02 10:00:00
"""
import uuid as uuidlib
from typing import Sequence, Union

from alembic import context, op
import sqlalchemy as sa

revision: str = '0004_unique_keys'
down_revision: Union[str, None] = '0003_team_review'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

_KEYED = ('executions', 'runs', 'verdicts', 'reviews')
_SHOWN = 5  # duplicated keys named in the hint


def _duplicates() -> list[tuple[str, str, list[int]]]:
    """(table, uuid, the ids of its rows) for each uuid more than one row of a table holds."""
    bind = op.get_bind()
    out = []
    for table in _KEYED:
        # The table names are this module's constants; nothing from the store is put into the statement.
        rows = bind.execute(sa.text(f"SELECT uuid, id FROM {table} WHERE uuid IN (SELECT uuid FROM {table} "
                                    "WHERE uuid IS NOT NULL GROUP BY uuid HAVING COUNT(*) > 1) ORDER BY uuid, id"))
        by_key: dict[str, list[int]] = {}
        for key, row_id in rows:
            by_key.setdefault(str(key), []).append(int(row_id))
        out.extend((table, key, ids) for key, ids in by_key.items())
    return out


def _refuse(found: list[tuple[str, str, list[int]]]) -> None:
    """One error naming the first duplicated key and how to give each row its own; the caller's transaction
    rolls back, so the store stays at its revision, unchanged."""
    from workbench.errors import BadInput

    store = context.config.attributes.get('store_name', 'the store')
    table, key, ids = found[0]
    more = f" (and {len(found) - 1} more duplicated key{'s' if len(found) > 2 else ''})" if len(found) > 1 else ""
    fixes = "; ".join(f"UPDATE {t} SET uuid = '{uuidlib.uuid4().hex}' WHERE id = {i}"
                      for t, _, same in found[:_SHOWN] for i in same[1:])
    raise BadInput(f"{store}: {len(ids)} rows of {table} (ids {', '.join(map(str, ids))}) have the same uuid {key}"
                   f"{more}; a uuid keys one row across stores, and `wb db upgrade` makes it unique; "
                   "nothing was changed",
                   hint="give every row but one its own key with SQL on the store (duckdb FILE, or psql), e.g. "
                        f"{fixes}{' ...' if len(found) > _SHOWN else ''}; then run `wb db upgrade` again")


def upgrade() -> None:
    found = _duplicates()
    if found:
        _refuse(found)
    for table in _KEYED:
        op.create_index(f'ix_{table}_uuid', table, ['uuid'], unique=True)


def downgrade() -> None:
    for table in reversed(_KEYED):
        op.drop_index(f'ix_{table}_uuid', table_name=table)
