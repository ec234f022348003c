"""Contexts of the site-wide pages: the board (index), the runs list, the confound report, the lineage."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.report import hypothesis_page, lineage, stats
from workbench.report.context import (Card, Column, ConfoundContext, FindingView, IndexContext, LineageContext, Link,
                                      Page, RestsOn, RunRow, RunsContext)
from workbench.report.data import StoreData

if TYPE_CHECKING:
    from workbench.registry.loader import Registry


COLUMN_TITLES = {"open": "Open", "supported": "Supported", "falsified": "Falsified",
                 "inconclusive": "Inconclusive", "invalid": "Invalid"}
MAX_LINKS = 40
REVISION_KEYS = ("version", "rev", "commit", "git", "sha", "build")


def status_of(registry: Registry, data: StoreData) -> dict[str, str]:
    """A hypothesis' status: its latest stored verdict, else the status written in the registry."""
    return {h.id: (data.verdicts[h.id]["verdict"] if h.id in data.verdicts else h.status)
            for h in registry.hypotheses}


def index(registry: Registry, data: StoreData, statuses: dict[str, str], page: Page,
          analyses: dict[str, Any] | None = None) -> IndexContext:
    cards: dict[str, list[Card]] = {s: [] for s in COLUMN_TITLES}
    for h in registry.hypotheses:
        v = data.verdicts.get(h.id)
        st = statuses[h.id] if statuses[h.id] in cards else "open"
        runs = data.runs_by_hypothesis.get(h.id, [])
        last_run = data.runs[runs[-1]]["started_at"] if runs else None
        cards[st].append(Card(id=h.id, href=f"hypotheses/{h.id}.html", claim=h.claim, status=st, kind=h.kind,
                              verdict=v["verdict"] if v else None,
                              key_number=hypothesis_page.key_number(h, registry, data,
                                                                                    (analyses or {}).get(h.id, (None,))[0]),
                              date=((v or {}).get("created_at") or last_run or "")[:10], parent=h.parent,
                              runs=len(runs)))
    columns = [Column(s, COLUMN_TITLES[s], cards[s]) for s in COLUMN_TITLES if s != "invalid" or cards[s]]
    return IndexContext(page, columns, len(registry.hypotheses), len(data.runs), len(data.verdicts))


def runs_list(data: StoreData, known: set[str], run_ids: list[int], page: Page) -> RunsContext:
    cols = ["corruption_rate", "aborts", "wall_s"]
    present = {m for rid in run_ids for m in data.runs[rid]["metrics"]}
    cols = [c for c in cols if c in present] or sorted(present)[:3]
    rows = []
    for rid in run_ids:
        r = data.runs[rid]
        hid = r["hypothesis_id"]
        rows.append((RunRow(rid, f"runs/{rid}.html", r["arm"] or "", "" if r["replicate"] is None
                            else str(r["replicate"]), r["status"], (r["started_at"] or "")[:16], r["execution_id"],
                            False, [stats.fmt(r["metrics"].get(c)) if c in r["metrics"] else "" for c in cols]),
                     Link(f"hypotheses/{hid}.html", hid) if hid in known else None))
    return RunsContext(page, cols, rows)


def _text(v: Any) -> str:
    import json

    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)


def _table(table: Any) -> tuple[list[str], list[tuple[str, list[str]]], list[str], list[tuple[str, str]]]:
    """A finding's table: (columns, rows) when it is a mapping of mappings, plus run names and scalar rows."""
    columns: list[str] = []
    rows: list[tuple[str, list[str]]] = []
    runs: list[str] = []
    scalars: list[tuple[str, str]] = []
    if not isinstance(table, dict):
        return columns, rows, runs, scalars
    for key, val in table.items():
        if isinstance(val, dict):
            for c in val:
                if c not in columns:
                    columns.append(str(c))
        elif key == "runs" and isinstance(val, list):
            runs = [str(x) for x in val]
        else:
            scalars.append((str(key).replace("_", " "), _text(val)))
    for key, val in table.items():
        if isinstance(val, dict):
            rows.append((str(key), [stats.fmt(val.get(c)) if isinstance(val.get(c), (int, float))
                                    else _text(val.get(c, "")) for c in columns]))
    return [c.replace("_", " ") for c in columns], rows, runs, scalars


