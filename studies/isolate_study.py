"""Study of `wb isolate` on pdsim: the minimal corruption-inducing set, its reliability over seeds, its cost.

Good = fp8, HiCache off, abort fix on, geometry fix on; bad = the seed's config (bf16, HiCache on,
abort fix off, geometry fix off); failure = corruption_rate >= 0.05 (the seed's 12-18% vs 0).
For each world it prints the set found, how many of N searches (different seeds) decided the
expected set, how many made a wrong decided claim, and the units used against a full 2^k factorial
that decides every config by the same sequential test (the probe's `judge`, alpha / 2^k each) on the
same pdsim (--factorials N runs N of them for real; the model mode samples them).

    python studies/isolate_study.py --oracle sim --searches 20 --world seed --factorials 1 [--minutes 45]
    python studies/isolate_study.py --oracle sim --searches 4 --world wedge
    python studies/isolate_study.py --oracle model [--searches 20] [--world seed]
    python studies/isolate_study.py --calibrate [--runs 2] [--jobs 8]   # re-measure the model's rates on pdsim

--oracle sim runs every probe for real on pdsim through the runner (each search its own store and pdsim;
--jobs of them at once; --minutes stops starting searches after that long and says how many ran;
--keep DIR keeps the stores, which `wb report --db DIR/isolate-seed-1/search.duckdb` renders);
--oracle model samples each config's units from a binomial at pdsim's per-config rate, measured once
by real runs (--calibrate, stored in studies/isolate_rates.json with the counts behind each rate;
seed world only). The model has no lost units, so it does not show the wedge's cost: the sim does.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from itertools import combinations
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.isolate.model import BinomialOracle  # noqa: E402
from workbench.isolate.search import ProbeRequest, factorial, isolate  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RATES = Path(__file__).resolve().parent / "isolate_rates.json"
GOOD = {"index_k_dtype": "fp8", "hicache": "off", "nixl_abort_fix": "on", "geometry_fix": "on"}
BAD = {"index_k_dtype": "bf16", "hicache": "on", "nixl_abort_fix": "off", "geometry_fix": "off"}
CHANGES = list(GOOD)
REGION = ">= 0.05"
# The wedge world's truth (DESIGN: the abort race): bf16's failed rooms (the pool sized for fp8) reused
# while prefill still writes them, which the abort fix prevents; the geometry is right and HiCache is
# not on the path (bad minus HiCache still leaks, 51/960 measured).
EXPECTED = {"seed": {"index_k_dtype", "hicache", "geometry_fix"}, "wedge": {"index_k_dtype", "nixl_abort_fix"}}


def _bench(tmp: Path, world: str) -> tuple[object, Path]:
    """A private workbench copy and sim folder, so the study never touches the shipped store or pdsim."""
    import os

    from workbench.registry import load_registry
    from workbench.sim import control
    from workbench.sim.config import render_serve_file

    root = tmp / f"bench-{world}"
    if not root.exists():
        shutil.copytree(REPO / "experiments", root / "experiments")
        shutil.copy(REPO / "hypotheses.yaml", root / "hypotheses.yaml")
    sim = tmp / f"sim-{world}"
    sim.mkdir(exist_ok=True)
    (sim / "serve.sh").write_text(render_serve_file(control.free_ports()))
    os.environ["WB_SIM_DIR"] = str(sim)
    return load_registry(root), sim


def _spec(reg: object, world: str, seed: int, budget: float, region: str = REGION) -> object:
    from workbench.isolate.app import prepare_spec

    good = [f"{k}={v}" for k, v in GOOD.items()] + [f"causal_model={world}"]
    bad = [f"{k}={v}" for k, v in BAD.items()] + [f"causal_model={world}"]
    return prepare_spec(reg, experiment="agent-repro", good=good, bad=bad, metric="corruption_rate", region=region,
                        budget=budget, seed=seed)


class _InProcess:
    """One job: run in this process, so Ctrl-C reaches the runner (which restores pdsim) directly."""

    def __enter__(self) -> "_InProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn, items):  # noqa: ANN001, ANN201
        return (fn(x) for x in items)


def _measure(args: tuple) -> tuple[str, str, float, float]:
    """One config's rate from `runs` real runs, in its own workbench copy, pdsim and store."""
    world, i, cell, runs, tmp = args
    from workbench.isolate.adapter import RunnerOracle
    from workbench.settings import Settings
    from workbench.store import open_store

    sub = Path(tmp) / f"cal-{world}-{i}"
    sub.mkdir(parents=True, exist_ok=True)
    reg, _ = _bench(sub, world)
    settings = Settings.from_env(db=str(sub / "cal.duckdb"), root=reg.root)
    with open_store(settings.db) as store:
        oracle = RunnerOracle(_spec(reg, world, 1, math.inf), reg, store, settings)
        # alpha so small that no probe decides: it runs exactly its units, a pure measurement
        res = oracle.probe(ProbeRequest(i, tuple(cell), "calibrate", "rate", None, 1e-300, runs * 80.0))
    return world, ",".join(cell), res.k, res.n


