"""Team review of verdicts: a review is bound to the exact evidence it saw, and goes stale when it changes.

The evidence of a verdict is what it rests on: the executions and runs it analysed, each run's
config hash, and the analysis version (`store.entities.Evidence`). Its digest is recorded with the
verdict and copied onto every review of it, so a later verdict on other evidence makes the review stale
even when the verdict's word ("falsified") is unchanged — as code review goes stale after new commits.

A hypothesis's review state is one of: awaiting review (a verdict, no approve / request-changes yet),
approved, changes requested (the latest decision on the current evidence), stale (decisions
exist, none on the current evidence), nothing to review (no verdict and no decision). Comments never
change the state.

An approval by someone who ran an execution the verdict rests on is a self-approval: allowed (a team of one
needs it) but marked wherever reviews are shown, since no second person looked at the evidence. The state
itself is self-approved only when no approval on the current evidence is by someone who ran none of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Iterable, Mapping, Sequence

from workbench.analysis.status import CurrentStatus, Overrides, status_timeline
from workbench.store.entities import ExecutionRecord, ReviewRecord, VerdictRecord

DECISIONS = ("approve", "request-changes", "comment")
AWAITING, APPROVED, CHANGES_REQUESTED, STALE = "awaiting review", "approved", "changes requested", "stale"
NOTHING = "nothing to review"  # no verdict holds the status and no decision was ever made: nothing awaits anyone
REVIEW_STATES = (AWAITING, APPROVED, CHANGES_REQUESTED, STALE, NOTHING)
MAX_REVIEW_CHARS = 20_000
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _when(record: VerdictRecord | ReviewRecord) -> tuple[datetime, int]:
    try:
        at = datetime.fromisoformat(record.created_at) if record.created_at else _EPOCH
    except ValueError:
        at = _EPOCH
    return at, record.id


def is_stale(review: ReviewRecord, current: VerdictRecord | None) -> bool:
    """A review is stale once the evidence under the current verdict is not what the reviewer saw."""
    if current is None:
        return True
    if review.evidence_digest is not None or current.evidence_digest is not None:
        return review.evidence_digest != current.evidence_digest
    return review.verdict_id != current.id  # verdicts recorded before evidence digests existed


@dataclass(frozen=True)
class ReviewState:
    hypothesis_id: str
    state: str
    current_verdict: VerdictRecord | None
    # The decision on the current evidence the state rests on (approved, changes requested); None otherwise.
    deciding_review: ReviewRecord | None
    reviews: tuple[ReviewRecord, ...]
    parent_changed: bool = False
    # The hypothesis's status and its note as every other view shows them (analysis.status); None where not given.
    status: CurrentStatus | None = None
    # verdict id -> the names of who ran the executions it rests on (verdict_runners); empty where not known.
    runners_of: Mapping[int, frozenset[str]] = field(default_factory=dict)

    def label(self) -> str:
        return (self.state + (" (self-approved)" if self.self_approved() else "")
                + ("; parent changed: re-review" if self.parent_changed else ""))

    def stale(self, review: ReviewRecord) -> bool:
        return is_stale(review, self.current_verdict)

    def self_review(self, review: ReviewRecord) -> bool:
        """An approval by a person who ran an execution under the verdict approved."""
        return review.decision == "approve" and _by_a_runner(review, self.runners_of)

    def self_approved(self) -> bool:
        """The approval the state rests on is a self-approval."""
        return self.state == APPROVED and self.deciding_review is not None and self.self_review(self.deciding_review)

    def to_dict(self) -> dict[str, object]:
        cur = self.current_verdict
        return {"hypothesis_id": self.hypothesis_id, **(self.status.to_dict() if self.status else {}),
                "state": self.state, "self_approved": self.self_approved(), "parent_changed": self.parent_changed,
                "current_verdict": None if cur is None else {"id": cur.id, "uuid": cur.uuid, "verdict": cur.verdict,
                                                             "evidence_digest": cur.evidence_digest},
                "reviews": [{**r.to_dict(), "stale": self.stale(r), "self_review": self.self_review(r)}
                            for r in self.reviews]}


def verdict_runners(verdicts: Iterable[VerdictRecord],
                    executions: Iterable[ExecutionRecord]) -> dict[int, frozenset[str]]:
    """verdict id -> the names recorded as running the executions it rests on (its evidence's executions, and
    the execution it was recorded for); verdicts with none recorded are left out."""
    executions = list(executions)
    by_uuid, by_id = {e.uuid: e for e in executions if e.uuid}, {e.id: e for e in executions}
    out = {}
    for v in verdicts:
        ran = [by_uuid.get(str(k)) for k in (v.evidence or {}).get("executions") or ()]
        ran.append(by_id.get(v.execution_id) if v.execution_id is not None else None)
        names = frozenset(e.user_name for e in ran if e is not None and e.user_name)
        if names:
            out[v.id] = names
    return out


def verdict_history(hypothesis_id: str, verdicts: Iterable[VerdictRecord],
                    overrides_of: Overrides | None = None) -> list[VerdictRecord]:
    """The verdicts that held the hypothesis's status, oldest first (analysis.status.status_timeline): A/A
    verdicts, verdicts under `--set` overrides and exploratory re-analyses after a controlled verdict never
    held it, so they neither make a review stale nor change what a reviewer approved."""
    return status_timeline((v for v in verdicts if v.hypothesis_id == hypothesis_id), overrides_of or {})


def _by_a_runner(review: ReviewRecord, runners_of: Mapping[int, frozenset[str]]) -> bool:
    """The review's author ran an execution under the verdict it was written on."""
    ran = runners_of.get(review.verdict_id) if review.verdict_id is not None else None
    return bool(ran) and review.author.casefold() in {n.casefold() for n in ran}


