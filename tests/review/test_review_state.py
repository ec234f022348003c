"""Review states from verdict histories: approve → new evidence → stale → re-approve; parents that changed."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from workbench.errors import BadInput
from workbench.team.reviews import (APPROVED, AWAITING, CHANGES_REQUESTED, STALE, check_review_input,
                                    parent_changed_since, review_state, review_states)
from workbench.store.entities import Evidence, EvidenceRun, ExecutionRecord, ReviewRecord, VerdictRecord

T0 = datetime(2026, 12, 1, tzinfo=timezone.utc)
_ids = iter(range(1, 10_000))


def _at(minute: int) -> str:
    return (T0 + timedelta(minutes=minute)).isoformat()


def _v(word: str, digest: str, minute: int, hid: str = "h") -> VerdictRecord:
    return VerdictRecord(id=next(_ids), hypothesis_id=hid, execution_id=None, verdict=word, reasoning="", checks=[],
                         details={}, created_at=_at(minute), uuid=f"v{minute}", evidence_digest=digest)


def _r(decision: str, verdict: VerdictRecord | None, minute: int, hid: str = "h") -> ReviewRecord:
    return ReviewRecord(id=next(_ids), hypothesis_id=hid, author="ada", decision=decision, body="text",
                        verdict_id=verdict.id if verdict else None, created_at=_at(minute), author_source="flag",
                        verdict_uuid=verdict.uuid if verdict else None,
                        evidence_digest=verdict.evidence_digest if verdict else None,
                        verdict_seen=verdict.verdict if verdict else None)


def test_round_trip_approve_new_runs_stale_reapprove():
    v1 = _v("falsified", "d1", 0)
    assert review_state("h", [v1], []).state == AWAITING
    a1 = _r("approve", v1, 1)
    assert review_state("h", [v1], [a1]).state == APPROVED
    v2 = _v("falsified", "d2", 2)          # same word, new evidence
    assert review_state("h", [v1, v2], [a1]).state == STALE
    a2 = _r("approve", v2, 3)
    s = review_state("h", [v1, v2], [a1, a2])
    assert s.state == APPROVED and s.deciding_review == a2 and s.current_verdict == v2
    assert s.stale(a1) and not s.stale(a2)


def test_comments_do_not_decide_and_latest_decision_wins():
    v1 = _v("supported", "d1", 0)
    assert review_state("h", [v1], [_r("comment", v1, 1)]).state == AWAITING
    s = review_state("h", [v1], [_r("approve", v1, 1), _r("request-changes", v1, 2), _r("comment", v1, 3)])
    assert s.state == CHANGES_REQUESTED


def test_aa_verdicts_are_not_verdicts_on_the_hypothesis():
    v1 = _v("falsified", "d1", 0)
    aa = VerdictRecord(id=next(_ids), hypothesis_id="h", execution_id=None, verdict="supported", reasoning="",
                       checks=[], details={"mode": "aa"}, created_at=_at(5), evidence_digest="other")
    assert review_state("h", [v1, aa], [_r("approve", v1, 1)]).state == APPROVED


def test_the_evidence_digest_covers_runs_config_and_analysis_version():
    base = Evidence(("e1",), (EvidenceRun("r1", "c1"), EvidenceRun("r2", "c2")), "2")
    assert base.digest() == Evidence(("e1",), (EvidenceRun("r2", "c2"), EvidenceRun("r1", "c1")), "2").digest()
    for other in (Evidence(("e1",), (EvidenceRun("r1", "c1"),), "2"),
                  Evidence(("e1",), (EvidenceRun("r1", "cX"), EvidenceRun("r2", "c2")), "2"),
                  Evidence(("e1",), (EvidenceRun("r1", "c1"), EvidenceRun("r2", "c2")), "3"),
                  Evidence(("e2",), (EvidenceRun("r1", "c1"), EvidenceRun("r2", "c2")), "2")):
        assert other.digest() != base.digest()


def test_parent_changed_flags_children_reviewed_before_the_change():
    p1, p2 = _v("supported", "a", 0, "p"), _v("falsified", "b", 10, "p")
    child_v = _v("falsified", "c", 5, "c")
    child_review = _r("approve", child_v, 6, "c")
    assert parent_changed_since([p1, p2], [child_review], [child_v]) is True
    assert parent_changed_since([p1], [child_review], [child_v]) is False
    later = _r("approve", child_v, 11, "c")
    assert parent_changed_since([p1, p2], [child_review, later], [child_v]) is False
    assert parent_changed_since([p1, p2], [], []) is False
    states = review_states({"p": None, "c": "p"}, [p1, p2, child_v], [child_review])
    assert states["c"].parent_changed and states["c"].label() == "approved; parent changed: re-review"
    assert not states["p"].parent_changed and states["p"].state == AWAITING


@pytest.mark.parametrize("decision,body,fragment", [
    ("veto", "x", "unknown review decision"), ("approve", "  ", "needs a message"),
    ("comment", "a" * 20_001, "at most"), ("comment", "bell\x07", "control characters"),
])
def test_bad_review_input(decision, body, fragment):
    with pytest.raises(BadInput, match=fragment):
        check_review_input(decision, body)


def _ex(eid: int, user: str | None) -> ExecutionRecord:
    return ExecutionRecord(id=eid, hypothesis_id="h", experiment_id="e", experiment_version=1, profile="p", target="t",
                           mode="fixed", status="done", plan={}, overrides={}, config_diff={}, started_at=None,
                           ended_at=None, wb_version="x", error=None, uuid=f"x{eid}", user_name=user)


def test_an_approval_by_who_ran_the_evidence_is_a_self_review():
    """Allowed (a team of one needs it) but marked: the approval is not a second person's look."""
    from dataclasses import replace

    from workbench.team.reviews import verdict_runners

    v = replace(_v("falsified", "d1", 0), execution_id=1, evidence={"executions": ["x1", "x2"]})
    runners = verdict_runners([v], [_ex(1, "Ada"), _ex(2, "grace"), _ex(3, "alan")])
    assert runners == {v.id: frozenset({"Ada", "grace"})}
    own, other = _r("approve", v, 1), replace(_r("approve", v, 2), author="alan")
    note, ask = _r("comment", v, 3), _r("request-changes", v, 4)
    state = review_state("h", [v], [own, note], runners_of=runners)
    assert state.state == APPROVED and state.self_review(own) and not state.self_review(note)
    assert state.label() == "approved (self-approved)"
    assert [r["self_review"] for r in state.to_dict()["reviews"]] == [True, False]
    assert state.to_dict()["self_approved"] is True
    both = review_state("h", [v], [own, other], runners_of=runners)
    assert not both.self_review(other) and both.label() == "approved" and both.to_dict()["self_approved"] is False
    assert not review_state("h", [v], [ask], runners_of=runners).self_review(ask)
    assert not review_state("h", [v], [own]).self_review(own), "who ran it unknown: not marked"


