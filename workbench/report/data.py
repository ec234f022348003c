"""Everything the site shows, read from the store in a few bulk queries (not one query per run)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench.analysis.status import CurrentStatus, current_statuses, overrides_by_execution
from workbench.store.engine import Store
from workbench.team.reviews import ReviewState, review_states


@dataclass
class StoreData:
    """The store's records as the pages index them (by run, by hypothesis)."""

    runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    runs_by_hypothesis: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    artifacts: dict[int, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    units: dict[int, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    probes: dict[int, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)  # the verdict each status rests on
    statuses: dict[str, CurrentStatus] = field(default_factory=dict)
    verdict_history: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    executions: dict[int, dict[str, Any]] = field(default_factory=dict)
    reviews: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    review_states: dict[str, ReviewState] = field(default_factory=dict)

    def status_note(self, hid: str) -> str:
        """What every view prints beside the status: exploratory, and the verdicts under --set overrides."""
        st = self.statuses.get(hid)
        return st.note() if st else ""

    def hypothesis_runs(self, hid: str) -> list[dict[str, Any]]:
        return [self.runs[r] for r in self.runs_by_hypothesis.get(hid, [])]


def load(store: Store, parents: dict[str, str | None] | None = None,
         declared: dict[str, str] | None = None, predicts: dict[str, list[Any]] | None = None) -> StoreData:
    """Runs, metrics, units (summarised per outcome), artifacts, probes, verdicts, executions, reviews,
    indexed by run and by hypothesis for the pages; with `parents` (hypothesis id -> parent id), the
    review state of each of those hypotheses too; with `declared` (hypothesis id -> the status written in
    hypotheses.yaml), each one's current status by the rule `wb hypothesis list` uses (analysis.status);
    `predicts` (id -> its `prediction_keys`) marks a status judged on other predictions."""
    from workbench.store.records import redact_secrets

    contents = store.contents()
    data = StoreData()
    for run in contents.runs:
        d = run.to_dict(detail=False)
        d["rendered_config"] = run.rendered_config
        # Masked as wb's writer masks them: a row that came another way (a bundle) may hold a token's value.
        d["fingerprint"] = redact_secrets(run.fingerprint) or {}
        data.runs[run.id] = d
        if run.hypothesis_id:
            data.runs_by_hypothesis[run.hypothesis_id].append(run.id)
        if run.artifacts:
            data.artifacts[run.id] = [asdict(a) for a in run.artifacts]
        if run.units:
            data.units[run.id] = dict(run.units)
        if run.probe_counts:
            data.probes[run.id] = [{"process": p.process, "pid": p.pid, "target": p.target, "calls": p.calls,
                                    "resolved": p.resolved} for p in run.probe_counts]
    for v in contents.verdicts:
        data.verdict_history[v.hypothesis_id].append(v.to_dict())
    for ex in contents.executions:
        data.executions[ex.id] = ex.to_dict()
    for r in contents.reviews:
        data.reviews[r.hypothesis_id].append(r.to_dict())
    overrides_of = overrides_by_execution(contents.executions)
    known = dict(declared or {})
    known.update({v.hypothesis_id: "open" for v in contents.verdicts if v.hypothesis_id not in known})
    data.statuses = current_statuses(known, contents.verdicts, overrides_of, predicts)
    data.verdicts = {h: st.verdict.to_dict() for h, st in data.statuses.items() if st.verdict is not None}
    if parents is not None:
        data.review_states = review_states(parents, contents.verdicts, contents.reviews, overrides_of=overrides_of,
                                           executions=contents.executions)
    return data