def calibrate(runs: int, worlds: list[str], tmp: Path, jobs: int) -> dict:
    """Measure every config's corruption rate with `runs` real pdsim runs each."""
    from concurrent.futures import ProcessPoolExecutor

    out = json.loads(RATES.read_text()) if RATES.is_file() else {}
    tasks = [(w, i, cell, runs, str(tmp)) for w in worlds
             for i, cell in enumerate(c for r in range(5) for c in combinations(CHANGES, r))]
    cells: dict[str, dict] = {w: {} for w in worlds}
    with ProcessPoolExecutor(jobs) if jobs > 1 else _InProcess() as pool:
        for world, key, k, n in pool.map(_measure, tasks):
            cells[world][key] = {"k": k, "n": n}
            print(f"  {world} good+{{{key}}}: {k:g}/{n:g}", flush=True)
    for w in worlds:
        out[w] = {"runs": runs, "measured": time.strftime("%Y-%m-%d"), "cells": cells[w]}
    RATES.write_text(json.dumps(out, indent=1) + "\n")
    return out


def model_rate(world: str):
    rates = json.loads(RATES.read_text())
    if world not in rates:
        raise SystemExit(f"no measured rates for the {world} world in {RATES.name}: run --calibrate --world {world}, "
                         "or --oracle sim")
    table = rates[world]["cells"]

    def rate(applied: frozenset) -> float:
        c = table[",".join(x for x in CHANGES if x in applied)]
        return c["k"] / c["n"] if c["n"] else 0.0
    return rate


def _sim_search(args: tuple) -> object:
    """One real search (or, kind "factorial", the full factorial), in its own workbench copy, pdsim and store."""
    from workbench.isolate.adapter import RunnerOracle
    from workbench.isolate.app import run_isolate
    from workbench.settings import Settings
    from workbench.store import open_store

    kind, world, seed, budget, tmp, region = args
    sub = Path(tmp) / f"{kind}-{world}-{seed}"
    sub.mkdir(parents=True, exist_ok=True)
    reg, _ = _bench(sub, world)
    settings = Settings.from_env(db=str(sub / "search.duckdb"), root=reg.root)
    t0 = time.monotonic()
    with open_store(settings.db) as store:
        spec = _spec(reg, world, seed, budget, region)
        if kind == "factorial":
            r = factorial(CHANGES, RunnerOracle(spec, reg, store, settings), alpha=spec.alpha)
        else:
            r = run_isolate(spec, reg, store, settings=settings, show_progress=False).result
    cells = " ".join(f"{''.join(c[0] for c in p.request.applied) or '-'}:{p.result.outcome[0]}{p.result.units:g}"
                     for p in r.probes)
    print(f"  {world} {kind} {seed}: {r.status} {r.minimal} {r.units:g} units, {len(r.probes)} probes "
          f"({time.monotonic() - t0:.0f} s) [{cells}]", flush=True)
    return r