def test_a_request_for_changes_stands_until_its_author_approves():
    """The latest decision by anyone won: the runner's own approval (or anyone's) cleared a colleague's open
    request for changes. As in code review, each reviewer's latest decision counts, and any open request for
    changes holds the state."""
    from dataclasses import replace

    v1 = _v("falsified", "d1", 0)
    bob_asks = replace(_r("request-changes", v1, 1), author="bob")
    ada_ok = _r("approve", v1, 2)
    s = review_state("h", [v1], [bob_asks, ada_ok])
    assert s.state == CHANGES_REQUESTED and s.deciding_review == bob_asks
    bob_ok = replace(_r("approve", v1, 3), author="Bob ")   # the same person, written another way
    s = review_state("h", [v1], [bob_asks, ada_ok, bob_ok])
    assert s.state == APPROVED and s.deciding_review == bob_ok


def test_a_hypothesis_with_no_verdict_is_not_awaiting_review(workbench_dir, seed_csv, cli, tmp_path):
    # `wb review list` showed "hicache-bf16-race: awaiting review  [no verdict]" for every hypothesis with nothing
    # to review; only a verdict awaits review.
    import json

    db = str(tmp_path / "wb.duckdb")
    flags = ["--root", str(workbench_dir), "--db", db]
    assert cli("import", "evidence", str(seed_csv), *flags)[0] == 0
    assert cli("hypothesis", "analyze", "wedge-confound", *flags)[0] == 0
    code, out, err = cli("review", "list", *flags)
    assert code == 0, err
    lines = {line.split(":")[0]: line for line in out.splitlines() if not line.startswith(" ")}
    assert lines["wedge-confound"].startswith("wedge-confound: awaiting review  [verdict "), out
    assert lines["hicache-bf16-race"] == "hicache-bf16-race: nothing to review (no verdict yet)", out
    items = {i["hypothesis_id"]: i for i in json.loads(cli("review", "list", "--json", *flags)[1])["items"]}
    assert items["hicache-bf16-race"]["state"] == "nothing to review"
    assert items["wedge-confound"]["state"] == "awaiting review"


