"""A sequential execution whose verdict the attrition check holds: the units as a whole decide the prediction, the
completed units alone do not yet. The look only said "the attrition check holds the verdict inconclusive", and
nothing said what must change; once the completed units decided too, the check's flag ("the verdict stands") is
right, and the runner's stop line says which looks it held (tests/runner/test_run_summary.py)."""

from __future__ import annotations

from workbench.analysis import analyze_stored, sequential_decision

from analysis_helpers import CONTROL, TREATMENT, add_execution, add_run

HID = "wedge-confound"


def _replicates(store, ex: int, first: int, last: int) -> None:
    """Control 12/80 leaks; the treatment none, but 48 of its 80 sessions fail (the over-commit's 503s)."""
    for r in range(first, last + 1):
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 10, "aborts": 3})
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"done": 32, "error": 48}, extra={"waiting_for_input": 0, "aborts": 0})


def test_a_verdict_the_attrition_check_holds_says_what_would_let_it_decide(store, registry):
    ex = add_execution(store, mode="sequential")
    _replicates(store, ex, 1, 5)
    d = sequential_decision(store, registry, HID, execution_id=ex)
    assert not d.stop and d.look.held_by("attrition"), d.reasoning
    # 0/400 decides "<= 2%"; the 160 completed sessions alone not yet: the look says by how far, and who lost what.
    assert d.look.line().endswith(
        "wholly inside the region, but the attrition check holds the verdict inconclusive: over completed units "
        "only it is 0/160 = 0.0% (interval [0.0%, 3.1%]), supported once its upper end falls to 2% (treatment lost "
        "240/400 units)"), d.look.line()
    # The reasoning (stored with the verdict; `wb hypothesis run` prints its checks a line each) says it too.
    a = analyze_stored(store, registry, HID, execution_id=ex)
    (attrition,) = [c for c in a.checks if c.name == "attrition"]
    assert a.verdict == "inconclusive" and attrition.mark(a.verdict) == "FAIL"
    assert attrition.detail.startswith("treatment: 240/400 units (60.0%) did not complete"), attrition.detail
    assert attrition.detail.endswith(
        "(supported over all units, inconclusive over completed; over completed units only it is 0/160 = 0.0% "
        "(interval [0.0%, 3.1%]), supported once its upper end falls to 2%). Attrition holds the verdict "
        "inconclusive until the completed units decide as all units did: more replicates add completed units "
        "(--replicates; a sequential execution goes on to its budget), and fewer lost units make more of each run "
        "count"), attrition.detail
    assert f"Failed — attrition: {attrition.detail}. This makes the result inconclusive." in a.reasoning
    # Three replicates on, the completed units decide too: the verdict stands, and the check is a flag again.
    _replicates(store, ex, 6, 8)
    d = sequential_decision(store, registry, HID, execution_id=ex)
    assert d.stop and d.verdict == "supported" and not d.look.held_by("attrition"), d.reasoning
    assert "Flagged — attrition: treatment: 384/640 units (60.0%) did not complete" in d.reasoning, d.reasoning
    assert "so the verdict stands." in d.reasoning and "holds the verdict" not in d.reasoning, d.reasoning
    # A resumed execution makes each look of its killed runner again, over the runs up to that look's replicate
    # only: the look over every stored run (an interrupted attempt of the next replicate counted as a failed run and
    # as a replicate) gave each earlier look as the last, and the stop line named only the resumed runner's looks.
    add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed="9"), replicate=9,
            outcomes=None, status="interrupted")
    d = sequential_decision(store, registry, HID, execution_id=ex, through_replicate=5)
    assert (d.look.look, d.stop) == (5, False) and d.look.held_by("attrition"), d.reasoning
    assert "failed" not in d.reasoning, d.reasoning


def test_a_resumed_runner_makes_the_looks_of_the_blocks_already_run_again_as_they_were(store, registry):
    # A resumed runner walks the blocks its killed runner had run (every run done, none to make) and looks after
    # each: each look was made over every stored run, the interrupted attempt of the next block counted as a failed
    # run and a replicate, so every look was told as the last ("look 6", five times) and the looks the attrition
    # check held, which the stop line names, were wrong. `_run_blocks` is called as the resume does, on a plan whose
    # blocks are all done.
    import asyncio
    from types import SimpleNamespace

    from workbench.runner.execute import _run_blocks
    from workbench.runner.plan import make_plan

    ex = add_execution(store, mode="sequential")
    _replicates(store, ex, 0, 4)
    add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed="5"), replicate=5,
            outcomes=None, status="interrupted")
    plan = make_plan(["control", "treatment"], 5, seed=1)
    looked: list = []

    async def flush() -> None:
        pass

    state = SimpleNamespace(
        prepared=SimpleNamespace(mode="sequential", registry=registry, hypothesis=registry.hypothesis(HID),
                                 max_replicates=12),
        plan=plan, done={r.order_index for r in plan.runs}, recorder=SimpleNamespace(flush=flush),
        progress=SimpleNamespace(looked=looked.append), store=store, execution_id=ex, decide=None,
        attrition_held=[], invalid_by=None, stop_reason=None)
    asyncio.run(_run_blocks(state, None))
    assert [look.look for look in looked] == [1, 2, 3, 4, 5], [look.line() for look in looked]
    assert state.attrition_held == [look.look for look in looked if look.held_by("attrition")] and \
        5 in state.attrition_held, state.attrition_held


def test_an_attrition_check_that_makes_the_verdict_invalid_is_told_so_not_as_holding_it(store, registry):
    # The treatment's every run failed: the attrition check makes the verdict invalid, and the execution stops. The
    # runner counted that look among those the check "held", and the stop line said the sequential test decided.
    ex = add_execution(store, mode="sequential")
    for r in (1, 2):
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 10, "aborts": 3})
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes=None, status="failed")
    d = sequential_decision(store, registry, HID, execution_id=ex)
    assert d.stop and d.verdict == "invalid" and d.invalid_by == ("data", "attrition"), (d.invalid_by, d.reasoning)
