"""The context of one hypothesis page: definition, arms and config diff, charts, verdict, checks, runs."""

from __future__ import annotations

import difflib
import math
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from workbench.analysis import display
from workbench.analysis.results import SHIFT_WITHOUT_INTERVAL, Analysis, Judgement, more_units_words
from workbench.analysis.results import Check as AnalysisCheck
from workbench.analysis.run_metrics import definitions, derived_value
from workbench.errors import BadInput
from workbench.report import bridge, charts, stats
from workbench.report.context import (ArmRow, AssumptionView, AttritionRow, ChartView, Check, DiffView,
                                      ExecutionView, HypothesisContext, Link, Page, PredictionView, ProbeRow,
                                      ReviewView, RunRow, VerdictView)
from workbench.report.data import StoreData

if TYPE_CHECKING:
    from workbench.registry.experiment import Experiment
    from workbench.registry.hypothesis import Hypothesis
    from workbench.registry.folder import Registry


EVIDENCE_STATUSES = {"ok", "done", "historical"}
MAX_RUN_ROWS = 300
MAX_METRIC_COLUMNS = 5
MAX_TICKS_PER_ARM = 60


def evidence_runs(data: StoreData, hid: str) -> tuple[list[dict[str, Any]], int | None]:
    """The runs the status's verdict rests on: those its recorded evidence names (a pooled `analyze` names
    imported runs, which belong to no hypothesis), else its execution's runs, else the latest execution's,
    else all of the hypothesis's runs."""
    verdict = data.verdicts.get(hid)
    named = _evidence_uuids(verdict)
    if named:
        runs = [r for r in data.runs.values() if r["uuid"] in named and r["status"] in EVIDENCE_STATUSES]
        return sorted(runs, key=lambda r: r["id"]), verdict.get("execution_id") if verdict else None
    runs = [r for r in data.hypothesis_runs(hid) if r["status"] in EVIDENCE_STATUSES]
    ex_ids = [r["execution_id"] for r in runs if r["execution_id"] is not None]
    chosen = verdict.get("execution_id") if verdict else None
    if chosen is None or chosen not in ex_ids:
        chosen = max(ex_ids) if ex_ids else None
    if chosen is None:
        return runs, None
    return [r for r in runs if r["execution_id"] == chosen], chosen


def pooled_other_hypotheses(data: StoreData, hid: str) -> bool:
    """Whether the status's verdict is a pooled one that read other hypotheses' runs (`analyze --any-hypothesis`):
    as it records, or, for a verdict recorded before it did, as its evidence shows (a run of another hypothesis)."""
    verdict = data.verdicts.get(hid) or {}
    if verdict.get("execution_id") is not None:
        return False
    if (verdict.get("details") or {}).get("any_hypothesis") is True:
        return True
    named = _evidence_uuids(verdict)
    return any(r["uuid"] in named and r["hypothesis_id"] not in (None, hid) for r in data.runs.values())


def _evidence_uuids(verdict: dict[str, Any] | None) -> set[str]:
    """The run keys a stored verdict's evidence names ([uuid, content digest] pairs)."""
    evidence = (verdict or {}).get("evidence")
    runs = evidence.get("runs") if isinstance(evidence, dict) else None
    return {str(r[0]) for r in runs or [] if isinstance(r, (list, tuple)) and r}


def metric_descriptions(exp: Experiment | None) -> dict[str, str]:
    """name -> what the metric measures, on one line, for every metric the experiment describes."""
    if exp is None:
        return {}
    return {name: " ".join(m.description.split()) for name, m in exp.metrics.items() if m.description.strip()}


def run_metric(exp: Experiment | None, run: dict[str, Any], metric: str) -> float | None:
    """A run's value of `metric`: stored, or derived as the experiment declares (same_as, numerator/denominator),
    by the rule `wb runs show`, the runs page and the run pages derive it with: only by the experiment and version
    the run recorded (a past run of another version is shown as measured). The runner stores what it collects;
    proportions and aliases are derived when read."""
    value = run["metrics"].get(metric)
    if value is not None or exp is None:
        return value
    defined_by, _ = definitions(run["id"], run["experiment_id"], run["experiment_version"], {exp.id: exp})
    return derived_value(exp, run["metrics"], metric) if defined_by is exp else None


