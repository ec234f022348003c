"""Verdicts over runner-shaped runs in a real store: decisions, validity checks, and bad input."""

from __future__ import annotations

import json

import pytest

from workbench.analysis import analyze_stored, record_verdict, sequential_decision
from workbench.errors import BadInput

from analysis_helpers import CONTROL, TREATMENT, add_execution, add_run, registry_with


def _checks(a):
    return {c.name: c for c in a.checks}


def _fixed(session, *, treat, ctrl=None, reps=2, aborts=0, **kw):
    # With own_seeds each replicate draws its own workload seed, as the runner does; without, every
    # replicate replays seed 0.
    ex = add_execution(session)
    for r in range(1, reps + 1):
        seed = {"seed": str(r)} if kw.get("own_seeds") else {}
        add_run(session, execution_id=ex, arm="control", variables={**CONTROL, **seed}, replicate=r,
                outcomes=ctrl or {"leak": 12, "done": 60, "error": 8}, extra={"waiting_for_input": 30})
        add_run(session, execution_id=ex, arm="treatment", variables={**kw.get("tvars", TREATMENT), **seed},
                replicate=r, outcomes=treat, extra={"waiting_for_input": aborts}, fingerprint=kw.get("tfp"))
    return ex


def test_seed_world_shape_is_falsified(store, registry):
    ex = _fixed(store, treat={"leak": 13, "done": 60, "maxrounds": 7})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.verdict == "falsified", a.reasoning
    p = a.predictions[0]
    assert (p.k, p.n) == (26, 160) and p.p_against < 1e-6
    c = _checks(a)
    assert c["isolation"].passed and c["fingerprint"].passed and c["config"].passed
    assert c["guard: aborts (treatment) == 0"].passed and c["drift"].passed
    assert a.arms["treatment"].metrics["corruption_rate"].wilson[0] > 0.02


def test_zero_corruption_needs_enough_units(store, registry):
    # Two event-free runs of 80 cannot show how much runs differ: the ICC floor (0.01, design effect 1.79)
    # makes 0/160 count as 0/89.4, and 0/189 effective units is the first that decides (338 in all).
    ex = _fixed(store, treat={"done": 75, "maxrounds": 5}, own_seeds=True)
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.verdict == "inconclusive"
    p = a.predictions[0]
    assert p.outcome == "inconclusive" and 170 <= p.more_units_needed <= 180
    assert p.method == "run-level" and abs(p.design_effect - 1.79) < 1e-9
    assert "more units" in a.reasoning
    # in runs too, which is what --replicates takes: 170-180 units are 3 more runs of 80 (three more reach 5 runs,
    # the first count that supports, below)
    assert p.more_runs_needed == 3 and "(3 more runs of this size)" in a.reasoning, a.reasoning
    ex = _fixed(store, treat={"done": 75, "maxrounds": 5}, reps=4, own_seeds=True)
    assert analyze_stored(store, registry, "wedge-confound", execution_id=ex).verdict == "inconclusive"
    ex = _fixed(store, treat={"done": 75, "maxrounds": 5}, reps=5, own_seeds=True)
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.verdict == "supported", a.reasoning
    # Five replays of one workload without a leak are one run's evidence: 0/80 does not decide.
    ex = _fixed(store, treat={"done": 75, "maxrounds": 5}, reps=5)
    assert analyze_stored(store, registry, "wedge-confound", execution_id=ex).verdict == "inconclusive"


def test_guard_violation_makes_it_invalid(store, registry):
    ex = _fixed(store, treat={"leak": 13, "done": 67}, aborts=3)
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.verdict == "invalid"
    assert _checks(a)["guard: aborts (treatment) == 0"].passed is False


def test_a_guard_violations_value_reads_with_every_digit_it_was_recorded_with(store, registry):
    # The violation's value was written f"{x:g}": a run that recorded 1234567 aborts read "1.23457e+06".
    ex = _fixed(store, treat={"leak": 13, "done": 67}, aborts=1234567)
    detail = _checks(analyze_stored(store, registry, "wedge-confound", execution_id=ex))[
        "guard: aborts (treatment) == 0"].detail
    assert detail.startswith("violated in 2 runs: ") and "(treatment): 1,234,567" in detail, detail


