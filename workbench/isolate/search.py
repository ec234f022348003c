"""The search of `wb isolate`: a minimal set of changes that turns a good configuration into a failing one.

Design, for the small k (2-8 changed settings) that debugging a deployment meets:

1. **Leave one out** (k probes): apply every change but one (bad minus c). A probe that *passes*
   shows c necessary: removing it from the bad config cures the failure. Every member of an
   interaction (a failure that needs several changes together: bf16 and HiCache and the unfixed
   geometry) is necessary in this sense, whatever the interaction's order, so one pass over the
   k changes finds all of them.
2. **Confirm** (1 probe): apply the necessary set N alone to the good config. If it fails, N is
   the answer: it reproduces the failure, and removing any member from the bad config cures it,
   so (failure monotone in the set of changes, the premise of ddmin too) N is 1-minimal.
2b. **Settle from the good side** when a leave-one-out probe was inconclusive (on pdsim: bad minus
   HiCache keeps the abort fix off, wedges, and loses 9 in 10 sessions, which cannot show the
   failure): if good + N' fails (N' = necessary + undecided), probe good + (N' - u) for each
   undecided u. A pass shows u needed (1-minimality as ddmin defines it); a failure drops u.
   These configs keep the fixes the failure does not need, so their sessions complete.
3. **Fallback: ddmin** (Zeller & Hildebrandt 2002) when the confirm probe passes or N is empty:
   the failure is not one conjunction (two independent causes each suffice, or it is not
   monotone). ddmin finds a 1-minimal failing subset without that premise; every probe is cached,
   so configs already decided are not run again.

Why not ddmin alone: it splits into halves first, and a 3-of-4 interaction fails no half, so it
probes all singletons and complements (13 distinct configs for k=4, 3 of them failing) where
leave-one-out plus a confirm needs k+1 = 5. Why not adaptive group testing (binary splitting):
it assumes each defective alone is positive (an OR of causes), the opposite of an interaction.
A full 2^k factorial answers the same question with every one of 2^k configs decided.

Under noise each probe is a sequential test (`workbench.isolate.decision`) at its own alpha.
**Alpha rule**: 80% of the search's alpha is split evenly over the 2k+1 probes the main path can
take (k leave-one-out, 1 confirm, at most k good-side checks); the j-th
ddmin probe gets 20% * 6/(pi^2 j^2) (a series that sums to 20%), so by the union bound the chance
that *any* probe decides wrongly is at most alpha, however long the fallback runs (a real probe reads
all its units and the completed ones, `workbench.isolate.adapter.judge`, within its own alpha). **Units**: the
budget is split evenly over the probes still planned; a probe that spends its share undecided is
inconclusive. A claim whose support includes an inconclusive probe is never "decided": the
result then gives the bounds it can prove (lower: surely necessary; upper: possibly necessary).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

MAIN_SHARE = 0.8
STATUSES = ("decided", "inconclusive", "no-failure")


@dataclass(frozen=True)
class ProbeRequest:
    """What the search asks: does good + `applied` fail? At `alpha`, within `max_units` units."""

    index: int
    applied: tuple[str, ...]
    phase: str  # leave-one-out | confirm | ddmin
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
        self.ddmin_count = 0
        self.undecided: list[Probe] = []
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

    def ddmin_alpha(self) -> float:
        self.ddmin_count += 1
        return self.alpha * (1 - MAIN_SHARE) * 6 / (math.pi ** 2 * self.ddmin_count ** 2)


def _fmt(xs: Any) -> str:
    return "{" + ", ".join(xs) + "}"


def isolate(changes: list[str], oracle: Oracle, *, alpha: float = 0.05, budget: float = math.inf) -> SearchResult:
    """Find a minimal subset of `changes` whose application to the good config reproduces the failure."""
    s = _Search(changes, oracle, alpha, budget)
    full = frozenset(changes)
    k = len(changes)
    a_main = alpha * MAIN_SHARE / (2 * k + 1)
    necessary, unknown, sufficient_left = [], [], []
    for i, c in enumerate(changes):
        p = s.run(full - {c}, "leave-one-out", f"does bad without {c} still fail?", None, a_main, k + 1 - i)
        if p is None:
            unknown.extend(changes[i:])
            break
        {"passes": necessary, "inconclusive": unknown, "fails": sufficient_left}[p.result.outcome].append(c)
    cand = frozenset(necessary + unknown)
    if s.out_of_budget:
        return _finish(s, "inconclusive", None, necessary, necessary + unknown,
                       "the budget ran out during the leave-one-out probes")
    confirm = s.run(cand, "confirm", f"does good with {_fmt(sorted(cand))} fail?", None, a_main, 1)
    if confirm is None:
        return _finish(s, "inconclusive", None, necessary, necessary + unknown,
                       "the budget ran out before the confirming probe")
    outcome = confirm.result.outcome
    if outcome == "fails" and not unknown:
        if not cand:
            return _finish(s, "decided", (), [], [], "the good config itself fails: nothing needs isolating")
        return _finish(s, "decided", tuple(c for c in changes if c in cand), necessary, necessary,
                       f"good + {_fmt(necessary)} fails, and removing any one of them from bad cures the "
                       f"failure; {_fmt(sufficient_left) if sufficient_left else 'no other change'} can be "
                       "removed from bad without curing it")
    if outcome == "fails":
        return _settle(s, confirm, necessary, unknown, sufficient_left, a_main)
    if outcome == "inconclusive":
        return _finish(s, "inconclusive", None, necessary, necessary + unknown,
                       f"the confirming probe (good + {_fmt(sorted(cand))}) was inconclusive")
    return _fallback(s, full, necessary, unknown)


def _settle(s: _Search, confirm: Probe, necessary: list[str], unknown: list[str], removable: list[str],
            a_main: float) -> SearchResult:
    """good + (necessary + unknown) fails; settle each unknown change u from the good side instead.

    good + (cand - u) passing shows u needed (1-minimality, as ddmin defines it); failing shows u
    not needed, and the smaller failing set is kept. Good-side configs keep the fixes the failure
    does not need, so their sessions complete where bad - u (the abort fix off: a wedge) lost them."""
    cand, parent, open_ = list(necessary + unknown), confirm.request.index, []
    for j, u in enumerate(unknown):
        rest = [c for c in cand if c != u]
        p = s.run(frozenset(rest), "minimality", f"does good with {_fmt(rest)} (without {u}) fail?", parent,
                  a_main, len(unknown) - j)
        if p is None or p.result.outcome == "inconclusive":
            open_.append(u)
        elif p.result.outcome == "fails":
            cand, parent = rest, p.request.index
            removable.append(u)
        else:
            necessary = [*necessary, u]
    order = s.changes.index
    if open_:
        return _finish(s, "inconclusive", None, [c for c in cand if c not in open_], cand,
                       f"good + {_fmt(sorted(cand, key=order))} fails, but whether {_fmt(open_)} is needed stayed "
                       "open (inconclusive probes" + (", budget spent)" if s.out_of_budget else ")"))
    minimal = tuple(c for c in s.changes if c in cand)
    return _finish(s, "decided", minimal, list(minimal), list(minimal),
                   f"good + {_fmt(minimal)} fails, and without any one of them it passes (from the bad side, or "
                   f"from the good side where the bad side's probe lost its units); "
                   f"{_fmt(sorted(set(removable), key=order)) if removable else 'no other change'} is not needed")


def _fallback(s: _Search, full: frozenset[str], necessary: list[str], unknown: list[str]) -> SearchResult:
    """The necessary changes alone do not fail: several causes, or no monotone failure. Run ddmin."""
    bad = s.run(full, "ddmin", "does the bad config fail?", None, s.ddmin_alpha(), 1)
    if bad is None or bad.result.outcome != "fails":
        status = "no-failure" if bad is not None and bad.result.outcome == "passes" else "inconclusive"
        return _finish(s, status, None, [], [], "the bad config does not reproduce the failure"
                       if status == "no-failure" else "whether the bad config fails is undecided")
    current, n, parent = sorted(full, key=s.changes.index), 2, bad.request.index
    while len(current) >= 2:
        moved = False
        parts = [current[i * len(current) // n:(i + 1) * len(current) // n] for i in range(n)]
        trials = [(p, "subset") for p in parts] + ([(sorted(set(current) - set(p), key=s.changes.index),
                                                    "complement") for p in parts] if n > 2 else [])
        for trial, kind in trials:
            probe = s.run(frozenset(trial), "ddmin", f"does good with {_fmt(trial)} fail? ({kind})", parent,
                          s.ddmin_alpha(), 4)
            if probe is None:
                return _finish(s, "inconclusive", None, [], list(current), "the budget ran out during ddmin")
            if probe.result.outcome == "inconclusive":
                s.undecided.append(probe)
            if probe.result.outcome == "fails":
                current, parent = trial, probe.request.index
                n = 2 if kind == "subset" else max(n - 1, 2)
                moved = True
                break
        if not moved:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    result = tuple(current)
    if s.undecided:
        return _finish(s, "inconclusive", None, [], list(result),
                       f"ddmin ended at {_fmt(result)}, which fails, but {len(s.undecided)} smaller config(s) "
                       "were inconclusive, so it may not be minimal")
    return _finish(s, "decided", result, list(result), list(result),
                   f"the necessary changes {_fmt(necessary)} alone do not fail (several causes, or a "
                   f"failure that is not monotone); ddmin found {_fmt(result)}, which fails while every "
                   "smaller config it tried passes")


def _finish(s: _Search, status: str, minimal: tuple[str, ...] | None, lower: list[str], upper: list[str],
            why: str) -> SearchResult:
    order = s.changes.index
    spent_alpha = sum(p.request.alpha for p in s.probes)
    return SearchResult(tuple(s.changes), status, minimal, tuple(sorted(set(lower), key=order)),
                        tuple(sorted(set(upper), key=order)), tuple(s.probes), s.spent, s.alpha, spent_alpha,
                        s.budget, "leave-one-out + confirm, ddmin fallback", why)


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
        return _finish(s, "inconclusive", None, [], list(changes), f"{len(minimal)} minimal failing cell(s) with "
                       f"every subset passing, {open_} inconclusive cell(s)")
    m = tuple(c for c in changes if c in minimal[0])
    return _finish(s, "decided", m, list(m), list(m), f"the one failing cell whose every subset passes "
                   f"({open_} inconclusive cell(s) elsewhere)")
