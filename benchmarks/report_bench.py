"""Report site build time and page sizes at 50 hypotheses and 1,000 runs (goal: <= 10 s, pages <= 200 KB).

Baseline, measured in the same run: the site of the shipped seed lineage and its synthetic seed store.
Usage: python benchmarks/report_bench.py [--hypotheses 50] [--runs-per-hypothesis 20] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _synth():
    spec = importlib.util.spec_from_file_location("report_synth", REPO / "tests" / "report" / "synth.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _populate(base: Path, n_hyp: int, runs_per_hyp: int) -> tuple[object, Path]:
    from workbench.registry import load_registry
    from workbench.store import open_store

    synth = _synth()
    root = synth.write_many_hypotheses(base / "wb", n_hyp) if n_hyp else synth.copy_workbench(base / "wb")
    registry = load_registry(root)
    db = base / "wb.duckdb"
    store = open_store(str(db))
    with store.session() as s:
        if n_hyp:
            for i, h in enumerate(registry.hypotheses):
                synth.add_ab_execution(s, registry, h.id, art_dir=base / "logs", replicates=runs_per_hyp // 2,
                                       leak_rate={"control": 0.15, "treatment": 0.02 * (i % 5)},
                                       aborts={"control": 10}, seed=i,
                                       verdict=("falsified", "supported", "inconclusive", None)[i % 4],
                                       reasoning=f"synthetic verdict {i}",
                                       log_lines=[f"[decode] line {j} <script>alert({j})</script>" for j in range(40)])
        else:
            synth.seed_store(s, registry, base / "logs")
    store.dispose()
    return registry, db


def _build(registry: object, db: Path, out: Path) -> tuple[float, dict]:
    from workbench.report import build_site
    from workbench.store import open_store

    with open_store(str(db), read_only=True) as store:
        t = time.perf_counter()
        result = build_site(store, registry, out)
        return time.perf_counter() - t, result


def _cli_build(registry: object, db: Path, out: Path) -> tuple[float, float]:
    """Wall time of `wb report` as a user runs it: a fresh interpreter, imports included."""
    import os
    import subprocess

    env = {**os.environ, "WB_ROOT": str(registry.root), "WB_DB": str(db)}  # type: ignore[attr-defined]
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "workbench.cli.main", "report", "--out", str(out)], env=env, check=True,
                   capture_output=True, timeout=300)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _sizes(out: Path) -> tuple[int, int, str, int]:
    pages = [p for p in out.rglob("*.html") if "artifacts" not in p.relative_to(out).parts]
    biggest = max(pages, key=lambda p: p.stat().st_size)
    return len(pages), sum(p.stat().st_size for p in pages), str(biggest.relative_to(out)), biggest.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hypotheses", type=int, default=50)
    ap.add_argument("--runs-per-hypothesis", type=int, default=20)
    ap.add_argument("--keep", type=Path, default=None, help="work in this folder (emptied first) and keep it")
    args = ap.parse_args()
    base = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="wb-report-bench-"))
    if args.keep:
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
    try:
        t = time.perf_counter()
        seed_reg, seed_db = _populate(base / "seed", 0, 0)
        big_reg, big_db = _populate(base / "big", args.hypotheses, args.runs_per_hypothesis)
        print(f"setup (not timed): {time.perf_counter() - t:.1f} s")
        out = base
        b_cold, b_res = _build(seed_reg, seed_db, out / "seed-site")
        b_warm, _ = _build(seed_reg, seed_db, out / "seed-site")
        cold, res = _build(big_reg, big_db, out / "big-site")
        warm, _ = _build(big_reg, big_db, out / "big-site")
        cli, cli_cpu = _cli_build(big_reg, big_db, out / "big-site-cli")
        n_pages, total, biggest, biggest_size = _sizes(out / "big-site")
        bundle = (out / "big-site" / "assets" / "vega-bundle.js").stat().st_size
        runs = len(res["runs"])
        b_runs = len(b_res["runs"])
        print(f"baseline  seed lineage ({len(b_res['hypotheses'])} hypotheses, {b_runs} runs), in process: "
              f"first {b_cold:.2f} s (imports + chart runtime), again {b_warm:.2f} s")
        print(f"site      {len(res['hypotheses'])} hypotheses, {runs} runs, {n_pages} pages")
        print(f"build     `wb report` in a fresh process, new folder: {cli:.2f} s wall, {cli_cpu:.2f} s CPU "
              f"[goal <= 10 s]; load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"          in process: new folder {cold:.2f} s, rebuild {warm:.2f} s")
        print(f"ratio     rebuild / baseline rebuild = {warm / b_warm:.1f}x for {runs / b_runs:.0f}x the runs")
        print(f"pages     largest {biggest} = {biggest_size / 1024:.1f} KB [goal <= 200 KB], "
              f"mean {total / n_pages / 1024:.1f} KB, all pages {total / 1024 / 1024:.1f} MB")
        print(f"runtime   assets/vega-bundle.js = {bundle / 1024:.0f} KB, written once per site")
        ok = cli <= 10 and biggest_size <= 200 * 1024
        print("RESULT", "ok" if ok else "over the goal")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