def test_unrecorded_guard_is_not_a_pass(store, registry):
    ex = add_execution(store)
    for arm, v in (("control", CONTROL), ("treatment", TREATMENT)):
        add_run(store, execution_id=ex, arm=arm, variables=v, outcomes={"leak": 13, "done": 67})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.verdict == "inconclusive"
    assert _checks(a)["guard: aborts (treatment) == 0"].passed is None


def test_recorded_variables_that_differ_between_arms_make_it_invalid(store, registry):
    ex = _fixed(store, treat={"leak": 13, "done": 67}, tvars=dict(TREATMENT, geometry_fix="on"))
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.verdict == "invalid"
    assert "geometry_fix" in _checks(a)["isolation"].detail


def test_fingerprint_difference_makes_it_invalid(store, registry):
    ex = _fixed(store, treat={"leak": 13, "done": 67}, tfp={"wb_version": "wb 0.2.0"})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.verdict == "invalid" and "wb_version" in _checks(a)["fingerprint"].detail


def test_attrition_that_changes_the_answer_makes_it_inconclusive(store, registry):
    # 8/320 over all units is undecided only thanks to the errored units: over completed units it is 8/40.
    # (Four identical replicates count as fewer runs than four: see analysis.clustered.)
    ex = _fixed(store, treat={"leak": 2, "done": 8, "error": 70}, reps=4)
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    att = _checks(a)["attrition"]
    assert att.passed is False and att.effect == "inconclusive"
    assert a.verdict == "inconclusive"


_HICACHE_OFF = """
  - id: hicache-off
    parent: wedge-confound
    claim: With bf16 and the abort fix, switching HiCache off removes the corruption.
    experiment: agent-repro
    isolates: hicache
    arms: {control: {hicache: "on"}, treatment: {hicache: "off"}}
    hold: {index_k_dtype: bf16, nixl_abort_fix: "on"}
    predicts:
      - {metric: corruption_rate, arm: treatment, at_most: 0.02}
    requires:
      - {metric: error, arm: treatment, equals: 0}
"""


def _oom(page):
    return (f"http 503: KV page {page} has no memory behind it (pool configurator budgeted 716 B/token, "
            "rows are 840 B/token)")


def test_the_checks_quote_why_units_ended_in_error(store, workbench_dir):
    """pdsim's bf16 arms with the abort fix end sessions in error through the pool configurator's sizing (HTTP 503,
    no timeout, no WaitingForInput), and each such session says so in its `error` field; the guard and attrition
    checks said only '48' and '48/80 units did not complete', so the user blamed load. They now quote the units'
    messages, those that differ only in numbers counted as one."""
    registry = registry_with(workbench_dir, _HICACHE_OFF)
    ex = add_execution(store, hypothesis_id="hicache-off")
    ctrl, treat = dict(CONTROL, nixl_abort_fix="on"), dict(CONTROL, nixl_abort_fix="on", hicache="off")
    add_run(store, execution_id=ex, arm="control", variables=ctrl, hypothesis_id="hicache-off",
            outcomes={"leak": 17, "done": 7, "maxrounds": 27, "error": 29}, extra={"waiting_for_input": 0},
            reasons={"error": [_oom(2669)]})
    add_run(store, execution_id=ex, arm="treatment", variables=treat, hypothesis_id="hicache-off",
            outcomes={"done": 5, "maxrounds": 27, "error": 48}, extra={"waiting_for_input": 0},
            reasons={"error": [_oom(2469), _oom(2636), _oom(2460), "timeout"]})
    a = analyze_stored(store, registry, "hicache-off", execution_id=ex)
    assert a.verdict == "invalid"
    said = f'36 "{_oom(2460)}" (long numbers vary), 12 "timeout"'
    guard = _checks(a)["guard: error (treatment) == 0"]
    assert guard.detail == f"violated in 1 run: run 2 (treatment): 48 (their error field: {said})"
    att = _checks(a)["attrition"].detail
    assert f'control: 29/80 units (36.2%) did not complete (their error field: 29 "{_oom(2669)}");' in att
    assert f"treatment: 48/80 units (60.0%) did not complete (their error field: {said});" in att
    assert "has no memory behind it" in a.reasoning