def metric_order(h: Hypothesis, exp: Experiment | None, runs: list[dict[str, Any]]) -> list[str]:
    """Predicted metrics first, then guards, then the rest the runs carry (declared order, then by name)."""
    order: list[str] = []
    probed = [f"calls:{p.target}" for p in h.predicts if p.target]  # the runner's name for a probe count
    if h.probe is not None and h.probe.positive_control:
        probed.append(f"calls:{h.probe.positive_control}")
    for name in probed + [p.metric for p in h.predicts if not p.target] + [g.metric for g in h.requires]:
        if name not in order:
            order.append(name)
    stored = {m for r in runs for m in r["metrics"]}
    declared = list(exp.metrics) if exp is not None else []
    for name in declared + sorted(stored):
        if name not in order:
            order.append(name)
    return [m for m in order if m in stored or any(run_metric(exp, r, m) is not None for r in runs)]


def arm_estimate(exp: Experiment | None, metric: str, runs: list[dict[str, Any]]) -> stats.Estimate:
    spec = exp.metrics.get(metric) if exp is not None else None
    if spec is not None and spec.same_as:
        return arm_estimate(exp, spec.same_as, runs)
    if spec is not None and spec.kind == "proportion":
        from workbench.analysis.predictions import workload_replayed

        rows = [(r, run_metric(exp, r, spec.numerator), run_metric(exp, r, spec.denominator)) for r in runs]
        rows = [(r, k, n) for r, k, n in rows if k is not None and n is not None]
        if rows:
            # Whether these runs replayed one workload, by the analysis' rule over the runs it would pool.
            replayed = workload_replayed(exp, [(r.get("execution_id"), r.get("replicate"), r.get("id"),
                                                r.get("variables")) for r, _, _ in rows])
            return stats.proportion([(k, n) for _, k, n in rows], replayed)
    return stats.median_interval([v for v in (run_metric(exp, r, metric) for r in runs) if v is not None])


def prediction_text(p: Any, exp: Experiment | None) -> str:
    """A prediction as written, with a proportion's region also in percent (a difference's in points), as the
    verdict's text gives it: corruption_rate (treatment) <= 0.02 (2%)."""
    return p.describe() + _beside(p, exp)


def _beside(p: Any, exp: Experiment | None) -> str:
    rate = not p.target and display.is_proportion(exp, p.metric)
    return display.beside_region(p.region.bounds(), display.scale("proportion" if rate else None, bool(p.difference)))


def _region_bands(h: Hypothesis, metric: str, exp: Experiment | None) -> list[charts.RegionBand]:
    out = []
    for p in h.predicts:
        if (p.metric == metric and not p.target and p.difference is None) \
                or (p.target and metric == f"calls:{p.target}"):
            lo, hi = p.region.bounds()
            out.append(charts.RegionBand(p.arm, lo, hi, "predicted", p.region.describe() + _beside(p, exp)))
    for g in h.requires:
        if g.metric == metric:
            lo, hi = g.bounds()
            out.append(charts.RegionBand(g.arm, lo, hi, "required", display.guard(g, exp)))
    return out


def _relation(lo: float | None, hi: float | None, region: Any, kind: str | None) -> str:
    """Where an interval lies against a predicted region, judged as the analysis judges it."""
    from workbench.analysis import regions

    if lo is None or hi is None:
        return ""
    rlo, rhi = region.bounds()
    rel = regions.relation((lo, hi), regions.Region(rlo, rhi, regions.Support.of(kind)))
    return {"inside": "interval inside the predicted region", "outside": "interval outside the predicted region",
            "straddles": "interval overlaps the region's boundary"}[rel]


def _fmt_interval(lo: float | None, hi: float | None, rate: bool) -> str:
    if lo is None or hi is None:
        return ""
    return display.rate_interval((lo, hi)) if rate else display.interval((lo, hi))


