"""Variable findings of the confound scan, conditioned on the other variables and the experiment version.

A variable's association with the outcome is judged only within strata of runs that agree on every
other recorded variable and on the experiment version: pooling across them would credit one setting
with what another did (two settings always switched together) or with a harness change. A variable
that never varied inside any stratum is said to be untested by this history, not flagged; the
aliasing scan (aliasing.py) says which variable it moved with. The flag itself is judged within
executions (an execution's arms differ in the variable alone); an association seen only across
executions or imported runs is reported as a difference across executions.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable

from workbench.analysis import display, stats

if TYPE_CHECKING:
    from workbench.registry.experiment import Experiment
    from workbench.store.entities import RunData

Counts = dict[int, tuple[float, float | None]]


def strata(runs: list[RunData], var: str) -> dict[tuple[Any, ...], list[RunData]]:
    """Runs that recorded `var`, grouped by experiment version and every other variable's value."""
    names = sorted({v for r in runs for v in r.variables} - {var})
    out: dict[tuple[Any, ...], list[Any]] = {}
    for r in runs:
        if var not in r.variables:
            continue
        key = (r.experiment_version, *(r.variables.get(n, "?") for n in names))
        out.setdefault(key, []).append(r)
    return out


def informative_runs(runs: list[RunData], var: str) -> list[RunData]:
    """The runs of strata in which `var` took at least two values (the ones that can test it)."""
    used = []
    for group in strata(runs, var).values():
        if len({r.variables[var] for r in group}) > 1:
            used.extend(group)
    return sorted(used, key=lambda r: r.id)


def variable_findings(make: Callable[..., Any], exp: Experiment, known: list[RunData], occurred: dict[int, bool],
                      counts: Counts, outcome: str, what: str, tested_by: dict[int, str]) -> list[Any]:
    """One finding per variable with two or more values among `known` runs; `make` builds a Finding."""
    out = []
    for var in sorted({v for r in known for v in r.variables}):
        values = sorted({r.variables[var] for r in known if var in r.variables})
        if len(values) < 2:
            continue
        used = informative_runs(known, var)
        if not used:
            with_it = display.count(len([r for r in known if var in r.variables]), "run")
            msg = (f"{var} never varied with the other variables and the experiment version held "
                   f"({with_it}): this history cannot test it alone.")
            out.append(make("variable", var, outcome, exp.id, False, msg, {"values": {}, "strata": [], "runs": []},
                            None, {}, None))
            continue
        out.append(_conditioned(make, exp, var, used, occurred, counts, outcome, what, tested_by))
    return out


def _per_value(var: str, used: list[RunData], occurred: dict[int, bool], counts: Counts) -> dict[str, dict[str, Any]]:
    per: dict[str, dict[str, Any]] = {}
    for v in sorted({r.variables[var] for r in used}):
        rs = [r for r in used if r.variables[var] == v]
        kn = [counts[r.id] for r in rs if counts[r.id][1] is not None]
        per[v] = {"runs": len(rs), "runs_with_outcome": sum(occurred[r.id] for r in rs),
                  "units_k": sum(k for k, _ in kn) if kn else None,
                  "units_n": sum(n for _, n in kn if n is not None) if kn else None}
    return per


# The exact form of the Cochran-Mantel-Haenszel test (Fisher's exact test stratified); see stats.stratified_exact.
STRATIFIED_TEST = "exact conditional CMH"


def _strata_of(var: str, used: list[RunData]) -> tuple[list[str], list[tuple[str, list[RunData]]]]:
    """What the strata of `used` differ in, and the strata, each named by its values of those (the other
    variables and the experiment version; 'all runs' when there is one stratum)."""
    groups = list(strata(used, var).items())
    versions, differ = _stratum_keys(var, used)
    named = [(", ".join(_stratum_parts(rs[0], versions, differ)) or "all runs", rs) for _, rs in groups]
    return (["experiment version"] if versions else []) + differ, sorted(named, key=lambda g: g[0])


