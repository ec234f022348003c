"""Contexts of the site-wide pages: the board (index), the runs list, the confound report, the lineage."""

from __future__ import annotations

from typing import Any

from workbench.report import hypothesis_page, lineage, stats
from workbench.report.context import (Card, Column, ConfoundContext, FindingView, IndexContext, LineageContext, Link,
                                      Page, RestsOn, RunRow, RunsContext)
from workbench.report.data import StoreData

COLUMN_TITLES = {"open": "Open", "supported": "Supported", "falsified": "Falsified",
                 "inconclusive": "Inconclusive", "invalid": "Invalid"}
REVISION_KEYS = ("version", "rev", "commit", "git", "sha", "build")


def status_of(registry: Any, data: StoreData) -> dict[str, str]:
    """A hypothesis' status: its latest stored verdict, else the status written in the registry."""
    return {h.id: (data.verdicts[h.id]["verdict"] if h.id in data.verdicts else h.status)
            for h in registry.hypotheses}


def index(registry: Any, data: StoreData, statuses: dict[str, str], page: Page) -> IndexContext:
    cards: dict[str, list[Card]] = {s: [] for s in COLUMN_TITLES}
    for h in registry.hypotheses:
        v = data.verdicts.get(h.id)
        st = statuses[h.id] if statuses[h.id] in cards else "open"
        runs = data.runs_by_hypothesis.get(h.id, [])
        last_run = data.runs[runs[-1]]["started_at"] if runs else None
        cards[st].append(Card(id=h.id, href=f"hypotheses/{h.id}.html", claim=h.claim, status=st, kind=h.kind,
                              verdict=v["verdict"] if v else None,
                              key_number=hypothesis_page.key_number(h, registry, data),
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


def confounds(findings: list[dict[str, Any]] | None, note: str, known: set[str], page: Page) -> ConfoundContext:
    views = []
    for f in findings or []:
        f = dict(f)
        metric = f.pop("metric", None)
        outcome = f.pop("outcome", None)
        title = str(f.pop("title", "") or f.pop("summary", "") or
                    (f"{metric} co-varies with {outcome}" if metric and outcome else metric or "finding"))
        detail = str(f.pop("detail", "") or f.pop("description", "") or f.pop("message", ""))
        proposal: Any = None
        for key in ("proposal", "separating_experiment", "proposed", "experiment", "propose", "suggestion"):
            if key in f:
                proposal = f.pop(key)
                break
        hids = f.pop("hypotheses", None) or ([f.pop("hypothesis_id")] if f.get("hypothesis_id") else [])
        proposal_text, proposal_yaml = "", ""
        if isinstance(proposal, (dict, list)):
            import yaml

            if isinstance(proposal, dict):
                proposal_text = str(proposal.get("text") or proposal.get("description") or proposal.get("claim") or "")
            proposal_yaml = yaml.safe_dump(proposal, sort_keys=False, default_flow_style=False).strip()
        elif proposal is not None:
            proposal_text = str(proposal)
        rows = [(str(k), _text(v)) for k, v in f.items() if v not in (None, "", [], {})]
        if metric:
            rows.insert(0, ("metric", str(metric)))
        if outcome:
            rows.insert(1 if metric else 0, ("outcome", str(outcome)))
        views.append(FindingView(title, detail, rows, proposal_text, proposal_yaml,
                                 [Link(f"hypotheses/{h}.html", h) for h in hids if isinstance(h, str) and h in known]))
    return ConfoundContext(page, findings is not None, note, views)


def lineage_context(registry: Any, data: StoreData, statuses: dict[str, str], page: Page) -> LineageContext:
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
            by_arm.setdefault(arm, []).append(Link(f"runs/{r['id']}.html", str(r["id"])))
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
