"""The run as the unit of inference for a proportion: how far the replicates' own spread departs from binomial.

Sessions in one run share a server, and replicates can replay the same sessions, so the units of an
arm are not independent Bernoulli trials. Pearson's dispersion over the runs, phi = X^2 / (R - 1),
measures it, and a conditional test (given the arm's total, the runs' counts are multivariate
hypergeometric when every unit is independent with one rate; exact over two runs, simulated beyond)
says whether it departs from 1 in either direction:

- over-dispersion (runs differ more than chance allows: a between-run rate, an ICC) inflates the
  variance by phi, so the arm counts as N / phi units, judged with Student's t on R - 1 degrees of
  freedom rather than the normal quantile (phi itself is estimated from R runs);
- under-dispersion (runs agree more closely than independent samples do on average: replicates that
  replayed the same sessions) means the replicates are partly copies of each other; with correlation
  rho = 1 - phi between copies the design effect is 1 + (R - 1) rho, and at rho = 1 the arm counts
  as one run. This applies whenever phi < 1, significant or not: with few replicates no test can
  tell chance agreement from copying, and counting a copy twice is the error that costs verdicts;
- a spread more than 5% above binomial that is not significant inflates the variance by phi as well, at the
  normal quantile: few runs cannot show that the spread is binomial, so only phi within 5% of 1 (or below
  it, as above) keeps the pooled binomial;
- with two or three runs none of these estimates is trusted to be large enough (phi on one or two degrees
  of freedom misses a real between-run spread often): the design effect is at least that of a small
  intra-run correlation (FEW_RUNS_ICC).

Runs that saw no event at all (or only events) show no spread whatever the between-run variation, so
an arm of two or more such runs assumes a small intra-run correlation (ICC_FLOOR) rather than none.

Replicates that replayed one workload (one recorded seed) count as one run whatever their spread
(`effective`). The drift check reports a departure either way as a finding; only possible drift (a
trend over replicate order, or too few runs to rule one out) holds the verdict back (`drift_holds`).
The A/A check pools the two control copies' within-arm spread to choose its variance model at a looser
level (`pooled_dispersion`, `aa_joint`), because its alarm voids an execution.

One run cannot show between-run variation: its units are taken as independent, and the reasoning
says so. The seed's evidence (14/80, one run) is judged that way, and falsified: its Wilson interval
[0.107, 0.273] clears 0.02 so far that a design effect of 24 would still leave it above (wilson(14/24,
80/24) has lower bound 0.021; an ICC of 0.1 over 80 sessions gives 8.9); the attrition flag says what
else it lacks. A sequential
verdict never stops on one run (sequential.MIN_LOOKS).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Sequence

from workbench.analysis import display

# The screen that decides whether an excess of spread is significant: below this p, over-dispersion is
# judged with Student's t on the runs' degrees of freedom (and counts against exchangeable runs in the
# drift check); above it, an excess over binomial still inflates the variance, at the normal quantile.
# It is deliberately loose: with few runs the test has little power.
SCREEN_P = 0.2
# The drift check reports a departure as a validity finding below this.
FLAG_P = 0.01
SIMULATIONS = 2000
# Dispersion this close to 1 (from either side) is taken as binomial.
UNDER_TOL = 0.05
# The intra-run correlation assumed for an arm whose runs saw no event at all (or only events): such runs
# show no spread, yet an ICC makes event-free runs common (a beta-binomial ICC of 0.1 at a true rate of
# 0.05 leaves 35% of 80-session runs event-free, and the binomial then supported "<= 0.02" in 4.3% of
# experiments). The design effect 1 + (m - 1) * ICC_FLOOR over runs of m units costs support at a true
# 0 two replicates in either mode (3 -> 5 runs of 80, 2 -> 4 of 120); a larger floor puts it past the
# budgets in use (0.03: 9 runs of 80 sequentially, 8 of 120 against the wedge world's 6).
ICC_FLOOR = 0.01
# The intra-run correlation assumed at least for an arm of 2..FEW_RUNS runs not known to replay one workload, whose
# spread was not significantly more than binomial: Pearson's phi on one or two degrees of freedom underestimates
# a between-run spread so often that the interval covered a true rate of 0.05 in 85% / 86% of experiments with
# 2 / 3 runs of 80 at an ICC of 0.05 (77% / 82% at 0.1), where 95% was promised; with this floor 93% / 95%
# (86% / 91%), and at an ICC of 0.02 96% / 98% (studies/rate_coverage.py). 0.01 (ICC_FLOOR's value) gave 92% in
# both at 0.05 (a prototype, 600 experiments a cell); the price of 0.02: studies/results/verdict_study.txt.
FEW_RUNS = 3
FEW_RUNS_ICC = 0.02
# ... unless Pearson's X^2 is this improbably small for that design effect (chi^2 on R - 1 df scaled by it, read
# with a continuity correction: X^2 is discrete, and an exact split of a few events is common at any ICC).
FLOOR_RULED_OUT_P = 0.01


@dataclass(frozen=True)
class Dispersion:
    """Pearson dispersion of R runs' counts around their pooled rate, with one-sided p-values (exact over two runs,
    simulated beyond)."""

    runs: int
    phi: float | None
    p_over: float
    p_under: float

    @property
    def measurable(self) -> bool:
        return self.phi is not None


@dataclass(frozen=True)
class Effective:
    """An arm's pooled counts and the counts that carry its information once runs are the unit."""

    k: float
    n: float
    k_eff: float
    n_eff: float
    design_effect: float
    method: str          # "binomial" or "run-level"
    df: int | None       # degrees of freedom of the run-level variance (None: normal quantile)
    reason: str
    dispersion: Dispersion
    # The design effect the runs' own spread gave before the few-runs floor raised it (None: no floor), which
    # applies once the arm has more than FEW_RUNS runs (`lifted`).
    unfloored: float | None = None


