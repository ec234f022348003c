"""The run as the unit of inference for a proportion: how far the replicates' own spread departs from binomial.

Sessions in one run share a server, and replicates can replay the same sessions, so the units of an
arm are not independent Bernoulli trials. Pearson's dispersion over the runs, phi = X^2 / (R - 1),
measures it, and an exact conditional test (given the arm's total, the runs' counts are
multivariate hypergeometric when every unit is independent with one rate) says whether it departs
from 1 in either direction:

- over-dispersion (runs differ more than chance allows: a between-run rate, an ICC) inflates the
  variance by phi, so the arm counts as N / phi units, judged with Student's t on R - 1 degrees of
  freedom rather than the normal quantile (phi itself is estimated from R runs);
- under-dispersion (runs agree more closely than independent samples do on average: replicates that
  replayed the same sessions) means the replicates are partly copies of each other; with correlation
  rho = 1 - phi between copies the design effect is 1 + (R - 1) rho, and at rho = 1 the arm counts
  as one run. This applies whenever phi < 1, significant or not: with few replicates no test can
  tell chance agreement from copying, and counting a copy twice is the error that costs verdicts;
- otherwise the pooled binomial stands.

One run cannot show between-run variation: its units are taken as independent, and the reasoning
says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Sequence

# The screen that decides whether the pooled binomial may stand: a departure from binomial with
# p below this (either direction) switches to the run-level interval. It is deliberately loose:
# with few runs the test has little power, and a wrong binomial costs false verdicts while a
# needless run-level interval only costs width.
SCREEN_P = 0.2
# The drift check reports a departure as a validity finding below this.
FLAG_P = 0.01
SIMULATIONS = 2000
# Dispersion this close to 1 from below is taken as binomial.
UNDER_TOL = 0.05


@dataclass(frozen=True)
class Dispersion:
    """Pearson dispersion of R runs' counts around their pooled rate, with exact one-sided p-values."""

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


def _pearson(ks: Sequence[float], ns: Sequence[float]) -> float:
    k, n = sum(ks), sum(ns)
    p = k / n
    return sum((ki - ni * p) ** 2 / (ni * p * (1 - p)) for ki, ni in zip(ks, ns) if ni > 0)


@lru_cache(maxsize=65536)
def _null_tails(ks: tuple[int, ...], ns: tuple[int, ...], x2: float) -> tuple[float, float]:
    """P(X^2 >= observed), P(X^2 <= observed) given the total: exact for two runs, seeded simulation beyond."""
    import numpy as np

    k, n = sum(ks), np.asarray(ns, float)
    p = k / n.sum()
    scale = n * p * (1 - p)
    tol = 1e-9 * max(1.0, x2)
    if len(ks) == 2:
        from scipy.stats import hypergeom

        lo, hi = max(0, k - ns[1]), min(k, ns[0])
        a = np.arange(lo, hi + 1)
        pmf = hypergeom.pmf(a, int(n.sum()), ns[0], k)
        stat = (a - n[0] * p) ** 2 / scale[0] + (k - a - n[1] * p) ** 2 / scale[1]
    else:
        rng = np.random.default_rng(20261201)
        # Multivariate hypergeometric by successive conditional draws, each vectorised over the simulations.
        left_k = np.full(SIMULATIONS, k, np.int64)
        left_n = int(n.sum())
        stat = np.zeros(SIMULATIONS)
        for i, ni in enumerate(ns):
            left_n -= ni
            draw = left_k if i == len(ns) - 1 else rng.hypergeometric(ni, max(left_n, 0) or 1, left_k) \
                if left_n > 0 else left_k
            stat += (draw - n[i] * p) ** 2 / scale[i]
            left_k = left_k - draw
        pmf = np.full(SIMULATIONS, 1.0 / SIMULATIONS)
    return float(pmf[stat >= x2 - tol].sum()), float(pmf[stat <= x2 + tol].sum())


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


