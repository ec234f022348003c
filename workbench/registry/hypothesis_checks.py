"""The hypothesis entries checked against each other and their experiments: unique ids, parents and a lineage
that is a tree, held and varied variables, predictions, guards, and what tests each assumption."""

from __future__ import annotations

from typing import Any, Mapping

from workbench.errors import ConfigError
from workbench.registry.common import did_you_mean, hint_of, id_meant
from workbench.registry.experiment import Experiment
from workbench.registry.experiment_checks import metric_hint
from workbench.registry.folder import EXPERIMENTS_DIR, Registry
from workbench.registry.hypothesis import Hypothesis, Prediction
from workbench.registry.problems import Found
from workbench.registry.yamlio import LocatedYaml


def check_hypotheses(reg: Registry) -> None:
    check_entries(reg, list(enumerate(reg.hypotheses)), Found())


def entry_ids(doc: LocatedYaml) -> list[tuple[int, str]]:
    """Each entry's index and the id it gives, for every entry up to the first that is not a mapping (what follows
    it means something else than was meant), an entry that fails its schema included."""
    entries = doc.data.get("hypotheses") if isinstance(doc.data, dict) else None
    out: list[tuple[int, str]] = []
    for i, e in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(e, dict):
            break
        if isinstance(e.get("id"), str):
            out.append((i, e["id"]))
    return out


def duplicate_ids(doc: LocatedYaml, ids_at: list[tuple[int, str]]) -> list[tuple[int, ConfigError]]:
    """Each entry of `ids_at` (index, id) whose id an entry before it gives, with its problem, in file order."""
    first_at: dict[str, int] = {}
    out: list[tuple[int, ConfigError]] = []
    for i, hid in ids_at:
        if hid in first_at:
            first = doc.line_of(("hypotheses", first_at[hid], "id"))
            out.append((i, doc.error(f"duplicate hypothesis id {hid!r} (also at line {first})", ("hypotheses", i, "id"),
                                     hint="give each hypothesis its own id (a child names its parent by id)")))
        first_at.setdefault(hid, i)
    return out


def check_entries(reg: Registry, placed: list[tuple[int, Hypothesis]], found: Found,
                   known: list[str] | None = None, unchecked: frozenset[str] = frozenset(),
                   declared: Mapping[str, Experiment] | None = None) -> None:
    """The hypotheses `placed` (each with its index in the file) against each other and their experiments.
    `known`: every id the file gives (an entry that failed its schema has one too); `unchecked`: experiments
    whose own file failed, which no hypothesis is checked against but for the variables `declared` (name -> such
    an experiment whose schema passed) gives: a broken template says nothing about them. A duplicate id is told
    of every entry of the file, one that failed its schema too: beside that problem, not after it is fixed."""
    doc = reg.hypotheses_doc
    assert doc is not None
    known = list(dict.fromkeys(known if known is not None else [h.id for _, h in placed]))
    duplicates: set[int] = set()
    for i, problem in duplicate_ids(doc, entry_ids(doc)):
        duplicates.add(i)
        with found.apart():
            raise problem
    for i, h in placed:
        at = ("hypotheses", i)
        with found.apart():
            # An entry copied from its parent, id unchanged, or a child given its parent's id, is told as a duplicate
            # id above: that it now names itself as parent follows from the id and is not told again.
            if h.parent == h.id and i not in duplicates:
                raise doc.error("a hypothesis cannot be its own parent", (*at, "parent"))
            if h.parent is not None and h.parent not in known:
                raise doc.error(f"parent {h.parent!r} of {h.id!r} is not a hypothesis in this file", (*at, "parent"),
                                hint=_id_hint(h.parent, known))
        if h.experiment not in unchecked:
            with found.apart():
                _check_against_experiment(reg, doc, i, h, known, found)
        elif h.experiment in (declared or {}):
            _check_variables((declared or {})[h.experiment], doc, at, h, found)
    _check_lineage(doc, [(i, h) for i, h in placed if i not in duplicates], found)


