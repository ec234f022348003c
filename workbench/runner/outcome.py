"""How one run ended (RunOutcome), the failure that ends a stage (StageFailed), and the rows of its artifacts."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.runner.targets.base import FileStat


@dataclass
class RunOutcome:
    status: str = "running"
    stage: str = "render"
    error: str | None = None
    rendered_config: str | None = None
    config_hash: str | None = None
    fingerprint: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float | int] = field(default_factory=dict)
    metric_sources: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # metrics no prediction needs that could not be read
    units: list[dict[str, Any]] = field(default_factory=list)
    artifacts: dict[str, Path] = field(default_factory=dict)
    # Declared files (logs): where each stood as its span began (`log_starts_at`: the run's start, before its
    # restart, until the workload starts), where it stood as the metrics were collected (the span's end) and once
    # the collect commands had run, and those a check found rotated (collect.py).
    log_starts: dict[str, "FileStat"] = field(default_factory=dict)
    log_starts_at: str = "run"
    log_ends: dict[str, "FileStat"] = field(default_factory=dict)
    log_collected: dict[str, "FileStat"] = field(default_factory=dict)
    log_rotated: set[str] = field(default_factory=set)
    probe_counts: list[dict[str, Any]] = field(default_factory=list)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    stage_s: dict[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        """How the run ended, for a person: "interrupted during its workload stage", "failed during its health
        stage: health never green …" (the stored error leads with "[stage]"; said once here, in words)."""
        text = f"{self.status} during its {self.stage} stage"
        if self.status == "interrupted" or not self.error:
            return text
        reason = self.error.removeprefix(f"[{self.stage}] ")
        return f"{text}: {reason}"


class StageFailed(Exception):
    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


def _file_sha256(path: Path) -> str:
    from workbench.store.records import sha256_file

    return sha256_file(path)


def artifact_rows(out: RunOutcome) -> list[dict[str, Any]]:
    """Each artifact's name, path, hash and size, and its bytes when small enough to keep in the store; each
    file's secrets masked first (what is kept, on disk and in the store, never holds one)."""
    from workbench.secrets import redact_file
    from workbench.store.records import MAX_BLOB_BYTES

    rows = []
    for name, path in out.artifacts.items():
        if not path.is_file():
            continue
        redact_file(path)
        size = path.stat().st_size
        content = path.read_bytes() if size <= MAX_BLOB_BYTES else None
        sha = hashlib.sha256(content).hexdigest() if content is not None else _file_sha256(path)
        rows.append({"name": name, "path": str(path), "sha256": sha, "size_bytes": size, "content": content})
    return rows
