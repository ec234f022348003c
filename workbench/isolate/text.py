"""The search as text: a tree of probes, the answer and the units spent (CLI and Markdown)."""

from __future__ import annotations

from typing import Any

MARK = {"fails": "FAILS", "passes": "passes", "inconclusive": "INCONCLUSIVE"}


def _set(xs: Any) -> str:
    return "{" + ", ".join(xs) + "}"


def tree_rows(record: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """(depth, probe) in tree order: children under the probe whose failing set they reduce."""
    probes = record["result"]["probes"]
    kids: dict[Any, list[dict[str, Any]]] = {}
    for p in probes:
        kids.setdefault(p["parent"], []).append(p)
    out: list[tuple[int, dict[str, Any]]] = []

    def walk(parent: Any, depth: int) -> None:
        for p in kids.get(parent, []):
            out.append((depth, p))
            walk(p["index"], depth + 1)

    walk(None, 0)
    return out


def text_lines(record: dict[str, Any]) -> list[str]:
    r = record["result"]
    bad = record["bad"]
    lines = [f"search {record['search_id']} ({record['root_id']}): {record['metric']} failure region "
             f"{record['region']}, changes {_set(f'{c}={bad[c]}' for c in record['changes'])}"]
    for depth, p in tree_rows(record):
        applied = _set(p["applied"]) if p["applied"] else "{} (the good config)"
        lines.append(f"{'  ' * (depth + 1)}p{p['index']} [{p['phase']}] good + {applied}: "
                     f"{MARK.get(p['outcome'], p['outcome'])}  {p['result_k']:g}/{p['result_n']:g} "
                     f"(alpha {p['alpha']:.2g}, {p['units']:g} units)  {p['hypothesis_id']}")
    if r["status"] == "decided":
        lines.append(f"minimal set: {_set(f'{c}={bad[c]}' for c in r['minimal'])} (decided)")
    else:
        lines.append(f"no decided minimal set ({r['status']}): surely needed {_set(r['lower'])}, "
                     f"possibly needed {_set(r['upper'])}")
    lines.append(f"why: {r['explanation']}")
    budget = f" of {r['budget']:g}" if r.get("budget") else ""
    lines.append(f"units: {r['units']:g}{budget}; alpha spent {r['alpha_spent']:.3g} of {r['alpha']:g}; "
                 f"{len(r['probes'])} probe(s)")
    return lines