def _pearson(ks: Sequence[float], ns: Sequence[float]) -> float:
    k, n = sum(ks), sum(ns)
    p = k / n
    return sum((ki - ni * p) ** 2 / (ni * p * (1 - p)) for ki, ni in zip(ks, ns) if ni > 0)


@lru_cache(maxsize=8192)
def _null_distribution(k: int, ns: tuple[int, ...]) -> tuple[Any, Any]:
    """Pearson's X^2 over runs of sizes `ns` when every unit is independent with one rate, given the
    total `k`: (statistics, probabilities). Exact for two runs, a seeded simulation beyond. It depends on
    the total only (not on how it split), so one table serves every split of it: the cache key."""
    import numpy as np

    n = np.asarray(ns, float)
    p = k / n.sum()
    scale = n * p * (1 - p)
    if len(ns) == 2:
        from workbench.analysis.stats import hypergeom_pmf

        lo, probabilities = hypergeom_pmf(int(n.sum()), k, ns[0])
        a = np.arange(lo, lo + len(probabilities))
        pmf = np.array(probabilities)
        return (a - n[0] * p) ** 2 / scale[0] + (k - a - n[1] * p) ** 2 / scale[1], pmf
    rng = np.random.default_rng(20261201)
    # Multivariate hypergeometric by successive conditional draws, each vectorised over the simulations.
    # numpy draws one from fewer than 10^9 items of each kind only: beyond, the units are drawn with
    # replacement (binomial draws, a multinomial split), whose counts' covariance, and so the statistic, is
    # larger by (N - 1) / (N - k): it is scaled back by that.
    total = int(n.sum())
    drawn = total >= 10 ** 9
    left_k = np.full(SIMULATIONS, k, np.int64)
    left_n = total
    stat = np.zeros(SIMULATIONS)
    for i, ni in enumerate(ns):
        left_n -= ni
        draw = left_k if i == len(ns) - 1 or left_n <= 0 else \
            rng.binomial(left_k, ni / (ni + left_n)) if drawn else rng.hypergeometric(ni, left_n, left_k)
        stat += (draw - n[i] * p) ** 2 / scale[i]
        left_k = left_k - draw
    if drawn:
        stat *= (total - k) / (total - 1)
    return stat, np.full(SIMULATIONS, 1.0 / SIMULATIONS)


