"""Coverage of a fixed design's rate interval (clustered.rate_interval) when sessions inside a run share a rate.

    python studies/rate_coverage.py [--experiments 1500]

Per intra-run correlation (beta-binomial ICC 0, 0.02, 0.05, 0.1; true rate 0.05, runs of 80) and number of runs
(2, 3, 6): the share of experiments whose 95% interval holds the true rate, and its mean width. Deterministic for a
given --seed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.analysis import clustered  # noqa: E402

RATE, UNITS = 0.05, 80


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(f"true rate {RATE}, runs of {UNITS}, {args.experiments} experiments a cell")
    print("ICC   | runs | coverage | mean width")
    for icc in (0.0, 0.02, 0.05, 0.1):
        for runs in (2, 3, 6):
            covered, width = 0, 0.0
            for _ in range(args.experiments):
                if icc == 0:
                    ks = rng.binomial(UNITS, RATE, runs)
                else:
                    a = RATE * (1 / icc - 1)
                    ks = rng.binomial(UNITS, rng.beta(a, a * (1 - RATE) / RATE, runs))
                lo, hi = clustered.rate_interval(clustered.effective([float(k) for k in ks], [float(UNITS)] * runs))
                covered += lo <= RATE <= hi
                width += hi - lo
            print(f"{icc:<5} | {runs:>4} | {covered / args.experiments:8.3f} | {width / args.experiments:10.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
