"""The optional link to workbench.analysis: fresh verdicts, per-arm statistics and the confound scan.

The site must build without it (from stored verdicts and raw metrics), so every call is guarded
and every shape is read defensively: a failure becomes a note on the page, not a failed build.
"""

from __future__ import annotations

from typing import Any


class _Analysis:
    """The pieces of workbench.analysis the report uses; either may be None."""

    def __init__(self, analyze: Any, scan_confounds: Any) -> None:
        self.analyze = analyze
        self.scan_confounds = scan_confounds


def _attr(mod: Any, name: str) -> Any:
    try:
        return getattr(mod, name)
    except Exception:  # noqa: BLE001 - a lazily imported submodule that is missing or broken
        return None


def analysis_module() -> _Analysis | None:
    try:
        import workbench.analysis as mod
    except Exception:  # noqa: BLE001 - absent or broken: the site builds from stored verdicts
        return None
    found = _Analysis(_attr(mod, "analyze"), _attr(mod, "scan_confounds"))
    return found if (found.analyze or found.scan_confounds) else None


def _plain(obj: Any) -> Any:
    if obj is None:
        return None
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(obj)
    return obj


def analyze(mod: Any, session: Any, registry: Any, hypothesis_id: str,
            execution_id: int | None = None) -> tuple[dict[str, Any] | None, str]:
    """(analysis as a dict, note). The note says why there is none when analysis failed.

    With `execution_id` (the stored verdict's execution) the numbers shown are the ones the verdict
    rests on; without it, the analysis pools every stored run that matches the arms.
    """
    if mod is None or mod.analyze is None:
        return None, ""
    try:
        if execution_id is not None:
            result = mod.analyze(session, registry, hypothesis_id, execution_id=execution_id)
        else:
            result = mod.analyze(session, registry, hypothesis_id)
    except Exception as exc:  # noqa: BLE001 - a bug or missing data in analysis must not stop the site
        return None, f"analysis could not run: {type(exc).__name__}: {exc}"
    d = _plain(result)
    return (d if isinstance(d, dict) else None), ""


def scan_confounds(mod: Any, session: Any, registry: Any) -> tuple[list[dict[str, Any]] | None, str]:
    if mod is None or mod.scan_confounds is None:
        return None, "the confound scan needs workbench.analysis, which this installation does not have"
    try:
        found = mod.scan_confounds(session, registry)
    except Exception as exc:  # noqa: BLE001 - shown on the page instead
        return None, f"the confound scan failed: {type(exc).__name__}: {exc}"
    found = _plain(found)
    if isinstance(found, dict):
        found = found.get("findings", [found])
    return [f if isinstance(f, dict) else {"detail": str(f)} for f in (_plain(x) for x in (found or []))], ""


def _num(x: Any) -> float | None:
    try:
        return None if x is None else float(x)
    except (TypeError, ValueError):
        return None


def _interval(d: dict[str, Any]) -> tuple[float | None, float | None]:
    for key in ("ci", "interval", "wilson", "ci95"):
        v = d.get(key)
        if isinstance(v, (list, tuple)) and len(v) == 2:
            return _num(v[0]), _num(v[1])
        if isinstance(v, dict):
            return _num(v.get("lo", v.get("low"))), _num(v.get("hi", v.get("high")))
    return _num(d.get("lo", d.get("ci_low", d.get("low")))), _num(d.get("hi", d.get("ci_high", d.get("high"))))


def arm_metric(analysis: dict[str, Any] | None, arm: str, metric: str) -> dict[str, Any] | None:
    """One metric in one arm from an analysis dict: {estimate, lo, hi, n, k, label, method} or None."""
    if not analysis:
        return None
    found: Any = None
    arms = analysis.get("arms")
    if isinstance(arms, dict):
        a = arms.get(arm) or {}
        found = (a.get("metrics") or {}).get(metric) if isinstance(a.get("metrics"), dict) else a.get(metric)
    elif isinstance(arms, list):
        for a in arms:
            if isinstance(a, dict) and a.get("arm", a.get("name")) == arm:
                m = a.get("metrics") or {}
                found = m.get(metric) if isinstance(m, dict) else None
    if found is None and isinstance(analysis.get("metrics"), dict):
        m = analysis["metrics"].get(metric)
        if isinstance(m, dict):
            found = (m.get("arms") or m).get(arm) if isinstance(m.get("arms", m), dict) else None
    if not isinstance(found, dict):
        return None
    lo, hi = _interval(found)
    est = None
    for key in ("rate", "estimate", "median", "value", "mean"):
        est = _num(found.get(key))
        if est is not None:
            break
    k, n = found.get("k"), found.get("n")
    if est is None and isinstance(k, (int, float)) and isinstance(n, (int, float)) and n:
        est = k / n
    if est is None:
        return None
    runs = found.get("runs")
    if found.get("label"):
        label = str(found["label"])
    elif "rate" in found and isinstance(k, (int, float)) and isinstance(n, (int, float)):
        label = f"{int(k)}/{int(n)} = {est:.1%}"
    elif "median" in found:
        label = f"median {_fmt(est)}" + (f" ({runs} runs)" if runs is not None else "")
    else:
        label = _fmt(est)
    conf = _num(found.get("confidence"))
    if found.get("method"):
        method = str(found["method"])
    elif "rate" in found:
        method = "Wilson 95%"
    elif conf is not None and found.get("warning"):
        method = f"range of {runs} runs (covers the median with {conf:.0%})"
    elif conf is not None:
        method = f"{conf:.0%} order-statistic interval"
    else:
        method = "95% interval"
    return {"estimate": est, "lo": lo, "hi": hi, "n": n, "k": k, "label": label, "method": method}


def _fmt(x: float) -> str:
    from workbench.report.stats import fmt

    return fmt(x)


def evidence_run_ids(analysis: dict[str, Any] | None) -> dict[str, list[int]] | None:
    """{arm: [run ids]} the analysis used, when it says."""
    runs = (analysis or {}).get("runs")
    if not isinstance(runs, dict):
        return None
    out = {str(a): [int(i) for i in ids if isinstance(i, (int, float))] for a, ids in runs.items()
           if isinstance(ids, list)}
    return out or None


def predictions(analysis: dict[str, Any] | None) -> list[dict[str, Any]]:
    p = (analysis or {}).get("predictions")
    return [x for x in p if isinstance(x, dict)] if isinstance(p, list) else []


def checks(analysis: dict[str, Any] | None) -> list[dict[str, Any]]:
    c = (analysis or {}).get("checks")
    return [x for x in c if isinstance(x, dict)] if isinstance(c, list) else []
