"""A run's outcome on disk before it goes to the store, so a runner killed (or a store held by a reader)
between the end of a run and its commit loses nothing: `--resume` writes what the journal still holds.

One JSON file per run under the execution's folder, written atomically (temp file, fsync, rename), masked
and readable by its owner only, and removed once the store has committed the run.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from workbench.runner.outcome import RunOutcome
from workbench.runner.restore import write_private
from workbench.secrets import redact

FIELDS = ("status", "stage", "error", "rendered_config", "config_hash", "fingerprint", "metrics",
          "metric_sources", "units", "probe_counts", "stage_s")


def _folder(exec_dir: Path) -> Path:
    return exec_dir / "journal"


def write(exec_dir: Path, run_id: int, out: RunOutcome) -> Path:
    body: dict[str, Any] = {k: getattr(out, k) for k in FIELDS}
    body["run_id"] = run_id
    body["started_at"] = out.started_at.isoformat() if out.started_at else None
    body["ended_at"] = out.ended_at.isoformat() if out.ended_at else None
    body["artifacts"] = {k: str(v) for k, v in out.artifacts.items()}
    folder = _folder(exec_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"run-{run_id}.json"
    # Masked as the store masks it, by this process, which knows every secret of the run (a --set value too):
    # the process that replays it after a crash may not.
    write_private(path, json.dumps(redact(body), default=str).encode("utf-8"))
    return path


def read(path: Path) -> tuple[int, RunOutcome] | None:
    """(run id, outcome) of a journal file; None for one a crash cut short."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        out = RunOutcome(**{k: body[k] for k in FIELDS})
        out.started_at = datetime.fromisoformat(body["started_at"]) if body["started_at"] else None
        out.ended_at = datetime.fromisoformat(body["ended_at"]) if body["ended_at"] else None
        out.artifacts = {k: Path(v) for k, v in body["artifacts"].items()}
        return int(body["run_id"]), out
    except (OSError, ValueError, KeyError, TypeError):
        return None


def pending(exec_dir: Path) -> list[Path]:
    folder = _folder(exec_dir)
    return sorted(folder.glob("run-*.json")) if folder.is_dir() else []


def done(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
