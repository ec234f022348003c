"""Every table of the store, in one module (SQLModel). Schema changes go through migrations/.

Ids are explicit sequences (DuckDB has no SERIAL). There are no FOREIGN KEY constraints: DuckDB
refuses UPDATEs of a referenced row and most ALTERs on constrained tables, and runs are updated
after their units land; the references are kept by the store functions instead.
JSON-valued columns are TEXT holding JSON (named *_json), read back through `store.jsonx`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Optional

from sqlalchemy import Column, DateTime, Double, Index, LargeBinary, Sequence, Text
from sqlmodel import Field, SQLModel

SCHEMA_VERSION = 1


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _id(table: str):
    seq = Sequence(f"{table}_id_seq")
    return Field(default=None, primary_key=True, sa_column_args=[seq],
                 sa_column_kwargs={"server_default": seq.next_value()})


def _ts(nullable: bool = True):
    return Field(default=None, sa_column=Column(DateTime(timezone=True), nullable=nullable))


def _double(nullable: bool = True):
    # A plain `float` maps to 32-bit FLOAT on DuckDB; measurements need DOUBLE.
    return Field(default=None, sa_column=Column(Double, nullable=nullable))


def _key():
    # A row's global key (migration 0004): unique in the store, so a lookup by it finds one row. Rows made
    # before 0003 had none; each has one since, and NULL stays allowed (a unique index admits many).
    return Field(default=None, index=True, unique=True)


def _text(nullable: bool = True):
    return Field(default=None, sa_column=Column(Text, nullable=nullable))


class HypothesisSnapshot(SQLModel, table=True):
    """A hypothesis as it was when runs were made or a verdict given (deduplicated by content)."""

    __tablename__ = "hypothesis_snapshots"
    __table_args__ = (Index("ix_hypothesis_snapshots_hid_sha", "hypothesis_id", "sha256", unique=True),)
    id: Optional[int] = _id("hypothesis_snapshots")
    hypothesis_id: str
    sha256: str
    body_json: Optional[str] = _text(nullable=False)
    recorded_at: Optional[datetime] = _ts(nullable=False)


class ExperimentSnapshot(SQLModel, table=True):
    """An experiment (harness) file as it was when runs were made."""

    __tablename__ = "experiment_snapshots"
    __table_args__ = (Index("ix_experiment_snapshots_eid_sha", "experiment_id", "sha256", unique=True),)
    id: Optional[int] = _id("experiment_snapshots")
    experiment_id: str
    version: int
    sha256: str
    body_json: Optional[str] = _text(nullable=False)
    recorded_at: Optional[datetime] = _ts(nullable=False)


class Execution(SQLModel, table=True):
    """One `wb hypothesis run`: the plan (arm order, seed), the arms' config diff, and how it ended."""

    __tablename__ = "executions"
    id: Optional[int] = _id("executions")
    hypothesis_id: str = Field(index=True)
    hypothesis_snapshot_id: Optional[int] = None
    experiment_snapshot_id: Optional[int] = None
    experiment_id: str
    experiment_version: int
    profile: str
    target: str
    mode: str = "fixed"  # fixed | sequential | aa
    status: str = "running"  # running | done | failed | interrupted
    plan_json: Optional[str] = _text()
    overrides_json: Optional[str] = _text()
    config_diff_json: Optional[str] = _text()
    started_at: Optional[datetime] = _ts()
    ended_at: Optional[datetime] = _ts()
    wb_version: str = ""
    error: Optional[str] = _text()
    # Who ran it, where, from which state of the workbench folder (migration 0003).
    uuid: Optional[str] = _key()
    user_name: Optional[str] = None
    user_source: Optional[str] = None
    host: Optional[str] = None
    git_revision: Optional[str] = None
    git_dirty: Optional[bool] = None


