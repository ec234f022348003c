"""The distributions a verdict needs come from scipy.special and exact integers, not scipy.stats or statsmodels
(whose import costs 1.2-1.9 s of CPU in every process that analyses): the same values as those libraries on
random inputs, and a verdict decided in a process where scipy.stats and statsmodels cannot be imported."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from workbench.analysis import clustered, stats

REPO = Path(__file__).resolve().parents[2]


def test_wilson_newcombe_holm_and_quantiles_are_the_libraries_values_to_the_bit():
    # The libraries are imported in the tests, not at collection: every worker collects this file.
    from scipy import stats as ss
    from statsmodels.stats.multitest import multipletests
    from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

    rng = np.random.default_rng(11)
    for _ in range(400):
        alpha = float(rng.choice([0.05, 0.01, 0.1, 0.0125]))
        n = int(rng.integers(1, 3000))
        k = int(rng.integers(0, n + 1))
        for kk, nn in ((k, n), (k * 0.73, n * 0.73)):   # effective counts are fractional
            lo, hi = proportion_confint(kk, nn, alpha=alpha, method="wilson")
            assert stats._wilson_bounds(kk, nn, alpha) == (float(lo), float(hi))
        n1, n2 = int(rng.integers(1, 500)), int(rng.integers(1, 500))
        k1, k2 = int(rng.integers(0, n1 + 1)), int(rng.integers(0, n2 + 1))
        lo, hi = confint_proportions_2indep(k1, n1, k2, n2, method="newcomb", compare="diff", alpha=alpha)
        assert stats.newcombe(k1, n1, k2, n2, alpha) == (max(-1.0, float(lo)), min(1.0, float(hi)))
        df, q = int(rng.integers(1, 30)), float(rng.random() * 0.2)
        assert (stats.t_isf(q, df), stats.t_sf(30 * q, df)) == (float(ss.t.isf(q, df)), float(ss.t.sf(30 * q, df)))
        assert (stats.norm_isf(q), stats.norm_sf(5 * q), stats.norm_ppf(1 - q)) == \
            (float(ss.norm.isf(q)), float(ss.norm.sf(5 * q)), float(ss.norm.ppf(1 - q)))
        assert clustered.level_alpha(alpha, df) == float(2 * ss.norm.sf(ss.t.isf(alpha / 2, df)))
    for _ in range(12):  # fewer: statsmodels' multipletests runs gc.collect() on every call
        ps = [float(x) for x in rng.random(int(rng.integers(1, 9))) ** 3]
        ps += ps[:1]                                       # a tie
        assert stats.holm(ps) == [float(x) for x in multipletests(ps, method="holm")[1]]


def test_exact_binomial_hypergeometric_and_fisher_agree_with_scipy():
    from scipy import stats as ss

    rng = np.random.default_rng(12)
    for _ in range(300):
        m = int(rng.integers(1, 300))
        ref = ss.binom.cdf(np.arange(m // 2), m, 0.5)
        assert stats.half_binomial_cdfs(m, m // 2) == pytest.approx(ref, rel=1e-12, abs=0)
        total = int(rng.integers(1, 2000))
        good, draws = int(rng.integers(0, total + 1)), int(rng.integers(0, total + 1))
        low, pmf = stats.hypergeom_pmf(total, good, draws)
        assert low == max(0, draws - (total - good)) and len(pmf) == min(good, draws) - low + 1
        assert sum(pmf) == pytest.approx(1.0, rel=1e-12)
        ref = ss.hypergeom.pmf(np.arange(low, low + len(pmf)), total, good, draws)
        assert pmf == pytest.approx(ref, rel=1e-12, abs=1e-300)
        n1, n2 = int(rng.integers(1, 400)), int(rng.integers(1, 400))
        k1, k2 = int(rng.integers(0, n1 + 1)), int(rng.integers(0, n2 + 1))
        assert stats.fisher(k1, n1, k2, n2) == \
            pytest.approx(ss.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue, rel=1e-12)


def test_fisher_is_exact_on_the_seed_table_and_counts_a_tie_as_a_tie():
    # 14/80 against 0/80: the probability of the tables as or less likely, as a ratio of integers.
    assert stats.fisher(14, 80, 0, 80) == pytest.approx(6.554e-5, rel=1e-3)
    assert stats.fisher(14, 80, 0, 80) == stats.fisher(0, 80, 14, 80)
    assert stats.fisher(5, 10, 5, 10) == 1.0 and stats.fisher(0, 10, 0, 10) == 1.0
    assert stats.fisher(3, 10, 3, 10) == 1.0


HIDE_STATS = '''
import sys


class _Hidden:
    def find_spec(self, name, path=None, target=None):
        if name in ("scipy.stats", "statsmodels") or name.startswith(("scipy.stats.", "statsmodels.")):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Hidden())
'''


def test_the_seed_verdict_is_decided_without_scipy_stats_or_statsmodels(tmp_path, workbench_dir, seed_csv):
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HIDE_STATS)
    env = {k: v for k, v in os.environ.items() if k not in ("WB_DB", "WB_ROOT")}
    env["PYTHONPATH"] = os.pathsep.join([str(hook), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    db = str(tmp_path / "seed.duckdb")

    def wb(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "workbench.cli.main", *args, "--db", db], cwd=workbench_dir,
                              env=env, capture_output=True, text=True, timeout=300)

    hidden = subprocess.run([sys.executable, "-c", "import scipy.stats"], env=env, capture_output=True, text=True,
                            timeout=60)
    assert hidden.returncode != 0 and "No module named 'scipy.stats'" in hidden.stderr
    imported = wb("import", "evidence", str(seed_csv))
    assert imported.returncode == 0, imported.stderr
    out = wb("hypothesis", "analyze", "wedge-confound", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["verdict"] == "falsified"
    assert "14/80" in result["reasoning"] and "P(X >= 14 | n = 80, p = 0.02) = 7.2e-10" in result["reasoning"]


# The huge-count paths take 1-3 s of CPU here. The quadratic laws they replaced took a quarter of an hour for two
# runs of 10^6 units (and held tens of GB of big integers): were they back, the test would wait for CI's own limit
# and say nothing of why. These bounds assert no speed: they turn a hang into a failure that says so. The CPU
# bound does not move with the machine's load (other processes' CPU is not the test's); the wall bound, far above
# it, catches a block that waits rather than computes.
HANG_CPU_S, HANG_WALL_S = 30, 120


class _Hung(BaseException):
    """Raised by a bound's timer: a BaseException, so no `except Exception` on the way swallows it."""