def _guard_on_errors(store, workbench_dir, reasons: list) -> str:
    """The detail of hicache-off's error guard over one treatment run of 48 errored units, whose `error` fields
    take `reasons` in turn."""
    registry = registry_with(workbench_dir, _HICACHE_OFF)
    ex = add_execution(store, hypothesis_id="hicache-off")
    ctrl, treat = dict(CONTROL, nixl_abort_fix="on"), dict(CONTROL, nixl_abort_fix="on", hicache="off")
    add_run(store, execution_id=ex, arm="control", variables=ctrl, hypothesis_id="hicache-off",
            outcomes={"leak": 17, "done": 34, "maxrounds": 29}, extra={"waiting_for_input": 0})
    add_run(store, execution_id=ex, arm="treatment", variables=treat, hypothesis_id="hicache-off",
            outcomes={"done": 5, "maxrounds": 27, "error": 48}, extra={"waiting_for_input": 0},
            reasons={"error": reasons})
    a = analyze_stored(store, registry, "hicache-off", execution_id=ex)
    return _checks(a)["guard: error (treatment) == 0"].detail


def test_messages_that_differ_in_their_status_code_are_quoted_apart(store, workbench_dir):
    """Every run of digits was masked when grouping the messages, so 'http 413: ...' and 'http 503: ...' were
    one reason, quoted by the first with '(numbers vary)'. Only long numbers (ids, pages, ports) are masked."""
    detail = _guard_on_errors(store, workbench_dir, ["http 413: request rejected", "http 503: request rejected",
                                                     _oom(2469), _oom(2636)])
    said = f'24 "{_oom(2469)}" (long numbers vary), 12 "http 413: request rejected", 12 "http 503: request rejected"'
    assert detail == f"violated in 1 run: run 2 (treatment): 48 (their error field: {said})", detail


@pytest.mark.parametrize("db", ["duckdb", "postgresql"])
def test_only_a_text_in_the_reason_field_is_quoted_as_a_reason(request, tmp_path, workbench_dir, db):
    """`error: 0`, `false` or an object in a unit's reason field was quoted as the reason "0", "false" or the
    object's JSON text; only a string says why a unit ended."""
    from workbench.store import open_store

    url = request.getfixturevalue("pg_url") if db == "postgresql" else str(tmp_path / "wb.duckdb")
    store = open_store(url, held=True)
    try:
        detail = _guard_on_errors(store, workbench_dir, [0, False, {"code": 7}, "timeout"])
    finally:
        store.dispose()
    assert detail == 'violated in 1 run: run 2 (treatment): 48 (their error field: 12 "timeout")', detail


def test_counts_of_a_million_units_are_written_in_full(registry):
    """'1e+06 "timeout"', '4.5e+06/5.5e+06 units': the counts of units the attrition check quotes were written as
    floats are."""
    from workbench.analysis.validity import attrition
    from workbench.store.entities import RunData

    def run(total: int, lost: tuple = ()) -> RunData:
        return RunData(id=1, label=None, arm="treatment", status="ok", source="run", execution_id=1,
                       experiment_version=1, replicate=1, block=None, order_index=None, variables={},
                       config_hash=None, fingerprint={}, units_total=total, units_completed=1_000_000,
                       lost_reasons=lost)

    reasons = (("error", "timeout", 1_000_000, False), ("error", "http 503: busy", 2_000_000, False),
               ("error", "a", 1, False), ("error", "b", 1_500_000, False))
    exp = registry.experiments["agent-repro"]
    check, _ = attrition({"treatment": [run(5_500_001, reasons)]}, {}, exp, [])
    assert check["detail"].startswith(
        'treatment: 4,500,001/5,500,001 units (81.8%) did not complete (their error field: 2,000,000 "http 503: busy", '
        '1,500,000 "b", 1,000,000 "timeout" and 1 more in 1 other message)'), check["detail"]
    check, _ = attrition({"treatment": [run(1_000_000)]}, {}, exp, [])
    assert check["detail"] == "treatment: 0/1,000,000 lost", check["detail"]


