"""How often `wb confounds` flags a variable that has no effect (its false-alarm rate), and one that has (its power).

Each history is one execution that toggles `fix` over --runs runs an arm; every run has --units units (sessions),
each with the outcome at the execution's rate, the same in both arms (no effect) or, with --effect X, X times it
where fix=on. A variable's contrast is tested over runs and over units and judged on the smaller p. Judged on it at
alpha as if it were the only test, nothing bounds the false-alarm rate by alpha (two chances at alpha); paying for
the choice (Bonferroni over the two: the smaller p doubled) bounds it by alpha whatever the two tests'
correlation. The scan pays by Tarone's rule: it counts the test over runs only where the design lets it reach alpha
(with 2 or 3 runs an arm Fisher's test over runs can give no p below 0.33 or 0.1, whatever the outcomes), and
otherwise judges the test over units alone; where both can, the smaller p is doubled. Measured beside it: the
uncorrected rule, the corrected one (doubled whatever the design: the scan's rule before), and the candidate, an exact
conditional test of min(p over runs, p over units) (given the outcomes' total, every placing of them on the units
alike: the units test's own null). The study prints, per setting, the share of histories flagged under each rule,
with a Wilson 95% interval, and the CPU milliseconds a history of the scan's finding and of the candidate; it
checks that the scan's flag is Tarone's rule as the study computes it.

    python studies/confound_false_alarms.py [--histories 2000] [--seed 1] [--effect 1]

Measured (seed 1; results/confound_false_alarms.txt). False alarms, 2000 null histories a setting: uncorrected
1.6-4.9%, corrected 0.8-2.7%, candidate 1.6-4.2%, Tarone (the scan) 1.0-3.9%: each below alpha in every setting.
Fisher's exact test is conservative on counts this small, so the uncorrected rule stayed near alpha here rather than
above it; the correction is what guarantees it. Power, 1000 histories a setting with the rate x1.6 where fix=on:
corrected 3.2-84.0%, candidate 5.4-87.9%, higher in every setting, by 2.2 to 10.8 points. Tarone's rule, the scan's
since it replaced the corrected one, equals the candidate where the runs test cannot decide (2 or 3 runs an arm: 3
runs of 80 units, 61.3% -> 68.6%; 2 runs, 47.3% -> 55.6%; 3 runs of 80 at rates 0.005-0.03, 3.2% -> 5.4%) at false
alarms of 3.75%, 3.85% and 1.55% there (1.85%, 2.00% and 0.80% corrected), and the corrected rule elsewhere (8 runs
an arm or more here; from 4 the test over runs can reach alpha, so both are counted; 30 runs of 2 stays 40.1%, where
the candidate gives 50.9%). The candidate is not what the scan uses: its exact sum costs O(K x runs^2 x units) time
(K: units with the outcome) and O(K x runs^2) memory, 2-3 ms a history at 3 runs of 80 but 54-63 ms at 100 runs of 5,
1.8 s at 200 of 10 and 17 s at 400 of 10 (where its float weights overflow), beyond reach at
benchmarks/analysis_bench.py's 10,000 runs of 100; and over several executions (the flag's strata) its sum runs over
every combination of the strata's run margins, exponential in their number. Tarone's rule costs next to nothing (the
design alone decides it: stats.attainable_floor) and gives the candidate's gain at the shipped designs' 2-3
replicates an arm. Units are drawn independently within a run, so the test over units (and the candidate) is valid
on its own; with between-run variation it is not (the run is the unit of evidence), which this study leaves out so
that the cost of the choice alone is measured.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.analysis import stats  # noqa: E402
from workbench.analysis.conditioning import variable_findings  # noqa: E402
from workbench.analysis.confounds import Finding  # noqa: E402
from workbench.store.entities import RunData  # noqa: E402


def _run(i: int, execution: int, fix: str) -> RunData:
    return RunData(id=i, label=None, arm=None, status="ok", source="run", execution_id=execution,
                   experiment_version=1, replicate=1, block=None, order_index=None, variables={"fix": fix},
                   config_hash=None, fingerprint={})


def _history(rng: random.Random, executions: int, runs: int, units: int, rates: tuple[float, float],
             effect: float = 1.0) -> tuple[list[RunData], dict[int, tuple[float, float]]]:
    """One history's runs and their (units with the outcome, units). `effect` multiplies the rate where fix=on (1:
    no effect, the null)."""
    history, counts = [], {}
    for e in range(executions):
        rate = rng.uniform(*rates)
        for fix in ("off", "on") * runs:
            run = _run(len(history) + 1, e + 1, fix)
            history.append(run)
            at = min(1.0, rate * effect) if fix == "on" else rate
            counts[run.id] = (float(sum(rng.random() < at for _ in range(units))), float(units))
    return history, counts


def _finding(history: list[RunData], counts: dict[int, tuple[float, float]]) -> Finding:
    """The scan's finding for `fix`, as `wb confounds` judges it."""
    occurred = {i: k > 0 for i, (k, _) in counts.items()}
    return variable_findings(Finding, SimpleNamespace(id="null"), history, occurred, counts, "rate", "outcome",
                             {r.id: "h" for r in history})[0]


