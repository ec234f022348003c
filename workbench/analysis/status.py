"""A hypothesis's current status: which of its stored verdicts it rests on. One rule, every view.

`wb hypothesis list/show`, `wb review list`, the board, the hypothesis pages and `report.md` all take
the status from `current_status`, so they cannot disagree. The rule, and why:

- A verdict of a controlled execution (`wb hypothesis run`) under the hypothesis's own configuration
  sets the status; the newest one wins.
- A smoke run (a fixed execution with fewer replicates than the hypothesis's design plans, as `--replicates 1`
  makes) is controlled but underpowered: it sets the status only while no controlled run met the plan with a
  verdict other than invalid, and is marked so ("smoke: 1 of 5 planned replicates"). One newer than the status
  is shown beside it, never as it, nor does it make a review of the status stale. A sequential execution stops
  when it decides: it is never a smoke run. A verdict stored before verdicts recorded the plan takes it from the
  design its execution kept when it started (store.reads.with_recorded_plans), so an old smoke run cannot displace
  a run of the planned size; only where the execution kept no definition is its plan unknown, and counted as met.
- A pooled verdict (`wb hypothesis analyze`: the hypothesis's stored runs, imported evidence included) is
  *exploratory*: it sets the status only while no controlled verdict exists, and is shown marked so.
  Re-analysing the same runs must not overturn a controlled result, nor make a review of it stale.
- An A/A execution (`--aa`) checks the apparatus (the noise floor); it is evidence neither for nor
  against the claim, so it never sets the status.
- A verdict under `--set` overrides is about a changed world (another causal model, a held seed); it
  never sets the status. The newest one per set of overrides is listed apart, beside the status.
- A status whose verdict judged other predictions than the hypothesis makes now (a region edited since)
  still stands, marked so: the verdict is what was found, but not about the claim as it now reads.
- An invalid verdict (no run could measure, a guard failed, the arms differed in more than the isolated
  variable) could not test the claim: it is the status only while nothing else is, and a newer one is
  marked beside the status it leaves standing (nor does it make a review of that status stale).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from workbench.analysis import display

if TYPE_CHECKING:
    from workbench.registry.hypothesis import Hypothesis
    from workbench.store.entities import VerdictRecord

CONTROLLED, EXPLORATORY, AA, OVERRIDE = "controlled", "exploratory", "aa", "override"
INVALID = "invalid"
EXPLORATORY_NOTE = "exploratory: pooled by `wb hypothesis analyze`, no controlled run yet"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

# execution id -> that execution's `--set` overrides (an empty mapping: none)
Overrides = Mapping[int, Mapping[str, Any]]


def verdict_order(v: "VerdictRecord") -> tuple[datetime, int]:
    """Oldest first: by creation time, then by id."""
    try:
        at = datetime.fromisoformat(v.created_at) if v.created_at else _EPOCH
    except ValueError:
        at = _EPOCH
    return at, v.id


def role(v: "VerdictRecord", overrides_of: Overrides) -> str:
    """What a verdict is: controlled, exploratory (pooled), aa (noise floor) or override (a changed world)."""
    if v.is_aa:
        return AA
    if v.execution_id is None:
        return EXPLORATORY
    return OVERRIDE if overrides_of.get(v.execution_id) else CONTROLLED


def smoke_text(v: "VerdictRecord") -> str:
    """'smoke: 1 of 5 planned replicates' for a verdict on fewer replicates than its hypothesis planned, else ''."""
    from workbench.analysis.results import smoke_words

    d = v.details or {}
    try:
        words = smoke_words(int(d.get("replicates") or 0), int(d.get("planned_replicates") or 0))
    except (TypeError, ValueError):
        return ""
    return f"smoke: {words}" if words else ""


def _rank(v: "VerdictRecord", overrides_of: Overrides) -> int:
    """How strongly a verdict may hold the status: a controlled run that met the plan (3) over a smoke run (2) over
    a pooled analysis (1); A/A and override verdicts never (0)."""
    kind = role(v, overrides_of)
    if kind == CONTROLLED:
        return 2 if smoke_text(v) else 3
    return 1 if kind == EXPLORATORY else 0


def overrides_text(overrides: Mapping[str, Any]) -> str:
    return "under --set " + ", ".join(f"{k}={val}" for k, val in sorted(overrides.items()))


@dataclass(frozen=True)
class OverrideVerdict:
    """The newest verdict under one set of `--set` overrides: shown beside the status, never as it."""

    overrides: dict[str, Any]
    verdict: "VerdictRecord"

    def describe(self) -> str:
        return f"{overrides_text(self.overrides)}: {self.verdict.verdict}"

    def to_dict(self) -> dict[str, Any]:
        return {"overrides": dict(self.overrides), "verdict": self.verdict.verdict,
                "verdict_id": self.verdict.id, "execution_id": self.verdict.execution_id,
                "created_at": self.verdict.created_at}


@dataclass(frozen=True)
class CurrentStatus:
    """The status (a verdict word, else the status declared in hypotheses.yaml), the verdict it rests on,
    and what every view prints beside it."""

    status: str
    verdict: "VerdictRecord | None"
    exploratory: bool = False
    under_overrides: tuple[OverrideVerdict, ...] = ()
    edited_since: str = ""  # the predictions changed since the verdict was given: what it judged and what now
    set_aside: str = ""  # a newer verdict that came out invalid, which the status does not rest on
    smoke: str = ""  # the status's verdict is a smoke run's, or a newer smoke run's verdict the status does not rest on

    def notes(self) -> list[str]:
        """The marks shown beside the status wherever it is shown, one per thing to say."""
        parts = [EXPLORATORY_NOTE] if self.exploratory else []
        parts += [o.describe() for o in self.under_overrides]
        return parts + [n for n in (self.smoke, self.edited_since, self.set_aside) if n]

    def note(self) -> str:
        """The marks on one line ('' when there is nothing to say)."""
        return "; ".join(self.notes())

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "status_basis": self.basis, "status_note": self.note(),
                # the status rests on a smoke run (fewer replicates than planned): a script needs no prose for it
                "status_smoke": bool(self.verdict is not None and smoke_text(self.verdict)),
                "verdicts_under_overrides": [o.to_dict() for o in self.under_overrides]}

    @property
    def basis(self) -> str:
        """declared (no verdict), controlled or exploratory."""
        return "declared" if self.verdict is None else EXPLORATORY if self.exploratory else CONTROLLED


def status_timeline(verdicts: Iterable["VerdictRecord"], overrides_of: Overrides) -> list["VerdictRecord"]:
    """The verdicts that held the status of one hypothesis, in the order they took it (its last is current).

    Review staleness and the parent-changed mark read this, so a verdict that never set the status (A/A,
    overrides, an exploratory one after a controlled one, a smoke run after one that met the plan) never makes a
    review stale."""
    out: list[VerdictRecord] = []
    best = 0
    for v in sorted(verdicts, key=verdict_order):
        rank = _rank(v, overrides_of)
        if out and v.verdict == INVALID:
            continue  # it could not test the claim: it says nothing about it (`_set_aside` marks it)
        if rank and rank >= best:
            # One that could not test the claim holds the status only until a controlled run that could, of any
            # size: it ranks no higher than a smoke run (2).
            best = min(rank, 2) if v.verdict == INVALID else rank
            out.append(v)
    return out


def _smoke_beside(verdicts: Sequence["VerdictRecord"], overrides_of: Overrides, current: "VerdictRecord | None") -> str:
    """Words for the status's own smoke run, else for the newest smoke run newer than the status's verdict (which it
    does not rest on: a run that met the plan holds it); '' when there is neither."""
    if current is None:
        return ""
    if smoke_text(current):
        return smoke_text(current)
    newer = [v for v in verdicts if v.verdict != INVALID and verdict_order(v) > verdict_order(current)
             and role(v, overrides_of) == CONTROLLED and smoke_text(v)]
    if not newer:
        return ""
    v = max(newer, key=verdict_order)
    return f"execution {v.execution_id} ({smoke_text(v)}): {v.verdict}, not the status"


def _set_aside(verdicts: Sequence["VerdictRecord"], overrides_of: Overrides, current: "VerdictRecord | None") -> str:
    """Words for the newest invalid verdict newer than the status's ('' when there is none): shown beside the
    status, so a broken run is seen without displacing what was found."""
    if current is None:
        return ""
    newer = [v for v in verdicts if v.verdict == INVALID and verdict_order(v) > verdict_order(current)
             and role(v, overrides_of) in (CONTROLLED, EXPLORATORY)]
    if not newer:
        return ""
    v = max(newer, key=verdict_order)
    what = f"execution {v.execution_id}" if v.execution_id is not None else "a pooled analysis"
    return f"{what} came out invalid: not the status"


# A prediction as a verdict's judgements record it: the metric judged ("calls:TARGET" for a probe) and the
# region's bounds (None where unbounded), with its words for the mark.
PredictionKey = tuple[str, Any, Any, str]


def _bound(x: Any) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


def prediction_keys(h: "Hypothesis", experiments: Mapping[str, Any] | None = None) -> list[PredictionKey]:
    """What `h` predicts now, comparable with what a stored verdict judged; its words as the verdict's text gives
    them (a proportion's region also in percent) where `experiments` (id -> experiment) holds its experiment."""
    exp = (experiments or {}).get(h.experiment)

    def words(p: Any) -> str:
        spec = exp.metrics.get(p.metric) if exp is not None and not p.target else None
        return p.describe() + display.beside_region(p.region.bounds(), display.scale(spec and spec.kind,
                                                                                      bool(p.difference)))
    return [(f"calls:{p.target}" if p.target else p.metric, *map(_bound, p.region.bounds()), words(p))
            for p in h.predicts]


def _edited_since(verdict: "VerdictRecord | None", predicts: Sequence[PredictionKey] | None, exploratory: bool) -> str:
    """Words for a verdict that judged other predictions (metric or region) than `predicts` makes now; ''
    when they agree, or when either side is unknown (a verdict recorded without its judgements). A pooled
    re-analysis replaces only an exploratory status, so only then is it offered."""
    if verdict is None or predicts is None:
        return ""
    judged = [j for j in (verdict.details or {}).get("predictions") or [] if isinstance(j, dict)]
    try:
        then = {(j["metric"], _bound(j["bounds"][0]), _bound(j["bounds"][1])) for j in judged}
    except (KeyError, TypeError, IndexError, ValueError):
        return ""
    if not then or then == {(m, _bound(lo), _bound(hi)) for m, lo, hi, _ in predicts}:
        return ""
    words = list(dict.fromkeys(str(j.get("describe") or j["metric"]) for j in judged))
    return (f"predictions edited since the verdict: it judged {', '.join(words)}, the hypothesis now predicts "
            f"{', '.join(k[3] for k in predicts)}: " + ("re-run or re-analyze" if exploratory else "re-run"))


def current_status(declared: str, verdicts: Iterable["VerdictRecord"], overrides_of: Overrides,
                   predicts: Sequence[PredictionKey] | None = None) -> CurrentStatus:
    """The current status of one hypothesis from its stored verdicts (any order; A/A ones included);
    `predicts`, the hypothesis's `prediction_keys` now, marks a verdict that judged other predictions."""
    mine = list(verdicts)
    timeline = status_timeline(mine, overrides_of)
    current = timeline[-1] if timeline else None
    newest: dict[str, OverrideVerdict] = {}
    for v in sorted(mine, key=verdict_order):
        if role(v, overrides_of) == OVERRIDE:
            ov = dict(overrides_of[v.execution_id])  # type: ignore[index]
            newest[overrides_text(ov)] = OverrideVerdict(ov, v)
    exploratory = current is not None and role(current, overrides_of) == EXPLORATORY
    return CurrentStatus(current.verdict if current else declared, current, exploratory,
                         tuple(newest[k] for k in sorted(newest)), _edited_since(current, predicts, exploratory),
                         _set_aside(mine, overrides_of, current), _smoke_beside(mine, overrides_of, current))


def current_statuses(declared: Mapping[str, str], verdicts: Iterable["VerdictRecord"], overrides_of: Overrides,
                     predicts: Mapping[str, Sequence[PredictionKey]] | None = None) -> dict[str, CurrentStatus]:
    """`current_status` of every hypothesis in `declared` (id -> the status written in hypotheses.yaml);
    `predicts`: id -> its `prediction_keys` now."""
    by_hyp: dict[str, list[VerdictRecord]] = {h: [] for h in declared}
    for v in verdicts:
        if v.hypothesis_id in by_hyp:
            by_hyp[v.hypothesis_id].append(v)
    return {h: current_status(declared[h], vs, overrides_of, (predicts or {}).get(h)) for h, vs in by_hyp.items()}


def overrides_by_execution(executions: Iterable[Any]) -> dict[int, dict[str, Any]]:
    """execution id -> its `--set` overrides, from execution records."""
    return {e.id: dict(e.overrides or {}) for e in executions}


def stored_statuses(store: Any, declared: Mapping[str, str],
                    predicts: Mapping[str, Sequence[PredictionKey]] | None = None) -> dict[str, CurrentStatus]:
    """`current_statuses` from what `store` holds."""
    return current_statuses(declared, store.verdicts(), overrides_by_execution(store.executions()), predicts)