def run_searches(oracle_kind: str, world: str, n: int, budget: float, tmp: Path, jobs: int,
                 factorials: int = 0, minutes: float = 0, region: str = REGION, first: int = 1) -> tuple[list, list]:
    bounds = (0.05, math.inf)
    if oracle_kind == "sim":
        from concurrent.futures import ProcessPoolExecutor

        tasks = [("isolate", world, s, budget, str(tmp), region) for s in range(first, first + n)]
        facts = [("factorial", world, s, budget, str(tmp), region) for s in range(1, factorials + 1)]
        if jobs > 1:
            with ProcessPoolExecutor(jobs) as pool:
                done = list(pool.map(_sim_search, tasks + facts))
            return [(r, None) for r in done[:n]], done[n:]
        # One at a time, so --minutes can stop starting searches (the factorials still run after them).
        t0, done = time.monotonic(), []
        for task in tasks:
            if minutes and time.monotonic() - t0 > 60 * minutes:
                print(f"  --minutes {minutes:g} reached: {len(done)} of {n} searches ran", flush=True)
                break
            done.append(_sim_search(task))
        return [(r, None) for r in done], [_sim_search(f) for f in facts]
    results, facts = [], []
    for seed in range(1, n + 1):
        r = isolate(CHANGES, BinomialOracle(model_rate(world), bounds, seed=seed), alpha=0.05, budget=budget)
        f = factorial(CHANGES, BinomialOracle(model_rate(world), bounds, seed=10_000 + seed), alpha=0.05)
        results.append((r, f.units))
        facts.append(f)
    return results, facts


def summarize(folder: Path, world: str) -> tuple[list, list]:
    """The searches and factorials kept under `folder` (--keep) by earlier runs, read back from their stores,
    so runs made by several processes (or stopped part-way) are reported by the same code."""
    from types import SimpleNamespace

    from workbench.isolate.records import load_searches
    from workbench.isolate.search import factorial as read_cells
    from workbench.store import open_store

    def seed_of(p: Path) -> int:
        return int(p.parent.name.rsplit("-", 1)[1])

    results, facts = [], []
    for path in sorted(folder.glob(f"**/isolate-{world}-*/search.duckdb"), key=seed_of):
        with open_store(str(path), read_only=True) as store:
            done = [x for x in load_searches(store) if x.status != "interrupted"]
        if done:
            r = done[-1].record["result"]
            results.append((SimpleNamespace(status=r["status"], minimal=r["minimal"], units=r["units"],
                                            probes=r["probes"], explanation=r["explanation"]), None))
    for path in sorted(folder.glob(f"**/factorial-{world}-*/search.duckdb"), key=seed_of):
        with open_store(str(path), read_only=True) as store:
            cells = {frozenset(v.details["request"]["applied"]): (v.details["outcome"], v.details["n"])
                     for v in store.verdicts(prefix="iso-") if v.details.get("kind") == "isolate-probe"}
        if len(cells) == 2 ** len(CHANGES):  # a whole factorial: replay its cells through the same reading
            class Replay:
                def probe(self, req: ProbeRequest):  # noqa: ANN202
                    from workbench.isolate.search import ProbeResult

                    outcome, n = cells[frozenset(req.applied)]
                    return ProbeResult(outcome, 0, n, n, 1)
            facts.append(read_cells(CHANGES, Replay(), alpha=0.05))
    return results, facts


def _with_expected(found: tuple[list, list], world: str) -> tuple[list, set, list]:
    return found[0], EXPECTED[world], found[1]


