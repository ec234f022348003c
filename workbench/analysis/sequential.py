"""Sequential stopping: always-valid tests for proportions, so looking after every replicate costs no error.

Each prediction on a proportion is tested by mixture likelihood ratios (e-processes): against the
region's upper bound c, E = mean over alternatives p_j > c of L(p_j) / L(c) is a nonnegative
supermartingale for every p <= c, so by Ville's inequality P(E ever reaches 1/alpha) <= alpha however
often one looks. The support direction mixes over alternatives below c with half its weight on p = 0
(the claim "removing the cause removes the symptom" predicts exactly zero). Differences between arms use per-arm beta-binomial
confidence sequences at alpha/2 each (conservative, valid at every look).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

ALPHA = 0.05
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


def _mixture(k: np.ndarray, n: np.ndarray, c: float, alts: list[float], log_w: list[float]) -> np.ndarray:
    from scipy.special import logsumexp

    base = _loglik(k, n, c)
    terms = np.stack([lw + _loglik(k, n, p) for p, lw in zip(alts, log_w)])
    with np.errstate(invalid="ignore"):
        out = logsumexp(terms, axis=0) - base
    return np.where(np.isneginf(base) & ~np.isneginf(logsumexp(terms, axis=0)), np.inf, out)


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


def confidence_sequence(k: float, n: float, alpha: float = ALPHA) -> tuple[float, float]:
    """Beta-binomial (uniform mixture) confidence sequence: {p : B(k+1, n-k+1) / L(p) < 1/alpha}."""
    from scipy.optimize import brentq
    from scipy.special import betaln

    if n <= 0:
        return (0.0, 1.0)
    level = betaln(k + 1, n - k + 1) + math.log(alpha)

    def f(p: float) -> float:
        return float(_loglik(np.asarray(k, float), np.asarray(n, float), p)) - level

    phat = min(max(k / n, 1e-12), 1 - 1e-12)
    lo = 0.0 if f(0.0) >= 0 else brentq(f, 0.0, phat) if f(phat) > 0 else phat
    hi = 1.0 if f(1.0) >= 0 else brentq(f, phat, 1.0) if f(phat) > 0 else phat
    return (float(lo), float(hi))


def e_interval(k: float, n: float, alpha: float = ALPHA) -> tuple[float, float]:
    """The bounds the two one-sided e-value tests exclude at this look: [sup c rejected as too low,
    inf c rejected as too high]. It agrees with `judge_proportion` by construction, so a region that
    contains it is supported and one disjoint from it is falsified."""
    if n <= 0:
        return (0.0, 1.0)
    level = math.log(1 / alpha)
    phat = k / n

    def bisect(lo: float, hi: float, ok_at_lo: bool, test: Any) -> float:
        for _ in range(50):
            mid = (lo + hi) / 2
            if test(mid) == ok_at_lo:
                lo = mid
            else:
                hi = mid
        return lo if ok_at_lo else hi

    lower = 0.0 if k <= 0 else bisect(0.0, phat, True, lambda c: float(log_e_above(k, n, c)) >= level)
    upper = 1.0 if k >= n else bisect(phat, 1.0, False, lambda c: float(log_e_below(k, n, c)) >= level)
    return (lower, upper)


def judge_proportion(k_path: list[tuple[float, float]], bounds: tuple[float, float],
                     alpha: float = ALPHA, alpha_against: float | None = None) -> tuple[str, float, float]:
    """Outcome of a sequentially tested proportion: ('falsified'|'supported'|'inconclusive', E against, E for).

    `k_path` holds the cumulative (k, n) at each look; the first look whose e-value crosses
    1/alpha decides (looks after it are not needed and not used). `alpha_against` (alpha / m for m
    predictions, Bonferroni) bounds false falsification over several predictions.
    """
    lo, hi = bounds
    two_sided = lo > 0 and hi < 1
    a_fals = alpha_against if alpha_against is not None else alpha
    a_fals = a_fals / 2 if two_sided else a_fals  # false falsification can come from either side
    best_against = best_for = 0.0
    for k, n in k_path:
        against = -math.inf
        if hi < 1:
            against = max(against, float(log_e_above(k, n, hi)))
        if lo > 0:
            against = max(against, float(log_e_below(k, n, lo)))
        support_parts = []
        if hi < 1:
            support_parts.append(float(log_e_below(k, n, hi, lo=max(lo, 0.0))))
        if lo > 0:
            support_parts.append(float(log_e_above(k, n, lo)))
        for_ = min(support_parts) if support_parts else math.inf
        best_against = max(best_against, against)
        best_for = max(best_for, for_)
        if against >= math.log(1 / a_fals):
            return "falsified", math.exp(min(best_against, 700)), math.exp(min(best_for, 700))
        if for_ >= math.log(1 / alpha):
            return "supported", math.exp(min(best_against, 700)), math.exp(min(best_for, 700))
    return "inconclusive", math.exp(min(best_against, 700)), math.exp(min(best_for, 700))


def difference_sequence(path_a: list[tuple[float, float]], path_b: list[tuple[float, float]],
                        alpha: float = ALPHA) -> tuple[float, float]:
    """Running-intersection confidence sequence for p_a - p_b (per-arm sequences at alpha/2)."""
    lo, hi = -1.0, 1.0
    for (ka, na), (kb, nb) in zip(path_a, path_b):
        la, ua = confidence_sequence(ka, na, alpha / 2)
        lb, ub = confidence_sequence(kb, nb, alpha / 2)
        lo, hi = max(lo, la - ub), min(hi, ua - lb)
    return (lo, max(lo, hi))
