"""Contexts of the site-wide pages: the board (index), the runs list, the confound report, the lineage."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.analysis import display
from workbench.analysis.results import Analysis
from workbench.report import bridge, hypothesis_page, lineage, stats
from workbench.report.context import (Card, Column, ConfoundContext, FindingView, IndexContext, LeftOut, LineageContext,
                                      Link, Page, RestsOn, RunRow, RunsContext)
from workbench.report.data import StoreData

if TYPE_CHECKING:
    from workbench.registry.hypothesis import Hypothesis
    from workbench.registry.folder import Registry


COLUMN_TITLES = {"open": "Open", "supported": "Supported", "falsified": "Falsified",
                 "inconclusive": "Inconclusive", "invalid": "Invalid"}
MAX_LINKS = 40
REVISION_KEYS = ("version", "rev", "commit", "git", "sha", "build")


def status_of(registry: Registry, data: StoreData) -> dict[str, str]:
    """A hypothesis' status by analysis.status (the rule `wb hypothesis list` uses, which falls back to the
    status written in the registry), or that written status where the store data has none for it."""
    return {h.id: data.statuses[h.id].status if h.id in data.statuses else h.status for h in registry.hypotheses}


def index(registry: Registry, data: StoreData, statuses: dict[str, str], page: Page,
          analyses: dict[str, Any] | None = None, left_out: tuple[LeftOut, ...] = ()) -> IndexContext:
    cards: dict[str, list[Card]] = {s: [] for s in COLUMN_TITLES}
    ids = {h.id for h in registry.hypotheses}
    for h in registry.hypotheses:
        v = data.verdicts.get(h.id)
        st = statuses[h.id] if statuses[h.id] in cards else "open"
        # its own runs and those its status's evidence drew in (imported runs belong to no hypothesis)
        evidence = {r["id"] for r in hypothesis_page.evidence_runs(data, h.id)[0]}
        runs = sorted(set(data.runs_by_hypothesis.get(h.id, [])) | evidence)
        last_run = data.runs[runs[-1]]["started_at"] if runs else None
        cards[st].append(Card(id=h.id, href=f"hypotheses/{h.id}.html", claim=h.claim, status=st, kind=h.kind,
                              verdict=v["verdict"] if v else None,
                              key_number=key_number(h, registry, data, (analyses or {}).get(h.id, (None,))[0]),
                              date=((v or {}).get("created_at") or last_run or "")[:10], parent=h.parent,
                              runs=len(runs), status_note=data.status_note(h.id), **_card_review(data, h.id),
                              parent_page=h.parent in ids))
    columns = [Column(s, COLUMN_TITLES[s], cards[s]) for s in COLUMN_TITLES if s != "invalid" or cards[s]]
    return IndexContext(page, columns, len(registry.hypotheses), len(data.runs), len(data.verdicts), left_out)


def key_number(h: Hypothesis, registry: Registry, data: StoreData, analysis: Analysis | None = None) -> str:
    """The one number a board card shows: the first prediction's metric in its arm (or probe calls), as the
    verdict the status rests on recorded it; else as a fresh analysis gives it; else from the evidence runs."""
    for source in (_stored_analysis(data, h.id), analysis):
        text = _predicted_number(h, source)
        if text:
            return text
    runs, _ = hypothesis_page.evidence_runs(data, h.id)
    if not runs:  # beside the card's count of runs: one under way, or failed, is a run
        return "no run ended ok yet" if data.runs_by_hypothesis.get(h.id) else "no runs yet"
    p = h.predicts[0]
    if p.target:
        calls = sum(pc["calls"] for r in runs for pc in data.probes.get(r["id"], []) if pc["target"] == p.target)
        return f"{p.target.split(':')[-1]}: {display.count(calls, 'call')} in {display.count(len(runs), 'run')}"
    exp = registry.experiments.get(h.experiment)
    arm = p.arm or (p.difference[0] if p.difference else (h.arm_names[-1] if h.arm_names else None))
    e = hypothesis_page.arm_estimate(exp, p.metric, [r for r in runs if (r["arm"] or "probe") == arm])
    return f"{p.metric} ({arm}): {e.label}" if e.estimate is not None else display.count(len(runs), "run")


def _stored_analysis(data: StoreData, hid: str) -> Analysis | None:
    """The analysis recorded with the verdict the status rests on (None when it recorded none)."""
    details = (data.verdicts.get(hid) or {}).get("details")
    return Analysis.from_dict(details) if isinstance(details, dict) and details.get("predictions") else None


def _predicted_number(h: Hypothesis, analysis: Analysis | None) -> str:
    """The first prediction's estimate as `analysis` judged it ('' when it judged none)."""
    preds = bridge.predictions(analysis)
    if not preds or preds[0].estimate is None or not h.predicts:
        return ""
    src, p = preds[0], h.predicts[0]
    if src.metric != (f"calls:{p.target}" if p.target else p.metric) and src.metric != p.metric:
        return ""  # judged before the prediction was edited: not the number the card names
    est = float(src.estimate)
    k, n = src.k, src.n
    where = src.where or p.arm or ""
    if p.target:
        return f"{p.target.split(':')[-1]}: {display.number(est)} calls"
    if isinstance(k, (list, tuple)):  # a difference of two arms' rates
        return f"{p.metric} ({where}): {display.points(est)}"
    value = f"{int(k)}/{int(n)} = {display.rate(est)}" if isinstance(k, (int, float)) and n else display.number(est)
    return f"{p.metric} ({where}): {value}"


