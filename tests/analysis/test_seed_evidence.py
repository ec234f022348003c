"""The seed's evidence, imported from its CSV, gives the seed's verdict and flags what the seed flagged."""

from __future__ import annotations

import json

import pytest

from workbench.analysis import analyze_stored, record_verdict, scan_confounds

from analysis_helpers import alias_of_a_rate, analyzed_seed


@pytest.fixture
def seeded(tmp_path, workbench_dir, seed_csv):
    from workbench.app import Workbench
    from workbench.registry import load_registry
    from workbench.settings import Settings
    from workbench.store import open_store

    db = str(tmp_path / "seed.duckdb")
    Workbench.open(Settings(db=db, root=workbench_dir)).import_evidence(seed_csv)
    store = open_store(db)
    yield store, load_registry(workbench_dir), db
    store.dispose()


def test_wedge_confound_is_falsified_by_the_post_fix_run(seeded):
    store, reg, _ = seeded
    a = analyze_stored(store, reg, "wedge-confound")
    assert a.verdict == "falsified"
    (pred,) = a.predictions
    assert (pred.k, pred.n) == (14, 80)
    assert [round(x, 3) for x in pred.interval] == [0.107, 0.273]
    assert pred.outcome == "falsified"
    guard = next(c for c in a.checks if c.name.startswith("guard: aborts"))
    assert guard.passed is True
    att = next(c for c in a.checks if c.name == "attrition")
    assert att.passed is False and "40/80" in att.detail
    assert pred.completed.k == 14 and pred.completed.n == 40
    assert pred.completed.estimate == pytest.approx(0.35)
    assert "14/80" in a.reasoning and "[10.7%, 27.3%]" in a.reasoning and "14/40" in a.reasoning
    # One run cannot show between-run variation: its sessions are taken as independent, and the text says so.
    assert pred.method == "binomial" and "one run" in a.reasoning
    assert "P(X >= 14 | n = 80, p = 0.02) = 7.2e-10" in a.reasoning
    # The region keeps the form written in hypotheses.yaml, with its percent beside the rate's 17.5%.
    assert "It predicted corruption_rate (treatment) <= 0.02 (2%); the treatment arm" in a.reasoning, a.reasoning
    assert "entirely outside the predicted region <= 0.02 (2%) (exact binomial" in a.reasoning, a.reasoning
    assert pred.describe == "corruption_rate (treatment) <= 0.02 (2%)"
    # The control arm's rate was never measured (no session count): it stays unknown, not zero.
    assert a.arms["control"].metrics["corruption_rate"].rate is None
    assert "unknown" in a.reasoning
    json.dumps(a.to_dict(), allow_nan=False)


def test_a_prediction_on_another_name_for_the_rate_is_judged_as_the_rate(tmp_path, workbench_dir, seed_csv):
    # leak_share is declared same_as corruption_rate. It was judged as a continuous metric whose per-run values
    # it could not find, so 14 leaks in 80 sessions against "<= 0.02" came out inconclusive ("no run in arm
    # treatment recorded leak_share") instead of falsified.
    alias_of_a_rate(workbench_dir)
    a = analyzed_seed(tmp_path, workbench_dir, seed_csv)
    assert a.verdict == "falsified", a.reasoning
    (pred,) = a.predictions
    assert (pred.k, pred.n) == (14, 80) and pred.outcome == "falsified"
    assert [round(x, 3) for x in pred.interval] == [0.107, 0.273]
    assert (pred.completed.k, pred.completed.n) == (14, 40)
    assert pred.describe == "leak_share (treatment) <= 0.02 (2%)", pred.describe
    assert "It predicted leak_share (treatment) <= 0.02 (2%)" in a.reasoning, a.reasoning


def test_recorded_verdict_is_what_show_reads(seeded):
    store, reg, _ = seeded
    a = analyze_stored(store, reg, "wedge-confound")
    verdict_id = record_verdict(store, a)
    v = store.latest_verdict("wedge-confound")
    assert v.id == verdict_id
    assert v.verdict == "falsified" and v.reasoning == a.reasoning
    assert {c["name"] for c in v.checks} >= {"isolation", "attrition"}


def test_hypotheses_without_data_are_inconclusive_not_invented(seeded):
    store, reg, _ = seeded
    race = analyze_stored(store, reg, "hicache-bf16-race")
    geo = analyze_stored(store, reg, "token-granular-geometry-deployment")
    # The seed recorded HiCache-off runs only before the abort fix; this hypothesis holds the fix on.
    assert race.verdict == "inconclusive"
    assert geo.verdict == "inconclusive" and "No usable run" in geo.reasoning


