"""Per-arm summaries of every metric, and the verdict's reasoning in plain words: one paragraph as stored (the
reports show it) and a line per prediction and check as the CLI prints it."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from workbench.analysis import clustered, display, stats
from workbench.analysis.data import RunData, completed_units, metric_value
from workbench.analysis.predictions import _arm_effective, _fmt, pooled
from workbench.analysis.results import SHIFT_WITHOUT_INTERVAL, Analysis, Check, difference_arms, more_units_words
from workbench.registry.experiment import Experiment

if TYPE_CHECKING:
    from workbench.registry.hypothesis import Hypothesis


def arm_summary(arm: str, runs: list[RunData], expected: dict[str, str], named: set[str],
                exp: Experiment) -> dict[str, Any]:
    units = 0.0
    for r in runs:
        cu = completed_units(r, exp)
        if cu is not None:
            units += cu[0]
    metrics: dict[str, Any] = {}
    for name, spec in exp.metrics.items():
        if exp.metrics[exp.repeated(name)].kind == "proportion":
            pool = pooled(runs, name, exp)
            if pool["n"] > 0:
                lo, hi = stats.wilson(pool["k"], pool["n"])
                e = _arm_effective(pool["per_run"], pool["replayed"])
                metrics[name] = {"kind": "proportion", "k": pool["k"], "n": pool["n"], "rate": pool["k"] / pool["n"],
                                 "wilson": [lo, hi], "interval": list(clustered.rate_interval(e)),
                                 "interval_kind": clustered.interval_label(e),
                                 "method": e.method, "method_reason": e.reason, "n_effective": e.n_eff,
                                 "design_effect": e.design_effect, "dispersion": e.dispersion.phi,
                                 "runs": len(pool["used"]), "unknown_runs": len(pool["unknown"])}
            elif runs:
                metrics[name] = {"kind": "proportion", "k": None, "n": None, "rate": None, "runs": 0,
                                 "unknown_runs": len(pool["unknown"])}
            continue
        vals = [v for v in (metric_value(r, name, exp) for r in runs) if v is not None]
        if not vals:
            if runs:
                metrics[name] = {"kind": spec.kind, "runs": 0, "unknown_runs": len(runs)}
            continue
        m = stats.median_ci(vals)
        entry = {"kind": spec.kind, "runs": len(vals), "unknown_runs": len(runs) - len(vals), "median": m.median,
                 "interval": list(m.interval) if m.interval else None, "confidence": m.confidence,
                 "warning": m.warning}
        if spec.kind == "count":
            entry["total"] = sum(vals)
        metrics[name] = entry
    return {"variables": {v: expected[v] for v in sorted(named) if v in expected}, "runs": len(runs),
            "units": units, "metrics": metrics}


def _estimate(x: float | None, iv: Any) -> str:
    """An estimate with its interval's digits (display.estimate); "?" for none."""
    return _fmt(x) if x is None or math.isnan(x) or not iv else display.estimate(x, iv)


def _evidence(j: dict[str, Any]) -> str:
    """The strength of a decided prediction in words: the binomial tail for a rate (exact on whole counts; with the
    e-value that decided a sequential one), else the p-value that inverts its interval."""
    if j["outcome"] == "inconclusive":
        return ""
    if j.get("exact") and "e_for" in j:
        e = j["e_against"] if j["outcome"] == "falsified" else j["e_for"]
        bet = "; the runs' own rates decide it alone, whatever their order" if j.get("drift_robust") else ""
        return f" (e-value {e:.2g}; not corrected for the looks: {j['exact']}{bet})"
    if j.get("exact"):
        return f" ({j['exact']})"
    p = j.get("p_against") if j["outcome"] == "falsified" else j.get("p_for")
    return f" (p {display.p_is(p)})" if p is not None and p < 0.05 else ""


