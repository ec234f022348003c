"""The isolate page: each stored `wb isolate` search as a tree of probes, its answer and the units spent."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from workbench.report.context import Page
from workbench.report.data import StoreData
from workbench.store.engine import Store


@dataclass(frozen=True)
class ProbeRow:
    depth: int
    index: int
    phase: str
    applied: str
    outcome: str
    counts: str
    alpha: str
    units: str
    hypothesis_id: str
    runs: list[tuple[str, str]]  # (text, href)
    reasoning: str


@dataclass(frozen=True)
class SearchView:
    search_id: str
    root_id: str
    created_at: str
    status: str
    answer: str
    explanation: str
    metric: str
    changes: str
    units: str
    alpha: str
    rows: list[ProbeRow]
    resumed: str  # how a resumed search went on from the attempt it resumed ("": not resumed)


@dataclass(frozen=True)
class IsolateContext:
    page: Page
    searches: list[SearchView]


def _set(xs: Any) -> str:
    return "{" + ", ".join(xs) + "}"


def _rows(rec: dict[str, Any], runs_of: dict[int, list[int]]) -> list[ProbeRow]:
    """A probe's runs are those of the execution its record names (its own, or the one a resumed search read
    back or continued): never another execution of its hypothesis."""
    from workbench.isolate.assignments import shown_set
    from workbench.isolate.records import tree_rows

    bad = rec.get("bad", {})
    rows = []
    for depth, p in tree_rows(rec):
        runs = sorted(runs_of.get(p.get("ref", {}).get("execution_id"), []))
        rows.append(ProbeRow(depth, p["index"], p["phase"], shown_set(bad, p["applied"]),
                             p["outcome"], f"{p['result_k']:g}/{p['result_n']:g}", f"{p['alpha']:.2g}",
                             f"{p['units']:g}", p.get("hypothesis_id", ""), [(str(r), f"runs/{r}.html") for r in runs],
                             p.get("reasoning", "")))
    return rows


def _view(st: Any, runs_of: dict[int, list[int]]) -> SearchView:
    from workbench.isolate.assignments import shown_set
    from workbench.isolate.records import resume_line
    from workbench.isolate.region import stored_text

    rec, res = st.record, st.record.get("result", {})
    bad, good = rec.get("bad", {}), rec.get("good", {})
    if res.get("status") == "decided":
        answer = f"minimal set {shown_set(bad, res.get('minimal') or [])}"
    elif res.get("status") == "no-failure":
        answer = "no failure to isolate: the bad config does not fail"
    else:
        answer = (f"no decided minimal set: surely needed {_set(res.get('lower', []))}, "
                  f"possibly needed {_set(res.get('upper', []))}")
    budget = f" of {res['budget']:g}" if res.get("budget") else ""
    return SearchView(st.search_id, st.root_id, st.created_at or "", str(res.get("status", "?")), answer,
                      str(res.get("explanation", "")),
                      f"{rec.get('metric')} fails when {stored_text(rec.get('region'))}",
                      _set(f"{c}: {shlex.quote(str(good.get(c)))} → {shlex.quote(str(bad.get(c)))}"
                           for c in rec.get("changes", [])),
                      f"{res.get('units', 0):g}{budget}", f"{res.get('alpha_spent', 0):.3g} of {res.get('alpha', 0):g}",
                      _rows(rec, runs_of), resume_line(rec) or "")


def build(store: Store, data: StoreData, page: Page) -> IsolateContext:
    from workbench.isolate.records import latest_searches

    stored = latest_searches(store)
    runs_of: dict[int, list[int]] = {}
    for rid, r in data.runs.items():
        if r["execution_id"] is not None:  # an imported run belongs to no probe
            runs_of.setdefault(r["execution_id"], []).append(rid)
    return IsolateContext(page, [_view(st, runs_of) for st in reversed(stored)])  # newest first
