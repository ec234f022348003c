"""The confound scan over runner-shaped runs: a guard that always travels with the outcome is flagged."""

from __future__ import annotations

from workbench.analysis import scan_confounds

from analysis_helpers import CONTROL, TREATMENT, add_execution, add_run


def test_wedge_world_pattern_is_flagged_with_a_data_driven_proposal(store, registry):
    # Every corrupt run also wedged (aborts > 0); every run without aborts is clean.
    ex = add_execution(store)
    for r in range(1, 6):
        add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r,
                outcomes={"leak": 9, "error": 40, "done": 31}, extra={"waiting_for_input": 50, "timeouts": 40})
        add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, replicate=r,
                outcomes={"done": 80}, extra={"waiting_for_input": 0, "timeouts": 0})
    findings = {(f.kind, f.factor): f for f in scan_confounds(store, registry) if f.outcome == "corruption_rate"}
    aborts = findings[("guard", "aborts (= waiting_for_input)")]
    assert aborts.flagged and aborts.p is not None and aborts.p < 0.01  # 5 vs 5 runs: 2/252
    assert aborts.effect["risk_difference"] == 1.0
    assert aborts.proposal["toggle"] == "nixl_abort_fix" and aborts.proposal["from"] == "off"
    assert aborts.proposal["hold"]["index_k_dtype"] == "bf16"
    # five runs counted, four named: the message says so (it named four after "5 of 5", nothing more)
    assert "(5 of 5, " in aborts.message and aborts.message.count("leak=9") == 4 and "; and 1 more)" in aborts.message
    fix = findings[("variable", "nixl_abort_fix")]
    assert fix.flagged and fix.effect["units_p"] < 1e-6
    assert fix.table["values"]["off"]["units_k"] == 45 and fix.table["values"]["off"]["units_n"] == 400


def test_a_rate_is_never_scanned_against_its_own_counts(store, registry):
    """error_rate (error / sessions) was scanned against the guard `error`, its own numerator, and flagged: "error
    and error are confounded in these runs". A guard that is a rate's numerator or denominator is no factor of it."""
    ex = add_execution(store)
    for r in range(1, 4):
        add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r,
                outcomes={"leak": 9, "error": 40, "done": 31}, extra={"waiting_for_input": 0, "timeouts": 0})
    scanned = [(f.outcome, f.kind, f.factor) for f in scan_confounds(store, registry)]
    assert ("error_rate", "guard", "timeouts") in scanned and ("corruption_rate", "guard", "error") in scanned
    assert ("error_rate", "guard", "error") not in scanned, scanned


def test_scan_of_an_empty_store_finds_nothing(store, registry):
    assert scan_confounds(store, registry) == []


def test_a_guard_that_also_occurs_without_the_outcome_is_worded_by_which_runs_exist(store, registry):
    # leak only with timeouts; timeouts once without leak; runs without timeouts exist (all clean), and every
    # run had an error: the message says which comparison exists instead of claiming the opposite
    ex = add_execution(store)
    for r in range(1, 4):
        add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r,
                outcomes={"leak": 5, "error": 40, "done": 35}, extra={"timeouts": 30})
        add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, replicate=r,
                outcomes={"error": 10, "done": 70}, extra={"timeouts": 0})
    add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=4,
            outcomes={"error": 40, "done": 40}, extra={"timeouts": 30})
    findings = {(f.kind, f.factor): f for f in scan_confounds(store, registry) if f.outcome == "corruption_rate"}
    timeouts = findings[("guard", "timeouts")]
    assert timeouts.p is not None
    assert "no run without timeouts exists" not in timeouts.message
    assert ("timeouts also occurred in 1 run without leak, and leak occurred in 0 of 3 runs without "
            "timeouts of the execution that had and lacked it (Fisher p = 0.14)") in timeouts.message
    error = findings[("guard", "error")]
    assert error.p is None
    assert ("error also occurred in 4 runs without leak, so it is not specific; no run without error "
            "exists to compare") in error.message