def test_all_units_errored_and_zero_units(store, registry):
    ex = _fixed(store, treat={"error": 80})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.verdict == "inconclusive"
    assert "measured nothing" in _checks(a)["attrition"].detail
    ex = _fixed(store, treat={})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.verdict == "inconclusive" and "zero units" in a.reasoning


def test_no_runs_unknown_execution_and_metrics_nobody_recorded(store, registry):
    a = analyze_stored(store, registry, "wedge-confound")
    assert a.verdict == "inconclusive" and "No usable run" in a.reasoning
    with pytest.raises(BadInput):
        analyze_stored(store, registry, "wedge-confound", execution_id=999)
    ex = add_execution(store)
    for arm, v in (("control", CONTROL), ("treatment", TREATMENT)):
        add_run(store, execution_id=ex, arm=arm, variables=v, outcomes=None, extra={"waiting_for_input": 0})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.verdict == "inconclusive"
    assert _checks(a)["metrics recorded"].passed is False
    json.dumps(a.to_dict(), allow_nan=False)


def test_runs_of_another_experiment_version_are_left_out(store, registry):
    ex = add_execution(store)
    for arm, v in (("control", CONTROL), ("treatment", TREATMENT)):
        add_run(store, execution_id=ex, arm=arm, variables=v, outcomes={"leak": 13, "done": 67}, version=7,
                extra={"waiting_for_input": 0})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.verdict == "inconclusive"
    assert "another version" in _checks(a)["experiment version"].detail


def test_failed_runs_are_attrition_not_evidence(store, registry):
    ex = _fixed(store, treat={"leak": 13, "done": 67})
    add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, outcomes=None, status="failed", replicate=3)
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.verdict == "falsified"
    assert a.attrition["arms"]["treatment"]["runs_failed"] == 1
    assert "failed" in _checks(a)["attrition"].detail


def test_pooled_analysis_matches_arms_by_recorded_variables(store, registry):
    # With --any-hypothesis, runs of another hypothesis whose variables match an arm count; a geometry-fixed run
    # does not. Without it they answered another question and are not pooled.
    ex = add_execution(store, hypothesis_id="hicache-bf16-race")
    add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, outcomes={"leak": 14, "done": 66},
            extra={"waiting_for_input": 0}, hypothesis_id="hicache-bf16-race")
    add_run(store, execution_id=ex, arm="x", variables=dict(TREATMENT, geometry_fix="on"),
            outcomes={"done": 80}, extra={"waiting_for_input": 0}, hypothesis_id="x")
    a = analyze_stored(store, registry, "wedge-confound", any_hypothesis=True)
    assert a.runs["treatment"] and len(a.runs["treatment"]) == 1
    # judged on the matched treatment run; with no control run the design was not run, so no verdict stands
    assert [j.outcome for j in a.predictions] == ["falsified"] and a.verdict == "inconclusive", a.reasoning
    assert not analyze_stored(store, registry, "wedge-confound").run_ids


def test_overrides_of_the_execution_are_honoured(store, registry):
    wedge_c, wedge_t = dict(CONTROL, causal_model="wedge"), dict(TREATMENT, causal_model="wedge")
    ex = add_execution(store, overrides={"causal_model": "wedge"})
    for r in (1, 2, 3, 4, 5):  # event-free treatment runs of 80: 5 decide under the ICC floor
        add_run(store, execution_id=ex, arm="control", variables=dict(wedge_c, seed=str(r)), replicate=r,
                outcomes={"leak": 10, "error": 30, "done": 40}, extra={"waiting_for_input": 20})
        add_run(store, execution_id=ex, arm="treatment", variables=dict(wedge_t, seed=str(r)), replicate=r,
                outcomes={"done": 80}, extra={"waiting_for_input": 0})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.verdict == "supported", a.reasoning
    # Pooled over the registry'store own (seed-world) arms these runs do not match.
    assert analyze_stored(store, registry, "wedge-confound").verdict == "inconclusive"


