"""The isolate page: each stored `wb isolate` search as a tree of probes, its answer and the units spent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench.report.context import Page


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


@dataclass(frozen=True)
class IsolateContext:
    page: Page
    searches: list[SearchView]


def _set(xs: Any) -> str:
    return "{" + ", ".join(xs) + "}"


def build(store: Any, data: Any, page: Page) -> IsolateContext:
    from workbench.isolate.records import load_searches
    from workbench.isolate.text import tree_rows

    with store.session() as s:
        stored = load_searches(s)
    runs_of: dict[str, list[int]] = {}
    for rid, r in data.runs.items():
        runs_of.setdefault(str(r.get("hypothesis_id")), []).append(rid)
    views = []
    for st in reversed(stored):  # newest first
        rec, res = st.record, st.record.get("result", {})
        bad = rec.get("bad", {})
        rows = [ProbeRow(depth, p["index"], p["phase"], _set(f"{c}={bad.get(c)}" for c in p["applied"]) or "{}",
                         p["outcome"], f"{p['result_k']:g}/{p['result_n']:g}", f"{p['alpha']:.2g}", f"{p['units']:g}",
                         p.get("hypothesis_id", ""),
                         [(str(rid), f"runs/{rid}.html") for rid in sorted(runs_of.get(p.get("hypothesis_id", ""), []))],
                         p.get("reasoning", ""))
                for depth, p in tree_rows(rec)]
        answer = (f"minimal set {_set(f'{c}={bad.get(c)}' for c in res.get('minimal') or [])}"
                  if res.get("status") == "decided" else
                  f"no decided minimal set: surely needed {_set(res.get('lower', []))}, "
                  f"possibly needed {_set(res.get('upper', []))}")
        budget = f" of {res['budget']:g}" if res.get("budget") else ""
        views.append(SearchView(st.search_id, st.root_id, st.created_at or "", str(res.get("status", "?")), answer,
                                str(res.get("explanation", "")), f"{rec.get('metric')} fails when {rec.get('region')}",
                                _set(f"{c}: {rec.get('good', {}).get(c)} → {bad.get(c)}" for c in rec.get("changes", [])),
                                f"{res.get('units', 0):g}{budget}",
                                f"{res.get('alpha_spent', 0):.3g} of {res.get('alpha', 0):g}", rows))
    return IsolateContext(page, views)