def _stratum_keys(var: str, used: list[RunData]) -> tuple[bool, list[str]]:
    """Whether the runs' experiment versions differ, and the other variables whose values differ among them."""
    others = sorted({v for r in used for v in r.variables} - {var})
    differ = [n for n in others if len({r.variables.get(n, "?") for r in used}) > 1]
    return len({r.experiment_version for r in used}) > 1, differ


def _stratum_parts(r0: RunData, versions: bool, differ: list[str]) -> list[str]:
    """A stratum's values of what strata differ in, as its name lists them ("version 1", "causal_model=wedge")."""
    # Imported evidence carries no experiment version, and a run may not record every variable: say so in words
    # (a page must never print a raw None or a placeholder).
    version = "no experiment version" if r0.experiment_version is None else f"version {r0.experiment_version}"
    return ([version] if versions else []) + [f"{n}={r0.variables[n]}" if n in r0.variables else f"{n} not recorded"
                                              for n in differ]


def _separating_names(var: str, groups: list[tuple[str, list[RunData]]], shown: list[str]) -> dict[str, str]:
    """The strata named `shown`, each named by only the variables that tell the strata shown from every other
    stratum (a full name lists all that differ between any two: with imported evidence, each variable it lacks).
    Variables are taken in their order, the experiment version last (a variable's value says more)."""
    versions, differ = _stratum_keys(var, [r for _, rs in groups for r in rs])
    parts = {name: _stratum_parts(rs[0], versions, differ) for name, rs in groups}
    order = list(range(int(versions), int(versions) + len(differ))) + ([0] if versions else [])
    pairs = [(a, b) for a in dict.fromkeys(shown) for b in parts if b != a]
    kept: list[int] = []
    for i in order:
        told = [(a, b) for a, b in pairs if any(parts[a][j] != parts[b][j] for j in kept)]
        if len(told) == len(pairs):
            break
        if any(parts[a][i] != parts[b][i] for a, b in pairs if (a, b) not in told):
            kept.append(i)
    return {name: ", ".join(parts[name][j] for j in sorted(kept)) or name for name in shown}


def _stratum_tables(var: str, first: str, groups: list[tuple[str, list[RunData]]], occurred: dict[int, bool],
                    counts: Counts) -> tuple[list[tuple[float, ...]], list[tuple[float, ...]] | None]:
    """Per stratum, (k1, n1, k2, n2) over runs (outcome occurred) and, when every run has them, over units:
    the runs where `var` is `first` against the others (with two values, the other value)."""
    runs_t, units_t = [], []
    for _, rs in groups:
        sides = [[r for r in rs if r.variables[var] == first], [r for r in rs if r.variables[var] != first]]
        runs_t.append(tuple(x for side in sides for x in (sum(occurred[r.id] for r in side), len(side))))
        if units_t is not None and all(counts[r.id][1] is not None for r in rs):
            units_t.append(tuple(x for side in sides for x in (sum(counts[r.id][0] for r in side),
                                                                 sum(counts[r.id][1] or 0 for r in side))))
        else:
            units_t = None  # type: ignore[assignment]
    return runs_t, units_t


def _mh_difference(tables: list[tuple[float, ...]]) -> float | None:
    """The Mantel-Haenszel common risk difference (strata weighted by n1*n2/(n1+n2)), unlike a pooled one
    immune to Simpson's paradox."""
    num = den = 0.0
    for k1, n1, k2, n2 in tables:
        if n1 > 0 and n2 > 0:
            w = n1 * n2 / (n1 + n2)
            num, den = num + w * (k1 / n1 - k2 / n2), den + w
    return num / den if den else None


def _counts(label: str, k: float, n: float, units: tuple[float, float] | None) -> str:
    """One value's counts in a message, pooled or within a stratum: "hicache=on 1/2 runs (14/160 units)". A group's
    values are joined with ", ", groups (strata) and clauses with "; "."""
    shown = display.recorded  # every digit, thousands separated: '{:g}' read 1,400,001 units as 1.4e+06
    return f"{label} {shown(k)}/{shown(n)} runs" + (f" ({shown(units[0])}/{shown(units[1])} units)" if units else "")