def test_review_list_marks_a_stale_comment_as_json_does(workbench_dir, seed_csv, cli, tmp_path, monkeypatch):
    # The table marked a stale approval "(stale)" but not a comment on the same superseded evidence, while
    # --json said "stale": true for both.
    import json

    db = str(tmp_path / "wb.duckdb")
    flags = ["--root", str(workbench_dir), "--db", db]
    assert cli("import", "evidence", str(seed_csv), *flags)[0] == 0
    assert cli("hypothesis", "analyze", "wedge-confound", *flags)[0] == 0
    said = ("Looked at the six runs: the post-fix run has zero aborts and 14 of 80 sessions leaked, so the wedge is "
            "not what corrupts")
    for decision, text in (("--comment", said), ("--approve", "seen")):
        assert cli("review", "wedge-confound", decision, "-m", text, "--as", "ada", *flags)[0] == 0
    rows = cli("runs", "list", "--format", "tsv", *flags)[1].splitlines()
    control = next(row.split("\t")[0] for row in rows if "\tpre-ab-bf16\t" in row)  # one of two control runs
    assert cli("runs", "delete", control, "--yes", *flags)[0] == 0
    assert cli("hypothesis", "analyze", "wedge-confound", *flags)[0] == 0  # a verdict on other evidence
    reviews = json.loads(cli("review", "list", "wedge-confound", "--json", *flags)[1])["items"][0]["reviews"]
    assert [(r["decision"], r["stale"]) for r in reviews] == [("comment", True), ("approve", True)]
    code, out, err = cli("review", "list", "wedge-confound", *flags)
    assert code == 0, err
    marked = [line for line in out.splitlines() if line.startswith("  ") and "ada: " in line]
    assert len(marked) == 2 and all(line.endswith(" (stale)") for line in marked), out
    assert f"\n    {said}\n" in out, out  # piped: a line an item
    # On an 80-column terminal the review's text and the status notes ran on whole: they wrap between words there,
    # the text's later lines under its first, as the CLI's other lines do.
    monkeypatch.setattr("workbench.cli._common.is_tty", lambda: True)
    code, shown, err = cli("review", "list", "wedge-confound", *flags, env={"COLUMNS": "80"})
    assert code == 0 and shown.split() == out.split(), shown
    assert max(len(line) for line in shown.splitlines()) <= 80 and "\n    sessions leaked, " in shown, shown
    monkeypatch.undo()
    # The site's hypothesis page marks both too: it left the comment's "stale" badge out, as the table did.
    import re

    site = tmp_path / "site"
    assert cli("report", "--out", str(site), *flags)[0] == 0
    page = (site / "hypotheses" / "wedge-confound.html").read_text()
    badges = re.findall(r'<div class="review (\w+)( stale)?">', page)
    assert badges == [("comment", " stale"), ("approve", " stale")], badges


def test_an_evidence_digest_no_verdict_ever_rested_on_is_called_mistyped_not_changed(workbench_dir, seed_csv, cli):
    """`--evidence 000000` (a typo, or a digest of another hypothesis) was refused with "it changed since it was read
    (new runs?)", sending the reviewer to look for runs that never landed. A digest an earlier verdict rested on is
    still told that the verdict moved on."""
    import json

    db = str(workbench_dir / "r.duckdb")
    for args in (["import", "evidence", str(seed_csv)], ["hypothesis", "analyze", "wedge-confound"]):
        code, _, err = cli(*args, "--db", db, "--root", str(workbench_dir))
        assert code == 0, err
    code, out, err = cli("review", "wedge-confound", "--approve", "-m", "ok", "--as", "grace", "--evidence", "000000",
                         "--db", db, "--root", str(workbench_dir), "--json")
    first = err.splitlines()[0]
    assert code == 2 and first.startswith("Error: --evidence 000000: ") and "Traceback" not in err, err
    assert "no verdict of wedge-confound" in first and "changed since" not in first, first
    assert json.loads(out)["error"]["where"] == "--evidence"
    code, out, _ = cli("review", "list", "wedge-confound", "--db", db, "--root", str(workbench_dir), "--json")
    assert json.loads(out)["items"][0]["reviews"] == []