def test_confound_scan_flags_the_pre_fix_co_occurrence(seeded):
    store, reg, _ = seeded
    findings = [f.to_dict() for f in scan_confounds(store, reg, "wedge-confound")]
    timeouts = next(f for f in findings if f["kind"] == "guard" and f["factor"] == "timeouts")
    assert timeouts["flagged"] and "pre-bf16-hicache" in timeouts["message"]
    assert "nixl_abort_fix=off" in timeouts["message"]
    prop = timeouts["proposal"]
    assert prop["toggle"] == "nixl_abort_fix" and (prop["from"], prop["to"]) == ("off", "on")
    assert prop["hold"] == {"hicache": "on", "index_k_dtype": "bf16"}
    assert prop["registered_as"] == "wedge-confound"
    aborts = next(f for f in findings if f["kind"] == "guard" and "aborts" in f["factor"])
    assert not aborts["flagged"] and "not necessary" in aborts["message"]


def test_cli_confounds_and_analyze(seeded, cli, workbench_dir):
    _, _, db = seeded
    code, out, _ = cli("confounds", "--hypothesis", "wedge-confound", "--db", db, "--root", str(workbench_dir),
                       "--json")
    assert code == 0
    assert any(f["flagged"] and f["factor"] == "timeouts" for f in json.loads(out)["items"])
    code, out, err = cli("confounds", "--hypothesis", "no-such", "--db", db, "--root", str(workbench_dir))
    assert code == 2 and "no-such" in err


def test_cli_analyze_prints_the_seed_verdict(seeded, cli, workbench_dir):
    _, _, db = seeded
    code, out, _ = cli("hypothesis", "analyze", "wedge-confound", "--db", db, "--root", str(workbench_dir), "--json")
    assert code == 0
    d = json.loads(out)
    assert d["verdict"] == "falsified" and d["reasoning"].startswith("wedge-confound is falsified")
    assert any(c["name"] == "attrition" and c["passed"] is False for c in d["checks"])


def test_csv_and_tsv_carry_the_proposed_experiment(seeded, cli, workbench_dir):
    """The text gives a flagged guard's "Proposed experiment" and JSON its `proposal`; `--format csv|tsv` left it
    out. Both end with a `proposal` column (empty where a finding proposes none), csv quoting it."""
    import csv
    import io

    _, _, db = seeded
    args = ("confounds", "--db", db, "--root", str(workbench_dir))
    code, out, _ = cli(*args, "--json")
    assert code == 0
    proposals = {(f["outcome"], f["kind"], f["factor"]): (f["proposal"] or {}).get("text") or ""
                 for f in json.loads(out)["items"]}
    assert any("," in text for text in proposals.values()), proposals
    code, out, _ = cli(*args, "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {(r["outcome"], r["kind"], r["factor"]): r["proposal"] for r in rows} == proposals
    code, out, _ = cli(*args, "--format", "tsv")
    assert code == 0
    header, *lines = [line.split("\t") for line in out.splitlines()]
    assert header[-1] == "proposal" and all(len(cells) == len(header) for cells in lines)
    assert {(c[2], c[3], c[4]): c[-1] for c in lines} == proposals


def test_a_hypothesis_predicting_the_guards_rate_falls_proposes_its_variable(seeded, workbench_dir):
    """On the seed's evidence error co-occurs with leak, and the scan said "No recorded variable is known to remove
    error" though pool-configurator-overcommit predicts error_rate falls from >= 0.1 (control) to <= 0.02 with
    pool_configurator_fix on (treatment), holding what those runs held: that variable is proposed, with the
    hypothesis named. A prediction that does not claim the rate falls is no such knowledge."""
    from workbench.registry import load_registry

    store, reg, _ = seeded
    error = next(f for f in scan_confounds(store, reg) if f.kind == "guard" and f.factor == "error")
    prop = error.proposal
    assert error.flagged and (prop["toggle"], prop["from"], prop["to"], prop["registered_as"]) == (
        "pool_configurator_fix", "off", "on", "pool-configurator-overcommit"), prop
    assert prop["text"].startswith("Toggle pool_configurator_fix (off -> on) while holding hicache=on, "
                                   "index_k_dtype=bf16, nixl_abort_fix=on; record error and corruption_rate"), prop
    assert "error_rate (treatment) <= 0.02" in prop["why"], prop
    timeouts = next(f for f in scan_confounds(store, reg) if f.kind == "guard" and f.factor == "timeouts")
    assert timeouts.proposal["toggle"] is None  # no hypothesis claims a variable removes timeouts
    yaml_path = workbench_dir / "hypotheses.yaml"
    text = yaml_path.read_text()
    falls = "      - {metric: error_rate, arm: treatment, at_most: 0.02,"
    assert falls in text
    yaml_path.write_text(text.replace(falls, "      - {metric: error_rate, arm: treatment, at_most: 0.2,"))
    error = next(f for f in scan_confounds(store, load_registry(workbench_dir))
                 if f.kind == "guard" and f.factor == "error")
    assert error.proposal["toggle"] is None, error.proposal  # <= 0.2 is not below the control's >= 0.1
