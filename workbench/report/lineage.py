"""The hypothesis DAG laid out for an inline SVG: one column per depth, a tidy tree within.

Leaves take successive rows and a parent sits at the middle of its children, so parent → child
edges never cross and 50 hypotheses fit in a page that scrolls (rows ≈ number of leaves).
An assumption's `tested_by` link is drawn as a second kind of edge (dashed, below the parent edges).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STATUS_COLORS = {"open": "#868e96", "supported": "#2f9e44", "falsified": "#e03131",
                 "inconclusive": "#f08c00", "invalid": "#7048e8"}
# A node's outline shows its review state (no outline: awaiting review, nothing to review).
REVIEW_COLORS = {"approved": "#1d6b2d", "changes requested": "#c92a2a", "stale": "#d99a00"}
NODE_W, NODE_H, COL_GAP, ROW_H, PAD = 230, 40, 60, 52, 16
# Advance widths (px) of a bold 12 px label in DejaVu Sans Bold, the widest common sans, by character class:
# nodes are sized to their longest id so no label is cut.
NARROW, WIDE, LABEL_CHAR_W, LABEL_PAD, MAX_LABEL = set("fijlrt.,:;!|'-_ "), set("mwMW@%"), 8.5, 24, 60


def label_width(text: str) -> float:
    return sum(5.6 if c in NARROW else 12.5 if c in WIDE else LABEL_CHAR_W for c in text) + LABEL_PAD


@dataclass(frozen=True)
class LineageInput:
    id: str
    parent: str | None
    status: str
    claim: str = ""
    verdict_at: str | None = None
    tested_by: tuple[str, ...] = ()  # hypotheses that test one of this hypothesis' assumptions
    review: str = ""  # team.reviews' state (awaiting review, approved, ...; "" when not known)


@dataclass(frozen=True)
class LineageNode:
    id: str
    x: float
    y: float
    w: float
    h: float
    status: str
    color: str
    href: str
    label: str
    tooltip: str
    depth: int
    review: str = ""
    review_color: str = "none"


@dataclass(frozen=True)
class LineageEdge:
    source: str
    target: str
    d: str
    kind: str = "parent"  # "parent" (source is the parent) or "tested_by" (target tests an assumption of source)


@dataclass
class LineageGraph:
    width: float
    height: float
    nodes: list[LineageNode] = field(default_factory=list)
    edges: list[LineageEdge] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)
    review_legend: list[tuple[str, str]] = field(default_factory=lambda: list(REVIEW_COLORS.items()))

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": [{"id": n.id, "status": n.status, "depth": n.depth, "href": n.href} for n in self.nodes],
                "edges": [{"kind": "parent", "parent": e.source, "child": e.target} if e.kind == "parent" else
                          {"kind": e.kind, "hypothesis": e.source, "tested_by": e.target} for e in self.edges]}


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def layout(items: list[LineageInput], href: Any = lambda hid: f"hypotheses/{hid}.html") -> LineageGraph:
    """Place every hypothesis; a parent that is not among `items` makes its child a root."""
    ids = {i.id for i in items}
    by_id = {i.id: i for i in items}
    children: dict[str, list[str]] = {i.id: [] for i in items}
    roots: list[str] = []
    for i in items:
        if i.parent in ids and i.parent != i.id:
            children[i.parent].append(i.id)  # type: ignore[index]
        else:
            roots.append(i.id)
    row: dict[str, float] = {}
    depth: dict[str, int] = {}
    next_row = 0
    # Iterative post-order walk (a deep chain must not hit Python's recursion limit); `seen` guards cycles.
    seen: set[str] = set()
    for root in roots:
        stack: list[tuple[str, int, bool]] = [(root, 0, False)]
        while stack:
            hid, d, done = stack.pop()
            if done:
                kids = [c for c in children[hid] if c in row]
                if kids:
                    row[hid] = (row[kids[0]] + row[kids[-1]]) / 2
                else:
                    row[hid] = next_row
                    next_row += 1
                continue
            if hid in seen:
                continue
            seen.add(hid)
            depth[hid] = d
            stack.append((hid, d, True))
            for c in reversed(children[hid]):
                stack.append((c, d + 1, False))
    # Ids in a cycle (the registry rejects these; a hand-edited store might not) go last as roots.
    for i in items:
        if i.id not in row:
            row[i.id], depth[i.id] = next_row, 0
            next_row += 1

    node_w = max([NODE_W] + [label_width(_short(i.id, MAX_LABEL)) for i in items])

    def pos(hid: str) -> tuple[float, float]:
        return PAD + depth[hid] * (node_w + COL_GAP), PAD + row[hid] * ROW_H

    graph = LineageGraph(width=PAD * 2 + (max(depth.values(), default=0) + 1) * (node_w + COL_GAP) - COL_GAP,
                         height=PAD * 2 + max(1, next_row) * ROW_H - (ROW_H - NODE_H),
                         legend=list(STATUS_COLORS.items()))
    for i in items:
        x, y = pos(i.id)
        status = i.status if i.status in STATUS_COLORS else "open"
        tip = (f"{i.id} — {status}" + (f" ({i.verdict_at[:10]})" if i.verdict_at else "")
               + (f", {i.review}" if i.review else "") + f"\n{i.claim}")
        graph.nodes.append(LineageNode(id=i.id, x=x, y=y, w=node_w, h=NODE_H, status=status,
                                       color=STATUS_COLORS[status], href=href(i.id), label=_short(i.id, MAX_LABEL),
                                       tooltip=tip, depth=depth[i.id], review=i.review,
                                       review_color=REVIEW_COLORS.get(i.review, "none")))
    for i in items:
        for c in children[i.id]:
            if by_id.get(c) is None or depth.get(c, 0) != depth[i.id] + 1:
                continue
            x1, y1 = pos(i.id)
            x2, y2 = pos(c)
            sx, sy, tx, ty = x1 + node_w, y1 + NODE_H / 2, x2, y2 + NODE_H / 2
            mx = (sx + tx) / 2
            graph.edges.append(LineageEdge(i.id, c, f"M{sx:.1f},{sy:.1f} C{mx:.1f},{sy:.1f} {mx:.1f},{ty:.1f} "
                                                    f"{tx:.1f},{ty:.1f}"))
    for i in items:
        for t in dict.fromkeys(i.tested_by):
            if t in ids and t != i.id:
                graph.edges.append(LineageEdge(i.id, t, _tested_path(pos(i.id), pos(t), node_w), "tested_by"))
    return graph


def _tested_path(src: tuple[float, float], dst: tuple[float, float], node_w: float) -> str:
    """A dashed link from a hypothesis to the one testing its assumption. It leaves and enters the nodes
    below the middle, where parent edges do not run; toward a column on the left it loops around the gap."""
    (x1, y1), (x2, y2) = src, dst
    sy, ty = y1 + NODE_H * 0.8, y2 + NODE_H * 0.8
    if x2 > x1:
        sx, tx = x1 + node_w, x2
        mx = (sx + tx) / 2
        return f"M{sx:.1f},{sy:.1f} C{mx:.1f},{sy + 14:.1f} {mx:.1f},{ty + 14:.1f} {tx:.1f},{ty:.1f}"
    sx, tx = x1 + node_w * 0.5, x2 + node_w * 0.5
    bend = max(sy, ty) + ROW_H * 0.6
    return f"M{sx:.1f},{y1 + NODE_H:.1f} C{sx:.1f},{bend:.1f} {tx:.1f},{bend:.1f} {tx:.1f},{y2 + NODE_H:.1f}"


def registry_edges(hypotheses: Any) -> list[dict[str, Any]]:
    """Both kinds of link between hypotheses, as `wb lineage --json` prints them: parent edges
    {"kind": "parent", "parent", "child"} and {"kind": "tested_by", "hypothesis", "tested_by", "assumption"}.
    Only between `hypotheses`: an entry left out for a problem of its own is no node (its children stand as roots,
    as the tree and the site's graph draw them)."""
    ids = {h.id for h in hypotheses}
    edges: list[dict[str, Any]] = [{"kind": "parent", "parent": h.parent, "child": h.id}
                                   for h in hypotheses if h.parent in ids]
    for h in hypotheses:
        edges += [{"kind": "tested_by", "hypothesis": h.id, "tested_by": a.tested_by, "assumption": a.text}
                  for a in h.assumptions if a.tested_by in ids]
    return edges
