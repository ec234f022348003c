"""The fingerprint and config checks' details say what they counted: every value they count is named or counted
among the rest, and one execution reads as one."""

from __future__ import annotations

from workbench.analysis import analyze_stored

from analysis_helpers import CONTROL, TREATMENT, add_execution, add_run

FINGERPRINT = {"wb_version": "wb 0.1.0", "host": "gpu-1", "gpu": "H200", "driver": "580", "torch": "2.11",
               "sglang_rev": "abc1234"}


def test_six_identical_fingerprint_values_are_five_named_and_one_more(store, registry):
    """'6 fingerprint values identical across arms (driver, gpu, host, sglang_rev, torch)' named five of the six
    it counted, with nothing to say a sixth was left out; and 'in each of 1 execution' read as if there were more."""
    ex = add_execution(store)
    for r in (1, 2):
        add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r, fingerprint=FINGERPRINT,
                outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 30})
        add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, replicate=r, fingerprint=FINGERPRINT,
                outcomes={"leak": 13, "done": 67}, extra={"waiting_for_input": 0})
    checks = {c.name: c.detail for c in analyze_stored(store, registry, "wedge-confound", execution_id=ex).checks}
    assert checks["fingerprint"] == ("6 fingerprint values identical across arms (driver, gpu, host, sglang_rev, "
                                     "torch and 1 more)."), checks["fingerprint"]
    assert checks["config"].startswith("one rendered config per arm in the one execution; they differ in: "), \
        checks["config"]


def test_a_pooled_analysis_names_the_executions_it_pooled(store, registry):
    """'pooled over 2 executions' named none of them: a user whose other hypothesis's runs matched an arm could
    not tell which were taken in. The executions are named by id, as `wb runs list` and `hypothesis show` give them."""
    ids = []
    for _ in range(2):
        ex = add_execution(store)
        ids.append(ex)
        for r in (1, 2):
            add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r,
                    outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 30})
            add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, replicate=r,
                    outcomes={"leak": 13, "done": 67}, extra={"waiting_for_input": 0})
    checks = {c.name: c.detail for c in analyze_stored(store, registry, "wedge-confound").checks}
    assert checks["looks"].startswith(f"pooled over 2 executions ({ids[0]}, {ids[1]}): exploratory."), checks["looks"]
