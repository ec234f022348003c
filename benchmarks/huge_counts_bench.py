"""Benchmark: the analysis of runs of a million units and more, against baselines measured in the same run.

    python benchmarks/huge_counts_bench.py [--repeat 3] [--exact-upto 200000]

Prints, in CPU seconds (the median of --repeat calls, each after one untimed call):
- the hypergeometric law (what Fisher's test and the two-run dispersion test build) above 20 000 units, as wb
  builds it in floating point from the mode outward, against the exact big-integer law it used before (quadratic
  in the total: measured up to --exact-upto units, the larger totals took minutes to a quarter of an hour) and
  against scipy's hypergeom.pmf over the same counts, with the ratios;
- Fisher's exact test at the same totals, against scipy's fisher_exact;
- `wb import evidence` + `wb hypothesis analyze` (in process) of two runs of 10^6 units and of three of 10^9,
  against the same of two runs of 80 units (the seed's size): the ratio says what the size costs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[1]
TOTALS = (20_001, 100_000, 200_000, 2 * 10 ** 6, 2 * 10 ** 9)


def cpu_s(call, repeat: int) -> float:
    """Median CPU seconds of `call()`, after one untimed call (imports and caches out of the figure)."""
    call()
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        call()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def laws(repeat: int, exact_upto: int) -> None:
    import numpy as np
    from scipy import stats as ss

    from workbench.analysis import stats

    print(f"{'units':>13}  {'wb law':>9}  {'exact law':>10}  {'ratio':>8}  {'scipy pmf':>10}  {'ratio':>7}  "
          f"{'wb fisher':>10}  {'scipy fisher':>12}  {'ratio':>7}")
    for total in TOTALS:
        good, draws = total // 20, total // 2
        window = cpu_s(lambda: stats.hypergeom_window(total, good, draws), repeat)
        low, pmf = stats.hypergeom_window(total, good, draws)
        counts = np.arange(low, low + len(pmf))
        scipy_law = cpu_s(lambda: ss.hypergeom.pmf(counts, total, good, draws), repeat)
        exact = cpu_s(lambda: stats.hypergeom_counts(total, good, draws), repeat) if total <= exact_upto else None
        k1, k2 = good // 2 - total // 2000, good - good // 2 + total // 2000
        table = (k1, draws, k2, total - draws)
        fisher = cpu_s(lambda: stats.fisher(*table), repeat)
        scipy_fisher = cpu_s(lambda: ss.fisher_exact([[k1, draws - k1], [k2, total - draws - k2]]), repeat)
        exact_text = f"{exact:10.4f}  {window / exact:8.4f}" if exact is not None else f"{'-':>10}  {'-':>8}"
        print(f"{total:13,d}  {window:9.4f}  {exact_text}  {scipy_law:10.4f}  {window / scipy_law:7.2f}  "
              f"{fisher:10.4f}  {scipy_fisher:12.4f}  {fisher / scipy_fisher:7.2f}")


def analyze(repeat: int) -> None:
    from typer.testing import CliRunner

    from workbench.cli.main import app

    runner = CliRunner()
    header = "run_id,index_k_dtype,hicache,nixl_abort_fix,sessions,leak,waiting_for_input\n"
    cases = {"2 runs x 80 units (baseline)": [(80, 14), (80, 12)],
             "2 runs x 10^6 units": [(10 ** 6, 50_000), (10 ** 6, 50_300)],
             "3 runs x 10^9 units": [(10 ** 9, 50_000_000), (10 ** 9, 50_004_000), (10 ** 9, 49_999_000)]}
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "wbroot"
        root.mkdir()
        shutil.copy(REPO / "hypotheses.yaml", root)
        shutil.copytree(REPO / "experiments", root / "experiments")
        figures = {}
        for n, (name, runs) in enumerate(cases.items()):
            csv = Path(d) / f"runs{n}.csv"
            csv.write_text(header + "".join(f"t{i},bf16,on,on,{units},{k},0\n" for i, (units, k) in enumerate(runs)))
            fresh = iter(range(10 ** 6))

            def import_and_analyze() -> None:
                db = str(Path(d) / f"s{n}-{next(fresh)}.duckdb")
                for args in (["import", "evidence", str(csv)], ["hypothesis", "analyze", "wedge-confound"]):
                    result = runner.invoke(app, [*args, "--root", str(root), "--db", db])
                    assert result.exit_code == 0, result.output

            figures[name] = cpu_s(import_and_analyze, repeat)
    base = figures["2 runs x 80 units (baseline)"]
    for name, seconds in figures.items():
        print(f"wb import evidence + wb hypothesis analyze, {name}: {seconds:.3f} s CPU; ratio {seconds / base:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--exact-upto", type=int, default=200_000,
                    help="the largest total the exact big-integer law is timed at (2*10^6 takes minutes)")
    ns = ap.parse_args()
    print(f"cpus: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.2f}")
    print("CPU seconds, median of", ns.repeat)
    laws(ns.repeat, ns.exact_upto)
    analyze(ns.repeat)


if __name__ == "__main__":
    main()
