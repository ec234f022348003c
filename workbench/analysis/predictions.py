"""Judging one prediction: a region for a metric in an arm, or for the difference between two arms.

Falsified when the interval lies entirely outside the region, supported when entirely inside,
otherwise inconclusive with an estimate of how many more units would decide it.
"""

from __future__ import annotations

import math
from typing import Any

from workbench.analysis import sequential as seq
from workbench.analysis import stats
from workbench.analysis.data import RunData, completed_units, metric_value, proportion_counts
from workbench.registry.experiment import Experiment

OUTCOME_OF = {"outside": "falsified", "inside": "supported", "straddles": "inconclusive"}


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
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def pooled(runs: list[RunData], metric: str, exp: Experiment, basis: str = "all") -> dict[str, Any]:
    """k/n of a proportion over the runs that recorded both, with the runs that did not."""
    spec = exp.metrics[metric]
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
    return {"k": k, "n": n, "used": used, "unknown": unknown, "per_run": per_run}


def _path(per_run: list[tuple[RunData, float, float]]) -> list[tuple[float, float]]:
    """Cumulative (k, n) after each replicate: the looks a sequential execution took."""
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


def units_needed_arm(k: float, n: float, bounds: tuple[float, float]) -> int | None:
    """Units (in total) at which the current rate's Wilson interval would clear the region; None if it never can."""
    if n <= 0:
        return None
    p = k / n
    lo, hi = bounds
    if lo < p < hi:
        want = "inside"
    elif p < lo or p > hi:
        want = "outside"
    else:
        return None  # the estimate sits on the boundary: no amount of data at this rate decides it

    def ok(m: float) -> bool:
        return stats.relation(stats.wilson(p * m, m), bounds) == want

    return _search(n, ok)


def units_needed_diff(ka: float, na: float, kb: float, nb: float, bounds: tuple[float, float]) -> int | None:
    """Units per arm (scaling both arms alike) at which the Newcombe interval would clear the region."""
    if na <= 0 or nb <= 0:
        return None
    d = ka / na - kb / nb
    lo, hi = bounds
    want = "inside" if lo < d < hi else "outside" if (d < lo or d > hi) else None
    if want is None:
        return None

    def ok(f: float) -> bool:
        return stats.relation(stats.newcombe(ka * f, na * f, kb * f, nb * f), bounds) == want

    f = _search(1.0, ok, integer=False)
    return None if f is None else int(math.ceil(f * max(na, nb)))


def _search(start: float, ok: Any, integer: bool = True, limit: float = 1e7) -> Any:
    hi = max(start, 1.0)
    while not ok(hi):
        hi *= 2
        if hi > (limit if integer else limit / max(start, 1.0)):
            return None
    lo = hi / 2 if hi > start else start
    for _ in range(40):
        if hi - lo <= (1 if integer else 1e-3):
            break
        mid = (lo + hi) / 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return int(math.ceil(hi)) if integer else hi


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
    out: dict[str, Any] = {"metric": pred.metric, "where": where, "region": pred.region.describe(),
                           "bounds": [bounds[0], bounds[1]], "describe": f"{pred.metric} ({where}) {pred.region.describe()}",
                           "why": pred.why, "basis": basis, "estimate": None, "interval": None, "outcome": "inconclusive",
                           "p_against": None, "p_for": None, "more_units_needed": None, "note": ""}
    spec = exp.metrics.get(pred.metric)
    if spec is None:
        out["note"] = f"the experiment has no metric {pred.metric!r}"
        return out
    needed = [pred.difference[0], pred.difference[1]] if pred.difference else [arm]
    for a in needed:
        if not arms.get(a):
            out["note"] = f"no usable run in arm {a}"
            return out
    if spec.kind == "proportion":
        return _judge_proportion(pred, out, needed, arms, exp, basis, sequential, family)
    return _judge_values(pred, out, needed, arms, exp, spec.kind, stats.ALPHA / (looks if sequential else 1))


