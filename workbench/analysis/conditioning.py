"""Variable findings of the confound scan, conditioned on the other variables and the experiment version.

A variable's association with the outcome is judged only within strata of runs that agree on every
other recorded variable and on the experiment version: pooling across them would credit one setting
with what another did (two settings always switched together) or with a harness change. A variable
that never varied inside any stratum is said to be untested by this history, not flagged; the
aliasing scan (aliasing.py) says which variable it moved with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from workbench.analysis import stats

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
            msg = (f"{var} never varied with the other variables and the experiment version held "
                   f"({len([r for r in known if var in r.variables])} run(s)): this history cannot test it alone.")
            out.append(make("variable", var, outcome, exp.id, False, msg, {"runs": []}, None, {}, None))
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


def _conditioned(make: Callable[..., Any], exp: Experiment, var: str, used: list[RunData], occurred: dict[int, bool],
                 counts: Counts, outcome: str, what: str, tested_by: dict[int, str]) -> Any:
    per = _per_value(var, used, occurred, counts)
    p = None
    effect: dict[str, Any] = {}
    if len(per) == 2:
        a, b = per
        pa, pb = per[a], per[b]
        p = stats.fisher(pa["runs_with_outcome"], pa["runs"], pb["runs_with_outcome"], pb["runs"])
        effect["risk_difference"] = pa["runs_with_outcome"] / pa["runs"] - pb["runs_with_outcome"] / pb["runs"]
        if pa["units_n"] and pb["units_n"]:
            effect["units_rate_difference"] = pa["units_k"] / pa["units_n"] - pb["units_k"] / pb["units_n"]
            effect["units_fisher_p"] = stats.fisher(int(pa["units_k"]), int(pa["units_n"]),
                                                    int(pb["units_k"]), int(pb["units_n"]))
    flagged = (p is not None and p < stats.ALPHA) or \
        (effect.get("units_fisher_p") is not None and effect["units_fisher_p"] < stats.ALPHA)
    summary = ", ".join(f"{var}={v}: {pv['runs_with_outcome']}/{pv['runs']} runs with {what}"
                        + (f" ({pv['units_k']:g}/{pv['units_n']:g} units)" if pv["units_n"] else "")
                        for v, pv in per.items())
    tests = sorted({tested_by[r.id] for r in used if r.id in tested_by})
    msg = (summary + (f"; Fisher p = {p:.2g} over runs" if p is not None else "")
           + (f", {effect['units_fisher_p']:.2g} over units" if effect.get("units_fisher_p") is not None else "")
           + f"; within runs holding the other variables and the experiment version ({len(used)} run(s): "
           + ", ".join(r.name for r in used[:8]) + (", ..." if len(used) > 8 else "") + ")")
    if tests:
        msg += f"; tested in controlled runs of hypothesis {', '.join(tests)}"
        if not flagged:
            msg += f", which found no association with {what}"
    msg += "."
    table = {**per, "runs": [r.name for r in used]}
    return make("variable", var, outcome, exp.id, bool(flagged), msg, table, p, effect, None)
