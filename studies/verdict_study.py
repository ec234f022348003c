"""Simulation study of wb's verdict rules: error rates, power, A/A false alarms and sequential savings.

Binomial simulation of the wedge-confound prediction (treatment corruption_rate <= 0.02), with
80 sessions per run as in the seed, the default fixed design (2 replicates) and the sequential
budget (design.max_replicates = 12). Every decision goes through workbench.analysis: the fixed
design through the Wilson interval, the sequential one through its e-value tests; a consistency
pass re-decides a sample of experiments with the scalar library calls the analysis itself uses.

    python studies/verdict_study.py [--experiments 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.analysis import sequential as seq  # noqa: E402
from workbench.analysis import stats  # noqa: E402

UNITS = 80          # sessions per run (the seed's C=80)
BOUND = 0.02        # wedge-confound: corruption_rate (treatment) <= 0.02
DEFAULT_REPS = 2    # experiments/agent-repro.yaml design.replicates
BUDGET = 12         # design.max_replicates
SEED_EFFECT = 0.18  # the seed's post-fix rate (14/80)
CELLS = [0.0, 0.005, 0.01, 0.02, 0.05, 0.10, SEED_EFFECT]
REGION = (-math.inf, BOUND)


def wilson_decisions(k: np.ndarray, n: int) -> np.ndarray:
    """'falsified' / 'supported' / 'inconclusive' for each k, by the Wilson 95% interval vs the region."""
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(k, n, alpha=stats.ALPHA, method="wilson")
    out = np.full(k.shape, "inconclusive", dtype=object)
    out[lo > BOUND] = "falsified"
    out[hi <= BOUND] = "supported"
    return out


def sequential_decisions(K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First look at which an e-value crosses 1/alpha; (decision, units used) per experiment."""
    looks = np.arange(1, K.shape[1] + 1) * UNITS
    N = np.broadcast_to(looks, K.shape)
    against = seq.log_e_above(K, N, BOUND) >= math.log(1 / seq.ALPHA)
    for_ = seq.log_e_below(K, N, BOUND, lo=0.0) >= math.log(1 / seq.ALPHA)
    decided = against | for_
    first = np.where(decided.any(axis=1), decided.argmax(axis=1), K.shape[1] - 1)
    rows = np.arange(K.shape[0])
    dec = np.full(K.shape[0], "inconclusive", dtype=object)
    hit = decided[rows, first]
    dec[hit & against[rows, first]] = "falsified"
    dec[hit & ~against[rows, first] & for_[rows, first]] = "supported"
    return dec, (first + 1) * UNITS


def rates(dec: np.ndarray) -> dict[str, float]:
    return {v: float(np.mean(dec == v)) for v in ("falsified", "supported", "inconclusive")}


def fixed_units_needed(K: np.ndarray, want: str) -> int | None:
    """Smallest fixed design (whole replicates) reaching `want` in >= 90% of experiments."""
    for r in range(1, K.shape[1] + 1):
        if np.mean(wilson_decisions(K[:, r - 1], r * UNITS) == want) >= 0.9:
            return r * UNITS
    return None


@functools.lru_cache(maxsize=None)
def _cs(k: int, n: int, alpha: float) -> tuple[float, float]:
    return seq.confidence_sequence(k, n, alpha)


def aa_study(rng: np.random.Generator, p: float, experiments: int) -> dict[str, float]:
    """Control run twice: false alarms of the sequential difference test (peeking every replicate),
    of the fixed Newcombe interval at the default design, and of naive peeking with Newcombe."""
    A = rng.binomial(UNITS, p, size=(experiments, BUDGET)).cumsum(axis=1)
    B = rng.binomial(UNITS, p, size=(experiments, BUDGET)).cumsum(axis=1)
    seq_alarm = naive_alarm = fixed_alarm = 0
    floor = []
    for i in range(experiments):
        lo, hi = -1.0, 1.0
        naive = False
        for j in range(BUDGET):
            n = (j + 1) * UNITS
            la, ua = _cs(int(A[i, j]), n, seq.ALPHA / 2)
            lb, ub = _cs(int(B[i, j]), n, seq.ALPHA / 2)
            lo, hi = max(lo, la - ub), min(hi, ua - lb)
            nl, nh = stats.newcombe(A[i, j], n, B[i, j], n)
            if not (nl <= 0 <= nh):
                naive = True
            if j == DEFAULT_REPS - 1:
                fixed_alarm += not (nl <= 0 <= nh)
                floor.append(max(abs(nl), abs(nh)))
        seq_alarm += not (lo <= 0 <= hi)
        naive_alarm += naive
    return {"sequential": seq_alarm / experiments, "fixed": fixed_alarm / experiments,
            "naive_peeking": naive_alarm / experiments, "noise_floor": float(np.median(floor))}