def _config_diffs(arm_names: list[str], runs: list[dict[str, Any]], execution: dict[str, Any] | None) -> list[DiffView]:
    first: dict[str, dict[str, Any]] = {}
    for r in runs:
        if r["arm"] and r["arm"] not in first and r.get("rendered_config") is not None:
            first[r["arm"]] = r
    out: list[DiffView] = []
    arms = [a for a in arm_names if a in first]
    for other in arms[1:]:
        a, b = first[arms[0]], first[other]
        diff = list(difflib.unified_diff((a["rendered_config"] or "").splitlines(),
                                         (b["rendered_config"] or "").splitlines(),
                                         f"{arms[0]} (run {a['id']})", f"{other} (run {b['id']})", lineterm="", n=2))
        out.append(DiffView(f"rendered config: {arms[0]} → {other}", _diff_lines(diff), identical=not diff))
        fa, fb = a.get("fingerprint") or {}, b.get("fingerprint") or {}
        keys = sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k))
        flines = [("del", f"- {k}: {fa.get(k, '(absent)')}") for k in keys] + \
                 [("add", f"+ {k}: {fb.get(k, '(absent)')}") for k in keys]
        out.append(DiffView(f"environment fingerprint: {arms[0]} → {other}", flines, identical=not keys))
    recorded = execution.get("config_diff") if execution else None
    if isinstance(recorded, dict) and recorded and all(isinstance(v, str) for v in recorded.values()):
        # The runner's own diff of the configs it applied is the record; it replaces the one computed here.
        out = [d for d in out if not d.title.startswith("rendered config")]
        for key, text in recorded.items():
            out.insert(0, DiffView(f"rendered config {key.replace('..', ' → ')} (recorded by execution "
                                   f"{execution['id']})", _diff_lines(text.splitlines()), identical=not text.strip()))
    elif recorded:
        import json

        text = json.dumps(recorded, indent=2, sort_keys=True, default=str)
        out.append(DiffView(f"config diff recorded by execution {execution['id']}",  # type: ignore[index]
                            [("ctx", ln) for ln in text.splitlines()], identical=False))
    return out


def _diff_lines(diff: list[str]) -> list[tuple[str, str]]:
    return [("add" if ln.startswith("+") and not ln.startswith("+++") else
             "del" if ln.startswith("-") and not ln.startswith("---") else
             "hunk" if ln.startswith("@@") else "ctx", ln) for ln in diff]


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


PER_REPLICATE = "per replicate (see each run)"

# A sequential verdict judges a rate by its confidence sequence; the fixed-design interval of the same count, shown
# by arm, only describes it. Each says which it is, so a reader seeing two ranges for one rate knows which decided.
DECIDED = "the interval the verdict used"
DESCRIPTIVE = "descriptive; the verdict used the confidence sequence shown under Predictions"


def _observed_from_analysis(src: Judgement, exp: Experiment | None, metric: str, sequential: bool = False) -> str:
    est = src.estimate
    if est is None:
        return ""
    rate = display.is_proportion(exp, metric)
    k, n = src.k, src.n
    if rate and isinstance(k, (list, tuple)):  # a difference of two rates: in percentage points
        text = display.points(est) + (" " + display.points_interval(src.interval) if src.interval else "")
    else:
        value = display.estimate(est, src.interval) if src.interval and not rate else display.number(est)
        text = f"{int(k)}/{int(n)} = {display.rate(est)}" if rate and isinstance(k, (int, float)) and n else value
        if src.interval is not None:
            text += " " + _fmt_interval(src.interval[0], src.interval[1], rate)
    if src.interval is not None and src.interval_kind:
        text += f" {src.interval_kind}" + (f" ({DECIDED})" if sequential else "")
    shift = isinstance(src.runs, (list, tuple))  # a shift between two arms: its runs are one count per arm
    if src.interval is None and shift:
        text += f" ({SHIFT_WITHOUT_INTERVAL})"
    elif src.interval is None and src.interval_kind:  # no interval to name: what kept it away (one run of a median)
        text += f" ({src.interval_kind})"
    if src.by_process:
        text += " (" + ", ".join(f"{_short(str(k), 40)}: {v}" for k, v in src.by_process.items()) + ")"
    if shift:
        text += f"; {' and '.join(map(str, src.runs))} runs"  # type: ignore[arg-type]
    elif src.runs:
        text += f"; {display.count(src.runs, 'run')}"
    return text


EFFECT_WORDS = {"inconclusive": "makes the verdict inconclusive", "invalid": "makes the verdict invalid"}


def _check(c: AnalysisCheck, verdict: str) -> Check:
    """A check with what its result means for the verdict (`analysis.results.Check.mark`). A failed check whose
    effect is "none" was weighed and did not change the verdict; FAIL under a verdict that stands would read as
    a contradiction."""
    mark = c.mark(verdict)
    if mark == "pass":
        return Check(c.name, True, c.detail, mark, "")
    if c.effect in EFFECT_WORDS:
        return Check(c.name, c.passed, c.detail, mark, EFFECT_WORDS[c.effect])
    if c.effect == "none" or verdict in ("supported", "falsified"):
        return Check(c.name, c.passed, c.detail, mark, f"does not change the verdict: {verdict} stands")
    return Check(c.name, c.passed, c.detail, mark, f"the verdict is {verdict}")


