"""`wb report --format md`: a hypothesis' verdict, numbers and checks as Markdown for a PR or an issue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.report.context import HypothesisContext, Page

if TYPE_CHECKING:
    from workbench.registry.loader import Registry
    from workbench.store.engine import Store



def _cell(text: Any) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


def _line(text: Any) -> str:
    """One Markdown line of untrusted text: no raw HTML, no line breaks."""
    return str(text).replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ").strip()


def render(ctx: HypothesisContext) -> str:
    # The header is the status by the one status rule, as the HTML page's badge and the board show it; a
    # verdict computed now from the runs left (its own was deleted with a run) is no status.
    out = [f"### `{ctx.id}` — {ctx.status}", ""]
    if ctx.status_note:
        out += [f"_Status: {ctx.status} ({_line(ctx.status_note)})_", ""]
    out.append(f"> {_line(ctx.claim)}")
    out.append("")
    facts = [f"experiment `{ctx.experiment}`"]
    if ctx.isolates:
        facts.append(f"isolates `{ctx.isolates}`")
    if ctx.hold:
        facts.append("holds " + ", ".join(f"`{k}={v}`" for k, v in ctx.hold))
    out.append("; ".join(facts))
    out.append("")
    if ctx.verdict:
        v = ctx.verdict
        when = f", {v.created_at[:16]}" if v.created_at else ""
        ex = f", execution {v.execution_id}" if v.execution_id is not None else ""
        out.append(f"**Verdict: {v.verdict}** ({v.source}{when}{ex})" if v.source == "stored" else
                   f"No verdict holds the status; re-analysing the stored runs now gives **{v.verdict}** "
                   "(computed now, not stored).")
        out.append("")
        if v.reasoning:
            out.append(_line(v.reasoning))
            out.append("")
        if v.more_data:
            out.append(f"What would decide it: {_line(v.more_data)}")
            out.append("")
    if ctx.analysis_note:
        out += [f"_Note: {_line(ctx.analysis_note)}_", ""]
    if ctx.predictions:
        out += ["| prediction | observed | outcome |", "| --- | --- | --- |"]
        out += [f"| {_cell(p.text)} | {_cell(p.observed) or '–'} | {_cell(p.outcome) or '–'} |" for p in ctx.predictions]
        out.append("")
    if ctx.charts:
        out += ["| metric | " + " | ".join(_cell(a) for a in ctx.arm_names) + " | what it measures |",
                "| --- |" + " --- |" * (len(ctx.arm_names) + 1)]
        for c in ctx.charts:
            by_arm = {arm: f"{value} {interval}".strip() for arm, value, interval in c.rows}
            out.append(f"| {_cell(c.metric)} | " + " | ".join(_cell(by_arm.get(a, "–")) for a in ctx.arm_names)
                       + f" | {_cell(_line(c.description)) or '–'} |")
        out.append("")
    out += _undrawn_metrics(ctx)
    if ctx.probe_totals:
        out += ["| probed target | calls | processes |", "| --- | ---: | ---: |"]
        out += [f"| `{_cell(t)}` | {calls} | {procs} |" for t, calls, procs in ctx.probe_totals]
        out.append("")
    if ctx.verdict and ctx.verdict.checks:
        out.append("Checks:")
        for c in ctx.verdict.checks:
            mark = "x" if c.passed else " "
            flag = "" if c.passed or c.passed is None else f" **(failed; {_line(c.meaning)})**" if c.meaning else \
                " **(failed)**"
            out.append(f"- [{mark}] {_line(c.name)}{flag}: {_line(c.detail)}")
        out.append("")
    evidence = [r for r in ctx.runs if r.in_evidence]
    out.append(f"Runs: {len(ctx.runs)} shown, {len(evidence)} in the evidence"
               + (f" (execution {evidence[0].execution_id})" if evidence and evidence[0].execution_id is not None
                  else "") + ".")
    out += [""] + _review_lines(ctx)
    return "\n".join(out).rstrip() + "\n"


def _undrawn_metrics(ctx: HypothesisContext) -> list[str]:
    """What the predicted and guarded metrics measure, for those the table by arm does not show (no runs yet)."""
    drawn = {c.metric for c in ctx.charts}
    named = [p.metric for p in ctx.predictions if p.metric] + [m for _, m, _ in ctx.guards]
    lines = [f"- `{_cell(m)}`: {_line(ctx.metric_descriptions[m])}" for m in dict.fromkeys(named)
             if m not in drawn and ctx.metric_descriptions.get(m)]
    return ["Metrics:"] + lines + [""] if lines else []


def _review_lines(ctx: HypothesisContext) -> list[str]:
    """Review state and history, for a pull-request description."""
    out = [f"Review: **{ctx.review_state}**" + (f" ({ctx.review_note})" if ctx.review_note else "")]
    for r in ctx.reviews:
        saw = f" on verdict {r.verdict_seen} (evidence `{r.evidence}`)" if r.verdict_seen else ""
        out.append(f"- {_cell(r.author)}: {r.decision}{saw}{' — stale' if r.stale else ''}, {r.created_at}: "
                   f"{_line(r.body)}")
    for e in ctx.executions:
        out.append(f"- execution {e.id} ({e.mode}, {e.status}) by {_cell(e.user)} on {_cell(e.host)} at "
                   f"`{_cell(e.revision)}`")
    return out


def hypothesis_markdown(store: Store, registry: Registry, hypothesis_id: str) -> str:
    """Markdown summary of one hypothesis: verdict and reasoning, predictions, numbers by arm, checks."""
    from datetime import datetime, timezone

    from workbench.report import hypothesis_page, pages
    from workbench.report.site import gather

    h = registry.hypothesis(hypothesis_id)
    data, analyses, _, _ = gather(store, registry, [h.id], confounds=False)
    analysis, note = analyses.get(h.id, (None, ""))
    page = Page(title=h.id, root="", section="hypothesis",
                generated_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    ctx = hypothesis_page.build(h, registry, data, analysis, note, page, pages.status_of(registry, data))
    return render(ctx)


def board_markdown(store: Store, registry: Registry) -> str:
    """Markdown table of every hypothesis with its status, key number and date."""
    from datetime import datetime, timezone

    from workbench.report import pages
    from workbench.report.site import gather

    # Every hypothesis analysed as the site's board analyses it, so both show the same figure.
    data, analyses, _, _ = gather(store, registry, confounds=False)
    page = Page("Hypotheses", "", "board", datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    idx = pages.index(registry, data, pages.status_of(registry, data), page, analyses)
    out = ["| hypothesis | status | key number | date | review |", "| --- | --- | --- | --- | --- |"]
    for col in idx.columns:
        for c in col.cards:
            review = (c.review or "awaiting review") + (f" ({c.review_note})" if c.review_note else "")
            status = c.status + (f" ({c.status_note})" if c.status_note else "")
            out.append(f"| `{_cell(c.id)}` | {_cell(status)} | {_cell(c.key_number)} | {c.date or '–'} | {review} |")
    return "\n".join(out) + "\n"