def confounds(findings: list[dict[str, Any]] | None, note: str, known: set[str], runs: set[int],
              page: Page) -> ConfoundContext:
    import re

    views = []
    for f in sorted(findings or [], key=lambda f: not f.get("flagged")):
        f = dict(f)
        factor = f.pop("factor", None) or f.pop("metric", None)
        outcome = f.pop("outcome", None)
        kind = str(f.pop("kind", "") or "")
        flagged = bool(f.pop("flagged", False))
        title = str(f.pop("title", "") or (f"{factor} and {outcome}" if factor and outcome else factor or "finding"))
        detail = str(f.pop("message", "") or f.pop("detail", "") or f.pop("description", ""))
        proposal: Any = None
        for key in ("proposal", "separating_experiment", "proposed"):
            if key in f:
                proposal = f.pop(key)
                break
        hids = f.pop("hypotheses", None) or ([f.pop("hypothesis_id")] if f.get("hypothesis_id") else [])
        proposal_text, proposal_yaml = "", ""
        registered = None
        if isinstance(proposal, (dict, list)):
            import yaml

            if isinstance(proposal, dict):
                proposal = dict(proposal)
                proposal_text = str(proposal.pop("text", "") or proposal.get("description") or proposal.get("why") or "")
                reg = proposal.get("registered_as")
                if isinstance(reg, str) and reg in known:
                    registered = Link(f"hypotheses/{reg}.html", reg)
            proposal_yaml = yaml.safe_dump(proposal, sort_keys=False, default_flow_style=False).strip()
        elif proposal is not None:
            proposal_text = str(proposal)
        table = f.pop("table", None)
        if isinstance(table, dict) and "outcome_with_guard" in table:  # a guard's 2x2 table over runs
            table = dict(table)
            label = str(factor)
            table[f"with {label}"] = {"runs with the outcome": table.pop("outcome_with_guard", None),
                                      "runs without it": table.pop("no_outcome_with_guard", None)}
            table[f"without {label}"] = {"runs with the outcome": table.pop("outcome_without_guard", None),
                                         "runs without it": table.pop("no_outcome_without_guard", None)}
        columns, trows, run_names, scalars = _table(table)
        run_links = []
        if len(run_names) > MAX_LINKS:
            rest = len(run_names) - MAX_LINKS
            run_names = run_names[:MAX_LINKS]
        else:
            rest = 0
        for name in run_names:
            m = re.fullmatch(r"run (\d+)", name)
            if m and int(m.group(1)) in runs:
                run_links.append(Link(f"runs/{m.group(1)}.html", name))
        if rest:
            run_links.append(Link("runs.html", f"+{rest} more"))
        rows = [("kind", kind)] if kind else []
        if outcome:
            rows.append(("outcome", str(outcome)))
        rows += scalars
        p = f.pop("fisher_p", None)
        if isinstance(p, (int, float)):
            rows.append(("Fisher p (runs)", f"{p:.2g}"))
        effect = f.pop("effect", None)
        if isinstance(effect, dict):
            rows += [(str(k).replace("_", " "), f"{v:.3g}" if isinstance(v, float) else _text(v))
                     for k, v in effect.items() if v is not None]
        rows += [(str(k), _text(v)) for k, v in f.items() if v not in (None, "", [], {})]
        views.append(FindingView(title, kind, flagged, detail, rows, columns, trows, run_links, proposal_text,
                                 proposal_yaml, registered,
                                 [Link(f"hypotheses/{h}.html", h) for h in hids if isinstance(h, str) and h in known]))
    return ConfoundContext(page, findings is not None, note, views)


def lineage_context(registry: Registry, data: StoreData, statuses: dict[str, str], page: Page) -> LineageContext:
    items = [lineage.LineageInput(h.id, h.parent, statuses[h.id], h.claim,
                                  (data.verdicts.get(h.id) or {}).get("created_at")) for h in registry.hypotheses]
    graph = lineage.layout(items)
    rests = []
    for h in registry.hypotheses:
        v = data.verdicts.get(h.id)
        if not v:
            continue
        runs, ex_id = hypothesis_page.evidence_runs(data, h.id)
        if v.get("execution_id") is not None:
            ex_id = v["execution_id"]
            runs = [r for r in data.hypothesis_runs(h.id) if r["execution_id"] == ex_id] or runs
        ex = data.executions.get(ex_id) if ex_id is not None else None
        by_arm: dict[str, list[Link]] = {}
        configs: dict[tuple[str, str], None] = {}
        revisions: dict[str, None] = {}
        for r in runs:
            arm = r["arm"] or "probe"
            links = by_arm.setdefault(arm, [])
            if len(links) < MAX_LINKS:
                links.append(Link(f"runs/{r['id']}.html", str(r["id"])))
            elif len(links) == MAX_LINKS:
                links.append(Link(f"hypotheses/{h.id}.html#runs", "more…"))
            if r["config_hash"]:
                configs[(arm, r["config_hash"][:12])] = None
            for k, val in sorted((r.get("fingerprint") or {}).items()):
                if any(t in k.lower() for t in REVISION_KEYS):
                    revisions[f"{k}={_text(val)[:60]}"] = None
        if ex and ex.get("wb_version"):
            revisions[f"wb {ex['wb_version']}"] = None
        rests.append(RestsOn(
            hypothesis=Link(f"hypotheses/{h.id}.html", h.id), verdict=v["verdict"],
            created_at=(v.get("created_at") or "")[:16],
            execution=(f"#{ex['id']} ({ex['mode']}, {ex['status']}, target {ex['target']}, profile {ex['profile']})"
                       if ex else "no execution recorded"),
            experiment=(f"{ex['experiment_id']} v{ex['experiment_version']}" if ex else h.experiment),
            runs_by_arm=sorted(by_arm.items()), configs=sorted(configs), revisions=list(revisions),
            snapshot=(v.get("hypothesis_sha256") or "")[:12]))
    return LineageContext(page, graph, rests)
