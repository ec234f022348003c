"""Benchmark: a DuckDB store held open over a block of short sessions (`Store.held`) against the baseline
of what wb did before, measured in the same run: every session opening the file afresh.

    python benchmarks/store_held_bench.py [--repeat 5]

Prints CPU milliseconds per session connection, and per site build and per analysis of every hypothesis of
the shipped seed lineage (the report tests' synthetic store), both ways, with the ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from pathlib import Path

from report_bench import _synth  # the report tests' synthetic stores (this folder is on sys.path)


def _cpu_ms(fn, repeat: int) -> float:
    t = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - t) / repeat * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from sqlalchemy import text

    from workbench.analysis.stored import analyze_stored
    from workbench.errors import WbError
    from workbench.registry import load_registry
    from workbench.report import build_site
    from workbench.store import open_store
    from workbench.store.engine import Store

    base = Path(tempfile.mkdtemp(prefix="wb-held-bench-"))
    synth = _synth()
    registry = load_registry(synth.copy_workbench(base / "wb"))
    store = open_store(str(base / "wb.duckdb"))
    with store.session() as s:
        synth.seed_store(s, registry, base / "logs")

    def one_connection() -> None:
        with store.connect() as c:
            c.execute(text("SELECT count(*) FROM runs")).fetchall()

    def site() -> None:
        build_site(store, registry, base / "site")

    def analyses() -> None:
        for h in registry.hypotheses:
            try:
                analyze_stored(store, registry, h.id)
            except WbError:  # nothing to analyse: its reads were still made
                pass

    held = Store.held
    rows = []
    for name, fn, n in (("connection", one_connection, 30 * args.repeat), ("site build", site, args.repeat),
                        ("analyses", analyses, args.repeat)):
        fn()  # imports and first-use caches out of the timing
        Store.held = lambda self: contextlib.nullcontext()  # type: ignore[method-assign]
        before = _cpu_ms(fn, n)
        Store.held = held  # type: ignore[method-assign]
        with store.held() if name == "connection" else contextlib.nullcontext():
            after = _cpu_ms(fn, n)
        rows.append((name, before, after))
    for name, before, after in rows:
        print(f"{name:11s} each file opened afresh {before:8.1f} ms CPU   held open {after:8.1f} ms CPU   "
              f"ratio {after / before:.2f}")


if __name__ == "__main__":
    main()
