"""Every metric of a shipped experiment says what it counts: a bare `corrupted_tokens=37148` beside
`tokens=24576` reads as a bug in wb unless the metric says it counts tokens the copy was never asked to move."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.registry import Experiment, load_experiment

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted([*REPO.glob("experiments/*.yaml"), *REPO.glob("examples/*/experiments/*.yaml")])


def _load(path: Path) -> Experiment:
    return load_experiment(path)[0]


@pytest.mark.parametrize("path", SHIPPED, ids=[str(p.relative_to(REPO)) for p in SHIPPED])
def test_every_shipped_metric_has_a_description(path: Path) -> None:
    exp = _load(path)
    assert [name for name, m in exp.metrics.items() if not m.description.strip()] == []


def test_kernel_geometry_says_why_corrupted_tokens_can_exceed_tokens() -> None:
    m = _load(REPO / "experiments" / "kernel-geometry.yaml").metrics
    assert "asked" in m["tokens"].description
    text = " ".join(m["corrupted_tokens"].description.split())
    assert "never asked for" in text and "exceed tokens" in text
