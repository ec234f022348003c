"""Deleting runs recorded by mistake, with everything that rests on them, in the caller's transaction.

A verdict rests on a run when its recorded evidence names the run (the runs its analysis read: an
execution's runs less the interrupted attempts a `--resume` redid, or a pooled `hypothesis analyze`
verdict's runs, imported evidence included), when it was given on an execution that goes (no run left), or,
for a `wb isolate` search, when one of its probes ran in the run's execution. A verdict recorded without
evidence (by an older wb) rests on every run of its execution. Such a verdict goes with the run: a status
must never rest on evidence the store no longer holds, and a run it never read (a redone attempt, history)
takes nothing with it. Reviews stay as history; the review of a
removed verdict is stale from then on (team.reviews). Artifact contents are content-addressed and shared,
so only those no remaining run refers to are removed.
"""

from __future__ import annotations

from typing import Callable, Iterable

from sqlmodel import Session, delete, select

from workbench.store import jsonx
from workbench.store.entities import DeletedRun, DeletedVerdict, RunDeletion
from workbench.store.models import Artifact, ArtifactBlob, Execution, Metric, ProbeCount, Run, Unit, Verdict


RunnerGone = Callable[[str], bool]  # an execution's UUID -> whether its runner is provably gone


def plan(session: Session, run_ids: Iterable[int], runner_gone: RunnerGone | None = None) -> RunDeletion:
    """What deleting `run_ids` removes; nothing is changed. A pending or running run of an execution still
    marked running is in flight, unless `runner_gone` (asked for those executions only) proves its runner
    gone; such an execution is kept when its last run goes."""
    wanted = sorted(set(run_ids))
    runs = session.exec(select(Run).where(Run.id.in_(wanted))).all() if wanted else []  # type: ignore[union-attr]
    found = {r.id for r in runs}
    executions = {r.execution_id for r in runs if r.execution_id is not None}
    uuids = {r.uuid for r in runs if r.uuid}
    running = {e.id
               for e in session.exec(select(Execution).where(Execution.id.in_(executions),  # type: ignore[union-attr]
                                                             Execution.status == "running")).all()
               if not (runner_gone and e.uuid and runner_gone(e.uuid))} if executions else set()
    # An execution left with no run goes, unless its runner may still write its later runs and its end into it.
    left = {e for e in executions - running
            if not session.exec(select(Run.id).where(Run.execution_id == e,
                                                     Run.id.not_in(wanted))).first()}  # type: ignore[union-attr]
    # A run without a uuid (an old store) cannot be named by evidence: its execution's verdicts go with it.
    unnamed = {r.execution_id for r in runs if not r.uuid and r.execution_id is not None}
    verdicts = [v for v in session.exec(select(Verdict)).all()
                if _rests_on(v, executions, left | unnamed, uuids)]
    deleted = [DeletedRun(r.id, r.uuid, r.label, r.hypothesis_id, r.execution_id, r.source, r.status)
               for r in sorted(runs, key=lambda r: r.id)]
    return RunDeletion(
        runs=tuple(deleted),
        verdicts=tuple(DeletedVerdict(v.id, v.hypothesis_id, v.verdict, v.execution_id)
                       for v in sorted(verdicts, key=lambda v: v.id)),
        executions=tuple(sorted(left)), blobs=len(_orphan_blobs(session, sorted(found))),
        missing=tuple(i for i in wanted if i not in found),
        in_flight=tuple(r for r in deleted if r.status in ("pending", "running") and r.execution_id in running))


def _rests_on(v: Verdict, executions: set[int], gone: set[int], run_uuids: set[str]) -> bool:
    """`executions`: those of the deleted runs; `gone`: those of them whose verdicts go whatever their
    evidence says (left with no run, or holding a run evidence cannot name)."""
    evidence = jsonx.loads(v.evidence_json) if v.evidence_json else None
    if v.execution_id is not None and v.execution_id in (gone if isinstance(evidence, dict) else executions):
        return True
    runs = evidence.get("runs", []) if isinstance(evidence, dict) else []
    if any(isinstance(r, list) and r and r[0] in run_uuids for r in runs):
        return True
    details = jsonx.loads(v.details_json) if v.details_json else None
    return isinstance(details, dict) and details.get("kind") == "isolate-search" and \
        bool(_execution_ids(details) & executions)


def _execution_ids(value: object) -> set[int]:
    """Every `execution_id` named anywhere in a verdict's details (a search names its probes' executions)."""
    found: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("execution_id"), int):
                found.add(item["execution_id"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _orphan_blobs(session: Session, run_ids: list[int]) -> list[str]:
    """Hashes of the artifact contents only these runs refer to."""
    if not run_ids:
        return []
    shas = set(session.exec(
        select(Artifact.sha256).where(Artifact.run_id.in_(run_ids))).all())  # type: ignore[attr-defined]
    if not shas:
        return []
    kept = set(session.exec(
        select(Artifact.sha256).where(Artifact.sha256.in_(shas),  # type: ignore[attr-defined]
                                      Artifact.run_id.not_in(run_ids))).all())  # type: ignore[attr-defined]
    stored = set(session.exec(
        select(ArtifactBlob.sha256).where(ArtifactBlob.sha256.in_(shas))).all())  # type: ignore[attr-defined]
    return sorted((shas - kept) & stored)


def delete_runs(session: Session, run_ids: Iterable[int], runner_gone: RunnerGone | None = None) -> RunDeletion:
    """Delete the runs and what rests on them (see `plan`); the caller's transaction makes it all or nothing.
    An id the store does not hold, or a run a runner may still be writing, deletes nothing: the result's
    `missing` or `in_flight` names it."""
    done = plan(session, run_ids, runner_gone)
    if done.missing or done.in_flight or not done.runs:
        return done
    ids = [r.id for r in done.runs]
    blobs = _orphan_blobs(session, ids)
    for table in (Unit, Metric, Artifact, ProbeCount):
        session.exec(delete(table).where(table.run_id.in_(ids)))  # type: ignore[attr-defined]
    if blobs:
        session.exec(delete(ArtifactBlob).where(ArtifactBlob.sha256.in_(blobs)))  # type: ignore[attr-defined]
    session.exec(delete(Run).where(Run.id.in_(ids)))  # type: ignore[union-attr]
    verdicts = [v.id for v in done.verdicts]
    if verdicts:
        session.exec(delete(Verdict).where(Verdict.id.in_(verdicts)))  # type: ignore[union-attr]
    if done.executions:
        session.exec(delete(Execution).where(Execution.id.in_(done.executions)))  # type: ignore[union-attr]
    return done


