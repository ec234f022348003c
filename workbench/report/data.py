"""Everything the site shows, read from the store in a few bulk queries (not one query per run)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from workbench.store import jsonx


@dataclass
class StoreData:
    """The store's content as plain dicts, indexed the ways the pages need."""

    runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    runs_by_hypothesis: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    artifacts: dict[int, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    units: dict[int, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    probes: dict[int, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)
    verdict_history: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    executions: dict[int, dict[str, Any]] = field(default_factory=dict)
    reviews: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))

    def hypothesis_runs(self, hid: str) -> list[dict[str, Any]]:
        return [self.runs[r] for r in self.runs_by_hypothesis.get(hid, [])]


def _execution_dict(ex: Any) -> dict[str, Any]:
    from workbench.store.queries import _iso

    return {"id": ex.id, "hypothesis_id": ex.hypothesis_id, "experiment_id": ex.experiment_id,
            "experiment_version": ex.experiment_version, "profile": ex.profile, "target": ex.target,
            "mode": ex.mode, "status": ex.status, "plan": jsonx.loads(ex.plan_json),
            "overrides": jsonx.loads(ex.overrides_json, {}), "config_diff": jsonx.loads(ex.config_diff_json),
            "started_at": _iso(ex.started_at), "ended_at": _iso(ex.ended_at), "wb_version": ex.wb_version,
            "error": ex.error}


def load(session: Any) -> StoreData:
    """Read runs, metrics, units (summarised per outcome), artifacts, probes, verdicts, executions, reviews."""
    from sqlalchemy import func
    from sqlmodel import select

    from workbench.store.models import Artifact, Execution, Metric, ProbeCount, Review, Run, Unit, Verdict
    from workbench.store.queries import _iso, run_dict, verdict_dict

    data = StoreData()
    metrics: dict[int, dict[str, float]] = defaultdict(dict)
    for run_id, name, value in session.exec(select(Metric.run_id, Metric.name, Metric.value)).all():
        metrics[run_id][name] = value
    for run in session.exec(select(Run).order_by(Run.id)).all():  # type: ignore[arg-type]
        d = run_dict(run, metrics.get(run.id or -1, {}))
        d["rendered_config"] = run.rendered_config
        d["fingerprint"] = jsonx.loads(run.fingerprint_json, {})
        data.runs[run.id] = d  # type: ignore[index]
        if run.hypothesis_id:
            data.runs_by_hypothesis[run.hypothesis_id].append(run.id)  # type: ignore[arg-type]
    for a in session.exec(select(Artifact).order_by(Artifact.id)).all():  # type: ignore[arg-type]
        data.artifacts[a.run_id].append({"name": a.name, "path": a.path, "sha256": a.sha256,
                                         "size_bytes": a.size_bytes})
    rows = session.exec(select(Unit.run_id, Unit.outcome, func.count()).group_by(Unit.run_id, Unit.outcome)).all()
    for run_id, outcome, n in rows:
        data.units[run_id][str(outcome)] = int(n)
    for p in session.exec(select(ProbeCount).order_by(ProbeCount.id)).all():  # type: ignore[arg-type]
        data.probes[p.run_id].append({"process": p.process, "pid": p.pid, "target": p.target, "calls": p.calls,
                                      "resolved": p.resolved})
    for v in session.exec(select(Verdict).order_by(Verdict.id)).all():  # type: ignore[arg-type]
        vd = verdict_dict(v)
        vd["hypothesis_sha256"] = v.hypothesis_sha256
        data.verdicts[v.hypothesis_id] = vd
        data.verdict_history[v.hypothesis_id].append(vd)
    for ex in session.exec(select(Execution).order_by(Execution.id)).all():  # type: ignore[arg-type]
        data.executions[ex.id] = _execution_dict(ex)  # type: ignore[index]
    for r in session.exec(select(Review).order_by(Review.id)).all():  # type: ignore[arg-type]
        data.reviews[r.hypothesis_id].append({"id": r.id, "author": r.author, "decision": r.decision,
                                              "body": r.body, "verdict_id": r.verdict_id,
                                              "created_at": _iso(r.created_at)})
    return data
