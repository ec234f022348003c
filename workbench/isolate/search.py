"""The search of `wb isolate`: a minimal set of changes that turns a good configuration into a failing one.

Design, for the small k (2-8 changed settings) that debugging a deployment meets:

1. **Leave one out, from the smallest config known to fail** (k probes): start from the bad config
   and, for each change c in turn, probe the current failing config without c. A probe that *fails*
   drops c for good (the failure does not need it) and makes the smaller config the current one; a
   probe that *passes* shows c necessary: removing it cures the failure. With the failure monotone
   in the set of changes (the premise of ddmin too), "removing c from a superset cures it" means
   removing it from the final set cures it as well, so the current config at the end is 1-minimal.
   Every member of an interaction (bf16 and HiCache and the unfixed geometry) is necessary in this
   sense, whatever its order; where several causes each suffice (a alone, or b and c together) the
   walk drops one cause and ends at the other, 1-minimal (Zeller & Hildebrandt 2002 call this
   linear reduction; it is ddmin's last stage run from the start).
2. **Confirm** (1 probe, only when no removal failed): the bad config itself. If it passes, there
   is no failure to isolate ("no-failure").
3. **Settle from the good side** when a removal was inconclusive (on pdsim: bad minus HiCache keeps
   the abort fix off, wedges, and loses 9 in 10 sessions, which cannot show the failure): probe the
   final current config without each undecided u. A pass shows u needed; a failure drops u. Once
   the abort fix's removal failed, the current config keeps the fix, so these sessions complete.
   Removing from the current config, not from bad, is also why a change after the abort fix in the
   order is never probed in a wedged config at all.

Why not ddmin's halving: it splits into halves first, and a 3-of-4 interaction fails no half, so it
probes all singletons and complements (13 distinct configs for k=4, 3 of them failing) where the
walk needs k, plus a confirm only when nothing could be dropped. Why not adaptive group testing
(binary splitting): it assumes each defective alone is positive (an OR of causes), the opposite of an
interaction. A full 2^k factorial answers the same question with every one of 2^k configs decided.

Under noise each probe is a sequential test (`workbench.isolate.decision`) at its own alpha.
**Alpha rule**: the search's alpha is split evenly over the 2k+1 probes the walk can take (k
removals, 1 confirm, at most k good-side checks), so by the union bound the chance that *any* probe
decides wrongly is at most alpha (a real probe reads all its units and the completed ones,
`workbench.isolate.adapter.judge`, within its own alpha). **Units**: the budget is split evenly over
the probes still planned; a probe that spends its share undecided is inconclusive. A claim whose
support includes an inconclusive probe is never "decided": the result then gives the bounds it can
prove (lower: surely necessary; upper: possibly necessary).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from workbench.analysis import display

STATUSES = ("decided", "inconclusive", "no-failure")
METHOD = "leave-one-out from the smallest failing config, good-side settling"


@dataclass(frozen=True)
class ProbeRequest:
    """What the search asks: does good + `applied` fail? At `alpha`, within `max_units` units."""

    index: int
    applied: tuple[str, ...]
    phase: str  # leave-one-out | confirm | minimality | cure | factorial
    question: str
    parent: int | None
    alpha: float
    max_units: float


@dataclass(frozen=True)
class ProbeResult:
    outcome: str  # fails | passes | inconclusive
    k: float
    n: float
    units: float
    looks: int
    reasoning: str = ""
    ref: dict[str, Any] = field(default_factory=dict)  # where it is recorded (execution, hypothesis id)


@dataclass(frozen=True)
class Probe:
    request: ProbeRequest
    result: ProbeResult

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self.request), **{f"result_{k}" if k in ("k", "n") else k: v
                                           for k, v in asdict(self.result).items()}}


class Oracle(Protocol):
    def probe(self, request: ProbeRequest) -> ProbeResult: ...


@dataclass(frozen=True)
class SearchResult:
    changes: tuple[str, ...]
    status: str
    minimal: tuple[str, ...] | None
    lower: tuple[str, ...]
    upper: tuple[str, ...]
    probes: tuple[Probe, ...]
    units: float
    alpha: float
    alpha_spent: float
    budget: float
    method: str
    explanation: str
    cures: bool | None = None  # does removing `minimal` from the bad config cure it? None: not known

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["probes"] = [p.to_dict() for p in self.probes]
        return d


class _Search:
    def __init__(self, changes: list[str], oracle: Oracle, alpha: float, budget: float) -> None:
        if len(set(changes)) != len(changes):
            raise ValueError("changes must be distinct")
        self.changes = list(changes)
        self.oracle = oracle
        self.alpha = alpha
        self.budget = budget
        self.probes: list[Probe] = []
        self.cache: dict[frozenset[str], Probe] = {}
        self.out_of_budget = False

    @property
    def spent(self) -> float:
        return sum(p.result.units for p in self.probes)

    def run(self, applied: frozenset[str], phase: str, question: str, parent: int | None, alpha: float,
            planned_left: int) -> Probe | None:
        """Probe good + `applied` (or reuse a decided earlier probe of the same config)."""
        if applied in self.cache and self.cache[applied].result.outcome != "inconclusive":
            return self.cache[applied]
        remaining = self.budget - self.spent
        if remaining <= 0:
            self.out_of_budget = True
            return None
        req = ProbeRequest(len(self.probes), tuple(c for c in self.changes if c in applied), phase, question,
                           parent, alpha, max(1.0, remaining / max(planned_left, 1)))
        probe = Probe(req, self.oracle.probe(req))
        self.probes.append(probe)
        self.cache[applied] = probe
        return probe


def _fmt(xs: Any) -> str:
    return "{" + ", ".join(xs) + "}"


def _unneeded(removable: list[str], changes: list[str]) -> str:
    """The changes the failure was shown not to need, or that it needs them all (removable is empty then: a
    change leaves the set only when its removal failed)."""
    if not removable:
        return "every change is needed"
    return f"{_fmt(sorted(set(removable), key=changes.index))} is not needed"


def isolate(changes: list[str], oracle: Oracle, *, alpha: float = 0.05, budget: float = math.inf) -> SearchResult:
    """Find a minimal subset of `changes` whose application to the good config reproduces the failure."""
    s = _Search(changes, oracle, alpha, budget)
    k = len(changes)
    a_probe = alpha / (2 * k + 1)
    current, failing = list(changes), None  # the smallest config known to fail, and the probe that showed it
    necessary, unknown, removable = [], [], []
    for i, c in enumerate(changes):
        rest = [x for x in current if x != c]
        base = f"good with {_fmt(current)}" if failing else "bad"
        p = s.run(frozenset(rest), "leave-one-out", f"does {base} without {c} still fail?",
                  failing.request.index if failing else None, a_probe, k + 1 - i)
        if p is None:  # a removal that passed shows a change needed only once some config is known to fail
            return _finish(s, "inconclusive", None, necessary if failing else [], current,
                           "the budget ran out during the leave-one-out probes")
        if p.result.outcome == "fails":
            current, failing = rest, p
            removable.append(c)
        else:
            (necessary if p.result.outcome == "passes" else unknown).append(c)
    if failing is None:
        failing = s.run(frozenset(current), "confirm", "does the bad config fail?", None, a_probe, 1)
        if failing is None:
            return _finish(s, "inconclusive", None, [], current, "the budget ran out before the confirming probe")
        if failing.result.outcome == "passes":
            return _finish(s, "no-failure", None, [], [], "the bad config does not reproduce the failure")
        if failing.result.outcome != "fails":  # none is surely needed, each of them possibly
            return _finish(s, "inconclusive", None, [], current, "whether the bad config fails is undecided")
    if unknown:
        return _settle(s, failing, current, unknown, removable, a_probe)
    return _decided(s, current, failing, a_probe,
                    f"good + {_fmt(current)} fails, and without any one of them it passes; "
                    + _unneeded(removable, s.changes))


def _settle(s: _Search, confirm: Probe, cand: list[str], unknown: list[str],
            removable: list[str], a_probe: float) -> SearchResult:
    """good + `cand` fails; settle each change u whose removal was inconclusive by removing it from `cand`.

    good + (cand - u) passing shows u needed; failing shows u not needed, and the smaller failing set
    is kept. These configs keep the fixes the failure does not need, so their sessions complete where a
    removal from a bigger config (the abort fix off: a wedge) lost them."""
    parent, open_ = confirm.request.index, []
    for j, u in enumerate(unknown):
        rest = [c for c in cand if c != u]
        p = s.run(frozenset(rest), "minimality", f"does good with {_fmt(rest)} (without {u}) fail?", parent,
                  a_probe, len(unknown) - j)
        if p is None or p.result.outcome == "inconclusive":
            open_.append(u)
        elif p.result.outcome == "fails":
            cand, parent = rest, p.request.index
            removable.append(u)
    order = s.changes.index
    if open_:
        return _finish(s, "inconclusive", None, [c for c in cand if c not in open_], cand,
                       f"good + {_fmt(sorted(cand, key=order))} fails, but whether {_fmt(open_)} is needed stayed "
                       "open (inconclusive probes" + (", budget spent)" if s.out_of_budget else ")"))
    minimal = [c for c in s.changes if c in cand]
    return _decided(s, minimal, s.probes[parent], a_probe,
                    f"good + {_fmt(minimal)} fails, and without any one of them it passes (each removal tried from a "
                    f"config known to fail, those that lost their units again from the smallest one); "
                    + _unneeded(removable, s.changes))


def _decided(s: _Search, minimal: list[str], failing: Probe, a_probe: float, why: str) -> SearchResult:
    """A 1-minimal set is decided; say whether removing it from the bad config cures the failure.

    Already shown when a passing probe's config contains bad - minimal (monotone failure: a subset of
    a passing config passes), e.g. bad - index_k_dtype passing in the seed world. Otherwise one probe
    asks (a spare slot of the 2k+1: no confirm was needed, since a removal failed). Bad - minimal
    failing means the bad config holds another cause: fixing the set found would not be enough."""
    if not minimal:
        return _finish(s, "decided", (), [], [], "the good config itself fails: nothing needs isolating")
    rest = frozenset(s.changes) - set(minimal)
    shown = next((p for p in s.probes if p.result.outcome == "passes" and rest <= frozenset(p.request.applied)), None)
    if shown is not None:
        cures, note = True, (f"removing them from bad cures it (shown by p{shown.request.index}, a passing probe that "
                             "contains bad without them)")
    else:
        p = s.run(rest, "cure", f"does bad without {_fmt(minimal)} still fail?", failing.request.index, a_probe, 1)
        outcome = p.result.outcome if p is not None else "inconclusive"
        cures = {"passes": True, "fails": False}.get(outcome)
        note = {True: "removing them from bad cures it", False: f"but bad without them still fails: another "
                f"cause remains among {_fmt([c for c in s.changes if c in rest])}"}.get(
            cures, "whether removing them from bad cures it stayed open")
    return replace(_finish(s, "decided", tuple(minimal), minimal, minimal, f"{why}; {note}"), cures=cures)


def _finish(s: _Search, status: str, minimal: tuple[str, ...] | None, lower: list[str], upper: list[str],
            why: str) -> SearchResult:
    order = s.changes.index
    spent_alpha = sum(p.request.alpha for p in s.probes)
    return SearchResult(tuple(s.changes), status, minimal, tuple(sorted(set(lower), key=order)),
                        tuple(sorted(set(upper), key=order)), tuple(s.probes), s.spent, s.alpha, spent_alpha,
                        s.budget, METHOD, why)


def factorial(changes: list[str], oracle: Oracle, *, alpha: float = 0.05, budget: float = math.inf) -> SearchResult:
    """The baseline: decide every one of the 2^k configs (alpha / 2^k each) and read the minimal failing set off.

    A failing cell every proper subset of which passes is minimal (the question the search answers);
    the answer is decided when exactly one cell is, whatever cells that contain none of it left open."""
    from itertools import combinations

    s = _Search(changes, oracle, alpha, budget)
    cells = [frozenset(c) for r in range(len(changes) + 1) for c in combinations(changes, r)]
    a = alpha / len(cells)
    out: dict[frozenset[str], str] = {}
    for i, cell in enumerate(cells):
        p = s.run(cell, "factorial", f"does good with {_fmt(sorted(cell))} fail?", None, a, len(cells) - i)
        if p is None:
            return _finish(s, "inconclusive", None, [], list(changes), "the budget ran out")
        out[cell] = p.result.outcome
    minimal = [f for f, o in out.items() if o == "fails" and all(out[g] == "passes" for g in out if g < f)]
    open_ = sum(o == "inconclusive" for o in out.values())
    if len(minimal) != 1:
        return _finish(s, "inconclusive", None, [], list(changes),
                       f"{display.count(len(minimal), 'minimal failing cell')} with every subset passing, "
                       f"{display.count(open_, 'inconclusive cell')}")
    m = tuple(c for c in changes if c in minimal[0])
    return _finish(s, "decided", m, list(m), list(m), f"the one failing cell whose every subset passes "
                   f"({display.count(open_, 'inconclusive cell')} elsewhere)")