def _prediction_finding(j: dict[str, Any], arms_summary: dict[str, Any], isolates: str | None) -> str:
    """What the runs gave for a prediction, against its region, and on which unit: what follows "It predicted
    {describe}" in the reasoning and "predicts {describe}" on the prediction's line."""
    where = j["where"]
    if j["estimate"] is None:
        return f", which cannot be judged: {j['note']}."
    if isinstance(j.get("k"), (int, float)) and j.get("n"):
        arm = arms_summary.get(where, {})
        var = arm.get("variables", {}).get(isolates) if isolates else None
        label = f"the {where} arm" + (f" ({isolates}={var})" if var else "")
        body = (f"{label} had {display.fraction(j['k'], j['n'])} = {display.rate(j['estimate'])} ({j['interval_kind']} "
                f"{display.rate_interval(j['interval'], j['bounds'])}; {display.count(j.get('runs', 0), 'run')})")
    elif isinstance(j.get("k"), list):
        (ka, kb), (na, nb) = j["k"], j["n"]
        a, b = where.split(" - ")
        # Fisher's test pools the sessions: beside a run-level interval it says so, or it reads as the evidence.
        fisher = f", Fisher p {display.p_is(j['fisher_p'])}" if j.get("method") != "run-level" else \
            f"; Fisher p {display.p_is(j['fisher_p'])} over the pooled sessions, which takes them as independent"
        body = (f"{a} had {display.fraction(ka, na)} and {b} {display.fraction(kb, nb)}, a difference of "
                f"{display.points(j['estimate'])} ({j['interval_kind']} "
                f"{display.points_interval(j['interval'], j['bounds'])}{fisher})")
    elif isinstance(j.get("runs"), list):  # a Hodges-Lehmann shift between two arms (predictions._judge_shift)
        kind = f"{j['interval_kind']} {display.interval(j['interval'])}" if j["interval"] else SHIFT_WITHOUT_INTERVAL
        body = f"{where} gave a shift of {_estimate(j['estimate'], j['interval'])} ({kind})"
    else:
        kind = j.get("interval_kind") or ""
        shown = f"{kind} {display.interval(j['interval'])}" if j["interval"] else kind  # one run: no interval
        body = f"{where} gave a median of {_estimate(j['estimate'], j['interval'])} ({shown})"
    if j["outcome"] == "falsified":
        tail = f"entirely outside the predicted region {j['region']}"
    elif j["outcome"] == "supported":
        tail = f"entirely inside the predicted region {j['region']}"
    elif j.get("p_against_holm") is not None and (j.get("p_against") or 1.0) < stats.ALPHA:
        # Its interval is outside the region (p < alpha exactly then), but Holm over the family held it back.
        tail = f"entirely outside the predicted region {j['region']} ({j['note']})"
    else:
        # Wilson's interval clear of the region's bound while the exact test does not agree (clustered.rate_outcome).
        if j.get("exact_held"):
            tail = f"entirely {j['exact_held']} the predicted region {j['region']} by Wilson's interval"
        elif j.get("few_runs_held"):  # a median's range or a shift's interval clear of the bound, from too few runs
            runs = " and ".join(map(str, j["runs"])) if isinstance(j["runs"], list) else j["runs"]
            are = "run is" if runs == 1 else "runs are"
            tail = (f"entirely {j['few_runs_held']} the predicted region {j['region']}, but {runs} {are} too few to "
                    "decide it")
        elif isinstance(j.get("runs"), list) and not j["interval"]:  # a shift too few runs give no interval
            tail = f"which has no interval to place against the region {j['region']}"
        elif j.get("empty_interval"):
            tail = f"which cannot be judged against the region {j['region']}"
        else:
            tail = f"which straddles the region {j['region']}"
        if j.get("note"):
            tail += f" ({j['note']})"
        # A difference's estimates (runs, units) are per arm: each arm grows by them.
        each = " in each arm" if difference_arms(j.get("where")) else ""
        if j.get("reachable") is False:
            tail += ("; no verdict is reachable within the sequential budget, even were the remaining replicates "
                     "to come in at either end of its 99% (Wilson) interval (futility)")
        elif j.get("more_units_needed") and j.get("more_runs_needed") and j.get("runs_narrow_only"):
            tail += (f"; about {display.count(j['more_runs_needed'], 'more run')} of this size{each} "
                     f"({more_units_text(j, 'units', ' each')}) at this rate and spread would decide "
                     "it (with the runs as the unit, only more runs narrow it)")
        elif j.get("more_units_needed"):
            runs = f" ({display.count(j['more_runs_needed'], 'more run')} of this size)" \
                if j.get("more_runs_needed") else ""
            lifts = clustered.floor_lifts_clause() if j.get("floor_lifts") else ""
            tail += f"; about {more_units_text(j, 'more units', each)} at this rate would decide it{runs}{lifts}"
        elif j.get("more_runs_needed"):
            more = j["more_runs_needed"]
            tail += f"; {display.count(more, 'more run')}{each} {'is' if more == 1 else 'are'} needed"
    ptxt = _evidence(j)
    extra = f" Runs as the unit: {j['method_reason']}." if j.get("method_reason") else ""
    comp = j.get("completed")
    if comp and comp.get("n") and comp["n"] != j.get("n"):
        # Its interval is widened as the main one is: named as the main one's is, it reads as what it is.
        kind = f"{comp['interval_kind']} " if comp.get("interval_kind") else ""
        extra += (f" Over completed units only it is {display.fraction(comp['k'], comp['n'])} = "
                  f"{display.rate(comp['estimate'])} ({kind}{display.rate_interval(comp['interval'], j['bounds'])}), "
                  f"{comp['outcome']}.")
    return f"; {body}, {tail}{ptxt}.{extra}"


def more_units_text(j: dict[str, Any], word: str, each: str) -> str:
    """`results.more_units_words` of a judgement as a dict."""
    return more_units_words(j.get("where"), j["more_units_needed"], j.get("more_units_by_arm"), word, each)