def _null_tails(ks: tuple[int, ...], ns: tuple[int, ...], x2: float) -> tuple[float, float]:
    """P(X^2 >= observed), P(X^2 <= observed) given the total. Simulated (beyond two runs), each counts the
    observed table among the draws, (hits + 1) / (draws + 1): a Monte Carlo p-value is never 0."""
    stat, pmf = _null_distribution(sum(ks), ns)
    tol = 1e-9 * max(1.0, x2)
    if len(ns) == 2:
        return float(pmf[stat >= x2 - tol].sum()), float(pmf[stat <= x2 + tol].sum())
    draws = len(stat)
    return (float((stat >= x2 - tol).sum() + 1) / (draws + 1), float((stat <= x2 + tol).sum() + 1) / (draws + 1))


def p_text(d: "Dispersion", p: float) -> str:
    """A dispersion p-value as the text gives it: 'exact p' over two runs, 'simulated p' beyond."""
    return f"{'exact' if d.runs == 2 else 'simulated'} p {display.p_is(p)}"


def dispersion(ks: Sequence[float], ns: Sequence[float]) -> Dispersion:
    """Dispersion of per-run counts; unmeasurable with one run, or when no run (or every unit) had the event."""
    # Equal-sized runs are exchangeable: sorting lets the cache serve every order of the same counts.
    rows = sorted((round(k), round(n)) for k, n in zip(ks, ns) if n > 0)
    k, n = sum(r[0] for r in rows), sum(r[1] for r in rows)
    if len(rows) < 2 or k == 0 or k == n:
        return Dispersion(len(rows), None, 1.0, 1.0)
    x2 = _pearson([r[0] for r in rows], [r[1] for r in rows])
    p_over, p_under = _null_tails(tuple(r[0] for r in rows), tuple(r[1] for r in rows), round(x2, 9))
    return Dispersion(len(rows), x2 / (len(rows) - 1), min(1.0, p_over), min(1.0, p_under))


