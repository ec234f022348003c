"""What crosses the store boundary: frozen records of runs, executions, verdicts and reviews.

Callers get these and never a session, a table model or SQL. Mapping-valued fields hold plain
JSON-like data read back from the store; `to_dict()` gives the JSON shape the CLI prints.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import timezone
from typing import Any

# Runs that carry evidence; the others (failed, interrupted, ...) are counted as attrition, not analysed.
USABLE_STATUSES = ("ok", "historical")


def iso(dt: Any) -> str | None:
    """A stored time in UTC, whatever zone the database handed it back in (PostgreSQL: the server's or the
    session's; DuckDB: the machine's), so one row reads the same from every store and every teammate."""
    if dt is None:
        return None
    return (dt.astimezone(timezone.utc) if dt.tzinfo is not None else dt).isoformat()


@dataclass(frozen=True)
class ArtifactRecord:
    """A file a run produced. `content` travels only into the store (and into bundles), never out of reads."""

    name: str
    path: str
    sha256: str
    size_bytes: int
    content: bytes | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class ProbeCountRecord:
    process: str
    pid: int
    target: str
    calls: int
    resolved: bool = True
    state: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class RunRecord:
    """One stored run with its metrics; the detail fields are filled by `Store.run()` and `Store.contents()`."""

    id: int
    execution_id: int | None
    hypothesis_id: str | None
    experiment_id: str | None
    experiment_version: int | None
    source: str
    label: str | None
    arm: str | None
    replicate: int | None
    order_index: int | None
    block: int | None
    host: str | None
    target: str | None
    status: str
    stage: str | None
    phase: str | None
    started_at: str | None
    ended_at: str | None
    variables: dict[str, Any]
    config_hash: str | None
    provenance: dict[str, Any] | None  # an imported run's: where its values came from
    error: str | None
    metrics: dict[str, int | float] = field(default_factory=dict)  # a counted value (units, probe) as an int
    fingerprint: dict[str, Any] = field(default_factory=dict)
    rendered_config: str | None = None
    artifacts: tuple[ArtifactRecord, ...] = ()
    units: dict[str, int] = field(default_factory=dict)  # outcome -> units
    probe_counts: tuple[ProbeCountRecord, ...] = ()
    uuid: str | None = None

    @property
    def units_total(self) -> int:
        return sum(self.units.values())

    def to_dict(self, *, detail: bool = True) -> dict[str, Any]:
        d = asdict(self)
        if not detail:
            for key in _DETAIL:
                del d[key]
            return d
        d["units"] = {"total": self.units_total, "by_outcome": dict(self.units)}
        return d


_DETAIL = ("fingerprint", "rendered_config", "artifacts", "units", "probe_counts")


@dataclass(frozen=True)
class RunQuery:
    """Which runs of one experiment the analysis reads, and which aggregates over their units.

    `unit_filters` holds, per unit-counted metric, the (field, accepted values) pairs a unit must match.
    """

    experiment_id: str
    metrics: tuple[str, ...] = ()
    outcome_field: str = "outcome"
    completed: tuple[str, ...] = ()
    outcomes: tuple[str, ...] = ()
    reason_field: str | None = None
    unit_filters: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = ()
    execution_id: int | None = None
    include_imported: bool = True
    statuses: tuple[str, ...] | None = None
    hypothesis_id: str | None = None  # only this hypothesis's runs (imported evidence belongs to none)


# A message's numbers of 4 digits or more (ids, page numbers, ports) vary between units that ended alike; shorter
# ones (an HTTP status, a count of retries) tell causes apart. Masked where messages are grouped (SQL and Python).
LONG_NUMBER = "[0-9]{4,}"


@dataclass(frozen=True)
class RunData:
    """A run as the analysis sees it: variables, declared metrics and unit aggregates (never unit rows)."""

    id: int
    label: str | None
    arm: str | None
    status: str
    source: str
    execution_id: int | None
    experiment_version: int | None
    replicate: int | None
    block: int | None
    order_index: int | None
    variables: dict[str, str]
    config_hash: str | None
    fingerprint: dict[str, Any]
    metrics: dict[str, int | float] = field(default_factory=dict)  # a counted value (units, probe) as an int
    units_total: int = 0
    units_completed: int = 0
    unit_counts: dict[str, int] = field(default_factory=dict)  # metric name -> units matching its filter
    outcomes: dict[str, int] = field(default_factory=dict)
    # Why units did not complete, as their reason field says: (outcome, message, units, numbers vary), one entry
    # per message shape (messages that differ only in numbers of LONG_NUMBER's digits are one).
    lost_reasons: tuple[tuple[str, str, int, bool], ...] = ()
    probe_counts: tuple[ProbeCountRecord, ...] = ()
    hypothesis_id: str | None = None  # the hypothesis whose execution made it (None: imported)
    error: str | None = None  # why a run that did not end ok ended ("[health] health never green ...")

    @property
    def name(self) -> str:
        return self.label or f"run {self.id}"


@dataclass(frozen=True)
class ExecutionRecord:
    """One `wb hypothesis run`: its plan, overrides, config diff and how it ended."""

    id: int
    hypothesis_id: str
    experiment_id: str
    experiment_version: int
    profile: str
    target: str
    mode: str
    status: str
    plan: Any
    overrides: dict[str, str]
    config_diff: Any
    started_at: str | None
    ended_at: str | None
    wb_version: str
    error: str | None
    uuid: str | None = None  # global key: also names the execution's snapshot and artifact folders
    user_name: str | None = None
    user_source: str | None = None
    host: str | None = None
    git_revision: str | None = None
    git_dirty: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def who(self) -> str:
        """'ada on gpu-7 at 1a2b3c4 (dirty)', from what was recorded."""
        parts = [self.user_name or "unknown user"]
        if self.host:
            parts.append(f"on {self.host}")
        if self.git_revision:
            parts.append(f"at {self.git_revision[:10]}" + (" (dirty)" if self.git_dirty else ""))
        return " ".join(parts)


@dataclass(frozen=True)
class EvidenceRun:
    run_uuid: str
    config_hash: str | None


@dataclass(frozen=True)
class Evidence:
    """What one verdict rests on: the executions and runs it read, each run's config, the analysis version.

    Its digest is recorded with the verdict and copied onto each review of it; a later verdict on other
    evidence (new runs, another config, a new analysis) makes those reviews stale."""

    executions: tuple[str, ...]
    runs: tuple[EvidenceRun, ...]
    analysis_version: str

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {"executions": sorted(self.executions), "analysis_version": self.analysis_version,
                "runs": sorted([r.run_uuid, r.config_hash or ""] for r in self.runs)}


@dataclass(frozen=True)
class VerdictRecord:
    id: int
    hypothesis_id: str
    execution_id: int | None
    verdict: str
    reasoning: str | None
    checks: list[dict[str, Any]]
    details: dict[str, Any]
    created_at: str | None
    hypothesis_sha256: str | None = None
    uuid: str | None = None
    evidence_digest: str | None = None
    analysis_version: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def is_aa(self) -> bool:
        # An A/A execution measures the noise floor; its verdict is not a verdict on the hypothesis.
        return self.details.get("mode") == "aa"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ReviewRecord:
    """A review, bound to the verdict (and the evidence digest) the reviewer saw."""

    id: int
    hypothesis_id: str
    author: str
    decision: str  # approve | request-changes | comment
    body: str
    verdict_id: int | None
    created_at: str | None
    uuid: str | None = None
    author_source: str | None = None
    verdict_uuid: str | None = None
    evidence_digest: str | None = None
    verdict_seen: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ImportedRun:
    """One historical run to import (a row of an evidence file)."""

    label: str
    phase: str | None
    variables: dict[str, str]
    metrics: dict[str, float | int]
    workload: dict[str, float | int]
    provenance: dict[str, Any]


@dataclass(frozen=True)
class StoreContents:
    """Everything the report shows, read in a few bulk queries: runs in full, every verdict, executions, reviews."""

    runs: tuple[RunRecord, ...] = ()
    verdicts: tuple[VerdictRecord, ...] = ()
    executions: tuple[ExecutionRecord, ...] = ()
    reviews: tuple[ReviewRecord, ...] = ()


@dataclass(frozen=True)
class DeletedRun:
    id: int
    uuid: str | None
    label: str | None
    hypothesis_id: str | None
    execution_id: int | None
    source: str
    status: str


@dataclass(frozen=True)
class DeletedVerdict:
    id: int
    hypothesis_id: str
    verdict: str
    execution_id: int | None

    def describe(self, why: str) -> str:
        """'verdict 3 of H (falsified, execution 2): WHY' (pooled when it has no execution)."""
        where = f"execution {self.execution_id}" if self.execution_id is not None else "pooled"
        return f"verdict {self.id} of {self.hypothesis_id} ({self.verdict}, {where}): {why}"


@dataclass(frozen=True)
class RunDeletion:
    """What deleting runs removes (or, planned, would remove): the runs with their units, metrics, artifacts
    and probe counts; every verdict that rested on one of them; executions left with no run; artifact
    contents no remaining run refers to. `missing`: asked-for ids the store does not hold."""

    runs: tuple[DeletedRun, ...] = ()
    verdicts: tuple[DeletedVerdict, ...] = ()
    executions: tuple[int, ...] = ()
    blobs: int = 0
    missing: tuple[int, ...] = ()
    in_flight: tuple[DeletedRun, ...] = ()  # pending or running runs of an execution still running

    def to_dict(self) -> dict[str, Any]:
        return {"deleted": [asdict(r) for r in self.runs], "verdicts_deleted": [asdict(v) for v in self.verdicts],
                "executions_deleted": list(self.executions), "artifact_contents_deleted": self.blobs}