def report(world: str, oracle_kind: str, results: list, expected: set | None, facts: list) -> None:
    if not results:
        print(f"[{world} world, oracle {oracle_kind}] no searches; factorial units {[f.units for f in facts]}, "
              f"answers {[(f.status, f.minimal) for f in facts]}")
        return
    right = sum(1 for r, _ in results if r.status == "decided" and expected is not None and set(r.minimal) == expected)
    wrong = sum(1 for r, _ in results if r.status == "decided" and (expected is None or set(r.minimal) != expected))
    found = {}
    for r, _ in results:
        key = f"{r.status}: {{{', '.join(r.minimal)}}}" if r.minimal is not None else f"{r.status}: -"
        found[key] = found.get(key, 0) + 1
    units = sum(r.units for r, _ in results) / len(results)
    fact = [f.units for f in facts]
    print(f"[{world} world, oracle {oracle_kind}] {len(results)} searches")
    print(f"  found: {found}")
    print(f"  expected {{{', '.join(sorted(expected)) if expected else '?'}}}: exact and decided in {right}/"
          f"{len(results)}; wrong decided claims: {wrong}")
    probes = sum(len(r.probes) for r, _ in results) / len(results)
    line = f"  units per search: {units:.0f} (probes {probes:.1f})"
    if fact:
        line += (f"; full 2^4 factorial (same test per cell at alpha/16, {len(fact)} run): "
                 f"{sum(fact) / len(fact):.0f}; ratio {units / (sum(fact) / len(fact)):.0%}")
    print(line)
    if fact:
        answers = {}
        for f in facts:
            key = f"{f.status}: {{{', '.join(f.minimal)}}}" if f.minimal is not None else f"{f.status}: -"
            answers[key] = answers.get(key, 0) + 1
        print(f"  factorial answers: {answers}; units {sorted(fact)}")
    example = results[0][0]
    print(f"  e.g. seed 1: {example.explanation}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--oracle", choices=["model", "sim"], default="model")
    ap.add_argument("--world", choices=["seed", "wedge", "both"], default="seed")
    ap.add_argument("--searches", type=int, default=20)
    ap.add_argument("--budget", type=float, default=4000)
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--runs", type=int, default=2, help="--calibrate: runs per config")
    ap.add_argument("--jobs", type=int, default=1, help="real searches / calibrations run in parallel")
    ap.add_argument("--factorials", type=int, default=0,
                    help="--oracle sim: also run this many real full factorials (seeds 1..N) to count their units")
    ap.add_argument("--minutes", type=float, default=0,
                    help="--oracle sim, --jobs 1: start no new search after this many minutes (0: no limit)")
    ap.add_argument("--region", default=REGION, help="failure region of corruption_rate (default %(default)s)")
    ap.add_argument("--first-seed", type=int, default=1, help="--oracle sim: seeds of the searches start here")
    ap.add_argument("--summarize", default=None, metavar="DIR", nargs="+",
                    help="report the searches and factorials kept under DIR... (by --keep) instead of running any")
    ap.add_argument("--keep", default=None, help="folder for the real runs' stores (default: temporary, removed)")
    a = ap.parse_args()
    worlds = ["seed", "wedge"] if a.world == "both" else [a.world]
    if a.summarize:
        for world in worlds:
            found = [summarize(Path(d), world) for d in a.summarize]
            kept = ([r for f in found for r in f[0]], [x for f in found for x in f[1]])
            report(world, "sim (kept stores)", *_with_expected(kept, world))
        return
    tmp = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="wb-isolate-study-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        if a.calibrate:
            calibrate(a.runs, worlds, tmp, a.jobs)
            return
        for world in worlds:
            expected = EXPECTED[world]
            t0 = time.monotonic()
            res, facts = run_searches(a.oracle, world, a.searches, a.budget, tmp, a.jobs, a.factorials, a.minutes,
                                       a.region, a.first_seed)
            report(world, a.oracle, res, expected, facts)
            print(f"  ({time.monotonic() - t0:.0f} s)")
    finally:
        from workbench.sim import control

        # the sim folders _bench made (one level under each search's folder), not artifacts named sim-*
        for sim in tmp.glob("*/sim-*"):
            if (sim / "serve.sh").is_file():
                control.down(sim)
        if a.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