def _stratum_text(labels: tuple[str, str], groups: list[tuple[str, list[RunData]]], runs_t, units_t) -> str:
    parts = []
    for i, (name, _) in enumerate(groups[:4]):
        k1, n1, k2, n2 = runs_t[i]
        u = units_t[i] if units_t else None
        parts.append(f"{name}: " + ", ".join([_counts(labels[0], k1, n1, u[:2] if u else None),
                                              _counts(labels[1], k2, n2, u[2:] if u else None)]))
    more = f"; +{len(groups) - 4} more strata" if len(groups) > 4 else ""
    return "within each stratum (" + "; ".join(parts) + more + ")"


def _message(var: str, used: list[RunData], per: dict[str, dict[str, Any]], by: list[str], detail: str,
             test: str | None, p: float | None, comparisons: int, effect: dict[str, Any], what: str) -> str:
    """The pooled counts (for orientation), each stratum's counts, and the stratified test's result."""
    pooled = ", ".join(_counts(f"{var}={v}", pv["runs_with_outcome"], pv["runs"],
                               (pv["units_k"], pv["units_n"]) if pv["units_n"] else None) for v, pv in per.items())
    where = f"stratified by {', '.join(by)}" if by else "in one stratum"
    result = (f"{test} test {where} (the other variables and the experiment version held within each): "
              + _p_values(p, comparisons, effect) if p is not None else
              "within strata holding the other variables and the experiment version")
    return (f"runs with {what}, pooled over the {display.count(len(used), 'run')} that can test it ("
            + ", ".join(r.name for r in used[:8]) + (", ..." if len(used) > 8 else "") + f"): {pooled}; "
            + (f"{detail}; " if detail else "") + result)


def _p_values(p: float, comparisons: int, effect: dict[str, Any]) -> str:
    """"p = ... over runs, ... over units", with the Bonferroni-adjusted values where there were several comparisons."""
    said, adjusted = p_values(p, comparisons, effect, runs_named=True)
    return said + (f" ({adjusted})" if adjusted else "")


def p_values(p: float, comparisons: int, effect: dict[str, Any], *, runs_named: bool) -> tuple[str, str]:
    """("p = R over runs, U over units", "Bonferroni-adjusted over N comparisons, runs and units: RA over runs, UA over
    units"): a contrast's raw p over runs (`p`) and, where `effect` has them, over units, then their adjusted values
    where there were several comparisons ("" otherwise), and which tests were not counted (Tarone's rule,
    `left_out_text`). The finding's message and `wb confounds` each word them so. "over runs" is said where the p
    over units is, or with `runs_named`."""
    units = effect.get("units_p")
    over = " over runs" if runs_named or units is not None else ""
    said = f"p {display.p_is(p, comparisons)}{over}"
    if units is not None:
        said += f", {display.p_value(units, comparisons)} over units"
    left = effect.get("left_out") if units is not None else None
    note = left_out_text(left, effect.get("left_out_floor", 1.0), effect.get("left_out_design", ""),
                         comparisons) if left else ""
    if comparisons <= 1:
        return said, note
    units_adjusted = effect.get("units_p_adjusted") if units is not None else None
    adjusted = [f"{display.p_value(stats.bonferroni(p, comparisons))}{over}"] if left != "runs" else []
    if units_adjusted is not None and left != "units":
        adjusted.append(f"{display.p_value(units_adjusted)} over units")
    named = comparisons_named(comparisons, units_adjusted is not None and not left)
    return said, f"Bonferroni-adjusted over {named}: " + ", ".join(adjusted) + (f"; {note}" if note else "")


