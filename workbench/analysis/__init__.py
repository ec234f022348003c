"""Analysis: honest verdicts from stored runs — exact tests and intervals, validity and confound checks,
sequential stopping.

`analyze` is a pure function of a hypothesis, its experiment and typed runs; `analyze_stored` reads
those runs from a store. The public API is imported lazily so that `import workbench.analysis`
stays cheap for the CLI.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Analysis", "ArmEstimate", "ArmSummary", "Check", "Judgement", "SequentialDecision", "analyze",
           "analyze_stored", "record_verdict", "scan_confounds", "sequential_decision"]

_HOME = {
    "Analysis": "workbench.analysis.results",
    "ArmEstimate": "workbench.analysis.results",
    "ArmSummary": "workbench.analysis.results",
    "Check": "workbench.analysis.results",
    "Judgement": "workbench.analysis.results",
    "analyze": "workbench.analysis.verdict",
    "analyze_stored": "workbench.analysis.stored",
    "record_verdict": "workbench.analysis.stored",
    "SequentialDecision": "workbench.analysis.stored",
    "sequential_decision": "workbench.analysis.stored",
    "scan_confounds": "workbench.analysis.confounds",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        import importlib

        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'workbench.analysis' has no attribute {name!r}")
