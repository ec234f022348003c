"""Simulation study of wb's verdict rules under dependence: false verdicts, A/A false alarms, power, units used.

The wedge-confound prediction (treatment corruption_rate <= 0.02), 80 sessions per run as in the seed,
the default fixed design (2 replicates) and the sequential budget (design.max_replicates = 12), under
five models of how sessions depend on each other:

- independent: every session an independent Bernoulli trial;
- repeated rho: replicates replay the same sessions (one recorded seed); each session keeps its first outcome with
  probability rho and is drawn afresh otherwise (rho = 1: every replicate is a copy of the first);
- beta-binomial ICC: each run has its own rate, drawn from a beta distribution with the cell's mean
  and intra-run correlation ICC.

Every decision goes through workbench.analysis as `analyze` makes it: run-level effective counts
(analysis.clustered), the drift check's over-dispersion flag, the fixed Wilson interval judged by
analysis.regions, the sequential e-value tests; a consistency pass re-decides a sample of experiments
with the library's own judge_proportion / e_interval.

    python studies/verdict_study.py [--experiments 200] [--seed 1] [--workers 2] [--quick]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.analysis import clustered, regions, stats  # noqa: E402
from workbench.analysis import sequential as seq  # noqa: E402

UNITS = 80          # sessions per run (the seed's C=80)
BOUND = 0.02        # wedge-confound: corruption_rate (treatment) <= 0.02
DEFAULT_REPS = 2    # experiments/agent-repro.yaml design.replicates
BUDGET = 12         # design.max_replicates
SEED_EFFECT = 0.18  # the seed's post-fix rate (14/80)
REGION = regions.Region(-math.inf, BOUND, regions.Support.PROPORTION)
MODELS = {"independent": ("iid", 0.0), "repeated rho=0.9": ("rho", 0.9), "repeated rho=1": ("rho", 1.0),
          "beta-binomial ICC=0.03": ("icc", 0.03), "beta-binomial ICC=0.1": ("icc", 0.1)}
CELLS = [0.0, 0.005, 0.01, 0.02, 0.05, 0.10, SEED_EFFECT]
AA_RATES = (0.02, 0.15)
LOG_THRESHOLD = math.log(2 / seq.ALPHA)


def simulate(model: str, p: float, experiments: int, rng: np.random.Generator) -> np.ndarray:
    """Per-run counts, shape (experiments, BUDGET), under one dependence model."""
    kind, x = MODELS[model]
    if kind == "iid" or p == 0:
        return rng.binomial(UNITS, p, size=(experiments, BUDGET))
    if kind == "icc":
        a = p * (1 / x - 1)
        rates = rng.beta(a, a * (1 - p) / p, size=(experiments, BUDGET))
        return rng.binomial(UNITS, rates)
    first = rng.random((experiments, UNITS)) < p
    keep = rng.random((experiments, BUDGET, UNITS)) < x
    fresh = rng.random((experiments, BUDGET, UNITS)) < p
    sessions = np.where(keep, first[:, None, :], fresh)
    sessions[:, 0, :] = first
    return sessions.sum(axis=2)


def _effective(ks: np.ndarray, replayed: bool = False) -> clustered.Effective:
    """`replayed`: the replicates repeat one workload (the repeated-sessions models, whose runs record one
    seed), which the analysis sees from the runs' per-replicate variables."""
    return clustered.effective([float(k) for k in ks], [float(UNITS)] * len(ks), replayed)


def _drift(e: clustered.Effective) -> bool:
    """The drift check's over-dispersion finding, which makes analyze() inconclusive."""
    return e.dispersion.p_over < clustered.FLAG_P


def fixed_decision(ks: np.ndarray, replayed: bool = False) -> str:
    """What analyze() decides from a fixed design's runs (one prediction, no other check failing)."""
    e = _effective(ks, replayed)
    if _drift(e):
        return "inconclusive"
    ci = stats.wilson(e.k_eff, e.n_eff, clustered.level_alpha(stats.ALPHA, e.df))
    return regions.outcome(ci, REGION)


def _scaled_path(ks: np.ndarray, e: clustered.Effective | None = None,
                 replayed: bool = False) -> tuple[np.ndarray, np.ndarray, clustered.Effective]:
    """Cumulative (k, n) after each look divided by the run-level divisor estimated from all runs so far."""
    e = e or _effective(ks, replayed)
    d = clustered.divisor(e, stats.ALPHA)
    return np.cumsum(ks) / d, UNITS * np.arange(1, len(ks) + 1) / d, e


