"""Review states from verdict histories: approve → new evidence → stale → re-approve; parents that changed."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from workbench.errors import BadInput
from workbench.reviews import (APPROVED, AWAITING, CHANGES_REQUESTED, STALE, Evidence, EvidenceRun, ReviewRecord,
                               VerdictRef, check_review_input, parent_changed_since, review_state)

T0 = datetime(2026, 12, 1, tzinfo=timezone.utc)


def _v(key: str, word: str, digest: str, minute: int, hid: str = "h") -> VerdictRef:
    return VerdictRef(key, hid, word, digest, T0 + timedelta(minutes=minute))


def _r(decision: str, verdict: VerdictRef | None, minute: int, hid: str = "h") -> ReviewRecord:
    return ReviewRecord(f"r{minute}", hid, decision, "ada", "flag", "text", verdict.key if verdict else None,
                        verdict.evidence_digest if verdict else None, verdict.verdict if verdict else None,
                        T0 + timedelta(minutes=minute))


def test_round_trip_approve_new_runs_stale_reapprove():
    v1 = _v("v1", "falsified", "d1", 0)
    assert review_state("h", [v1], []).state == AWAITING
    a1 = _r("approve", v1, 1)
    assert review_state("h", [v1], [a1]).state == APPROVED
    v2 = _v("v2", "falsified", "d2", 2)          # same word, new evidence
    assert review_state("h", [v1, v2], [a1]).state == STALE
    a2 = _r("approve", v2, 3)
    s = review_state("h", [v1, v2], [a1, a2])
    assert s.state == APPROVED and s.deciding_review == a2 and s.current_verdict == v2


def test_comments_do_not_decide_and_latest_decision_wins():
    v1 = _v("v1", "supported", "d1", 0)
    assert review_state("h", [v1], [_r("comment", v1, 1)]).state == AWAITING
    s = review_state("h", [v1], [_r("approve", v1, 1), _r("request-changes", v1, 2), _r("comment", v1, 3)])
    assert s.state == CHANGES_REQUESTED


def test_the_evidence_digest_covers_runs_config_and_analysis_version():
    base = Evidence(("e1",), (EvidenceRun("r1", "c1"), EvidenceRun("r2", "c2")), "2")
    assert base.digest() == Evidence(("e1",), (EvidenceRun("r2", "c2"), EvidenceRun("r1", "c1")), "2").digest()
    for other in (Evidence(("e1",), (EvidenceRun("r1", "c1"),), "2"),
                  Evidence(("e1",), (EvidenceRun("r1", "cX"), EvidenceRun("r2", "c2")), "2"),
                  Evidence(("e1",), (EvidenceRun("r1", "c1"), EvidenceRun("r2", "c2")), "3"),
                  Evidence(("e2",), (EvidenceRun("r1", "c1"), EvidenceRun("r2", "c2")), "2")):
        assert other.digest() != base.digest()


def test_parent_changed_flags_children_reviewed_before_the_change():
    p1, p2 = _v("p1", "supported", "a", 0, "p"), _v("p2", "falsified", "b", 10, "p")
    child_v = _v("c1", "falsified", "c", 5, "c")
    child_review = _r("approve", child_v, 6, "c")
    assert parent_changed_since([p1, p2], [child_review], [child_v]) is True
    assert parent_changed_since([p1], [child_review], [child_v]) is False
    later = _r("approve", child_v, 11, "c")
    assert parent_changed_since([p1, p2], [child_review, later], [child_v]) is False
    assert parent_changed_since([p1, p2], [], []) is False


@pytest.mark.parametrize("decision,body,fragment", [
    ("veto", "x", "unknown review decision"), ("approve", "  ", "needs a message"),
    ("comment", "a" * 20_001, "at most"), ("comment", "bell\x07", "control characters"),
])
def test_bad_review_input(decision, body, fragment):
    with pytest.raises(BadInput, match=fragment):
        check_review_input(decision, body)
