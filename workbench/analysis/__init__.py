"""Analysis: honest verdicts from stored runs — exact tests and intervals, validity and confound checks, sequential stopping.

The public API is imported lazily so that `import workbench.analysis` stays cheap for the CLI.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Analysis", "SequentialDecision", "analyze", "record_verdict", "scan_confounds", "sequential_decision"]

_HOME = {
    "Analysis": "workbench.analysis.verdict",
    "analyze": "workbench.analysis.verdict",
    "record_verdict": "workbench.analysis.verdict",
    "SequentialDecision": "workbench.analysis.sequential",
    "sequential_decision": "workbench.analysis.sequential",
    "scan_confounds": "workbench.analysis.confounds",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        import importlib

        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'workbench.analysis' has no attribute {name!r}")