def test_review_list_csv_names_no_decider_for_a_stale_review_as_text_and_json_do(workbench_dir, seed_csv, cli,
                                                                                    tmp_path):
    # An approval of evidence since replaced decides nothing: the text says "stale" and names no one, --json
    # has the state "stale", yet the CSV's decided_by still named the approval's author.
    import csv
    import io
    import json

    db = str(tmp_path / "wb.duckdb")
    flags = ["--root", str(workbench_dir), "--db", db]
    assert cli("import", "evidence", str(seed_csv), *flags)[0] == 0
    assert cli("hypothesis", "analyze", "wedge-confound", *flags)[0] == 0
    assert cli("review", "wedge-confound", "--approve", "-m", "seen", "--as", "ada", *flags)[0] == 0

    def csv_row() -> dict[str, str]:
        code, out, err = cli("review", "list", "wedge-confound", "--format", "csv", *flags)
        assert code == 0, err
        (row,) = csv.DictReader(io.StringIO(out))
        return row

    assert (csv_row()["state"], csv_row()["decided_by"]) == ("approved", "ada")
    rows = cli("runs", "list", "--format", "tsv", *flags)[1].splitlines()
    control = next(row.split("\t")[0] for row in rows if "\tpre-ab-bf16\t" in row)
    assert cli("runs", "delete", control, "--yes", *flags)[0] == 0
    assert cli("hypothesis", "analyze", "wedge-confound", *flags)[0] == 0  # a verdict on other evidence
    (item,) = json.loads(cli("review", "list", "wedge-confound", "--json", *flags)[1])["items"]
    assert item["state"] == "stale" and not item["self_approved"], item
    assert cli("review", "list", "wedge-confound", *flags)[1].startswith("wedge-confound: stale  [verdict ")
    row = csv_row()
    assert (row["state"], row["decided_by"], row["self_approved"]) == ("stale", "", "False"), row


def test_every_view_shows_the_review_state_review_list_shows(workbench_dir, cli, tmp_path):
    # `wb report --format md` said "awaiting review" for hypotheses with no verdict while `wb review list` said
    # "nothing to review"; the board and the lineage graph showed no state for them at all.
    import json
    import re

    from workbench.store import open_store, records

    db = tmp_path / "wb.duckdb"
    store = open_store(str(db))
    try:
        with store.session() as session:
            v = records.add_verdict(session, hypothesis_id="wedge-confound", verdict="falsified", reasoning="r")
            records.add_review(session, hypothesis_id="wedge-confound", author="kim", decision="approve", body="ok",
                               verdict_id=v.id)
            records.add_verdict(session, hypothesis_id="hicache-bf16-race", verdict="supported", reasoning="r")
    finally:
        store.dispose()
    flags = ["--root", str(workbench_dir), "--db", str(db)]
    want = {"wedge-confound": "approved", "hicache-bf16-race": "awaiting review",
            "pool-configurator-overcommit": "nothing to review"}
    items = {i["hypothesis_id"]: i["state"] for i in json.loads(cli("review", "list", "--json", *flags)[1])["items"]}
    code, md, err = cli("report", "--format", "md", *flags)
    assert code == 0, err
    site = tmp_path / "site"
    assert cli("report", "--out", str(site), *flags)[0] == 0
    board = (site / "index.html").read_text()
    lineage = (site / "lineage.html").read_text()
    for hid, state in want.items():
        assert items[hid] == state
        assert re.search(rf"\| `{hid}` \|.*\| {state} \|$", md, re.M), md
        page = (site / "hypotheses" / f"{hid}.html").read_text()
        assert f'class="review-state"><span class="rstate {state.replace(" ", "-")}">{state}</span>' in page
        card = board[board.index(f'<h3><a href="hypotheses/{hid}.html"'):]
        card = card[:card.index("</article>")]
        assert f'class="rstate {state.replace(" ", "-")}">{state}<' in card, card
        assert re.search(rf'data-review="{state}"/>\s*<text[^>]*>{re.escape(hid)}<', lineage), hid


def test_a_review_without_a_decision_hints_with_the_hypothesis_named(workbench_dir, cli, tmp_path):
    # `wb review toy-fix -m x` (no --approve ...) hinted `e.g. wb review wedge-confound --approve ...`, a hypothesis
    # the user's workbench may not hold: the hint uses the one named.
    flags = ["--root", str(workbench_dir), "--db", str(tmp_path / "wb.duckdb")]
    code, _, err = cli("review", "hicache-bf16-race", "-m", "x", *flags)
    assert code == 2 and "Traceback" not in err, err
    assert err.splitlines()[0] == "Error: give exactly one of --approve, --request-changes, --comment", err
    assert "Hint: e.g. wb review hicache-bf16-race --approve -m " in err and "wedge-confound" not in err, err
