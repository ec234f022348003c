"""A probe's execution resumed after its runner was killed makes that runner's looks again as they were: the look
after a block reads the runs through that block's replicate, not every run stored since (as the runner's own
sequential test does, `sequential_decision`'s through_replicate)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from workbench.isolate.adapter import RunnerOracle
from workbench.isolate.app import prepare_spec
from workbench.isolate.search import ProbeRequest
from workbench.registry import load_registry
from workbench.runner.execute import _sequential_decision

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))
from analysis_helpers import CONTROL, add_execution, add_run  # noqa: E402


def test_the_look_after_a_block_reads_the_runs_through_it_alone(tmp_path: Path, workbench_dir: Path) -> None:
    """Killed after replicate 1 ended (0/80 leaks then 40/80), the resumed runner looks again after block 0: it
    judged every stored run there, so it stopped at its first look on replicate 1's leaks, a look its killed
    runner never made (that one went on after 0/80 and would have judged both replicates only after block 1)."""
    from workbench.store import open_store

    reg = load_registry(workbench_dir)
    spec = prepare_spec(reg, experiment="agent-repro", good=["index_k_dtype=fp8 nixl_abort_fix=on hicache=off"],
                        bad=["index_k_dtype=bf16 nixl_abort_fix=off hicache=off"], metric="corruption_rate",
                        region=">= 0.05", seed=11)
    req = ProbeRequest(0, spec.changes, "leave-one-out", "q", None, 0.001, 400.0)
    with open_store(str(tmp_path / "wb.duckdb")) as store:
        ex = add_execution(store, mode="sequential")
        for replicate, leaks in ((0, 0), (1, 40)):
            add_run(store, execution_id=ex, arm="probe", variables=CONTROL, replicate=replicate,
                    outcomes={"leak": leaks, "done": 80 - leaks}, extra={"waiting_for_input": 0})
        oracle = RunnerOracle(spec, reg, store)
        state = SimpleNamespace(decide=oracle.stop_rule(req), store=store, execution_id=ex)
        first, second = (_sequential_decision(state, through) for through in (0, 1))
    assert (first.k, first.n, first.looks, first.stop) == (0, 80, 1, False), first
    assert (second.k, second.n, second.looks) == (40, 160, 2), second