def left_out_text(kind: str, floor: float, design: str, comparisons: int) -> str:
    """"the comparison over runs was not counted: with 2 runs an arm it cannot reach p < 0.33": a kind of test that
    Tarone's rule left out of a contrast's comparisons (`_counted`), with why. `comparisons`: those counted, one a
    value where there are several."""
    if comparisons <= 1:
        return f"the comparison over {kind} was not counted: {_unreachable(floor, design, False)}"
    share = display.p_value(stats.ALPHA / comparisons)
    return (f"the {comparisons} comparisons over {kind} were not counted: {_unreachable(floor, design, True)} (each "
            f"one's share of {stats.ALPHA:g} is {share})")


def _unreachable(floor: float, design: str, several: bool) -> str:
    """"with 2 runs an arm it cannot reach p < 0.33": why Tarone's rule left a kind of test out."""
    return f"with {design} {'none can' if several else 'it cannot'} reach p < {_rounded_down(floor)}"


def _rounded_down(p: float) -> str:
    """`p` to two significant digits, rounded down, so that "cannot reach p < X" stays true (1/3: 0.33)."""
    step = 10.0 ** (math.floor(math.log10(p)) - 1)
    return f"{math.floor(p / step * (1 + 1e-9)) * step:.2g}"


def comparisons_named(comparisons: int, units: bool) -> str:
    """"2 comparisons, runs and units": what a contrast's comparisons are, where it was tested over units too."""
    if not units:
        return f"{comparisons} comparisons"
    if comparisons == 2:
        return "2 comparisons, runs and units"
    return f"{comparisons} comparisons, {comparisons // 2} values each over runs and units"


def _deciding(p: float, effect: dict[str, Any]) -> tuple[float, str]:
    """The p a contrast is judged on and what it counts: over units where every run has them and that p is the
    smaller, else over runs (`p`); of the two, only a kind of test that was counted (`_counted`). Both are scaled by
    the same comparisons, which count the two tests where both were counted (`_contrast`), so the smaller raw p
    decides and the choice is paid for."""
    units, left = effect.get("units_p"), effect.get("left_out")
    if units is None or left == "units":
        return p, "runs"
    return (units, "units") if left == "runs" or units < p else (p, "runs")


def _significant(p: float, comparisons: int, effect: dict[str, Any]) -> bool:
    """Whether a contrast shows an association: its deciding p (`_deciding`) below ALPHA after Bonferroni over its
    comparisons (its values and, where every run has units, the two tests over runs and over units)."""
    return stats.bonferroni(_deciding(p, effect)[0], comparisons) < stats.ALPHA


def _contrast(var: str, values: list[str], groups: list[tuple[str, list[RunData]]], occurred: dict[int, bool],
              counts: Counts, strata: str = "strata") -> tuple[float, int, dict[str, Any], tuple[Any, Any],
                                                                tuple[str, str]]:
    """The stratified test of `var`: its two values against each other, or, with more, each value against
    the rest, keeping the smallest p-value and the number of comparisons it was chosen from (the flag is
    judged on p times that number, Bonferroni: a variable of many values gets no more chances to be flagged
    than one of two). Where every run has units, each contrast is tested over runs and over units and the
    smaller p decides (`_deciding`): two tests, so the comparisons double. Judged on the smaller of two p at
    ALPHA, nothing bounded how often a variable with no effect was flagged; Bonferroni over the two bounds it by
    ALPHA whatever their correlation (studies/confound_false_alarms.py measures it: Fisher's exact test is
    conservative at small counts, uncorrected 1.6-4.9%, corrected 0.8-2.7%; and what the correction costs in
    power against an exact test of the smaller p, whose cost grows as units with the outcome x runs^2 x units).
    Tarone's rule (`_counted`) leaves out of the count a kind of test the design keeps from ALPHA: with 2 or 3 runs
    an arm the test over runs gives no p below 0.33 or 0.1, so the test over units is judged alone. `strata`: what
    the `groups` are, as the finding names a left-out test's design ("executions" within them).
    (raw p over runs, comparisons, effect, the strata's tables, labels)."""
    best: tuple[float, float, str, Any, Any] | None = None
    arms: dict[str, list[list[tuple[int, int]]]] = {"runs": [], "units": []}  # each contrast's strata's arm sizes
    for v in values[:1] if len(values) == 2 else values:
        runs_t, units_t = _stratum_tables(var, v, groups, occurred, counts)
        arms["runs"].append([(int(t[1]), int(t[3])) for t in runs_t])
        arms["units"].append([(int(t[1]), int(t[3])) for t in units_t or []])
        p_runs = stats.stratified_exact(runs_t)
        p_units = stats.stratified_exact(units_t) if units_t else 1.0
        if best is None or min(p_runs, p_units) < min(best[0], best[1]):
            best = (p_runs, p_units, v, runs_t, units_t)
    assert best is not None
    p_runs, p_units, first, runs_t, units_t = best
    effect: dict[str, Any] = {"risk_difference": _mh_difference(runs_t)}
    left = _counted(arms, _value_scale(values), strata) if units_t else {}
    scale = _value_scale(values) * (2 if units_t and not left else 1)
    if units_t:
        effect.update(units_rate_difference=_mh_difference(units_t), runs_p=p_runs, units_p=p_units,
                      units_p_adjusted=stats.bonferroni(p_units, scale), **left)
    other = f"{var}={values[1]}" if len(values) == 2 else f"{var} other than {first}"
    return p_runs, scale, effect, (runs_t, units_t), (f"{var}={first}", other)


