"""Sequential stopping: always-valid tests for proportions, so looking after every replicate costs no error.

Each prediction on a proportion is tested by mixture likelihood ratios (e-processes): against the
region's upper bound c, E = mean over alternatives p_j > c of L(p_j) / L(c) is a nonnegative
supermartingale for every p <= c, so by Ville's inequality P(E ever reaches 2/alpha) <= alpha / 2 however
often one looks. Inverting both one-sided tests at alpha / 2 and intersecting over the looks gives a
confidence sequence at 1 - alpha (the same 95% and the same two-sided convention as the fixed design's
Wilson interval); a prediction is judged by where that interval lies, as in the fixed design. The support
direction mixes over alternatives below c with half its weight on p = 0 (the claim "removing the cause removes
the symptom" predicts exactly zero). Differences between arms use per-arm beta-binomial confidence sequences
at alpha/2 each (conservative, valid at every look).

With `run_bet` (runs with their own workloads) the lower side also bets on the runs' own rates: for
H0 "every run's expected rate is <= c", prod_t (1 + lam (x_t - c)) over the per-run rates x_t in [0, 1]
is a nonnegative supermartingale for any 0 <= lam <= 1 / c whatever the between-run distribution and
whatever drift (each factor has conditional mean <= 1), so the run is the unit and no variance is
estimated. The lower side's alpha / 2 is split between that bet and the binomial test (alpha / 4 each):
the lower bound is the larger of the two. Only the lower side bets: for a rate near 0 a bet against
"every run's rate >= c" wins at most a factor 1 / (1 - c) a run, and the within-run binomial decides
support there. A bound decided by the bet alone needs no exchangeable runs, so the drift check does not
hold it (`bet_lower`).

Futility (`reachable`): an execution also stops, inconclusive, once no verdict can be reached within its
budget even were the remaining runs to come in at either end of the current interval. Stopping without a
verdict never makes a false one, so the bounds above hold; studies/verdict_study.py measures what it
costs in power and saves in units.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from workbench.analysis import stats

ALPHA = 0.05
# A sequential execution stops no earlier than its second replicate: a single run's units look
# independent whatever the between-run variation is, and a stop on one run would trust that blindly.
MIN_LOOKS = 2
SPIKE_AT_ZERO = 0.5


def _loglik(k: np.ndarray, n: np.ndarray, p: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(k > 0, k * np.log(p) if p > 0 else -np.inf, 0.0)
        b = np.where(n - k > 0, (n - k) * np.log1p(-p) if p < 1 else -np.inf, 0.0)
    return a + b


# Alternatives are spread on the log-odds scale away from the tested bound, so the same test is
# sharp for a rate twice the bound and for one ten times it; weights are equal (fixed in advance).
ODDS_STEPS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0)


def _expit(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _logsumexp(terms: np.ndarray) -> np.ndarray:
    """log(sum(exp(terms), axis=0)), stable; -inf where every term is -inf. (scipy's logsumexp gives the
    same values but costs ~170 us a call in checks, and the confidence-sequence bisection calls it tens of
    thousands of times: it was 60% of an isolate search's time.)"""
    top = np.max(terms, axis=0)
    shift = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(terms - shift), axis=0)) + shift


def _loglik_each(k: np.ndarray, n: np.ndarray, ps: list[float]) -> np.ndarray:
    """`_loglik` for every p in `ps` at once, stacked on a new first axis: the same numbers (each log taken
    as `_loglik` takes it, then the same products and sums), in one pass instead of one per p (the
    confidence-sequence bisection calls this tens of thousands of times)."""
    log_p = np.array([np.log(p) if p > 0 else -np.inf for p in ps]).reshape((-1,) + (1,) * k.ndim)
    log_q = np.array([np.log1p(-p) if p < 1 else -np.inf for p in ps]).reshape((-1,) + (1,) * k.ndim)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(k > 0, k * log_p, 0.0)
        b = np.where(n - k > 0, (n - k) * log_q, 0.0)
    return a + b


