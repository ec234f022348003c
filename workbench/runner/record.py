"""Writing runs to the store from one background thread, so store writes overlap the target's work.

Writes stay in submission order (one worker) and each opens its own short session (other wb
processes can interleave). The next run's row is created while the current run's workload runs.
A run's outcome goes to an on-disk journal first and to the store in one transaction, which the
next run waits for; a store held by a reader is waited on, and what a crash left in the journal is
written on `--resume`.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from workbench.errors import StoreLocked
from workbench.runner import journal
from workbench.runner.outcome import RunOutcome, artifact_rows
from workbench.runner.plan import PlannedRun
from workbench.runner.prepare import Prepared
from workbench.store.engine import Store
from workbench.store.entities import ArtifactRecord

# How long a finished run's write waits for a store that another process (a reader) holds.
RECORD_WAIT_S = 600.0


def patient(fn: Any, *args: Any) -> Any:
    """Call a store write, waiting (bounded) while another process holds the store; the journal keeps the
    run meanwhile, so a reader holding the file delays the record instead of losing it."""
    deadline = time.monotonic() + RECORD_WAIT_S
    while True:
        try:
            return fn(*args)
        except StoreLocked:
            if time.monotonic() >= deadline:
                raise
            time.sleep(1.0)


class Recorder:
    def __init__(self, store: Store, prepared: Prepared, execution_id: int, exec_dir: Path | None = None) -> None:
        self.store = store
        self.exec_dir = exec_dir
        self.p = prepared
        self.execution_id = execution_id
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wb-record")
        self._pending: list[Future] = []
        self._prefetched: dict[int, Future] = {}

    def _submit(self, fn: Any, *args: Any) -> Future:
        fut = self._pool.submit(patient, fn, *args)
        self._pending.append(fut)
        return fut

    # -------------------------------------------------------------- row creation
    def _create(self, pr: PlannedRun) -> int:
        p = self.p
        return self.store.create_run(
            experiment_id=p.experiment.id, variables={**p.assignments[pr.arm], **pr.values},
            execution_id=self.execution_id,
            hypothesis_id=p.hypothesis.id, experiment_version=p.experiment.version, arm=pr.arm,
            replicate=pr.replicate, order_index=pr.order_index, block=pr.block, host=pr.host,
            target=p.profile.target.kind, status="pending", phase="run")

    def prefetch(self, pr: PlannedRun | None) -> None:
        """Create the row of a run that comes later, in the background."""
        if pr is not None and pr.order_index not in self._prefetched:
            self._prefetched[pr.order_index] = self._submit(self._create, pr)

    async def start(self, pr: PlannedRun) -> int:
        fut = self._prefetched.pop(pr.order_index, None) or self._submit(self._create, pr)
        try:
            run_id = await asyncio.wrap_future(fut)
        except BaseException:
            if not fut.cancelled():  # a signal while its row was written: the run never began, so flush drops it
                self._prefetched[pr.order_index] = fut
            raise
        self._submit(self._mark_running, run_id)
        return run_id

    def _mark_running(self, run_id: int) -> None:
        self.store.update_run(run_id, status="running", started_at=datetime.now(timezone.utc))

    # -------------------------------------------------------------- the end of a run
    def end(self, run_id: int, out: RunOutcome) -> None:
        jpath = journal.write(self.exec_dir, run_id, out) if self.exec_dir is not None else None
        self._submit(self._end_waiting, run_id, out, jpath)

    def _end_waiting(self, run_id: int, out: RunOutcome, jpath: Path | None) -> None:
        self._end(run_id, out)
        if jpath is not None:
            journal.done(jpath)

    def _end(self, run_id: int, out: RunOutcome) -> None:
        with self.store.kept_open():  # the check and the write: one open of a DuckDB file, not two
            self._end_once(run_id, out)

    def _end_once(self, run_id: int, out: RunOutcome) -> None:
        if self.store.run_finished(run_id):
            return  # written before (a journal replayed after its commit)
        unit_spec = self.p.experiment.unit
        by_source: dict[str, dict[str, float | int | None]] = {}
        for name, value in out.metrics.items():
            by_source.setdefault(out.metric_sources.get(name, "runner"), {})[name] = value
        self.store.finish_run(
            run_id, fields={"status": out.status, "stage": out.stage, "error": out.error,
                            "started_at": out.started_at, "ended_at": out.ended_at,
                            "rendered_config": out.rendered_config, "config_hash": out.config_hash,
                            "fingerprint": out.fingerprint},
            units=out.units or [], outcome_field=unit_spec.outcome_field if unit_spec else "outcome",
            metrics=by_source, artifacts=[ArtifactRecord(**row) for row in artifact_rows(out)],
            probe_counts=out.probe_counts or [])

    def replay(self) -> int:
        """Write the runs a crash left in the journal; returns how many."""
        n = 0
        for path in journal.pending(self.exec_dir) if self.exec_dir is not None else []:
            got = journal.read(path)
            if got is not None:
                patient(self._end, got[0], got[1])
                n += 1
            journal.done(path)
        return n

    def reconcile(self) -> None:
        """After a crash: rows created ahead for runs that never began go, a run cut off mid-way is interrupted."""
        self.store.reconcile_execution(self.execution_id)

    async def settle(self) -> None:
        """Wait until every write submitted so far (not the rows created ahead) is committed."""
        ahead = set(self._prefetched.values())
        mine = [f for f in self._pending if f not in ahead]
        self._pending = [f for f in self._pending if f in ahead]
        for fut in mine:
            await asyncio.wrap_future(fut)

    # -------------------------------------------------------------- flushing
    async def flush(self) -> None:
        """Wait for every write; rows created ahead for runs that did not happen are removed."""
        unused = []
        for fut in self._prefetched.values():
            try:
                unused.append(await asyncio.wrap_future(fut))
            except Exception:
                pass
        self._prefetched.clear()
        if unused:
            self._submit(self.store.drop_pending_runs, unused)
        pending, self._pending = self._pending, []
        errors = []
        for fut in pending:
            try:
                await asyncio.wrap_future(fut)
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    def close(self) -> None:
        self._pool.shutdown(wait=True)