def _counted(arms: dict[str, list[list[tuple[int, int]]]], values: int, strata: str = "strata") -> dict[str, Any]:
    """Tarone's rule for the choice of runs or units: {"left_out": KIND, "left_out_floor": P, "left_out_design":
    "2 runs an arm"} where the tests over one kind cannot reach their share of ALPHA (ALPHA over the `values`'
    contrasts, once the other kind alone is counted) whatever the outcomes, and those over the other can; {} where
    both are counted. `arms`: per kind, each contrast's strata's arm sizes. The design alone decides it (not the
    outcomes), so the family's error stays within ALPHA: a test left out could never have flagged, and the count
    covers every test that could. Bonferroni over both kinds paid, with the shipped 2-3 runs an arm, for a test
    over runs that can never decide (studies/confound_false_alarms.py: false alarms within ALPHA in every setting,
    and the test over units' power restored). `strata`: what the strata are, as the design is named ("2 runs an
    arm in each of 2 executions")."""
    level = stats.ALPHA / values
    floors = {kind: min(stats.attainable_floor(a, level) for a in contrasts) for kind, contrasts in arms.items()}
    shut = [kind for kind, floor in floors.items() if floor >= level]
    if len(shut) != 1:
        return {}
    kind = shut[0]
    design = min(arms[kind], key=lambda a: stats.attainable_floor(a, level))
    return {"left_out": kind, "left_out_floor": floors[kind], "left_out_design": _design(design, kind, strata)}


def _design(arms: list[tuple[int, int]], kind: str, strata: str = "strata") -> str:
    """"2 runs an arm", "2 runs against 4", "2 runs an arm in each of 3 strata": a contrast's arm sizes, its strata
    named as `strata` ("executions" where each execution is one)."""
    arms = [(n1, n2) for n1, n2 in arms if n1 > 0 and n2 > 0]
    named = [f"{display.count(n1, kind[:-1])} an arm" if n1 == n2 else f"{display.count(n1, kind[:-1])} against {n2}"
             for n1, n2 in sorted(set(arms))]
    if len(named) == 1:
        return named[0] + (f" in each of {len(arms)} {strata}" if len(arms) > 1 else "")
    return ", ".join(named) + f" in its {strata}"


def _value_scale(values: list[str]) -> int:
    """The contrasts a variable's values give: one for two values, each value against the rest for more."""
    return len(values) if len(values) > 2 else 1