def effective(ks: Sequence[float], ns: Sequence[float], replayed: bool | None = None) -> Effective:
    """The arm's counts as the interval should see them, and why (see the module's docstring).

    `replayed`: True when the runs replayed one workload (a per-replicate seed held at one value). They then
    count as one run (design effect R), whatever their measured agreement: copies of the same sessions
    correlate by an unknown rho <= 1, whose design effect 1 + (R - 1) rho is at most R, and an estimate
    of rho from a few runs is too noisy to lean on (the study measured 13% false supports at the
    boundary under rho = 0.9 when the design effect came from phi). False when the recorded seeds show each
    run had its own workload, None when nothing recorded tells: the interval is the same either way, the
    reason says only what the runs show."""
    k, n = float(sum(ks)), float(sum(ns))
    d = dispersion(ks, ns)
    if d.runs <= 1:
        return Effective(k, n, k, n, 1.0, "binomial", None,
                         "one run: between-run variation cannot be measured, so its units are taken as independent", d)
    over = d.phi is not None and d.phi > 1 and d.p_over < SCREEN_P
    if replayed and not over:
        deff = float(d.runs)
        what = f"{'no' if k == 0 else 'only'} events" if d.phi is None else f"phi = {d.phi:.2g}"
        return Effective(k, n, k / deff, n / deff, deff, "run-level", None,
                         f"{d.runs} runs of one replayed workload ({what}): copies of the same sessions hold "
                         f"one run's evidence whatever their agreement, so they count as one run "
                         f"(design effect {deff_text(deff)})", d)
    if d.phi is None:
        deff = 1 + (n / d.runs - 1) * ICC_FLOOR
        own = ", each with its own workload" if replayed is False else ""
        return Effective(k, n, k / deff, n / deff, deff, "run-level", None,
                         f"{d.runs} runs with {'no' if k == 0 else 'only'} events{own}: "
                         f"they cannot show how much runs differ, so an intra-run correlation of {ICC_FLOOR:g} "
                         f"is assumed (design effect {deff_text(deff)})", d)
    if over:
        deff = max(d.phi, float(d.runs)) if replayed else d.phi
        return Effective(k, n, k / deff, n / deff, deff, "run-level", d.runs - 1,
                         f"the {d.runs} runs are over-dispersed (phi = {d.phi:.2g}, {p_text(d, d.p_over)}): "
                         f"variance inflated by phi, Student t on {d.runs - 1} df", d)
    if d.phi < 1 - UNDER_TOL:
        # Agreement closer than binomial is never rewarded: it is read as copying, whatever its p-value,
        # because two or three replicates cannot tell chance agreement from replayed sessions.
        # The reason says what the recorded seeds show: runs with their own seeds replayed nothing, so their
        # agreement is chance or a dependence the seeds do not show; only where nothing tells is replaying offered.
        deff = 1 + (d.runs - 1) * (1 - d.phi)
        agree = "agree exactly" if d.phi == 0 else "agree more closely than independent samples would on average"
        why = (f"; each ran its own workload (its own seed), so no sessions were replayed, but {d.runs} runs "
               "cannot tell chance agreement from a dependence between runs that their seeds do not show"
               if replayed is False else
               f". Runs that replayed the same sessions would agree like this, and {d.runs} runs cannot tell "
               "such copies from chance agreement")
        return _few_runs_floor(ks, ns, Effective(k, n, k / deff, n / deff, deff, "run-level", None,
                                         f"the {d.runs} runs {agree} (phi = {d.phi:.2g}, {p_text(d, d.p_under)}){why}, "
                                         f"so wb takes the cautious reading: the replicates are counted as partly "
                                         f"copies of each other (correlation 1 - phi), which widens the interval "
                                         f"rather than narrowing it (design effect {deff_text(deff)})", d))
    if d.phi > 1 + UNDER_TOL:
        # More spread than binomial but not significantly so: few runs cannot show the spread is binomial, so the
        # variance is inflated by the estimate anyway (normal quantile: it is no significant finding).
        return _few_runs_floor(ks, ns, Effective(k, n, k / d.phi, n / d.phi, d.phi, "run-level", None,
                                         f"the {d.runs} runs spread a little more than binomial (phi = {d.phi:.2g}, "
                                         f"{p_text(d, d.p_over)}: not significant, but {d.runs} runs cannot show the "
                                         f"spread is binomial): variance inflated by phi (design effect "
                                         f"{deff_text(d.phi)})", d))
    matches = (f"the {d.runs} runs' spread matches binomial within {UNDER_TOL:.0%} (phi = {d.phi:.2g}; "
               f"p = {display.p_value(d.p_over)} over, {display.p_value(d.p_under)} under)")
    floored = _few_runs_floor(ks, ns, Effective(k, n, k, n, 1.0, "binomial", None, matches, d))
    return floored if floored.design_effect > 1 else replace(floored, reason=f"{matches}: pooled binomial")


def _few_runs_floor(ks: Sequence[float], ns: Sequence[float], e: Effective) -> Effective:
    """An arm of 2..FEW_RUNS runs not known to replay one workload, whose spread was not significantly more than
    binomial: its design effect is at least that of an intra-run correlation of FEW_RUNS_ICC (see the constant),
    unless the runs' own spread rules that out (runs of 10^6 units that agree to 0.03% cannot share an ICC of
    0.02: it would be a design effect of 20 000). X^2 over floor is read against chi^2 on R - 1 df with a
    continuity correction (halfway to the next X^2 the total's splits reach): X^2 is discrete, and without it
    two runs of 4 and 4 in 80 (X^2 = 0, an exact split, P = 0.28 even under binomial) "ruled out" the floor
    that 4 and 5 kept."""
    runs, phi = e.dispersion.runs, e.dispersion.phi
    if not 2 <= runs <= FEW_RUNS or phi is None:
        return e
    floor = 1 + (e.n / runs - 1) * FEW_RUNS_ICC
    if e.design_effect >= floor:
        return e
    if _spread_below(_continuity(ks, ns, phi * (runs - 1)) / floor, runs - 1) < FLOOR_RULED_OUT_P:
        # Said where the design effect is (pooled binomial drops it: that reading already means it was ruled out).
        return replace(e, reason=f"{e.reason}; no few-runs floor: the runs' own spread rules it out")
    return replace(e, k_eff=e.k / floor, n_eff=e.n / floor, design_effect=floor, method="run-level",
                   unfloored=e.design_effect,
                   reason=f"{e.reason}; but {runs} runs cannot rule out a between-run spread much larger than "
                          f"they show, so an intra-run correlation of {FEW_RUNS_ICC:g} is assumed at least "
                          f"(design effect {deff_text(floor)})")


