"""Reading the store: runs with their metrics, one run in full, verdicts. Plain dicts out, for CLI and reports."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlmodel import Session, select

from workbench.store import jsonx
from workbench.store.models import Artifact, Execution, Metric, ProbeCount, Review, Run, Verdict


def _iso(dt: Any) -> str | None:
    return dt.isoformat() if dt is not None else None


def run_dict(run: Run, metrics: dict[str, float] | None = None) -> dict[str, Any]:
    return {
        "id": run.id, "execution_id": run.execution_id, "hypothesis_id": run.hypothesis_id,
        "experiment_id": run.experiment_id, "experiment_version": run.experiment_version, "source": run.source,
        "label": run.label, "arm": run.arm, "replicate": run.replicate, "order_index": run.order_index,
        "block": run.block, "host": run.host, "target": run.target, "status": run.status, "stage": run.stage,
        "phase": run.phase, "started_at": _iso(run.started_at), "ended_at": _iso(run.ended_at),
        "variables": jsonx.loads(run.variables_json, {}), "config_hash": run.config_hash,
        "provenance": run.provenance, "error": run.error, "metrics": metrics or {},
    }


def _metrics_by_run(session: Session, run_ids: list[int]) -> dict[int, dict[str, float]]:
    out: dict[int, dict[str, float]] = {rid: {} for rid in run_ids}
    if not run_ids:
        return out
    rows = session.exec(select(Metric).where(Metric.run_id.in_(run_ids))).all()  # type: ignore[attr-defined]
    for m in rows:
        out.setdefault(m.run_id, {})[m.name] = m.value
    return out


def list_runs(session: Session, *, hypothesis_id: str | None = None, execution_id: int | None = None,
              experiment_id: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    q = select(Run)
    if hypothesis_id is not None:
        q = q.where(Run.hypothesis_id == hypothesis_id)
    if execution_id is not None:
        q = q.where(Run.execution_id == execution_id)
    if experiment_id is not None:
        q = q.where(Run.experiment_id == experiment_id)
    q = q.order_by(Run.id)  # type: ignore[arg-type]
    runs = list(session.exec(q).all())
    if limit is not None:
        runs = runs[-limit:]
    metrics = _metrics_by_run(session, [r.id for r in runs if r.id is not None])
    return [run_dict(r, metrics.get(r.id or -1)) for r in runs]


def get_run(session: Session, *, run_id: int) -> dict[str, Any] | None:
    run = session.get(Run, run_id)
    if run is None:
        return None
    d = run_dict(run, _metrics_by_run(session, [run_id]).get(run_id))
    d["rendered_config"] = run.rendered_config
    d["fingerprint"] = jsonx.loads(run.fingerprint_json, {})
    d["artifacts"] = [{"name": a.name, "path": a.path, "sha256": a.sha256, "size_bytes": a.size_bytes}
                      for a in session.exec(select(Artifact).where(Artifact.run_id == run_id)).all()]
    rows = session.connection().execute(
        text("SELECT outcome, count(*) FROM units WHERE run_id = :r GROUP BY outcome ORDER BY outcome"),
        {"r": run_id}).all()
    d["units"] = {"total": sum(int(n) for _, n in rows), "by_outcome": {str(o): int(n) for o, n in rows}}
    d["probe_counts"] = [{"process": p.process, "pid": p.pid, "target": p.target, "calls": p.calls,
                          "resolved": p.resolved, "state": p.state, "detail": p.detail}
                         for p in session.exec(select(ProbeCount).where(ProbeCount.run_id == run_id)).all()]
    return d


def verdict_dict(v: Verdict) -> dict[str, Any]:
    return {"id": v.id, "hypothesis_id": v.hypothesis_id, "execution_id": v.execution_id, "verdict": v.verdict,
            "reasoning": v.reasoning, "checks": jsonx.loads(v.checks_json, []),
            "details": jsonx.loads(v.details_json, {}), "created_at": _iso(v.created_at)}


def _is_aa(v: Verdict) -> bool:
    # An A/A execution measures the noise floor; its verdict is not a verdict on the hypothesis.
    return (jsonx.loads(v.details_json, {}) or {}).get("mode") == "aa"


def latest_verdict(session: Session, *, hypothesis_id: str) -> dict[str, Any] | None:
    return latest_verdicts(session, hypothesis_id=hypothesis_id).get(hypothesis_id)


def latest_verdicts(session: Session, *, hypothesis_id: str | None = None) -> dict[str, dict[str, Any]]:
    """The newest verdict of each hypothesis, A/A (noise-floor) verdicts left out."""
    q = select(Verdict)
    if hypothesis_id is not None:
        q = q.where(Verdict.hypothesis_id == hypothesis_id)
    out: dict[str, dict[str, Any]] = {}
    for v in session.exec(q.order_by(Verdict.id)).all():  # type: ignore[arg-type]
        if not _is_aa(v):
            out[v.hypothesis_id] = verdict_dict(v)
    return out


def executions(session: Session, *, hypothesis_id: str | None = None) -> list[Execution]:
    q = select(Execution)
    if hypothesis_id is not None:
        q = q.where(Execution.hypothesis_id == hypothesis_id)
    return list(session.exec(q.order_by(Execution.id)).all())  # type: ignore[arg-type]


def reviews(session: Session, *, hypothesis_id: str) -> list[dict[str, Any]]:
    return [{"id": r.id, "author": r.author, "decision": r.decision, "body": r.body,
             "verdict_id": r.verdict_id, "created_at": _iso(r.created_at)}
            for r in session.exec(select(Review).where(Review.hypothesis_id == hypothesis_id)
                                  .order_by(Review.id)).all()]  # type: ignore[arg-type]