def _candidate(history: list[RunData], counts: dict[int, tuple[float, float]]) -> float:
    """The candidate min-p test's p over one execution's runs."""
    sides = [[int(counts[r.id][0]) for r in history if r.variables["fix"] == v] for v in ("off", "on")]
    sizes = [[int(counts[r.id][1]) for r in history if r.variables["fix"] == v] for v in ("off", "on")]
    return min_p_exact(*sizes, *sides)


def smallest_attainable(r1: int, r2: int) -> float:
    """The smallest p Fisher's test over runs can give with r1 runs against r2, whatever the outcomes: below it, the
    test cannot decide anything, which the design alone says (ancillary), so a rule may leave it out of the count."""
    return min(stats.fisher(a, r1, m - a, r2) for m in range(r1 + r2 + 1)
               for a in range(max(0, m - r2), min(m, r1) + 1))


def _fisher_all(n1: int, n2: int, m: int) -> Any:
    """Fisher's two-sided p for every k1 (index 0..n1; 1 where impossible) in tables of margin m."""
    import numpy as np

    out = np.ones(n1 + 1)
    low, pmf = stats.hypergeom_pmf(n1 + n2, m, n1)
    pmf = np.asarray(pmf)
    ordered = np.sort(pmf)
    below = np.cumsum(ordered)[np.searchsorted(ordered, pmf * (1 + 1e-7), side="right") - 1]
    out[low:low + len(pmf)] = np.minimum(1.0, below)
    return out


def _arm_weights(sizes: list[int], total: int) -> Any:
    """W[k, a]: in how many ways (scaled) k of an arm's units have the outcome with a of its runs having any."""
    import numpy as np

    w = np.zeros((total + 1, len(sizes) + 1))
    w[0, 0] = 1.0
    for n in sizes:
        new = w.copy()
        for k in range(1, min(n, total) + 1):
            new[k:, 1:] += w[:total + 1 - k, :-1] * math.comb(n, k)
        w = new / new.max()
    return w


