"""Typed contexts the templates render from: every value a page shows is computed before rendering.

Templates only loop and print (autoescaped); they never compute numbers, build links or charts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from workbench.report.lineage import LineageGraph

STATUSES = ("open", "supported", "falsified", "inconclusive", "invalid")


@dataclass(frozen=True)
class Link:
    href: str
    text: str


@dataclass
class Page:
    """What the layout needs: the title, the path back to the site root, and whether charts load."""

    title: str
    root: str  # "" for top-level pages, "../" for pages one folder down
    section: str
    generated_at: str
    has_charts: bool = False
    store: str = ""  # the store the site was built from (a DuckDB path, or a server URL without its password)


@dataclass
class Card:
    id: str
    href: str
    claim: str
    status: str
    kind: str
    verdict: str | None
    key_number: str
    date: str
    parent: str | None
    runs: int
    review: str = ""          # awaiting review | approved | changes requested | stale | nothing to review
    review_note: str = ""     # "parent changed: re-review" when it applies
    status_note: str = ""     # exploratory, verdicts under --set overrides (analysis.status)
    parent_page: bool = True  # the parent has a page (an entry with a problem of its own has none: left out)


@dataclass
class Column:
    status: str
    title: str
    cards: list[Card]


# How a page names a hypothesis whose entry the site was built without (`Registry.left_out`): it is in the file.
LEFT_OUT_NOTE = "left out: its entry in hypotheses.yaml has a problem of its own"


@dataclass(frozen=True)
class LeftOut:
    """An entry of hypotheses.yaml the site was built without (a problem of its own): its id (None where it gives
    none) and each problem as `wb hypothesis validate` words it; `line`, where another entry gives the same id,
    the line that names this one; `kept`: a whole entry gives it (that hypothesis has its page)."""
    id: str | None
    problems: tuple[str, ...]
    line: int | None = None
    kept: bool = False

    @property
    def named(self) -> str:
        """What follows the id where it is named (" at line N" for an id given twice), or ""."""
        if self.line is None:
            return ""
        return f" at line {self.line}" + (" (the first entry of that id is kept)" if self.kept else "")


@dataclass
class IndexContext:
    page: Page
    columns: list[Column]
    n_hypotheses: int
    n_runs: int
    n_verdicts: int
    left_out: tuple[LeftOut, ...] = ()


@dataclass
class Check:
    """One validity check as shown: `mark` is pass, FAIL (it changed the verdict), FLAG (noted, the verdict
    stands) or n/a; `meaning` says in words what the check's result does to the verdict."""

    name: str
    passed: bool | None
    detail: str
    mark: str = ""
    meaning: str = ""


@dataclass
class VerdictView:
    verdict: str
    reasoning: str
    created_at: str
    execution_id: int | None
    checks: list[Check]
    source: str  # "stored" or "computed now"
    more_data: str = ""
    checks_summary: str = ""


@dataclass
class PredictionView:
    text: str
    why: str
    observed: str
    outcome: str
    metric: str = ""
    metric_description: str = ""  # what the experiment says the metric measures


@dataclass
class AssumptionView:
    """An assumption and the hypothesis that tests it: the verdict shown is on that hypothesis' own claim,
    which may state the assumption or its opposite, so the claim is shown next to it."""

    text: str
    tested_by: Link | None
    tested_status: str | None
    tested_claim: str = ""

    @property
    def tested_left_out(self) -> str:
        """Why the testing hypothesis has no page, its claim and status unread (its entry left out), or ""."""
        if self.tested_by is None or self.tested_by.href:
            return ""
        return f"{LEFT_OUT_NOTE}, so its claim and status are not read"


@dataclass
class ArmRow:
    variable: str
    values: list[str]
    differs: bool
    isolated: bool


@dataclass
class DiffView:
    title: str
    lines: list[tuple[str, str]]  # (css class, text)
    identical: bool


@dataclass
class ChartView:
    id: str
    metric: str
    spec: dict[str, Any]
    rows: list[tuple[str, str, str]]  # (arm, value, interval) — the numbers behind the chart, as text
    description: str = ""  # what the experiment says the metric measures


@dataclass
class RunRow:
    id: int
    href: str
    arm: str
    replicate: str
    status: str
    started_at: str
    execution_id: int | None
    in_evidence: bool
    metrics: list[str]
    # per metric cell: the experiment whose definitions derived its value ('' where it was measured)
    derived_by: list[str] = field(default_factory=list)
    label: str = ""  # an imported run's label, as `wb runs list` names it


def runs_labelled(rows: Iterable[RunRow]) -> bool:
    """A table of runs has a label column when a run of it has a label (imported evidence), on the runs page and on
    a hypothesis page alike; a table of runs without labels keeps its columns."""
    return any(r.label for r in rows)


@dataclass
class ProbeRow:
    target: str
    process: str
    pid: str
    calls: int
    resolved: bool
    run: Link | None = None


@dataclass
class AttritionRow:
    arm: str
    runs: int
    units: int
    by_outcome: list[tuple[str, int]]


@dataclass
class ReviewView:
    author: str
    decision: str
    body: str
    created_at: str
    author_source: str = ""
    verdict_seen: str = ""    # the verdict word the reviewer saw
    evidence: str = ""        # the first characters of the evidence digest the review is bound to
    stale: bool = False       # the evidence under the current verdict is not what the reviewer saw
    self_approved: bool = False  # approved by a person who ran an execution the verdict rests on