def effective(ks: Sequence[float], ns: Sequence[float], replayed: bool = False) -> Effective:
    """The arm's counts as the interval should see them, and why (see the module's docstring).

    `replayed`: the runs replayed one workload (a per-replicate seed held at one value). Runs with no
    events at all (or only events) then count as one run: their agreement is what copies of the same
    sessions show, and with nothing to disperse no test can tell them from independent samples."""
    k, n = float(sum(ks)), float(sum(ns))
    d = dispersion(ks, ns)
    if d.runs <= 1:
        return Effective(k, n, k, n, 1.0, "binomial", None,
                         "one run: between-run variation cannot be measured, so its units are taken as independent", d)
    if d.phi is None and replayed:
        deff = float(d.runs)
        return Effective(k, n, k / deff, n / deff, deff, "run-level", None,
                         f"{d.runs} runs of one replayed workload with {'no' if k == 0 else 'only'} events: "
                         f"they agree as copies do, so they count as one run (design effect {d.runs})", d)
    if d.phi is None:
        return Effective(k, n, k, n, 1.0, "binomial", None,
                         f"{d.runs} runs with {'no' if k == 0 else 'only'} events, each with its own workload: "
                         "nothing to disperse, pooled binomial", d)
    if d.p_over < SCREEN_P and d.phi > 1:
        return Effective(k, n, k / d.phi, n / d.phi, d.phi, "run-level", d.runs - 1,
                         f"the {d.runs} runs are over-dispersed (phi = {d.phi:.2g}, p = {d.p_over:.2g}): "
                         f"variance inflated by phi, Student t on {d.runs - 1} df", d)
    if d.phi < 1 - UNDER_TOL:
        # Agreement closer than binomial is never rewarded: it is read as copying, whatever its p-value,
        # because two or three replicates cannot tell chance agreement from replayed sessions.
        deff = 1 + (d.runs - 1) * (1 - d.phi)
        return Effective(k, n, k / deff, n / deff, deff, "run-level", None,
                         f"the {d.runs} runs agree more closely than independent samples would on average "
                         f"(phi = {d.phi:.2g}, exact p = {d.p_under:.2g}): replicates counted as correlated "
                         f"copies, design effect {deff:.2g}", d)
    return Effective(k, n, k, n, 1.0, "binomial", None,
                     f"the {d.runs} runs' spread is consistent with binomial (phi = {d.phi:.2g}; "
                     f"p = {d.p_over:.2g} over, {d.p_under:.2g} under): pooled binomial", d)


def joint(a: Effective, b: Effective) -> tuple[Effective, Effective]:
    """Two arms compared with one variance model: both take the larger design effect and the fewer
    degrees of freedom. They ran on the same harness, and the smaller estimate from a few runs is the
    likelier to be an underestimate."""
    deff = max(a.design_effect, b.design_effect)
    dfs = [d for d in (a.df, b.df) if d is not None]
    df = min(dfs) if dfs else None

    def rescale(e: Effective) -> Effective:
        method = "run-level" if deff > 1 or df is not None else e.method
        return replace(e, k_eff=e.k / deff, n_eff=e.n / deff, design_effect=deff, df=df, method=method)

    return rescale(a), rescale(b)


def divisor(e: Effective, alpha: float) -> float:
    """What an arm's cumulative counts are divided by for the e-value tests, which know only the normal
    scale: the design effect, and for an over-dispersion estimated from few runs also (t / z)^2 at
    alpha, as the fixed interval's t quantile widens it. It is estimated from every run so far and
    applied to every earlier look too (the running intersection then uses one variance model)."""
    if e.df is None:
        return e.design_effect
    from scipy.stats import norm, t

    return e.design_effect * (t.isf(alpha / 2, e.df) / norm.isf(alpha / 2)) ** 2


def level_alpha(alpha: float, df: int | None) -> float:
    """The alpha whose normal quantile is Student's t quantile at alpha on df degrees of freedom."""
    if df is None:
        return alpha
    from scipy.stats import norm, t

    return float(2 * norm.sf(t.isf(alpha / 2, df)))


def rate_interval(e: Effective, alpha: float = 0.05) -> tuple[float, float]:
    """An arm's rate interval with the runs as the unit: Wilson's on the effective counts, at the level
    whose normal quantile is Student's t quantile when the variance was estimated from the runs. The
    verdict, the arm summaries and the report all use this one."""
    from workbench.analysis.stats import wilson

    return wilson(e.k_eff, e.n_eff, level_alpha(alpha, e.df))


def interval_label(e: Effective) -> str:
    return "Wilson 95%" if e.df is None else f"Wilson 95% (t, {e.df} df)"