def _checks_summary(checks: list[Check]) -> str:
    changed = [c.name for c in checks if c.mark == "FAIL"]
    noted = [c.name for c in checks if c.mark == "FLAG"]
    parts = []
    if changed:
        parts.append(f"{display.count(len(changed), 'check')} changed the verdict ({', '.join(changed)})")
    if noted:
        parts.append(f"{len(noted)} flagged a problem that does not change it ({', '.join(noted)})")
    passed = sum(1 for c in checks if c.mark == "pass")
    return (f"{passed} of {len(checks)} checks passed" + ("; " + "; ".join(parts) if parts else "") + ".") \
        if checks else ""


def _verdict_view(stored: dict[str, Any] | None, analysis: Analysis | None) -> tuple[VerdictView | None, str]:
    note = ""
    a_raw = bridge.checks(analysis)
    if stored:
        verdict = str(stored["verdict"])
        # A verdict stored before checks carried their effect takes it from the fresh analysis' check.
        effects = {c.name: c.effect for c in a_raw}
        raw = tuple(AnalysisCheck.from_dict({"effect": effects.get(str(c.get("name")), "none"), **c})
                    for c in stored.get("checks") or [] if isinstance(c, dict)) or a_raw
        checks = [_check(c, verdict) for c in raw]
        if analysis is not None and analysis.verdict != stored["verdict"]:
            note = (f"Re-analysing the stored runs now gives {analysis.verdict}; the verdict below is the "
                    f"one recorded on {str(stored.get('created_at'))[:16]}.")
        return VerdictView(verdict, stored.get("reasoning") or "", str(stored.get("created_at") or "")[:19],
                           stored.get("execution_id"), checks, "stored", "", _checks_summary(checks)), note
    if analysis is not None:
        checks = [_check(c, analysis.verdict) for c in a_raw]
        return VerdictView(analysis.verdict, analysis.reasoning, "", None, checks, "computed now (not stored)", "",
                           _checks_summary(checks)), note
    return None, note


def _assumptions(h: Hypothesis, registry: Registry, status_of: dict[str, str]) -> list[AssumptionView]:
    claims = {x.id: x.claim for x in registry.hypotheses}
    # A hypothesis left out (an entry with a problem of its own) has no page to link to.
    return [AssumptionView(a.text, Link(f"{a.tested_by}.html" if a.tested_by in claims else "", a.tested_by)
                           if a.tested_by else None,
                           status_of.get(a.tested_by) if a.tested_by else None, claims.get(a.tested_by or "", ""))
            for a in h.assumptions]


def _evidence_by_arm(h: Hypothesis, data: StoreData, analysis: Analysis | None
                     ) -> tuple[list[dict[str, Any]], int | None, dict[str, list[dict[str, Any]]]]:
    """(evidence runs, their execution, runs per arm): the runs the analysis pooled when it says, which
    may include matching runs of other hypotheses; else the latest verdict's execution's."""
    runs, ex_id = evidence_runs(data, h.id)
    by_arm: dict[str, list[dict[str, Any]]] = defaultdict(list)
    used = bridge.evidence_run_ids(analysis, _run_labels(data, h.experiment))
    if used:
        runs = [data.runs[i] for ids in used.values() for i in ids if i in data.runs]
        for arm, ids in used.items():
            by_arm[arm] = [data.runs[i] for i in ids if i in data.runs]
    else:
        for r in runs:
            by_arm[r["arm"] or "probe"].append(r)
    return runs, ex_id, by_arm


def evidence_arms(data: StoreData, h: Hypothesis) -> dict[int, str]:
    """run id -> the arm the status's verdict put it in, as its recorded analysis says (an imported run has no
    arm of its own)."""
    details = (data.verdicts.get(h.id) or {}).get("details")
    if not isinstance(details, dict) or not isinstance(details.get("runs"), dict):
        return {}
    used = bridge.evidence_run_ids(Analysis.from_dict(details), _run_labels(data, h.experiment)) or {}
    return {i: arm for arm, ids in used.items() for i in ids}


def _run_labels(data: StoreData, experiment: str) -> dict[str, int]:
    """label -> run id over the experiment's runs whose label names one run (an analysis names them so)."""
    ids: dict[str, list[int]] = defaultdict(list)
    for r in data.runs.values():
        if r["label"] and r["experiment_id"] == experiment:
            ids[r["label"]].append(r["id"])
    return {label: found[0] for label, found in ids.items() if len(found) == 1}