@contextmanager
def _fails_if_hung(what: str, cpu_s: float = HANG_CPU_S, wall_s: float = HANG_WALL_S):
    """Fail, saying `what` hung, when the block is still running after `cpu_s` of this process's CPU or `wall_s`
    of wall time. A signal, not a thread or a process: the block's Python code (the big-integer loops of a
    quadratic law) is interrupted between two of its steps, the interrupt raised again every second where
    something caught it, and the test stays in process (a wb process would cost its import, ~1 s of CPU)."""
    passed: list[str] = []

    def interrupt(signum, frame):
        passed.append(f"{cpu_s:g} s of CPU" if signum == signal.SIGPROF else f"{wall_s:g} s of wall time")
        raise _Hung(f"{what} hung")

    def failure() -> BaseException:
        return pytest.fail.Exception(f"{what} hung: still running after {passed[0]}, where it takes 1-3 s of CPU "
                                     "(the quadratic laws took a quarter of an hour at 10^6 units)", pytrace=False)

    timers = ((signal.SIGPROF, signal.ITIMER_PROF, cpu_s), (signal.SIGALRM, signal.ITIMER_REAL, wall_s))
    previous = {signum: signal.signal(signum, interrupt) for signum, _, _ in timers}
    for _, timer, seconds in timers:
        signal.setitimer(timer, seconds, 1.0)
    try:
        yield
    except BaseException:
        if passed:   # whatever was raised on the way out (CliRunner keeps an exception and exits 1)
            raise failure() from None
        raise
    finally:
        for signum, timer, _ in timers:
            signal.setitimer(timer, 0)
            signal.signal(signum, previous[signum])
    if passed:
        raise failure()


