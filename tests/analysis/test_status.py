"""One rule for a hypothesis's status, and every view agrees with it: `wb hypothesis list/show`, `wb review
list`, `wb report --format md` and the HTML board, over a real DuckDB store.

An A/A execution checks the apparatus and never sets the status; `wb hypothesis analyze` (pooled) is
exploratory and does not replace a controlled verdict nor make its approval stale; a verdict under `--set`
overrides is listed apart, beside the status, never as it."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from workbench.analysis.status import current_status
from workbench.store.entities import VerdictRecord

from analysis_helpers import CONTROL, TREATMENT, add_execution, add_run, alias_of_a_rate

HID = "wedge-confound"


@pytest.fixture(autouse=True)
def _migrated_store(tmp_path, _empty_store):
    """tmp_path/wb.duckdb, the store most tests here fill, starts as a copy of the session's migrated empty store,
    as the `store` fixture's does: the same file wb makes on first use, without migrating it again per test."""
    import shutil

    shutil.copy(_empty_store, tmp_path / "wb.duckdb")


def _record(db, word: str, execution_id: int | None, mode: str = "fixed") -> None:
    from workbench.store import open_store

    store = open_store(str(db))
    try:
        run_ids = [r.id for r in store.runs(execution_id=execution_id)] if execution_id is not None else None
        store.add_verdict(hypothesis_id=HID, verdict=word, reasoning=f"{word} ({mode})", checks=[],
                          details={"mode": mode, "execution_id": execution_id}, execution_id=execution_id,
                          hypothesis_sha256=None, evidence_run_ids=run_ids)
    finally:
        store.dispose()


def _execution(db, *, mode: str = "fixed", overrides: dict[str, str] | None = None) -> int:
    from workbench.store import open_store

    store = open_store(str(db))
    try:
        ex = add_execution(store, mode=mode, overrides=overrides)
        for r in (1, 2):
            add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r,
                    outcomes={"leak": 5, "done": 35})
            add_run(store, execution_id=ex, arm="control_aa" if mode == "aa" else "treatment",
                    variables=CONTROL if mode == "aa" else TREATMENT, replicate=r, outcomes={"leak": 5, "done": 35})
        return ex
    finally:
        store.dispose()


def _views(cli, db, root) -> dict[str, str]:
    """The status as each view shows it."""
    common = ("--db", str(db), "--root", str(root))
    code, out, err = cli("hypothesis", "list", "--json", *common)
    assert code == 0, err
    row = next(i for i in json.loads(out)["items"] if i["id"] == HID)
    _, show, _ = cli("hypothesis", "show", HID, *common)
    _, md, _ = cli("report", "--format", "md", *common)
    md_row = next(line for line in md.splitlines() if line.startswith(f"| `{HID}`"))
    code, _, err = cli("report", "--out", str(root / "site"), *common)
    assert code == 0, err
    html = (root / "site" / "index.html").read_text()
    # The column of HID's own card (its title's link), not of a child's card that names it as parent.
    column = re.search(r'<section class="column status-(\w+)">(?:(?!</section>).)*?<h3><a href="hypotheses/'
                       + HID + r'\.html"', html, re.S)
    page = (root / "site" / "hypotheses" / f"{HID}.html").read_text()
    code, out, err = cli("review", "list", HID, "--json", *common)
    assert code == 0, err
    review = json.loads(out)["items"][0]
    _, review_text, _ = cli("review", "list", HID, *common)
    _, review_csv, _ = cli("review", "list", "--format", "csv", *common)
    return {"review": review["status"], "review_note": review["status_note"], "review_text": review_text,
            "review_csv": review_csv, "list": row["status"], "note": row.get("status_note"),
            "basis": row.get("status_basis"),
            "show": re.search(r"status: (\w+)", show).group(1), "show_text": show,
            "md": md_row.split("|")[2].strip(), "board": column.group(1) if column else "",
            "page": re.search(r'<h1>[^<]*<span class="badge (\w+)">', page).group(1), "html": html}


def _approved_falsified(cli, tmp_path, root):
    """A store whose controlled execution falsified HID, approved by a reviewer: (store file, workbench)."""
    db = tmp_path / "wb.duckdb"
    _record(db, "falsified", _execution(db))
    code, _, err = cli("review", HID, "--approve", "-m", "reproduced", "--as", "ada", "--db", str(db),
                       "--root", str(root))
    assert code == 0, err
    return db, root