def min_p_exact(sizes1: list[int], sizes2: list[int], ks1: list[int], ks2: list[int]) -> float:
    """The candidate: the exact conditional p of min(p over runs, p over units) within one execution. Under the null
    the units test assumes (each unit's outcome independent at the execution's rate, whatever its arm or run), given
    the outcomes' total K the K outcomes fall on any K of the units alike; the p is the chance of a min no larger
    than the one seen, summed over every split of K between the arms and count of runs with the outcome in each.
    O(K * runs^2 * units) time and O(K * runs^2) memory."""
    import numpy as np

    total, n1, n2, r1, r2 = sum(ks1) + sum(ks2), sum(sizes1), sum(sizes2), len(sizes1), len(sizes2)
    p_runs = np.ones((r1 + 1, r2 + 1))
    for m in range(r1 + r2 + 1):
        col = _fisher_all(r1, r2, m)
        for a in range(max(0, m - r2), min(m, r1) + 1):
            p_runs[a, m - a] = col[a]
    units_all = _fisher_all(n1, n2, total)
    p_units = np.array([units_all[k] if k <= n1 and total - k <= n2 else 1.0 for k in range(total + 1)])
    seen = min(p_runs[sum(k > 0 for k in ks1), sum(k > 0 for k in ks2)], p_units[sum(ks1)])
    joint = _arm_weights(sizes1, total)[:, :, None] * _arm_weights(sizes2, total)[::-1][:, None, :]
    smallest = np.minimum(p_runs[None, :, :], p_units[:, None, None])
    p = float(joint[smallest <= seen * (1 + 1e-7)].sum() / joint.sum())
    assert math.isfinite(p), "the weights left floating point"
    return p


def _interval(k: int, n: int) -> str:
    lo, hi = stats.wilson(k, n)
    return f"{k / n:6.2%} [{lo:.2%}, {hi:.2%}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--effect", type=float, default=1.0,
                        help="the rate with fix=on is the rate times this (1: no effect; above 1: power)")
    args = parser.parse_args()
    settings = [  # (executions, runs an arm, units a run, rates)
        (1, 3, 80, (0.05, 0.3)), (1, 3, 80, (0.005, 0.03)), (1, 8, 10, (0.05, 0.1)), (1, 20, 3, (0.2, 0.25)),
        (1, 30, 2, (0.3, 0.35)), (1, 40, 4, (0.15, 0.2)), (1, 100, 5, (0.13, 0.13)),
        (1, 2, 80, (0.05, 0.3))]  # the last: agent-repro's default design, two replicates an arm
    what = "null histories" if args.effect == 1 else f"histories with the rate x{args.effect:g} where fix=on"
    print(f"alpha {stats.ALPHA}; {args.histories} {what} a setting; flags (share, Wilson 95%); ms: CPU a history "
          "of the scan's finding / of the candidate")
    print(f"{'executions x runs an arm x units':34} {'rates':13} {'uncorrected (min p)':28} "
          f"{'corrected (2 x min p)':28} {'candidate (exact min-p)':28} "
          f"{'Tarone (the scan)':28} ms scan / candidate")
    rng = random.Random(args.seed)
    for executions, runs, units, rates in settings:
        before = after = exact = tarone = 0
        # Tarone's rule, the scan's: a test that cannot reach alpha on this design (runs an arm) is not counted.
        runs_decide = smallest_attainable(runs, runs) < stats.ALPHA
        scan = spent = 0.0
        for _ in range(args.histories):
            history, counts = _history(rng, executions, runs, units, rates, args.effect)
            start = time.process_time()
            f = _finding(history, counts)
            middle = time.process_time()
            p = _candidate(history, counts)
            scan, spent = scan + middle - start, spent + time.process_time() - middle
            assert f.p is not None and not f.across_executions  # one execution: its test is the pooled one
            smaller = min(f.effect["runs_p"], f.effect["units_p"])  # one variable of two values: one contrast
            before += smaller < stats.ALPHA  # judged on the smaller p as if it were the only test
            after += 2 * smaller < stats.ALPHA  # both tests counted, whatever the design
            exact += p < stats.ALPHA
            assert f.flagged == ((2 * smaller if runs_decide else f.effect["units_p"]) < stats.ALPHA)
            tarone += f.flagged
        print(f"{f'{executions} x {runs} x {units}':34} {f'{rates[0]:g}-{rates[1]:g}':13} "
              f"{_interval(before, args.histories):28} {_interval(after, args.histories):28} "
              f"{_interval(exact, args.histories):28} {_interval(tarone, args.histories):28} "
              f"{1000 * scan / args.histories:.0f} / "
              f"{1000 * spent / args.histories:.0f}")


if __name__ == "__main__":
    main()
