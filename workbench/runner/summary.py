"""After the loop: the verdict (when the analysis is available), the report site, and the summary object."""

from __future__ import annotations

from typing import Any


def _arms(state: Any, runs: list[dict[str, Any]]) -> dict[str, Any]:
    p = state.prepared
    exp = p.experiment
    arms: dict[str, Any] = {}
    for arm in p.arms:
        ok = [r for r in runs if r["arm"] == arm and r["status"] == "ok"]
        metrics: dict[str, Any] = {}
        names = sorted({k for r in ok for k in r["metrics"]})
        for name in names:
            values = [r["metrics"][name] for r in ok if name in r["metrics"]]
            metrics[name] = {"n": len(values), "values": values}
        totals: dict[str, float | None] = {}
        for name, spec in exp.metrics.items():
            if spec.kind == "count" and spec.same_as is None and name in metrics:
                totals[name] = sum(metrics[name]["values"])
        for name, spec in exp.metrics.items():
            if spec.same_as is not None and spec.same_as in totals:
                totals[name] = totals[spec.same_as]
            if spec.kind == "proportion":
                num, den = totals.get(spec.numerator or ""), totals.get(spec.denominator or "")
                totals[name] = (num / den) if (num is not None and den) else None
        arms[arm] = {"variables": p.assignments[arm], "runs": len([r for r in runs if r["arm"] == arm]),
                     "runs_ok": len(ok), "metrics": metrics, "totals": totals}
    return arms


def _diff(p: Any) -> dict[str, str]:
    from workbench.runner.prepare import arms_config_diff

    return arms_config_diff(p) if p.rendered else {}


def finish(state: Any, *, build_report: bool = True) -> dict[str, Any]:
    from workbench.store import queries

    p = state.prepared
    verdict = reasoning = None
    checks: list[dict[str, Any]] = []
    analysis_error = None
    with state.store.session() as s:
        try:
            from workbench.analysis import analyze, record_verdict
        except ImportError:
            analyze = record_verdict = None  # type: ignore[assignment]
        if analyze is not None:
            try:
                result = analyze(s, p.registry, p.hypothesis.id, execution_id=state.execution_id)
                record_verdict(s, result, execution_id=state.execution_id)
                verdict, reasoning = result.verdict, result.reasoning
                checks = result.to_dict().get("checks", [])
            except Exception as exc:  # the runs are recorded; a failing analysis must not lose them
                analysis_error = f"{type(exc).__name__}: {exc}"
        runs = queries.list_runs(s, execution_id=state.execution_id)
    report_path = None
    if build_report:
        try:
            from workbench.report import build_site
        except ImportError:
            build_site = None  # type: ignore[assignment]
        if build_site is not None:
            try:
                pages = build_site(state.store, p.registry, p.root / "reports")
                report_path = (pages or {}).get(p.hypothesis.id) if isinstance(pages, dict) else None
                if report_path is None and isinstance(pages, dict):
                    report_path = (pages.get("hypotheses") or {}).get(p.hypothesis.id)
            except Exception as exc:
                analysis_error = (analysis_error + "; " if analysis_error else "") + f"report: {type(exc).__name__}: {exc}"
    plan = state.plan
    stage_s = {rid: out.stage_s for rid, _pr, out in state.outcomes}
    return {
        "hypothesis": p.hypothesis.id, "experiment": p.experiment.id, "experiment_version": p.experiment.version,
        "profile": p.profile_name, "target": state.target_desc, "execution_id": state.execution_id,
        "mode": p.mode, "seed": plan.seed, "blocks": plan.blocks, "overrides": p.overrides,
        "order": [f"{r.arm}@{r.host}" for r in plan.runs],
        "config_diff": _diff(p),
        "arms": _arms(state, runs),
        "runs": [{"id": r["id"], "arm": r["arm"], "replicate": r["replicate"], "block": r["block"],
                  "order_index": r["order_index"], "host": r["host"], "status": r["status"], "error": r["error"],
                  "stage_s": stage_s.get(r["id"], {})}
                 for r in runs],
        "stopped_early": state.stop_reason,
        "verdict": verdict, "reasoning": reasoning, "checks": checks, "analysis_error": analysis_error,
        "report": str(report_path) if report_path else None,
        "timing": {k: round(v, 3) for k, v in state.timing.items()},
    }


def text_lines(summary: dict[str, Any]) -> list[str]:
    """The human summary printed by `wb hypothesis run`."""
    lines = [f"{summary['hypothesis']} on {summary['target']} (profile {summary['profile']}), execution "
             f"{summary['execution_id']}, mode {summary['mode']}, seed {summary['seed']}"]
    if summary["overrides"]:
        lines.append("overrides: " + ", ".join(f"{k}={v}" for k, v in summary["overrides"].items()))
    lines.append("order: " + " ".join(summary["order"]))
    for pair, diff in (summary.get("config_diff") or {}).items():
        changed = [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
        lines.append(f"config diff {pair}: " + (" | ".join(changed) if changed else "none"))
    for arm, a in summary["arms"].items():
        t = a["totals"]
        parts = [f"runs ok {a['runs_ok']}/{a['runs']}"]
        for name, v in t.items():
            if v is None:
                continue
            parts.append(f"{name}={v:.3f}" if isinstance(v, float) and not float(v).is_integer() else f"{name}={v:g}")
        lines.append(f"  {arm:<12} " + "  ".join(parts))
    bad = [r for r in summary["runs"] if r["status"] != "ok"]
    for r in bad:
        lines.append(f"  run {r['id']} ({r['arm']} r{r['replicate']}): {r['status']}: {(r['error'] or '').splitlines()[0] if r['error'] else ''}")
    if summary.get("stopped_early"):
        blocks = len({r["block"] for r in summary["runs"]})
        lines.append(f"stopped early after {blocks} block(s): the sequential test decided")
    if summary["verdict"]:
        lines.append(f"verdict: {summary['verdict']}")
        if summary.get("reasoning"):
            lines.append(summary["reasoning"])
    else:
        lines.append("verdict: none (analysis not available)" if not summary.get("analysis_error")
                     else f"verdict: none ({summary['analysis_error']})")
    t = summary["timing"]
    if t:
        lines.append(f"time: wall {t['wall_s']:.1f} s = target commands and waits {t['target_s']:.1f} s + runner "
                     f"{t['overhead_s']:.2f} s ({t['overhead_pct']:.1f}%)")
    if summary.get("report"):
        lines.append(f"report: {summary['report']}")
    return lines


def not_ok(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The planned runs whose last attempt did not finish ok (an interrupted attempt that a resume redid
    and completed does not count against the execution)."""
    last: dict[Any, dict[str, Any]] = {}
    for r in sorted(summary["runs"], key=lambda r: r["id"]):
        last[r["order_index"] if r["order_index"] is not None else ("id", r["id"])] = r
    return [r for r in last.values() if r["status"] != "ok"]
