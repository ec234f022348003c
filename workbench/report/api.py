"""What `wb report` and `wb lineage` call: open the registry and the store, build, return plain results."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import BadInput

FORMATS = ("html", "md")


@dataclass
class ReportResult:
    format: str
    markdown: str | None = None
    site: dict[str, Any] = field(default_factory=dict)
    page: str | None = None  # the page to show (index, or the hypothesis asked for)


def _open(db: str | None, root: str | Path | None) -> tuple[Any, Any]:
    from workbench.registry import load_registry
    from workbench.store import open_store

    registry = load_registry(root)
    return registry, open_store(db, read_only=True)


def report(*, db: str | None = None, root: str | Path | None = None, out: str | Path | None = None,
           fmt: str = "html", hypothesis_id: str | None = None) -> ReportResult:
    """Build the site under `out` (default: reports/ in the workbench folder), or Markdown with fmt="md"."""
    if fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r}", hint="use --format html or --format md")
    registry, store = _open(db, root)
    try:
        if hypothesis_id is not None:
            registry.hypothesis(hypothesis_id)  # a clear error for an unknown id before any work
        if fmt == "md":
            from workbench.report.markdown import board_markdown, hypothesis_markdown

            text = (hypothesis_markdown(store, registry, hypothesis_id) if hypothesis_id
                    else board_markdown(store, registry))
            return ReportResult("md", markdown=text)
        from workbench.report import build_site

        target = Path(out) if out is not None else Path(registry.root) / "reports"
        site = build_site(store, registry, target)
        page = site["hypotheses"][hypothesis_id] if hypothesis_id else site["index"]
        return ReportResult("html", site=site, page=page)
    finally:
        store.dispose()


def lineage(*, db: str | None = None, root: str | Path | None = None) -> dict[str, Any]:
    """The hypothesis DAG with each node's status and latest verdict: {"nodes": [...], "edges": [...]}."""
    from workbench.registry import load_registry
    from workbench.store import resolve_url

    registry = load_registry(root)
    verdicts: dict[str, dict[str, Any]] = {}
    _, path = resolve_url(db)
    if path is None or path.exists():
        from workbench.store import open_store
        from workbench.store.queries import latest_verdicts

        store = open_store(db, read_only=True)
        try:
            with store.session() as session:
                verdicts = latest_verdicts(session)
        finally:
            store.dispose()
    nodes = []
    for h in registry.hypotheses:
        v = verdicts.get(h.id)
        nodes.append({"id": h.id, "parent": h.parent, "kind": h.kind, "claim": h.claim,
                      "status": v["verdict"] if v else h.status, "verdict": v["verdict"] if v else None,
                      "verdict_at": v["created_at"] if v else None,
                      "depth": 0})
    by_id = {n["id"]: n for n in nodes}
    for n in nodes:  # depth by walking parents, bounded by the number of hypotheses
        cur, d = n["parent"], 0
        while cur in by_id and d < len(nodes):
            d += 1
            cur = by_id[cur]["parent"]
        n["depth"] = d
    from workbench.report.lineage import registry_edges

    edges = registry_edges(registry.hypotheses)
    return {"nodes": nodes, "edges": edges}


def lineage_text(graph: dict[str, Any]) -> str:
    """The DAG as an indented tree, one hypothesis a line: `id  [status]  claim`."""
    children: dict[str | None, list[dict[str, Any]]] = {}
    ids = {n["id"] for n in graph["nodes"]}
    for n in graph["nodes"]:
        children.setdefault(n["parent"] if n["parent"] in ids else None, []).append(n)
    lines: list[str] = []
    stack = [(n, 0) for n in reversed(children.get(None, []))]
    seen: set[str] = set()
    while stack:
        n, d = stack.pop()
        if n["id"] in seen:
            continue
        seen.add(n["id"])
        claim = n["claim"] if len(n["claim"]) <= 70 else n["claim"][:69] + "…"
        lines.append(f"{'  ' * d}{'└─ ' if d else ''}{n['id']}  [{n['status']}]  {claim}")
        stack.extend((c, d + 1) for c in reversed(children.get(n["id"], [])))
    return "\n".join(lines)
