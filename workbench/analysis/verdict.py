"""The verdict: match stored runs to a hypothesis's arms, judge its predictions, apply the validity checks.

`analyze()` never raises on thin or broken data: no runs, unknown metrics, zero units, all units
lost all become an "inconclusive" or "invalid" verdict whose reasoning says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from workbench.analysis import stats, validity
from workbench.analysis.data import USABLE_STATUSES, RunData, load_runs
from workbench.analysis.predictions import combine_outcomes, judge
from workbench.analysis.summary import arm_summary, reasoning_text
from workbench.errors import BadInput

VERDICTS = ("supported", "falsified", "inconclusive", "invalid")


def _safe(x: Any) -> Any:
    """JSON-safe copy: no inf/nan, no tuples, no sets."""
    if isinstance(x, float):
        return None if (math.isnan(x) or math.isinf(x)) else x
    if isinstance(x, dict):
        return {str(k): _safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set)):
        return [_safe(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        return _safe(x.item())
    return x


@dataclass
class Analysis:
    hypothesis_id: str
    verdict: str
    reasoning: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    predictions: list[dict[str, Any]] = field(default_factory=list)
    arms: dict[str, Any] = field(default_factory=dict)
    attrition: dict[str, Any] = field(default_factory=dict)
    drift: dict[str, Any] = field(default_factory=dict)
    aa: dict[str, Any] | None = None
    execution_id: int | None = None
    mode: str = "pooled"
    sequential: bool = False
    replicates: int = 0
    runs: dict[str, list[Any]] = field(default_factory=dict)
    excluded: list[str] = field(default_factory=list)
    hypothesis_sha256: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return _safe({"hypothesis_id": self.hypothesis_id, "execution_id": self.execution_id, "mode": self.mode,
                      "sequential": self.sequential, "verdict": self.verdict, "reasoning": self.reasoning,
                      "checks": self.checks, "predictions": self.predictions, "arms": self.arms,
                      "attrition": self.attrition, "drift": self.drift, "aa": self.aa,
                      "replicates": self.replicates, "runs": self.runs, "excluded": self.excluded})


def _matches(run: RunData, expected: dict[str, str], required: set[str], categorical: set[str]) -> bool:
    for var in required:
        if run.variables.get(var) != expected.get(var):
            return False
    for var in categorical:
        got = run.variables.get(var)
        if got is not None and var in expected and got != expected[var]:
            return False
    return True


def _hypothesis_sha(h: Any) -> str:
    from workbench.store import jsonx
    from workbench.store.records import sha256_text

    return sha256_text(jsonx.dumps(h.model_dump(mode="json")) or "")


def analyze(session: Any, registry: Any, hypothesis_id: str, *, execution_id: int | None = None,
            include_imported: bool | None = None, sequential: bool | None = None,
            overrides: dict[str, str] | None = None) -> Analysis:
    """Decide `hypothesis_id` from stored runs.

    Without `execution_id` every stored run of the experiment whose recorded variables match an arm
    is used, imported evidence included. With it, that execution's runs (by their arm label), and
    imported evidence only when `include_imported=True` is passed. `sequential` defaults to the
    execution's mode; sequential executions are judged by always-valid tests.
    """
    from workbench.store import jsonx
    from workbench.store.models import Execution

    h = registry.hypothesis(hypothesis_id)
    exp = registry.experiment_for(h)
    execution = None
    if execution_id is not None:
        execution = session.get(Execution, execution_id)
        if execution is None:
            raise BadInput(f"no execution {execution_id} in the store", hint="wb runs list shows the executions")
    mode = execution.mode if execution is not None else "pooled"
    if include_imported is None:
        include_imported = execution is None
    if sequential is None:
        sequential = mode == "sequential"
    if overrides is None and execution is not None:
        overrides = jsonx.loads(execution.overrides_json, {}) or {}
    result = Analysis(hypothesis_id=h.id, verdict="inconclusive", reasoning="", execution_id=execution_id,
                      mode=mode, sequential=bool(sequential), hypothesis_sha256=_hypothesis_sha(h))

    arm_names = list(h.arm_names) + (["control_aa"] if mode == "aa" and "control" in h.arms else [])
    expected: dict[str, dict[str, str]] = {}
    for a in arm_names:
        try:
            expected[a] = registry.arm_assignment(h, "control" if a == "control_aa" else a, overrides)
        except BadInput:
            expected[a] = registry.arm_assignment(h, "control" if a == "control_aa" else a)
    # A per-replicate variable (a workload seed) takes a fresh value in every replicate unless
    # something fixes it: it is not part of what an arm sets.
    from workbench.runner.plan import per_replicate_names

    drawn = set(per_replicate_names(exp, h, overrides or {}))
    expected = {a: {k: v for k, v in e.items() if k not in drawn} for a, e in expected.items()}
    named = set(h.hold) | ({h.isolates} if h.isolates else set())
    categorical = {v for v, spec in exp.variables.items() if spec.values is not None}

    runs = load_runs(session, exp, execution_id=execution_id, include_imported=bool(include_imported))
    arms: dict[str, list[RunData]] = {a: [] for a in arm_names}
    failed: dict[str, list[RunData]] = {a: [] for a in arm_names}
    version_skipped: list[str] = []
    for r in runs:
        if r.experiment_version is not None and r.experiment_version != exp.version:
            version_skipped.append(f"{r.name} (v{r.experiment_version})")
            continue
        arm = None
        if execution_id is not None and r.execution_id == execution_id and r.arm is not None:
            arm = r.arm if r.arm in arms else None
            if arm is None:
                result.excluded.append(f"{r.name}: arm {r.arm!r} is not an arm of {h.id}")
                continue
        else:
            for a in arm_names:
                if a == "control_aa":
                    continue
                if _matches(r, expected[a], named | set(h.arms.get(a, {})), categorical):
                    arm = a
                    break
        if arm is None:
            continue
        (arms if r.status in USABLE_STATUSES else failed)[arm].append(r)
    result.runs = {a: [r.label or r.id for r in rs] for a, rs in arms.items()}
    result.replicates = max((len({r.replicate for r in rs + failed[a] if r.replicate is not None})
                             for a, rs in arms.items()), default=0)
    checks: list[dict[str, Any]] = []
    if version_skipped:
        checks.append(validity.check("experiment version", None,
                                     f"left out {len(version_skipped)} run(s) made by another version of "
                                     f"{exp.id} (this is v{exp.version}): {', '.join(version_skipped[:5])}"))
    for a in arm_names:
        result.arms[a] = arm_summary(a, arms[a], expected[a], named | set(h.arms.get(a, {})), exp)

    if h.kind == "reachability":
        return _reachability(session, h, arms, failed, result, checks)

    used = [a for a in arm_names if arms[a]]
    if not used:
        why = (f"No usable run of experiment {exp.id} matches the arms of {h.id}"
               + (f" in execution {execution_id}" if execution_id is not None else "")
               + (f" ({sum(len(v) for v in failed.values())} run(s) failed)" if any(failed.values()) else "")
               + ". Run it (wb hypothesis run " + h.id + ") or import evidence first.")
        checks.append(validity.check("data", False, why, "inconclusive"))
        result.checks = checks
        result.reasoning = f"{h.id} is inconclusive. {why}"
        return result
    checks.append(validity.check("data", True, ", ".join(f"{a}: {len(arms[a])} run(s)" for a in arm_names)))
    checks.append(validity.isolation(h, arms, expected, by_arm_name=execution_id is not None,
                                     per_replicate=drawn))
    checks.append(validity.fingerprints(arms))
    checks.append(validity.configs(session, arms, aa=mode == "aa", per_replicate=drawn))
    # An A/A execution runs the control twice and nothing else: it measures the harness, not the claim.
    aa_only = mode == "aa" and not any(arms[a] for a in h.arm_names if a != "control")
    for g in h.requires:
        if aa_only and g.arm not in (None, "control"):
            continue
        checks.append(validity.guard(g, arms, exp, list(h.arm_names)))

    # Predictions: one judgement per (prediction, arm); several make a family (Holm / Bonferroni).
    items = []
    for p in ([] if aa_only else h.predicts):
        targets = [None] if (p.arm or p.difference) else list(h.arm_names)
        for a in targets:
            items.append((p, p.arm if p.arm else a))
    family = len(items)
    budget = (h.design.max_replicates if h.design and h.design.max_replicates else None) or exp.design.max_replicates
    judged = []
    disagree = []
    for p, a in items:
        j = judge(p, a, arms, exp, sequential=bool(sequential), family=family, looks=budget)
        spec = exp.metrics.get(p.metric)
        if spec is not None and spec.kind == "proportion" and exp.unit is not None and exp.unit.completed:
            jc = judge(p, a, arms, exp, basis="completed", sequential=bool(sequential), family=family, looks=budget)
            j["completed"] = {k: jc.get(k) for k in ("k", "n", "estimate", "interval", "outcome", "note")}
            if jc["outcome"] != j["outcome"] and jc.get("n"):
                disagree.append(f"{j['describe']} ({j['outcome']} over all units, {jc['outcome']} over completed)")
            elif jc["outcome"] != j["outcome"] and j["outcome"] != "inconclusive" and not jc.get("n"):
                disagree.append(f"{j['describe']} (no completed units)")
        judged.append(j)
    if not bool(sequential) and family > 1:
        ps = [j["p_against"] if j["p_against"] is not None else 1.0 for j in judged]
        for j, adj in zip(judged, stats.holm(ps)):
            j["p_against_holm"] = adj
            if j["outcome"] == "falsified" and adj >= stats.ALPHA:
                j["outcome"] = "inconclusive"
                j["note"] = (j["note"] + " " if j["note"] else "") + \
                    f"outside its region, but not after Holm correction over {family} predictions (p = {adj:.2g})"
    result.predictions = judged
    missing = [j["describe"] + ": " + j["note"] for j in judged if j["estimate"] is None]
    if missing:
        checks.append(validity.check("metrics recorded", False, "; ".join(missing), "inconclusive"))

    att_check, result.attrition = validity.attrition(arms, failed, exp, disagree)
    checks.append(att_check)
    drift_check, result.drift = validity.drift(arms, exp, sorted({p.metric for p in h.predicts}))
    checks.append(drift_check)
    if mode == "aa":
        aa_check, result.aa = validity.aa_noise(arms, exp, sorted({p.metric for p in h.predicts}), bool(sequential))
        checks.append(aa_check)

    verdict = combine_outcomes([j["outcome"] for j in judged])
    if aa_only:
        verdict = "inconclusive"  # an A/A execution measures the noise floor, not the claim
    effects = [c["effect"] for c in checks if c["passed"] is not True]
    if "invalid" in effects:
        verdict = "invalid"
    elif "inconclusive" in effects and verdict in ("supported", "falsified"):
        verdict = "inconclusive"
    result.verdict = verdict
    result.checks = checks
    result.reasoning = reasoning_text(h, exp, result, arms)
    return result


def _reachability(session: Any, h: Any, arms: dict[str, list[RunData]], failed: dict[str, list[RunData]],
                  result: Analysis, checks: list[dict[str, Any]]) -> Analysis:
    # The probe analysis judges run status itself, so it gets the failed runs too.
    run_ids = sorted(r.id for group in (arms, failed) for rs in group.values() for r in rs)
    try:
        from workbench.probes.verdict import analyze_reachability
    except ImportError:
        checks.append(validity.check("probe", None, "probe analysis unavailable in this build", "inconclusive"))
        result.checks = checks
        result.reasoning = f"{h.id} is inconclusive: probe analysis unavailable in this build."
        return result
    out = analyze_reachability(session, hypothesis=h, run_ids=run_ids, execution_id=result.execution_id)
    get = out.get if isinstance(out, dict) else (lambda k, d=None: getattr(out, k, d))
    verdict = get("verdict", "inconclusive")
    result.verdict = verdict if verdict in VERDICTS else "inconclusive"
    result.checks = checks + list(get("checks", []) or [])
    result.predictions = list(get("predictions", []) or [])
    result.reasoning = get("reasoning", "") or f"{h.id} is {result.verdict}."
    return result


def record_verdict(session: Any, analysis: Analysis, *, execution_id: int | None = None) -> Any:
    """Store the analysis as a Verdict row (reasoning, checks, and the full analysis as details)."""
    from workbench.store.records import add_verdict

    return add_verdict(session, hypothesis_id=analysis.hypothesis_id, verdict=analysis.verdict,
                       reasoning=analysis.reasoning, checks=_safe(analysis.checks), details=analysis.to_dict(),
                       execution_id=execution_id if execution_id is not None else analysis.execution_id,
                       hypothesis_sha256=analysis.hypothesis_sha256)

