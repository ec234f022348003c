"""Reachability verdicts from probe counts stored in a real DuckDB store and read back as run records."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.analysis.reachability import judge_reachability
from workbench.analysis.results import Analysis, Check
from workbench.registry.hypothesis import Hypothesis
from workbench.store import open_store, records

DEAD = "workbench.sim.hicache:DSAIndexerPoolHost"
LIVE = "workbench.sim.hicache:DeepSeekV4PagedHostPool"


def hypothesis(target: str = DEAD, control: str | None = LIVE, **region) -> Hypothesis:
    probe = {"targets": [target]} | ({"positive_control": control} if control else {})
    return Hypothesis.model_validate({
        "id": "reach", "kind": "reachability", "claim": "the code runs", "experiment": "agent-repro",
        "probe": probe, "predicts": [{"target": target, **(region or {"at_least": 1})}]})


@pytest.fixture
def store(tmp_path: Path):
    s = open_store(str(tmp_path / "wb.duckdb"))
    yield s
    s.dispose()


def stored_runs(store, runs: list[tuple[str, dict[str, dict[str, int | bool]]]]) -> list:
    """runs: [(status, {process: {target: calls | False (unresolved)}})] -> the stored run records."""
    ids = []
    with store.session() as session:
        for status, procs in runs:
            run = records.create_run(session, experiment_id="agent-repro", variables={}, status=status,
                                     hypothesis_id="reach", arm="probe")
            rows = [{"process": proc, "pid": 100 + i, "target": t, "calls": 0 if c is False else int(c),
                     "resolved": c is not False}
                    for i, (proc, targets) in enumerate(procs.items()) for t, c in targets.items()]
            records.add_probe_counts(session, run_id=run.id, counts=rows)
            ids.append(run.id)
    return [store.run(i) for i in ids]


def check(result: Analysis, name: str) -> Check:
    return next(c for c in result.checks if c.name == name)


def test_zero_calls_with_the_control_hit_in_every_run_falsifies(store):
    runs = stored_runs(store, [
        ("ok", {"prefill": {DEAD: 0, LIVE: 0}, "decode": {DEAD: 0, LIVE: 3}}),
        ("ok", {"prefill": {DEAD: 0, LIVE: 0}, "decode": {DEAD: 0, LIVE: 2}}),
        ("failed", {"decode": {DEAD: 9, LIVE: 9}}),  # a failed run's counts are not evidence
    ])
    r = judge_reachability(hypothesis(), runs)
    assert r.verdict == "falsified", r.reasoning
    assert r.counts[DEAD]["total"] == 0 and r.counts[LIVE]["total"] == 5
    assert r.counts[LIVE]["by_process"] == {"prefill": 0, "decode": 5}
    assert check(r, "positive control").passed
    assert "DSAIndexerPoolHost: 0 calls over 2 runs in all 4 probed processes" in r.reasoning
    assert len(r.excluded) == 1 and r.excluded[0].endswith("(failed)")


def test_calls_seen_support_it_whatever_the_control_did(store):
    runs = stored_runs(store, [("ok", {"decode": {LIVE: 4, DEAD: 0}})])
    r = judge_reachability(hypothesis(target=LIVE, control=DEAD), runs)
    assert r.verdict == "supported", r.reasoning
    assert not check(r, "positive control").passed


def test_zero_calls_without_the_control_hit_is_inconclusive_and_says_why(store):
    runs = stored_runs(store, [("ok", {"decode": {DEAD: 0, LIVE: 1}}), ("ok", {"decode": {DEAD: 0, LIVE: 0}})])
    r = judge_reachability(hypothesis(), runs)
    assert r.verdict == "inconclusive"
    assert "not hit in run" in r.reasoning and "did not exercise the surrounding path" in r.reasoning
    no_control = judge_reachability(hypothesis(control=None), stored_runs(store, [("ok", {"d": {DEAD: 0}})]))
    assert no_control.verdict == "inconclusive" and "no positive control" in no_control.reasoning


def test_a_target_naming_no_code_is_invalid_not_zero_calls(store):
    bad = "workbench.sim.hicache:NoSuchPool"
    runs = stored_runs(store, [("ok", {"prefill": {bad: False, LIVE: 0}, "decode": {bad: False, LIVE: 2}})])
    r = judge_reachability(hypothesis(target=bad), runs)
    assert r.verdict == "invalid"
    assert bad in r.reasoning and "A target names no existing code object" in r.reasoning
    assert "unresolved in all 2 process reports" in r.reasoning
    assert not check(r, f"resolves: {bad}").passed
    # resolved in one process is enough: a module only one server imports
    runs = stored_runs(store, [("ok", {"prefill": {DEAD: False, LIVE: 0}, "decode": {DEAD: 0, LIVE: 2}})])
    assert judge_reachability(hypothesis(), runs).verdict == "falsified"


def test_runs_without_probe_counts_or_ok_runs_are_inconclusive(store):
    r = judge_reachability(hypothesis(), stored_runs(store, [("ok", {})]))
    assert r.verdict == "inconclusive" and "probe did not report" in r.reasoning
    r = judge_reachability(hypothesis(), stored_runs(store, [("failed", {"d": {DEAD: 0, LIVE: 1}})]))
    assert r.verdict == "inconclusive" and "No run completed ok" in r.reasoning


def test_upper_bounds_dead_code_claims(store):
    runs = stored_runs(store, [("ok", {"decode": {DEAD: 0, LIVE: 2}})])
    assert judge_reachability(hypothesis(at_most=0), runs).verdict == "supported"
    runs = stored_runs(store, [("ok", {"decode": {DEAD: 2, LIVE: 0}})])
    # calls above the bound falsify "dead" even when the control was missed
    assert judge_reachability(hypothesis(at_most=0), runs).verdict == "falsified"
    runs = stored_runs(store, [("ok", {"decode": {DEAD: 0, LIVE: 0}})])
    assert judge_reachability(hypothesis(at_most=0), runs).verdict == "inconclusive"


def test_the_analysis_reads_probe_counts_from_the_store(store):
    ids = [r.id for r in stored_runs(store, [("ok", {"decode": {DEAD: 0, LIVE: 1}})])]
    from workbench.analysis.data import run_query
    from workbench.registry import load_registry

    reg = load_registry(Path(__file__).resolve().parents[2])
    runs = store.analysis_runs(run_query(reg.experiments["agent-repro"]), with_probes=True)
    r = judge_reachability(hypothesis(), runs)
    assert r.verdict == "falsified" and r.runs == {"probe": ids}
    (pred,) = r.predictions
    assert (pred.metric, pred.estimate, pred.outcome) == (f"calls:{DEAD}", 0, "falsified")
    assert all(c.effect == "none" for c in r.checks if c.passed)


def test_the_verdict_lines_of_a_reachability_verdict_give_its_reasoning_as_written(store):
    """`hypothesis run/show/analyze` print `verdict_lines`: a reachability judgement was read as a median
    ("every process gave a median of 0 ( no interval)") instead of its calls over runs and its control."""
    from workbench.analysis.summary import verdict_lines

    runs = stored_runs(store, [("ok", {"prefill": {DEAD: 0, LIVE: 0}, "decode": {DEAD: 0, LIVE: 3}})])
    h = hypothesis()
    r = judge_reachability(h, runs)
    lines = verdict_lines(h, r)
    assert lines[0] == f"  {r.reasoning}" and "0 calls over 1 run" in lines[0], lines
    assert lines[1:] == [f"  {c.line(r.verdict)}" for c in r.checks], lines
    assert "median" not in "\n".join(lines), lines