def _arm_rows(h: Hypothesis, registry: Registry) -> list[ArmRow]:
    """The full assignment of every arm, rows that differ marked. A per-replicate variable that nothing fixes (a
    workload seed) has no value per arm, only one per replicate (each run's page gives it): its default, which no
    run used, is not shown."""
    from workbench.registry.experiment import per_replicate_names

    exp = registry.experiments.get(h.experiment)
    drawn = set(per_replicate_names(exp, h, {})) if exp is not None else set()
    assignments: dict[str, dict[str, str]] = {}
    for arm in h.arm_names:
        try:
            full = registry.arm_assignment(h, arm)
            assignments[arm] = {k: PER_REPLICATE if k in drawn else v for k, v in full.items()}
        except BadInput:  # an experiment edited since; show the hypothesis' own values
            assignments[arm] = {**h.hold, **h.arms.get(arm, {})}
    variables = sorted({v for a in assignments.values() for v in a})
    return [ArmRow(v, [assignments[a].get(v, "") for a in h.arm_names],
                   len({assignments[a].get(v, "") for a in h.arm_names}) > 1, v == h.isolates) for v in variables]


def _charts(h: Hypothesis, exp: Experiment | None, runs: list[dict[str, Any]], by_arm: dict[str, list[dict[str, Any]]],
            arm_names: list[str], analysis: Analysis | None, desc: dict[str, str]
            ) -> tuple[list[ChartView], dict[tuple[str, str], dict[str, Any]]]:
    """One chart per metric, by arm, with intervals (the analysis' when it has them) and the predicted region."""
    chart_views: list[ChartView] = []
    estimates: dict[tuple[str, str], dict[str, Any]] = {}
    for i, metric in enumerate(metric_order(h, exp, runs)):
        spec = exp.metrics.get(metric) if exp is not None else None
        is_rate = display.is_proportion(exp, metric)
        points, rows = [], []
        for arm in arm_names:
            got = bridge.arm_metric(analysis, arm, metric)
            if got is None:
                e = arm_estimate(exp, metric, by_arm.get(arm, []))
                got = {"estimate": e.estimate, "lo": e.lo, "hi": e.hi, "n": e.n, "label": e.label, "method": e.method}
            if is_rate and analysis is not None and analysis.sequential and got["lo"] is not None:
                got = {**got, "method": f"{got['method']} ({DESCRIPTIVE})"}
            estimates[(arm, metric)] = got
            points.append(charts.ArmPoint(arm, got["estimate"], got["lo"], got["hi"], got["label"], got["method"]))
            rows.append((arm, got["label"], _fmt_interval(got["lo"], got["hi"], is_rate) +
                         (f" {got['method']}" if got["lo"] is not None else "")))
        # One tick per run while that stays legible (and the page small); past that the interval says it all.
        run_values = [charts.RunValue(arm, r["id"], v) for arm in arm_names for r in by_arm.get(arm, [])
                      for v in [run_metric(exp, r, metric)] if v is not None and math.isfinite(v)
                      if len(by_arm.get(arm, [])) <= MAX_TICKS_PER_ARM]
        mc = charts.MetricChart(metric, arm_names, points, run_values, _region_bands(h, metric, exp), is_rate)
        chart_views.append(ChartView(f"chart-{i}", metric, charts.metric_spec(mc), rows,
                                     desc.get(metric, "")))
    return chart_views, estimates


def _probes(data: StoreData, all_runs: list[dict[str, Any]], runs: list[dict[str, Any]]
            ) -> tuple[list[ProbeRow], dict[str, list[int]]]:
    """Reachability: calls per target, per process; totals over the evidence runs."""
    probe_rows: list[ProbeRow] = []
    evidence_ids = {r["id"] for r in runs}
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in all_runs:
        for p in data.probes.get(r["id"], []):
            probe_rows.append(ProbeRow(p["target"], p["process"], str(p["pid"]), p["calls"], p["resolved"],
                                       Link(f"../runs/{r['id']}.html", f"run {r['id']}")))
            if r["id"] in evidence_ids:
                totals[p["target"]][0] += p["calls"]
                totals[p["target"]][1] += 1
    return probe_rows, totals