def test_aa_exploratory_and_override_verdicts_never_replace_the_controlled_status(cli, workbench_dir, tmp_path):
    db, root = _approved_falsified(cli, tmp_path, workbench_dir)
    # An A/A execution, an exploratory pooled re-analysis of the same runs, and a run in a changed world.
    _record(db, "inconclusive", _execution(db, mode="aa"), mode="aa")
    code, out, err = cli("hypothesis", "analyze", HID, "--db", str(db), "--root", str(root))
    assert code == 0, err
    assert "Recorded as exploratory: the status stays falsified (the verdict of execution 1)" in out
    _record(db, "supported", _execution(db, overrides={"causal_model": "wedge"}))
    v = _views(cli, db, root)
    assert [v["list"], v["show"], v["md"].split(" ")[0], v["board"], v["page"]] == ["falsified"] * 5, v
    assert v["basis"] == "controlled"
    assert v["note"] == "under --set causal_model=wedge: supported"
    assert "(under --set causal_model=wedge: supported)" in v["show_text"]
    assert "under --set causal_model=wedge: supported" in v["md"]
    assert "under --set causal_model=wedge: supported" in v["html"]
    # wb review list shows the same status and note, in its text, JSON and CSV.
    assert (v["review"], v["review_note"]) == ("falsified", v["note"]), v
    assert "(under --set causal_model=wedge: supported)" in v["review_text"], v["review_text"]
    assert "under --set causal_model=wedge: supported" in v["review_csv"], v["review_csv"]
    code, out, _ = cli("review", "list", HID, "--json", "--db", str(db), "--root", str(root))
    state = json.loads(out)["items"][0]
    assert state["state"] == "approved" and state["current_verdict"]["verdict"] == "falsified", state


def test_a_pooled_verdict_alone_sets_the_status_marked_exploratory(cli, workbench_dir, tmp_path, seed_csv):
    db = tmp_path / "wb.duckdb"
    common = ("--db", str(db), "--root", str(workbench_dir))
    assert cli("import", "evidence", str(seed_csv), *common)[0] == 0
    code, out, _ = cli("hypothesis", "analyze", HID, "--json", *common)
    word = json.loads(out)["verdict"]
    code, out, _ = cli("hypothesis", "list", "--json", *common)
    row = next(i for i in json.loads(out)["items"] if i["id"] == HID)
    assert (row["status"], row["status_basis"]) == (word, "exploratory")
    assert row["status_note"].startswith("exploratory")
    _, md, _ = cli("report", "--format", "md", *common)
    assert f"| `{HID}` | {word} (exploratory" in md


def _v(vid: int, word: str, execution_id: int | None, mode: str = "fixed") -> VerdictRecord:
    return VerdictRecord(id=vid, hypothesis_id="h", execution_id=execution_id, verdict=word, reasoning="", checks=[],
                         details={"mode": mode}, created_at=f"2026-12-01T10:{vid:02d}:00+00:00")


def test_current_status_rule():
    overrides = {1: {}, 2: {}, 3: {"seed": "7"}, 4: {}}
    assert current_status("open", [], overrides).status == "open"
    pooled = current_status("open", [_v(1, "supported", None)], overrides)
    assert pooled.exploratory and pooled.status == "supported"
    st = current_status("open", [_v(1, "supported", None), _v(2, "falsified", 1), _v(3, "inconclusive", 2, "aa"),
                                 _v(4, "supported", None), _v(5, "supported", 3)], overrides)
    assert (st.status, st.verdict.id, st.exploratory) == ("falsified", 2, False)
    assert [o.describe() for o in st.under_overrides] == ["under --set seed=7: supported"]
    assert current_status("open", [_v(2, "falsified", 1), _v(6, "supported", 4)], overrides).status == "supported"