@dataclass
class ExecutionView:
    """Who ran an execution, where, from which state of the workbench folder."""

    id: int
    mode: str
    status: str
    started_at: str
    user: str
    host: str
    revision: str
    wb_version: str
    aa_outcome: str = ""  # an A/A execution's check: no false alarm (the noise floor) or the false alarm
    runs: list[Link] = field(default_factory=list)  # its runs (the first few)
    n_runs: int = 0
    why: str = ""  # a refused execution's cause: who held the target, or what refused it


@dataclass
class HypothesisContext:
    page: Page
    id: str
    claim: str
    notes: str
    kind: str
    status: str
    experiment: str
    parent: Link | None
    children: list[Link]
    isolates: str | None
    hold: list[tuple[str, str]]
    arm_names: list[str]
    arm_rows: list[ArmRow]
    config_diffs: list[DiffView]
    predictions: list[PredictionView]
    guards: list[tuple[str, str, str]]  # (guard, its metric, the metric's description)
    falsified_if: str
    assumptions: list[AssumptionView]
    charts: list[ChartView]
    verdict: VerdictView | None
    analysis_note: str
    attrition: list[AttritionRow]
    attrition_outcomes: list[str]
    probe_rows: list[ProbeRow]
    probe_totals: list[tuple[str, int, int]]  # (target, calls, processes)
    metric_columns: list[str]
    runs: list[RunRow]
    reviews: list[ReviewView]
    review_state: str = ""  # team.reviews' state, as wb review list shows it
    review_note: str = ""
    executions: list[ExecutionView] = field(default_factory=list)
    status_note: str = ""  # exploratory, verdicts under --set overrides (analysis.status)
    metric_descriptions: dict[str, str] = field(default_factory=dict)  # name -> what it measures (the experiment's)

    @property
    def runs_labelled(self) -> bool:
        return runs_labelled(self.runs)


@dataclass
class ArtifactView:
    name: str
    size: str
    sha256: str
    href: str | None
    preview: str | None
    truncated: bool
    note: str


@dataclass
class RunContext:
    page: Page
    id: int
    title: str
    hypothesis: Link | None
    meta: list[tuple[str, str]]
    variables: list[tuple[str, str]]
    fingerprint: list[tuple[str, str]]
    metrics: list[tuple[str, str, str]]  # (name, value, what it measures: the experiment's description)
    units: list[tuple[str, int]]
    units_total: int
    probe_rows: list[ProbeRow]
    artifacts: list[ArtifactView]
    rendered_config: str | None
    error: str | None
    prev: Link | None
    next: Link | None
    provenance: list[tuple[str, str]] = field(default_factory=list)  # imported evidence: where it came from
    # What the experiment derives from the measured values (analysis.run_metrics, as `wb runs show` gives it),
    # never shown as measured: (name, value, what it measures); `derived_by` the experiment whose definitions
    # derived them, or `derived_note` why none could.
    derived: list[tuple[str, str, str]] = field(default_factory=list)
    derived_by: str | None = None
    derived_note: str | None = None
    derived_lacking: list[str] = field(default_factory=list)  # what each derivable metric that is not lacks
    # The run's execution's recorded error, as `wb runs show` gives it: a failed restore, a lock not released, a
    # deployment wb started and could not stop (the target may have been left so).
    execution_error: str | None = None


@dataclass
class RunsContext:
    page: Page
    metric_columns: list[str]
    runs: list[tuple[RunRow, Link | str | None]]  # the run's hypothesis: its page, or its id where it has none
    metric_descriptions: dict[str, str] = field(default_factory=dict)  # column -> what it measures
    # Ids of hypotheses without a page that are in hypotheses.yaml, their entries left out (`LEFT_OUT_NOTE`)
    left_out: frozenset[str] = frozenset()
    left_out_note: str = LEFT_OUT_NOTE

    @property
    def labelled(self) -> bool:
        return runs_labelled(row for row, _ in self.runs)


@dataclass
class FindingView:
    title: str
    kind: str
    flagged: bool
    across: bool  # a variable that moved with the outcome only across executions
    detail: str
    rows: list[tuple[str, str]]
    table_columns: list[str]
    table_rows: list[tuple[str, list[str]]]
    runs: list[Link]
    proposal: str
    proposal_rows: list[tuple[str, str]]  # (what, value): toggle, hold, why — only the values the scan set
    registered: Link | None
    hypotheses: list[Link]
    no_proposal: str = ""  # why a flagged finding comes without a separating experiment
    proposal_title: str = "Proposed separating experiment"


@dataclass
class ConfoundContext:
    page: Page
    available: bool
    note: str
    findings: list[FindingView]


@dataclass
class RestsOn:
    hypothesis: Link
    verdict: str
    created_at: str
    execution: str
    experiment: str
    runs_by_arm: list[tuple[str, list[Link]]]
    configs: list[tuple[str, str]]
    revisions: list[str]
    snapshot: str


@dataclass
class LineageContext:
    page: Page
    graph: LineageGraph
    rests_on: list[RestsOn] = field(default_factory=list)
    # (child, parent) where the parent's entry was left out for a problem of its own: the child stands as a root
    parents_left_out: list[tuple[str, str]] = field(default_factory=list)
