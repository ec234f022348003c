"""probe counts keep the probe's state and detail per target

Revision ID: 0002_probe_state
Revises: 0001_initial
Create Date: 2026-11-30 13:10:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel

revision: str = '0002_probe_state'
down_revision: Union[str, None] = '0001_initial'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    # DuckDB allows only ADD COLUMN on a table with an index: both columns are nullable additions.
    op.add_column('probe_counts', sa.Column('state', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
    op.add_column('probe_counts', sa.Column('detail', sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column('probe_counts', 'detail')
    op.drop_column('probe_counts', 'state')
