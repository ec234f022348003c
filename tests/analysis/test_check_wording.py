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