def _deciding_approval(approvals: list[ReviewRecord], runners_of: Mapping[int, frozenset[str]]) -> ReviewRecord:
    """The approval an approved state rests on: the latest by someone who ran none of the evidence, where there is
    one, so a self-approval after a colleague's marks that review only, not the state."""
    independent = [r for r in approvals if not _by_a_runner(r, runners_of)]
    return max(independent or approvals, key=_when)


def review_state(hypothesis_id: str, verdicts: Iterable[VerdictRecord], reviews: Iterable[ReviewRecord], *,
                 parent_changed: bool = False, overrides_of: Overrides | None = None,
                 runners_of: Mapping[int, frozenset[str]] | None = None) -> ReviewState:
    """The review state of one hypothesis from its verdict history and its reviews (any order)."""
    history = verdict_history(hypothesis_id, verdicts, overrides_of)
    current = history[-1] if history else None
    mine = tuple(sorted((r for r in reviews if r.hypothesis_id == hypothesis_id), key=_when))
    decisions = [r for r in mine if r.decision != "comment"]
    on_current = [r for r in decisions if not is_stale(r, current)]
    if on_current:
        # Each reviewer's latest decision counts (names compared as self-approval compares them); an open
        # request for changes holds the state until its author approves, whoever approves meanwhile.
        latest = {r.author.strip().casefold(): r for r in on_current}
        open_requests = [r for r in latest.values() if r.decision != "approve"]
        last = max(open_requests, key=_when) if open_requests else _deciding_approval(list(latest.values()),
                                                                                     runners_of or {})
        state = CHANGES_REQUESTED if open_requests else APPROVED
    elif decisions:
        # Decisions on evidence since replaced: the state rests on none of them, so none is the deciding one.
        last, state = None, STALE
    else:
        last, state = None, AWAITING if current is not None else NOTHING
    return ReviewState(hypothesis_id, state, current, last, mine, parent_changed, runners_of=runners_of or {})


def parent_changed_since(parent_history: Sequence[VerdictRecord], child_reviews: Sequence[ReviewRecord],
                         child_history: Sequence[VerdictRecord]) -> bool:
    """Whether the parent's verdict changed (in word) after the child was last reviewed or decided.

    With no review and no verdict of the child, there is nothing to re-review."""
    parent = sorted(parent_history, key=_when)
    changes = [_when(b)[0] for a, b in zip(parent, parent[1:]) if a.verdict != b.verdict]
    if not changes:
        return False
    anchors = [_when(r)[0] for r in child_reviews if r.decision != "comment"] or \
              [_when(v)[0] for v in child_history]
    return bool(anchors) and changes[-1] > max(anchors)


