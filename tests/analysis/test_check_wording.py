"""The fingerprint and config checks' details say what they counted: every value they count is named or counted
among the rest, and one execution reads as one."""

from __future__ import annotations

import json

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
    assert checks["looks"].startswith(f"pooled over 2 executions ({ids[0]}, {ids[1]} of wedge-confound): "
                                      "exploratory."), checks["looks"]


def _pooled_store(store) -> tuple[int, int]:
    """An execution of wedge-confound and one of another hypothesis whose arms are the same two configurations."""
    ids = []
    for hid in ("wedge-confound", "pool-configurator-overcommit"):
        ex = add_execution(store, hypothesis_id=hid)
        ids.append(ex)
        for r in (1, 2):
            add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r, hypothesis_id=hid,
                    outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 30})
            add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, replicate=r, hypothesis_id=hid,
                    outcomes={"leak": 13, "done": 67}, extra={"waiting_for_input": 0})
    return ids[0], ids[1]


def test_a_pooled_analysis_reads_its_own_hypothesis_runs_unless_told_otherwise(store, registry):
    """Another hypothesis's runs were pooled into wedge-confound's verdict because their variables matched an arm:
    its runs answered another question. They are pooled only when asked (`--any-hypothesis`), and the check then
    names which executions of which hypotheses went in."""
    own, other = _pooled_store(store)
    mine = analyze_stored(store, registry, "wedge-confound")
    assert {r.execution_id for r in store.runs() if r.id in mine.run_ids} == {own}
    assert mine.check("looks") is None  # one execution: one look
    every = analyze_stored(store, registry, "wedge-confound", any_hypothesis=True)
    assert {r.execution_id for r in store.runs() if r.id in every.run_ids} == {own, other}
    assert every.check("looks").detail.startswith(
        f"pooled over 2 executions ({own} of wedge-confound; {other} of pool-configurator-overcommit): exploratory.")


def test_analyze_pools_other_hypotheses_runs_only_with_any_hypothesis(cli, workbench_dir, tmp_path):
    from workbench.store import open_store

    db = tmp_path / "pooled.duckdb"
    s = open_store(str(db))
    try:
        own, other = _pooled_store(s)
    finally:
        s.dispose()
    common = ("wedge-confound", "--no-record", "--db", str(db), "--root", str(workbench_dir))
    code, out, err = cli("hypothesis", "analyze", *common)
    assert code == 0, err
    assert "pooled over" not in out and "pool-configurator-overcommit" not in out, out
    code, out, err = cli("hypothesis", "analyze", *common, "--any-hypothesis")
    assert code == 0, err
    assert f"pooled over 2 executions ({own} of wedge-confound; {other} of pool-configurator-overcommit)" in out, out
    code, out, err = cli("hypothesis", "analyze", *common, "--any-hypothesis", "--json")
    assert json.loads(out)["any_hypothesis"] is True


def test_the_site_rereads_a_pooled_verdict_over_the_runs_it_rested_on_also_one_recorded_before_the_flag(
        store, registry):
    """A pooled verdict recorded before `any_hypothesis` was written down pooled other hypotheses' runs too: the
    site's fresh analysis must read the runs its evidence names, not the hypothesis's own only."""
    from dataclasses import replace

    from workbench.analysis import record_verdict
    from workbench.report.site import gather

    _pooled_store(store)
    every = analyze_stored(store, registry, "wedge-confound", any_hypothesis=True)
    record_verdict(store, replace(every, any_hypothesis=False))  # as a verdict of an older wb reads
    _, analyses, _, _ = gather(store, registry, ["wedge-confound"], confounds=False)
    shown, _ = analyses["wedge-confound"]
    assert set(shown.run_ids) == set(every.run_ids), (shown.run_ids, every.run_ids)


def test_with_no_runs_of_its_own_the_error_says_which_runs_it_looked_at(cli, workbench_dir, tmp_path):
    # Another hypothesis's runs match wedge-confound's arms: "no stored run matches its arms" was untrue; and where
    # --any-hypothesis was given already, the hint must not offer it again.
    from workbench.store import open_store

    db = tmp_path / "other.duckdb"
    s = open_store(str(db))
    try:
        ex = add_execution(s, hypothesis_id="pool-configurator-overcommit")
        add_run(s, execution_id=ex, arm="control", variables=CONTROL, hypothesis_id="pool-configurator-overcommit",
                outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 30})
    finally:
        s.dispose()
    common = ("--db", str(db), "--root", str(workbench_dir), "--no-record")
    code, out, err = cli("hypothesis", "analyze", "wedge-confound", *common)
    assert code == 2 and err.startswith("Error: no runs of wedge-confound to analyze (no run of its own and no "
                                        "imported run of experiment agent-repro matches its arms)"), err
    assert "--any-hypothesis also pools" in err, err
    code, out, err = cli("hypothesis", "analyze", "token-granular-geometry-deployment", *common, "--any-hypothesis")
    assert code == 2 and "(no stored run of experiment " in err, err
    assert "--any-hypothesis" not in err, err