def _card_review(data: StoreData, hid: str) -> dict[str, str]:
    """The review state as `wb review list` gives it (team.reviews.review_state), "nothing to review" included."""
    state = data.review_states.get(hid)
    if state is None:
        return {}  # the store data was loaded without review states
    notes = (["self-approved"] if state.self_approved() else []) + \
        (["parent changed: re-review"] if state.parent_changed else [])
    return {"review": state.state, "review_note": "; ".join(notes)}


def runs_list(data: StoreData, known: set[str], run_ids: list[int], page: Page,
              descriptions: dict[str, dict[str, str]] | None = None,
              rates: dict[str, set[str]] | None = None, experiments: dict[str, Any] | None = None,
              left_out: tuple[str, ...] = ()) -> RunsContext:
    """A page of the runs list; `descriptions` (experiment id -> metric -> what it measures) titles the columns;
    `rates` (experiment id -> its proportions) are shown in percent, as every other page shows them;
    `experiments` (id -> Experiment) derive each run's metrics as its run page and `wb runs list` do; `left_out`:
    the ids of entries of hypotheses.yaml the site was built without, whose runs say so."""
    from workbench.analysis.run_metrics import definitions, metrics_of

    shown = {}
    for rid in run_ids:
        r = data.runs[rid]
        exp, note = definitions(rid, r["experiment_id"], r["experiment_version"], experiments or {})
        shown[rid] = metrics_of(rid, r["metrics"], exp, note)
    cols = ["corruption_rate", "aborts", "wall_s"]
    present = {m for rid in run_ids for m in [*data.runs[rid]["metrics"], *shown[rid].derived]}
    cols = [c for c in cols if c in present] or sorted(present)[:3]
    rows = []
    for rid in run_ids:
        r = data.runs[rid]
        hid = r["hypothesis_id"]
        own = (rates or {}).get(r["experiment_id"], set())
        rows.append((RunRow(rid, f"runs/{rid}.html", r["arm"] or "", display.replicate(r["replicate"]), r["status"],
                            (r["started_at"] or "")[:16], r["execution_id"],
                            False, [_value(r, shown[rid].derived, c, own) for c in cols],
                            [(shown[rid].experiment or "") if c in shown[rid].derived else "" for c in cols],
                            r["label"] or ""),
                     Link(f"hypotheses/{hid}.html", hid) if hid in known else hid))
    return RunsContext(page, cols, rows, _column_descriptions(cols, [data.runs[rid] for rid in run_ids],
                                                              descriptions or {}, shown), frozenset(left_out))


def _value(run: dict[str, Any], derived: dict[str, Any], metric: str, rates: set[str]) -> str:
    """A run's metric in its cell, measured or else `derived`: a proportion in percent; '' where it has neither."""
    if metric not in run["metrics"] and metric not in derived:
        return ""
    v = run["metrics"][metric] if metric in run["metrics"] else derived[metric]
    return stats.fmt_value(v, True) if metric in rates and v is not None else stats.fmt(v)


def _column_descriptions(cols: list[str], runs: list[dict[str, Any]], descriptions: dict[str, dict[str, str]],
                         shown: dict[int, Any]) -> dict[str, str]:
    """What each column measures; where the page's experiments describe one name differently, each says its own.
    `shown` (run id -> RunMetrics): a run whose value of the column is derived has it too."""
    out = {}
    for c in cols:
        have = {str(r["experiment_id"]) for r in runs if c in r["metrics"] or c in shown[r["id"]].derived}
        said = {e: descriptions.get(e, {}).get(c) for e in sorted(have)}
        words = sorted({d for d in said.values() if d})
        out[c] = words[0] if len(words) == 1 else "; ".join(f"{e}: {d}" for e, d in said.items() if d)
    return {c: d for c, d in out.items() if d}