def _judge_proportion(pred: Any, out: dict[str, Any], needed: list[str], arms: dict[str, list[RunData]],
                      exp: Experiment, basis: str, sequential: bool, family: int = 1) -> dict[str, Any]:
    spec = exp.metrics[pred.metric]
    bounds = (out["bounds"][0], out["bounds"][1])
    pools = {a: pooled(arms[a], pred.metric, exp, basis) for a in needed}
    for a, pool in pools.items():
        if pool["n"] <= 0:
            what = "completed units" if basis == "completed" else f"{spec.numerator} and {spec.denominator}"
            out["note"] = (f"no run in arm {a} recorded {what}" if not pool["used"] else
                           f"arm {a} has zero units ({spec.denominator} = 0)")
            out["unknown_runs"] = pool["unknown"]
            return out
    if pred.difference is None:
        a = needed[0]
        k, n = pools[a]["k"], pools[a]["n"]
        out.update(k=k, n=n, estimate=k / n, runs=len(pools[a]["used"]), unknown_runs=pools[a]["unknown"])
        if sequential:
            path = _path(pools[a]["per_run"])
            outcome, e_against, e_for = seq.judge_proportion(path, bounds, alpha_against=seq.ALPHA / family)
            out.update(interval=list(seq.e_interval(k, n)), interval_kind="always-valid 95%",
                       outcome=outcome, e_against=e_against, e_for=e_for, looks=len(path),
                       wilson=list(stats.wilson(k, n)))
        else:
            ci = stats.wilson(k, n)
            out.update(interval=list(ci), interval_kind="Wilson 95%", outcome=OUTCOME_OF[stats.relation(ci, bounds)],
                       p_against=stats.score_pvalue(k, n, bounds, "outside"),
                       p_for=stats.score_pvalue(k, n, bounds, "inside"))
        if out["outcome"] == "inconclusive":
            total = units_needed_arm(k, n, bounds)
            out["more_units_needed"] = None if total is None else max(0, total - int(n))
        return out
    a, b = needed
    ka, na, kb, nb = pools[a]["k"], pools[a]["n"], pools[b]["k"], pools[b]["n"]
    out.update(k=[ka, kb], n=[na, nb], estimate=ka / na - kb / nb,
               fisher_p=stats.fisher(int(ka), int(na), int(kb), int(nb)),
               boschloo_p=stats.boschloo(int(ka), int(na), int(kb), int(nb)))
    if sequential:
        ci = seq.difference_sequence(_path(pools[a]["per_run"]), _path(pools[b]["per_run"]))
        out.update(interval=list(ci), interval_kind="confidence sequence (95%)",
                   outcome=OUTCOME_OF[stats.relation(ci, bounds)])
    else:
        ci = stats.newcombe(ka, na, kb, nb)
        out.update(interval=list(ci), interval_kind="Newcombe 95%", outcome=OUTCOME_OF[stats.relation(ci, bounds)],
                   p_against=stats.interval_pvalue(lambda al: stats.newcombe(ka, na, kb, nb, al), bounds, "outside"),
                   p_for=stats.interval_pvalue(lambda al: stats.newcombe(ka, na, kb, nb, al), bounds, "inside"))
    if out["outcome"] == "inconclusive":
        per_arm = units_needed_diff(ka, na, kb, nb, bounds)
        out["more_units_needed"] = None if per_arm is None else max(0, per_arm - int(max(na, nb)))
    return out


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
    samples = {}
    for a in needed:
        vals, unknown = _values(arms[a], pred.metric, exp)
        if not vals:
            out["note"] = f"no run in arm {a} recorded {pred.metric}"
            out["unknown_runs"] = unknown
            return out
        samples[a] = vals
    if pred.difference is None:
        vals = samples[needed[0]]
        m = stats.median_ci(vals, level=1 - alpha)
        out.update(estimate=m.median, interval=list(m.interval) if m.interval else None, runs=m.n,
                   interval_kind=f"order statistics ({m.confidence:.0%})", confidence=m.confidence)
        rel = stats.relation(m.interval, bounds) if m.interval else "straddles"
        deterministic = kind == "count" and len(vals) >= 2 and len(set(vals)) == 1
        if m.warning and not deterministic:
            out["note"] = m.warning
            out["more_runs_needed"] = max(0, stats.min_samples(1 - alpha) - m.n)
            return out
        if deterministic and m.warning:
            out["note"] = f"every one of {len(vals)} runs gave {_fmt(vals[0])}"
        out["outcome"] = OUTCOME_OF[rel]
        return out
    a, b = needed
    est, ci = stats.shift_ci(samples[a], samples[b], alpha=alpha)
    p, warning = stats.mann_whitney(samples[a], samples[b])
    ma, mb = stats.median_ci(samples[a]), stats.median_ci(samples[b])
    out.update(estimate=est, interval=list(ci) if ci else None,
               interval_kind=f"Hodges-Lehmann {1 - alpha:.0%}" if alpha != stats.ALPHA else "Hodges-Lehmann 95%",
               mann_whitney_p=p, medians=[ma.median, mb.median], runs=[len(samples[a]), len(samples[b])])
    if ci is None or warning:
        out["note"] = warning or "too few runs for a 95% interval of the shift"
        out["more_runs_needed"] = max(0, stats.MIN_SAMPLES_TEST - min(len(samples[a]), len(samples[b])))
        return out
    out["outcome"] = OUTCOME_OF[stats.relation(ci, bounds)]
    return out
