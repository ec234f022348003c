"""The workbench's stored runs: list and show them, delete those recorded by mistake, import historical
evidence. A part of `Workbench` (app.py), kept apart because it is one concept: runs as evidence.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from workbench.errors import BadInput, ConfigError, ConfigErrors

if TYPE_CHECKING:
    from workbench.analysis.run_metrics import RunMetrics
    from workbench.analysis.status import CurrentStatus
    from workbench.registry.folder import Registry
    from workbench.settings import Settings
    from workbench.store.engine import Store
    from workbench.store.entities import ExecutionRecord, RunDeletion, RunRecord


@dataclass
class ImportResult:
    file: str
    experiment: str
    imported: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)  # labels whose stored run this import replaced
    # Each replaced run and the run that replaced it: {"label", "run": old id, "by": new id}. The new row
    # gets a new id (and uuid), so an id written down before never names other numbers without a word.
    replaced_runs: list[dict[str, Any]] = field(default_factory=list)
    verdicts_deleted: list[Any] = field(default_factory=list)  # DeletedVerdict: they rested on a replaced run

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {"file": self.file, "experiment": self.experiment, "imported": self.imported, "skipped": self.skipped,
                "replaced": self.replaced, "replaced_runs": self.replaced_runs,
                "verdicts_deleted": [asdict(v) for v in self.verdicts_deleted]}


StatusChanges = dict[str, tuple[str, str]]  # hypothesis id -> (status before, status after)


def _changes(before: dict[str, "CurrentStatus"], after: dict[str, "CurrentStatus"]) -> StatusChanges:
    """The statuses that differ, or that another verdict now holds (the same word on other evidence)."""
    return {h: (before[h].status, after[h].status) for h in before
            if h in after and (before[h].status, before[h].verdict) != (after[h].status, after[h].verdict)}


def _no_missing(deletion: "RunDeletion") -> "RunDeletion":
    """The deletion, or BadInput for ids the store lacks and for runs a runner may still be writing."""
    if deletion.missing:
        ids = ", ".join(str(i) for i in deletion.missing)
        raise BadInput(f"no run {ids} in the store" if len(deletion.missing) == 1 else f"no runs {ids} in the store",
                       hint="to see the run ids: wb runs list; nothing was deleted")
    if deletion.in_flight:
        r = deletion.in_flight[0]
        raise BadInput(f"run {r.id} is {r.status} in execution {r.execution_id} of {r.hypothesis_id}, which has not "
                       "ended: its runner may still write it", hint="let the execution end; a runner killed on this "
                       "machine is seen as gone and its runs may then be deleted; nothing was deleted; one killed "
                       f"elsewhere is settled there first with: wb hypothesis run {r.hypothesis_id} --resume")
    return deletion


class StoredRuns:
    """`Workbench`'s methods on stored runs and evidence; it supplies what they use below."""

    if TYPE_CHECKING:
        settings: Settings

        @property
        def registry(self) -> Registry: ...

        def store(self, *, read_only: bool = False) -> AbstractContextManager[Store]: ...

        def _statuses_if_readable(self) -> dict[str, CurrentStatus]: ...

        def _secrets_if_readable(self) -> None: ...

    def runs(self, *, hypothesis_id: str | None = None, limit: int | None = None) -> list["RunRecord"]:
        self._secrets_if_readable()
        with self.store(read_only=True) as store:
            rows = store.runs(hypothesis_id=hypothesis_id, limit=limit)
        if hypothesis_id is not None and not rows:
            # A mistyped id is not a hypothesis with no runs yet (runs of one since removed from the file still
            # list). Only a registry can say so: a store read from outside any workbench (--db) lists, and a
            # workbench whose file does not load says why (a typo there is no answer about the id).
            try:
                registry = self.registry
            except (ConfigError, ConfigErrors):
                raise
            except BadInput:
                return rows
            ids = [h.id for h in registry.hypotheses]
            if hypothesis_id not in ids:
                from workbench.registry.common import id_meant

                raise BadInput(f"--hypothesis {hypothesis_id!r}: no hypothesis {hypothesis_id!r} in "
                               f"{Path(registry.root) / 'hypotheses.yaml'}, and no stored run of it",
                               where="--hypothesis",
                               hint=id_meant(hypothesis_id, ids, f"known ids: {', '.join(ids)}"))
        return rows

    def run_record(self, run_id: int) -> "RunRecord":
        self._secrets_if_readable()
        with self.store(read_only=True) as store:
            run = store.run(run_id)
        if run is None:
            raise BadInput(f"no run {run_id} in the store", hint="to see the run ids: wb runs list")
        return run

    def run_execution(self, run: "RunRecord") -> "ExecutionRecord | None":
        """The execution that made `run` (how it ended: its status, and what its recorded error says the target
        may have been left with); None for an imported run, or one whose execution is not in the store."""
        if run.execution_id is None:
            return None
        with self.store(read_only=True) as store:
            return store.execution(run.execution_id)

    def artifact_spans(self, run: "RunRecord") -> dict[str, dict[str, Any]]:
        """What each cut log artifact of `run` covers ({name: {source, from_byte, to_byte, whole, note}}), from
        its artifact log_spans; {} for a run whose files were fetched whole (or that kept no such record)."""
        import json

        shas = [a.sha256 for a in run.artifacts if a.name == "log_spans"]
        if not shas:
            return {}
        with self.store(read_only=True) as store:
            content = store.artifact_contents(shas).get(shas[0])
        try:
            spans = json.loads(content) if content is not None else {}
        except ValueError:
            return {}
        return spans if isinstance(spans, dict) else {}

    def run_metrics(self, runs: list["RunRecord"]) -> list["RunMetrics"]:
        """Each run's measured metrics (counts as integers) and those its experiment derives, by the definitions
        this workbench declares; where it declares none for the run, the stored values and a note saying why."""
        from workbench.analysis.run_metrics import definitions, run_metrics

        try:
            experiments, unread = self.registry.experiments, None
        except (BadInput, ConfigError) as exc:  # a bare store lists; the note says what is missing
            experiments, unread = {}, exc
        out = []
        for r in runs:
            exp, note = definitions(r.id, r.experiment_id, r.experiment_version, experiments, unread)
            out.append(run_metrics(r, exp, note))
        return out

    def run_deletion(self, run_ids: list[int]) -> tuple["RunDeletion", StatusChanges]:
        """What deleting these runs would remove, and the statuses that would change (by the one status rule
        over the verdicts that would remain); an id the store lacks, or a run a live runner may still be
        writing, is bad input. Nothing is opened for writing."""
        from workbench.analysis.status import overrides_by_execution

        with self.store(read_only=True) as store:
            plan = _no_missing(store.run_deletion(run_ids, runner_gone=self._runner_gone()))
            verdicts, executions = store.verdicts(), store.executions()
        gone = {v.id for v in plan.verdicts}
        overrides = overrides_by_execution(e for e in executions if e.id not in plan.executions)
        return plan, _changes(self._statuses_from(verdicts, overrides_by_execution(executions)),
                              self._statuses_from([v for v in verdicts if v.id not in gone], overrides))

    def _statuses_from(self, verdicts: list[Any], overrides: dict[int, dict[str, Any]]) -> dict[str, "CurrentStatus"]:
        """`analysis.status.current_statuses` of every hypothesis over these verdicts (none without a
        workbench folder: runs can be deleted from a bare store)."""
        from workbench.analysis.status import current_statuses, prediction_keys

        try:
            hypotheses = self.registry.hypotheses
        except BadInput:
            return {}
        return current_statuses({h.id: h.status for h in hypotheses}, verdicts, overrides,
                                {h.id: prediction_keys(h, self.registry.experiments) for h in hypotheses})

    def _runner_gone(self) -> "Callable[[str], bool]":
        """Whether an execution's runner is provably gone (killed: its note in the execution's folder names a
        dead pid on this machine, runner.lock.runner_gone); without a folder for the notes, never."""
        from workbench.runner.execute import artifacts_root
        from workbench.runner.lock import runner_gone

        try:
            folder = artifacts_root(Path(self.registry.root), self.settings.artifacts)
        except BadInput:  # a bare store: only $WB_ARTIFACTS says where the notes are
            if self.settings.artifacts is None:
                return lambda uuid: False
            folder = artifacts_root(Path("."), self.settings.artifacts)
        return lambda uuid: runner_gone(folder / f"execution-{uuid}", uuid)

    def delete_runs(self, run_ids: list[int]) -> tuple["RunDeletion", StatusChanges]:
        """Delete runs and what rests on them, in one transaction (store.deletion); with the statuses that
        changed: {hypothesis id: (before, after)}. Runs of an execution whose runner was killed may go. An id
        the store lacks, or a live runner's run, deletes nothing (bad input)."""
        before = self._statuses_if_readable()
        with self.store() as store:
            done = _no_missing(store.delete_runs(run_ids, runner_gone=self._runner_gone()))
        return done, _changes(before, self._statuses_if_readable())

    def import_evidence(self, file: str | Path, *, experiment: str | None = None,
                        replace: bool = False) -> ImportResult:
        """Store each CSV row as a historical run of `experiment` (by default the one experiment whose columns
        fit the header), keyed on run_id: rows stored with the same values are skipped; rows stored with other
        values are refused, or replace the stored run with `replace` (see registry.evidence.plan_import)."""
        from workbench.registry.evidence import ImportPlan, parse_evidence, pick_for, plan_import
        from workbench.store.entities import ImportedRun

        path = Path(file)
        if experiment is None:
            experiment = pick_for(self.registry, path).id
        exp = self.registry.experiments.get(experiment)
        if exp is None:
            from workbench.registry.common import did_you_mean

            raise BadInput(f"--experiment {experiment}: no experiment {experiment!r}",
                           hint=did_you_mean(experiment, sorted(self.registry.experiments),
                                             f"experiments: {', '.join(sorted(self.registry.experiments))}"))
        rows = [ImportedRun(**row) for row in parse_evidence(path, exp)]
        plans: list[tuple[dict[str, list[tuple[int, ImportedRun]]], "ImportPlan"]] = []

        def decide(stored: dict[str, list[tuple[int, ImportedRun]]]) -> tuple[list[ImportedRun], list[int]]:
            plans.append((stored, plan_import(rows, stored, replace=replace, path=path)))
            return plans[-1][1].add, plans[-1][1].replace

        # One transaction reads what is stored, plans against it and writes (an empty store's schema is made in
        # it too): a failure leaves the store as it was, and a concurrent import of the file waits, then skips.
        with self.store(deferred_schema=True) as store:
            done, gone = store.import_runs(experiment, decide)
        stored, plan = plans[-1]
        new_id = {row.label: rid for rid, row in done}
        return ImportResult(str(file), experiment, [{"id": rid, "label": row.label, "variables": row.variables,
                                                     "metrics": row.metrics} for rid, row in done], plan.skipped,
                            plan.replaced, [{"label": label, "run": old, "by": new_id[label]}
                                            for label in plan.replaced for old, _ in stored[label]],
                            list(gone.verdicts) if gone else [])