def _observed(p: Any, exp: Experiment | None, arm_names: list[str], totals: dict[str, list[int]],
              estimates: dict[tuple[str, str], dict[str, Any]]) -> tuple[str, str]:
    """(what the data shows for prediction `p`, where that lies against its region) without an analysis."""
    observed, relation = "", ""
    if p.target:
        calls = totals.get(p.target, [None])[0]
        observed = "not probed" if calls is None else f"{calls} calls"
        if calls is not None:
            relation = "inside the predicted region" if p.region.contains(calls) else "outside the predicted region"
    elif p.difference:
        a, b = (estimates.get((p.difference[0], p.metric)), estimates.get((p.difference[1], p.metric)))
        if a and b and a["estimate"] is not None and b["estimate"] is not None:
            d = a["estimate"] - b["estimate"]
            shown = display.points(d) if display.is_proportion(exp, p.metric) else display.number(d)
            observed = f"{shown} (point estimate)"
    else:
        for arm in ([p.arm] if p.arm else arm_names):
            e = estimates.get((arm, p.metric))
            if e and e["estimate"] is not None:
                kind = "proportion" if display.is_proportion(exp, p.metric) else \
                    exp.metrics[p.metric].kind if exp is not None and p.metric in exp.metrics else None
                observed += f"{arm}: {e['label']} {_fmt_interval(e['lo'], e['hi'], kind == 'proportion')}; "
                relation = relation or _relation(e["lo"], e["hi"], p.region, kind)
    return observed, relation


def _predictions(h: Hypothesis, exp: Experiment | None, data: StoreData, analysis: Analysis | None,
                 arm_names: list[str], totals: dict[str, list[int]], estimates: dict[tuple[str, str], dict[str, Any]],
                 desc: dict[str, str]) -> list[PredictionView]:
    a_preds = bridge.predictions(analysis)
    stored = Analysis.from_dict((data.verdicts.get(h.id) or {}).get("details") or {})
    out = []
    for j, p in enumerate(h.predicts):
        src = a_preds[j] if j < len(a_preds) else (stored.predictions[j] if j < len(stored.predictions) else None)
        sequential = analysis.sequential if j < len(a_preds) else stored.sequential  # type: ignore[union-attr]
        observed, relation = _observed(p, exp, arm_names, totals, estimates)
        if src is not None and src.estimate is not None:
            observed = _observed_from_analysis(src, exp, p.metric, sequential) or observed
        outcome = src.outcome if src is not None else relation
        if src is not None and src.reachable is False:
            outcome += " (no verdict is reachable within the sequential budget)"
        elif src is not None and src.more_units_needed:
            units = more_units_words(src.where, src.more_units_needed, src.more_units_by_arm, "more units",
                                     " in each arm")
            outcome += f" (about {units} would decide it)"
        metric = "" if p.target else p.metric
        out.append(PredictionView(prediction_text(p, exp), p.why, observed.rstrip("; "), outcome, metric,
                                  desc.get(metric, "")))
    return out


def _attrition(exp: Experiment | None, data: StoreData, arm_names: list[str], by_arm: dict[str, list[dict[str, Any]]]
               ) -> tuple[list[AttritionRow], list[str]]:
    outcomes: list[str] = list(exp.unit.outcomes) if exp is not None and exp.unit is not None else []
    attrition = []
    for arm in arm_names:
        counts: dict[str, int] = defaultdict(int)
        for r in by_arm.get(arm, []):
            for o, n in data.units.get(r["id"], {}).items():
                counts[o] += n
        for o in counts:
            if o not in outcomes:
                outcomes.append(o)
        attrition.append(AttritionRow(arm, len(by_arm.get(arm, [])), sum(counts.values()),
                                      [(o, counts.get(o, 0)) for o in outcomes]))
    for row in attrition:
        have = dict(row.by_outcome)
        row.by_outcome = [(o, have.get(o, 0)) for o in outcomes]
    return attrition, outcomes


def _run_rows(exp: Experiment | None, all_runs: list[dict[str, Any]], by_arm: dict[str, list[dict[str, Any]]],
              metric_columns: list[str]) -> list[RunRow]:
    """The runs table; a run of the evidence without an arm of its own (imported) shows the analysis' arm."""
    arm_of = {r["id"]: arm for arm, rs in by_arm.items() for r in rs}
    in_evidence = set(arm_of)
    shown = sorted(all_runs, key=lambda r: r["id"], reverse=True)[:MAX_RUN_ROWS]
    return [RunRow(r["id"], f"../runs/{r['id']}.html", r["arm"] or arm_of.get(r["id"], ""),
                   display.replicate(r["replicate"]), r["status"], (r["started_at"] or "")[:19], r["execution_id"],
                   r["id"] in in_evidence,
                   [stats.fmt_value(run_metric(exp, r, m), display.is_proportion(exp, m)) for m in metric_columns],
                   [_derived_by(exp, r, m) for m in metric_columns], r["label"] or "")
            for r in shown]


