"""A probe on pdsim whose sessions are mostly lost (the wedge) must not pass: lost sessions cannot show the failure.

Found on real searches: in the seed world, bad minus HiCache (bf16, abort fix off) wedges, and about
9 of 10 sessions time out. The probe read 0 leaks over all 160 sessions as a pass, and the search
decided its answer on it, while the runner's own analysis of the same runs said inconclusive
(attrition). One run on pdsim pins it: at alpha 0.05, 0/80 would already decide a pass.
"""

from __future__ import annotations

from workbench.isolate.adapter import RunnerOracle
from workbench.isolate.app import prepare_spec
from workbench.isolate.search import ProbeRequest
from workbench.registry import load_registry
from workbench.settings import Settings
from workbench.store import open_store


def test_a_probe_whose_sessions_are_mostly_lost_is_inconclusive_not_a_pass(bench):
    reg = load_registry(bench.root)
    spec = prepare_spec(reg, experiment="agent-repro", good=["index_k_dtype=fp8 nixl_abort_fix=on hicache=off"],
                        bad=["index_k_dtype=bf16 nixl_abort_fix=off hicache=off"], metric="corruption_rate",
                        region=">= 0.05", seed=11)
    settings = Settings.from_env(db=bench.db, root=bench.root)
    with open_store(settings.db) as store:
        oracle = RunnerOracle(spec, reg, store, settings)
        res = oracle.probe(ProbeRequest(0, spec.changes, "leave-one-out", "q", None, 0.05, 160.0))
    assert res.outcome == "inconclusive", res.reasoning
    assert res.looks == 1  # stopped at the first look that showed the loss, not after spending more units
    assert "did not complete" in res.reasoning
