"""team review: global keys, who ran what, evidence digests, reviews bound to them, artifact contents

Revision ID: 0003_team_review
Revises: 0002_probe_state
Create Date: 2026-12-01 09:40:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel

revision: str = '0003_team_review'
down_revision: Union[str, None] = '0002_probe_state'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

_STR = sqlmodel.sql.sqltypes.AutoString
# DuckDB allows only ADD COLUMN on a table with an index: every new column is a nullable addition.
_ADDED = {
    'executions': [('uuid', _STR()), ('user_name', _STR()), ('user_source', _STR()), ('host', _STR()),
                   ('git_revision', _STR()), ('git_dirty', sa.Boolean())],
    'runs': [('uuid', _STR())],
    'verdicts': [('uuid', _STR()), ('evidence_digest', _STR()), ('evidence_json', sa.Text()),
                 ('analysis_version', _STR())],
    'reviews': [('uuid', _STR()), ('author_source', _STR()), ('verdict_uuid', _STR()), ('evidence_digest', _STR()),
                ('verdict_seen', _STR())],
}
_KEYED = ('executions', 'runs', 'verdicts', 'reviews')


def upgrade() -> None:
    for table, columns in _ADDED.items():
        for name, type_ in columns:
            op.add_column(table, sa.Column(name, type_, nullable=True))
    for table in _KEYED:
        # Rows made before this revision get a key too, so bundles can carry them (DuckDB and
        # PostgreSQL 13+ have gen_random_uuid()). DuckDB cannot index a column updated in the same
        # transaction: 0004 makes the keys unique, in a transaction of its own (engine._upgrade_by_steps).
        op.execute(f"UPDATE {table} SET uuid = CAST(gen_random_uuid() AS VARCHAR) WHERE uuid IS NULL")
    op.execute("UPDATE reviews SET decision = 'request-changes' WHERE decision = 'reject'")
    op.create_table('artifact_blobs',
                    sa.Column('sha256', _STR(), nullable=False),
                    sa.Column('size_bytes', sa.Integer(), nullable=False),
                    sa.Column('compression', _STR(), nullable=False),
                    sa.Column('data', sa.LargeBinary(), nullable=False),
                    sa.PrimaryKeyConstraint('sha256'))


def downgrade() -> None:
    op.drop_table('artifact_blobs')
    for table, columns in _ADDED.items():
        for name, _ in reversed(columns):
            op.drop_column(table, name)