def _conditioned(make: Callable[..., Any], exp: Experiment, var: str, used: list[RunData], occurred: dict[int, bool],
                 counts: Counts, outcome: str, what: str, tested_by: dict[int, str]) -> Any:
    """A variable judged within strata of runs that agree on everything else: pooling the strata into one
    table would let a variable that mostly sat in the clean stratum look protective (Simpson's paradox),
    so the strata's tables are combined by the exact conditional test instead, the run being the unit.

    The flag is judged as the clauses are worded, within executions, each a stratum: only an execution's arms
    differ in `var` alone. Where `var` moved with the outcome only across executions (or imported runs, which
    belong to none), anything else that changed between them (time, host, workload, harness) could explain it:
    the finding is a difference across executions, told apart from a flag."""
    per = _per_value(var, used, occurred, counts)
    by, groups = _strata_of(var, used)
    test = STRATIFIED_TEST if len(groups) > 1 else "Fisher exact"
    p, comparisons, effect, tables, labels = _contrast(var, list(per), groups, occurred, counts)
    detail = _stratum_text(labels, groups, *tables) if len(groups) > 1 else ""  # one: the pooled counts
    if len(per) > 2:
        left = effect.get("left_out")
        units = (f", each over {'units' if left == 'runs' else 'runs'} alone" if left else
                 ", each over runs and over units" if tables[1] else "")
        detail = (f"{labels[0]} against the other values, the value that differs most (judged on p-values "
                  f"times {comparisons}: Bonferroni over its {len(per)} values{units})"
                  + (f"; {detail}" if detail else ""))
    msg = _message(var, used, per, by if len(groups) > 1 else [], detail, test, p, comparisons, effect, what)
    executions = _execution_groups(var, groups)
    within = None
    if executions:
        values = sorted({r.variables[var] for _, rs in executions for r in rs})
        within = _contrast(var, values, executions, occurred, counts, "executions")[:3]
        msg += _within_text(var, executions, *within)
    flagged = within is not None and _significant(*within)
    across = not flagged and _significant(p, comparisons, effect)
    if across:
        imported = " (imported runs belong to none)" if any(r.execution_id is None for r in used) else ""
        msg += ("; so this is " if within else f"; no execution's arms differed in {var}{imported}, so this is ") \
            + ACROSS
    elif within is not None:  # the test the finding is judged on
        p, comparisons, effect = within
        test = f"{_within_test(executions)} within " + ("one execution" if _count(executions) == 1 else "executions")
    # the p shown is the one the flag (or the difference) is judged on, or a flag over units reads beside "p = 1"
    p, over = _deciding(p, effect)
    first = labels[0].removeprefix(f"{var}=")
    msg += _tested_text(var, first, groups, occurred, counts, tested_by, what, _value_scale(list(per)),
                        flagged or across) + "."
    table = {"values": per, "strata": [g[0] for g in groups], "runs": [r.name for r in used]}
    return make("variable", var, outcome, exp.id, flagged, msg, table, p, effect, None, test, comparisons,
                across_executions=across, p_counts=over)


# What a finding says of a variable that moved with the outcome only across executions.
ACROSS = ("a difference across executions, which anything else that changed between them could explain, not a "
          "controlled confound")


def _execution_groups(var: str, groups: list[tuple[str, list[RunData]]]) -> list[tuple[str, list[RunData]]]:
    """Per stratum, the runs of each execution whose own runs differ in `var` (the controlled tests of it), each
    group under its stratum's name."""
    return [(name, rs) for name, stratum in groups for rs in by_execution(stratum, imported=False) if _varied(var, rs)]


def by_execution(runs: list[RunData], *, imported: bool) -> list[list[RunData]]:
    """The runs of each execution (by its id, each in the order of `runs`), then, with `imported`, the imported
    runs together as one group. The confound scan's one rule for imported runs, which belong to no execution:
    they are never a controlled comparison, so a variable's or an alias's flag, and a guard's comparison with runs
    without it, read executions alone (`imported=False`; what imported runs show is a difference across
    executions). Whether the outcome occurred only with a guard is read in each run itself, so there the imported
    runs are one history, judged together (`imported=True`): one of them with both does not flag a guard the
    others had the outcome without."""
    out: dict[int, list[RunData]] = {}
    for r in runs:
        out.setdefault(r.execution_id, []).append(r)  # type: ignore[arg-type]
    none = out.pop(None, [])  # type: ignore[call-overload]
    return [out[ex] for ex in sorted(out)] + ([none] if imported and none else [])


