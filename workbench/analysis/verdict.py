"""The verdict: match runs to a hypothesis's arms, judge its predictions, apply the validity checks.

`analyze()` is a pure function of the hypothesis, its experiment and the runs (reading them from a
store is `analysis.stored`'s job). It never raises on thin or broken data: no runs, unknown metrics,
zero units, all units lost all become an "inconclusive" or "invalid" verdict whose reasoning says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from workbench.analysis import display, stats, validity
from workbench.analysis.data import USABLE_STATUSES, RunData, counts_lost_units, has_completed_reading
from workbench.analysis.looks import completed_reading, reading_scale, region_bounds
from workbench.analysis.predictions import combine_outcomes, judge
from workbench.analysis.reachability import judge_reachability
from workbench.analysis.results import COMPLETED_KEYS, VERDICTS, Analysis, ArmSummary, Check, Judgement
from workbench.analysis.summary import arm_summary, reasoning_text
from workbench.registry.experiment import Experiment
from workbench.registry.hypothesis import Hypothesis
from workbench.secrets import MASK

__all__ = ["VERDICTS", "analyze", "arm_names", "hypothesis_sha"]


@dataclass
class _Draft:
    """The analysis while it is being built (plain dicts, as the checks and judgements produce them)."""

    hypothesis_id: str
    execution_id: int | None
    mode: str
    sequential: bool
    hypothesis_sha256: str
    verdict: str = "inconclusive"
    reasoning: str = ""
    checks: list[dict[str, Any]] = field(default_factory=list)
    predictions: list[dict[str, Any]] = field(default_factory=list)
    arms: dict[str, Any] = field(default_factory=dict)
    attrition: dict[str, Any] = field(default_factory=dict)
    drift: dict[str, Any] = field(default_factory=dict)
    aa: dict[str, Any] | None = None
    replicates: int = 0
    runs: dict[str, list[Any]] = field(default_factory=dict)
    excluded: list[str] = field(default_factory=list)
    run_ids: tuple[int, ...] = ()

    def freeze(self) -> Analysis:
        return Analysis(
            hypothesis_id=self.hypothesis_id, verdict=self.verdict, reasoning=self.reasoning,
            checks=tuple(Check.from_dict(c) for c in self.checks),
            predictions=tuple(Judgement.from_dict(j) for j in self.predictions),
            arms={a: ArmSummary.from_dict(s) for a, s in self.arms.items()}, attrition=self.attrition,
            drift=self.drift, aa=self.aa, execution_id=self.execution_id, mode=self.mode,
            sequential=self.sequential, replicates=self.replicates, runs=self.runs, excluded=tuple(self.excluded),
            hypothesis_sha256=self.hypothesis_sha256, run_ids=self.run_ids)


def arm_names(h: Hypothesis, mode: str) -> list[str]:
    """The arms an analysis matches runs to: an A/A execution adds a second copy of the control."""
    return list(h.arm_names) + (["control_aa"] if mode == "aa" and "control" in h.arms else [])


def hypothesis_sha(h: Hypothesis) -> str:
    from workbench.store import jsonx
    from workbench.store.records import sha256_text

    return sha256_text(jsonx.dumps(h.model_dump(mode="json")) or "")


def _matches(run: RunData, expected: Mapping[str, str], required: set[str], categorical: set[str]) -> bool:
    for var in required:
        if run.variables.get(var) != expected.get(var):
            return False
    for var in categorical:
        got = run.variables.get(var)
        if got is not None and var in expected and got != expected[var]:
            return False
    return True


def _assign(d: _Draft, h: Hypothesis, exp: Experiment, runs: Sequence[RunData],
            assignments: Mapping[str, Mapping[str, str]]) -> tuple[dict[str, list[RunData]], dict[str, list[RunData]]]:
    """Runs per arm (usable, failed); runs of another experiment version are left out with a check."""
    names = list(assignments)
    named = set(h.hold) | ({h.isolates} if h.isolates else set())
    categorical = {v for v, spec in exp.variables.items() if spec.values is not None}
    arms: dict[str, list[RunData]] = {a: [] for a in names}
    failed: dict[str, list[RunData]] = {a: [] for a in names}
    version_skipped: list[str] = []
    for r in runs:
        if r.experiment_version is not None and r.experiment_version != exp.version:
            version_skipped.append(f"{r.name} (v{r.experiment_version})")
            continue
        arm = None
        if d.execution_id is not None and r.execution_id == d.execution_id and r.arm is not None:
            arm = r.arm if r.arm in arms else None
            if arm is None:
                d.excluded.append(f"{r.name}: arm {r.arm!r} is not an arm of {h.id}")
                continue
        else:
            arm = next((a for a in names if a != "control_aa" and
                        _matches(r, assignments[a], named | set(h.arms.get(a, {})), categorical)), None)
        if arm is not None:
            (arms if r.status in USABLE_STATUSES else failed)[arm].append(r)
    for a in names:  # an attempt a kill interrupted and --resume redid is history, not a run left out
        redone = {(r.execution_id, r.replicate) for r in arms[a] if r.execution_id is not None}
        failed[a] = [r for r in failed[a]
                     if not (r.status == "interrupted" and (r.execution_id, r.replicate) in redone)]
    if version_skipped:
        d.checks.append(validity.check("experiment version", None,
                                       f"left out {display.count(len(version_skipped), 'run')} made by another "
                                       f"version of {exp.id} (this is v{exp.version}): "
                                       f"{', '.join(version_skipped[:5])}"))
    return arms, failed


def analyze(hypothesis: Hypothesis, experiment: Experiment, runs: Sequence[RunData], *,
            assignments: Mapping[str, Mapping[str, str]], configs: Mapping[str, str] | None = None,
            execution_id: int | None = None, mode: str = "pooled", sequential: bool = False,
            per_replicate: frozenset[str] = frozenset(), budget: int | None = None) -> Analysis:
    """Decide `hypothesis` from `runs`.

    `assignments` gives each arm's expected variables (`arm_names()` lists the arms); `configs` the
    rendered config text per config hash. With `execution_id`, that execution's runs are matched by
    their arm label and any other run by its variables; `sequential` judges by always-valid tests.
    `per_replicate` names the variables that take a fresh value in every replicate (a workload seed):
    they are not part of what an arm sets. `budget`: the most replicates a sequential execution may run
    (its own, which `--replicates` can set; default the design's max_replicates).
    """
    h, exp = hypothesis, experiment
    # A secret variable's value is stored masked (workbench.secrets): the runs are matched on what they record.
    secret = {name for name, spec in exp.variables.items() if spec.secret}
    assignments = {a: {k: (MASK if k in secret else v) for k, v in e.items() if k not in per_replicate}
                   for a, e in assignments.items()}
    d = _Draft(hypothesis_id=h.id, execution_id=execution_id, mode=mode, sequential=bool(sequential),
               hypothesis_sha256=hypothesis_sha(h))
    arms, failed = _assign(d, h, exp, runs, assignments)
    names = list(assignments)
    named = set(h.hold) | ({h.isolates} if h.isolates else set())
    d.runs = {a: [r.label or r.id for r in rs] for a, rs in arms.items()}
    # What the verdict rests on: every run matched to an arm, failed ones included (they are attrition).
    d.run_ids = tuple(sorted({r.id for a in arms for r in arms[a] + failed[a]}))
    d.replicates = max((len({r.replicate for r in rs + failed[a] if r.replicate is not None})
                        for a, rs in arms.items()), default=0)
    for a in names:
        d.arms[a] = arm_summary(a, arms[a], dict(assignments[a]), named | set(h.arms.get(a, {})), exp)
    if h.kind == "reachability":
        return _reachability(d, h, arms, failed)
    if not any(arms[a] for a in names):
        why = (f"No usable run of experiment {exp.id} matches the arms of {h.id}"
               + (f" in execution {execution_id}" if execution_id is not None else "")
               + (f" ({display.count(sum(map(len, failed.values())), 'run')} failed)" if any(failed.values()) else "")
               + ". Import evidence, or run it: wb hypothesis run " + h.id)
        # Runs that ran and could not measure make the result invalid (the apparatus failed); no run at all
        # is no data yet.
        word = "invalid" if any(failed.values()) else "inconclusive"
        d.checks.append(validity.check("data", False, why, word))
        d.verdict, d.reasoning = word, f"{h.id} is {word}. {why}"
        return d.freeze()
    aa_only = _validity(d, h, exp, arms, failed, assignments, configs or {}, per_replicate)
    disagree = _predictions(d, h, exp, arms, aa_only, budget)
    _quality(d, h, exp, arms, failed, disagree)
    verdict = combine_outcomes([j["outcome"] for j in d.predictions])
    if aa_only:
        verdict = "inconclusive"  # an A/A execution measures the noise floor, not the claim
    _drift_hold_released(d, verdict)
    effects = [c["effect"] for c in d.checks if c["passed"] is not True]
    if "invalid" in effects:
        verdict = "invalid"
    elif "inconclusive" in effects and verdict in ("supported", "falsified"):
        verdict = "inconclusive"
    d.verdict = verdict
    d.reasoning = reasoning_text(h, exp, d, arms)
    return d.freeze()


def _drift_hold_released(d: _Draft, verdict: str) -> None:
    """Possible drift holds a verdict that assumed exchangeable runs, not one the bet on run rates reaches
    alone (valid whatever the runs' order): a falsification when one falsified prediction is so decided, a
    support when every prediction is."""
    decided = [j for j in d.predictions if j["outcome"] == verdict]
    robust = [j["describe"] for j in decided if j.get("drift_robust")]
    if verdict not in ("supported", "falsified") or not robust or \
            (verdict == "supported" and len(robust) < len(d.predictions)):
        return
    for c in d.checks:
        if c["name"] == "drift" and c["effect"] == "inconclusive":
            validity.release_drift_hold(c, robust, verdict)


def _validity(d: _Draft, h: Hypothesis, exp: Experiment, arms: dict[str, list[RunData]],
              failed: dict[str, list[RunData]], assignments: Mapping[str, Mapping[str, str]],
              configs: Mapping[str, str], per_replicate: frozenset[str]) -> bool:
    """The checks on how the runs were made; True when the execution is an A/A one only."""
    # The arms the execution was to run (an A/A one runs the control twice): one without a completed run holds
    # the verdict, whatever arm the predictions read (each prediction is still judged in the arms that have runs).
    design = [a for a in assignments if d.mode != "aa" or a in ("control", "control_aa")]
    d.checks.append(validity.data(arms, failed, design))
    d.checks.append(validity.isolation(h, arms, {a: dict(v) for a, v in assignments.items()},
                                       by_arm_name=d.execution_id is not None, per_replicate=per_replicate))
    looks = validity.looks([r for rs in arms.values() for r in rs], d.execution_id)
    if looks is not None:
        d.checks.append(looks)
    d.checks.append(validity.fingerprints(arms))
    d.checks.append(validity.configs(dict(configs), arms, aa=d.mode == "aa", per_replicate=per_replicate))
    # An A/A execution runs the control twice and nothing else: it measures the harness, not the claim.
    aa_only = d.mode == "aa" and not any(arms[a] for a in h.arm_names if a != "control")
    for g in h.requires:
        if aa_only and g.arm not in (None, "control"):
            continue
        d.checks.append(validity.guard(g, arms, exp, list(h.arm_names)))
    return aa_only


def _predictions(d: _Draft, h: Hypothesis, exp: Experiment, arms: dict[str, list[RunData]],
                 aa_only: bool, budget: int | None = None) -> list[str]:
    """One judgement per (prediction, arm); several make a family (Holm / Bonferroni). Returns the
    predictions whose outcome differs between all units and completed units."""
    items = []
    for p in ([] if aa_only else h.predicts):
        for a in ([None] if (p.arm or p.difference) else list(h.arm_names)):
            items.append((p, p.arm if p.arm else a))
    family = len(items)
    budget = budget or (h.design.max_replicates if h.design and h.design.max_replicates else None) \
        or exp.design.max_replicates
    disagree: list[str] = []
    for p, a in items:
        j = judge(p, a, arms, exp, sequential=d.sequential, family=family, looks=budget)
        spec = exp.metrics.get(exp.repeated(p.metric))
        # Over completed units only: the reading without the lost units, for a rate that can have one.
        if spec is not None and has_completed_reading(spec, exp, (r for a in arms.values() for r in a)):
            jc = judge(p, a, arms, exp, basis="completed", sequential=d.sequential, family=family, looks=budget)
            j["completed"] = {k: jc.get(k) for k in COMPLETED_KEYS}
            if jc["outcome"] != j["outcome"] and jc.get("n"):
                disagree.append(f"{j['describe']} ({j['outcome']} over all units, {jc['outcome']} over completed"
                                + (f"; {_completed_needs(j, jc)})" if j["outcome"] != "inconclusive" else ")"))
            elif jc["outcome"] != j["outcome"] and j["outcome"] != "inconclusive" and not jc.get("n"):
                disagree.append(f"{j['describe']} (no completed units)")
        d.predictions.append(j)
    # Holm over the predictions that were judged: one without data can never be falsified, so it is
    # no member of the family whose false falsifications Holm bounds (and never enters as p = 1).
    tested = [j for j in d.predictions if j["p_against"] is not None]
    if not d.sequential and len(tested) > 1:
        family = len(tested)
        for j, adj in zip(tested, stats.holm([j["p_against"] for j in tested])):
            j["p_against_holm"] = adj
            if j["outcome"] == "falsified" and adj >= stats.ALPHA:
                j["outcome"] = "inconclusive"
                j["note"] = (j["note"] + " " if j["note"] else "") + \
                    (f"outside its region, but not after Holm correction over {family} predictions "
                     f"(p {display.p_is(adj)})")
    missing = [j["describe"] + ": " + j["note"] for j in d.predictions if j["estimate"] is None]
    if missing:
        d.checks.append(validity.check("metrics recorded", False, "; ".join(missing), "inconclusive"))
    return disagree


def _completed_needs(j: dict[str, Any], jc: dict[str, Any]) -> str:
    """What the completed units alone say of a prediction the units as a whole decided, and what would decide it
    there (looks.completed_reading): while they disagree, the attrition check holds the verdict."""
    scale = reading_scale(j.get("where"), jc.get("k") is not None and jc.get("n") is not None)
    return completed_reading(jc.get("k"), jc.get("n"), jc.get("estimate"), jc.get("interval"),
                             region_bounds(j["bounds"]), scale)


def _quality(d: _Draft, h: Hypothesis, exp: Experiment, arms: dict[str, list[RunData]],
             failed: dict[str, list[RunData]], disagree: list[str]) -> None:
    """Attrition, drift between replicates and (for A/A executions) the noise floor."""
    metrics = sorted({p.metric for p in h.predicts})
    specs = {p.metric: exp.metrics.get(exp.repeated(p.metric)) for p in h.predicts}
    compared = any(s is not None and has_completed_reading(s, exp, (r for a in arms.values() for r in a))
                   for s in specs.values())
    lost_rates = sorted(m for m, s in specs.items() if s is not None and s.kind == "proportion"
                        and counts_lost_units(s, exp))
    # A prediction the units as a whole decided while the completed ones alone do not (or decide otherwise): the
    # attrition check is what holds the verdict, and says what would let it decide.
    holds = any(j.get("completed") and j["completed"]["outcome"] != j["outcome"] and j["completed"].get("n")
                and j["outcome"] != "inconclusive" for j in d.predictions)
    att_check, d.attrition = validity.attrition(arms, failed, exp, disagree, compared, lost_rates, holds=holds)
    d.checks.append(att_check)
    # an A/A execution's noise floor reads both control copies, whatever arm the predictions name
    drift_check, d.drift = validity.drift(arms, exp, metrics, None if d.mode == "aa" else arms_read(h, arms))
    d.checks.append(drift_check)
    if d.mode == "aa":
        aa_check, d.aa = validity.aa_noise(arms, exp, metrics, d.sequential)
        d.checks.append(aa_check)


def arms_read(h: Hypothesis, arms: Iterable[str]) -> dict[str, set[str]]:
    """metric -> the arms its predictions read."""
    read: dict[str, set[str]] = {}
    for p in h.predicts:
        read.setdefault(p.metric, set()).update(p.reads(arms))
    return read


def unread_arms(h: Hypothesis, analysis: Analysis) -> list[str] | None:
    """The arms no run matched when no prediction has evidence (its one arm, either arm of its difference, or every
    arm of one that names none has no run), else None: an analysis of such runs decides nothing, and a verdict
    recorded from it would be the status. A failed run matched its arm (attrition speaks for it); where no run is
    usable, the data check does."""
    if not any(analysis.runs.values()):
        return None
    failed = analysis.attrition.get("arms", {})
    empty = {a for a in h.arm_names if not analysis.runs.get(a) and not failed.get(a, {}).get("runs_failed")}

    def unread(p: Any) -> bool:
        reads = p.reads(h.arm_names)
        return reads <= empty if p.arm is None and not p.difference else bool(reads & empty)

    if not h.predicts or not empty or not all(unread(p) for p in h.predicts):
        return None
    return sorted(empty)


def _reachability(d: _Draft, h: Hypothesis, arms: dict[str, list[RunData]],
                  failed: dict[str, list[RunData]]) -> Analysis:
    # The probe analysis judges run status itself, so it gets the failed runs too.
    runs = sorted((r for group in (arms, failed) for rs in group.values() for r in rs), key=lambda r: r.id)
    probed = judge_reachability(h, runs)
    frozen = d.freeze()
    return replace(frozen, verdict=probed.verdict if probed.verdict in VERDICTS else "inconclusive",
                   checks=frozen.checks + probed.checks, predictions=probed.predictions,
                   reasoning=probed.reasoning or f"{h.id} is {probed.verdict}.", counts=probed.counts)