def _text(v: Any) -> str:
    """A value for a cell: strings as they are, nothing as a dash (never a raw `null`), the rest as JSON."""
    import json

    if v is None:
        return "—"
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)


def _cell(v: Any) -> str:
    """A finding table's cell: a count, or a rate the scan computed (an estimate: three significant digits)."""
    return display.number(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else _text(v)


# The keys of a finding's table that hold its rows, each a mapping of mappings: a variable's counts per value,
# an alias's per combination, a guard's 2x2 (as _guard_table words it). Rows come from these keys alone, so
# a value named like another key (`runs`, `strata`) is a row like any other.
ROW_KEYS = ("values", "combinations", "rows")


def _table(table: Any) -> tuple[list[str], list[tuple[str, list[str]]], list[str], list[tuple[str, str]]]:
    """A finding's table: (columns, rows) from its row keys, plus run names and scalar rows."""
    columns: list[str] = []
    rows: list[tuple[str, list[str]]] = []
    runs: list[str] = []
    scalars: list[tuple[str, str]] = []
    if not isinstance(table, dict):
        return columns, rows, runs, scalars
    cells: dict[str, dict[str, Any]] = {}
    for key, val in table.items():
        if key in ROW_KEYS and isinstance(val, dict):
            cells.update({str(k): v for k, v in val.items() if isinstance(v, dict)})
        elif key == "runs" and isinstance(val, list):
            runs = [str(x) for x in val]
        elif isinstance(val, list) and all(isinstance(x, str) for x in val):  # the strata's names, in words
            scalars.append((str(key).replace("_", " "), "; ".join(val) or "—"))
        else:
            scalars.append((str(key).replace("_", " "), _text(val)))
    for val in cells.values():
        columns += [str(c) for c in val if str(c) not in columns]
    rows = [(name, [_cell(val.get(c)) for c in columns]) for name, val in cells.items()]
    return [COLUMN_NAMES.get(c, c.replace("_", " ")) for c in columns], rows, runs, scalars


COLUMN_NAMES = {"units_k": "units with the outcome", "units_n": "units"}
NO_PROPOSAL = ("The scan proposes a separating experiment for a guard metric that always goes with the outcome; "
               "for a variable, the separating experiment is an A/B hypothesis that isolates it.")


def _proposal(proposal: Any, known: set[str]) -> tuple[str, list[tuple[str, str]], Link | None]:
    """(text, rows, registered hypothesis) of a proposed separating experiment, empty values left out."""
    if not isinstance(proposal, dict):
        return ("" if proposal is None else str(proposal)), [], None
    rows: list[tuple[str, str]] = []
    toggle = proposal.get("toggle")
    if toggle:
        frm, to = proposal.get("from"), proposal.get("to")
        rows.append(("toggle", f"{toggle}" + (f": {frm} → {to}" if frm and to else "")))
    hold = proposal.get("hold")
    if isinstance(hold, dict) and hold:
        rows.append(("hold", ", ".join(f"{k}={v}" for k, v in hold.items())))
    if proposal.get("why"):
        rows.append(("why this variable", str(proposal["why"])))
    reg = proposal.get("registered_as")
    registered = Link(f"hypotheses/{reg}.html", reg) if isinstance(reg, str) and reg in known else None
    return str(proposal.get("text") or proposal.get("description") or ""), rows, registered


def _guard_table(table: Any, factor: Any) -> Any:
    if isinstance(table, dict) and "outcome_with_guard" in table:  # a guard's 2x2 table over runs
        table = dict(table)
        label = str(factor)
        table["rows"] = {f"with {label}": {"runs with the outcome": table.pop("outcome_with_guard", None),
                                           "runs without it": table.pop("no_outcome_with_guard", None)},
                         f"without {label}": {"runs with the outcome": table.pop("outcome_without_guard", None),
                                              "runs without it": table.pop("no_outcome_without_guard", None)}}
    return table


def _run_links(run_names: list[str], runs: set[int]) -> list[Link]:
    import re

    links = []
    for name in run_names[:MAX_LINKS]:
        m = re.fullmatch(r"run (\d+)", name)
        if m and int(m.group(1)) in runs:
            links.append(Link(f"runs/{m.group(1)}.html", name))
    if len(run_names) > MAX_LINKS:
        links.append(Link("runs.html", f"+{len(run_names) - MAX_LINKS} more"))
    return links


def _finding(f: dict[str, Any], known: set[str], runs: set[int]) -> FindingView:
    f = dict(f)
    factor = f.pop("factor", None) or f.pop("metric", None)
    outcome = f.pop("outcome", None)
    kind = str(f.pop("kind", "") or "")
    flagged = bool(f.pop("flagged", False))
    across = bool(f.pop("across_executions", False))
    title = str(f.pop("title", "") or (f"{factor} and {outcome}" if factor and outcome else factor or "finding"))
    detail = str(f.pop("message", "") or f.pop("detail", "") or f.pop("description", ""))
    proposal: Any = None
    for key in ("proposal", "separating_experiment", "proposed"):
        if key in f:
            proposal = f.pop(key)
            break
    hids = f.pop("hypotheses", None) or ([f.pop("hypothesis_id")] if f.get("hypothesis_id") else [])
    proposal_text, proposal_rows, registered = _proposal(proposal, known)
    columns, trows, run_names, scalars = _table(_guard_table(f.pop("table", None), factor))
    rows = [("kind", kind)] if kind else []
    if outcome:
        rows.append(("outcome", str(outcome)))
    rows += scalars
    rows += _p_rows(f.pop("p", None), f.pop("test", None), f.pop("comparisons", 1), f.pop("p_adjusted", None),
                    str(f.pop("p_counts", None) or "runs"))
    effect = f.pop("effect", None)
    if isinstance(effect, dict):
        rows += [(str(k).replace("_", " "), _effect(str(k), v)) for k, v in effect.items() if v is not None]
    rows += [(str(k), _text(v)) for k, v in f.items() if v not in (None, "", [], {})]
    no_proposal = NO_PROPOSAL if flagged and not (proposal_text or proposal_rows) else ""
    return FindingView(title, kind, flagged, across, detail, rows, columns, trows, _run_links(run_names, runs),
                       proposal_text, proposal_rows, registered,
                       [Link(f"hypotheses/{h}.html", h) for h in hids if isinstance(h, str) and h in known],
                       no_proposal, "Proposed separating experiment" if any(k == "toggle" for k, _ in proposal_rows)
                       else "No recorded variable separates them yet")


# A finding's effects that are differences of two rates (they read in points, as a difference does in the verdict's
# text) and those that are p-values (never 0: display.p_value).
POINTS_EFFECTS = ("risk_difference", "units_rate_difference")
P_EFFECTS = ("runs_p", "units_p", "units_p_adjusted", "left_out_floor")


def _effect(key: str, v: Any) -> str:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if key in POINTS_EFFECTS:
            return display.points(v)
        if key in P_EFFECTS:
            return display.p_value(v)
        return display.number(v) if isinstance(v, float) else str(v)
    return _text(v)


def _p_rows(p: Any, test: Any, comparisons: Any, adjusted: Any, counts: str = "runs") -> list[tuple[str, str]]:
    """The p-value the flag is judged on (over runs or units, `counts`), and where it was the smallest of several,
    the count and the adjusted p."""
    if not isinstance(p, (int, float)):
        return []
    several = isinstance(comparisons, int) and comparisons > 1
    rows = [(f"{test or 'Fisher exact'} p ({counts})", display.p_value(p, comparisons if several else 1))]
    if several and isinstance(adjusted, (int, float)):
        rows += [("comparisons", str(comparisons)), (f"p adjusted (Bonferroni, {counts})", display.p_value(adjusted))]
    return rows


def confounds(findings: list[dict[str, Any]] | None, note: str, known: set[str], runs: set[int],
              page: Page) -> ConfoundContext:
    views = [_finding(f, known, runs) for f in sorted(findings or [], key=lambda f: (not f.get("flagged"),
                                                                                      not f.get("across_executions")))]
    return ConfoundContext(page, findings is not None, note, views)


def lineage_context(registry: Registry, data: StoreData, statuses: dict[str, str], page: Page) -> LineageContext:
    items = [lineage.LineageInput(h.id, h.parent, statuses[h.id], h.claim,
                                  (data.verdicts.get(h.id) or {}).get("created_at"),
                                  tuple(a.tested_by for a in h.assumptions if a.tested_by),
                                  _card_review(data, h.id).get("review", ""))
             for h in registry.hypotheses]
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
        arm_of = hypothesis_page.evidence_arms(data, h)
        for r in runs:
            arm = r["arm"] or arm_of.get(r["id"]) or "probe"
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
    ids = {h.id for h in registry.hypotheses}
    return LineageContext(page, graph, rests, [(h.id, h.parent) for h in registry.hypotheses
                                               if h.parent is not None and h.parent not in ids])
