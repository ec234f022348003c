"""A rate of a non-completed outcome (error_rate: errored sessions / sessions) under the attrition check.

The check re-judges every proportion over completed units only. For a rate whose numerator is a completed outcome
(leaks) that is the reading without the lost units; for error_rate it put the errored sessions over the sessions
that completed (67/93 = 72% when no completed session errored), and a disagreement between that number and the
real one made a sound verdict inconclusive."""

from __future__ import annotations

from workbench.analysis import analyze_stored

from analysis_helpers import CONTROL, add_execution, add_run

HID = "pool-configurator-overcommit"
HELD = dict(CONTROL, nixl_abort_fix="on")


def _execution(store, reps: int) -> int:
    ex = add_execution(store, hypothesis_id=HID)
    for r in range(1, reps + 1):
        seed = {"seed": str(r)}
        add_run(store, execution_id=ex, arm="control", variables={**HELD, "pool_configurator_fix": "off", **seed},
                replicate=r, hypothesis_id=HID, outcomes={"leak": 15, "done": 10, "maxrounds": 22, "error": 33},
                extra={"waiting_for_input": 0})
        add_run(store, execution_id=ex, arm="treatment", variables={**HELD, "pool_configurator_fix": "on", **seed},
                replicate=r, hypothesis_id=HID, outcomes={"leak": 15, "done": 10, "maxrounds": 55},
                extra={"waiting_for_input": 0})
    return ex


def _control_predicts(workbench_dir, metric: str, added: str):
    """The registry of `workbench_dir` with `added` metric lines in agent-repro and HID's control-arm prediction
    made on `metric` instead of error_rate."""
    from workbench.registry import load_registry

    exp = workbench_dir / "experiments" / "agent-repro.yaml"
    old = "  error_rate: {kind: proportion, numerator: error, denominator: sessions, description: error / sessions}\n"
    assert old in exp.read_text()
    exp.write_text(exp.read_text().replace(old, old + added))
    hyp = workbench_dir / "hypotheses.yaml"
    old = "{metric: error_rate, arm: control, at_least: 0.1,"
    assert old in hyp.read_text()
    hyp.write_text(hyp.read_text().replace(old, f"{{metric: {metric}, arm: control, at_least: 0.1,"))
    return load_registry(workbench_dir)


def test_a_rate_of_lost_units_has_no_reading_over_completed_units(store, registry):
    a = analyze_stored(store, registry, HID, execution_id=_execution(store, reps=5))
    errors = [p for p in a.predictions if p.metric == "error_rate"]
    assert [(p.where, p.outcome) for p in errors] == [("control", "supported"), ("treatment", "supported")]
    assert all(p.completed is None for p in errors)
    leaks = next(p for p in a.predictions if p.metric == "corruption_rate")
    assert leaks.completed is not None and (leaks.completed.k, leaks.completed.n) == (75, 400)
    attrition = next(c for c in a.checks if c.name == "attrition")
    assert "error_rate" not in attrition.detail and "verdict stands" in attrition.detail
    assert a.verdict == "supported", a.reasoning
    assert "Over completed units only it is 165/" not in a.reasoning


def test_a_rate_counting_some_lost_units_has_no_reading_over_completed_units(store, workbench_dir):
    """A numerator whose outcomes mix lost ones with completed ones (error or leak) was re-judged over completed
    units: errored sessions over sessions that completed, a rate above 1 (48/47) that made the analysis
    fail with a traceback (numpy: ngood + nbad < nsample)."""
    registry = _control_predicts(workbench_dir, "failure_rate", (
        "  failed_or_leaked: {kind: count, units: {outcome: [error, leak]}}\n"
        "  failure_rate: {kind: proportion, numerator: failed_or_leaked, denominator: sessions}\n"))
    a = analyze_stored(store, registry, HID, execution_id=_execution(store, reps=5))
    (failures,) = [p for p in a.predictions if p.metric == "failure_rate"]
    assert (failures.k, failures.n, failures.completed) == (240, 400, None), failures


def test_attrition_claims_no_comparison_when_no_prediction_has_a_completed_reading(store, workbench_dir):
    """With error_rate its only predictions, nothing was judged over completed units, yet the flagged attrition
    check said "The outcome is the same over all units and over completed units", a comparison never made."""
    from workbench.registry import load_registry

    hyp = workbench_dir / "hypotheses.yaml"
    old = ('      - {metric: corruption_rate, arm: treatment, at_least: 0.05,\n'
           '         why: "over-commit fails sessions; it does not corrupt the ones that complete"}\n')
    assert old in hyp.read_text()
    hyp.write_text(hyp.read_text().replace(old, ""))
    a = analyze_stored(store, load_registry(workbench_dir), HID, execution_id=_execution(store, reps=5))
    assert [p.metric for p in a.predictions] == ["error_rate", "error_rate"]
    attrition = next(c for c in a.checks if c.name == "attrition")
    assert "same over all units and over completed units" not in attrition.detail, attrition.detail
    assert attrition.detail.endswith(". No prediction is read over completed units only (error_rate counts the "
                                     "lost units themselves), so the verdict stands."), attrition.detail


def test_a_rate_whose_numerator_filters_on_another_field_has_no_completed_reading(store, workbench_dir):
    """A numerator counted by a unit field other than the outcome (sessions whose error says HTTP 503) takes units
    of any outcome, lost ones too: over completed units it read 60 errors a run over 20 completed sessions, and
    the analysis failed with a traceback (numpy: ngood + nbad < nsample)."""
    registry = _control_predicts(workbench_dir, "http503_rate", (
        "  http503: {kind: count, units: {error: HTTP 503}}\n"
        "  http503_rate: {kind: proportion, numerator: http503, denominator: sessions}\n"))
    ex = add_execution(store, hypothesis_id=HID)
    for r in range(1, 4):
        variables = {**HELD, "pool_configurator_fix": "off", "seed": str(r)}
        add_run(store, execution_id=ex, arm="control", variables=variables,
                replicate=r, hypothesis_id=HID, outcomes={"leak": 10, "done": 10, "error": 60},
                extra={"waiting_for_input": 0}, reasons={"error": ["HTTP 503"]})
    a = analyze_stored(store, registry, HID, execution_id=ex)
    (rate,) = [p for p in a.predictions if p.metric == "http503_rate"]
    assert (rate.k, rate.n, rate.completed) == (180, 240, None), rate


def test_a_rate_whose_collected_numerator_outnumbers_the_completed_units_has_no_completed_reading(store,
                                                                                                 workbench_dir):
    """timeouts is collected, not counted from units, so its definition cannot say which units it counts; a run
    with 60 timeouts and 20 completed sessions shows it counts lost ones. Over completed units that read 60/20,
    and the analysis failed with a traceback (numpy: ngood + nbad < nsample)."""
    registry = _control_predicts(workbench_dir, "timeout_rate",
                                 "  timeout_rate: {kind: proportion, numerator: timeouts, denominator: sessions}\n")
    ex = add_execution(store, hypothesis_id=HID)
    for r in range(1, 4):
        variables = {**HELD, "pool_configurator_fix": "off", "seed": str(r)}
        add_run(store, execution_id=ex, arm="control", variables=variables, replicate=r, hypothesis_id=HID,
                outcomes={"leak": 10, "done": 10, "error": 60}, extra={"waiting_for_input": 0, "timeouts": 60})
    a = analyze_stored(store, registry, HID, execution_id=ex)
    (rate,) = [p for p in a.predictions if p.metric == "timeout_rate"]
    assert (rate.k, rate.n, rate.completed) == (180, 240, None), rate