def _check_lineage(doc: LocatedYaml, placed: list[tuple[int, Hypothesis]], found: Found) -> None:
    """Lineage must be a tree: walk each chain of parents, bounded by the number of hypotheses. Each loop is told
    once, from the first hypothesis (in file order) whose chain reaches it. A hypothesis named its own parent is
    told by check_entries, not again here as a loop of one; nor is a loop through an entry whose id is a duplicate
    (not in `placed`): its parent is not the parent of the id's first entry, a loop only the duplicate makes."""
    parent_of = {h.id: h.parent for _, h in placed if h.parent != h.id}
    index = {h.id: i for i, h in placed}
    told: set[frozenset[str]] = set()
    for _, h in placed:
        path = [h.id]
        cur = h.parent if h.parent != h.id else None
        while cur is not None:
            if cur in path:  # the loop, named from the hypothesis where it closes
                loop = path[path.index(cur):] + [cur]
                if frozenset(loop) not in told:
                    told.add(frozenset(loop))
                    with found.apart():
                        raise doc.error(f"lineage cycle: {' -> '.join(loop)} (each the parent of the one before)",
                                        ("hypotheses", index[cur], "parent"))
                break
            path.append(cur)
            cur = parent_of.get(cur)


def _check_against_experiment(reg: Registry, doc: LocatedYaml, i: int, h: Hypothesis, known: list[str],
                              found: Found) -> None:
    """The entry against its experiment: its profile, its variables, its predictions, its guards and what tests
    its assumptions, each part (each held variable, arm, prediction, guard) apart: validate tells each problem."""
    at = ("hypotheses", i)
    exp = reg.experiments.get(h.experiment)
    if exp is None:
        raise doc.error(f"experiment {h.experiment!r} not found (no {EXPERIMENTS_DIR}/{h.experiment}.yaml)",
                        (*at, "experiment"), hint=did_you_mean(h.experiment, reg.experiments,
                                                               f"experiments: {', '.join(sorted(reg.experiments))}"))
    with found.apart():
        if h.profile is not None and h.profile not in exp.profiles:
            raise doc.error(f"profile {h.profile!r} is not a profile of experiment {exp.id!r}", (*at, "profile"),
                            hint=did_you_mean(h.profile, exp.profiles, f"profiles: {', '.join(exp.profiles)}"))
    _check_variables(exp, doc, at, h, found)
    arm_names = set(h.arms) or {"probe"}
    _check_predictions(exp, doc, at, h, arm_names, found)
    _check_guards(exp, doc, at, h, arm_names, found)
    for k, a in enumerate(h.assumptions):
        with found.apart():
            if a.tested_by is not None and a.tested_by not in known:
                raise doc.error(f"assumption tested_by {a.tested_by!r} is not a hypothesis",
                                (*at, "assumptions", k, "tested_by"), hint=_id_hint(a.tested_by, known))


def _check_variables(exp: Experiment, doc: LocatedYaml, at: tuple[Any, ...], h: Hypothesis, found: Found) -> None:
    """What the entry holds and what its arms set: declared variables, allowed values, arms that differ in the
    isolated variable alone. Each held variable and each arm's variable is checked apart; an isolated variable the
    experiment lacks is told once, not again in every arm measured against it."""

    def check_value(name: str, value: str, loc: tuple[Any, ...]) -> None:
        spec = exp.variables.get(name)
        if spec is None:
            raise doc.error(f"unknown variable {name!r} (experiment {exp.id!r} declares "
                            f"{', '.join(exp.variables)})", loc, hint=did_you_mean(name, exp.variables))
        try:
            spec.check(value)
        except ValueError as exc:
            raise doc.error(f"variable {name!r}: {exc}", loc, hint=hint_of(exc)) from None

    isolates = h.isolates
    with found.apart():
        if isolates is not None and isolates not in exp.variables:
            isolates = None
            raise doc.error(f"isolated variable {h.isolates!r} is not a variable of experiment {exp.id!r}",
                            (*at, "isolates"),
                            hint=did_you_mean(h.isolates, exp.variables, f"variables: {', '.join(exp.variables)}"))
    for name, value in h.hold.items():
        with found.apart():
            check_value(name, value, (*at, "hold", name))
            if name == h.isolates:
                raise doc.error(f"hold fixes {name!r}, the variable this hypothesis isolates", (*at, "hold", name),
                                hint=f"remove {name} from hold: the arms set it, one value each")
    seen_values: dict[str, str] = {}
    for arm, assignment in h.arms.items():
        for name, value in assignment.items():
            with found.apart():
                _check_arm_value(doc, at, h, isolates, arm, name, value, check_value)
        # An arm setting an unknown variable and not the isolated one most likely misspelt it (told above, with
        # the name meant): its missing the isolated variable follows from that typo and is not told again.
        typo = any(name not in exp.variables for name in assignment)
        if isolates is not None and not (typo and isolates not in assignment):
            with found.apart():
                if isolates not in assignment:
                    raise doc.error(f"arm {arm!r} does not set the isolated variable {isolates!r}", (*at, "arms", arm))
                value = assignment[isolates]
                if value in seen_values:
                    raise doc.error(f"arms {seen_values[value]!r} and {arm!r} both set {isolates}={value}: "
                                    "the arms do not differ", (*at, "arms", arm, isolates))
                seen_values[value] = arm