def test_aa_mode_reports_the_noise_floor(store, registry):
    ex = add_execution(store, mode="aa")
    for r in (1, 2):
        for arm in ("control", "control_aa"):
            add_run(store, execution_id=ex, arm=arm, variables=CONTROL, replicate=r,
                    outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 0})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.aa["corruption_rate"]["false_alarm"] is False
    assert a.aa["corruption_rate"]["noise_floor"] > 0
    assert _checks(a)["a/a"].passed is True and a.verdict == "inconclusive"
    # the A/A arms are one assignment: the isolation check says so, not that they "differ only in" the variable
    iso = _checks(a)["isolation"]
    assert iso.passed and "differ only in" not in iso.detail and "differ only in" not in a.reasoning
    assert iso.detail.startswith("A/A: both arms set nixl_abort_fix=off")
    ex = add_execution(store, mode="aa")  # an A/A whose second arm recorded another value is not an A/A
    for r in (1, 2):
        add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r,
                outcomes={"leak": 12, "done": 68})
        add_run(store, execution_id=ex, arm="control_aa", variables=TREATMENT, replicate=r,
                outcomes={"leak": 12, "done": 68})
    iso = _checks(analyze_stored(store, registry, "wedge-confound", execution_id=ex))["isolation"]
    assert iso.passed is False and "the A/A arms differ in nixl_abort_fix: control {off}, control_aa {on}" in iso.detail
    ex = add_execution(store, mode="aa")
    for r in (1, 2):
        add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r,
                outcomes={"leak": 30, "done": 50}, extra={"waiting_for_input": 0})
        add_run(store, execution_id=ex, arm="control_aa", variables=CONTROL, replicate=r,
                outcomes={"leak": 2, "done": 78}, extra={"waiting_for_input": 0})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.aa["corruption_rate"]["false_alarm"] is True and a.verdict == "invalid"


def test_drift_between_replicates_is_flagged(store, registry):
    ex = add_execution(store)
    for r, leaks in enumerate((0, 0, 30, 30), start=1):
        add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, replicate=r,
                outcomes={"leak": leaks, "done": 80 - leaks}, extra={"waiting_for_input": 0})
        add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r,
                outcomes={"leak": 10, "done": 70}, extra={"waiting_for_input": 9})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert _checks(a)["drift"].passed is False and a.verdict == "inconclusive"


def test_counts_are_derived_from_units_when_not_stored(store, registry):
    ex = add_execution(store)
    for r in (1, 2):
        for arm, v in (("control", CONTROL), ("treatment", TREATMENT)):
            add_run(store, execution_id=ex, arm=arm, variables=v, replicate=r, store_counts=False,
                    outcomes={"leak": 14, "done": 66}, extra={"waiting_for_input": 0})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert a.predictions[0].k == 28 and a.predictions[0].n == 160 and a.verdict == "falsified"


def test_sequential_decision_continues_then_stops(store, registry):
    # Each replicate draws its own workload seed, as the runner does.
    ex = add_execution(store, mode="sequential")
    add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed="1"), replicate=1,
            outcomes={"leak": 5, "done": 75}, extra={"waiting_for_input": 10})
    add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed="1"), replicate=1,
            outcomes={"done": 80}, extra={"waiting_for_input": 0})
    d = sequential_decision(store, registry, "wedge-confound", execution_id=ex)
    assert (d.stop, d.verdict, d.replicates, d.max_replicates) == (False, "inconclusive", 1, 12)
    for r in (2, 3, 4, 5):  # event-free runs of 80 under the ICC floor decide at replicate 5
        add_run(store, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                outcomes={"leak": 5, "done": 75}, extra={"waiting_for_input": 10})
        add_run(store, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                outcomes={"done": 80}, extra={"waiting_for_input": 0})
        d = sequential_decision(store, registry, "wedge-confound", execution_id=ex)
        assert d.stop is (r == 5), (r, d.reasoning)
    assert d.verdict == "supported", d.reasoning
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    p = a.predictions[0]
    # The ICC floor widens the run-level interval: the label says the counts were divided by its design effect.
    assert a.sequential and p.interval_kind == "confidence sequence 95%, widened by the design effect 1.79"
    assert p.interval[1] <= 0.02  # the shown interval agrees with the decision it reports
    verdict_id = record_verdict(store, a)
    assert store.latest_verdict("wedge-confound").id == verdict_id
    assert store.latest_verdict("wedge-confound").execution_id == ex
    d = sequential_decision(store, registry, "wedge-confound", execution_id=ex, max_replicates=1)
    assert d.stop