def _mixture(k: np.ndarray, n: np.ndarray, c: float, alts: list[float], log_w: list[float]) -> np.ndarray:
    base = _loglik(k, n, c)
    k, n = np.broadcast_arrays(k, n)
    weights = np.array(log_w).reshape((-1,) + (1,) * k.ndim)
    mixed = _logsumexp(weights + _loglik_each(k, n, alts))
    with np.errstate(invalid="ignore"):
        out = mixed - base
    return np.where(np.isneginf(base) & ~np.isneginf(mixed), np.inf, out)


def log_e_above(k: Any, n: Any, c: float) -> np.ndarray:
    """log E against H0: p <= c (evidence that p > c); vectorised over k, n.

    E is a mixture over alternatives p_j > c of L(p_j) / L(c); each term is a supermartingale for
    every p <= c, so E is too, and Ville's inequality makes 1/alpha an always-valid threshold.
    """
    k = np.asarray(k, float)
    n = np.asarray(n, float)
    if c >= 1:
        return np.zeros(np.broadcast(k, n).shape)
    if c <= 0:
        alts = [0.001, 0.01, 0.05, 0.1, 0.2, 0.4]
    else:
        x = math.log(c / (1 - c))
        alts = [_expit(x + d) for d in ODDS_STEPS]
    lw = [-math.log(len(alts))] * len(alts)
    return _mixture(k, n, max(c, 0.0), alts, lw)


def log_e_below(k: Any, n: Any, c: float, lo: float = 0.0) -> np.ndarray:
    """log E against H0: p >= c (evidence that p < c); alternatives in [lo, c).

    When lo is 0 half the weight sits on p = 0: a claim that removing a cause removes the symptom
    predicts exactly zero, and a run of zeros is then decisive soonest.
    """
    k = np.asarray(k, float)
    n = np.asarray(n, float)
    if c <= max(lo, 0.0):
        return np.zeros(np.broadcast(k, n).shape)
    if c >= 1:
        alts = [0.999, 0.99, 0.95, 0.9, 0.8, 0.6]
    else:
        x = math.log(c / (1 - c))
        alts = [q for q in (_expit(x - d) for d in ODDS_STEPS) if q > lo] or [(lo + c) / 2]
    if lo <= 0:
        alts = [0.0] + alts
        lw = [math.log(SPIKE_AT_ZERO)] + [math.log((1 - SPIKE_AT_ZERO) / (len(alts) - 1))] * (len(alts) - 1)
    else:
        lw = [-math.log(len(alts))] * len(alts)
    return _mixture(k, n, min(c, 1.0), alts, lw)


