"""The store's read methods: typed records out, tables and SQL kept in here."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any, Iterator

from workbench.store import jsonx
from workbench.store.entities import (ArtifactRecord, ExecutionRecord, ImportedRun, ProbeCountRecord, ReviewRecord,
                                      RunData, RunQuery, RunRecord, StoreContents, VerdictRecord, iso)


def stored_variables(text: str | None) -> dict[str, Any]:
    """A run's stored variables, decoded; values under a name declared secret now are registered as secrets
    (`secrets.register_stored`) on the way."""
    from workbench.secrets import register_stored

    variables = jsonx.loads(text, {}) or {}
    register_stored(variables)
    return variables


# Metric sources whose values were counted (units of an outcome, calls a probe saw): whole numbers when stored.
_COUNTED = ("units", "probe")


def stored_number(metric: Any) -> int | float:
    """A metrics row's value: an integer where it was stored from a count (the column is a double either way)."""
    return jsonx.whole(metric.value) if metric.source in _COUNTED else metric.value


def stored_provenance(text: str | None) -> dict[str, Any] | None:
    """An imported run's provenance (file, line, sha256, quote...) as the object it was stored as; text that is no
    JSON object (written by hand into a store) as {"source": text}; None for a run wb made."""
    if not text:
        return None
    try:
        value = jsonx.loads(text)
    except ValueError:
        value = text
    return value if isinstance(value, dict) else {"source": value}


def run_record(run: Any, metrics: dict[str, int | float] | None = None, **detail: Any) -> RunRecord:
    if detail.get("rendered_config") is not None:  # a row kept before its secret-named entries were masked
        from workbench.store.records import masked_config

        detail["rendered_config"] = masked_config(detail["rendered_config"], run.variables_json)
    return RunRecord(
        id=run.id, execution_id=run.execution_id, hypothesis_id=run.hypothesis_id, experiment_id=run.experiment_id,
        experiment_version=run.experiment_version, source=run.source, label=run.label, arm=run.arm,
        replicate=run.replicate, order_index=run.order_index, block=run.block, host=run.host, target=run.target,
        status=run.status, stage=run.stage, phase=run.phase, started_at=iso(run.started_at),
        ended_at=iso(run.ended_at), variables=stored_variables(run.variables_json), config_hash=run.config_hash,
        provenance=stored_provenance(run.provenance), error=run.error, metrics=dict(metrics or {}), uuid=run.uuid,
        **detail)


def imported_runs(session: Any, experiment_id: str) -> dict[str, list[tuple[int, ImportedRun]]]:
    """`StoreReads.imported_runs` in the caller's transaction (an import plans against it and writes in one)."""
    from sqlmodel import select

    from workbench.store.models import Metric, Run

    out: dict[str, list[tuple[int, ImportedRun]]] = defaultdict(list)
    runs = session.exec(select(Run).where(Run.source == "import", Run.experiment_id == experiment_id)
                        .order_by(Run.id)).all()  # type: ignore[arg-type]
    ids = [r.id for r in runs]
    metrics: dict[int, dict[str, float]] = defaultdict(dict)
    if ids:
        for rid, name, value in session.exec(select(Metric.run_id, Metric.name, Metric.value)
                                             .where(Metric.run_id.in_(ids))).all():  # type: ignore[attr-defined]
            metrics[rid][name] = value
    for r in runs:
        fingerprint = jsonx.loads(r.fingerprint_json, {}) or {}
        out[r.label or ""].append((int(r.id), ImportedRun(
            label=r.label or "", phase=r.phase, variables=jsonx.loads(r.variables_json, {}) or {},
            metrics=metrics[r.id], workload=fingerprint.get("workload") or {},
            provenance=jsonx.loads(r.provenance, {}) or {})))
    return dict(out)


def execution_record(ex: Any) -> ExecutionRecord:
    return ExecutionRecord(id=ex.id, hypothesis_id=ex.hypothesis_id, experiment_id=ex.experiment_id,
                           experiment_version=ex.experiment_version, profile=ex.profile, target=ex.target,
                           mode=ex.mode, status=ex.status, plan=jsonx.loads(ex.plan_json),
                           overrides=jsonx.loads(ex.overrides_json, {}) or {},
                           config_diff=jsonx.loads(ex.config_diff_json), started_at=iso(ex.started_at),
                           ended_at=iso(ex.ended_at), wb_version=ex.wb_version, error=ex.error, uuid=ex.uuid,
                           user_name=ex.user_name, user_source=ex.user_source, host=ex.host,
                           git_revision=ex.git_revision, git_dirty=ex.git_dirty)