def test_sequential_budget_ends_inconclusive(store, registry):
    ex = add_execution(store, mode="sequential")
    for r in (1, 2):
        add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r,
                outcomes={"leak": 5, "done": 75}, extra={"waiting_for_input": 10})
        add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, replicate=r,
                outcomes={"leak": 2, "done": 78}, extra={"waiting_for_input": 0})
    d = sequential_decision(store, registry, "wedge-confound", execution_id=ex, max_replicates=2)
    assert d.stop and d.verdict == "inconclusive" and "budget" in d.reasoning


def test_rendered_configs_are_checked_per_execution(store, registry):
    same = "# serve script\nport=1\n"
    ex = add_execution(store)
    for arm, v in (("control", CONTROL), ("treatment", TREATMENT)):
        add_run(store, execution_id=ex, arm=arm, variables=v, outcomes={"leak": 13, "done": 67},
                extra={"waiting_for_input": 0}, config=same)
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert _checks(a)["config"].passed is False and a.verdict == "invalid"
    ex = add_execution(store)
    for r, port in ((1, 1), (2, 2)):
        add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, replicate=r,
                outcomes={"leak": 13, "done": 67}, extra={"waiting_for_input": 0}, config=f"fix=on\nport={port}\n")
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert _checks(a)["config"].effect == "inconclusive"
    # Two executions on different ports: each is consistent, so pooling them is fine.
    for port in (7, 8):
        ex = add_execution(store)
        for arm, v in (("control", CONTROL), ("treatment", TREATMENT)):
            add_run(store, execution_id=ex, arm=arm, variables=v, outcomes={"leak": 13, "done": 67},
                    extra={"waiting_for_input": 0},
                    config=f"# for arm {arm}\nfix={v['nixl_abort_fix']}\nport={port}\n")
        assert _checks(analyze_stored(store, registry, "wedge-confound", execution_id=ex))["config"].passed is True


def test_more_units_needed_counts_whole_runs_when_runs_are_the_unit(store, registry):
    """Two runs that disagree (0/80 and 28/80) are judged with the runs as the unit (t on 1 df): the
    interval [0.007, 0.87] straddles "<= 0.02". More units inside these runs cannot narrow it; only more
    runs can, so "about 10 more units would decide it" was wrong. The estimate is in whole runs: at this
    rate and design effect, that many more runs of 80 make the run-level interval clear the region, one
    fewer does not."""
    from workbench.analysis import clustered, stats

    a = _runs_that_disagree(store, registry)
    p = a.predictions[0]
    assert p.outcome == "inconclusive" and (p.k, p.n) == (28, 160) and p.interval[0] < 0.02 < p.interval[1]
    more = p.more_runs_needed
    assert more is not None and more >= 1 and p.more_units_needed == 80 * more, (more, p.more_units_needed)

    def clears(runs: int) -> bool:  # as clustered.rate_outcome decides: Wilson's interval and the exact test
        f = runs / 2
        k, n = 28 / p.design_effect * f, 160 / p.design_effect * f
        ci = stats.wilson(k, n, clustered.level_alpha(stats.ALPHA, runs - 1))
        return ci[0] > 0.02 and stats.binomial_pvalue(k, n, (0.0, 0.02), "outside") < stats.ALPHA

    assert clears(2 + more) and not clears(1 + more)
    assert f"about {more} more runs of this size ({80 * more:,} units)" in a.reasoning, a.reasoning