def consistency(rng: np.random.Generator, samples: int = 150) -> int:
    """Re-decide random experiments with the scalar library calls; returns the number of disagreements."""
    bad = 0
    for _ in range(samples):
        p = float(rng.choice(CELLS))
        K = rng.binomial(UNITS, p, size=(1, BUDGET)).cumsum(axis=1)
        dec, used = sequential_decisions(K)
        path = [(float(K[0, j]), float((j + 1) * UNITS)) for j in range(BUDGET)]
        lib, _, _ = seq.judge_proportion(path, REGION)
        bad += lib != dec[0]
        k2 = int(K[0, DEFAULT_REPS - 1])
        lib_fixed = {"outside": "falsified", "inside": "supported", "straddles": "inconclusive"}[
            stats.relation(stats.wilson(k2, DEFAULT_REPS * UNITS), REGION)]
        bad += lib_fixed != wilson_decisions(np.array([k2]), DEFAULT_REPS * UNITS)[0]
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    E = args.experiments
    print(f"wedge-confound prediction: corruption_rate (treatment) <= {BOUND}; {UNITS} sessions per run; "
          f"fixed design {DEFAULT_REPS} replicates ({DEFAULT_REPS * UNITS} units); sequential budget {BUDGET} "
          f"replicates ({BUDGET * UNITS} units); {E} experiments per cell\n")
    head = (f"{'true rate':>9} | {'truth':>5} | {'fixed-2 F/S/I':>17} | {'fixed-12 F/S/I':>17} | "
            f"{'sequential F/S/I':>17} | {'naive-peek F':>12} | {'seq units':>9} | {'fixed units@90%':>15}")
    print(head)
    print("-" * len(head))
    summary = {"false_falsification_fixed": 0.0, "false_falsification_seq": 0.0}
    cells = []
    for p in CELLS:
        K = rng.binomial(UNITS, p, size=(E, BUDGET)).cumsum(axis=1)
        f2 = rates(wilson_decisions(K[:, DEFAULT_REPS - 1], DEFAULT_REPS * UNITS))
        f12 = rates(wilson_decisions(K[:, BUDGET - 1], BUDGET * UNITS))
        sdec, sused = sequential_decisions(K)
        sr = rates(sdec)
        # Naive peeking: Wilson after every replicate, stop at the first decision (what wb must not do).
        naive = np.zeros(E, dtype=bool)
        for j in range(BUDGET):
            naive |= wilson_decisions(K[:, j], (j + 1) * UNITS) == "falsified"
        truth = p <= BOUND
        want = "supported" if truth else "falsified"
        fixed_n = fixed_units_needed(K, want)
        seq_units = float(np.mean(sused))
        if truth:
            summary["false_falsification_fixed"] = max(summary["false_falsification_fixed"], f2["falsified"],
                                                       f12["falsified"])
            summary["false_falsification_seq"] = max(summary["false_falsification_seq"], sr["falsified"])
        if p == SEED_EFFECT:
            summary["power_fixed"], summary["power_seq"] = f2["falsified"], sr["falsified"]
        cells.append((p, sr[want], seq_units, fixed_n))

        def fsi(r: dict[str, float]) -> str:
            return f"{r['falsified']:.3f}/{r['supported']:.3f}/{r['inconclusive']:.3f}"

        print(f"{p:>9.3f} | {'true' if truth else 'false':>5} | {fsi(f2):>17} | {fsi(f12):>17} | {fsi(sr):>17} | "
              f"{naive.mean():>12.3f} | {seq_units:>9.0f} | {fixed_n if fixed_n else '>' + str(BUDGET * UNITS):>15}")
    print("\nF/S/I: share of experiments falsified / supported / inconclusive. 'seq units': mean units the "
          "sequential design used (stopping at its verdict or at the budget); 'fixed units@90%': the smallest fixed "
          "design, in whole replicates, that reaches the right verdict in >= 90% of experiments of that cell.")

    # Exact false-falsification of the fixed Wilson rule at the region's edge, for every fixed size.
    from scipy.stats import binom

    exact = []
    for r in range(1, BUDGET + 1):
        n = r * UNITS
        ks = np.arange(n + 1)
        dec = wilson_decisions(ks, n)
        exact.append((n, float(binom.pmf(ks[dec == "falsified"], n, BOUND).sum())))
    worst_n, worst = max(exact, key=lambda t: t[1])
    print(f"\nExact false-falsification of the fixed rule at the edge (true rate {BOUND}), by units: "
          + ", ".join(f"{n}: {v:.3f}" for n, v in exact) + f"  (max {worst:.3f} at {worst_n})")

    # Sequential vs fixed: a fixed design must be sized before the data, for every cell it is meant to decide.
    decided = [(p, units, fixed_n) for p, ok, units, fixed_n in cells if ok >= 0.9 and fixed_n]
    matched_n = max(f for _, _, f in decided) if decided else float("nan")
    ratio = float(np.mean([u for _, u, _ in decided])) / matched_n if decided else float("nan")
    print(f"\nCells both designs decide (right verdict >= 90%): {', '.join(f'{p:g}' for p, _, _ in decided)}. "
          f"A fixed design deciding all of them needs {matched_n} units; the sequential design uses "
          f"{np.mean([u for _, u, _ in decided]):.0f} on average over them (ratio {ratio:.2f}). Per cell, against "
          "a fixed design sized with hindsight for that cell alone: "
          + ", ".join(f"{p:g}: {u:.0f}/{f}" for p, u, f in decided) + ".")

    print("\nA/A (control run twice, the seed's control rate; sequential = always-valid difference test peeking "
          "after every replicate up to the budget):")
    print(f"{'rate':>6} | {'sequential':>10} | {'fixed-2':>7} | {'naive peeking':>13} | {'noise floor (fixed-2)':>21}")
    aa_max = 0.0
    for p in (0.02, 0.15):
        r = aa_study(rng, p, E)
        aa_max = max(aa_max, r["sequential"])
        print(f"{p:>6.2f} | {r['sequential']:>10.3f} | {r['fixed']:>7.3f} | {r['naive_peeking']:>13.3f} | "
              f"±{r['noise_floor']:.3f}")

    bad = consistency(rng)
    print("\nRequirements:")
    rows = [
        ("false falsification when true, fixed rule, exact (max over sizes)", worst, "<= 0.05", worst <= 0.05),
        ("false falsification when true, fixed rule, simulated (max over cells)",
         summary["false_falsification_fixed"], "<= 0.05 + 2 SE", summary["false_falsification_fixed"]
         <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / E)),
        ("false falsification when true (max over true rates), sequential", summary["false_falsification_seq"],
         "<= 0.05", summary["false_falsification_seq"] <= 0.05),
        (f"power at the seed effect ({SEED_EFFECT}), fixed default design", summary["power_fixed"], ">= 0.90",
         summary["power_fixed"] >= 0.9),
        (f"power at the seed effect ({SEED_EFFECT}), sequential within budget", summary["power_seq"], ">= 0.90",
         summary["power_seq"] >= 0.9),
        ("A/A false alarms with sequential peeking (max)", aa_max, "<= 0.05", aa_max <= 0.05),
        ("sequential units / fixed design units, mean over the cells both decide", ratio, "<= 0.50", ratio <= 0.5),
        ("library vs study decisions disagreeing (consistency)", float(bad), "== 0", bad == 0),
    ]
    for name, value, target, ok in rows:
        print(f"  {'ok  ' if ok else 'MISS'} {name}: {value:.3f} (target {target})")
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