def test_a_status_judged_on_predictions_edited_since_says_so_in_every_view(cli, workbench_dir, tmp_path, seed_csv):
    # The verdict judged "corruption_rate (treatment) <= 0.02"; the region was widened to 0.9 afterwards. Every
    # view kept saying falsified beside the new prediction (17.5% is inside it) without a word.
    db = tmp_path / "wb.duckdb"
    common = ("--db", str(db), "--root", str(workbench_dir))
    assert cli("import", "evidence", str(seed_csv), *common)[0] == 0
    assert cli("hypothesis", "analyze", HID, *common)[0] == 0
    assert "edited since" not in (_views(cli, db, workbench_dir)["note"] or "")
    path = workbench_dir / "hypotheses.yaml"
    text = path.read_text()
    old = "{metric: corruption_rate, arm: treatment, at_most: 0.02,"
    assert old in text
    path.write_text(text.replace(old, "{metric: corruption_rate, arm: treatment, at_most: 0.9,", 1))
    v = _views(cli, db, workbench_dir)
    # Both sides in the verdict's words: a rate's region as written, with its percent beside it.
    mark = ("predictions edited since the verdict: it judged corruption_rate (treatment) <= 0.02 (2%), the hypothesis "
            "now predicts corruption_rate (treatment) <= 0.9 (90%): re-run or re-analyze")
    assert v["list"] == "falsified" and mark in v["note"], v["note"]
    assert "  predicts: corruption_rate (treatment) <= 0.9 (90%)\n" in v["show_text"], v["show_text"]
    assert mark in v["show_text"] and mark in v["md"] and mark.replace("<", "&lt;") in v["html"]
    assert v["review"] == "falsified" and v["review_note"] == v["note"], v
    assert f"({mark})" in v["review_text"] and mark in v["review_csv"], v["review_text"]


def test_the_edited_mark_offers_a_re_analysis_only_where_it_would_replace_the_status():
    from workbench.analysis.status import current_status

    judged = {"predictions": [{"metric": "stale_rate", "bounds": [0.3, None],
                               "describe": "stale_rate (treatment) >= 0.3"}]}
    now = [("stale_rate", 0.5, None, "stale_rate (treatment) >= 0.5")]
    controlled = VerdictRecord(id=1, hypothesis_id="h", execution_id=1, verdict="falsified", reasoning="", checks=[],
                               details=judged, created_at="2026-12-01T10:00:00+00:00")
    st = current_status("open", [controlled], {1: {}}, now)
    assert st.note() == ("predictions edited since the verdict: it judged stale_rate (treatment) >= 0.3, the "
                         "hypothesis now predicts stale_rate (treatment) >= 0.5: re-run")
    assert current_status("open", [controlled], {1: {}}, [("stale_rate", 0.3, float("inf"), "x")]).note() == ""
    pooled = VerdictRecord(**{**controlled.__dict__, "execution_id": None})
    assert current_status("open", [pooled], {}, now).note().endswith(": re-run or re-analyze")


def test_verdict_times_written_with_and_without_a_zone_sort_together(store):
    # The status sorts verdicts by time; a naive and an aware datetime cannot be compared. The store's columns
    # are TIMESTAMP WITH TIME ZONE, so a naive time written (taken as the session's zone) is read back aware:
    # a status over both kinds sorts, and the newest wins.
    from datetime import datetime, timezone

    from workbench.analysis.status import stored_statuses
    from workbench.store import records

    with store.session() as s:
        records.add_verdict(s, hypothesis_id=HID, verdict="supported", reasoning="",
                            created_at=datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc))
        records.add_verdict(s, hypothesis_id=HID, verdict="falsified", reasoning="",
                            created_at=datetime(2026, 12, 1, 11, 0))  # naive: a bundle or an old writer
        s.commit()
    assert all(datetime.fromisoformat(v.created_at).tzinfo is not None for v in store.verdicts())
    assert stored_statuses(store, {HID: "open"})[HID].status == "falsified"


def test_an_execution_that_measured_nothing_is_invalid_and_does_not_replace_the_status(cli, workbench_dir, tmp_path):
    """An execution whose every run failed (the service never came up, the units were garbage) tested nothing
    about the claim: its verdict is invalid, and it neither replaces a controlled status nor makes a review of
    it stale. The status carries a mark naming it. It used to read "inconclusive" and became the status."""
    from workbench.analysis import analyze_stored, record_verdict
    from workbench.registry import load_registry
    from workbench.store import open_store

    db, root = _approved_falsified(cli, tmp_path, workbench_dir)
    store = open_store(str(db))
    try:
        broken = add_execution(store)
        for arm, v in (("control", CONTROL), ("treatment", TREATMENT)):
            add_run(store, execution_id=broken, arm=arm, variables=v, outcomes=None, status="failed")
        a = analyze_stored(store, load_registry(root), HID, execution_id=broken)
        assert a.verdict == "invalid", a.reasoning
        assert "No usable run" in a.reasoning and "2 runs failed" in a.reasoning
        record_verdict(store, a)
    finally:
        store.dispose()
    v = _views(cli, db, root)
    assert [v["list"], v["show"], v["md"].split(" ")[0], v["board"], v["page"], v["review"]] == ["falsified"] * 6, v
    assert v["note"] == f"execution {broken} came out invalid: not the status", v["note"]
    assert v["note"] in v["show_text"] and v["note"] in v["md"] and v["note"] in v["html"]
    code, out, _ = cli("review", "list", HID, "--json", "--db", str(db), "--root", str(root))
    assert json.loads(out)["items"][0]["state"] == "approved"