def lifted(e: Effective) -> Effective:
    """The arm as it would be judged with more than FEW_RUNS runs at the same spread: without the few-runs floor.
    What a projection of more runs (`more units would decide it`) divides by once it projects that many. Runs that
    agree more closely than binomial count as partly copies (correlation 1 - phi), whose design effect
    1 + (R - 1)(1 - phi) grows with the runs: it is taken at FEW_RUNS + 1 of them, where the floor lifts (above the
    floor, where they agree closely enough)."""
    if e.unfloored is None:
        return e
    phi = e.dispersion.phi
    u = 1 + FEW_RUNS * (1 - phi) if phi is not None and phi < 1 - UNDER_TOL else e.unfloored
    return replace(e, k_eff=e.k / u, n_eff=e.n / u, design_effect=u, method="run-level" if u > 1 else "binomial",
                   unfloored=None)


def floor_lifts_clause() -> str:
    """What follows a 'more units' count projected past FEW_RUNS runs, where the few-runs floor no longer reaches
    (the reasoning's and each look's line alike)."""
    return f", with the design effect of the runs' own spread (the few-runs floor lifts from run {FEW_RUNS + 1})"


def _continuity(ks: Sequence[float], ns: Sequence[float], x2: float) -> float:
    """X^2 moved halfway to the next larger value that a split of the same total over these runs reaches (exact
    over two runs, the nearest simulated draw beyond; X^2 itself where none is larger)."""
    rows = sorted((round(k), round(n)) for k, n in zip(ks, ns) if n > 0)
    stat, _ = _null_distribution(sum(r[0] for r in rows), tuple(r[1] for r in rows))
    above = stat[stat > x2 + 1e-9 * max(1.0, x2)]
    return (x2 + float(above.min())) / 2 if len(above) else x2


def _spread_below(x: float, df: int) -> float:
    """P(chi^2 on df <= x): Pearson's X^2 over the floor's design effect, as the floor predicts it."""
    from scipy.special import gammainc

    return float(gammainc(df / 2, x / 2))


def deff_text(deff: float) -> str:
    """A design effect as every sentence of the reasoning writes it (one number, one format)."""
    return f"{deff:.3g}"


def joint(a: Effective, b: Effective) -> tuple[Effective, Effective]:
    """Two arms compared with one variance model: both take the larger design effect and the fewer
    degrees of freedom. They ran on the same harness, and the smaller estimate from a few runs is the
    likelier to be an underestimate."""
    deff = max(a.design_effect, b.design_effect)
    dfs = [d for d in (a.df, b.df) if d is not None]
    df = min(dfs) if dfs else None

    def rescale(e: Effective) -> Effective:
        method = "run-level" if deff > 1 or df is not None else e.method
        return replace(e, k_eff=e.k / deff, n_eff=e.n / deff, design_effect=deff, df=df, method=method,
                       unfloored=None)

    return rescale(a), rescale(b)


def divisor(e: Effective, alpha: float) -> float:
    """What an arm's cumulative counts are divided by for the e-value tests, which know only the normal
    scale: the design effect, and for an over-dispersion estimated from few runs also (t / z)^2 at
    alpha, as the fixed interval's t quantile widens it. It is estimated from every run so far and
    applied to every earlier look too (the running intersection then uses one variance model)."""
    if e.df is None:
        return e.design_effect
    from workbench.analysis.stats import norm_isf

    return e.design_effect * (norm_isf(level_alpha(alpha, e.df) / 2) / norm_isf(alpha / 2)) ** 2


