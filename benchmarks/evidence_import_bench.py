"""Benchmark: `wb import evidence` of a large CSV (`Workbench.import_evidence`), against two baselines measured in
the same run on the same rows: the runs stored a row at a time (an ORM insert of the run, then its metrics), as
import_runs did first, and the floor, one DuckDB INSERT of every run and one of every metric, with nothing else.

    .venv/bin/python benchmarks/evidence_import_bench.py [--rows 2000] [--repeat 3]

Prints CPU seconds and rows/s of each (the median of --repeat imports, each into a fresh store that exists
already, so the store's creation is not counted), the ratios, and checks that the import and the row-at-a-time
baseline store the same rows (all but each run's random uuid). The import's time includes reading and checking
the CSV and opening the workbench; the baselines start from the parsed rows.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

COLUMNS = ("run_id,phase,index_k_dtype,hicache,nixl_abort_fix,sessions,rounds,ctx,max_tokens,timeout_s,leak,error,"
           "done,maxrounds,no_tool,timeouts,waiting_for_input,wall_s,reported_corruption,source_quote").split(",")


def write_csv(path: Path, n: int) -> None:
    """`n` rows shaped like the seed's evidence (shared/evidence/seed-runs.csv), every count filled in."""
    rng = random.Random(1)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for i in range(n):
            leak, error = rng.randint(0, 15), rng.randint(0, 10)
            w.writerow([f"bulk-{i}", "bulk", rng.choice(["fp8", "bf16"]), rng.choice(["on", "off"]),
                        rng.choice(["on", "off"]), 80, 4, 300, 2500, 200, leak, error, 80 - leak - error, 0, 0,
                        rng.randint(0, 5), rng.randint(0, 3), round(rng.uniform(50, 300), 1), "", f"row {i}"])


def fresh_store(d: Path, name: str) -> str:
    from workbench.store import upgrade

    db = str(d / f"{name}.duckdb")
    upgrade(db)
    return db


def by_wb(root: Path, csv_path: Path, db: str) -> None:
    from workbench.app import Workbench
    from workbench.settings import Settings

    Workbench(Settings(db=db, root=root)).import_evidence(csv_path)


def parsed(root: Path, csv_path: Path) -> list:
    from workbench.registry import load_registry
    from workbench.registry.evidence import parse_evidence
    from workbench.store.entities import ImportedRun

    return [ImportedRun(**row) for row in parse_evidence(csv_path, load_registry(root).experiments["agent-repro"])]


def row_at_a_time(rows: list, db: str) -> None:
    """The baseline: as import_runs stored them first, a run then its metrics, row by row, in one transaction."""
    from workbench.store import jsonx, open_store, records

    with open_store(db) as store, store.session() as s:
        for row in rows:
            run = records.create_run(s, experiment_id="agent-repro", variables=row.variables, source="import",
                                     label=row.label, status="historical", phase=row.phase,
                                     provenance=jsonx.dumps(row.provenance), fingerprint={"workload": row.workload})
            records.add_metrics(s, run_id=run.id, metrics=row.metrics, source="import")


def floor(rows: list, db: str) -> None:
    """The floor: the same rows in two INSERTs, no ids drawn from the sequence, nothing redacted or checked."""
    import duckdb
    import numpy as np

    from workbench.store import jsonx

    def columns(**cols: list) -> dict:
        return {k: np.array(v, dtype=object) for k, v in cols.items()}

    con = duckdb.connect(db)
    try:
        con.begin()
        runs = columns(id=list(range(1, len(rows) + 1)), label=[r.label for r in rows],
                       variables_json=[jsonx.dumps(r.variables) for r in rows],
                       fingerprint_json=[jsonx.dumps({"workload": r.workload}) for r in rows],
                       provenance=[jsonx.dumps(r.provenance) for r in rows], phase=[r.phase for r in rows])
        con.register("r", runs)
        con.execute("INSERT INTO runs (id, experiment_id, source, label, status, phase, variables_json, "
                    "fingerprint_json, provenance, uuid) SELECT id, 'agent-repro', 'import', label, 'historical', "
                    "phase, variables_json, fingerprint_json, provenance, uuid() FROM r")
        metrics = [(i + 1, k, float(v)) for i, r in enumerate(rows) for k, v in r.metrics.items()]
        con.register("m", columns(run_id=[m[0] for m in metrics], name=[m[1] for m in metrics],
                                  value=[m[2] for m in metrics]))
        con.execute("INSERT INTO metrics (run_id, name, value, source) SELECT run_id, name, value, 'import' FROM m")
        con.commit()
    finally:
        con.close()


def stored(db: str) -> tuple[list, list]:
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        runs = con.execute("SELECT * EXCLUDE (uuid) FROM runs ORDER BY id").fetchall()
        metrics = con.execute("SELECT * FROM metrics ORDER BY run_id, name").fetchall()
        return runs, metrics
    finally:
        con.close()


def cpu_s(fn, *args) -> float:
    t = time.process_time()
    fn(*args)
    return time.process_time() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"cpus: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.2f}, rows: {args.rows}")
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        root = d / "wb"
        shutil.copytree(REPO / "experiments", root / "experiments")
        shutil.copy(REPO / "hypotheses.yaml", root / "hypotheses.yaml")
        csv_path = d / "evidence.csv"
        write_csv(csv_path, args.rows)
        rows = parsed(root, csv_path)
        times: dict[str, list[float]] = {"wb import evidence": [], "row at a time (baseline)": [],
                                         "two INSERTs (floor)": []}
        for i in range(args.repeat):
            a, b, c = (fresh_store(d, f"{w}{i}") for w in "abc")
            times["wb import evidence"].append(cpu_s(by_wb, root, csv_path, a))
            times["row at a time (baseline)"].append(cpu_s(row_at_a_time, rows, b))
            times["two INSERTs (floor)"].append(cpu_s(floor, rows, c))
            assert stored(a) == stored(b), "the import and the row-at-a-time baseline stored different rows"
        med = {k: statistics.median(v) for k, v in times.items()}
        base = med["row at a time (baseline)"]
        print(f"{'way':<26} {'CPU s':>8} {'rows/s':>9} {'vs baseline':>12}")
        for k, s in med.items():
            print(f"{k:<26} {s:>8.3f} {args.rows / s:>9.0f} {s / base:>12.3f}")
        print("the import stores the same rows as the baseline (runs and metrics, all but each run's uuid): yes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