def test_an_invalid_verdict_is_the_status_only_where_nothing_else_is():
    overrides = {1: {}, 2: {}}
    assert current_status("open", [_v(1, "invalid", 1)], overrides).status == "invalid"
    st = current_status("open", [_v(1, "falsified", 1), _v(2, "invalid", 2)], overrides)
    assert (st.status, st.verdict.id) == ("falsified", 1)
    assert st.notes() == ["execution 2 came out invalid: not the status"]
    st = current_status("open", [_v(1, "falsified", 1), _v(2, "invalid", 2), _v(3, "supported", None)], overrides)
    assert (st.status, st.verdict.id) == ("falsified", 1)
    assert current_status("open", [_v(1, "invalid", 1), _v(2, "supported", 2)], overrides).status == "supported"


def test_analyze_with_no_runs_records_nothing_and_says_so(cli, workbench_dir, tmp_path, seed_csv):
    # No evidence is no verdict: an "inconclusive" recorded from nothing became the status, hiding the declared one.
    db = workbench_dir / "wb.duckdb"  # the workbench's own store, not there yet (a store elsewhere: a typo, exit 2)
    common = ("--db", str(db), "--root", str(workbench_dir))
    code, out, err = cli("hypothesis", "analyze", HID, *common)
    assert code == 2 and out == "", out
    assert err.startswith(f"Error: no runs of {HID} to analyze"), err
    assert "nothing was recorded" in err and f"wb hypothesis run {HID}" in err, err
    assert not db.exists()  # no store is created to hold nothing
    # A store with runs of the experiment, none of them matching this hypothesis's arms (the seed ran
    # HiCache off only before the abort fix): the same answer, and the status stays the declared one.
    assert cli("import", "evidence", str(seed_csv), *common)[0] == 0
    geo = "token-granular-geometry-deployment"
    for flags in ((), ("--no-record",), ("--json",)):
        code, out, err = cli("hypothesis", "analyze", geo, *flags, *common)
        assert code == 2 and f"Error: no runs of {geo} to analyze" in err, (flags, out, err)
    code, out, _ = cli("hypothesis", "list", "--json", *common)
    row = next(i for i in json.loads(out)["items"] if i["id"] == geo)
    assert (row["status"], row["status_basis"]) == ("open", "declared"), row
    code, out, _ = cli("hypothesis", "show", geo, *common)
    assert "status: open" in out and "verdict: none yet" in out, out


def test_show_reads_an_alias_of_a_proportion_in_percent(cli, workbench_dir):
    # A metric declared as another name for a proportion (same_as) reads in percent wherever wb prints rates;
    # `hypothesis show` decided from the declared kind alone and printed "<= 0.02" with no percent beside it.
    alias_of_a_rate(workbench_dir)
    code, out = cli("hypothesis", "show", HID, "--root", str(workbench_dir))[:2]
    assert code == 0, out
    assert "  predicts: leak_share (treatment) <= 0.02 (2%)\n" in out, out


def test_the_page_reads_an_alias_of_a_proportion_in_percent(cli, workbench_dir, tmp_path, seed_csv):
    # The hypothesis page judged by the declared kind: the alias's Wilson interval read "[0.107, 0.273]" in its
    # chart card and its prediction row, beside corruption_rate's "[10.7%, 27.3%]" for the same 14 of 80.
    alias_of_a_rate(workbench_dir)
    common = ("--db", str(tmp_path / "wb.duckdb"), "--root", str(workbench_dir))
    assert cli("import", "evidence", str(seed_csv), *common)[0] == 0
    assert cli("hypothesis", "analyze", HID, *common)[0] == 0
    assert cli("report", "--out", str(tmp_path / "site"), *common)[0] == 0
    page = (tmp_path / "site" / "hypotheses" / f"{HID}.html").read_text()
    assert page.count(">[10.7%, 27.3%] Wilson 95%<") == 2 and "[0.107, 0.273]" not in page, page
    # The prediction row: judged as the rate it names (it was judged as a median that no run recorded).
    assert ("<td>leak_share (treatment) &lt;= 0.02 (2%)</td><td>14/80 = 17.5% [10.7%, 27.3%] Wilson 95%; 1 run</td>"
            "<td>falsified</td>") in page, page


