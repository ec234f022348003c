"""Judging one prediction: a region for a metric in an arm, or for the difference between two arms.

Falsified when the interval lies entirely outside the region, supported when entirely inside,
otherwise inconclusive with an estimate of how many more units would decide it.
"""

from __future__ import annotations

import math
from typing import Any

from workbench.analysis import clustered, display, regions
from workbench.analysis import sequential as seq
from workbench.analysis import stats
from workbench.analysis.data import RunData, completed_units, impossible_counts, metric_value, proportion_counts
from workbench.analysis.results import difference_arms
from workbench.registry.experiment import Experiment

OUTCOME_OF = regions.OUTCOME_OF


def combine_outcomes(outcomes: list[str]) -> str:
    """The verdict the predictions give together: one falsified prediction falsifies the claim;
    it is supported only when every prediction is."""
    if "falsified" in outcomes:
        return "falsified"
    if outcomes and all(o == "supported" for o in outcomes):
        return "supported"
    return "inconclusive"


def _fmt(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "?"
    if x == 0:
        return "0"
    # Three significant digits below 1000, every integer digit from there: 999.7 at .3g read "1e+03".
    return f"{x:.3g}" if abs(x) < 999.5 else f"{x:,.0f}"


def pooled(runs: list[RunData], metric: str, exp: Experiment, basis: str = "all") -> dict[str, Any]:
    """k/n of a proportion (or of an alias of one) over the runs that recorded both, with the runs that did not."""
    spec = exp.metrics[exp.repeated(metric)]
    k = n = 0.0
    used, unknown = [], []
    per_run = []
    for r in runs:
        kn = proportion_counts(r, spec, exp)
        if kn is not None and basis == "completed":
            cu = completed_units(r, exp)
            kn = None if cu is None else (kn[0], cu[1])
        if kn is None:
            unknown.append(r.name)
            continue
        k += kn[0]
        n += kn[1]
        used.append(r)
        per_run.append((r, kn[0], kn[1]))
    return {"k": k, "n": n, "used": used, "unknown": unknown, "per_run": per_run,
            "replayed": replayed_workload(used, exp)}


def _wanted(estimate: float, bounds: tuple[float, float]) -> str | None:
    """Where more data at this estimate would put the interval: "inside" or "outside" the region; None on a
    boundary (no amount of data decides it there)."""
    lo, hi = bounds
    return "inside" if lo < estimate < hi else "outside" if (estimate < lo or estimate > hi) else None


def units_needed_arm(k: float, n: float, bounds: tuple[float, float]) -> int | None:
    """Units (in total) at which the current rate would be decided as `clustered.rate_outcome` decides (Wilson's
    interval clears the region and the exact binomial test agrees); None if it never can."""
    if n <= 0:
        return None
    p = k / n
    want = _wanted(p, bounds)
    if want is None:
        return None  # the estimate sits on the boundary: no amount of data at this rate decides it
    return stats.search_smallest(n, lambda m: _rate_decides(p * m, m, bounds, want, stats.ALPHA))


def _rate_decides(k: float, n: float, bounds: tuple[float, float], want: str, level: float) -> bool:
    """Whether k of n would be judged `want` ("outside" or "inside") as `clustered.rate_outcome` judges: Wilson's
    interval at `level` (alpha, or its Student's t equivalent) and the exact binomial test at alpha agreeing."""
    return stats.relation(stats.wilson(k, n, level), bounds) == want and \
        stats.binomial_pvalue(k, n, bounds, want) < stats.ALPHA


def units_needed_diff(ka: float, na: float, kb: float, nb: float,
                      bounds: tuple[float, float]) -> tuple[int, int] | None:
    """Units in each arm (scaling both arms alike, so each keeps its share) at which the Newcombe interval would
    clear the region."""
    if na <= 0 or nb <= 0:
        return None
    want = _wanted(ka / na - kb / nb, bounds)
    if want is None:
        return None

    def ok(f: float) -> bool:
        return stats.relation(stats.newcombe(ka * f, na * f, kb * f, nb * f), bounds) == want

    f = stats.search_smallest(1.0, ok, integer=False)
    return None if f is None else (int(math.ceil(f * na)), int(math.ceil(f * nb)))


# ----------------------------------------------------------------------------- one prediction

def judge(pred: Any, arm: str | None, arms: dict[str, list[RunData]], exp: Experiment, *,
          basis: str = "all", sequential: bool = False, family: int = 1, looks: int = 1) -> dict[str, Any]:
    """Evaluate `pred` (for `arm` when the prediction covers every arm) over the arms' runs.

    `looks` is the sequential budget (max replicates): medians and shifts have no always-valid
    interval here, so a sequential execution spends alpha / looks on each look (Bonferroni), which
    keeps peeking from inflating errors at the price of wider intervals.
    """
    bounds = pred.region.bounds()
    where = f"{pred.difference[0]} - {pred.difference[1]}" if pred.difference else arm
    spec = exp.metrics.get(exp.repeated(pred.metric))  # an alias is judged as the metric it repeats
    # The region as written, with its bounds in the terms the estimate reads in (<= 0.02 (2%) beside 17.5%).
    region = pred.region.describe() + display.beside_region(
        bounds, display.scale(spec.kind if spec else None, bool(pred.difference)))
    out: dict[str, Any] = {"metric": pred.metric, "where": where, "region": region,
                           "bounds": [bounds[0], bounds[1]], "describe": f"{pred.metric} ({where}) {region}",
                           "why": pred.why, "basis": basis, "estimate": None, "interval": None,
                           "outcome": "inconclusive",
                           "p_against": None, "p_for": None, "more_units_needed": None, "note": ""}
    if spec is None:
        out["note"] = f"the experiment has no metric {pred.metric!r}"
        return out
    needed = [pred.difference[0], pred.difference[1]] if pred.difference else [arm]
    for a in needed:
        if not arms.get(a):
            out["note"] = f"no usable run in arm {a}"
            return out
    if spec.kind == "proportion":
        return _judge_proportion(pred, out, needed, arms, exp, basis, sequential, family, looks)
    # Medians and shifts have no always-valid interval here: a sequential execution spends alpha / looks on
    # each look, and alpha / family over its predictions (Bonferroni at the interval), so neither peeking
    # nor several predictions inflate false verdicts; a fixed design controls the family with Holm.
    return _judge_values(pred, out, needed, arms, exp, spec.kind,
                         stats.ALPHA / (looks * family) if sequential else stats.ALPHA)


def _replicate_counts(per_run: list[tuple[RunData, float, float]]) -> list[tuple[float, float]]:
    """(k, n) per replicate in the order they were run: the looks of a sequential execution.

    A replicate is one execution's: replicate numbers restart in every execution, so a pooled analysis
    keeps replicate 1 of one execution apart from replicate 1 of another (merging them made the reasoning
    count "7 run(s)" and then "2 runs" for the same arm)."""
    by_rep: dict[Any, list[float]] = {}
    for r, k, n in sorted(per_run, key=lambda t: (t[0].replicate or 0, t[0].id)):
        key = (r.execution_id, r.replicate) if r.replicate is not None else ("run", r.id)
        acc = by_rep.setdefault(key, [0.0, 0.0])
        acc[0] += k
        acc[1] += n
    return [(k, n) for k, n in by_rep.values()]


def replayed_workload(runs: list[RunData], exp: Experiment) -> bool | None:
    """True when the replicates replayed one workload: every per-replicate variable the experiment declares (a
    workload seed) took one recorded value across two or more replicates (`--set seed=N`, or evidence
    made before seeds were drawn per replicate). False when the recorded values show each replicate its own
    workload; None when nothing recorded tells (no such variable, a value unrecorded, a value shared by some)."""
    return workload_replayed(exp, [(r.execution_id, r.replicate, r.id, r.variables) for r in runs])


def workload_replayed(exp: Experiment, runs: list[tuple[Any, int | None, Any, dict[str, Any]]]) -> bool | None:
    """replayed_workload over runs given as (execution id, replicate, run id, variables): the one rule, for the
    report's runs (stored rows) as for the analysis' (RunData)."""
    names = [n for n, spec in exp.variables.items() if spec.per_replicate]
    reps = {rep for _, rep, _, _ in runs if rep is not None}
    if not names or len(reps) < 2:
        return None
    values = {tuple((v or {}).get(n) for n in names) for _, _, _, v in runs}
    if any(None in v for v in values):
        return None
    if len(values) == 1:
        return True
    # Keyed as _replicate_counts keys a replicate: one workload each, none shared with another replicate.
    by_rep: dict[Any, set[tuple[Any, ...]]] = {}
    for ex, rep, rid, v in runs:
        key = (ex, rep) if rep is not None else ("run", rid)
        by_rep.setdefault(key, set()).add(tuple((v or {}).get(n) for n in names))
    own = all(len(v) == 1 for v in by_rep.values()) and len(set().union(*by_rep.values())) == len(by_rep)
    return False if own else None


def _arm_effective(per_run: list[tuple[RunData, float, float]], replayed: bool | None = None) -> Any:
    reps = _replicate_counts(per_run)
    return clustered.effective([k for k, _ in reps], [n for _, n in reps], replayed)


def _effective_path(per_run: list[tuple[RunData, float, float]], e: Any = None,
                    replayed: bool | None = None) -> tuple[list[tuple[float, float]], Any]:
    """Cumulative (k, n) after each replicate, divided by the run-level divisor estimated from all of
    them (clustered.divisor, from `e` when given), and the arm's effective counts."""
    reps = _replicate_counts(per_run)
    e = e or clustered.effective([k for k, _ in reps], [n for _, n in reps], replayed)
    d = clustered.divisor(e, stats.ALPHA)
    path, ck, cn = [], 0.0, 0.0
    for k, n in reps:
        ck, cn = ck + k, cn + n
        path.append((ck / d, cn / d))
    return path, e


def _method(out: dict[str, Any], e: Any) -> None:
    out.update(method=e.method, method_reason=e.reason, n_effective=e.n_eff, design_effect=e.design_effect,
               dispersion=e.dispersion.phi)


def _judge_proportion(pred: Any, out: dict[str, Any], needed: list[str], arms: dict[str, list[RunData]],
                      exp: Experiment, basis: str, sequential: bool, family: int = 1, looks: int = 1) -> dict[str, Any]:
    spec = exp.metrics[exp.repeated(pred.metric)]
    bounds = (out["bounds"][0], out["bounds"][1])
    # A difference of two rates lies in [-1, 1]: it is judged on the real line, a rate on [0, 1].
    region = regions.Region(bounds[0], bounds[1],
                            regions.Support.REAL if pred.difference else regions.Support.PROPORTION)
    pools = {a: pooled(arms[a], pred.metric, exp, basis) for a in needed}
    shown = display.recorded
    bad = [f"{r.name} ({spec.numerator} {shown(metric_value(r, spec.numerator, exp))} of {spec.denominator} "
           f"{shown(metric_value(r, spec.denominator, exp))})"
           for a in needed for r in arms[a] if _no_rate(r, spec, exp)]
    left_out = f"left out, as no rate: {', '.join(bad)}" if bad else ""
    for a, pool in pools.items():
        if pool["n"] <= 0:
            what = "completed units" if basis == "completed" else f"{spec.numerator} and {spec.denominator}"
            out["note"] = (f"no run in arm {a} recorded {what}" if not pool["used"] else
                           f"arm {a} has zero units ({spec.denominator} = 0)") + (f"; {left_out}" if bad else "")
            out["unknown_runs"] = pool["unknown"]
            return out
    out["note"] = left_out
    if pred.difference is None:
        return _judge_rate(out, pools[needed[0]], region, sequential, family, looks)
    return _judge_rate_difference(out, pools[needed[0]], pools[needed[1]], region, sequential, family, looks)


def _add_note(out: dict[str, Any], text: str) -> None:
    """Append to a judgement's note, after what it already says."""
    out["note"] = f"{out['note']}; {text}" if out.get("note") else text


def _no_rate(run: RunData, spec: Any, exp: Experiment) -> bool:
    """Whether the run recorded both counts of the proportion and they are no rate (data.impossible_counts)."""
    k, n = metric_value(run, spec.numerator, exp), metric_value(run, spec.denominator, exp)
    return k is not None and n is not None and impossible_counts(k, n)


def _seq_kind(family: int, e: Any, *phis: float | None) -> str:
    """The confidence sequence's name, saying (as clustered.interval_label does for Wilson's) where the counts were
    divided by the run-level divisor (clustered.divisor: the design effect, with Student's t on the runs' df)."""
    each = f" (each at {100 * (1 - stats.ALPHA / family):.3g}% for {family} predictions)" if family > 1 else ""
    t = "" if e.df is None else f" (t, {e.df} df)"
    return "confidence sequence 95%" + t + each + clustered.widening(e.design_effect, *phis)


def _judge_rate(out: dict[str, Any], pool: dict[str, Any], region: regions.Region, sequential: bool,
                family: int, budget: int = 1) -> dict[str, Any]:
    k, n = pool["k"], pool["n"]
    out.update(k=k, n=n, estimate=k / n, runs=len(pool["used"]), unknown_runs=pool["unknown"])
    path, e = _effective_path(pool["per_run"], replayed=pool["replayed"])
    _method(out, e)
    snapped = region.snapped()
    bounds = (snapped.lo, snapped.hi)
    if sequential:
        # Replayed runs are copies, not independent draws of a run's rate: no bet on them.
        bet = not pool["replayed"]
        outcome, e_against, e_for = seq.judge_proportion(path, bounds, alpha=seq.ALPHA / family, run_bet=bet)
        out.update(interval=list(seq.e_interval(path, alpha=seq.ALPHA / family, run_bet=bet)),
                   interval_kind=_seq_kind(family, e, e.dispersion.phi), outcome=outcome, e_against=e_against,
                   e_for=e_for, looks=len(path), wilson=list(stats.wilson(k, n)))
        if seq.empty_interval(path, alpha=seq.ALPHA / family, run_bet=bet):
            out["empty_interval"] = True
            _add_note(out, "the looks' intervals have no rate in common (each rate was rejected at some look), so "
                           "the rate changed during the execution: the interval shown is its highest lower end alone, "
                           "nothing is supported on it, and more looks cannot make it whole again")
        if bet and outcome != "inconclusive":
            lower = seq.bet_lower(path, alpha=seq.ALPHA / family)
            out["drift_robust"] = regions.outcome((lower, 1.0), regions.Region(*bounds, region.support)) == outcome
        _sequential_rules(out, budget, lambda: seq.reachable(
            _replicate_counts(pool["per_run"]), bounds, budget, alpha=seq.ALPHA / family, run_bet=bet,
            divisor=_arm_divisor(pool["replayed"]), copies=pool["replayed"]))
    else:
        ci = clustered.rate_interval(e, stats.ALPHA)
        outcome, p_against, p_for, held = clustered.rate_outcome(e, region, stats.ALPHA)
        out.update(interval=list(ci), interval_kind=clustered.interval_label(e), outcome=outcome,
                   p_against=p_against, p_for=p_for)
        if held is not None:
            out["exact_held"] = "outside" if regions.outcome(ci, region) == "falsified" else "inside"
    out["exact"] = _exact_text(e.k_eff, e.n_eff, bounds)
    if out["exact"] and e.design_effect != 1:
        # The tail is taken on effective counts (the pooled ones divided by the design effect): a reader
        # who sees "X >= 16.9" next to "135/800" must be told why, and that a tail at fractional counts
        # is the binomial formula evaluated there, not an exact test.
        out["exact"] = (f"binomial tail {out['exact']} at effective counts ({_fmt(e.k)}/{_fmt(e.n)} divided by "
                        f"the design effect {clustered.deff_text(e.design_effect)}: fractional counts, so not an "
                        f"exact test)")
    elif out["exact"]:
        out["exact"] = f"exact binomial {out['exact']}"
    if out.get("exact_held"):
        side = "p_against" if out["exact_held"] == "outside" else "p_for"
        test = "exact binomial test on the same counts" if e.design_effect == 1 else \
            "binomial test on the effective counts"
        _add_note(out, f"but the {test} does not agree: {out['exact']}, two-sided p {display.p_is(out[side])}; too few "
                       "events to decide")
    if out["outcome"] == "inconclusive" and e.df is not None and not sequential:
        # Runs as the unit (t on the runs' degrees of freedom): more units inside these runs narrow
        # nothing, so the estimate is in whole runs of this arm's mean size.
        more = runs_needed_arm(e, len(pool["used"]), (region.lo, region.hi))
        out["more_runs_needed"] = more
        out["more_units_needed"] = None if more is None else int(math.ceil(more * n / len(pool["used"])))
        out["runs_narrow_only"] = True
    elif out["outcome"] == "inconclusive" and sequential and out.get("empty_interval"):
        pass  # no projection: the intersection stays empty, and the note says so
    elif out["outcome"] == "inconclusive" and sequential:
        # The confidence sequence, not a fixed Wilson interval, decides: projected at this rate, look by look.
        # Projected past clustered.FEW_RUNS runs, the few-runs floor no longer applies: from there the path is
        # divided by the design effect of the runs' own spread.
        lifts = None if e.unfloored is None else \
            (clustered.FEW_RUNS + 1, clustered.divisor(clustered.lifted(e), stats.ALPHA))
        more = seq.more_looks(_replicate_counts(pool["per_run"]), bounds, alpha=seq.ALPHA / family,
                              run_bet=not pool["replayed"], divisor=_arm_divisor(pool["replayed"]), lifts=lifts)
        out["more_units_needed"] = None if more is None else int(math.ceil(more * n / len(path)))
        if lifts is not None and more is not None and len(path) + more >= lifts[0]:
            out["floor_lifts"] = True
        out["more_runs_needed"] = more  # looks: one more run of each arm a look
    elif out["outcome"] == "inconclusive":
        out["more_units_needed"] = _fixed_more_units(e, n, len(pool["used"]), (region.lo, region.hi), out)
        if out["more_units_needed"] and pool["used"]:  # the same units in runs of this arm's mean size
            out["more_runs_needed"] = int(math.ceil(out["more_units_needed"] / (n / len(pool["used"]))))
    return out


def _fixed_more_units(e: Any, n: float, runs: int, bounds: tuple[float, float], out: dict[str, Any]) -> int | None:
    """More units (in runs of the arm's mean size) after which the fixed design's interval would clear the region,
    at the design effect that applies at the number of runs they make: the few-runs floor (clustered.FEW_RUNS) only
    while they make no more than FEW_RUNS runs; past that, the runs' own design effect (`out` is told so)."""

    def more_at(x: Any) -> int | None:
        total = units_needed_arm(x.k_eff, x.n_eff, bounds)
        return None if total is None else max(0, int(math.ceil(total * x.design_effect - n)))

    more = more_at(e)
    if e.unfloored is None or runs <= 0:
        return more
    mean = n / runs
    if more is not None and runs + math.ceil(more / mean) <= clustered.FEW_RUNS:
        return more
    free = more_at(clustered.lifted(e))
    if free is None:
        return more
    out["floor_lifts"] = True
    # On the floor it takes more than FEW_RUNS runs, and there the floor lifts: at least that many runs.
    return max(free, int(math.ceil((clustered.FEW_RUNS + 1 - runs) * mean)))


def runs_needed_arm(e: Any, runs: int, bounds: tuple[float, float], limit: int = 10_000) -> int | None:
    """More runs (of the arm's mean size, at its rate and design effect) after which the run-level interval
    (`clustered.rate_interval`: Wilson on effective counts at Student's t level on runs - 1 df) would clear
    the region; None if the estimate sits on a boundary or no number up to `limit` does."""
    if runs <= 0 or e.n_eff <= 0:
        return None
    want = _wanted(e.k_eff / e.n_eff, bounds)
    if want is None:
        return None

    def ok(total: int) -> bool:
        f = total / runs
        return _rate_decides(e.k_eff * f, e.n_eff * f, bounds, want, clustered.level_alpha(stats.ALPHA, total - 1))

    total = stats.search_smallest(runs, lambda t: ok(math.ceil(t)), limit=limit)
    return None if total is None else total - runs


def _exact_text(k: float, n: float, bounds: tuple[float, float]) -> str | None:
    """The exact binomial tail that speaks against the region (outside it) or for it (inside), in words."""
    lo, hi = bounds
    if n <= 0:
        return None

    def tail(c: float, upper: bool) -> str:
        op = ">=" if upper else "<="
        return f"P(X {op} {_fmt(k)} | n = {_fmt(n)}, p = {_fmt(c)}) {display.p_is(stats.binomial_tail(k, n, c, upper))}"

    if k / n > hi:
        return tail(hi, True)
    if k / n < lo:
        return tail(lo, False)
    # Inside: the weaker of the tails beyond each finite bound (both must be small for support).
    parts = [(stats.binomial_tail(k, n, hi, False), tail(hi, False))] if hi < 1 else []
    parts += [(stats.binomial_tail(k, n, lo, True), tail(lo, True))] if lo > 0 else []
    return max(parts)[1] if parts else None


def _judge_rate_difference(out: dict[str, Any], pa: dict[str, Any], pb: dict[str, Any], region: regions.Region,
                           sequential: bool, family: int, budget: int = 1) -> dict[str, Any]:
    ka, na, kb, nb = pa["k"], pa["n"], pb["k"], pb["n"]
    out.update(k=[ka, kb], n=[na, nb], estimate=ka / na - kb / nb,
               fisher_p=stats.fisher(int(ka), int(na), int(kb), int(nb)),
               boschloo_p=stats.boschloo(int(ka), int(na), int(kb), int(nb)))
    own = _arm_effective(pa["per_run"], pa["replayed"]), _arm_effective(pb["per_run"], pb["replayed"])
    ea, eb = clustered.joint(*own)
    (path_a, ea), (path_b, eb) = _effective_path(pa["per_run"], ea), _effective_path(pb["per_run"], eb)
    e = ea
    _method(out, e)
    names = difference_arms(out["where"])
    reason = "; ".join(f"{a}: {o.reason}" for a, o in zip(names, own))
    if any((o.design_effect, o.df) != (ea.design_effect, ea.df) for o in own):
        df = "" if ea.df is None else f" and the fewer degrees of freedom ({ea.df})"
        reason += (f"; both arms are judged with the larger design effect ({clustered.deff_text(ea.design_effect)})"
                   f"{df}, one variance model")
    out.update(method="run-level" if "run-level" in (ea.method, eb.method) else "binomial",
               method_reason=reason, n_effective=[ea.n_eff, eb.n_eff])
    bounds = (region.lo, region.hi)
    if sequential:
        ci = seq.difference_sequence(path_a, path_b, alpha=seq.ALPHA / family)
        out.update(interval=list(ci), interval_kind=_seq_kind(family, ea, *(o.dispersion.phi for o in own)),
                   outcome=regions.outcome(ci, region),
                   looks=min(len(path_a), len(path_b)))
        _sequential_rules(out, budget, lambda: seq.difference_reachable(
            _replicate_counts(pa["per_run"]), _replicate_counts(pb["per_run"]), region, budget,
            alpha=seq.ALPHA / family, divisors=(_arm_divisor(pa["replayed"]), _arm_divisor(pb["replayed"])),
            copies=(pa["replayed"], pb["replayed"])))
    else:
        df = ea.df

        def ci_at(al: float) -> tuple[float, float]:
            return stats.newcombe(ea.k_eff, ea.n_eff, eb.k_eff, eb.n_eff, clustered.level_alpha(al, df))

        ci = ci_at(stats.ALPHA)
        kind = ("Newcombe 95%" if df is None else f"Newcombe 95% (t, {df} df)") + \
            clustered.widening(ea.design_effect, *(o.dispersion.phi for o in own))
        out.update(interval=list(ci), interval_kind=kind,
                   outcome=regions.outcome(ci, region),
                   p_against=stats.interval_pvalue(ci_at, bounds, "outside"),
                   p_for=stats.interval_pvalue(ci_at, bounds, "inside"))
    if out["outcome"] == "inconclusive" and not sequential and ea.df is not None:
        # Runs as the unit (t on the runs' degrees of freedom): in whole runs, as for one arm's rate.
        runs = (len(_replicate_counts(pa["per_run"])), len(_replicate_counts(pb["per_run"])))
        more = runs_needed_diff(ea, eb, runs, bounds)
        out["more_runs_needed"] = more
        # The units those runs add to each arm, at that arm's own mean run size.
        if more is not None:
            _more_units(out, (int(math.ceil(more * na / runs[0])), int(math.ceil(more * nb / runs[1]))))
        out["runs_narrow_only"] = True
    elif out["outcome"] == "inconclusive" and not sequential:  # a fixed Newcombe interval's estimate
        runs = (len(_replicate_counts(pa["per_run"])), len(_replicate_counts(pb["per_run"])))
        by_arm = _fixed_more_units_diff((ea, eb), (na, nb), bounds)
        if by_arm is not None and any(o.unfloored is not None for o in own) and min(runs) > 0 and \
                min(r + math.ceil(m * r / x) for r, m, x in zip(runs, by_arm, (na, nb))) > clustered.FEW_RUNS:
            # Past clustered.FEW_RUNS runs an arm, the few-runs floor lifts: the arms' own design effects.
            free = _fixed_more_units_diff(clustered.joint(*map(clustered.lifted, own)), (na, nb), bounds)
            if free is not None:
                out["floor_lifts"] = True
                by_arm = tuple(max(f, int(math.ceil((clustered.FEW_RUNS + 1 - r) * x / r)))  # type: ignore[assignment]
                               for f, r, x in zip(free, runs, (na, nb)))
        if by_arm is not None:
            _more_units(out, by_arm)
    return out


def _fixed_more_units_diff(arms: tuple[Any, Any], ns: tuple[float, float],
                           bounds: tuple[float, float]) -> tuple[int, int] | None:
    """More units in each arm after which the fixed design's Newcombe interval on these (joint) arms would clear
    the region, at their design effect; None where no number does."""
    ea, eb = arms
    per_arm = units_needed_diff(ea.k_eff, ea.n_eff, eb.k_eff, eb.n_eff, bounds)
    if per_arm is None:
        return None
    return tuple(max(0, int(math.ceil(u * ea.design_effect)) - int(n))  # type: ignore[return-value]
                 for u, n in zip(per_arm, ns))


def _more_units(out: dict[str, Any], by_arm: tuple[int, int]) -> None:
    """A difference's more units: each arm's (in `where`'s order), and the larger as `more_units_needed`."""
    out.update(more_units_by_arm=list(by_arm), more_units_needed=max(by_arm))


def runs_needed_diff(ea: Any, eb: Any, runs: tuple[int, int], bounds: tuple[float, float],
                     limit: int = 10_000) -> int | None:
    """`runs_needed_arm` for a difference of two arms' rates: more runs in each arm (a replicate adds one to each,
    of that arm's mean size: arms of 6 and 3 runs grow by a sixth and a third) after which the run-level Newcombe
    interval (Student's t on the joint df plus the runs added) would clear the region."""
    ra, rb = runs
    if min(ra, rb) <= 0 or ea.n_eff <= 0 or eb.n_eff <= 0:
        return None
    want = _wanted(ea.k_eff / ea.n_eff - eb.k_eff / eb.n_eff, bounds)
    if want is None:
        return None
    df = ea.df if ea.df is not None else min(ra, rb) - 1

    def ok(more: int) -> bool:
        fa, fb = (ra + more) / ra, (rb + more) / rb
        ci = stats.newcombe(ea.k_eff * fa, ea.n_eff * fa, eb.k_eff * fb, eb.n_eff * fb,
                            clustered.level_alpha(stats.ALPHA, df + more))
        return stats.relation(ci, bounds) == want

    return stats.search_smallest(1, lambda t: ok(math.ceil(t)), limit=limit)


def _arm_divisor(replayed: bool | None) -> Any:
    return lambda ks, ns: clustered.divisor(clustered.effective(ks, ns, replayed), stats.ALPHA)


def _sequential_rules(out: dict[str, Any], budget: int, reachable: Any) -> None:
    """What every sequential judgement of rates obeys: no verdict before the second replicate, and from it
    to the budget, whether any verdict can still be reached (`reachable()`, for futility). Unset on one run
    (it cannot show how much runs differ, so its interval is no ground for projecting the next), and once
    the budget is spent (the execution ended, it did not stop)."""
    looks = out["looks"]
    if looks < seq.MIN_LOOKS and out["outcome"] != "inconclusive":
        out.pop("drift_robust", None)
        out.update(outcome="inconclusive", note=f"a sequential verdict waits for replicate {seq.MIN_LOOKS}: "
                   "one run cannot show how much runs differ")
    elif out["outcome"] == "inconclusive" and seq.MIN_LOOKS <= looks < budget:
        out["reachable"] = reachable()


def _values(runs: list[RunData], metric: str, exp: Experiment) -> tuple[list[float], list[str]]:
    vals, unknown = [], []
    for r in runs:
        v = metric_value(r, metric, exp)
        if v is None:
            unknown.append(r.name)
        else:
            vals.append(v)
    return vals, unknown


def _judge_values(pred: Any, out: dict[str, Any], needed: list[str], arms: dict[str, list[RunData]],
                  exp: Experiment, kind: str, alpha: float = stats.ALPHA) -> dict[str, Any]:
    bounds = (out["bounds"][0], out["bounds"][1])
    # A difference of two counts can be negative: only a metric's own values live on its support.
    region = regions.Region(bounds[0], bounds[1], regions.Support.of(None if pred.difference else kind))
    samples = {}
    for a in needed:
        vals, unknown = _values(arms[a], pred.metric, exp)
        if not vals:
            out["note"] = f"no run in arm {a} recorded {pred.metric}"
            out["unknown_runs"] = unknown
            return out
        samples[a] = vals
    if pred.difference is None:
        return _judge_median(out, samples[needed[0]], region, alpha)
    return _judge_shift(out, samples[needed[0]], samples[needed[1]], region, alpha)


def _level(confidence: float) -> str:
    """A confidence level in percent, to three digits or as many more as keep it under 100: 95%, 96.9%, 99.8%,
    99.95% (a whole percent made 99.8% "100%")."""
    text = f"{100 * confidence:.3g}"
    for digits in range(4, 10):
        if confidence >= 1 or float(text) < 100:
            break
        text = f"{100 * confidence:.{digits}g}"
    return text + "%"


def _judge_median(out: dict[str, Any], vals: list[float], region: regions.Region, alpha: float) -> dict[str, Any]:
    """The median by its order-statistic interval and the sign test that inverts it. A count predicted
    to be 0 (equals 0, at_most 0) claims the event never happens: its expected value is 0 only if
    every run counts 0, so one positive run refutes it exactly (p = 0)."""
    bounds = (region.lo, region.hi)
    m = stats.median_ci(vals, level=1 - alpha)
    # Too few runs for an order-statistic interval at the level: said so, naming the runs' range (one run has none),
    # never as an interval at a lower level ("order statistics (0%)" for one run). The name reads before the
    # interval (the verdict's text) and after it (the hypothesis page) alike.
    few = f"too few runs for a {_level(1 - alpha)} interval"
    few = f"range ({few})" if m.interval else few
    out.update(estimate=m.median, interval=list(m.interval) if m.interval else None, runs=m.n,
               interval_kind=few if m.warning else f"order statistics ({_level(m.confidence)})",
               confidence=m.confidence,
               p_against=stats.sign_pvalue(vals, bounds, "outside"), p_for=stats.sign_pvalue(vals, bounds, "inside"))
    positive = [v for v in vals if v > 0]
    if region.support is regions.Support.COUNT and region.at_floor() and positive:
        out.update(outcome="falsified", p_against=0.0,
                   note=f"{len(positive)} of {len(vals)} runs counted more than 0, which a count that is "
                        "0 in expectation never does")
        return out
    if m.warning:
        out["note"] = m.warning
        out["more_runs_needed"] = max(0, stats.min_samples(1 - alpha) - m.n)
        held = regions.relation((min(vals), max(vals)), region)
        if held != "straddles":  # the range is clear of the region's bound: only the number of runs holds it back
            out["few_runs_held"] = held
        return out
    out["outcome"] = regions.outcome(m.interval, region)
    return out


def _judge_shift(out: dict[str, Any], xa: list[float], xb: list[float], region: regions.Region,
                 alpha: float) -> dict[str, Any]:
    bounds = (region.lo, region.hi)
    est, ci = stats.shift_ci(xa, xb, alpha=alpha)
    p, warning = stats.mann_whitney(xa, xb)
    ma, mb = stats.median_ci(xa), stats.median_ci(xb)
    out.update(estimate=est, interval=list(ci) if ci else None,
               interval_kind=f"Hodges-Lehmann {_level(1 - alpha)}",
               mann_whitney_p=p, medians=[ma.median, mb.median], runs=[len(xa), len(xb)],
               p_against=stats.shift_pvalue(xa, xb, bounds, "outside"),
               p_for=stats.shift_pvalue(xa, xb, bounds, "inside"))
    if ci is None or warning:
        more = out["more_runs_needed"] = stats.shift_runs_needed(len(xa), len(xb), alpha)
        if ci is None:
            # What the runs asked for reach, for these arms (the equal-arms minimum would overstate a larger arm's).
            need = f"need >= {len(xa) + more} per arm" if len(xa) == len(xb) else \
                f"{len(xa) + more} and {len(xb) + more} would give one"
            out["note"] = (f"{len(xa)} and {len(xb)} runs are too few for a {_level(1 - alpha)} interval of the "
                           f"shift; {need}")
            return out
        out["note"] = warning
        held = regions.relation(ci, region)
        if held != "straddles":  # the interval is clear of the region's bound: only the number of runs holds it back
            out["few_runs_held"] = held
        return out
    out["outcome"] = regions.outcome(ci, region)
    return out
