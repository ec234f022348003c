"""The report's view of an analysis: per-arm estimates, predictions, checks and the runs it pooled.

Fresh analyses and stored verdicts reach the pages as the same `Analysis` type; nothing is guessed.
"""

from __future__ import annotations

from typing import Any, Mapping

from workbench.analysis import clustered, display
from workbench.analysis.results import Analysis, Check, Judgement


def arm_metric(analysis: Analysis | None, arm: str, metric: str) -> dict[str, Any] | None:
    """One metric in one arm from the analysis: {estimate, lo, hi, n, k, label, method} or None."""
    summary = analysis.arms.get(arm) if analysis is not None else None
    e = summary.metrics.get(metric) if summary is not None else None
    if e is None or e.estimate is None:
        return None
    lo, hi = e.bounds or (None, None)
    if e.kind == "proportion":
        label = f"{int(e.k or 0)}/{int(e.n or 0)} = {display.rate(e.estimate)}"
        # An analysis stored before arms carried the interval's name: what its design effect and phi say.
        method = e.interval_kind or "Wilson 95%" + clustered.widening(e.design_effect, e.dispersion)
    elif e.runs == 1:  # one value: no median, range or coverage to claim ("[210, 210] range of 1 runs ... 0%")
        return {"estimate": e.estimate, "lo": None, "hi": None, "n": e.n, "k": e.k,
                "label": f"one run: {display.recorded(e.estimate)}", "method": "one run"}
    else:
        median = display.estimate(e.estimate, e.bounds) if e.bounds else display.number(e.estimate)
        label = f"median {median} ({e.runs} runs)"
        if e.confidence is not None and e.warning:
            method = f"range of {e.runs} runs (covers the median with {e.confidence:.0%})"
        elif e.confidence is not None:
            method = f"{e.confidence:.0%} order-statistic interval"
        else:
            method = "95% interval"
    return {"estimate": e.estimate, "lo": lo, "hi": hi, "n": e.n, "k": e.k, "label": label, "method": method}


def evidence_run_ids(analysis: Analysis | None, by_label: Mapping[str, int] | None = None
                     ) -> dict[str, list[int]] | None:
    """{arm: [run ids]} the analysis used. It names a run that has a label (an imported one) by its label:
    `by_label` gives such a run's id; a label it does not know is left out."""
    if analysis is None or not analysis.runs:
        return None
    labels = by_label or {}
    out = {str(a): [i if isinstance(i, int) else labels[i] for i in ids if isinstance(i, int) or i in labels]
           for a, ids in analysis.runs.items()}
    return out or None


def predictions(analysis: Analysis | None) -> tuple[Judgement, ...]:
    return analysis.predictions if analysis is not None else ()


def checks(analysis: Analysis | None) -> tuple[Check, ...]:
    return analysis.checks if analysis is not None else ()
