"""The confound scan: which recorded variables and guard metrics move with the outcome, across stored runs.

A guard metric (timeouts, aborts, errors) that occurred in every run where the outcome occurred is
a candidate confound until some run shows the outcome without it; the scan says so, with an exact
test and an effect size, and proposes the experiment that would separate the two.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from workbench.analysis import display, stats
from workbench.analysis.aliasing import alias_findings
from workbench.analysis.conditioning import STRATIFIED_TEST, Counts, by_execution, variable_findings
from workbench.analysis.data import USABLE_STATUSES, RunData, metric_value, run_query
from workbench.analysis.results import json_safe

if TYPE_CHECKING:
    from workbench.registry.experiment import Experiment
    from workbench.registry.folder import Registry
    from workbench.store.engine import Store


@dataclass(frozen=True)
class Finding:
    kind: str  # guard | variable | alias
    factor: str
    outcome: str
    experiment: str
    flagged: bool
    message: str
    # A guard's 2x2 counts; a variable's counts per value under "values" and an alias's per combination under
    # "combinations" (their own keys: a value may be named like any other key), the strata and "runs" used.
    table: dict[str, Any] = field(default_factory=dict)
    p: float | None = None  # the p-value of `test` the flag is judged on, as the test gives it, over `p_counts`
    effect: dict[str, Any] = field(default_factory=dict)
    proposal: dict[str, Any] | None = None
    # Fisher's exact test on one 2x2 table, or its stratified exact form when a variable is judged within
    # several strata of the other variables or, "within executions", each execution a stratum.
    test: str | None = None
    # How many tests `p` is the smallest of (a variable of 3+ values: each value against the rest; each of them
    # over runs and over units, where every run has units, unless Tarone's rule left one kind out: `effect`'s
    # `left_out` names it, `left_out_floor` the smallest p its tests could give on this design, `left_out_design`
    # the design); the flag is judged on `p_adjusted`, min(1, p * comparisons) (Bonferroni).
    comparisons: int = 1
    # A variable that moved with the outcome only across executions (or imported runs), never within one: told apart
    # from a flag (anything else that changed between executions could explain it). `p` is then the pooled test's;
    # otherwise a variable's flag and `p` are those of its test within executions, where an execution varied it.
    across_executions: bool = False
    # What `p` counts: "runs", or "units" where a variable's test over units (every run has them) is the one its flag
    # is judged on (its adjusted p the smaller); both are in `effect` (`runs_p`, `units_p`) where both were tested.
    p_counts: str = "runs"

    @property
    def p_adjusted(self) -> float | None:
        return None if self.p is None else stats.bonferroni(self.p, self.comparisons)

    def to_dict(self) -> dict[str, Any]:
        return json_safe({**asdict(self), "p_adjusted": self.p_adjusted})


_FISHER = "Fisher exact"
SHOWN_RUNS = 4  # runs a finding names; the rest are counted


def _more(runs: list[Any]) -> str:
    return f"; and {len(runs) - SHOWN_RUNS} more" if len(runs) > SHOWN_RUNS else ""


def _outcome(run: RunData, metric: str, exp: Experiment) -> tuple[float | None, float | None]:
    """(numerator, denominator) of the outcome proportion; the numerator alone says whether it occurred."""
    spec = exp.metrics[metric]
    k = metric_value(run, spec.numerator, exp)
    n = metric_value(run, spec.denominator, exp)
    return k, n


def _two_by_two(rows: list[tuple[bool, bool]]) -> tuple[list[list[int]], float, dict[str, Any]]:
    """rows of (factor present, outcome occurred) -> table, Fisher p, effect sizes."""
    a = sum(1 for f, y in rows if f and y)
    b = sum(1 for f, y in rows if f and not y)
    c = sum(1 for f, y in rows if not f and y)
    d = sum(1 for f, y in rows if not f and not y)
    p = stats.fisher(a, a + b, c, c + d) if (a + b) and (c + d) else None
    rd = (a / (a + b) - c / (c + d)) if (a + b) and (c + d) else None
    odds = None
    if (a + b) and (c + d):
        odds = float("inf") if b * c == 0 and a * d > 0 else (a * d / (b * c) if b * c else None)
    return [[a, b], [c, d]], p, {"risk_difference": rd, "odds_ratio": odds}


def _common_values(runs: list[RunData]) -> dict[str, str]:
    if not runs:
        return {}
    keys = set.intersection(*(set(r.variables) for r in runs))
    return {k: runs[0].variables[k] for k in sorted(keys) if len({r.variables[k] for r in runs}) == 1}


def _guard_aliases(exp: Experiment) -> list[tuple[str, list[str]]]:
    """Guard metrics, with aliases (same_as) folded into the metric they repeat."""
    groups: dict[str, list[str]] = {}
    for name, spec in exp.metrics.items():
        if not spec.guard:
            continue
        base = spec.same_as or name
        groups.setdefault(base, []).append(name)
    return [(base, names) for base, names in groups.items()]


def _propose(registry: Registry, exp: Experiment, guard_names: list[str], outcome: str, co_runs: list[RunData],
             runs: list[RunData], g_known: dict[int, float], scanned: str | None = None) -> dict[str, Any]:
    """Which variable to toggle (and which to hold) so the guard goes away while the outcome is measured."""
    hold = _common_values(co_runs)
    candidates: list[tuple[str, str]] = []
    # 1) data: a variable whose value differs between runs with the guard and runs without it
    with_g = [r for r in runs if g_known.get(r.id, 0) > 0]
    without_g = [r for r in runs if r.id in g_known and g_known[r.id] == 0]
    for var in sorted({v for r in runs for v in r.variables}):
        a = {r.variables.get(var) for r in with_g} - {None}
        b = {r.variables.get(var) for r in without_g} - {None}
        if a and b and not (a & b):
            candidates.append((var, "its value separates runs with and without " + guard_names[-1]))
    # 2) registry: a hypothesis isolating a variable under a guard on this metric (or the hypothesis being
    # scanned, whose own design is the separating experiment it proposes), holding what the runs held
    by_var: dict[str, str] = {}  # variable -> the first hypothesis isolating it that the proposal can name
    for h in registry.hypotheses:
        if h.experiment != exp.id or not h.isolates or h.isolates not in hold or not h.requires:
            continue
        guards_this = any(g.metric in guard_names or (exp.metrics.get(g.metric) is not None and
                                                      exp.metrics[g.metric].same_as in guard_names)
                          for g in h.requires)
        if not guards_this and h.id != scanned:
            continue
        if any(hold.get(k, v) != v for k, v in h.hold.items()):
            continue
        # The guard co-occurred where the variable had its control value; the treatment should remove it.
        control = h.arms.get("control", {}).get(h.isolates)
        if control is not None and hold[h.isolates] != control:
            continue
        if h.isolates not in [c[0] for c in candidates]:
            candidates.append((h.isolates, f"hypothesis {h.id} isolates it under "
                               + ", ".join(g.describe() for g in h.requires)))
        by_var.setdefault(h.isolates, h.id)
    # 3) registry: a hypothesis predicting that its treatment makes the guard's own rate fall (error_rate of error)
    # claims its variable removes the guard, where the runs had that variable at its control value
    arms: dict[str, tuple[str, str]] = {}
    claims: dict[str, str] = {}
    for h, var, frm, to, claim in _predicted_removals(registry, exp, guard_names, co_runs, hold):
        if var not in by_var:
            by_var[var], claims[var] = h.id, f"{claim} with {var}={to}"
        if var not in [c[0] for c in candidates]:
            candidates.append((var, f"hypothesis {h.id} predicts {claim} with {var}={to}"))
            arms[var] = (frm, to)
    if not candidates:
        return {"toggle": None, "hold": hold, "registered_as": None,
                "text": f"No recorded variable is known to remove {guard_names[-1]}: add one that does (a fix, a "
                        f"setting) and toggle it while holding {_kv(hold)}, measuring {outcome}."}
    var, why = candidates[0]
    registered = by_var.get(var)  # a hypothesis is named only where it toggles the variable proposed
    frm = hold.get(var)
    values = list(exp.variables[var].values or []) if var in exp.variables else []
    frm, to = arms.get(var) or (frm, next((v for v in values if v != frm), None) if frm else None)
    hold = {k: v for k, v in hold.items() if k != var}
    arrow = f" ({frm} -> {to})" if frm and to else ""
    g = guard_names[-1]
    text = f"Toggle {var}{arrow} while holding {_kv(hold) or 'everything else'}; record {g} and {outcome} in both arms"
    if registered:
        h = registry.hypothesis(registered)
        guards = "guards" if len(h.requires) > 1 else "guard"
        under = f", under the {guards} of hypothesis {registered} ({'; '.join(x.describe() for x in h.requires)})" \
            if h.requires else ""
        text += (f"{under}. If {outcome} persists in the arm without {g}, {g} does not explain it. This is hypothesis "
                 f"{registered}" + (f", which predicts {claims[var]}." if var in claims else "."))
    else:
        text += (f", requiring {g} == 0 in the arm where it should be gone. If {outcome} persists there, {g} does "
                 "not explain it.")
    return {"toggle": var, "from": frm, "to": to, "why": why, "hold": hold, "registered_as": registered, "text": text}


def _predicted_removals(registry: Registry, exp: Experiment, guard_names: list[str], co_runs: list[RunData],
                        hold: dict[str, str]) -> list[tuple[Any, str, str, str, str]]:
    """(hypothesis, variable, control value, treatment value, its prediction) for each hypothesis on `exp` that
    isolates a variable and predicts a rate of the guard (`error_rate`, whose numerator is `error`) in an arm that
    changes it below what it predicts in control (or a difference from control below 0): a claim that the change
    removes the guard. Only where its holds agree with the values the co-occurring runs held, and those runs had
    the variable at the control value (recorded, or unrecorded in all of them and its default)."""
    guards = {exp.repeated(g) for g in guard_names}
    found = []
    for h in registry.hypotheses:
        var = h.isolates
        if h.experiment != exp.id or var is None or var not in exp.variables:
            continue
        if any(hold.get(k, str(v)) != str(v) for k, v in h.hold.items()):
            continue
        control = h.arms.get("control", {}).get(var)
        unrecorded = all(var not in r.variables for r in co_runs)
        had = exp.variables[var].default if unrecorded else hold.get(var)
        if control is None or had is None or str(had) != str(control):
            continue
        rates = [p for p in h.predicts if (spec := exp.metrics.get(exp.repeated(p.metric))) is not None
                 and spec.kind == "proportion" and spec.numerator and exp.repeated(spec.numerator) in guards]
        floor = max((p.region.bounds()[0] for p in rates if p.arm == "control"), default=float("-inf"))
        for p in rates:
            arm = p.arm or (p.difference[0] if p.difference and p.difference[1] == "control" else None)
            to = h.arms.get(arm, {}).get(var) if arm and arm != "control" else None
            if to is None or str(to) == str(control):
                continue
            if p.region.bounds()[1] < (floor if p.arm else 0):
                found.append((h, var, str(control), str(to), p.describe()))
                break
    return found


def _kv(d: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())


def scan_confounds(store: Store, registry: Registry, hypothesis_id: str | None = None) -> list[Finding]:
    """Scan stored runs for variables and guard metrics associated with each predicted outcome."""
    if hypothesis_id is not None:
        hyps = [registry.hypothesis(hypothesis_id)]
    else:
        hyps = list(registry.hypotheses)
    targets: dict[str, set[str]] = {}
    for h in hyps:
        exp = registry.experiments.get(h.experiment)
        if exp is None:
            continue
        for p in h.predicts:
            spec = exp.metrics.get(exp.repeated(p.metric))
            if spec is not None and spec.kind == "proportion":
                targets.setdefault(exp.id, set()).add(exp.repeated(p.metric))
    findings: list[Finding] = []
    for eid, outcomes in sorted(targets.items()):
        exp = registry.experiments[eid]
        runs = [r for r in store.analysis_runs(run_query(exp)) if r.status in USABLE_STATUSES]
        tested_by = _controlled(store, runs)
        for outcome in sorted(outcomes):
            findings.extend(_scan_outcome(registry, exp, runs, outcome, hypothesis_id, tested_by))
    return findings


def _controlled(store: Store, runs: list[RunData]) -> dict[int, str]:
    """run id -> the hypothesis whose controlled execution produced it."""
    hyp_of = {ex.id: ex.hypothesis_id for ex in store.executions()}
    return {r.id: hyp_of[r.execution_id] for r in runs if r.execution_id in hyp_of}


def _without_per_replicate(exp: Experiment, runs: list[RunData]) -> list[RunData]:
    """The runs with per-replicate variables (a workload seed) dropped: they take a fresh value in every
    replicate by design, so they would alias with whatever else changed between executions and say nothing
    about the deployment; the run records them all the same."""
    drop = {n for n, spec in exp.variables.items() if spec.per_replicate}
    if not drop:
        return runs
    return [replace(r, variables={k: v for k, v in r.variables.items() if k not in drop}) for r in runs]


def _scan_outcome(registry: Registry, exp: Experiment, runs: list[RunData], outcome: str,
                  scanned: str | None = None, tested_by: dict[int, str] | None = None) -> list[Finding]:
    spec = exp.metrics[outcome]
    runs = _without_per_replicate(exp, runs)
    occurred: dict[int, bool] = {}
    counts: dict[int, tuple[float, float | None]] = {}
    for r in runs:
        k, n = _outcome(r, outcome, exp)
        if k is not None:
            occurred[r.id] = k > 0
            counts[r.id] = (k, n)
    known = [r for r in runs if r.id in occurred]
    out: list[Finding] = []
    what = spec.numerator or outcome
    own = {exp.repeated(m) for m in (spec.numerator, spec.denominator) if m}  # the rate's counts: no factor of it
    for base, names in _guard_aliases(exp):
        if exp.repeated(base) in own:
            continue
        label = names[0] if len(names) == 1 else f"{names[-1]} (= {base})" if base in names else names[0]
        g_known = {}
        for r in runs:
            v = metric_value(r, base, exp)
            if v is not None:
                g_known[r.id] = v
        both = [r for r in known if r.id in g_known]
        if both:
            out.append(_guard_finding(registry, exp, (label, names), outcome, what, both, runs, occurred, counts,
                                      g_known, scanned))
    variables = variable_findings(Finding, exp, known, occurred, counts, outcome, what, tested_by or {})
    aliases = alias_findings(Finding, registry, exp, known, occurred, counts, outcome, what)
    out.extend(_note_aliased(f, aliases) for f in variables)
    out.extend(aliases)
    return out


def _guard_finding(registry: Registry, exp: Experiment, guard: tuple[str, list[str]], outcome: str, what: str,
                   both: list[RunData], runs: list[RunData], occurred: dict[int, bool], counts: Counts,
                   g_known: dict[int, float], scanned: str | None) -> Finding:
    """A guard judged as a variable is, within executions. Its flag says the outcome and the guard cannot be told
    apart in some execution's runs: the outcome occurred there, always with the guard. A run where the outcome
    occurred without it says so only for its own execution: from another, anything else that changed between them
    (time, host, workload, settings) could explain it, so it is said to be across executions, not taken to clear
    the guard. The comparison with runs without the guard is made within the executions whose runs had and lacked
    it (each a stratum); where only other executions lacked it, that comparison is said to be across executions."""
    label, names = guard
    within = [rs for rs in by_execution(both, imported=True) if any(occurred[r.id] for r in rs)]
    confounded = [rs for rs in within if all(g_known[r.id] > 0 for r in rs if occurred[r.id])]
    with_y = [r for r in both if occurred[r.id]]
    co = [r for rs in confounded for r in rs if occurred[r.id]]
    apart = [r for r in with_y if g_known[r.id] == 0]
    table, pooled, effect = _two_by_two([(g_known[r.id] > 0, occurred[r.id]) for r in both])
    p, test, contrast = _guard_contrast(label, what, both, occurred, g_known, table, pooled, said=bool(apart))
    tab = {"outcome_with_guard": table[0][0], "no_outcome_with_guard": table[0][1],
           "outcome_without_guard": table[1][0], "no_outcome_without_guard": table[1][1],
           "runs": [r.name for r in both]}
    if not co:
        if apart:
            msg = (f"{what} occurred without {label} in {display.count(len(apart), 'run')} ("
                   + "; ".join(f"{r.name}: {what}={counts[r.id][0]:g}, {label}=0" for r in apart[:SHOWN_RUNS])
                   + _more(apart) + f"): {label} is not necessary for {what}.")
        else:
            msg = f"{what} did not occur in any run where {label} was recorded ({display.count(len(both), 'run')})."
        return Finding("guard", label, outcome, exp.id, False, msg, tab, p, effect, test=test)
    stratum = _common_values(co)
    # With a run elsewhere where the outcome occurred without the guard, the runs meant are those of the executions
    # that confound them.
    where = f" of {_which(confounded)} where it occurred only with {label}" if apart else ""
    msg = (f"In every run with {what}{where}"
           + (f" ({len(co)} of the {len(with_y)} runs with {what} where {label} was recorded" if apart else
              f" where {label} was recorded ({len(co)} of {len(with_y)}")
           + (f", all with {_kv(stratum)}" if stratum else "") + "), "
           f"{label} also occurred (" + "; ".join(f"{r.name}: {what}={counts[r.id][0]:g}, "
                                                 f"{label}={g_known[r.id]:g}" for r in co[:SHOWN_RUNS])
           + _more(co) + f"). {what} and {label} are confounded in these runs" + contrast)
    if apart:
        elsewhere = _which(by_execution(apart, imported=True), other=True)
        msg = (msg[:-1] + f"; {what} occurred without {label} only in {elsewhere} ("
               f"{display.count(len(apart), 'run')}: {_named_apart(apart)}), which anything else that changed "
               "between them could explain.")
    prop = _propose(registry, exp, names, outcome, co, runs, g_known, scanned)
    return Finding("guard", label, outcome, exp.id, True, msg, tab, p, effect, prop, test)


def _named_apart(runs: list[RunData]) -> str:
    """The runs of other executions, then the imported ones, each list cut at SHOWN_RUNS: an imported run counted
    among "other executions and an imported run" was left unnamed where the list was cut before it."""
    executed = [r for r in runs if r.execution_id is not None]
    imported = [r for r in runs if r.execution_id is None]
    parts = [", ".join(r.name for r in executed[:SHOWN_RUNS]) + _more(executed)] if executed else []
    if imported:
        parts.append("imported, of no execution: " + ", ".join(r.name for r in imported[:SHOWN_RUNS])
                     + _more(imported))
    return "; ".join(parts)


def _guard_contrast(label: str, what: str, both: list[RunData], occurred: dict[int, bool], g_known: dict[int, float],
                    table: list[list[int]], pooled: float | None, *, said: bool) -> tuple[float | None, str, str]:
    """(p, test, the end of a flagged guard's message): the outcome with the guard against without it, over runs,
    within the executions whose runs had and lacked it (each a stratum); where none did, over all runs, a
    comparison across executions (imported runs belong to none), which the message words only where it has not
    `said` already that the outcome occurred without the guard elsewhere."""
    tables = []
    for rs in by_execution(both, imported=False):
        sides = [[r for r in rs if g_known[r.id] > 0], [r for r in rs if g_known[r.id] == 0]]
        if all(sides):
            tables.append(tuple(x for side in sides for x in (sum(occurred[r.id] for r in side), len(side))))
    also = f"; {label} also occurred in {display.count(table[0][1], 'run')} without {what}" if table[0][1] else ""
    lead = f"{also}, and " if also else "; "
    if tables:
        k, n = sum(t[2] for t in tables), sum(t[3] for t in tables)
        one = len(tables) == 1
        p = stats.fisher(*tables[0]) if one else stats.stratified_exact(tables)
        return p, f"{_FISHER} within one execution" if one else f"{STRATIFIED_TEST} within executions", (
            f"{lead}{what} occurred in {k} of {display.count(n, 'run')} without {label} of the "
            + ("execution that had and lacked it (Fisher" if one else
               f"{len(tables)} executions that had and lacked it, each a stratum ({STRATIFIED_TEST}")
            + f" p {display.p_is(p)}).")
    if pooled is None:
        return None, _FISHER, (f"{also}, so it is not specific; no run without {label} exists to compare."
                               if also else ".")
    if said:
        return pooled, f"{_FISHER} across executions", f"{also}."
    elsewhere = "other executions" + (" or imported runs" if any(r.execution_id is None for r in both) else "")
    return pooled, f"{_FISHER} across executions", (
        f"{lead}{what} occurred in {table[1][0]} of {display.count(table[1][0] + table[1][1], 'run')} without "
        f"{label}, all in {elsewhere} (Fisher p {display.p_is(pooled)} across executions, which anything else "
        "that changed between them could explain).")


def _which(groups: list[list[RunData]], *, other: bool = False) -> str:
    """Groups of runs (`by_execution`) in words: "the execution", "the 2 executions and an imported run", or with
    `other`, "another execution", "other executions and other imported runs"."""
    n = sum(rs[0].execution_id is not None for rs in groups)
    imported = sum(len(rs) for rs in groups if rs[0].execution_id is None)
    words = []
    if n:
        words.append(("another execution" if other else "the execution") if n == 1 else
                     f"{'other' if other else f'the {n}'} executions")
    if imported:
        words.append("an imported run" if imported == 1 else f"{'other' if other else f'the {imported}'} imported runs")
    return " and ".join(words)


def _note_aliased(f: Finding, aliases: list[Finding]) -> Finding:
    """A variable finding pooled over runs where it moved with another variable says so."""
    partners = [a.factor.replace(f.factor, "").strip(" ~") for a in aliases if f.factor in a.factor.split(" ~ ")]
    if not partners or f.table.get("runs"):
        return f
    return replace(f, message=f.message[:-1] + f" (it moved with {', '.join(partners)}: aliased).")
