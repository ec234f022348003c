"""The runner: controlled A/B experiments on sim, local, SSH and kernel targets, recorded, target always restored."""

from __future__ import annotations

from typing import Any


def run_hypothesis(hypothesis_id: str, **kwargs: Any) -> dict[str, Any]:
    """Run `hypothesis_id`'s experiment; see `workbench.runner.execute.run_hypothesis` for the options."""
    from workbench.runner.execute import run_hypothesis as _run

    return _run(hypothesis_id, **kwargs)


__all__ = ["run_hypothesis"]
