"""The store's write methods: each is one transaction, so a failure leaves nothing half-written."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from workbench.store.entities import ArtifactRecord, ImportedRun, RunDeletion

StoredImports = dict[str, list[tuple[int, ImportedRun]]]  # label -> [(run id, the row)]: `StoreReads.imported_runs`

FINISHED = ("ok", "invalid", "failed")  # a run in one of these states has its end stored
IMPORT_ATTEMPTS = 3  # a bundle merge that met a concurrent one of the same rows is tried again


class StoreWrites:
    """Write methods of `Store`; the table-level functions they call live in `store.records`."""

    def session(self) -> Any:  # provided by Store
        raise NotImplementedError

    def start_execution(self, *, hypothesis_id: str, hypothesis_body: dict[str, Any], experiment_id: str,
                        experiment_version: int, experiment_body: dict[str, Any], profile: str, target: str,
                        mode: str, plan: Any, overrides: dict[str, str], config_diff: Any, wb_version: str,
                        uuid: str | None = None, who: dict[str, Any] | None = None) -> int:
        """Snapshot the hypothesis and experiment as they are now and open an execution; its id."""
        from workbench.store import records

        with self.session() as s:
            hs = records.snapshot_hypothesis(s, hypothesis_id=hypothesis_id, body=hypothesis_body)
            es = records.snapshot_experiment(s, experiment_id=experiment_id, version=experiment_version,
                                             body=experiment_body)
            ex = records.create_execution(s, hypothesis_id=hypothesis_id, experiment_id=experiment_id,
                                          experiment_version=experiment_version, profile=profile, target=target,
                                          mode=mode, plan=plan, overrides=overrides, config_diff=config_diff,
                                          hypothesis_snapshot_id=hs.id, experiment_snapshot_id=es.id,
                                          wb_version=wb_version, uuid=uuid, who=who)
            return int(ex.id)

    def snapshot_hypothesis(self, hypothesis_id: str, body: dict[str, Any]) -> str:
        """Keep the hypothesis's definition as it is now (once per distinct body); its sha256.

        For hypotheses the registry does not hold (a search's generated root), so that a verdict on one
        still names what it judged."""
        from workbench.store import records

        with self.session() as s:
            return str(records.snapshot_hypothesis(s, hypothesis_id=hypothesis_id, body=body).sha256)

    def update_execution(self, execution_id: int, **fields: Any) -> None:
        from workbench.store import records

        with self.session() as s:
            records.update_execution(s, execution_id=execution_id, **fields)

    def create_run(self, **fields: Any) -> int:
        """A new run row (see `records.create_run` for the fields); its id."""
        from workbench.store import records

        with self.session() as s:
            return int(records.create_run(s, **fields).id)

    def update_run(self, run_id: int, **fields: Any) -> None:
        from workbench.store import records

        with self.session() as s:
            records.update_run(s, run_id=run_id, **fields)

    def finish_run(self, run_id: int, *, fields: dict[str, Any], units: list[dict[str, Any]], outcome_field: str,
                   metrics: Mapping[str, Mapping[str, float | int | None]], artifacts: Iterable[ArtifactRecord],
                   probe_counts: list[dict[str, Any]]) -> None:
        """Everything a finished run left: its final state, units, metrics (by source), artifacts and probe counts."""
        from workbench.store import records

        with self.session() as s:
            records.update_run(s, run_id=run_id, **fields)
            if units:
                records.add_units(s, run_id=run_id, units=units, outcome_field=outcome_field)
            for source, values in metrics.items():
                records.add_metrics(s, run_id=run_id, metrics=dict(values), source=source)
            for a in artifacts:
                records.add_artifact(s, run_id=run_id, name=a.name, path=a.path, sha256=a.sha256,
                                     size_bytes=a.size_bytes, content=a.content)
            if probe_counts:
                records.add_probe_counts(s, run_id=run_id, counts=probe_counts)

    def drop_pending_runs(self, run_ids: list[int]) -> None:
        """Remove rows created ahead for runs that never started."""
        from workbench.store.models import Run

        with self.session() as s:
            for rid in run_ids:
                row = s.get(Run, rid)
                if row is not None and row.status == "pending":
                    s.delete(row)

    def run_finished(self, run_id: int) -> bool:
        """Whether the run's end is already stored (a journal replayed after its commit writes nothing twice)."""
        from workbench.store.models import Run

        with self.session() as s:
            row = s.get(Run, run_id)
            return row is not None and row.status in FINISHED

    def reconcile_execution(self, execution_id: int, *, found: str = "on resume") -> None:
        """After a crash: rows created ahead for runs that never began go, a run cut off mid-way is interrupted
        (its error says when that was `found`)."""
        with self.session() as s:
            _reconcile_runs(s, execution_id, found)

    def interrupt_dead_execution(self, execution_id: int, *, error: str, found: str) -> bool:
        """An execution its runner left "running" when it died (another execution took its target's lock over):
        recorded interrupted, with `error`, and its runs reconciled as a resume would (`found`: by whom). One that
        ended otherwise (its runner recorded how) is left as it is. Whether it was running."""
        from workbench.store.models import Execution

        with self.session() as s:
            ex = s.get(Execution, execution_id)
            if ex is None or ex.status != "running":
                return False
            ex.status, ex.error = "interrupted", error
            s.add(ex)
            _reconcile_runs(s, execution_id, found)
            return True

    def import_runs(self, experiment_id: str, decide: Callable[[StoredImports], tuple[list[ImportedRun], list[int]]]
                    ) -> tuple[list[tuple[int, ImportedRun]], RunDeletion | None]:
        """Read the runs imported into `experiment_id` so far, ask `decide(them)` for (the rows to store, the stored
        run ids they replace), then delete those runs (with the verdicts that rested on them: `store.deletion`)
        and store the rows, all in one transaction: what was read is what is replaced, and a failure anywhere
        leaves nothing. Imports into one PostgreSQL store take turns (`records.take_turns`), so a second import
        of the same file waits and then reads the first's runs. `decide` may raise to refuse, writing nothing.

        Returns [(run id, row)] of the runs stored, and what the replacement deleted (None when nothing was).
        """
        from workbench.store import deletion, reads, records

        with self.session() as s:
            records.take_turns(s)
            rows, replace = decide(reads.imported_runs(s, experiment_id))
            if not rows:
                return [], None
            gone = deletion.delete_runs(s, replace)
            if gone.missing or gone.in_flight:  # read in this transaction: a bug if it happens
                raise RuntimeError(f"runs to replace changed under the import: {gone.missing or gone.in_flight}")
            s.flush()
            ids = records.add_imported_runs(s, experiment_id=experiment_id, rows=list(rows))
        return list(zip(ids, rows)), gone

    def run_deletion(self, run_ids: Iterable[int], *,
                     runner_gone: Callable[[str], bool] | None = None) -> RunDeletion:
        """What `delete_runs(run_ids)` would remove (see `store.deletion`); nothing is changed."""
        from workbench.store import deletion

        with self.session() as s:
            return deletion.plan(s, run_ids, runner_gone)

    def delete_runs(self, run_ids: Iterable[int], *,
                    runner_gone: Callable[[str], bool] | None = None) -> RunDeletion:
        """Delete runs with their units, metrics, artifacts and probe counts, the verdicts that rested on them
        and executions left empty, in one transaction. With an id the store lacks, or a run of an execution
        still running whose runner `runner_gone(execution uuid)` does not prove gone,
        nothing is deleted (the result's `missing` or `in_flight` names it)."""
        from workbench.store import deletion

        with self.session() as s:
            return deletion.delete_runs(s, run_ids, runner_gone)

    def add_verdict(self, *, hypothesis_id: str, verdict: str, reasoning: str, checks: Any, details: Any,
                    execution_id: int | None, hypothesis_sha256: str | None,
                    evidence_run_ids: Iterable[int] | None = None, analysis_version: str | None = None) -> int:
        """Record a verdict; with `evidence_run_ids`, the digest of what it rests on (see `Evidence`)."""
        from workbench.store import records

        with self.session() as s:
            evidence = None
            if evidence_run_ids is not None:
                evidence = _evidence(s, sorted(set(evidence_run_ids)), analysis_version or "")
            return int(records.add_verdict(s, hypothesis_id=hypothesis_id, verdict=verdict, reasoning=reasoning,
                                           checks=checks, details=details, execution_id=execution_id,
                                           hypothesis_sha256=hypothesis_sha256, evidence=evidence).id)

    def add_review(self, *, hypothesis_id: str, author: str, body: str, decision: str = "comment",
                   verdict_id: int | None = None, author_source: str | None = None) -> int:
        from workbench.store import records

        with self.session() as s:
            return int(records.add_review(s, hypothesis_id=hypothesis_id, author=author, body=body,
                                          decision=decision, verdict_id=verdict_id, author_source=author_source).id)


def _reconcile_runs(session: Any, execution_id: int, found: str) -> None:
    from sqlmodel import select

    from workbench.store.models import Run

    for row in session.exec(select(Run).where(Run.execution_id == execution_id)).all():
        if row.status == "pending":
            session.delete(row)
        elif row.status == "running":
            row.status = "interrupted"
            row.error = f"[{row.stage or 'run'}] the runner stopped during this run (found {found})"
            session.add(row)


def _evidence(session: Any, run_ids: list[int], analysis_version: str) -> Any:
    from sqlmodel import select

    from workbench.store.entities import Evidence, EvidenceRun
    from workbench.store.models import Execution, Run

    rows = session.exec(select(Run.uuid, Run.config_hash, Run.execution_id)
                        .where(Run.id.in_(run_ids))).all() if run_ids else []  # type: ignore[union-attr]
    exec_ids = sorted({e for _, _, e in rows if e is not None})
    exec_keys = session.exec(
        select(Execution.uuid).where(Execution.id.in_(exec_ids))).all() if exec_ids else []  # type: ignore[union-attr]
    return Evidence(tuple(str(k) for k in exec_keys), tuple(EvidenceRun(str(u), h) for u, h, _ in rows),
                    analysis_version)


class StoreBundles:
    """Moving evidence between stores: rows out by global key, rows in with fresh ids (see `bundle_rows`)."""

    is_duckdb: bool  # provided by Store

    def session(self) -> Any:  # provided by Store
        raise NotImplementedError

    def export_rows(self, hypothesis_ids: list[str]) -> dict[str, Any]:
        from workbench.store import bundle_rows

        with self.session() as s:
            return bundle_rows.dump(s, hypothesis_ids)

    def import_rows(self, doc: dict[str, Any]) -> dict[str, int]:
        """All or nothing: one transaction; rows the store already has (same uuid) are skipped.

        On PostgreSQL another writer may merge the same rows meanwhile (two people importing one bundle into
        the team store): this transaction then waits on the other's rows and fails on a unique key once it
        commits. The merge is tried again from the start, and finds them there. A bundle that collides with
        itself fails every time, and that failure is raised."""
        from sqlalchemy.exc import IntegrityError

        from workbench.store import bundle_rows

        for attempt in range(IMPORT_ATTEMPTS):
            try:
                with self.session() as s:
                    return bundle_rows.load(s, doc)
            except IntegrityError:
                if self.is_duckdb or attempt == IMPORT_ATTEMPTS - 1:  # one writer: no one else wrote it
                    raise
        raise AssertionError("unreachable")

    def artifact_contents(self, shas: list[str]) -> dict[str, bytes]:
        """The bytes the store keeps for these artifact hashes, each checked against its hash (a damaged
        or missing one is left out)."""
        import hashlib
        import zlib

        from sqlmodel import select

        from workbench.store.models import ArtifactBlob

        wanted = sorted(set(shas))
        if not wanted:
            return {}
        out: dict[str, bytes] = {}
        with self.session() as s:
            for blob in s.exec(
                    select(ArtifactBlob).where(ArtifactBlob.sha256.in_(wanted))).all():  # type: ignore[attr-defined]
                try:
                    data = zlib.decompress(bytes(blob.data)) if blob.compression == "zlib" else None
                except zlib.error:
                    data = None
                if data is not None and hashlib.sha256(data).hexdigest() == blob.sha256:
                    out[blob.sha256] = data
        return out