def review_states(parents: dict[str, str | None], verdicts: Sequence[VerdictRecord],
                  reviews: Sequence[ReviewRecord], *, overrides_of: Overrides | None = None,
                  statuses: Mapping[str, CurrentStatus] | None = None,
                  executions: Sequence[ExecutionRecord] = ()) -> dict[str, ReviewState]:
    """The review state of every hypothesis in `parents` (id -> parent id), with the parent-changed flag.
    `overrides_of` (execution id -> its `--set` overrides) tells verdicts about a changed world apart;
    `statuses` (id -> analysis.status's current status) is carried along so a listing shows its note;
    `executions` say who ran what, so a self-approval is marked."""
    runners = verdict_runners(verdicts, executions)
    out = {}
    for hid, parent in parents.items():
        mine = [r for r in reviews if r.hypothesis_id == hid]
        changed = parent is not None and parent_changed_since(verdict_history(parent, verdicts, overrides_of), mine,
                                                              verdict_history(hid, verdicts, overrides_of))
        state = review_state(hid, verdicts, mine, parent_changed=changed, overrides_of=overrides_of, runners_of=runners)
        out[hid] = replace(state, status=(statuses or {}).get(hid))
    return out


def check_evidence(hypothesis_id: str, given: str, current: VerdictRecord | None,
                   earlier: Iterable[str | None] = ()) -> None:
    """BadInput unless `given` (a digest, or its start of at least 6 characters) is the current verdict's evidence:
    a verdict on other evidence landed since the reviewer read it, and a review would be bound to that one.
    `earlier`: the digests the hypothesis's verdicts rested on; one none of them starts with was mistyped."""
    from workbench.errors import BadInput

    given = given.strip().lower()
    digest = current.evidence_digest if current is not None else None
    if len(given) < 6 or any(c not in "0123456789abcdef" for c in given):
        # The hint names the digest the current verdict rests on (what wb review list shows), not an example.
        hint = (f"the current verdict of {hypothesis_id} rests on evidence {digest[:10]}: --evidence {digest[:10]}"
                if digest else f"{hypothesis_id} has no verdict with an evidence digest to review yet"
                               f"; `wb review list {hypothesis_id}` shows one once it has")
        raise BadInput(f"--evidence {given!r} is no evidence digest (at least 6 hex digits)", hint=hint)
    if digest is None or not digest.startswith(given):
        now = f"evidence {digest[:10]}" if digest else "no evidence digest" if current else "no verdict"
        if not any(d and d.startswith(given) for d in earlier):
            raise BadInput(f"--evidence {given}: no verdict of {hypothesis_id} rests on that evidence (a mistyped "
                           f"digest, or another hypothesis's?); its current verdict rests on {now}. Nothing was "
                           "recorded", hint=f"`wb review list {hypothesis_id}` shows the digest to review")
        raise BadInput(f"--evidence {given}: the current verdict of {hypothesis_id} rests on {now}, not on the "
                       "evidence given; it changed since it was read (new runs?). Nothing was recorded",
                       hint=f"read it again and review what it rests on now: wb review list {hypothesis_id}")


def check_review_input(decision: str, body: str) -> None:
    from workbench.errors import BadInput

    if decision not in DECISIONS:
        raise BadInput(f"unknown review decision {decision!r}", hint="use --approve, --request-changes or --comment")
    if not body.strip():
        raise BadInput("a review needs a message (-m TEXT)", hint='for example: -m "reproduced; verdict stands"')
    if len(body) > MAX_REVIEW_CHARS:
        raise BadInput(f"the review message has {len(body)} characters; at most {MAX_REVIEW_CHARS}",
                       hint="link to a longer write-up instead")
    bad = sorted({f"U+{ord(c):04X}" for c in body if not c.isprintable() and c not in "\n\t"})
    if bad:
        raise BadInput(f"the review message holds control characters ({', '.join(bad[:5])})",
                       hint="remove them; plain text and newlines are fine")
