"""The runner: controlled A/B experiments on sim, local, SSH and kernel targets, recorded, target always restored."""

from __future__ import annotations

from typing import Any

__all__ = ["ExecutionResult", "RunOptions", "execute"]

_HOME = {"ExecutionResult": "workbench.runner.summary", "RunOptions": "workbench.runner.execute",
         "execute": "workbench.runner.execute"}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        import importlib

        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'workbench.runner' has no attribute {name!r}")
