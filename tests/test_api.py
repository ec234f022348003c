"""workbench.api: the seed's evidence as DataFrames, the per-arm table built without SQL."""

from __future__ import annotations

from pathlib import Path


def test_per_arm_table_of_the_seed_evidence(tmp_path: Path, workbench_dir: Path, seed_csv: Path):
    from workbench import api
    from workbench.app import Workbench
    from workbench.settings import Settings

    db = str(tmp_path / "wb.duckdb")
    wb = Workbench.open(Settings(db=db, root=workbench_dir))
    wb.import_evidence(seed_csv)
    wb.analyze("wedge-confound")

    runs = api.runs(db=db, root=str(workbench_dir))
    assert len(runs) == 6 and runs["run_id"].is_unique
    assert {"var.nixl_abort_fix", "var.index_k_dtype", "metric.leak", "metric.sessions"} <= set(runs.columns)

    ev = api.runs(arms_of="wedge-confound", db=db, root=str(workbench_dir))
    per_arm = ev.groupby("arm").agg(runs=("run_id", "size"), sessions=("metric.sessions", "sum"),
                                    leak=("metric.leak", "sum"), aborts=("metric.waiting_for_input", "sum"))
    assert set(ev.loc[ev.arm == "control", "label"]) == {"pre-bf16-hicache", "pre-ab-bf16"}
    t = per_arm.loc["treatment"]
    assert (t.runs, t.sessions, t.leak, t.aborts) == (1, 80, 14, 0)
    assert (ev.loc[ev.arm == "treatment", "var.nixl_abort_fix"] == "on").all()

    v = api.verdicts(latest=True, db=db, root=str(workbench_dir))
    assert v.set_index("hypothesis").loc["wedge-confound", "verdict"] == "falsified"
    assert api.units(db=db, root=str(workbench_dir)).empty  # imported runs carry metrics, not units


def test_api_exports_what_it_documents():
    from workbench import api

    assert api.__all__ == ["runs", "units", "verdicts"]
    assert all(callable(getattr(api, n)) and getattr(api, n).__doc__ for n in api.__all__)
