"""Team review of verdicts: a review is bound to the exact evidence it saw, and goes stale when it changes.

The evidence of a verdict is what it rests on: the executions and runs it analysed, each run's
config hash, and the analysis version. Its digest (`evidence_digest`) is recorded with the verdict
and copied onto every review of it, so a later verdict on other evidence makes the review stale
even when the verdict's word ("falsified") is unchanged — as code review goes stale after new commits.

A hypothesis's review state is one of: awaiting review (no approve / request-changes yet),
approved, changes requested (the latest decision on the current evidence), stale (decisions
exist, none on the current evidence). Comments never change the state.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Sequence

DECISIONS = ("approve", "request-changes", "comment")
AWAITING, APPROVED, CHANGES_REQUESTED, STALE = "awaiting review", "approved", "changes requested", "stale"
REVIEW_STATES = (AWAITING, APPROVED, CHANGES_REQUESTED, STALE)
MAX_REVIEW_CHARS = 20_000


@dataclass(frozen=True)
class EvidenceRun:
    run_id: str          # globally unique (the run's UUID, or "store-local:<id>" where none is recorded)
    config_hash: str | None


@dataclass(frozen=True)
class Evidence:
    """What one verdict rests on."""

    executions: tuple[str, ...]
    runs: tuple[EvidenceRun, ...]
    analysis_version: str

    def digest(self) -> str:
        body = {"executions": sorted(self.executions), "analysis": self.analysis_version,
                "runs": sorted([r.run_id, r.config_hash or ""] for r in self.runs)}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class VerdictRef:
    """A recorded verdict as reviews see it."""

    key: str             # globally unique id of the verdict record
    hypothesis_id: str
    verdict: str
    evidence_digest: str
    created_at: datetime


@dataclass(frozen=True)
class ReviewRecord:
    key: str
    hypothesis_id: str
    decision: str        # approve | request-changes | comment
    author: str
    author_source: str
    body: str
    verdict_key: str | None
    evidence_digest: str | None
    verdict: str | None  # the verdict word the reviewer saw
    created_at: datetime

    def is_stale(self, current: VerdictRef | None) -> bool:
        return current is None or self.evidence_digest != current.evidence_digest


@dataclass(frozen=True)
class ReviewState:
    hypothesis_id: str
    state: str
    current_verdict: VerdictRef | None
    deciding_review: ReviewRecord | None
    reviews: tuple[ReviewRecord, ...]
    parent_changed: bool = False

    def label(self) -> str:
        return self.state + ("; parent changed: re-review" if self.parent_changed else "")


def review_state(hypothesis_id: str, verdicts: Sequence[VerdictRef], reviews: Iterable[ReviewRecord], *,
                 parent_changed: bool = False) -> ReviewState:
    """The review state of one hypothesis from its verdict history and its reviews (any order)."""
    history = sorted((v for v in verdicts if v.hypothesis_id == hypothesis_id), key=lambda v: v.created_at)
    current = history[-1] if history else None
    mine = tuple(sorted((r for r in reviews if r.hypothesis_id == hypothesis_id), key=lambda r: r.created_at))
    decisions = [r for r in mine if r.decision != "comment"]
    on_current = [r for r in decisions if not r.is_stale(current)]
    if on_current:
        last = on_current[-1]
        state = APPROVED if last.decision == "approve" else CHANGES_REQUESTED
    elif decisions:
        last, state = decisions[-1], STALE
    else:
        last, state = None, AWAITING
    return ReviewState(hypothesis_id, state, current, last, mine, parent_changed)


def parent_changed_since(parent_history: Sequence[VerdictRef], child_reviews: Sequence[ReviewRecord],
                         child_history: Sequence[VerdictRef]) -> bool:
    """Whether the parent's verdict changed (in word) after the child was last reviewed or decided.

    With no review and no verdict of the child, there is nothing to re-review."""
    parent = sorted(parent_history, key=lambda v: v.created_at)
    changes = [b.created_at for a, b in zip(parent, parent[1:]) if a.verdict != b.verdict]
    if not changes:
        return False
    anchors = [r.created_at for r in child_reviews if r.decision != "comment"] or \
              [v.created_at for v in child_history]
    return bool(anchors) and changes[-1] > max(anchors)


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
