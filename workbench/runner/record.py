"""Writing runs to the store from one background thread, so store writes overlap the target's work.

Writes stay in submission order (one worker) and each opens its own short session (other wb
processes can interleave). The next run's row is created while the current run's workload runs.
A run's outcome goes to an on-disk journal first and to the store in one transaction, which the
next run waits for; a store held by a reader is waited on, and what a crash left in the journal is
written on `--resume`.
"""

from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from workbench.errors import StoreLocked
from workbench.runner import journal
from workbench.runner.lifecycle import RunOutcome, artifact_rows
from workbench.runner.plan import PlannedRun

# How long a finished run's write waits for a store that another process (a reader) holds.
RECORD_WAIT_S = float(os.environ.get("WB_RECORD_WAIT", "600"))
FINISHED = ("ok", "invalid", "failed")


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
    def __init__(self, store: Any, prepared: Any, execution_id: int, exec_dir: Path | None = None) -> None:
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
        from workbench.store import records

        p = self.p
        with self.store.session() as s:
            run = records.create_run(
                s, experiment_id=p.experiment.id, variables=p.assignments[pr.arm], execution_id=self.execution_id,
                hypothesis_id=p.hypothesis.id, experiment_version=p.experiment.version, arm=pr.arm,
                replicate=pr.replicate, order_index=pr.order_index, block=pr.block, host=pr.host,
                target=p.profile.target.kind, status="pending", phase="run")
            return int(run.id)

    def prefetch(self, pr: PlannedRun | None) -> None:
        """Create the row of a run that comes later, in the background."""
        if pr is not None and pr.order_index not in self._prefetched:
            self._prefetched[pr.order_index] = self._submit(self._create, pr)

    async def start(self, pr: PlannedRun) -> int:
        fut = self._prefetched.pop(pr.order_index, None) or self._submit(self._create, pr)
        run_id = await asyncio.wrap_future(fut)
        self._submit(self._mark_running, run_id)
        return run_id

    def _mark_running(self, run_id: int) -> None:
        from workbench.store import records

        with self.store.session() as s:
            records.update_run(s, run_id=run_id, status="running", started_at=datetime.now(timezone.utc))

    # -------------------------------------------------------------- the end of a run
    def end(self, run_id: int, out: RunOutcome) -> None:
        jpath = journal.write(self.exec_dir, run_id, out) if self.exec_dir is not None else None
        self._submit(self._end_waiting, run_id, out, jpath)

    def _end_waiting(self, run_id: int, out: RunOutcome, jpath: Path | None) -> None:
        self._end(run_id, out)
        if jpath is not None:
            journal.done(jpath)

    def _end(self, run_id: int, out: RunOutcome) -> None:
        from workbench.store import records
        from workbench.store.models import Run

        unit_spec = self.p.experiment.unit
        arts = artifact_rows(out)
        with self.store.session() as s:
            row = s.get(Run, run_id)
            if row is not None and row.status in FINISHED:
                return  # written before (a journal replayed after its commit)
            records.update_run(s, run_id=run_id, status=out.status, stage=out.stage, error=out.error,
                               started_at=out.started_at, ended_at=out.ended_at,
                               rendered_config=out.rendered_config, config_hash=out.config_hash,
                               fingerprint=out.fingerprint)
            if out.units:
                records.add_units(s, run_id=run_id, units=out.units,
                                  outcome_field=unit_spec.outcome_field if unit_spec else "outcome")
            by_source: dict[str, dict[str, float | int | None]] = {}
            for name, value in out.metrics.items():
                by_source.setdefault(out.metric_sources.get(name, "runner"), {})[name] = value
            for source, values in by_source.items():
                records.add_metrics(s, run_id=run_id, metrics=values, source=source)
            for row in arts:
                records.add_artifact(s, run_id=run_id, **row)
            if out.probe_counts:
                records.add_probe_counts(s, run_id=run_id, counts=out.probe_counts)

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
        from workbench.store.models import Run
        from sqlmodel import select

        with self.store.session() as s:
            for row in s.exec(select(Run).where(Run.execution_id == self.execution_id)).all():
                if row.status == "pending":
                    s.delete(row)
                elif row.status == "running":
                    row.status = "interrupted"
                    row.error = f"[{row.stage or 'run'}] the runner stopped during this run (found on resume)"
                    s.add(row)

    async def settle(self) -> None:
        """Wait until every write submitted so far (not the rows created ahead) is committed."""
        ahead = set(self._prefetched.values())
        mine = [f for f in self._pending if f not in ahead]
        self._pending = [f for f in self._pending if f in ahead]
        for fut in mine:
            await asyncio.wrap_future(fut)

    # -------------------------------------------------------------- flushing
    def _drop_unused(self, run_ids: list[int]) -> None:
        from workbench.store.models import Run

        with self.store.session() as s:
            for rid in run_ids:
                row = s.get(Run, rid)
                if row is not None and row.status == "pending":
                    s.delete(row)

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
            self._submit(self._drop_unused, unused)
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