def sequential_decision(ks: np.ndarray, replayed: bool = False) -> tuple[str, int]:
    """Look after each replicate, stop at the first decision (sequential_decision's rule); (verdict, looks)."""
    for t in range(seq.MIN_LOOKS, len(ks) + 1):
        K, N, e = _scaled_path(ks[:t], replayed=replayed)
        if _drift(e):
            continue
        # The running interval's relation to [0, c] is decided by the e-tests at c (each spends alpha/2).
        if (seq.log_e_above(K, N, BOUND) >= LOG_THRESHOLD).any():
            return "falsified", t
        if (seq.log_e_below(K, N, BOUND) >= LOG_THRESHOLD).any():
            return "supported", t
    return "inconclusive", len(ks)


def library_sequential(ks: np.ndarray, looks: int, replayed: bool = False) -> str | None:
    """The library's own decision at `looks` (None where the drift check holds the verdict back)."""
    K, N, e = _scaled_path(ks[:looks], replayed=replayed)
    if _drift(e):
        return None
    return seq.judge_proportion(list(zip(K, N)), (0.0, BOUND))[0]


def _cell(args: tuple[str, float, int, int]) -> dict[str, object]:
    model, p, experiments, seed = args
    rng = np.random.default_rng(seed)
    K = simulate(model, p, experiments, rng)
    rep = MODELS[model][0] == "rho"
    fixed2 = [fixed_decision(K[i, :DEFAULT_REPS], rep) for i in range(experiments)]
    seqd = [sequential_decision(K[i], rep) for i in range(experiments)]
    want = "supported" if p <= BOUND else "falsified"
    fixed_at = {}
    seq_right = np.mean([d == want for d, _ in seqd])
    for r in range(1, BUDGET + 1 if seq_right >= 0.9 else 1):  # only where the comparison is made
        ok = np.mean([fixed_decision(K[i, :r], rep) == want for i in range(experiments)])
        if ok >= 0.9:
            fixed_at = {"units": r * UNITS}
            break
    bad = 0
    for i in range(min(20, experiments)):
        lib = library_sequential(K[i], seqd[i][1], rep)
        bad += lib is not None and lib != seqd[i][0]
    return {"model": model, "p": p, "fixed2": _rates(fixed2), "seq": _rates([d for d, _ in seqd]),
            "seq_units": float(np.mean([t for _, t in seqd])) * UNITS, "fixed_units_90": fixed_at.get("units"),
            "inconsistent": bad}


def _aa(args: tuple[str, float, int, int]) -> dict[str, object]:
    """Control run twice: a false alarm is a difference interval that excludes 0."""
    model, p, experiments, seed = args
    rng = np.random.default_rng(seed)
    A, B = simulate(model, p, experiments, rng), simulate(model, p, experiments, rng)
    rep = MODELS[model][0] == "rho"
    fixed = sequential = 0
    for i in range(experiments):
        ea, eb = clustered.joint(_effective(A[i, :DEFAULT_REPS], rep), _effective(B[i, :DEFAULT_REPS], rep))
        lo, hi = stats.newcombe(ea.k_eff, ea.n_eff, eb.k_eff, eb.n_eff, clustered.level_alpha(stats.ALPHA, ea.df))
        fixed += not (lo <= 0 <= hi)
        # The A/A check runs at every look of a sequential execution; an alarm at any look stops it.
        for t in range(1, BUDGET + 1):
            ea, eb = clustered.joint(_effective(A[i, :t], rep), _effective(B[i, :t], rep))
            ka, na, _ = _scaled_path(A[i, :t], ea)
            kb, nb, _ = _scaled_path(B[i, :t], eb)
            lo, hi = seq.difference_sequence(list(zip(ka, na)), list(zip(kb, nb)))
            if not (lo <= 0 <= hi):
                sequential += 1
                break
    return {"model": model, "p": p, "fixed": fixed / experiments, "sequential": sequential / experiments}


def _rates(decisions: list[str]) -> dict[str, float]:
    return {v: decisions.count(v) / len(decisions) for v in ("falsified", "supported", "inconclusive")}