def _analyzed_execution(db, root, replicates: int, treatment: dict[str, int]) -> int:
    """An execution of HID with `replicates` replicates per arm, analysed and recorded as `wb hypothesis run` does."""
    from workbench.analysis.stored import analyze_stored, record_verdict
    from workbench.registry import load_registry
    from workbench.store import open_store

    store = open_store(str(db))
    try:
        ex = add_execution(store)
        for r in range(1, replicates + 1):
            add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r,
                    outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 30})
            add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, replicate=r, outcomes=treatment,
                    extra={"waiting_for_input": 0})
        record_verdict(store, analyze_stored(store, load_registry(root), HID, execution_id=ex), execution_id=ex)
        return ex
    finally:
        store.dispose()


def test_a_smoke_run_after_a_full_one_is_listed_beside_the_status_not_as_it(cli, workbench_dir, tmp_path):
    """A one-replicate smoke run made after the planned three-replicate run took the status: the newest controlled
    run won whatever its size. A run with fewer replicates than the hypothesis plans is shown as such and sets the
    status only while no run met the plan; a review of the full run's verdict stays current."""
    db, root = tmp_path / "wb.duckdb", workbench_dir
    common = ("--db", str(db), "--root", str(root))
    _analyzed_execution(db, root, 3, {"leak": 13, "done": 67})
    assert cli("review", HID, "--approve", "-m", "reproduced", "--as", "ada", *common)[0] == 0
    smoke = _analyzed_execution(db, root, 1, {"done": 80})
    code, out, err = cli("hypothesis", "list", "--json", *common)
    assert code == 0, err
    row = next(i for i in json.loads(out)["items"] if i["id"] == HID)
    assert (row["status"], row["status_basis"]) == ("falsified", "controlled"), row
    assert row["status_note"] == f"execution {smoke} (smoke: 1 of 3 planned replicates): inconclusive, not the status"
    _, show, _ = cli("hypothesis", "show", HID, *common)
    assert "status: falsified" in show and "(smoke: 1 of 3 planned replicates)" in show, show
    code, out, _ = cli("review", "list", HID, "--json", *common)
    item = json.loads(out)["items"][0]
    assert item["state"] == "approved" and item["current_verdict"]["verdict"] == "falsified", item


def test_a_smoke_run_alone_sets_the_status_marked_so(cli, workbench_dir, tmp_path):
    db, root = tmp_path / "wb.duckdb", workbench_dir
    _analyzed_execution(db, root, 1, {"leak": 13, "done": 67})
    code, out, err = cli("hypothesis", "list", "--json", "--db", str(db), "--root", str(root))
    assert code == 0, err
    row = next(i for i in json.loads(out)["items"] if i["id"] == HID)
    assert row["status_basis"] == "controlled" and row["status"] != "open", row
    assert row["status_note"].startswith("smoke: 1 of 3 planned replicates"), row
    assert row["status_smoke"] is True, row  # a script reads it without parsing the note
    code, out, err = cli("hypothesis", "analyze", HID, "--no-record", "--json", "--db", str(db), "--root", str(root))
    assert code == 0 and "smoke" not in json.loads(out), out  # a pooled analysis is no smoke run
    _, show, _ = cli("hypothesis", "show", HID, "--db", str(db), "--root", str(root))
    assert "  Smoke run: 1 of 3 planned replicates; it sets the status only while no run of the planned size" in show