def _check_arm_value(doc: LocatedYaml, at: tuple[Any, ...], h: Hypothesis, isolates: str | None, arm: str,
                     name: str, value: str, check_value: Any) -> None:
    """One variable an arm sets: a declared one with an allowed value, not held, and the isolated one."""
    loc = (*at, "arms", arm, name)
    check_value(name, value, loc)
    if name in h.hold:
        raise doc.error(f"arm {arm!r} sets {name!r}, which hold also fixes", loc,
                        hint="a variable is either held or varied, not both")
    if isolates is not None and name != isolates:
        raise doc.error(f"arm {arm!r} sets {name!r} besides the isolated variable {isolates!r}: "
                        "arms may differ only in the isolated variable", loc,
                        hint=f"move {name} to hold, or isolate it in a hypothesis of its own")


def _check_guards(exp: Experiment, doc: LocatedYaml, at: tuple[Any, ...], h: Hypothesis, arm_names: set[str],
                  found: Found) -> None:
    """Each guard, apart: a metric the experiment produces, a bound it can break, an arm the hypothesis has."""
    for j, g in enumerate(h.requires):
        loc = (*at, "requires", j)
        with found.apart():
            if g.metric not in exp.metrics:
                raise doc.error(f"guard on metric {g.metric!r}, which experiment {exp.id!r} does not produce",
                                (*loc, "metric"), hint=metric_hint(g.metric, exp))
            _check_scale(exp.metrics[g.metric].kind, f"metric {g.metric!r}", g, False, doc, loc, guard=True)
        with found.apart():
            if g.arm is not None and g.arm not in arm_names:
                raise doc.error(f"guard names arm {g.arm!r}; arms are {', '.join(sorted(arm_names))}", (*loc, "arm"),
                                hint=did_you_mean(g.arm, arm_names))


def _id_hint(hid: str, ids: list[str]) -> str | None:
    """The id meant, or the ids there are when they are few enough to read."""
    return id_meant(hid, ids) or (f"hypotheses: {', '.join(ids)}" if len(ids) <= 12 else None)


def _check_predictions(exp: Experiment, doc: LocatedYaml, at: tuple[Any, ...], h: Hypothesis,
                       arm_names: set[str], found: Found) -> None:
    """Each prediction against the experiment, apart: a metric it produces on a scale it can reach (or, for a
    reachability hypothesis, a probed target), and arms the hypothesis has."""
    for j, p in enumerate(h.predicts):
        loc = (*at, "predicts", j)
        with found.apart():
            _check_prediction_metric(exp, doc, loc, h, p)
        for a in ([p.arm] if p.arm else []) + list(p.difference or ()):
            with found.apart():
                if a not in arm_names:
                    raise doc.error(f"prediction names arm {a!r}; arms are {', '.join(sorted(arm_names))}",
                                    (*loc, "arm" if p.arm else "difference"), hint=did_you_mean(a, arm_names))