class Run(SQLModel, table=True):
    """One application of one arm followed by one workload execution (or an imported historical run)."""

    __tablename__ = "runs"
    id: Optional[int] = _id("runs")
    execution_id: Optional[int] = Field(default=None, index=True)
    hypothesis_id: Optional[str] = Field(default=None, index=True)
    experiment_id: Optional[str] = None
    experiment_version: Optional[int] = None
    source: str = "run"  # run | import
    label: Optional[str] = None
    arm: Optional[str] = None
    replicate: Optional[int] = None
    order_index: Optional[int] = None
    block: Optional[int] = None
    host: Optional[str] = None
    target: Optional[str] = None
    status: str = "pending"  # pending | running | ok | failed | invalid | interrupted | historical
    stage: Optional[str] = None
    started_at: Optional[datetime] = _ts()
    ended_at: Optional[datetime] = _ts()
    variables_json: Optional[str] = _text()
    config_hash: Optional[str] = None
    rendered_config: Optional[str] = _text()
    fingerprint_json: Optional[str] = _text()
    provenance: Optional[str] = _text()
    phase: Optional[str] = None
    error: Optional[str] = _text()
    uuid: Optional[str] = _key()


class Unit(SQLModel, table=True):
    """One independent observation inside a run (a session of the repro harness)."""

    __tablename__ = "units"
    run_id: int = Field(primary_key=True)
    idx: int = Field(primary_key=True)
    outcome: Optional[str] = None
    rounds: Optional[int] = None
    duration_s: Optional[float] = _double()
    data_json: Optional[str] = _text()


class Metric(SQLModel, table=True):
    """A number extracted from a run. Unknown values are absent, never stored as a guess."""

    __tablename__ = "metrics"
    run_id: int = Field(primary_key=True)
    name: str = Field(primary_key=True)
    value: Optional[float] = _double(nullable=False)
    source: str = ""  # regex | command | units | import | kernel | probe


class Artifact(SQLModel, table=True):
    """A file a run produced (stdout, logs, units): its name, where it was written, and its content's hash.

    The content itself is in `artifact_blobs` (by sha256), so every user of the store can read it."""

    __tablename__ = "artifacts"
    id: Optional[int] = _id("artifacts")
    run_id: int = Field(index=True)
    name: str
    path: str
    sha256: str
    size_bytes: int


class ArtifactBlob(SQLModel, table=True):
    """An artifact's content, zlib-compressed, addressed by the sha256 of the uncompressed bytes."""

    __tablename__ = "artifact_blobs"
    sha256: str = Field(primary_key=True)
    size_bytes: int
    compression: str = "zlib"
    data: Optional[bytes] = Field(default=None, sa_column=Column(LargeBinary, nullable=False))


class ProbeCount(SQLModel, table=True):
    """Calls to a probed code object seen by one process during one run."""

    __tablename__ = "probe_counts"
    id: Optional[int] = _id("probe_counts")
    run_id: int = Field(index=True)
    process: str
    pid: int
    target: str
    calls: int
    resolved: bool = True
    state: Optional[str] = None  # instrumented | not_imported | no_module | no_attribute | not_callable | import_failed
    detail: Optional[str] = _text()


class Verdict(SQLModel, table=True):
    """supported / falsified / inconclusive / invalid, with its reasoning and checks."""

    __tablename__ = "verdicts"
    id: Optional[int] = _id("verdicts")
    hypothesis_id: str = Field(index=True)
    execution_id: Optional[int] = None
    hypothesis_sha256: Optional[str] = None
    verdict: str
    reasoning: Optional[str] = _text()
    checks_json: Optional[str] = _text()
    details_json: Optional[str] = _text()
    created_at: Optional[datetime] = _ts(nullable=False)
    # What the verdict rests on (see workbench.team.reviews.Evidence); reviews bind to the digest.
    uuid: Optional[str] = _key()
    evidence_digest: Optional[str] = None
    evidence_json: Optional[str] = _text()
    analysis_version: Optional[str] = None


class Review(SQLModel, table=True):
    """A teammate's review of a verdict, bound to the evidence that verdict rested on."""

    __tablename__ = "reviews"
    id: Optional[int] = _id("reviews")
    hypothesis_id: str = Field(index=True)
    verdict_id: Optional[int] = None
    author: str
    decision: str = "comment"  # approve | request-changes | comment
    body: Optional[str] = _text()
    created_at: Optional[datetime] = _ts(nullable=False)
    uuid: Optional[str] = _key()
    author_source: Optional[str] = None
    verdict_uuid: Optional[str] = None
    evidence_digest: Optional[str] = None
    verdict_seen: Optional[str] = None


ALL_TABLES = [HypothesisSnapshot, ExperimentSnapshot, Execution, Run, Unit, Metric, Artifact, ArtifactBlob,
              ProbeCount, Verdict, Review]
