"""How few units a sequential falsification of "<= 0.02" can use under a between-run ICC: other bets, and an oracle.

    python studies/sequential_bounds.py [--experiments 400] [--seed 3]

The per-model units goal of #12 (studies/verdict_study.py: sequential <= 0.50 of the fixed design deciding the
same cells) is missed under a beta-binomial ICC of 0.03 and 0.1. Under those models the cells decided are 0,
0.1 and 0.18; the cell at 0 costs 400 units in any design that keeps clustered.ICC_FLOOR, so the goal needs
units(0.1) + units(0.18) <= 3 * 0.5 * fixed - 400 (560 at ICC 0.1, fixed-8; 320 at ICC 0.03, fixed-6). At those
cells the lower side decides, so this study measures only the lower side's test, on the same simulated runs
(verdict_study.simulate), as the share of experiments it falsifies within the budget of 12 runs (from the second,
sequential.MIN_LOOKS) and the mean units it runs:

- bets on run rates (sequential.log_e_runs_above): the shipped mixture at BET_SHARE 0.5 and 0.75, a mixture
  of high stakes only, and a predictable plug-in stake (aGRAPA, Waudby-Smith and Ramdas), alone and mixed in;
- universal inference: a mixture of beta-binomial alternatives over the running maximum likelihood of the null
  (rate <= 0.02 and an ICC up to a stated maximum): valid only under that maximum;
- the oracle: Wald's SPRT of the true (rate, ICC) against (0.02, ICC 0.1), with a lower boundary that gives up
  at about the goal's power. It knows the model and the rate of each cell, so no usable test does better
  (Wald and Wolfowitz: among tests with its error rates it minimises the expected units at both hypotheses).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from verdict_study import BOUND, BUDGET, UNITS, simulate  # noqa: E402
from workbench.analysis import sequential as seq  # noqa: E402

MODELS = ("independent", "beta-binomial ICC=0.03", "beta-binomial ICC=0.1")
CELLS = (0.02, 0.05, 0.1, 0.18)


def _mixture(rates: np.ndarray, fractions: tuple[float, ...]) -> np.ndarray:
    lam = np.asarray(fractions) / BOUND
    logs = np.cumsum(np.log1p(lam[:, None, None] * (rates[None] - BOUND)), axis=2)
    top = logs.max(0)
    return np.log(np.exp(logs - top).mean(0)) + top


def _agrapa(rates: np.ndarray, start: float = 0.5, cap: float = 0.9) -> np.ndarray:
    """The stake of each run from the runs before it (Kelly's approximately); the first at start / c."""
    out, acc = np.zeros(rates.shape), np.zeros(len(rates))
    for t in range(rates.shape[1]):
        if t == 0:
            lam = np.full(len(rates), start / BOUND)
        else:
            mu = rates[:, :t].mean(1)
            var = rates[:, :t].var(1)
            var = np.maximum(var, mu * (1 - mu) * 0.1 + 1e-4) if t < 3 else np.maximum(var, 1e-4)
            lam = np.clip((mu - BOUND) / (var + (mu - BOUND) ** 2), 0, cap / BOUND)
        acc = acc + np.log1p(lam * (rates[:, t] - BOUND))
        out[:, t] = acc
    return out


def _bb_logpmf(p: float, icc: float) -> np.ndarray:
    from scipy.stats import betabinom, binom

    ks = np.arange(UNITS + 1)
    if icc == 0:
        return binom.logpmf(ks, UNITS, p)
    a = p * (1 / icc - 1)
    return betabinom.logpmf(ks, UNITS, a, a * (1 - p) / p)


def _universal(counts: np.ndarray, icc_max: float) -> np.ndarray:
    nulls = np.array([_bb_logpmf(p, i) for p in np.linspace(0.002, BOUND, 10) for i in np.linspace(0, icc_max, 21)])
    alts = np.array([_bb_logpmf(seq._expit(math.log(BOUND / (1 - BOUND)) + d), i)
                     for d in seq.ODDS_STEPS for i in (0.0, 0.01, 0.03, 0.1, 0.2)])
    null = np.cumsum(nulls[:, counts], axis=2).max(0)
    alt = np.cumsum(alts[:, counts], axis=2)
    top = alt.max(0)
    return np.log(np.exp(alt - top).mean(0)) + top - null


def _first(log_e: np.ndarray, level: float, give_up: float | None = None) -> tuple[float, float]:
    """(share falsified, mean units) of a test that rejects at `level` from the second look (and, with
    `give_up`, stops without a verdict once log E falls to it)."""
    up = log_e >= level
    stop = up | (log_e <= give_up if give_up is not None else False)
    up[:, 0] = stop[:, 0] = False
    last = np.where(stop.any(1), stop.argmax(1), BUDGET - 1)
    return float(up[np.arange(len(up)), last].mean()), float((last + 1).mean() * UNITS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", type=int, default=400)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    alpha = seq.ALPHA
    tests = {
        "bet shipped (share 0.5)": (lambda k: _mixture(k / UNITS, seq.BET_FRACTIONS), 0.5),
        "bet shipped, share 0.75": (lambda k: _mixture(k / UNITS, seq.BET_FRACTIONS), 0.75),
        "bet stakes 0.3-0.9 only": (lambda k: _mixture(k / UNITS, (0.3, 0.5, 0.7, 0.9)), 0.5),
        "bet aGRAPA": (lambda k: _agrapa(k / UNITS), 0.5),
        "bet aGRAPA + shipped": (lambda k: np.logaddexp(_agrapa(k / UNITS), _mixture(k / UNITS, seq.BET_FRACTIONS))
                                 - math.log(2), 0.5),
        "universal, ICC <= 0.2": (lambda k: _universal(k, 0.2), 0.5),
        "universal, ICC <= 0.5": (lambda k: _universal(k, 0.5), 0.5),
    }
    print(f"falsified share / mean units per arm, {args.experiments} experiments a cell, budget {BUDGET} runs of "
          f"{UNITS}; each test at the lower side's level for its share of alpha / 2")
    print(f"{'test':<26} | {'model':<23} | " + " | ".join(f"{p:>11}" for p in CELLS))
    sims = {(m, p): simulate(m, p, args.experiments, rng) for m in MODELS for p in CELLS}
    for name, (f, share) in tests.items():
        level = math.log(2 / (alpha * share))
        for m in MODELS:
            cols = [_first(f(sims[m, p]), level) for p in CELLS]
            print(f"{name:<26} | {m:<23} | " + " | ".join(f"{s:.3f}/{u:>5.0f}" for s, u in cols))
    print("\nOracle SPRT of the true rate and ICC against (0.02, ICC 0.1) at alpha / 2, giving up at log E <= -1.5 "
          "(10 x the experiments):")
    for m, icc in (("beta-binomial ICC=0.03", 0.03), ("beta-binomial ICC=0.1", 0.1)):
        cols = []
        for p in CELLS:
            counts = simulate(m, p, 10 * args.experiments, rng)
            llr = _bb_logpmf(p if p > BOUND else 0.1, icc) - _bb_logpmf(BOUND, 0.1)
            cols.append(_first(np.cumsum(llr[counts], axis=1), math.log(2 / alpha), -1.5))
        print(f"{'oracle SPRT':<26} | {m:<23} | " + " | ".join(f"{s:.3f}/{u:>5.0f}" for s, u in cols))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