def test_an_interrupted_attempt_that_resume_redid_is_not_attrition(store, registry):
    """--resume redoes the run a kill interrupted; the interrupted row stays as history. It is not a run
    that failed and was left out (the attrition flag said so, beside "1 interrupted attempt(s) redone")."""
    ex = add_execution(store)
    for r in (1, 2):
        add_run(store, execution_id=ex, arm="control", variables={**CONTROL, "seed": str(r)}, replicate=r,
                outcomes={"leak": 12, "done": 60, "error": 8}, extra={"waiting_for_input": 30})
        if r == 2:
            add_run(store, execution_id=ex, arm="treatment", variables={**TREATMENT, "seed": str(r)}, replicate=r,
                    outcomes=None, status="interrupted")
        add_run(store, execution_id=ex, arm="treatment", variables={**TREATMENT, "seed": str(r)}, replicate=r,
                outcomes={"leak": 13, "done": 60, "maxrounds": 7}, extra={"waiting_for_input": 0})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    assert "left out" not in a.reasoning, a.reasoning
    assert a.attrition["arms"]["treatment"]["runs_failed"] == 0
    # An interrupted attempt nothing redid is still attrition.
    ex2 = add_execution(store)
    add_run(store, execution_id=ex2, arm="control", variables={**CONTROL, "seed": "1"}, replicate=1,
            outcomes={"leak": 12, "done": 60, "error": 8}, extra={"waiting_for_input": 30})
    add_run(store, execution_id=ex2, arm="treatment", variables={**TREATMENT, "seed": "1"}, replicate=1,
            outcomes=None, status="interrupted")
    b = analyze_stored(store, registry, "wedge-confound", execution_id=ex2)
    assert b.attrition["arms"]["treatment"]["runs_failed"] == 1
    # told as `wb runs show` tells its status: interrupted, not failed
    assert "treatment: 1 interrupted run was left out" in b.reasoning, b.reasoning


def test_an_arm_without_runs_is_not_a_passed_data_or_isolation_check(store, registry):
    """Runs of the treatment's variables only (pooled from another hypothesis's execution): the data check
    said `[pass] data: control: 0 run(s), treatment: 2 run(s)` and isolation `[pass] arms differ only in …`
    with one arm to look at. Isolation cannot be checked; the prediction on the treatment is still judged, and the
    data check holds the verdict: with no control run the design was not run, so no verdict rests on one arm."""
    ex = add_execution(store)
    for r in (1, 2):
        add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, replicate=r,
                outcomes={"leak": 13, "done": 60, "maxrounds": 7}, extra={"waiting_for_input": 0})
    a = analyze_stored(store, registry, "wedge-confound")
    c = _checks(a)
    assert c["data"].passed is False and c["data"].effect == "inconclusive", c["data"]
    assert "control: 0 runs" in c["data"].detail and "no run matches arm control" in c["data"].detail, c["data"]
    assert c["isolation"].passed is None and "control" in c["isolation"].detail, c["isolation"]
    assert [j.outcome for j in a.predictions] == ["falsified"], a.reasoning  # 26/160 on the treatment alone
    assert a.verdict == "inconclusive", a.reasoning


def test_a_guard_on_a_proportion_reads_in_percent(store, workbench_dir, cli, tmp_path):
    """A guard's value and bound read as every rate wb prints (15.0%, >= 0.2 (20%)), not as fractions (0.15),
    in the verdict's check and in `wb hypothesis show`."""
    from workbench.registry import load_registry

    hyp = workbench_dir / "hypotheses.yaml"
    text = hyp.read_text()
    old = "    requires:\n      - {metric: aborts, arm: treatment, equals: 0,\n"
    assert text.count(old) == 1
    hyp.write_text(text.replace(old, "    requires:\n      - {metric: corruption_rate, arm: control, at_least: 0.2}\n"
                                     "      - {metric: aborts, arm: treatment, equals: 0,\n"))
    ex = _fixed(store, treat={"leak": 13, "done": 67})  # control: 12 of 80 sessions leak, 15.0%, in each run
    a = analyze_stored(store, load_registry(workbench_dir), "wedge-confound", execution_id=ex)
    guard = _checks(a)["guard: corruption_rate (control) >= 0.2 (20%)"]
    assert guard.passed is False and a.verdict == "invalid"
    assert guard.detail.startswith("violated in 2 runs: "), guard.detail
    assert guard.detail.count("(control): 15.0%") == 2 and "0.15" not in guard.detail, guard.detail
    store.dispose()  # the CLI opens the store itself
    code, out, _ = cli("hypothesis", "show", "wedge-confound", "--root", str(workbench_dir),
                       "--db", str(tmp_path / "wb.duckdb"))
    assert code == 0 and "  requires: corruption_rate (control) >= 0.2 (20%)\n" in out, out
    assert "  requires: aborts (treatment) == 0\n" in out, out
    # The hypothesis page lists its guards in the same words.
    assert cli("report", "--root", str(workbench_dir), "--db", str(tmp_path / "wb.duckdb"),
               "--out", str(tmp_path / "site"))[0] == 0
    page = (tmp_path / "site" / "hypotheses" / "wedge-confound.html").read_text()
    assert "<li>corruption_rate (control) &gt;= 0.2 (20%)<" in page, page


