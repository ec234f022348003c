"""Which metrics a run cannot do without: the ones a prediction, a guard or a check of the hypothesis reads
(with what they are derived from), and the experiment's guard metrics (the confound scan's signals).
Any other collected metric fails soft: when it cannot be extracted the run records it as missing, says
so in a warning, and goes on."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.registry.experiment import Experiment
    from workbench.registry.hypothesis import Hypothesis


def needed_metrics(hypothesis: Hypothesis, experiment: Experiment) -> set[str]:
    wanted = {p.metric for p in hypothesis.predicts if p.metric} | {g.metric for g in hypothesis.requires}
    wanted |= {name for name, spec in experiment.metrics.items() if spec.guard}
    out: set[str] = set()
    todo = list(wanted)
    while todo:  # follow numerator/denominator/same_as down to the collected metrics
        name = todo.pop()
        if name in out:
            continue
        out.add(name)
        spec = experiment.metrics.get(name)
        if spec is not None:
            todo.extend(x for x in (spec.numerator, spec.denominator, spec.same_as) if x)
    return out


def missing_warning(name: str, problem: str) -> str:
    return (f"warning: metric {name!r} could not be extracted ({problem}); no prediction, guard or check "
            "uses it, so it is recorded as missing and the run goes on")