@lru_cache(maxsize=1024)
def level_alpha(alpha: float, df: int | None) -> float:
    """The alpha whose normal quantile is Student's t quantile at alpha on df degrees of freedom."""
    if df is None:
        return alpha
    from workbench.analysis.stats import norm_sf, t_isf

    return 2 * norm_sf(t_isf(alpha / 2, df))


def rate_interval(e: Effective, alpha: float = 0.05) -> tuple[float, float]:
    """An arm's rate interval with the runs as the unit: Wilson's on the effective counts, at the level
    whose normal quantile is Student's t quantile when the variance was estimated from the runs. The
    verdict, the arm summaries and the report all use this one."""
    from workbench.analysis.stats import wilson

    return wilson(e.k_eff, e.n_eff, level_alpha(alpha, e.df))


def rate_outcome(e: Effective, region: Any, alpha: float = 0.05) -> tuple[str, float, float, float | None]:
    """A fixed design's judgement of an arm's rate against `region` (regions.Region): (outcome, p against, p for,
    the exact p that held a decision back or None). Wilson's interval (`rate_interval`) decides, and a decision
    stands only where the exact binomial test on the same counts agrees at the same level: with few events
    near a bound Wilson's end is not conservative (1 event in 160 puts its lower end at 0.0011, above 0.001,
    though P(X >= 1 | 160, 0.001) = 0.15, so a true rate of 0.001 was falsified in 15% of experiments where a
    95% interval promises 2.5% a side). The p-values are the larger of the score test's and the exact one's,
    so Holm sees the test that decided."""
    from workbench.analysis import regions, stats

    snapped = region.snapped()
    bounds = (snapped.lo, snapped.hi)
    outcome = regions.outcome(rate_interval(e, alpha), region)
    exact = {want: stats.binomial_pvalue(e.k_eff, e.n_eff, bounds, want) for want in ("outside", "inside")}
    p_against = max(stats.score_pvalue(e.k_eff, e.n_eff, bounds, "outside", df=e.df), exact["outside"])
    p_for = max(stats.score_pvalue(e.k_eff, e.n_eff, bounds, "inside", df=e.df), exact["inside"])
    want = {"falsified": "outside", "supported": "inside"}.get(outcome)
    if want is not None and exact[want] >= alpha:
        return "inconclusive", p_against, p_for, exact[want]
    return outcome, p_against, p_for, None


def interval_label(e: Effective) -> str:
    """The rate interval's name wherever it is shown (text, JSON, pages): Wilson 95%, with Student's t where the
    runs' spread was estimated, and what widened it where the runs are the unit (`widening`)."""
    return ("Wilson 95%" if e.df is None else f"Wilson 95% (t, {e.df} df)") + widening(e.design_effect,
                                                                                       e.dispersion.phi)


def widening(design_effect: float | None, *phis: float | None) -> str:
    """What an interval on effective counts was widened for, as its label ends ('' where it was not): the
    between-run spread when the design effect is the runs' dispersion phi (of any arm in `phis`), else the
    design effect (copies of one workload, agreement closer than binomial, the ICC floor)."""
    if design_effect is None or design_effect <= 1:
        return ""
    if any(phi is not None and phi > 1 and abs(phi - design_effect) <= 1e-9 * phi for phi in phis):
        return f", widened for between-run spread (phi = {deff_text(design_effect)})"
    return f", widened by the design effect {deff_text(design_effect)}"


# Kendall's exact test on R runs without ties reaches p = 2 / R! at best: below six runs it cannot reach
# FLAG_P, so drift cannot be ruled out there.
TREND_MIN_RUNS = 6


def trend(rates: Sequence[float]) -> float:
    """Two-sided p-value of a monotone trend in per-run rates over replicate order (Kendall's tau; exact
    when there are no ties). Exchangeable runs (a between-run effect, an ICC) have no order, so this
    separates drift of the target under the experiment, which no interval repairs, from between-run
    variation, which the run-level interval accounts for. 1.0 below three runs (no order to test)."""
    if len(rates) < 3 or len(set(rates)) < 2:
        return 1.0
    from scipy.stats import kendalltau

    p = kendalltau(range(len(rates)), list(rates)).pvalue
    return 1.0 if p != p else float(p)


