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
    findings = {(f.kind, f.factor): f for f in scan_confounds(store, registry)}
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


def test_scan_of_an_empty_store_finds_nothing(store, registry):
    assert scan_confounds(store, registry) == []