def test_runs_of_an_arm_no_prediction_reads_record_no_verdict(cli, workbench_dir, tmp_path):
    # `analyze --any-hypothesis` on pool-configurator-overcommit's control runs alone for wedge-confound (its
    # treatment arm has none) recorded "inconclusive", which became wedge-confound's status: a verdict from nothing
    # it predicts. It is refused as no evidence; --no-record still shows the analysis.
    from workbench.store import open_store

    db = tmp_path / "other.duckdb"
    s = open_store(str(db))
    try:
        ex = add_execution(s)
        add_run(s, execution_id=ex, arm="control", variables=CONTROL, outcomes={"leak": 12, "done": 68},
                extra={"waiting_for_input": 30})
    finally:
        s.dispose()
    common = ("--db", str(db), "--root", str(workbench_dir))
    code, out, err = cli("hypothesis", "analyze", "wedge-confound", *common)
    assert code == 2 and "matches arm treatment, which every prediction reads" in err, (out, err)
    assert "nothing was recorded" in err and "Traceback" not in err, err
    code, out, err = cli("hypothesis", "show", "wedge-confound", "--json", *common)
    assert code == 0 and json.loads(out)["status"] in ("open", "declared"), out
    code, out, err = cli("hypothesis", "analyze", "wedge-confound", "--no-record", *common)
    assert code == 0 and out.startswith("wedge-confound: inconclusive"), (out, err)


def _one_arm_store(tmp_path, *, treatment_status=None, hypothesis_id="wedge-confound"):
    from workbench.store import open_store

    db = tmp_path / "arms.duckdb"
    s = open_store(str(db))
    try:
        ex = add_execution(s, hypothesis_id=hypothesis_id)
        for r in (1, 2):
            add_run(s, execution_id=ex, arm="control", variables=dict(CONTROL, seed=str(r)), replicate=r,
                    outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 30}, hypothesis_id=hypothesis_id)
            if treatment_status:
                add_run(s, execution_id=ex, arm="treatment", variables=dict(TREATMENT, seed=str(r)), replicate=r,
                        outcomes=None, status=treatment_status, hypothesis_id=hypothesis_id)
    finally:
        s.dispose()
    return db


def test_a_prediction_on_every_arm_is_judged_in_the_arms_that_have_runs(cli, workbench_dir, tmp_path):
    # A prediction that names no arm is judged in each arm: the control's 24/160 leaks are evidence on "<= 2% in
    # every arm" (falsified there) though the treatment has no run, so the analysis is recorded, not refused. The
    # verdict waits for the arm the design has and no run matched: inconclusive, as the data check says.
    from analysis_helpers import abort_fix_hypothesis, registry_with

    registry_with(workbench_dir, abort_fix_hypothesis("low-everywhere", "No arm leaks more than 2%.",
                                                      "{metric: corruption_rate, at_most: 0.02}"))
    db = _one_arm_store(tmp_path, hypothesis_id="low-everywhere")
    common = ("--db", str(db), "--root", str(workbench_dir))
    code, out, err = cli("hypothesis", "analyze", "low-everywhere", *common)
    assert code == 0 and "[falsified] predicts corruption_rate (control) <= 0.02" in out, (out, err)
    verdict = out.split("\n", 1)[0].removeprefix("low-everywhere: ")
    assert verdict == "inconclusive" and "; no run matches arm treatment: the design was not run" in out, out
    code, out, err = cli("hypothesis", "show", "low-everywhere", "--json", *common)
    assert json.loads(out)["status"] == verdict, (verdict, out)


def test_failed_runs_of_the_predicted_arm_are_runs_that_match_it(cli, workbench_dir, tmp_path):
    # Every treatment run failed: runs matched the arm the prediction reads, so the analysis is recorded (what the
    # failed runs make of it), not refused as "no run matches arm treatment".
    db = _one_arm_store(tmp_path, treatment_status="failed")
    common = ("--db", str(db), "--root", str(workbench_dir))
    code, out, err = cli("hypothesis", "analyze", "wedge-confound", *common)
    assert code == 0 and "matches arm treatment" not in err, (out, err)
    code, out, err = cli("hypothesis", "show", "wedge-confound", "--json", *common)
    assert json.loads(out)["status"] not in ("open", "declared"), out