def _opening(h: Hypothesis, result: Any) -> list[str]:
    """The sentences before the predictions: a sequential judgement, an A/A execution's noise floor."""
    parts = []
    smoke = getattr(result, "smoke", "")  # the stored paragraph is written from a draft, before the plan is known
    if smoke:
        parts.append(f"Smoke run: {smoke}; it sets the status only while no run of the planned size has a verdict.")
    if result.sequential:
        parts.append(f"Judged sequentially (always-valid tests, {display.count(result.replicates, 'replicate')} "
                     "so far).")
    if result.mode == "aa" and result.aa is not None:
        for m, v in result.aa.items():
            (ka, na), (kb, nb) = v["control"], v["control_aa"]
            parts.append(f"A/A execution: the control arm ran twice; {m} was {display.fraction(ka, na)} and "
                         f"{display.fraction(kb, nb)}, a difference interval of "
                         f"{display.points_interval(v['difference_interval'])} (Fisher p "
                         f"{display.p_is(v['fisher_p'])}), so the noise floor is "
                         f"{display.noise_floor(v['noise_floor'])}"
                         + ("; that interval excludes 0 between identical arms: a false alarm." if v["false_alarm"]
                            else "; no false alarm."))
        if not result.predictions:
            parts.append("It measures the harness, not the claim, so the claim stays undecided.")
    return parts


def _unknown(h: Hypothesis, arms: dict[str, Any]) -> list[str]:
    """Arms whose predicted metric stayed unknown are named, so nobody reads a silence as a zero."""
    parts = []
    for a, summ in arms.items():
        for m in sorted({p.metric for p in h.predicts}):
            info = summ.get("metrics", {}).get(m)
            if info and info.get("runs") == 0 and info.get("unknown_runs"):
                parts.append(f"In {a}, {m} is unknown ({display.count(info['unknown_runs'], 'run')} did not record "
                             "what it needs).")
    return parts


def reasoning_text(h: Hypothesis, exp: Experiment, result: Any, arms: dict[str, list[RunData]]) -> str:
    """The verdict in one paragraph, as stored with it and given by `--json` (`verdict_lines` prints it a line each)."""
    parts = [f"{h.id} is {result.verdict}.", *_opening(h, result)]
    for j in result.predictions:
        parts.append(f"It predicted {j['describe']}{_prediction_finding(j, result.arms, h.isolates)}")
    parts += _unknown(h, result.arms)
    held = [c for c in result.checks if c["passed"] is True and c["name"] != "data"]
    failed = [c for c in result.checks if c["passed"] is False]
    unknown = [c for c in result.checks if c["passed"] is None]
    if held:
        parts.append("Checks held: " + "; ".join(f"{c['name']} ({c['detail'].rstrip('.')})" for c in held) + ".")
    for c in failed:
        effect = {"invalid": " This makes the result invalid.",
                  "inconclusive": " This makes the result inconclusive."}.get(c["effect"], "")
        said = "Failed" if Check.from_dict(c).mark(result.verdict) == "FAIL" else "Flagged"  # as its line's mark
        parts.append(f"{said} — {c['name']}: {c['detail'].rstrip('.')}.{effect}")
    if unknown:
        parts.append("Not checkable: " + "; ".join(f"{c['name']} ({c['detail'].rstrip('.')})" for c in unknown) + ".")
    return " ".join(parts)


def verdict_lines(h: Hypothesis, analysis: Analysis) -> list[str]:
    """The verdict under its headline, a line each, as `hypothesis run`, `show` and `analyze` print it: the
    reasoning's facts (sequential or A/A, each prediction with its figures and method, an unknown metric), then one
    line per check with its mark. An analysis without judged predictions (reachability, no runs, an isolate probe)
    gives its reasoning as written, after its opening "ID is VERDICT."."""
    # A reachability judgement counts calls, not a metric's estimate: its reasoning says them in its own words.
    judged = analysis.predictions and h.kind != "reachability"
    if not judged and not (analysis.mode == "aa" and analysis.aa is not None):
        said = analysis.reasoning.removeprefix(f"{analysis.hypothesis_id} is {analysis.verdict}.").strip()
        lines = [said] if said and all(said != c.detail for c in analysis.checks) else []  # no runs: the data check
    else:
        # The judgements and arm summaries as stored: a fresh analysis reads as its stored copy will (`show`). An
        # unbounded side of a region is stored as null: only its finite bounds are read apart from.
        d = analysis.to_dict()
        for j in d["predictions"]:
            j["bounds"] = [b for b in j["bounds"] if b is not None]
        lines = _opening(h, analysis)
        lines += [f"[{j['outcome']}] predicts {j['describe']}{_prediction_finding(j, d['arms'], h.isolates)}"
                  for j in d["predictions"]]
        lines += _unknown(h, d["arms"])
    return [f"  {line}" for line in lines] + [f"  {c.line(analysis.verdict)}" for c in analysis.checks]