def _varied(var: str, runs: list[RunData]) -> bool:
    return len({r.variables[var] for r in runs}) > 1


def _count(executions: list[tuple[str, list[RunData]]]) -> int:
    return len({r.execution_id for _, rs in executions for r in rs})


def _within_test(executions: list[tuple[str, list[RunData]]]) -> str:
    return STRATIFIED_TEST if len(executions) > 1 else "Fisher exact"


def _within_text(var: str, executions: list[tuple[str, list[RunData]]], p: float, comparisons: int,
                 effect: dict[str, Any]) -> str:
    """"; within the 2 executions whose arms differed in VAR (each a stratum): TEST p = ...": the test the flag is
    judged on."""
    n = _count(executions)
    which = "the one execution" if n == 1 else f"the {n} executions"
    each = " (each a stratum)" if len(executions) > 1 else ""
    return (f"; within {which} whose arms differed in {var}{each}: {_within_test(executions)} "
            + _p_values(p, comparisons, effect))


def _tested_text(var: str, first: str, groups: list[tuple[str, list[RunData]]], occurred: dict[int, bool],
                 counts: Counts, tested_by: dict[int, str], what: str, values: int, flagged: bool) -> str:
    """"; tested in controlled runs of hypothesis H, ...": what each hypothesis's own runs show, stratum by stratum.
    A hypothesis run under other settings too (a --set causal_model=wedge) has runs in several strata: one
    "found no association" for all of them read beside a stratum whose runs showed one. A stratum where a
    hypothesis's runs hold `var` at one value is no test of it; a hypothesis with no other is not named. Only an
    execution whose arms differ in `var` is a controlled test of it: where every execution held `var` at one value
    (it changed between executions, as --set does) the comparison is said to be across executions. A hypothesis's
    strata are each a test: their p-values are Holm-adjusted over them, or one of many strata would show an
    association by chance. Each stratum's p already pays for its choice of runs or units (`_association`); it is
    judged on its Holm-adjusted p times the contrasts the variable's `values` give."""
    found: dict[tuple[str, bool], list[tuple[str, str, bool]]] = {}  # (hypothesis, controlled) -> (stratum, p, shows)
    for h in sorted({h for _, rs in groups for r in rs if (h := tested_by.get(r.id)) is not None}):
        tests = []  # (stratum, controlled, over, p)
        for name, rs in groups:
            mine = [r for r in rs if tested_by.get(r.id) == h]
            within = _within_executions(var, mine)
            shows = _association(var, first, within or mine, occurred, counts, values,
                                 each_execution=bool(within))
            if shows is not None:
                tests.append((name, bool(within), *shows))
        adjusted = stats.holm([p for *_, p in tests])
        holm = f", Holm-adjusted over {len(tests)} strata" if len(tests) > 1 else ""
        for (name, controlled, test, over, _), p in zip(tests, adjusted):
            found.setdefault((h, controlled), []).append(
                (name, f"{test} p {display.p_is(p)} over {over}{holm}", p * values < stats.ALPHA))
    names = [name for items in found.values() for name, _, _ in items]
    short = _separating_names(var, groups, names) if len(groups) > 1 else {}
    said = {True: [], False: []}  # type: dict[bool, list[str]]
    for (h, controlled), items in found.items():
        apart = "" if controlled else f" (no execution's arms differed in {var})"
        said[controlled].append(f"hypothesis {h}{apart}, " + _clause([(short.get(n, n), p, shows)
                                                                      for n, p, shows in items], groups, what, flagged))
    return (f"; tested in controlled runs of {'; of '.join(said[True])}" if said[True] else "") + \
        (f"; compared only across executions of {'; of '.join(said[False])}" if said[False] else "")


