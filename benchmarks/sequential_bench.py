"""Benchmark: the e-value mixtures of workbench.analysis.sequential in one pass over the alternatives, against
the per-alternative loop they replaced (the baseline, defined here and swapped in for the same run).

    python benchmarks/sequential_bench.py [--seeds 5]

Prints CPU seconds both ways for 40,000 scalar e-values and for an isolate search on the noisy seed-world
model (tests/isolate/test_search.py's, with its factorial baseline), the ratios, and whether both ways
decided the same.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "isolate"))

from workbench.analysis import sequential as seq  # noqa: E402


def per_alternative_mixture(k, n, c, alts, log_w):
    """The loop the one-pass mixture replaced: one `_loglik` per alternative, then stacked."""
    base = seq._loglik(k, n, c)
    mixed = seq._logsumexp(np.stack([lw + seq._loglik(k, n, p) for p, lw in zip(alts, log_w)]))
    with np.errstate(invalid="ignore"):
        out = mixed - base
    return np.where(np.isneginf(base) & ~np.isneginf(mixed), np.inf, out)


def scalar_calls() -> list[float]:
    out = []
    for i in range(20000):
        out.append(float(seq.log_e_below(float(i % 50), 400.0, 0.02)))
        out.append(float(seq.log_e_above(float(i % 50), 400.0, 0.02)))
    return out


def searches(seeds: int) -> list[tuple]:
    from test_search import FAIL, SEED, BinomialOracle, conjunction, factorial, isolate

    rate = conjunction({"index_k_dtype", "hicache", "geometry_fix"}, rate=0.15)
    out = []
    for s in range(seeds):
        r = isolate(SEED, BinomialOracle(rate, FAIL, seed=s), alpha=0.05, budget=4000)
        f = factorial(SEED, BinomialOracle(rate, FAIL, seed=s), alpha=0.05)
        out.append((r.status, tuple(r.minimal), r.units, f.units))
    return out


def timed(fn, *args):
    t0 = time.process_time()
    res = fn(*args)
    return time.process_time() - t0, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ns = ap.parse_args()
    print(f"cpus: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.2f}")
    one_pass = seq._mixture
    for name, work in (("40,000 scalar e-values", scalar_calls), (f"{ns.seeds} isolate searches + factorial",
                                                                   lambda: searches(ns.seeds))):
        seq._mixture = per_alternative_mixture
        base_s, base_res = timed(work)
        seq._mixture = one_pass
        new_s, new_res = timed(work)
        print(f"{name}: one pass {new_s:.2f} s CPU, per alternative (baseline) {base_s:.2f} s, ratio "
              f"{new_s / base_s:.2f}; same results: {new_res == base_res}")


if __name__ == "__main__":
    main()