def _cs_bounds(k: np.ndarray, n: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """confidence_sequence over arrays of (k, n): the log-likelihood is concave in p, so each bound is the
    one root on its side of k / n, found by bisection vectorised over the points (60 halvings: 1e-18)."""
    from scipy.special import betaln

    k, n = np.broadcast_arrays(np.asarray(k, float), np.asarray(n, float))
    level = betaln(k + 1, n - k + 1) + math.log(alpha)
    phat = np.clip(np.divide(k, n, out=np.zeros_like(k), where=n > 0), 1e-12, 1 - 1e-12)

    def f(p: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(k > 0, k * np.log(p), 0.0) + np.where(n - k > 0, (n - k) * np.log1p(-p), 0.0) - level

    def root(a: np.ndarray, b: np.ndarray, rising: bool) -> np.ndarray:
        for _ in range(60):
            mid = (a + b) / 2
            inside = f(mid) >= 0
            a, b = (np.where(inside, a, mid), np.where(inside, mid, b)) if rising else \
                (np.where(inside, mid, a), np.where(inside, b, mid))
        return (a + b) / 2

    top = f(phat) > 0
    lo = np.where(f(np.zeros_like(k)) >= 0, 0.0, np.where(top, root(np.zeros_like(k), phat, True), phat))
    hi = np.where(f(np.ones_like(k)) >= 0, 1.0, np.where(top, root(phat, np.ones_like(k), False), phat))
    return np.where(n > 0, lo, 0.0), np.where(n > 0, hi, 1.0)


def confidence_sequence(k: float, n: float, alpha: float = ALPHA) -> tuple[float, float]:
    """Beta-binomial (uniform mixture) confidence sequence: {p : B(k+1, n-k+1) / L(p) < 1/alpha}."""
    lo, hi = _cs_bounds(np.asarray([k], float), np.asarray([n], float), alpha)
    return (float(lo[0]), float(hi[0]))


@functools.lru_cache(maxsize=65536)
def _look_bounds(k: float, n: float, level: float, low_level: float | None = None) -> tuple[float, float]:
    """At one look, the rates that neither one-sided e-test rejects at e >= exp(level) (the lower side at
    exp(low_level) when given). Kept per (k, n, levels): the running interval takes every look's bounds again
    at each new look, and the board, the status and the analysis of one execution take them again (120
    e-values of a bisection each, ~25 ms)."""
    low_level = level if low_level is None else low_level
    if n <= 0:
        return (0.0, 1.0)
    phat = k / n

    def bisect(lo: float, hi: float, ok_at_lo: bool, test: Any) -> float:
        for _ in range(60):
            mid = (lo + hi) / 2
            if test(mid) == ok_at_lo:
                lo = mid
            else:
                hi = mid
        return lo if ok_at_lo else hi

    lower = 0.0 if k <= 0 else bisect(0.0, phat, True, lambda c: float(log_e_above(k, n, c)) >= low_level)
    upper = 1.0 if k >= n else bisect(phat, 1.0, False, lambda c: float(log_e_below(k, n, c)) >= level)
    return (lower, upper)


# The share of the lower side's alpha / 2 spent on the bet on run rates (the rest on the binomial test),
# and the bets mixed with equal weights, as fractions of the largest stake 1 / c.
BET_SHARE = 0.5
BET_FRACTIONS = (0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.9)


def run_rates(k_path: list[tuple[float, float]]) -> list[float | None]:
    """Each look's own rate from the cumulative path (a divisor applied to the whole path cancels); None
    for a look that added no units."""
    out, pk, pn = [], 0.0, 0.0
    for k, n in k_path:
        out.append((k - pk) / (n - pn) if n > pn else None)
        pk, pn = k, n
    return out


def _runs_above_path(rates: list[float | None], c: float) -> np.ndarray:
    """log_e_runs_above after each look (a look without units bets nothing), vectorised over the looks."""
    xs = np.asarray([c if x is None else x for x in rates], float)
    if c <= 0:
        return np.where(np.cumsum(xs > 0) > 0, np.inf, 0.0)
    if c >= 1:
        return np.zeros(len(xs))
    lam = np.asarray(BET_FRACTIONS) / c
    with np.errstate(divide="ignore"):
        logs = np.cumsum(np.log1p(lam[:, None] * (xs[None, :] - c)), axis=1)
    return _logsumexp(logs) - math.log(len(lam))


def log_e_runs_above(rates: list[float | None], c: float) -> float:
    """log E against H0 "every run's expected rate is <= c", after the runs so far: the equal mixture over
    stakes lam = f / c (f in BET_FRACTIONS) of prod (1 + lam (x_t - c)); see the module's docstring."""
    return float(_runs_above_path(rates, c)[-1]) if rates else 0.0


def _above_per_look(k: np.ndarray, n: np.ndarray, rates: list[float | None], c: float, run_bet: bool) -> np.ndarray:
    """log E against "the rate is <= c" at each look, on the scale where 2 / alpha decides: the binomial
    test's, or with `run_bet` the larger of it times 1 - BET_SHARE and the bet's times BET_SHARE."""
    binomial = log_e_above(k, n, c)
    if not run_bet:
        return binomial
    return np.maximum(binomial + math.log(1 - BET_SHARE), _runs_above_path(rates, c) + math.log(BET_SHARE))


def bet_lower(k_path: list[tuple[float, float]], alpha: float = ALPHA) -> float:
    """The bet's running lower bound at level alpha * BET_SHARE / 2: the largest, over the looks, of the
    smallest c the bet has not rejected (its e-value falls as c rises, so each is one bisection)."""
    rates = run_rates(k_path)
    level = math.log(2 / (alpha * BET_SHARE))
    best = 0.0
    for t in range(1, len(rates) + 1):
        seen = [x for x in rates[:t] if x is not None]
        if not seen or max(seen) <= 0:
            continue
        lo, hi = 0.0, max(seen)
        for _ in range(50):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if log_e_runs_above(rates[:t], mid) >= level else (lo, mid)
        best = max(best, lo)
    return best


def e_interval(k_path: list[tuple[float, float]], alpha: float = ALPHA, run_bet: bool = False) -> tuple[float, float]:
    """Confidence sequence at level 1 - alpha: the running intersection, over the looks so far, of the
    rates that neither one-sided e-test rejects at alpha / 2 (Ville: the true rate is ever rejected by
    either with probability at most alpha / 2 + alpha / 2). Pass alpha / m for a family of m predictions.
    `run_bet`: the lower side is the larger of the binomial bound at alpha (1 - BET_SHARE) / 2 and the
    bet on run rates at alpha * BET_SHARE / 2 (only for runs with their own workloads). An empty
    intersection (`empty_interval`) is shown as the one point of its lower end."""
    lo, hi = _running_bounds(k_path, alpha, run_bet)
    return (lo, max(lo, hi))


def empty_interval(k_path: list[tuple[float, float]], alpha: float = ALPHA, run_bet: bool = False) -> bool:
    """Whether the looks' intervals have no rate in common: every rate was rejected at some look, which no
    constant rate does but with probability alpha, so the rate changed during the execution."""
    lo, hi = _running_bounds(k_path, alpha, run_bet)
    return lo > hi


def _running_bounds(k_path: list[tuple[float, float]], alpha: float, run_bet: bool) -> tuple[float, float]:
    lo, hi = 0.0, 1.0
    level = math.log(2 / alpha)
    low_level = math.log(2 / (alpha * (1 - BET_SHARE))) if run_bet else level
    for k, n in k_path:
        a, b = _look_bounds(k, n, level, low_level)
        lo, hi = max(lo, a), min(hi, b)
    if run_bet:
        lo = max(lo, bet_lower(k_path, alpha))
    return lo, hi


def judge_proportion(k_path: list[tuple[float, float]], bounds: tuple[float, float],
                     alpha: float = ALPHA, run_bet: bool = False) -> tuple[str, float, float]:
    """Outcome of a sequentially tested proportion: ('falsified'|'supported'|'inconclusive', E against, E for).

    The outcome is the region judged against `e_interval(k_path, alpha, run_bet)`, so the interval shown is
    the one that decided; pass alpha / m for a family of m predictions. The e-values are the largest seen at
    the region's bounds (against: evidence the rate is beyond them; for: evidence it is within), each on the
    scale where 2 / alpha decides (with `run_bet`, a lower-side e-value is the larger of the binomial one
    times 1 - BET_SHARE and the bet's times BET_SHARE).
    """
    from workbench.analysis.regions import Region, Support, outcome

    lo, hi = bounds
    rates = run_rates(k_path)
    k, n = (np.asarray([x[i] for x in k_path], float) for i in (0, 1))
    against = ([_above_per_look(k, n, rates, hi, run_bet)] if hi < 1 else []) + \
        ([log_e_below(k, n, lo)] if lo > 0 else [])
    support = ([log_e_below(k, n, hi, lo=max(lo, 0.0))] if hi < 1 else []) + \
        ([_above_per_look(k, n, rates, lo, run_bet)] if lo > 0 else [])
    # Against: the largest at any look and bound; for: at each look the weaker bound, then the best look.
    best_against = max([0.0] + [float(np.max(a)) for a in against if len(a)])
    best_for = max(0.0, float(np.max(np.minimum.reduce(support)))) if support and len(k) else 0.0
    region = Region(lo, hi, Support.PROPORTION)
    low, high = _running_bounds(k_path, alpha, run_bet)  # e_interval's bounds, before it shows an empty one
    result = outcome((low, max(low, high)), region)
    if low > high:
        # The looks have no rate in common: each side's rejection holds at its own look, but a rate that changed
        # meanwhile supports nothing. A falsification stands where one look's test rejected the whole region: a
        # lower end above it, or an upper end below it.
        result = "falsified" if "falsified" in (outcome((low, low), region), outcome((high, high), region)) \
            else "inconclusive"
    return result, math.exp(min(best_against, 700)), math.exp(min(best_for, 700))


# The interval whose ends the remaining looks are projected at (`reachable`): wider gives up less power
# and stops later.
FUTILITY_ALPHA = 0.01


def _decides(k: np.ndarray, n: np.ndarray, rates: list[float | None], bounds: tuple[float, float],
             alpha: float, run_bet: bool) -> bool:
    """Whether the running interval over these looks (`e_interval`) would leave or enter the region: a bound
    of the interval passes c exactly when the one-sided e-test at c crosses its level at some look."""
    from workbench.analysis.regions import TIE

    lo, hi = bounds
    level = math.log(2 / alpha)

    def above(c: float) -> float:
        return float(np.max(_above_per_look(k, n, rates, c, run_bet)))

    # The shown interval's ends are snapped onto 0 and 1 within regions.TIE, so it leaves a region of 0 (or
    # 1) alone only once its bound passes that tolerance; the e-test at 0 itself rejects on any event.
    floor, ceiling = (hi if hi > 0 else TIE * 1.001), (lo if lo < 1 else 1 - TIE * 1.001)
    against = ([above(floor)] if hi < 1 else []) + ([float(np.max(log_e_below(k, n, ceiling)))] if lo > 0 else [])
    support = ([float(np.max(log_e_below(k, n, hi)))] if hi < 1 else []) + ([above(lo)] if lo > 0 else [])
    return max(against, default=-math.inf) >= level or (bool(support) and min(support) >= level)


def reachable(runs: list[tuple[float, float]], bounds: tuple[float, float], budget: int, alpha: float = ALPHA,
              run_bet: bool = False, divisor: Callable[[list[float], list[float]], float] | None = None,
              copies: bool = False) -> bool:
    """Whether a verdict can still be reached within `budget` looks (futility). `runs`: each look's own
    (k, n) as counted; `divisor(ks, ns)`: the run-level divisor the analysis applies to such runs
    (clustered.divisor; 1 when None). True when, were every remaining look to add the mean units of the
    looks so far at one end of the current interval (Wilson at FUTILITY_ALPHA on the effective counts) or
    at the region's middle where the interval holds it, the running interval over the projected path would
    leave or enter the region. The projected path is judged as binomial: the runs' spread is estimated from
    few runs and a real continuation's spread is unknown (a run of 2 among zeros projected by zeros looks
    over-dispersed for ever), so futility takes the most favourable case; only replayed copies (`copies`)
    keep their divisor, which is structural. A rate beyond the interval's ends is one the data already speak
    against, so stopping when none of these paths decides gives up little power; and since stopping
    without a verdict never makes a false one, the tests' error bounds hold unchanged (non-binding)."""
    t = len(runs)
    if t >= budget:
        return False
    arm = _arm_now(runs, divisor or _unit)
    if arm is None:
        return True
    ks, ns, div, wl, wh, m = arm
    lo, hi = bounds
    middle = min(max((max(lo, 0.0) + min(hi, 1.0)) / 2, wl), wh)
    for r in sorted({wl, wh, middle}):
        pk, pn = _projected(ks, ns, r, m, budget - t)
        dd = div(pk, pn) if copies else 1.0
        rates: list[float | None] = [k / n if n > 0 else None for k, n in zip(pk, pn)]
        if _decides(np.cumsum(pk) / dd, np.cumsum(pn) / dd, rates, bounds, alpha, run_bet):
            return True
    return False


def more_looks(runs: list[tuple[float, float]], bounds: tuple[float, float], alpha: float = ALPHA,
               run_bet: bool = False, divisor: Callable[[list[float], list[float]], float] | None = None,
               limit: int = 10_000, lifts: tuple[int, float] | None = None) -> int | None:
    """More looks, each of the mean units of the looks so far at the rate seen so far, after which the running
    interval (`e_interval`) would leave or enter the region, under the divisor of the runs so far; None where
    nothing can be projected or no number up to `limit` does. The sequential counterpart of the fixed design's
    "more units would decide it": the confidence sequence is wider than a fixed interval, so more are needed.
    `lifts` (looks, divisor): from that many looks on the path is divided by this divisor instead (the few-runs
    floor of clustered lifts at its fourth run)."""
    arm = _arm_now(runs, divisor or _unit)
    if arm is None:
        return None
    ks, ns, div, _, _, m = arm
    d_now, rate = div(ks, ns), sum(ks) / sum(ns)

    def decides(more: float) -> bool:
        pk, pn = _projected(ks, ns, rate, m, int(math.ceil(more)))
        d = lifts[1] if lifts is not None and len(pk) >= lifts[0] else d_now
        rates: list[float | None] = [k / n if n > 0 else None for k, n in zip(pk, pn)]
        return _decides(np.cumsum(pk) / d, np.cumsum(pn) / d, rates, bounds, alpha, run_bet)

    return stats.search_smallest(1, decides, limit=limit)


def _unit(_ks: list[float], _ns: list[float]) -> float:
    return 1.0


def _arm_now(runs: list[tuple[float, float]], div: Callable[[list[float], list[float]], float]) -> tuple | None:
    """An arm's looks so far as counts, its divisor, the interval to project from (Wilson at FUTILITY_ALPHA
    on its effective counts) and the mean units of its looks in whole units; None where nothing can be
    projected (no looks or units, or a count that is not a number: every comparison with NaN is False, so
    the projection would have "decided" nothing and stopped the execution)."""

    ks, ns = [float(k) for k, _ in runs], [float(n) for _, n in runs]
    if not runs or sum(ns) <= 0 or not all(math.isfinite(x) for x in ks + ns):
        return None
    d = div(ks, ns)
    wl, wh = stats.wilson(sum(ks) / d, sum(ns) / d, FUTILITY_ALPHA)
    return ks, ns, div, wl, wh, max(1.0, float(round(sum(ns) / len(ns))))


def _projected(ks: list[float], ns: list[float], r: float, m: float, looks: int) -> tuple[list[float], list[float]]:
    """The looks so far and `looks` more of m units at rate r, in whole units spread so the projected total
    stays r times the projected units."""
    more = [float(x) for x in np.diff(np.round(r * m * np.arange(looks + 1)))]
    return ks + more, ns + [m] * len(more)


def difference_reachable(runs_a: list[tuple[float, float]], runs_b: list[tuple[float, float]], region: Any,
                         budget: int, alpha: float = ALPHA,
                         divisors: tuple[Callable[[list[float], list[float]], float] | None, ...] = (None, None),
                         copies: tuple[bool, bool] = (False, False)) -> bool:
    """`reachable` for a difference of two arms' rates judged by `difference_sequence` against `region`:
    each arm projected at the end of its own interval that makes the difference as large, or as small, as
    the data allow, or both at rates whose difference is the region's middle where the intervals allow it
    (each arm as near its own estimate as that leaves it); binomial unless an arm's runs are copies."""
    from workbench.analysis import regions

    t = min(len(runs_a), len(runs_b))
    if t >= budget:
        return False
    arms = [_arm_now(runs[:t], div or _unit) for runs, div in zip((runs_a, runs_b), divisors)]
    if None in arms:
        return True
    (ka, na, da, al, ah, ma), (kb, nb, db, bl, bh, mb) = arms
    target = min(max((max(region.lo, -1.0) + min(region.hi, 1.0)) / 2, al - bh), ah - bl)
    ra = min(max(sum(kb) / sum(nb) + target, al), ah)
    for pa, pb in {(ah, bl), (al, bh), (ra, min(max(ra - target, bl), bh))}:
        paths = []
        for ks, ns, div, r, m, copy in ((ka, na, da, pa, ma, copies[0]), (kb, nb, db, pb, mb, copies[1])):
            pk, pn = _projected(ks, ns, r, m, budget - t)
            d = div(pk, pn) if copy else 1.0
            paths.append(list(zip(np.cumsum(pk) / d, np.cumsum(pn) / d)))
        if regions.outcome(difference_sequence(paths[0], paths[1], alpha), region) != "inconclusive":
            return True
    return False


def difference_sequence(path_a: list[tuple[float, float]], path_b: list[tuple[float, float]],
                        alpha: float = ALPHA) -> tuple[float, float]:
    """Running-intersection confidence sequence for p_a - p_b (per-arm sequences at alpha/2)."""
    m = min(len(path_a), len(path_b))
    if m == 0:
        return (-1.0, 1.0)
    (ka, na), (kb, nb) = (np.asarray(path_a[:m], float).T, np.asarray(path_b[:m], float).T)
    la, ua = _cs_bounds(ka, na, alpha / 2)
    lb, ub = _cs_bounds(kb, nb, alpha / 2)
    lo, hi = max(-1.0, float(np.max(la - ub))), min(1.0, float(np.min(ua - lb)))
    return (lo, max(lo, hi))