def _clause(items: list[tuple[str, str, bool]], groups: list[tuple[str, list[RunData]]], what: str,
            flagged: bool) -> str:
    """What one hypothesis's runs show, from (stratum, "Fisher p ...", association shown) per stratum: each
    association with its p-value; beside a flag, where they show none, that they show none on their own ("found no
    association" would read as the finding's own result), with the p-value that says so."""
    shown = [(name, p) for name, p, shows in items if shows]
    none = [(name, p) for name, p, shows in items if not shows]
    if shown:
        return (f"whose runs show an association with {what}{_where(shown, groups)}"
                + (f", and none{_where([(n, '') for n, _ in none], groups)}" if none else ""))
    if flagged:
        return f"whose runs on their own show no association with {what}{_where(none, groups)}"
    return f"which found no association with {what}{_where([(n, '') for n, _ in none], groups)}"


def _where(named: list[tuple[str, str]], groups: list[tuple[str, list[RunData]]]) -> str:
    """" where STRATUM (p) or where STRATUM (p)": the settings a clause is true under (none when there is one stratum),
    each with its p-value where one is given."""
    if len(groups) == 1:
        return "".join(f" ({p})" for _, p in named if p)
    return " where " + " or where ".join(name + (f" ({p})" if p else "") for name, p in named)


def _within_executions(var: str, runs: list[RunData]) -> list[RunData]:
    """The runs of executions whose own runs (among `runs`) differ in `var`: the controlled tests of it."""
    varied = {rs[0].execution_id for rs in by_execution(runs, imported=False) if _varied(var, rs)}
    return [r for r in runs if r.execution_id in varied]


def _association(var: str, first: str, runs: list[RunData], occurred: dict[int, bool], counts: Counts,
                 values: int, *, each_execution: bool) -> tuple[str, str, float] | None:
    """(test, "units", p): the test of `var`=`first` against the other values over `runs` (one stratum's), over runs
    or over units where every run has them, whichever is smaller, as the finding is judged: doubled for that choice
    (Bonferroni over the two, as `_contrast`, and said after what it counts), or, where Tarone's rule leaves one
    kind out (`_counted`, at the share of ALPHA the variable's `values` contrasts leave), the other alone, and said
    so; None where they cannot test it: none of them, or all on one side. `each_execution`: runs of executions that
    each toggled `var`, each execution a stratum, as the finding's test within executions takes them (pooled by
    Fisher, the same runs gave that test's p as another number: 2.4e-05 beside its 2.3e-05)."""
    by_runs, by_units = [], []
    units = all(counts[r.id][1] is not None for r in runs)
    for rs in by_execution(runs, imported=False) if each_execution else [runs]:
        sides = [[r for r in rs if r.variables[var] == first], [r for r in rs if r.variables[var] != first]]
        if not all(sides):
            continue
        by_runs.append(tuple(x for side in sides for x in (sum(occurred[r.id] for r in side), len(side))))
        if units:
            by_units.append(tuple(int(x) for side in sides for x in (sum(counts[r.id][0] for r in side),
                                                                     sum(counts[r.id][1] or 0 for r in side))))
    if not by_runs:
        return None

    def test(tables: list[Any]) -> float:
        return stats.fisher(*tables[0]) if len(tables) == 1 else stats.stratified_exact(tables)

    tests = {"runs": test(by_runs), **({"units": test(by_units)} if units else {})}
    left = _counted({"runs": [[(t[1], t[3]) for t in by_runs]], "units": [[(t[1], t[3]) for t in by_units]]},
                    values, "executions" if each_execution else "strata") if units else {}
    if left:
        tests.pop(left["left_out"])
    over, p = min(tests.items(), key=lambda kv: kv[1])
    p = stats.bonferroni(p, len(tests))
    doubled = ", doubled since the smaller of the p over runs and over units was taken"
    # said, as "doubled" is, only beside a p below 1: a clause of no association needs no reason
    said = (f", the comparison over {left['left_out']} not counted "
            f"({_unreachable(left['left_out_floor'], left['left_out_design'], False)})" if left and p < 1 else
            doubled if len(tests) > 1 and p < 1 else "")
    return "Fisher" if len(by_runs) == 1 else STRATIFIED_TEST, over + said, p