def _check_prediction_metric(exp: Experiment, doc: LocatedYaml, loc: tuple[Any, ...], h: Hypothesis,
                             p: Prediction) -> None:
    """What one prediction judges: a metric of the experiment on a scale it can reach, or a probed target."""
    if h.kind == "reachability":
        if p.target is None:
            raise doc.error("a reachability prediction names the probed target (target:)", loc)
        if h.probe and p.target not in h.probe.targets:
            raise doc.error(f"target {p.target!r} is not among probe.targets", (*loc, "target"),
                            hint=did_you_mean(p.target, h.probe.targets))
        _check_scale("count", f"calls to {p.target}", p, p.difference is not None, doc, loc)
    elif p.target is not None:
        # Without metric: (it defaults to a probe's "calls"), removing target: would leave a prediction on no
        # metric of the experiment's: metric: was likely meant.
        hint = "remove target: (the metric is what is judged)" if "metric" in p.model_fields_set else \
            f"replace target: with metric: naming one of the experiment's metrics ({', '.join(exp.metrics)})"
        raise doc.error(f"target: names a probed code object, for a reachability hypothesis; {h.id!r} is of "
                        f"kind {h.kind}", (*loc, "target"), hint=hint)
    elif "metric" not in p.model_fields_set:
        # metric: defaults to a probe's "calls", which no experiment produces: it was left out, not chosen.
        raise doc.error("a prediction names the metric it judges (metric:)", loc,
                        hint=f"metrics: {', '.join(exp.metrics)}")
    elif p.metric not in exp.metrics:
        raise doc.error(f"prediction on metric {p.metric!r}, which experiment {exp.id!r} does not produce",
                        (*loc, "metric"), hint=metric_hint(p.metric, exp))
    else:
        kind = exp.metrics[p.metric].kind
        _check_scale(kind, f"metric {p.metric!r}", p, p.difference is not None, doc, loc)


def _check_scale(kind: str, what_on: str, region: Any, difference: bool, doc: LocatedYaml, loc: tuple[Any, ...],
                 guard: bool = False) -> None:
    """A bound a metric can never reach is a mistake (`at_least: 30` on a rate meant 30%): a proportion lies in
    [0, 1] (a difference of two in [-1, 1]) and a count is never below 0 (a difference of counts may be). A region
    holding every value the metric can take (`at_least: 0` on a count) could never be falsified, nor a guard
    violated. A continuous metric, or a difference of counts, has no natural range: nothing is checked."""
    if kind == "proportion":
        lo, hi, what = (-1.0, 1.0, "a difference of proportions") if difference else (0.0, 1.0, "a proportion")
    elif kind == "count" and not difference:
        lo, hi, what = 0.0, float("inf"), "a count"
    else:
        return
    for key in ("at_least", "at_most", "equals", "between"):
        value = getattr(region, key)
        for bound in value if isinstance(value, tuple) else [value]:
            if bound is not None and not lo <= bound <= hi:
                scale = f"[{lo:g}, {hi:g}]" if hi != float("inf") else f">= {lo:g}"
                raise doc.error(f"{key} {bound:g} on {what_on}: {what} lies in {scale}", (*loc, key),
                                hint="write a rate as a fraction (0.3 for 30%)" if kind == "proportion" else None)
    low, high = region.bounds()
    if low <= lo and high >= hi:
        given = [k for k in ("at_least", "at_most", "between") if getattr(region, k) is not None]
        written = " and ".join(f"{k}: {_written(getattr(region, k))}" for k in given)
        verb = "hold" if len(given) > 1 else "holds"
        never = "this guard can never be violated" if guard else "this prediction can never be falsified"
        raise doc.error(f"{written} on {what_on} {verb} every {what.removeprefix('a ')}: {never}",
                        (*loc, given[0]), hint=_BOUNDED_AWAY[what])


# What to write instead of a region that holds every value, by what the metric is.
_BOUNDED_AWAY = {
    "a proportion": "bound it away from 0 or from 1, e.g. at_least: 0.05 (a rate of 5% or more) or at_most: 0.02",
    "a difference of proportions": "bound it away from -1 or from 1, e.g. at_least: 0.05 (the first arm's rate at "
                                   "least 5 points above the second's) or at_most: 0",
    "a count": "bound it away from 0, e.g. at_least: 1 (one or more) or equals: 0 (none)",
}


def _written(value: Any) -> str:
    """A bound as written in the file: 0, 0.05, [0, 1]."""
    if isinstance(value, tuple):
        return f"[{', '.join(_written(v) for v in value)}]"
    return f"{value:g}"
