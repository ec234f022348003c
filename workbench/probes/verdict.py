"""Deciding a reachability hypothesis from stored probe counts, with its positive control.

Observed calls can prove that code ran (or ran more than a bound allows). "Zero calls" (or too few)
is evidence only when the workload exercised the surrounding path: the positive control was hit in
every valid run. Targets that name no code object make the hypothesis invalid, never "0 calls".
"""

from __future__ import annotations

from typing import Any

VALID_STATUSES = ("ok",)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    return obj.get(name, default) if isinstance(obj, dict) else getattr(obj, name, default)


def _short(target: str) -> str:
    return target.partition(":")[2] or target


def _label(process: str, width: int = 60) -> str:
    return process if len(process) <= width else process[:width - 1] + "…"


def _region(pred: Any) -> dict[str, Any]:
    return {k: _get(pred, k) for k in ("at_least", "at_most", "equals", "between")}


def _bounds(region: dict[str, Any]) -> tuple[float | None, float | None]:
    lo, hi = region.get("at_least"), region.get("at_most")
    if region.get("equals") is not None:
        lo = hi = region["equals"]
    if region.get("between") is not None:
        lo, hi = region["between"]
    return lo, hi


def _describe(region: dict[str, Any]) -> str:
    if region.get("equals") is not None:
        return f"== {region['equals']:g}"
    if region.get("between") is not None:
        a, b = region["between"]
        return f"in [{a:g}, {b:g}]"
    parts = []
    if region.get("at_least") is not None:
        parts.append(f">= {region['at_least']:g}")
    if region.get("at_most") is not None:
        parts.append(f"<= {region['at_most']:g}")
    return " and ".join(parts)


def tally(runs: list[dict[str, Any]], targets: list[str]) -> dict[str, dict[str, Any]]:
    """Per target over the given runs: total calls, calls per process and per run, whether it resolved."""
    out: dict[str, dict[str, Any]] = {
        t: {"total": 0, "by_process": {}, "by_run": {}, "resolved": None, "reporting_processes": 0, "details": []}
        for t in targets}
    for run in runs:
        rid = run.get("id")
        for t in targets:
            out[t]["by_run"].setdefault(str(rid), 0)
        for row in run.get("probe_counts") or []:
            t = row.get("target")
            if t not in out:
                continue
            entry = out[t]
            calls = int(row.get("calls") or 0)
            entry["total"] += calls
            entry["by_run"][str(rid)] = entry["by_run"].get(str(rid), 0) + calls
            proc = str(row.get("process") or f"pid {row.get('pid')}")
            entry["by_process"][proc] = entry["by_process"].get(proc, 0) + calls
            entry["reporting_processes"] += 1
            resolved = bool(row.get("resolved", True))
            entry["resolved"] = resolved if entry["resolved"] is None else (entry["resolved"] or resolved)
            detail = row.get("detail")
            if detail and not resolved and detail not in entry["details"]:
                entry["details"].append(detail)
    return out


def analyze_reachability(first: Any, runs: list[dict[str, Any]] | None = None, *, hypothesis: Any = None,
                         run_ids: list[int] | None = None, execution_id: int | None = None) -> dict[str, Any]:
    """verdict (supported|falsified|inconclusive|invalid), reasoning, checks, predictions, counts.

    Two spellings: `analyze_reachability(hypothesis, runs)` with `store.queries.get_run` dicts, or
    `analyze_reachability(session, hypothesis=h, run_ids=[...])`, which reads those runs from the store.
    `hypothesis` is a registry Hypothesis (or its dict).
    """
    if hypothesis is None:
        hypothesis = first
    else:
        from workbench.store.queries import get_run

        runs = [r for rid in (run_ids or []) if (r := get_run(first, run_id=rid)) is not None]
    runs = list(runs or [])
    result_ = _analyze(hypothesis, runs)
    result_["execution_id"] = execution_id
    return result_


