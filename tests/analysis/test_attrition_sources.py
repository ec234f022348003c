"""The attrition check accounts for every lost unit it counts, and for the runs whose units it counts."""

from __future__ import annotations

from analysis_helpers import CONTROL, TREATMENT, add_execution, add_run


def test_lost_units_without_a_recorded_error_and_runs_without_units_are_said(cli, workbench_dir, seed_csv, tmp_path):
    """After the README tour `hypothesis analyze wedge-confound` read "treatment: 138/320 units (43.1%) did not complete
    (their error field: 98 "http 503 ...")": the other 40 came from the imported post-fix run, which records no error
    per unit, and were not accounted for. And "data: control: 5 runs" stood beside "control: ... /240 units" with
    nothing to say that two imported control runs record no unit count."""
    from workbench.store import open_store

    db = tmp_path / "wb.duckdb"
    store = open_store(str(db))
    try:
        ex = add_execution(store)
        for r in (1, 2, 3):
            add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                    outcomes={"leak": 10, "error": 16, "done": 54}, extra={"waiting_for_input": 30},
                    reasons={"error": ["timeout after 200 s"]})
            add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                    outcomes={"leak": 12, "error": 33 if r < 3 else 32, "done": 35 if r < 3 else 36},
                    extra={"waiting_for_input": 0}, reasons={"error": ["http 503: KV page has no memory behind it"]})
    finally:
        store.dispose()
    common = ("--db", str(db), "--root", str(workbench_dir))
    assert cli("import", "evidence", str(seed_csv), *common)[0] == 0
    code, out, err = cli("hypothesis", "analyze", "wedge-confound", "--no-record", *common)
    assert code == 0, (out, err)
    attrition = next(line for line in out.splitlines() if "] attrition:" in line)
    assert ('treatment: 138/320 units (43.1%) did not complete (their error field: 98 "http 503: KV page has no '
            'memory behind it"; 40 in imported run post-bf16-hicache-postfix, which records no error per unit)'
            in attrition), attrition
    assert "control: 48/240 units (20.0%) did not complete (their error field: 48 \"timeout after 200 s\"; over 3 " \
           "of the arm's 5 runs: 2 imported runs record no unit count)" in attrition, attrition
