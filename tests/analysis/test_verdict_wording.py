"""How the verdict's text words what imported evidence gives: a p-value that underflows, the completed-units
interval, a guard over one run."""

from __future__ import annotations

from workbench.analysis import analyze_stored

from analysis_helpers import abort_fix_hypothesis, analyzed_seed, registry_with

HEADER = "run_id,index_k_dtype,hicache,nixl_abort_fix,sessions,leak,error,done,maxrounds,no_tool,waiting_for_input"


def _analysis(tmp_path, workbench_dir, rows: list[str], hid: str, registry=None):
    from workbench.app import Workbench
    from workbench.registry import load_registry
    from workbench.settings import Settings
    from workbench.store import open_store

    csv = tmp_path / "runs.csv"
    csv.write_text("\n".join([HEADER, *rows]) + "\n")
    db = str(tmp_path / "w.duckdb")
    Workbench.open(Settings(db=db, root=workbench_dir)).import_evidence(csv)
    store = open_store(db)
    try:
        return analyze_stored(store, registry or load_registry(workbench_dir), hid)
    finally:
        store.dispose()


def test_a_fisher_p_that_underflows_reads_below_1e_300_not_0(tmp_path, workbench_dir, cli):
    # 12,000 sessions a run, half of them leaking without the fix and none with it: Fisher's p underflows a float
    # and the text read "(Fisher p = 0)"; --json wrote 0.0. A p-value is never 0: JSON carries the bound 1e-300.
    import json

    reg = registry_with(workbench_dir, abort_fix_hypothesis(
        "diff-big", "The abort fix lowers corruption.", "{metric: corruption_rate, difference: [control, treatment], "
        "at_least: 0.05}"))
    rows = [f"off{i},bf16,on,off,12000,6000,0,6000,0,0,30" for i in (1, 2)] \
        + [f"on{i},bf16,on,on,12000,0,0,12000,0,0,0" for i in (1, 2)]
    a = _analysis(tmp_path, workbench_dir, rows, "diff-big", reg)
    (pred,) = a.predictions
    assert pred.fisher_p == 0.0  # the float underflowed; the text must not say so
    assert "Fisher p < 1e-300" in a.reasoning, a.reasoning
    assert "p = 0)" not in a.reasoning and "p = 0 " not in a.reasoning, a.reasoning
    code, out, err = cli("hypothesis", "analyze", "diff-big", "--json", "--db", str(tmp_path / "w.duckdb"),
                         "--root", str(workbench_dir))
    assert code == 0, err
    (pred,) = json.loads(out)["predictions"]
    assert pred["fisher_p"] == 1e-300, pred


def test_the_completed_units_interval_says_it_was_widened_as_the_main_one_does(tmp_path, workbench_dir):
    # Three over-dispersed runs: the main interval said "widened for between-run spread", the completed-units one
    # gave its (as widened) ends alone, which read as a Wilson interval it is not.
    rows = ["t1,bf16,on,on,80,4,20,56,0,0,0", "t2,bf16,on,on,80,20,20,40,0,0,0", "t3,bf16,on,on,80,30,20,30,0,0,0"]
    a = _analysis(tmp_path, workbench_dir, rows, "wedge-confound")
    (pred,) = a.predictions
    assert "widened for between-run spread" in pred.interval_kind
    text = a.reasoning.split("Over completed units only it is ", 1)[1].split(".", 2)
    completed = ".".join(text[:2])
    assert completed.startswith("54/180 = 30.0% (Wilson 95% (t, 2 df), widened for between-run spread (phi = ")
    assert pred.completed.interval_kind.startswith("Wilson 95% (t, 2 df), widened for between-run spread")
    # The stored form keeps it, so a verdict read back says the same.
    assert a.to_dict()["predictions"][0]["completed"]["interval_kind"] == pred.completed.interval_kind


def test_a_guard_over_one_run_says_one_run(tmp_path, workbench_dir, seed_csv):
    a = analyzed_seed(tmp_path, workbench_dir, seed_csv)
    guard = next(c for c in a.checks if c.name.startswith("guard: aborts"))
    assert guard.detail == "held in the one run of treatment", guard.detail
    assert "run(s)" not in guard.detail


def test_a_guard_over_several_runs_counts_them(tmp_path, workbench_dir):
    seen = 3
    rows = [f"t{i},bf16,on,on,80,14,0,66,0,0,0" for i in range(seen)]
    a = _analysis(tmp_path, workbench_dir, rows, "wedge-confound")
    guard = next(c for c in a.checks if c.name.startswith("guard: aborts"))
    assert guard.detail == f"held in all {seen} runs of treatment", guard.detail


def test_a_guard_on_every_arm_counts_the_runs_of_each(workbench_dir):
    # "held in all 12 runs of every arm" read as 12 runs in each arm, where each arm had 6.
    from workbench.analysis import validity
    from workbench.registry import load_registry
    from workbench.store.entities import RunData

    reg = load_registry(workbench_dir)
    exp = reg.experiments["agent-repro"]
    (guard,) = reg.hypothesis("pool-configurator-overcommit").requires  # aborts == 0 in every arm
    def run(arm: str, i: int) -> RunData:
        return RunData(id=i, label=None, arm=arm, status="ok", source="run", execution_id=1, experiment_version=1,
                       replicate=i, block=None, order_index=None, variables={}, config_hash=None, fingerprint={},
                       metrics={"aborts": 0.0})

    runs = {a: [run(a, i) for i in range(n)] for a, n in (("control", 6), ("treatment", 5))}
    c = validity.guard(guard, runs, exp, ["control", "treatment"])
    assert c["detail"] == "held in every run (6 of control, 5 of treatment)", c