def _jobs(experiments: int, seed: int, quick: bool) -> tuple[list[tuple[str, float, int, int]], list[tuple[str, float, int, int]]]:
    cells, aa = [], []
    for mi, model in enumerate(MODELS):
        for ci, p in enumerate(CELLS):
            if quick and p not in (0.0, BOUND, SEED_EFFECT):
                continue
            cells.append((model, p, experiments, seed * 1000 + mi * 50 + ci))
        for ai, p in enumerate(AA_RATES):
            aa.append((model, p, experiments, seed * 1000 + mi * 50 + 40 + ai))
    return cells, aa


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="only the cells the goals name (0, 0.02, 0.18)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    E = args.experiments
    cell_jobs, aa_jobs = _jobs(E, args.seed, args.quick)
    with ProcessPoolExecutor(args.workers) as pool:
        cells = list(pool.map(_cell, cell_jobs))
        aas = list(pool.map(_aa, aa_jobs))
    print(f"wedge-confound: corruption_rate (treatment) <= {BOUND}; {UNITS} sessions per run; fixed design "
          f"{DEFAULT_REPS} replicates; sequential budget {BUDGET}; {E} experiments per cell "
          f"(a rate of 0.05 has a standard error of {math.sqrt(0.05 * 0.95 / E):.3f})\n")
    return report(cells, aas, E, time.perf_counter() - t0)


def _fsi(r: dict[str, float]) -> str:
    return f"{r['falsified']:.3f}/{r['supported']:.3f}/{r['inconclusive']:.3f}"


def report(cells: list[dict], aas: list[dict], E: int, seconds: float) -> int:
    head = (f"{'model':<23} | {'rate':>5} | {'fixed-2 F/S/I':>17} | {'sequential F/S/I':>17} | "
            f"{'seq units':>9} | {'fixed units@90%':>15}")
    print(head + "\n" + "-" * len(head))
    for c in cells:
        print(f"{c['model']:<23} | {c['p']:>5.3f} | {_fsi(c['fixed2']):>17} | {_fsi(c['seq']):>17} | "
              f"{c['seq_units']:>9.0f} | {c['fixed_units_90'] or '>' + str(BUDGET * UNITS):>15}")
    print("\nF/S/I: share falsified / supported / inconclusive. seq units: mean sessions per arm the sequential "
          "design ran before stopping; fixed units@90%: the smallest fixed design (whole replicates) that gives "
          "the right verdict in >= 90% of experiments.\n")
    head = (f"{'model':<23} | {'mode':<10} | {'false fals. @0.02':>17} | {'A/A alarms (max)':>16} | "
            f"{'power @0.18':>11} | {'units @0.18':>11} | {'units @0':>8} | {'seq/fixed units':>15}")
    print(head + "\n" + "-" * len(head))
    se = 2 * math.sqrt(0.05 * 0.95 / E)
    rows, ok = [], True
    for model in MODELS:
        mine = {c["p"]: c for c in cells if c["model"] == model}
        aa = [a for a in aas if a["model"] == model]
        decided = [c for c in mine.values() if c["fixed_units_90"] and
                   c["seq"]["supported" if c["p"] <= BOUND else "falsified"] >= 0.9]
        ratio = (float(np.mean([c["seq_units"] for c in decided])) / max(c["fixed_units_90"] for c in decided)
                 if decided else float("nan"))
        for mode, key in (("fixed-2", "fixed2"), ("sequential", "seq")):
            ff = mine[BOUND][key]["falsified"]
            alarms = max(a["fixed" if key == "fixed2" else "sequential"] for a in aa)
            power = mine[SEED_EFFECT][key]["falsified"]
            units = DEFAULT_REPS * UNITS if key == "fixed2" else mine[SEED_EFFECT]["seq_units"]
            units0 = DEFAULT_REPS * UNITS if key == "fixed2" else mine[0.0]["seq_units"]
            r = ratio if key == "seq" else float("nan")
            print(f"{model:<23} | {mode:<10} | {ff:>17.3f} | {alarms:>16.3f} | {power:>11.3f} | {units:>11.0f} | "
                  f"{units0:>8.0f} | {r:>15.2f}")
            rows.append((model, mode, ff, alarms, power, r))
    print(f"\nGoals (simulation error: 2 SE of a 5% rate = {se:.3f}):")
    for name, test in (("false falsification at the boundary <= 0.05", lambda r: r[2] <= 0.05),
                       ("A/A false alarms <= 0.05", lambda r: r[3] <= 0.05),
                       ("power at the seed effect >= 0.90", lambda r: r[4] >= 0.9),
                       ("sequential units <= 0.50 of the fixed design deciding the same cells",
                        lambda r: r[1] != "sequential" or r[5] <= 0.5)):
        misses = [f"{m} {mode}" for m, mode, *_ in (r for r in rows if not test(r))]
        ok &= not misses
        print(f"  {'ok  ' if not misses else 'MISS'} {name}" + (f": missed by {', '.join(misses)}" if misses else ""))
    bad = sum(c["inconsistent"] for c in cells)
    print(f"  {'ok  ' if bad == 0 else 'MISS'} library vs study sequential decisions disagreeing: {bad}")
    print(f"\n({seconds:.1f} s)")
    return 0 if ok and bad == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