def _analyze(hypothesis: Any, runs: list[dict[str, Any]]) -> dict[str, Any]:
    probe = _get(hypothesis, "probe")
    predictions = list(_get(hypothesis, "predicts") or [])
    probe_targets = list(_get(probe, "targets") or []) if probe is not None else []
    control = _get(probe, "positive_control") if probe is not None else None
    pred_targets = [_get(p, "target") or (probe_targets[0] if probe_targets else None) for p in predictions]
    targets = list(dict.fromkeys([*probe_targets, *[t for t in pred_targets if t], *([control] if control else [])]))
    checks: list[dict[str, Any]] = []
    predictions_out: list[dict[str, Any]] = []

    def check(name: str, passed: bool, detail: str, effect: str = "inconclusive") -> None:
        # `effect`: what a failed check does to the verdict (the analysis package's vocabulary)
        checks.append({"name": name, "passed": bool(passed), "detail": detail, "effect": "none" if passed else effect})

    def result(verdict: str, reasoning: str, counts: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"verdict": verdict, "reasoning": reasoning, "checks": checks, "predictions": predictions_out,
                "counts": counts or {},
                "positive_control": control, "runs": [r.get("id") for r in valid],
                "excluded_runs": [{"id": r.get("id"), "status": r.get("status")} for r in excluded]}

    valid = [r for r in runs if r.get("status") in VALID_STATUSES]
    excluded = [r for r in runs if r.get("status") not in VALID_STATUSES]
    if not targets:
        check("probe targets", False, "the hypothesis names no probe target", "invalid")
        return result("invalid", "A reachability hypothesis must name the code to probe (probe.targets).")
    skipped = ", ".join(f"#{r.get('id')} ({r.get('status')})" for r in excluded)
    check("valid runs", bool(valid),
          f"{len(valid)} of {len(runs)} run(s) completed ok" + (f"; excluded: {skipped}" if excluded else ""))
    counts = tally(valid, targets)
    if not valid:
        return result("inconclusive", "No run completed ok, so there are no counts to judge; run the hypothesis "
                                      "(again) and check why the runs failed.", counts)

    silent = [r.get("id") for r in valid if not r.get("probe_counts")]
    check("probe reported", not silent,
          "every run has counts from the probed processes" if not silent else
          f"run(s) {', '.join(f'#{i}' for i in silent)} have no probe counts at all: the probe was not injected "
          "or no process wrote its counts")
    if silent:
        return result("inconclusive", f"No probe counts were recorded for run(s) {', '.join(f'#{i}' for i in silent)}: "
                      "the probe did not report, so zero calls cannot be told from a missing probe. Check that the "
                      "deployment's restart received the probe environment (PYTHONPATH, WB_PROBE_*).", counts)

    unresolved = []
    for t in targets:
        entry = counts[t]
        ok = bool(entry["resolved"])
        n = entry["reporting_processes"]
        why = "; ".join(entry["details"]) or (f"unresolved in all {n} process report(s)" if n else
                                             "no process reported it")
        check(f"resolves: {t}", ok, f"instrumented or found in {entry['reporting_processes']} process report(s)"
              if ok else f"names no existing code object: {why}", "invalid")
        if not ok:
            unresolved.append(f"{t} ({why})")
    if unresolved:
        return result("invalid", "Target(s) name no existing code object, so their count is not a measurement: "
                      + "; ".join(unresolved) + ". Fix the target (package.module:Qualified.name).", counts)

    n_procs = len({(r.get("id"), row.get("pid")) for r in valid for row in r.get("probe_counts") or []})

    def where(target: str) -> str:
        hits = {p: c for p, c in counts[target]["by_process"].items() if c > 0}
        if not hits:
            return f"in all {n_procs} probed process(es)"
        return "in " + ", ".join(f"{_label(p)}: {c}" for p, c in hits.items())

    control_ok = False
    control_note = "no positive control declared"
    if control:
        per_run = counts[control]["by_run"]
        missed = [rid for rid, n in per_run.items() if n <= 0]
        control_ok = not missed
        control_note = (f"the positive control {_short(control)} was hit in every run "
                        f"({', '.join(f'#{k}: {v}' for k, v in per_run.items())}; {where(control)})" if control_ok else
                        f"the positive control {_short(control)} was not hit in run(s) "
                        f"{', '.join(f'#{k}' for k in missed)}: the workload did not exercise the surrounding path")
        check("positive control", control_ok, control_note)
    else:
        check("positive control", False, "no positive control declared: zero calls cannot be told from a workload "
                                         "that never reached the surrounding path")

    outcomes: list[str] = []
    reasons: list[str] = []
    for pred, target in zip(predictions, pred_targets):
        region = _region(pred)
        lo, hi = _bounds(region)
        n = counts[target]["total"] if target in counts else 0
        inside = (lo is None or n >= lo) and (hi is None or n <= hi)
        # Calls seen prove reachability (n meets a pure lower bound) or excess (n above an upper bound)
        # whatever the control did; a conclusion resting on few or no calls needs the control.
        by_hits = (inside and lo is not None and lo > 0 and hi is None) or (not inside and hi is not None and n > hi)
        what = f"calls to {_short(target)} {_describe(region)}"
        seen = f"{n} call(s) over {len(valid)} run(s) {where(target)}"
        if by_hits or control_ok:
            outcome = "supported" if inside else "falsified"
            check(f"prediction: {what}", inside, f"observed {seen}", "none")
            reasons.append(f"{_short(target)}: {seen}; predicted {_describe(region)}, so {outcome}"
                           + ("" if by_hits else f", because {control_note}"))
        else:
            outcome = "inconclusive"
            check(f"prediction: {what}", False, f"observed {seen}; undecidable: {control_note}")
            reasons.append(f"{_short(target)}: {seen}, but {control_note}, so {n} call(s) says nothing "
                           "about reachability; rerun with a workload that reaches the path (e.g. with the "
                           "feature that uses it enabled)")
        outcomes.append(outcome)
        predictions_out.append({
            "metric": f"calls:{target}", "target": target, "where": "every process", "region": _describe(region),
            "bounds": [lo, hi], "describe": what, "why": _get(pred, "why", "") or "", "basis": "all",
            "estimate": n, "interval": None, "outcome": outcome, "by_process": counts[target]["by_process"],
            "note": "" if outcome != "inconclusive" else control_note})

    from workbench.analysis.predictions import combine_outcomes

    return result(combine_outcomes(outcomes), ". ".join(reasons) + ".", counts)
