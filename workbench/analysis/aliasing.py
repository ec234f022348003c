"""Aliasing in the confound scan: variables that never varied independently of each other in the history.

Two settings switched on together in a deploy and off together in every rollback are *aliased*: no
stored run can say which of them goes with the outcome. Perfect aliasing is a one-to-one match of
their values over every run that recorded both; partial aliasing is a strong association (Cramér's
V >= PARTIAL_V) short of that. Either way the scan says so in one line and proposes the separating
experiment: toggle one variable while holding the other at the value its clean runs had, as a
ready-to-paste hypothesis entry (`wb confounds --write` appends it to hypotheses.yaml as a draft).
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import combinations
from typing import TYPE_CHECKING, Any, Callable

from workbench.analysis import display
from workbench.analysis.conditioning import ACROSS, by_execution
from workbench.registry.drafts import entry_yaml

if TYPE_CHECKING:
    from workbench.registry.experiment import Experiment
    from workbench.registry.folder import Registry
    from workbench.store.entities import RunData

PARTIAL_V = 0.7


def cramers_v(pairs: list[tuple[str, str]]) -> float:
    """Association of two categorical columns (0: independent, 1: each value of one fixes the other)."""
    n = len(pairs)
    rows, cols, cells = Counter(a for a, _ in pairs), Counter(b for _, b in pairs), Counter(pairs)
    k = min(len(rows), len(cols))
    if n == 0 or k < 2:
        return 0.0
    chi2 = sum((cells.get((a, b), 0) - rows[a] * cols[b] / n) ** 2 / (rows[a] * cols[b] / n)
               for a in rows for b in cols)
    return math.sqrt(chi2 / (n * (k - 1)))


def _one_to_one(pairs: list[tuple[str, str]]) -> bool:
    left: dict[str, str] = {}
    right: dict[str, str] = {}
    for a, b in pairs:
        if left.setdefault(a, b) != b or right.setdefault(b, a) != a:
            return False
    return True


def _rate(rs: list[RunData], occurred: dict[int, bool], counts: dict[int, tuple[float, float | None]]) -> float:
    """Outcome rate of a group of runs: over units when every run has them, else over runs."""
    kn = [counts[r.id] for r in rs]
    if all(n for _, n in kn):
        n = sum(n for _, n in kn)  # type: ignore[misc]
        return sum(k for k, _ in kn) / n if n else 0.0
    return sum(occurred[r.id] for r in rs) / len(rs)


def _aliased(runs: list[RunData], a: str, b: str) -> tuple[bool, float] | None:
    """(perfect, Cramér's V) where `a` and `b` each took two values or more over `runs` and moved together (one to
    one, or V >= PARTIAL_V); None otherwise."""
    pairs = [(r.variables[a], r.variables[b]) for r in runs]
    if len({p[0] for p in pairs}) < 2 or len({p[1] for p in pairs}) < 2:
        return None
    perfect, v = _one_to_one(pairs), cramers_v(pairs)
    return (perfect, v) if perfect or v >= PARTIAL_V else None


def _within(runs: list[RunData], a: str, b: str) -> list[tuple[int, list[RunData], tuple[bool, float]]]:
    """(execution, its runs, (perfect, V)) for each execution whose own runs moved `a` and `b` together: the ones
    whose comparison cannot tell the two apart."""
    return [(mine[0].execution_id, mine, found) for mine in by_execution(runs, imported=False)
            if (found := _aliased(mine, a, b)) is not None]


def alias_findings(make: Callable[..., Any], registry: Registry, exp: Experiment, known: list[RunData],
                   occurred: dict[int, bool],
                   counts: dict[int, tuple[float, float | None]], outcome: str, what: str) -> list[Any]:
    """One finding per aliased pair of variables among the runs with a recorded outcome, judged as a variable is,
    within executions: a pair some execution's runs moved together is flagged (that execution's comparison
    cannot tell which of the two it measured), even where other executions separate them; a pair that moved
    together only across executions (or imported runs, which belong to none) is a difference across executions,
    which anything else that changed between them could explain, told apart from a flag."""
    out = []
    names = sorted({v for r in known for v in r.variables})
    for a, b in combinations(names, 2):
        both = [r for r in known if a in r.variables and b in r.variables]
        pooled = _aliased(both, a, b)
        within = _within(both, a, b)
        if pooled is None and not within:
            continue
        used = [r for _, rs, _ in within for r in rs] if within else both
        perfect, v = (all(f[0] for _, _, f in within), min(f[1] for _, _, f in within)) if within else pooled
        combos = Counter((r.variables[a], r.variables[b]) for r in used)
        rates = {c: _rate([r for r in used if (r.variables[a], r.variables[b]) == c], occurred, counts)
                 for c in combos}
        seen = "; ".join(f"{a}={x} with {b}={y}: {display.count(n, 'run')}, {what} rate {rates[(x, y)]:.2g}"
                         for (x, y), n in sorted(combos.items()))
        if within:
            msg = _within_message(a, b, within, perfect, v, what, seen)
        elif perfect:
            msg = (f"{a} and {b} are perfectly aliased: they never varied independently in "
                   f"{display.count(len(both), 'run')} of {exp.id}, so this history cannot tell which one goes with "
                   f"{what} ({seen})")
        else:
            msg = (f"{a} and {b} are partially aliased (Cramér's V {v:.2f}): they moved together in most of "
                   f"{display.count(len(both), 'run')} of {exp.id}, so the history barely separates them ({seen})")
        if not within:
            msg += f"; no execution's runs moved them together, so this is {ACROSS}"
        prop = propose(registry, exp, (a, b), used, rates, outcome)
        table = {"combinations": {f"{a}={x}, {b}={y}": {"runs": n, f"{what} rate": rates[(x, y)]}
                                  for (x, y), n in combos.items()},
                 "runs": [r.name for r in used]}
        out.append(make("alias", f"{a} ~ {b}", outcome, exp.id, bool(within), msg + ".", table, None,
                        {"cramers_v": v, "perfect": perfect}, prop, across_executions=not within))
    return out


def _within_message(a: str, b: str, within: list[tuple[int, list[RunData], tuple[bool, float]]], perfect: bool,
                    v: float, what: str, seen: str) -> str:
    """"A and B are perfectly aliased within execution 3: its 4 runs never varied them independently, ..."."""
    n = sum(len(rs) for _, rs, _ in within)
    its = "its" if len(within) == 1 else "their"
    where = (f"execution {within[0][0]}: its" if len(within) == 1 else
             "executions " + ", ".join(str(ex) for ex, _, _ in within[:-1]) + f" and {within[-1][0]}: their")
    if perfect:
        return (f"{a} and {b} are perfectly aliased within {where} {display.count(n, 'run')} never varied them "
                f"independently, so {its} comparison cannot tell which one goes with {what} ({seen})")
    return (f"{a} and {b} are partially aliased within {where} {display.count(n, 'run')} (Cramér's V {v:.2f}) moved "
            f"them together in most, so {its} comparison barely separates them ({seen})")


def _registered(registry: Registry, exp: Experiment, var: str, other: str, other_value: str) -> str | None:
    for h in registry.hypotheses:
        if h.experiment == exp.id and h.isolates == var and h.hold.get(other) == other_value:
            return h.id
    return None


def propose(registry: Registry, exp: Experiment, pair: tuple[str, str], runs: list[RunData],
            rates: dict[tuple[str, str], float], outcome: str) -> dict[str, Any]:
    """The separating experiment: toggle one of the pair from its clean value to its outcome value while the
    other is held at its clean value. A registered hypothesis already doing so is named instead of a draft."""
    (lo_a, lo_b), lo = min(rates.items(), key=lambda kv: kv[1])
    (hi_a, hi_b), hi = max(rates.items(), key=lambda kv: kv[1])
    low = {pair[0]: lo_a, pair[1]: lo_b}
    high = {pair[0]: hi_a, pair[1]: hi_b}
    registered = {}
    choice = None
    for var, other in (pair, pair[::-1]):
        if low[var] == high[var]:
            continue
        reg = _registered(registry, exp, var, other, low[other])
        if reg:
            registered[var] = reg
        elif choice is None:
            choice = (var, other)
    if choice is None:
        names = ", ".join(f"{h} (toggles {v})" for v, h in registered.items())
        return {"toggle": None, "registered_as": next(iter(registered.values()), None), "entry": None,
                "text": f"Registered hypotheses already separate them: run {names}."}
    var, other = choice
    hold = {other: low[other], **_common_others(runs, pair)}
    threshold = _between(lo, hi)
    if threshold is None:
        return {"toggle": var, "from": low[var], "to": high[var], "hold": hold, "registered_as": None,
                "entry": None, "text": f"No draft: {outcome} read {lo:.3g} with both at the clean values and "
                f"{hi:.3g} with both changed, too close for a threshold between them to tell the two apart."}
    hid = f"{var.replace('_', '-')}-apart-from-{other.replace('_', '-')}"
    entry = {
        "id": hid,
        "claim": f"{var} alone changes {outcome}: with {other} held at {low[other]}, switching {var} "
                 f"{low[var]} -> {high[var]} reproduces what the aliased runs showed.",
        "experiment": exp.id, "isolates": var,
        "arms": {"control": {var: low[var]}, "treatment": {var: high[var]}},
        "hold": hold,
        "predicts": [{"metric": outcome, "arm": "treatment", "at_least": threshold,
                      "why": f"aliased runs: {lo:.2g} with both at the clean values, {hi:.2g} with both changed"}],
        "falsified_if": f"{outcome} stays below {f'{threshold:.8f}'.rstrip('0')} with {var}={high[var]} and "
                        f"{other}={low[other]}.",
    }
    text = (f"Separate them: toggle {var} ({low[var]} -> {high[var]}) while holding "
            + ", ".join(f"{k}={v}" for k, v in hold.items()) + f"; measure {outcome} in both arms"
            + (f" (hypothesis {', '.join(registered.values())} already toggles the other)" if registered else "")
            + ". Paste the entry below into hypotheses.yaml, or run `wb confounds --write`.")
    return {"toggle": var, "from": low[var], "to": high[var], "hold": hold, "registered_as": None,
            "entry": entry, "entry_yaml": entry_yaml(entry), "text": text}


def _between(lo: float, hi: float) -> float | None:
    """The threshold a draft predicts: the two rates' midpoint floored to 2 decimals (0.47 between 0 and 0.94),
    or to as many more as keep it above `lo` (0.004 between 0 and 0.009: at 2 decimals it was 0, a prediction
    no rate can falsify, which the registry refuses); None where 8 decimals cannot put one between them."""
    for places in range(2, 9):
        scale = 10 ** places
        threshold = math.floor(round(scale * (lo + hi) / 2, 6)) / scale  # 100 * 0.29 is 28.999999999999996
        if lo < threshold <= hi:
            return threshold
    return None


def _common_others(runs: list[RunData], pair: tuple[str, str]) -> dict[str, str]:
    """Other variables every one of these runs had at one value: held at it."""
    keys = set.intersection(*(set(r.variables) for r in runs)) - set(pair) if runs else set()
    return {k: runs[0].variables[k] for k in sorted(keys) if len({r.variables[k] for r in runs}) == 1}
