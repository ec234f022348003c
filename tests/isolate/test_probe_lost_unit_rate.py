"""A probe whose metric is a rate of lost units (error_rate: errored sessions / sessions) is read over all units
only, as the analysis reads it: over the completed units such a rate puts errored sessions over the sessions that
did not error, which is no reading of anything."""

from __future__ import annotations

import sys
from pathlib import Path

from workbench.isolate.adapter import RunnerOracle
from workbench.isolate.app import prepare_spec
from workbench.isolate.search import ProbeRequest
from workbench.registry import load_registry

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))
from analysis_helpers import CONTROL, add_execution, add_run  # noqa: E402


def test_a_probe_on_a_rate_of_lost_units_is_judged_over_all_units(tmp_path: Path, workbench_dir: Path) -> None:
    """40/80 sessions errored in each run: 50%, well short of the failure region (>= 70%). Over the 40 completed
    sessions the same errors read 40/40 = 100%, and the probe said the config fails."""
    from workbench.store import open_store

    reg = load_registry(workbench_dir)
    spec = prepare_spec(reg, experiment="agent-repro", good=["index_k_dtype=fp8 nixl_abort_fix=on hicache=off"],
                        bad=["index_k_dtype=bf16 nixl_abort_fix=off hicache=off"], metric="error_rate",
                        region=">= 0.7", seed=11)
    with open_store(str(tmp_path / "wb.duckdb")) as store:
        ex = add_execution(store)
        for r in range(1, 4):
            add_run(store, execution_id=ex, arm="probe", variables=CONTROL, replicate=r,
                    outcomes={"error": 40, "done": 30, "leak": 10}, extra={"waiting_for_input": 0})
        look = RunnerOracle(spec, reg, store)._look(store, ex, ProbeRequest(0, spec.changes, "leave-one-out", "q",
                                                                             None, 0.05, 240.0))
    assert (look.k, look.n) == (120, 240), look
    assert look.outcome != "fails" and "completed" not in look.reasoning, look.reasoning