def test_more_units_needed_is_the_fewest_that_decide(store, registry):
    # 3/80 against <= 0.02: at this rate 342 units are the fewest that decide (Wilson's interval clears 0.02 from
    # 246 units, the exact binomial test agrees from 342), so 262 more. The search stopped once its bracket was a
    # unit wide and rounded its upper end up: one unit too many.
    from workbench.analysis import stats

    rate = 3 / 80

    def decides(m: int) -> bool:
        return stats.wilson(rate * m, m)[0] > 0.02 and stats.binomial_pvalue(rate * m, m, (0, 0.02), "outside") < 0.05

    assert decides(342) and not decides(341) and stats.wilson(rate * 246, 246)[0] > 0.02
    ex = _fixed(store, treat={"leak": 3, "done": 77}, reps=1)
    (p,) = analyze_stored(store, registry, "wedge-confound", execution_id=ex).predictions
    assert p.outcome == "inconclusive" and p.more_units_needed == 262, p.more_units_needed


def test_a_short_run_under_overrides_is_not_called_a_smoke_run_that_may_set_the_status(store, registry):
    from workbench.analysis.summary import verdict_lines

    # A verdict under --set never sets the status, so "Smoke run: ...; it sets the status only while no run of the
    # planned size has a verdict" told its reader something untrue.
    wedge_c, wedge_t = dict(CONTROL, causal_model="wedge"), dict(TREATMENT, causal_model="wedge")
    ex = add_execution(store, overrides={"causal_model": "wedge"})
    add_run(store, execution_id=ex, arm="control", variables=wedge_c, outcomes={"leak": 10, "done": 70},
            extra={"waiting_for_input": 20})
    add_run(store, execution_id=ex, arm="treatment", variables=wedge_t, outcomes={"done": 80},
            extra={"waiting_for_input": 0})
    a = analyze_stored(store, registry, "wedge-confound", execution_id=ex)
    lines = verdict_lines(registry.hypothesis("wedge-confound"), a)
    assert a.replicates == 1 and not any("Smoke run" in line for line in lines), lines


def _runs_that_disagree(store, registry):
    """wedge-confound over two replicates whose treatment runs disagree: 0/80 and 28/80 leaks."""
    ex = add_execution(store)
    for r, treat in ((1, {"done": 80}), (2, {"leak": 28, "done": 52})):
        add_run(store, execution_id=ex, arm="control", variables={**CONTROL, "seed": str(r)}, replicate=r,
                outcomes={"leak": 12, "done": 60, "error": 8}, extra={"waiting_for_input": 30})
        add_run(store, execution_id=ex, arm="treatment", variables={**TREATMENT, "seed": str(r)}, replicate=r,
                outcomes=treat, extra={"waiting_for_input": 0})
    return analyze_stored(store, registry, "wedge-confound", execution_id=ex)


def test_the_printed_lines_say_only_more_runs_narrow_a_run_level_interval(store, registry):
    # The reasoning and the lines `hypothesis analyze` and `show` print (from the stored judgement) must agree: a
    # run-level interval is narrowed only by more runs, which the stored judgement has to carry to say so.
    from workbench.analysis.results import Analysis
    from workbench.analysis.summary import verdict_lines

    a = _runs_that_disagree(store, registry)
    assert "only more runs narrow it" in a.reasoning, a.reasoning
    h = registry.hypothesis("wedge-confound")
    for shown in (a, Analysis.from_dict(json.loads(json.dumps(a.to_dict())))):
        text = "\n".join(verdict_lines(h, shown))
        assert "only more runs narrow it" in text and "more units at this rate" not in text, text