def test_huge_counts_take_seconds_and_agree_with_scipy(tmp_path, workbench_dir):
    # Units by the million (tokens, bytes): the laws were built from exact big integers, quadratic in the
    # total, so two runs of 10^6 sessions took a quarter of an hour in the two-run dispersion test alone.
    from scipy import stats as ss

    csv = tmp_path / "huge.csv"
    csv.write_text("run_id,index_k_dtype,hicache,nixl_abort_fix,sessions,leak,waiting_for_input\n"
                   "t1,bf16,on,on,1000000,50000,0\nt2,bf16,on,on,1000000,50300,0\n")
    db = str(tmp_path / "huge.duckdb")
    # In-process, as test_runs_of_a_billion_units_or_more_are_analysed: what is timed here is the analysis, not a
    # process (test_the_seed_verdict_is_decided_without_scipy_stats_or_statsmodels runs wb as one).
    from workbench.cli.main import app
    from typer.testing import CliRunner

    runner = CliRunner()
    tables = ((50_000, 10 ** 6, 50_300, 10 ** 6), (50_000, 10 ** 6, 51_000, 10 ** 6),
              (5 * 10 ** 7, 10 ** 9, 5 * 10 ** 7 + 9_000, 10 ** 9), (3, 10 ** 6, 9, 10 ** 6))
    with _fails_if_hung("wb import + analyze of two runs of 10^6 units, and the laws at 10^6 and 10^9 units"):
        imported = runner.invoke(app, ["import", "evidence", str(csv), "--root", str(workbench_dir), "--db", db])
        out = runner.invoke(app, ["hypothesis", "analyze", "wedge-confound", "--json", "--root", str(workbench_dir),
                                  "--db", db])
        d = clustered.dispersion([50_000, 50_300], [10 ** 6, 10 ** 6])
        fishers = [stats.fisher(*table) for table in tables]
        low, got = stats.hypergeom_pmf(2 * 10 ** 9, 10 ** 8, 10 ** 9)
    assert imported.exit_code == 0, imported.output
    assert out.exit_code == 0, out.output
    # treatment runs alone: the prediction is judged (falsified); the verdict waits for a control run
    doc = json.loads(out.stdout)
    assert [j["outcome"] for j in doc["predictions"]] == ["falsified"] and doc["verdict"] == "inconclusive", doc
    # Each law against scipy's, at 10^6 and 10^9 units.
    a, scale = np.arange(48_000, 52_301), 10 ** 6 * 0.05015 * 0.94985   # 100 300 events in 2 * 10^6 units
    x2, observed = 2 * (a - 50_150) ** 2 / scale, 2 * 150 ** 2 / scale
    pmf = ss.hypergeom.pmf(a, 2 * 10 ** 6, 100_300, 10 ** 6)
    assert d.p_over == pytest.approx(pmf[x2 >= observed - 1e-9].sum(), rel=1e-6)
    for (k1, n1, k2, n2), p in zip(tables, fishers):
        assert p == pytest.approx(ss.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue, rel=1e-6)
    ref = ss.hypergeom.pmf(np.arange(low, low + len(got)), 2 * 10 ** 9, 10 ** 8, 10 ** 9)
    assert sum(got) == pytest.approx(1.0)
    # numpy's comparison: pytest.approx walks the 362 000 values one by one in Python (3 s of CPU)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-6, atol=1e-300)


def test_runs_of_a_billion_units_or_more_are_analysed(tmp_path, workbench_dir):
    # numpy draws hypergeometric counts from fewer than 10^9 items only: three runs of 10^9 units ended
    # wb hypothesis analyze in a ValueError traceback ("both ngood and nbad must be less than 1000000000").
    from scipy import stats as ss

    from workbench.cli.main import app
    from typer.testing import CliRunner

    csv = tmp_path / "huge.csv"
    csv.write_text("run_id,index_k_dtype,hicache,nixl_abort_fix,sessions,leak,waiting_for_input\n" + "".join(
        f"t{i},bf16,on,on,1000000000,{k},0\n" for i, k in enumerate((50_000_000, 50_004_000, 49_999_000))))
    db = str(tmp_path / "huge.duckdb")
    runner = CliRunner()
    counts = ((50_000_000, 50_004_000, 49_999_000), (50_000_000, 50_001_000, 49_999_500), (9, 2, 4))
    with _fails_if_hung("wb import + analyze of three runs of 10^9 units, and their dispersion"):
        imported = runner.invoke(app, ["import", "evidence", str(csv), "--root", str(workbench_dir), "--db", db])
        out = runner.invoke(app, ["hypothesis", "analyze", "wedge-confound", "--json", "--root", str(workbench_dir),
                                  "--db", db])
        dispersions = [clustered.dispersion(ks, [10 ** 9] * 3) for ks in counts]
    assert imported.exit_code == 0, imported.output
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)  # treatment runs alone: the prediction is judged, the verdict waits for a control
    assert [j["outcome"] for j in doc["predictions"]] == ["falsified"] and doc["verdict"] == "inconclusive", doc
    # Counts this large are chi-square's (R - 1 df) to within the simulation's error.
    for d in dispersions:
        assert d.p_over == pytest.approx(float(ss.chi2.sf(2 * d.phi, 2)), abs=0.04)