def test_a_smoke_run_is_the_status_over_a_planned_run_that_came_out_invalid():
    # An invalid verdict is the status only where nothing else is: a planned run that could not test the claim
    # outranked a later smoke run that could, and the status stayed "invalid".
    planned = replace(_v(1, "invalid", 1), details={"mode": "fixed", "replicates": 3, "planned_replicates": 3})
    smoke = replace(_v(2, "falsified", 2), details={"mode": "fixed", "replicates": 1, "planned_replicates": 3})
    st = current_status("open", [planned, smoke], {1: {}, 2: {}})
    assert (st.status, st.verdict.id) == ("falsified", 2), st
    assert st.notes() == ["smoke: 1 of 3 planned replicates"], st.notes()


def _execution_without_a_recorded_plan(db, root, replicates: int, treatment: dict[str, int],
                                       drop: tuple[str, ...] = ()) -> int:
    """An execution of HID as a wb that did not yet record planned_replicates left it: the hypothesis and the
    experiment kept with the execution, as `wb hypothesis run` keeps them, and a verdict that names no plan."""
    from workbench.analysis.stored import analyze_stored, record_verdict
    from workbench.registry import load_registry
    from workbench.store import open_store

    reg = load_registry(root)
    h = reg.hypothesis(HID)
    exp = reg.experiment_for(h)
    store = open_store(str(db))
    try:
        ex = store.start_execution(
            hypothesis_id=HID, hypothesis_body=h.model_dump(mode="json"), experiment_id=exp.id,
            experiment_version=exp.version, experiment_body=exp.model_dump(mode="json"), profile="sim", target="sim",
            mode="fixed", plan=None, overrides={}, config_diff=None, wb_version="0.0")
        for r in range(1, replicates + 1):
            add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=r,
                    outcomes={"leak": 12, "done": 68}, extra={"waiting_for_input": 30})
            add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, replicate=r, outcomes=treatment,
                    extra={"waiting_for_input": 0})
        a = analyze_stored(store, reg, HID, execution_id=ex)
        if drop:  # a verdict older still: details without these keys
            d = {k: v for k, v in replace(a, planned_replicates=0).to_dict().items() if k not in drop}
            store.add_verdict(hypothesis_id=HID, verdict=a.verdict, reasoning=a.reasoning, checks=d["checks"],
                              details=d, execution_id=ex, hypothesis_sha256=None, evidence_run_ids=a.run_ids)
        else:
            record_verdict(store, replace(a, planned_replicates=0), execution_id=ex)
        return ex
    finally:
        store.dispose()


def test_a_smoke_run_stored_before_its_plan_was_recorded_is_still_one(cli, workbench_dir, tmp_path):
    """Verdicts stored before a verdict recorded the replicates its design planned: a one-replicate run after the
    planned three-replicate one counted as meeting the plan and took the status. The plan is read from the design
    the execution recorded when it started."""
    db, root = tmp_path / "wb.duckdb", workbench_dir
    _execution_without_a_recorded_plan(db, root, 3, {"leak": 13, "done": 67})
    smoke = _execution_without_a_recorded_plan(db, root, 1, {"done": 80})
    code, out, err = cli("hypothesis", "list", "--json", "--db", str(db), "--root", str(root))
    assert code == 0, err
    row = next(i for i in json.loads(out)["items"] if i["id"] == HID)
    assert (row["status"], row["status_smoke"]) == ("falsified", False), row
    assert row["status_note"] == f"execution {smoke} (smoke: 1 of 3 planned replicates): inconclusive, not the status"


@pytest.mark.parametrize("backend", ["duckdb", "postgresql"])
def test_an_old_smoke_run_whose_details_name_no_mode_is_still_one(cli, workbench_dir, tmp_path, request, backend):
    """The execution, not the verdict's details, says it was fixed: a verdict whose details name no mode (nor a
    sequential flag) took the status as a run that met the plan. A team store reads it alike."""
    db = tmp_path / "wb.duckdb" if backend == "duckdb" else request.getfixturevalue("pg_url")
    root = workbench_dir
    _execution_without_a_recorded_plan(db, root, 3, {"leak": 13, "done": 67}, drop=("mode", "sequential"))
    smoke = _execution_without_a_recorded_plan(db, root, 1, {"done": 80}, drop=("mode", "sequential"))
    code, out, err = cli("hypothesis", "list", "--json", "--db", str(db), "--root", str(root))
    assert code == 0, err
    row = next(i for i in json.loads(out)["items"] if i["id"] == HID)
    assert (row["status"], row["status_smoke"]) == ("falsified", False), row
    assert row["status_note"] == f"execution {smoke} (smoke: 1 of 3 planned replicates): inconclusive, not the status"