def test_write_with_no_draft_to_append_says_so_and_leaves_the_file(workbench_dir, seed_csv, cli):
    # The seed's evidence proposes no hypothesis entry: --write appended nothing and said nothing about it.
    db = str(workbench_dir / "wb.duckdb")
    code, _, err = cli("import", "evidence", str(seed_csv), "--root", str(workbench_dir), "--db", db)
    assert code == 0, err
    before = (workbench_dir / "hypotheses.yaml").read_bytes()
    code, out, err = cli("confounds", "--write", "--root", str(workbench_dir), "--db", db)
    assert code == 0, err
    assert out.rstrip().splitlines()[-1] == ("--write: no finding proposes a hypothesis entry; "
                                             "hypotheses.yaml is unchanged.")
    assert (workbench_dir / "hypotheses.yaml").read_bytes() == before


def test_before_any_run_is_recorded_it_scans_nothing_as_on_an_empty_store(workbench_dir, cli, monkeypatch):
    # A fresh workbench has no wb.duckdb yet: it reads as an empty store (it said "no store at …", then "no runs
    # recorded yet", exit 2, where an empty store says there is nothing to scan, exit 0). No store is made.
    import json

    monkeypatch.delenv("WB_DB", raising=False)
    store = workbench_dir / "wb.duckdb"
    before = (workbench_dir / "hypotheses.yaml").read_bytes()
    code, out, err = cli("confounds", "--write", "--root", str(workbench_dir))
    assert code == 0 and err == "", err
    assert out == ("No runs with a recorded outcome to scan.\n"
                   "--write: no finding proposes a hypothesis entry; hypotheses.yaml is unchanged.\n"), out
    assert not store.exists() and (workbench_dir / "hypotheses.yaml").read_bytes() == before
    code, out, _ = cli("confounds", "--json", "--root", str(workbench_dir))
    assert code == 0 and json.loads(out)["items"] == []
    # A store named by --db that is not there is a mistyped path, not a fresh workbench: it stays "no store at".
    code, _, err = cli("confounds", "--root", str(workbench_dir), "--db", str(workbench_dir / "typo.duckdb"))
    assert code == 2 and err.startswith(f"Error: no store at {workbench_dir / 'typo.duckdb'} (--db)"), err
    assert not store.exists() and not (workbench_dir / "typo.duckdb").exists()


def test_a_drafts_threshold_lies_above_the_clean_rate_at_the_decimals_that_allow_it():
    # The draft's `at_least` was the midpoint floored to 2 decimals: 0 between 0 and 0.9%, which no rate falsifies.
    from workbench.analysis.aliasing import _between

    assert _between(0.0, 0.94) == 0.47 and _between(0.28, 0.30) == 0.29 and _between(0.0, 0.009) == 0.004
    assert _between(0.0, 0.00002) == 0.00001 and _between(0.5, 0.5 + 1e-12) is None


def test_a_proposal_names_only_a_hypothesis_that_toggles_the_proposed_variable(store, registry):
    """The data's separating variable (index_k_dtype: aborts only under bf16) came first, yet the proposal's text
    ended "This is hypothesis wedge-confound", which toggles nixl_abort_fix: a hypothesis is named only where it
    isolates the variable the proposal toggles."""
    ex = add_execution(store)
    held = dict(CONTROL, nixl_abort_fix="off")
    for r in range(1, 4):
        add_run(store, execution_id=ex, arm="control", variables=held, replicate=r,
                outcomes={"leak": 9, "done": 71}, extra={"waiting_for_input": 50})
        add_run(store, execution_id=ex, arm="treatment", variables=dict(held, index_k_dtype="fp8"), replicate=r,
                outcomes={"done": 80}, extra={"waiting_for_input": 0})
    (aborts,) = [f for f in scan_confounds(store, registry)
                 if f.outcome == "corruption_rate" and f.factor == "aborts (= waiting_for_input)"]
    assert aborts.proposal["toggle"] == "index_k_dtype", aborts.proposal
    assert aborts.proposal["registered_as"] is None and "This is hypothesis" not in aborts.proposal["text"], \
        aborts.proposal["text"]
