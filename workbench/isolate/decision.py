"""One probe's stopping rule: is this configuration's rate inside the failure region, outside, or undecided?

The rate's cumulative (k, n) after each look goes to the always-valid mixture test of
`workbench.analysis.sequential` at the probe's own alpha (spent by the search's rule), so looking
after every run costs no error: inside the region at 2/alpha evidence (each side is tested at
alpha/2) is "fails", outside is "passes", and a probe whose units run out first is "inconclusive".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench.analysis import display
from workbench.analysis import sequential as seq

OUTCOMES = ("fails", "passes", "inconclusive")


@dataclass(frozen=True)
class Look:
    """The decision after one look: stop or continue, with the evidence either way."""

    outcome: str
    stop: bool
    k: float
    n: float
    looks: int
    e_fail: float
    e_pass: float
    reasoning: str


def decide(path: list[tuple[float, float]], bounds: tuple[float, float], alpha: float,
           max_units: float) -> Look:
    """Judge the cumulative path; stop when decided or when `max_units` units are spent."""
    k, n = path[-1] if path else (0.0, 0.0)
    if not path or n <= 0:
        return Look("inconclusive", n >= max_units, k, n, len(path), 1.0, 1.0, "no units observed yet")
    # Two one-sided always-valid tests at alpha/2 each (the analysis' one convention): the probe's share
    # of the search's alpha bounds both of its errors together.
    verdict, e_against, e_for = seq.judge_proportion(path, bounds, alpha=alpha)
    outcome = {"supported": "fails", "falsified": "passes"}.get(verdict, "inconclusive")
    rate = f"{k:g}/{n:g} = {display.rate(k / n)}"
    if outcome != "inconclusive":
        e = e_for if outcome == "fails" else e_against
        why = f"{rate}; e-value {e:.3g} >= 2/alpha = {2 / alpha:.3g} after {display.count(len(path), 'look')}"
        return Look(outcome, True, k, n, len(path), e_for, e_against, why)
    spent = n >= max_units
    why = (f"{rate}; neither e-value (fails {e_for:.3g}, passes {e_against:.3g}) reached 2/alpha = "
           f"{2 / alpha:.3g}" + (f" within the probe's {max_units:g} units" if spent else " yet"))
    return Look("inconclusive", spent, k, n, len(path), e_for, e_against, why)


def cumulative_path(per_run: list[tuple[Any, float, float]]) -> list[tuple[float, float]]:
    """Cumulative (k, n) after each replicate (the looks a sequential probe took), from the analysis'
    per-run (run, k, n) triples."""
    by_rep: dict[Any, list[float]] = {}
    for r, k, n in sorted(per_run, key=lambda t: (t[0].replicate or 0, t[0].id)):
        key = r.replicate if r.replicate is not None else ("run", r.id)
        acc = by_rep.setdefault(key, [0.0, 0.0])
        acc[0] += k
        acc[1] += n
    path, ck, cn = [], 0.0, 0.0
    for acc in by_rep.values():
        ck += acc[0]
        cn += acc[1]
        path.append((ck, cn))
    return path
