"""Deciding a reachability hypothesis from stored probe counts, with its positive control.

Observed calls can prove that code ran (or ran more than a bound allows). "Zero calls" (or too few)
is evidence only when the workload exercised the surrounding path: the positive control was hit in
every valid run. Targets that name no code object make the hypothesis invalid, never "0 calls".
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from workbench.analysis import display
from workbench.analysis.predictions import combine_outcomes
from workbench.analysis.results import Analysis, Check, Judgement
from workbench.registry.hypothesis import Hypothesis, Prediction
from workbench.store.entities import ProbeCountRecord

VALID_STATUSES = ("ok",)


class ProbedRun(Protocol):
    """What a reachability judgement reads of a run (`RunData` and `RunRecord` both have it)."""

    id: int
    status: str
    probe_counts: tuple[ProbeCountRecord, ...]


def _short(target: str) -> str:
    return target.partition(":")[2] or target


def _label(process: str, width: int = 60) -> str:
    return process if len(process) <= width else process[:width - 1] + "…"


def tally(runs: Sequence[ProbedRun], targets: list[str]) -> dict[str, dict[str, Any]]:
    """Per target over the given runs: total calls, calls per process and per run, whether it resolved."""
    out: dict[str, dict[str, Any]] = {
        t: {"total": 0, "by_process": {}, "by_run": {}, "resolved": None, "reporting_processes": 0, "details": []}
        for t in targets}
    for run in runs:
        for t in targets:
            out[t]["by_run"].setdefault(str(run.id), 0)
        for row in run.probe_counts:
            if row.target not in out:
                continue
            entry = out[row.target]
            entry["total"] += row.calls
            entry["by_run"][str(run.id)] = entry["by_run"].get(str(run.id), 0) + row.calls
            proc = row.process or f"pid {row.pid}"
            entry["by_process"][proc] = entry["by_process"].get(proc, 0) + row.calls
            entry["reporting_processes"] += 1
            entry["resolved"] = row.resolved if entry["resolved"] is None else (entry["resolved"] or row.resolved)
            if row.detail and not row.resolved and row.detail not in entry["details"]:
                entry["details"].append(row.detail)
    return out


class _Judging:
    """The state of one reachability judgement: the runs split by status, the checks made so far."""

    def __init__(self, h: Hypothesis, runs: Sequence[ProbedRun]) -> None:
        probe_targets = list(h.probe.targets) if h.probe is not None else []
        self.h = h
        self.control = h.probe.positive_control if h.probe is not None else None
        self.pred_targets = [p.target or (probe_targets[0] if probe_targets else None) for p in h.predicts]
        self.targets = list(dict.fromkeys([*probe_targets, *[t for t in self.pred_targets if t],
                                           *([self.control] if self.control else [])]))
        self.valid = [r for r in runs if r.status in VALID_STATUSES]
        self.excluded = [r for r in runs if r.status not in VALID_STATUSES]
        self.checks: list[Check] = []
        self.judgements: list[Judgement] = []
        self.counts: dict[str, dict[str, Any]] = {}

    def check(self, name: str, passed: bool, detail: str, effect: str = "inconclusive") -> None:
        self.checks.append(Check(name, bool(passed), detail, "none" if passed else effect))

    def result(self, verdict: str, reasoning: str) -> Analysis:
        return Analysis(hypothesis_id=self.h.id, verdict=verdict, reasoning=reasoning, checks=tuple(self.checks),
                        predictions=tuple(self.judgements), runs={"probe": [r.id for r in self.valid]},
                        excluded=tuple(f"#{r.id} ({r.status})" for r in self.excluded), counts=self.counts)

    def where(self, target: str) -> str:
        hits = {p: c for p, c in self.counts[target]["by_process"].items() if c > 0}
        if not hits:
            n_procs = len({(r.id, row.pid) for r in self.valid for row in r.probe_counts})
            return f"in all {display.count(n_procs, 'probed process', 'probed processes')}"
        return "in " + ", ".join(f"{_label(p)}: {c}" for p, c in hits.items())


def judge_reachability(hypothesis: Hypothesis, runs: Sequence[ProbedRun]) -> Analysis:
    """The verdict on a reachability hypothesis from the probe counts of `runs` (failed runs are excluded)."""
    st = _Judging(hypothesis, runs)
    if not st.targets:
        st.check("probe targets", False, "the hypothesis names no probe target", "invalid")
        return st.result("invalid", "A reachability hypothesis must name the code to probe (probe.targets).")
    skipped = ", ".join(f"#{r.id} ({r.status})" for r in st.excluded)
    st.check("valid runs", bool(st.valid), f"{len(st.valid)} of {display.count(len(runs), 'run')} completed ok"
             + (f"; excluded: {skipped}" if st.excluded else ""))
    st.counts = tally(st.valid, st.targets)
    if not st.valid:
        return st.result("inconclusive", "No run completed ok, so there are no counts to judge; run the hypothesis "
                                          "(again) and check why the runs failed.")
    silent = [r.id for r in st.valid if not r.probe_counts]
    named = ("runs " if len(silent) > 1 else "run ") + ", ".join(f"#{i}" for i in silent)
    st.check("probe reported", not silent,
             "every run has counts from the probed processes" if not silent else
             f"{named} {'have' if len(silent) > 1 else 'has'} no probe counts at all: the probe was not injected "
             "or no process wrote its counts")
    if silent:
        return st.result("inconclusive", f"No probe counts were recorded for {named}: the probe did not report, so "
                         "zero calls cannot be told from a missing probe. Check that the deployment's restart "
                         "received the probe environment (PYTHONPATH, WB_PROBE_*).")
    unresolved = _resolution(st)
    if unresolved:
        said = ("Targets name no existing code objects, so their counts are not measurements: " if len(unresolved) > 1
                else "A target names no existing code object, so its count is not a measurement: ")
        return st.result("invalid", said + "; ".join(unresolved) + ". Fix the target (package.module:Qualified.name).")
    control_ok, control_note = _control(st)
    outcomes, reasons = [], []
    for pred, target in zip(st.h.predicts, st.pred_targets):
        outcome, reason = _judge_one(st, pred, target, control_ok, control_note)
        outcomes.append(outcome)
        reasons.append(reason)
    return st.result(combine_outcomes(outcomes), ". ".join(reasons) + ".")


def _resolution(st: _Judging) -> list[str]:
    unresolved = []
    for t in st.targets:
        entry = st.counts[t]
        ok = bool(entry["resolved"])
        n = entry["reporting_processes"]
        why = "; ".join(entry["details"]) or (f"unresolved in all {display.count(n, 'process report')}" if n else
                                             "no process reported it")
        st.check(f"resolves: {t}", ok, f"instrumented or found in {display.count(n, 'process report')}"
                 if ok else f"names no existing code object: {why}", "invalid")
        if not ok:
            unresolved.append(f"{t} ({why})")
    return unresolved


def _control(st: _Judging) -> tuple[bool, str]:
    if not st.control:
        st.check("positive control", False, "no positive control declared: zero calls cannot be told from a "
                                            "workload that never reached the surrounding path")
        return False, "no positive control declared"
    per_run = st.counts[st.control]["by_run"]
    missed = [rid for rid, n in per_run.items() if n <= 0]
    note = (f"the positive control {_short(st.control)} was hit in every run "
            f"({', '.join(f'#{k}: {v}' for k, v in per_run.items())}; {st.where(st.control)})" if not missed else
            f"the positive control {_short(st.control)} was not hit in run{'s' if len(missed) > 1 else ''} "
            f"{', '.join(f'#{k}' for k in missed)}: the workload did not exercise the surrounding path")
    st.check("positive control", not missed, note)
    return not missed, note


def _judge_one(st: _Judging, pred: Prediction, target: str, control_ok: bool, control_note: str) -> tuple[str, str]:
    lo, hi = pred.region.bounds()
    n = st.counts[target]["total"] if target in st.counts else 0
    inside = pred.region.contains(n)
    # Calls seen prove reachability (n meets a pure lower bound) or excess (n above an upper bound)
    # whatever the control did; a conclusion resting on few or no calls needs the control.
    by_hits = (inside and lo > 0 and hi == float("inf")) or (not inside and n > hi)
    what = f"calls to {_short(target)} {pred.region.describe()}"
    seen = f"{display.count(n, 'call')} over {display.count(len(st.valid), 'run')} {st.where(target)}"
    if by_hits or control_ok:
        outcome = "supported" if inside else "falsified"
        st.check(f"prediction: {what}", inside, f"observed {seen}", "none")
        reason = (f"{_short(target)}: {seen}; predicted {pred.region.describe()}, so {outcome}"
                  + ("" if by_hits else f", because {control_note}"))
    else:
        outcome = "inconclusive"
        st.check(f"prediction: {what}", False, f"observed {seen}; undecidable: {control_note}")
        says = "says" if n == 1 else "say"
        reason = (f"{_short(target)}: {seen}, but {control_note}, so {display.count(n, 'call')} {says} nothing about "
                  "reachability; rerun with a workload that reaches the path (e.g. with the feature that uses it "
                  "enabled)")
    st.judgements.append(Judgement(
        metric=f"calls:{target}", target=target, where="every process", region=pred.region.describe(),
        bounds=(lo, hi), describe=what, why=pred.why or "", basis="all", estimate=n, interval=None,
        outcome=outcome, by_process=st.counts[target]["by_process"],
        note="" if outcome != "inconclusive" else control_note))
    return outcome, reason