def _derived_by(exp: Experiment | None, run: dict[str, Any], metric: str) -> str:
    """The experiment whose definitions derived the run's `metric` ('' where it was measured or is missing), so the
    runs table marks a derived value as the runs page and the run pages do."""
    if exp is None or run["metrics"].get(metric) is not None or run_metric(exp, run, metric) is None:
        return ""
    return exp.id


def build(h: Hypothesis, registry: Registry, data: StoreData, analysis: Analysis | None, analysis_note: str,
          page: Page, status_of: dict[str, str]) -> HypothesisContext:
    exp = registry.experiments.get(h.experiment)
    desc = metric_descriptions(exp)
    runs, ex_id, by_arm = _evidence_by_arm(h, data, analysis)
    own = data.hypothesis_runs(h.id)
    own_ids = {r["id"] for r in own}
    # its own runs and the ones its evidence drew in (imported runs, other hypotheses' matching runs)
    all_runs = own + [r for r in runs if r["id"] not in own_ids]
    arm_names = list(h.arm_names) + [a for a in by_arm if a not in h.arm_names]
    chart_views, estimates = _charts(h, exp, runs, by_arm, arm_names, analysis, desc)
    page.has_charts = bool(chart_views)  # the ~900 KB chart runtime loads only where a chart is drawn
    probe_rows, totals = _probes(data, all_runs, runs)
    predictions = _predictions(h, exp, data, analysis, arm_names, totals, estimates, desc)
    verdict, vnote = _verdict_view(data.verdicts.get(h.id), analysis)
    attrition, outcomes = _attrition(exp, data, arm_names, by_arm)
    metric_columns = metric_order(h, exp, all_runs)[:MAX_METRIC_COLUMNS]  # the runs table shows all_runs
    assumptions = _assumptions(h, registry, status_of)
    execution = data.executions.get(ex_id) if ex_id is not None else None
    notes = "; ".join(n for n in (analysis_note, vnote) if n)
    if len(all_runs) > MAX_RUN_ROWS:
        notes = (notes + "; " if notes else "") + (f"the runs table shows the latest {MAX_RUN_ROWS} of "
                                                   f"{len(all_runs)} runs; the runs list has them all")
    return HypothesisContext(
        page=page, id=h.id, claim=h.claim, notes=h.notes, kind=h.kind, status=status_of.get(h.id, h.status),
        experiment=h.experiment,
        # A parent left out (an entry with a problem of its own) has no page to link to.
        parent=Link(f"{h.parent}.html" if any(p.id == h.parent for p in registry.hypotheses) else "",
                    h.parent) if h.parent else None,
        children=[Link(f"{c.id}.html", c.id) for c in registry.children(h.id)],
        isolates=h.isolates, hold=sorted(h.hold.items()), arm_names=list(h.arm_names), arm_rows=_arm_rows(h, registry),
        config_diffs=_config_diffs(arm_names, runs, execution), predictions=predictions,
        guards=[(display.guard(g, exp) + (f" — {g.why}" if g.why else ""), g.metric, desc.get(g.metric, ""))
                for g in h.requires], falsified_if=h.falsified_if,
        assumptions=assumptions, charts=chart_views, verdict=verdict, analysis_note=notes,
        attrition=attrition if any(r.units for r in attrition) else [], attrition_outcomes=outcomes,
        probe_rows=probe_rows, probe_totals=[(t, v[0], v[1]) for t, v in sorted(totals.items())],
        metric_columns=metric_columns, runs=_run_rows(exp, all_runs, by_arm, metric_columns),
        status_note=data.status_note(h.id), metric_descriptions=desc, **_review_fields(h, data))


def _review_fields(h: Hypothesis, data: StoreData) -> dict[str, Any]:
    """The review state, each review with the evidence it saw, and who ran each execution."""
    state = data.review_states.get(h.id)
    views = [ReviewView(r.author, r.decision, r.body or "", (r.created_at or "")[:19], r.author_source or "",
                        r.verdict_seen or "", (r.evidence_digest or "")[:12],
                        state.stale(r), state.self_review(r))
             for r in (state.reviews if state else ())]
    execs = sorted((e for e in data.executions.values() if e["hypothesis_id"] == h.id), key=lambda e: e["id"])
    return {"reviews": views, "review_state": state.state if state else "",
            "review_note": _review_note(state),
            "executions": [_execution_view(e, data) for e in execs]}


def _review_note(state: Any) -> str:
    """What qualifies the review state: an approval by who ran the evidence, a parent whose verdict changed."""
    notes = (["self-approved: approved by who ran it"] if state and state.self_approved() else []) + \
        (["parent changed: re-review"] if state and state.parent_changed else [])
    return "; ".join(notes)