def verdict_record(v: Any) -> VerdictRecord:
    return VerdictRecord(id=v.id, hypothesis_id=v.hypothesis_id, execution_id=v.execution_id, verdict=v.verdict,
                         reasoning=v.reasoning, checks=jsonx.loads(v.checks_json, []) or [],
                         details=jsonx.loads(v.details_json, {}) or {}, created_at=iso(v.created_at),
                         hypothesis_sha256=v.hypothesis_sha256, uuid=v.uuid, evidence_digest=v.evidence_digest,
                         analysis_version=v.analysis_version, evidence=jsonx.loads(v.evidence_json, {}) or {})


def _design_replicates(body: str | None) -> int | None:
    """design.replicates of a kept hypothesis or experiment definition (None: it plans none, or none was kept)."""
    design = (jsonx.loads(body, {}) or {}).get("design") if body else None
    n = design.get("replicates") if isinstance(design, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None


def _unplanned(v: VerdictRecord) -> bool:
    """An execution's verdict stored before verdicts recorded the replicates their design planned."""
    return v.execution_id is not None and "planned_replicates" not in v.details


def with_recorded_plans(session: Any, verdicts: list[VerdictRecord]) -> list[VerdictRecord]:
    """`verdicts`, each of a fixed execution (as the execution's row says: old details may name no mode) stored
    before verdicts recorded their plan given the replicates the design its execution kept when it started planned
    (the hypothesis's, else its experiment's), as `analysis.stored` records it now: a smoke run stored then is still
    one (analysis.status reads it through results.smoke_words). An execution under --set overrides has no plan to
    fall short of, and one that kept no definition leaves its verdict as it is: an unknown plan counts as met."""
    from sqlmodel import select

    from workbench.store.models import Execution, ExperimentSnapshot, HypothesisSnapshot

    ids = {v.execution_id for v in verdicts if _unplanned(v)}
    if not ids:
        return verdicts
    rows = session.exec(select(Execution.id, Execution.mode, Execution.overrides_json, HypothesisSnapshot.body_json,
                               ExperimentSnapshot.body_json)
                        .where(Execution.id.in_(ids))  # type: ignore[union-attr]
                        .outerjoin(HypothesisSnapshot, HypothesisSnapshot.id == Execution.hypothesis_snapshot_id)
                        .outerjoin(ExperimentSnapshot, ExperimentSnapshot.id == Execution.experiment_snapshot_id))
    planned = {ex_id: _design_replicates(h) or _design_replicates(e)
               for ex_id, mode, overrides, h, e in rows.all() if mode == "fixed" and not jsonx.loads(overrides, {})}
    return [replace(v, details={**v.details, "planned_replicates": planned[v.execution_id]})
            if _unplanned(v) and planned.get(v.execution_id) else v for v in verdicts]


def review_record(r: Any) -> ReviewRecord:
    return ReviewRecord(id=r.id, hypothesis_id=r.hypothesis_id, author=r.author, decision=r.decision, body=r.body,
                        verdict_id=r.verdict_id, created_at=iso(r.created_at), uuid=r.uuid,
                        author_source=r.author_source, verdict_uuid=r.verdict_uuid,
                        evidence_digest=r.evidence_digest, verdict_seen=r.verdict_seen)


def _artifact(a: Any) -> ArtifactRecord:
    return ArtifactRecord(name=a.name, path=a.path, sha256=a.sha256, size_bytes=a.size_bytes)


def _probe(p: Any) -> ProbeCountRecord:
    return ProbeCountRecord(process=p.process, pid=p.pid, target=p.target, calls=p.calls, resolved=p.resolved,
                            state=p.state, detail=p.detail)


class StoreReads:
    """Read methods of `Store`; each opens one short transaction."""

    def session(self) -> Any:  # provided by Store
        raise NotImplementedError

    def runs(self, *, hypothesis_id: str | None = None, execution_id: int | None = None,
             experiment_id: str | None = None, limit: int | None = None) -> list[RunRecord]:
        """Runs in id order (the last `limit` when given), each with its metrics."""
        from sqlmodel import select

        from workbench.store.models import Metric, Run

        q = select(Run)
        for col, value in ((Run.hypothesis_id, hypothesis_id), (Run.execution_id, execution_id),
                           (Run.experiment_id, experiment_id)):
            if value is not None:
                q = q.where(col == value)
        with self.session() as s:
            rows = list(s.exec(q.order_by(Run.id)).all())  # type: ignore[arg-type]
            if limit is not None:
                rows = rows[-limit:] if limit > 0 else []  # rows[-0:] is every row
            metrics: dict[int, dict[str, int | float]] = defaultdict(dict)
            ids = [r.id for r in rows]
            if ids:
                for m in s.exec(select(Metric).where(Metric.run_id.in_(ids))).all():  # type: ignore[attr-defined]
                    metrics[m.run_id][m.name] = stored_number(m)
            return [run_record(r, metrics.get(r.id)) for r in rows]

    def run(self, run_id: int) -> RunRecord | None:
        """One run in full: metrics, fingerprint, rendered config, artifacts, unit outcomes, probe counts."""
        from sqlalchemy import func
        from sqlmodel import select

        from workbench.store.models import Artifact, Metric, ProbeCount, Run, Unit

        with self.session() as s:
            run = s.get(Run, run_id)
            if run is None:
                return None
            metrics = {m.name: stored_number(m) for m in s.exec(select(Metric).where(Metric.run_id == run_id)).all()}
            units = s.exec(select(Unit.outcome, func.count()).where(Unit.run_id == run_id)
                           .group_by(Unit.outcome).order_by(Unit.outcome)).all()
            return run_record(
                run, metrics, fingerprint=jsonx.loads(run.fingerprint_json, {}) or {},
                rendered_config=run.rendered_config,
                artifacts=tuple(_artifact(a) for a in s.exec(select(Artifact).where(Artifact.run_id == run_id)
                                                             .order_by(Artifact.id)).all()),
                units={str(o): int(n) for o, n in units},
                probe_counts=tuple(_probe(p) for p in s.exec(select(ProbeCount).where(ProbeCount.run_id == run_id)
                                                            .order_by(ProbeCount.id)).all()))

    def analysis_runs(self, query: RunQuery, *, with_probes: bool = False) -> list[RunData]:
        from workbench.store.aggregate import load_runs

        with self.session() as s:
            return load_runs(s.connection(), query, with_probes=with_probes)

    def rendered_configs(self, hashes: list[str]) -> dict[str, str]:
        from workbench.store.aggregate import rendered_configs

        with self.session() as s:
            return rendered_configs(s.connection(), hashes)

    def execution(self, execution_id: int) -> ExecutionRecord | None:
        from workbench.store.models import Execution

        with self.session() as s:
            ex = s.get(Execution, execution_id)
            return None if ex is None else execution_record(ex)

    def execution_definitions(self, execution_id: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The hypothesis and the experiment as the execution recorded them when it started (None: not kept)."""
        from workbench.store.models import Execution, ExperimentSnapshot, HypothesisSnapshot

        with self.session() as s:
            ex = s.get(Execution, execution_id)
            if ex is None:
                return None, None
            hs = s.get(HypothesisSnapshot, ex.hypothesis_snapshot_id) if ex.hypothesis_snapshot_id else None
            es = s.get(ExperimentSnapshot, ex.experiment_snapshot_id) if ex.experiment_snapshot_id else None
            return (jsonx.loads(hs.body_json) if hs is not None else None,
                    jsonx.loads(es.body_json) if es is not None else None)

    def executions(self, *, hypothesis_id: str | None = None) -> list[ExecutionRecord]:
        from sqlmodel import select

        from workbench.store.models import Execution

        q = select(Execution)
        if hypothesis_id is not None:
            q = q.where(Execution.hypothesis_id == hypothesis_id)
        with self.session() as s:
            return [execution_record(e) for e in s.exec(q.order_by(Execution.id)).all()]  # type: ignore[arg-type]

    def _verdicts(self, hypothesis_id: str | None = None, *, prefix: str | None = None) -> Iterator[VerdictRecord]:
        from sqlmodel import select

        from workbench.store.models import Verdict

        q = select(Verdict)
        if hypothesis_id is not None:
            q = q.where(Verdict.hypothesis_id == hypothesis_id)
        if prefix is not None:
            q = q.where(Verdict.hypothesis_id.startswith(prefix, autoescape=True))  # type: ignore[attr-defined]
        with self.session() as s:
            rows = list(s.exec(q.order_by(Verdict.id)).all())  # type: ignore[arg-type]
            records = with_recorded_plans(s, [verdict_record(v) for v in rows])
        return iter(records)

    def latest_verdicts(self, *, hypothesis_id: str | None = None) -> dict[str, VerdictRecord]:
        """The newest verdict of each hypothesis, A/A (noise-floor) verdicts left out."""
        return {v.hypothesis_id: v for v in self._verdicts(hypothesis_id) if not v.is_aa}

    def verdicts(self, *, hypothesis_id: str | None = None, prefix: str | None = None) -> list[VerdictRecord]:
        """Every verdict (of one hypothesis, or of those whose id starts with `prefix`), oldest first,
        A/A ones too: the verdict history each hypothesis keeps."""
        return list(self._verdicts(hypothesis_id, prefix=prefix))

    def latest_verdict(self, hypothesis_id: str) -> VerdictRecord | None:
        return self.latest_verdicts(hypothesis_id=hypothesis_id).get(hypothesis_id)

    def reviews(self, *, hypothesis_id: str | None = None) -> list[ReviewRecord]:
        from sqlmodel import select

        from workbench.store.models import Review

        q = select(Review)
        if hypothesis_id is not None:
            q = q.where(Review.hypothesis_id == hypothesis_id)
        with self.session() as s:
            return [review_record(r) for r in s.exec(q.order_by(Review.id)).all()]  # type: ignore[arg-type]

    def imported_runs(self, experiment_id: str) -> dict[str, list[tuple[int, ImportedRun]]]:
        """Every run imported into `experiment_id`, by label (the evidence's run_id): [(run id, the row)]."""
        with self.session() as s:
            return imported_runs(s, experiment_id)

    def contents(self) -> StoreContents:
        """Everything, in a few bulk queries (never one query per run): what the report shows."""
        from sqlalchemy import func
        from sqlmodel import select

        from workbench.store.models import Artifact, Execution, Metric, ProbeCount, Review, Run, Unit, Verdict

        metrics: dict[int, dict[str, float]] = defaultdict(dict)
        arts: dict[int, list[ArtifactRecord]] = defaultdict(list)
        units: dict[int, dict[str, int]] = defaultdict(dict)
        probes: dict[int, list[ProbeCountRecord]] = defaultdict(list)
        with self.session() as s:
            for run_id, name, value in s.exec(select(Metric.run_id, Metric.name, Metric.value)).all():
                metrics[run_id][name] = value
            for a in s.exec(select(Artifact).order_by(Artifact.id)).all():  # type: ignore[arg-type]
                arts[a.run_id].append(_artifact(a))
            for run_id, outcome, n in s.exec(select(Unit.run_id, Unit.outcome, func.count())
                                             .group_by(Unit.run_id, Unit.outcome)).all():
                units[run_id][str(outcome)] = int(n)
            for p in s.exec(select(ProbeCount).order_by(ProbeCount.id)).all():  # type: ignore[arg-type]
                probes[p.run_id].append(_probe(p))
            runs = tuple(run_record(r, metrics.get(r.id), fingerprint=jsonx.loads(r.fingerprint_json, {}) or {},
                                    rendered_config=r.rendered_config, artifacts=tuple(arts.get(r.id, ())),
                                    units=units.get(r.id, {}), probe_counts=tuple(probes.get(r.id, ())))
                         for r in s.exec(select(Run).order_by(Run.id)).all())  # type: ignore[arg-type]
            verdicts = tuple(with_recorded_plans(s, [verdict_record(v) for v in s.exec(
                select(Verdict).order_by(Verdict.id)).all()]))  # type: ignore[arg-type]
            executions = tuple(execution_record(e) for e in
                               s.exec(select(Execution).order_by(Execution.id)).all())  # type: ignore[arg-type]
            reviews = tuple(review_record(r)
                            for r in s.exec(select(Review).order_by(Review.id)).all())  # type: ignore[arg-type]
        return StoreContents(runs=runs, verdicts=verdicts, executions=executions, reviews=reviews)
