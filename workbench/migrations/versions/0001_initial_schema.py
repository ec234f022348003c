"""initial schema

Revision ID: 0001_initial
Revises: 
Create Date: 2026-11-30 12:28:49.662632
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision: str = '0001_initial'
down_revision: Union[str, None] = None
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    # Autogenerate does not emit sequences; the id columns default to them.
    op.execute(sa.schema.CreateSequence(sa.Sequence('hypothesis_snapshots_id_seq')))
    op.execute(sa.schema.CreateSequence(sa.Sequence('experiment_snapshots_id_seq')))
    op.execute(sa.schema.CreateSequence(sa.Sequence('executions_id_seq')))
    op.execute(sa.schema.CreateSequence(sa.Sequence('runs_id_seq')))
    op.execute(sa.schema.CreateSequence(sa.Sequence('artifacts_id_seq')))
    op.execute(sa.schema.CreateSequence(sa.Sequence('probe_counts_id_seq')))
    op.execute(sa.schema.CreateSequence(sa.Sequence('verdicts_id_seq')))
    op.execute(sa.schema.CreateSequence(sa.Sequence('reviews_id_seq')))
    op.create_table('artifacts',
    sa.Column('id', sa.Integer(), server_default=sa.text("nextval('artifacts_id_seq')"), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('path', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('sha256', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('size_bytes', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index(op.f('ix_artifacts_run_id'), 'artifacts', ['run_id'], unique=False)
    op.create_table('executions',
    sa.Column('id', sa.Integer(), server_default=sa.text("nextval('executions_id_seq')"), nullable=False),
    sa.Column('hypothesis_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('hypothesis_snapshot_id', sa.Integer(), nullable=True),
    sa.Column('experiment_snapshot_id', sa.Integer(), nullable=True),
    sa.Column('experiment_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('experiment_version', sa.Integer(), nullable=False),
    sa.Column('profile', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('target', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('mode', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('plan_json', sa.Text(), nullable=True),
    sa.Column('overrides_json', sa.Text(), nullable=True),
    sa.Column('config_diff_json', sa.Text(), nullable=True),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('wb_version', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index(op.f('ix_executions_hypothesis_id'), 'executions', ['hypothesis_id'], unique=False)
    op.create_table('experiment_snapshots',
    sa.Column('id', sa.Integer(), server_default=sa.text("nextval('experiment_snapshots_id_seq')"), nullable=False),
    sa.Column('experiment_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('sha256', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('body_json', sa.Text(), nullable=False),
    sa.Column('recorded_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_experiment_snapshots_eid_sha', 'experiment_snapshots', ['experiment_id', 'sha256'], unique=True)
    op.create_table('hypothesis_snapshots',
    sa.Column('id', sa.Integer(), server_default=sa.text("nextval('hypothesis_snapshots_id_seq')"), nullable=False),
    sa.Column('hypothesis_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('sha256', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('body_json', sa.Text(), nullable=False),
    sa.Column('recorded_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_hypothesis_snapshots_hid_sha', 'hypothesis_snapshots', ['hypothesis_id', 'sha256'], unique=True)
    op.create_table('metrics',
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('value', sa.Double(), nullable=False),
    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.PrimaryKeyConstraint('run_id', 'name')
    )
    op.create_table('probe_counts',
    sa.Column('id', sa.Integer(), server_default=sa.text("nextval('probe_counts_id_seq')"), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('process', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('pid', sa.Integer(), nullable=False),
    sa.Column('target', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('calls', sa.Integer(), nullable=False),
    sa.Column('resolved', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index(op.f('ix_probe_counts_run_id'), 'probe_counts', ['run_id'], unique=False)
    op.create_table('reviews',
    sa.Column('id', sa.Integer(), server_default=sa.text("nextval('reviews_id_seq')"), nullable=False),
    sa.Column('hypothesis_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('verdict_id', sa.Integer(), nullable=True),
    sa.Column('author', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('decision', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('body', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index(op.f('ix_reviews_hypothesis_id'), 'reviews', ['hypothesis_id'], unique=False)
    op.create_table('runs',
    sa.Column('id', sa.Integer(), server_default=sa.text("nextval('runs_id_seq')"), nullable=False),
    sa.Column('execution_id', sa.Integer(), nullable=True),
    sa.Column('hypothesis_id', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('experiment_id', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('experiment_version', sa.Integer(), nullable=True),
    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('label', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('arm', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('replicate', sa.Integer(), nullable=True),
    sa.Column('order_index', sa.Integer(), nullable=True),
    sa.Column('block', sa.Integer(), nullable=True),
    sa.Column('host', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('target', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('stage', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('variables_json', sa.Text(), nullable=True),
    sa.Column('config_hash', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('rendered_config', sa.Text(), nullable=True),
    sa.Column('fingerprint_json', sa.Text(), nullable=True),
    sa.Column('provenance', sa.Text(), nullable=True),
    sa.Column('phase', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index(op.f('ix_runs_execution_id'), 'runs', ['execution_id'], unique=False)
    op.create_index(op.f('ix_runs_hypothesis_id'), 'runs', ['hypothesis_id'], unique=False)
    op.create_table('units',
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('idx', sa.Integer(), nullable=False),
    sa.Column('outcome', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('rounds', sa.Integer(), nullable=True),
    sa.Column('duration_s', sa.Double(), nullable=True),
    sa.Column('data_json', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('run_id', 'idx')
    )
    op.create_table('verdicts',
    sa.Column('id', sa.Integer(), server_default=sa.text("nextval('verdicts_id_seq')"), nullable=False),
    sa.Column('hypothesis_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('execution_id', sa.Integer(), nullable=True),
    sa.Column('hypothesis_sha256', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('verdict', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('reasoning', sa.Text(), nullable=True),
    sa.Column('checks_json', sa.Text(), nullable=True),
    sa.Column('details_json', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index(op.f('ix_verdicts_hypothesis_id'), 'verdicts', ['hypothesis_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_verdicts_hypothesis_id'), table_name='verdicts')
    op.drop_table('verdicts')
    op.drop_table('units')
    op.drop_index(op.f('ix_runs_hypothesis_id'), table_name='runs')
    op.drop_index(op.f('ix_runs_execution_id'), table_name='runs')
    op.drop_table('runs')
    op.drop_index(op.f('ix_reviews_hypothesis_id'), table_name='reviews')
    op.drop_table('reviews')
    op.drop_index(op.f('ix_probe_counts_run_id'), table_name='probe_counts')
    op.drop_table('probe_counts')
    op.drop_table('metrics')
    op.drop_index('ix_hypothesis_snapshots_hid_sha', table_name='hypothesis_snapshots')
    op.drop_table('hypothesis_snapshots')
    op.drop_index('ix_experiment_snapshots_eid_sha', table_name='experiment_snapshots')
    op.drop_table('experiment_snapshots')
    op.drop_index(op.f('ix_executions_hypothesis_id'), table_name='executions')
    op.drop_table('executions')
    op.drop_index(op.f('ix_artifacts_run_id'), table_name='artifacts')
    op.drop_table('artifacts')
    op.execute(sa.schema.DropSequence(sa.Sequence('hypothesis_snapshots_id_seq')))
    op.execute(sa.schema.DropSequence(sa.Sequence('experiment_snapshots_id_seq')))
    op.execute(sa.schema.DropSequence(sa.Sequence('executions_id_seq')))
    op.execute(sa.schema.DropSequence(sa.Sequence('runs_id_seq')))
    op.execute(sa.schema.DropSequence(sa.Sequence('artifacts_id_seq')))
    op.execute(sa.schema.DropSequence(sa.Sequence('probe_counts_id_seq')))
    op.execute(sa.schema.DropSequence(sa.Sequence('verdicts_id_seq')))
    op.execute(sa.schema.DropSequence(sa.Sequence('reviews_id_seq')))