AA_MODE = "A/A: the control arm ran twice"
MAX_EXECUTION_RUN_LINKS = 12


def _aa_outcome(data: StoreData, e: dict[str, Any]) -> str:
    """What an A/A execution's check found, in the words the CLI prints (its a/a check): no false alarm and the
    noise floor, or the false alarm. It is no verdict on the hypothesis and never its status."""
    verdicts = [v for v in data.verdict_history.get(e["hypothesis_id"], []) if v.get("execution_id") == e["id"]]
    for v in sorted(verdicts, key=lambda v: v["id"], reverse=True):
        for c in v.get("checks") or []:
            if isinstance(c, dict) and c.get("name") == "a/a":
                return str(c.get("detail") or "")
    return "no A/A check recorded" if verdicts else f"no verdict recorded{_resumed_or_not(data, e)}"


def _resumed_or_not(data: StoreData, e: dict[str, Any]) -> str:
    """Whether `wb hypothesis run H --resume` takes the execution `e`, by its rule (runner.resume.find_resumable:
    the newest stopped execution, none a finished one followed). The page names no --db or --root: it may be read
    where they mean other folders."""
    from workbench.runner.resume import RESUMABLE, newest_resumable

    status = e.get("status") or ""
    if status == "refused":
        return " (refused: nothing ran)"
    if status not in RESUMABLE:
        return ""
    hid = e["hypothesis_id"]
    resume = f"`wb hypothesis run {hid} --resume`"
    newest = newest_resumable(sorted((x for x in data.executions.values() if x.get("hypothesis_id") == hid),
                                     key=lambda x: x["id"]), lambda x: x.get("status"))
    taken = None if newest is None else newest["id"]
    if taken == e["id"]:
        return f"; {resume} (with the --db and --root of this report) resumes it, the newest stopped execution"
    if taken is not None:
        return (f"; execution {e['id']} is not resumed: {resume} resumes only the newest stopped execution "
                f"({taken})")
    return (f"; execution {e['id']} is not resumed: a later execution finished, and {resume} resumes only a "
            "stopped execution no finished one followed")


def _smoke_mark(data: StoreData, e: dict[str, Any]) -> str:
    """", --replicates 1 (smoke: 1 of 3 planned replicates)" for an execution whose newest verdict is a smoke run's
    (fewer replicates than its design planned: the status's rule, analysis.status), else ''."""
    from workbench.analysis.results import smoke_words

    verdicts = [v for v in data.verdict_history.get(e["hypothesis_id"], []) if v.get("execution_id") == e["id"]]
    if e.get("mode") != "fixed" or not verdicts:  # a sequential run stops when it decides: never a smoke run
        return ""
    d = max(verdicts, key=lambda v: v["id"]).get("details") or {}
    try:
        replicates, planned = int(d.get("replicates") or 0), int(d.get("planned_replicates") or 0)
    except (TypeError, ValueError):
        return ""
    words = smoke_words(replicates, planned)
    return f", --replicates {replicates} (smoke: {words})" if words else ""


def _execution_view(e: dict[str, Any], data: StoreData) -> ExecutionView:
    rev = (e.get("git_revision") or "")[:10]
    if rev and e.get("git_dirty"):
        rev += " (dirty)"
    user = e.get("user_name") or "not recorded"
    if e.get("user_source"):
        user += f" (from {e['user_source']})"
    mode = AA_MODE if e.get("mode") == "aa" else e.get("mode") or ""
    sets = " ".join(f"--set {k}={v}" for k, v in sorted((e.get("overrides") or {}).items()))
    mode = f"{mode}, {sets}" if sets else mode  # runs under --set measured another config than the hypothesis's
    mode += _smoke_mark(data, e)
    run_ids = sorted(rid for rid, r in data.runs.items() if r["execution_id"] == e["id"])
    return ExecutionView(e["id"], mode, e.get("status") or "", (e.get("started_at") or "")[:19],
                         user, e.get("host") or "not recorded", rev or "not recorded", e.get("wb_version") or "",
                         _aa_outcome(data, e) if e.get("mode") == "aa" else "",
                         [Link(f"../runs/{rid}.html", str(rid)) for rid in run_ids[:MAX_EXECUTION_RUN_LINKS]],
                         len(run_ids), _refused_why(e))


def _refused_why(e: dict[str, Any]) -> str:
    """Why an execution was refused (its recorded error's first line: the holder of the target, and its store)."""
    return (e.get("error") or "").strip().split("\n", 1)[0] if e.get("status") == "refused" else ""