def drift_holds(d: Dispersion, rates: Sequence[float]) -> tuple[bool, float]:
    """Whether over-dispersion (p < FLAG_P) holds the verdict back, and the trend's p-value: it
    does when the rates trend over replicate order, or when there are too few runs (TREND_MIN_RUNS) for
    the trend test to rule drift out. Otherwise the spread is between exchangeable runs, and the
    run-level interval carries it (holding it back made an ICC of 0.1 undecidable at any budget)."""
    if d.p_over >= FLAG_P:
        return False, 1.0
    p = trend(rates)
    return p < FLAG_P or len(rates) < TREND_MIN_RUNS, p


# The A/A check routes on the runs of both control copies pooled, at this looser level: an alarm there
# declares the whole execution invalid, so its between-run variance is assumed unless binomial is
# plausible at 1 - AA_SCREEN_P. At SCREEN_P the study measured 6% false alarms (ICC 0.03 and 0.1, two
# replicates per arm); at 0.5 with the corrected interval, 3.6% at most and 0.2% with independent runs.
AA_SCREEN_P = 0.5


def pooled_dispersion(arms: Sequence[tuple[Sequence[float], Sequence[float]]]) -> Dispersion:
    """Within-arm dispersion pooled over arms that share one condition (the A/A check's two control
    copies): sum of each arm's Pearson X^2 around its own rate, on sum(R_i - 1) degrees of freedom, so a
    difference between the arms (what the A/A check tests) does not count as between-run spread. Exact
    for arms of two runs (the convolution of their exact null distributions); otherwise each arm's
    simulated null draws are paired with another arm's draws offset by a fixed stride (independent
    draws of one stream). Arms without events (or with only events) carry no spread and no df."""
    import numpy as np

    x2, dfs, stat, pmf = 0.0, 0, np.zeros(1), np.ones(1)
    for j, (ks, ns) in enumerate(arms):
        rows = sorted((round(k), round(n)) for k, n in zip(ks, ns) if n > 0)
        k, n = sum(r[0] for r in rows), sum(r[1] for r in rows)
        if len(rows) < 2 or k == 0 or k == n:
            continue
        x2 += _pearson([r[0] for r in rows], [r[1] for r in rows])
        dfs += len(rows) - 1
        s, p = _null_distribution(k, tuple(r[1] for r in rows))
        if len(s) * len(stat) <= 250_000:
            stat, pmf = (stat[:, None] + s[None, :]).ravel(), (pmf[:, None] * p[None, :]).ravel()
        else:
            s, p = np.roll(s, 977 * j), np.roll(p, 977 * j)
            size = max(len(s), len(stat))
            stat, pmf = np.resize(stat, size) + np.resize(s, size), np.full(size, 1.0 / size)
    if dfs == 0:
        return Dispersion(0, None, 1.0, 1.0)
    tol = 1e-9 * max(1.0, x2)
    return Dispersion(dfs + 1, x2 / dfs, min(1.0, float(pmf[stat >= x2 - tol].sum())),
                      min(1.0, float(pmf[stat <= x2 + tol].sum())))


def aa_joint(a: Effective, b: Effective, pooled: Dispersion) -> tuple[Effective, Effective]:
    """The two control copies of an A/A check on one variance model: joint()'s, unless the pooled
    within-arm dispersion is above 1 at p < AA_SCREEN_P, which then inflates both (with Student's t on
    its pooled df). Routing on the pooled runs at a loose level is what keeps the A/A false-alarm rate
    under alpha when a between-run ICC hides in two replicates per arm."""
    a, b = joint(a, b)
    if pooled.phi is None or pooled.phi <= 1 or pooled.p_over >= AA_SCREEN_P:
        return a, b
    if pooled.phi >= a.design_effect:
        deff, df = pooled.phi, pooled.runs - 1
    else:
        deff, df = a.design_effect, a.df if a.df is not None else pooled.runs - 1

    def rescale(e: Effective) -> Effective:
        return replace(e, k_eff=e.k / deff, n_eff=e.n / deff, design_effect=deff, df=df, method="run-level")

    return rescale(a), rescale(b)
