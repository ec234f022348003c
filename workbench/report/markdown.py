"""`wb report --format md`: a hypothesis' verdict, numbers and checks as Markdown for a PR or an issue."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from workbench.report.context import HypothesisContext, LeftOut, Page

if TYPE_CHECKING:
    from workbench.registry.folder import Registry
    from workbench.store.engine import Store


# Characters that make Markdown inline syntax anywhere in a line (emphasis, code, links, tables, strike,
# backslash escapes); `_` only where it can open or close emphasis (not inside a word: corruption_rate).
_INLINE = re.compile(r"[\\`*\[\]|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# What starts a block at the beginning of a line: a heading, a quote, a list item, a thematic break or setext line.
_LEADING = re.compile(r"^(?:[#>+=-]|\d+[.)])")
# Raw HTML, a comment or an autolink opens with '<' and a letter, '/', '!' or '?'; an entity is '&name;' or
# '&#123;'. A '<' or '&' of anything else (`<= 0.02`, `a & b`) is literal as written and stays readable.
_HTML = re.compile(r"<(?=[A-Za-z/!?])|&(?=#?[A-Za-z0-9]+;)")


def md_text(text: Any) -> str:
    """Untrusted text as literal Markdown on one line, in a paragraph, a quote or a table cell: raw HTML and
    entities shown as written, every character that would make a link, emphasis, code, a strike, a cell
    break or (at the start) a heading, list or quote escaped."""
    s = " ".join(str(text).split())
    s = _HTML.sub(lambda m: "&lt;" if m.group(0) == "<" else "&amp;", s)
    s = _INLINE.sub(lambda m: "\\" + m.group(0), s)
    return _LEADING.sub(lambda m: m.group(0)[:-1] + "\\" + m.group(0)[-1], s)  # 1\. and \# alike


def md_code(text: Any, *, cell: bool = False) -> str:
    """Untrusted text as one code span: fenced by more backticks than it holds; in a table cell its `|` is
    escaped too (GFM splits cells before it reads code spans)."""
    s = " ".join(str(text).split())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s.replace('|', chr(92) + '|') if cell else s}{pad}{fence}"


def render(ctx: HypothesisContext) -> str:
    # The header is the status by the one status rule, as the HTML page's badge and the board show it; a
    # verdict computed now from the runs left (its own was deleted with a run) is no status.
    out = [f"### {md_code(ctx.id)} — {md_text(ctx.status)}", ""]
    if ctx.status_note:
        out += [f"_Status: {md_text(ctx.status)} ({md_text(ctx.status_note)})_", ""]
    out.append(f"> {md_text(ctx.claim)}")
    out.append("")
    facts = [f"experiment {md_code(ctx.experiment)}"]
    if ctx.isolates:
        facts.append(f"isolates {md_code(ctx.isolates)}")
    if ctx.hold:
        facts.append("holds " + ", ".join(md_code(f"{k}={v}") for k, v in ctx.hold))
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
            out.append(md_text(v.reasoning))
            out.append("")
        if v.more_data:
            out.append(f"What would decide it: {md_text(v.more_data)}")
            out.append("")
    if ctx.analysis_note:
        out += [f"_Note: {md_text(ctx.analysis_note)}_", ""]
    if ctx.predictions:
        out += ["| prediction | observed | outcome |", "| --- | --- | --- |"]
        out += [f"| {md_text(p.text)} | {md_text(p.observed) or '–'} | {md_text(p.outcome) or '–'} |"
                for p in ctx.predictions]
        out.append("")
    if ctx.charts:
        out += ["| metric | " + " | ".join(md_text(a) for a in ctx.arm_names) + " | what it measures |",
                "| --- |" + " --- |" * (len(ctx.arm_names) + 1)]
        for c in ctx.charts:
            by_arm = {arm: f"{value} {interval}".strip() for arm, value, interval in c.rows}
            out.append(f"| {md_text(c.metric)} | " + " | ".join(md_text(by_arm.get(a, "–")) for a in ctx.arm_names)
                       + f" | {md_text(c.description) or '–'} |")
        out.append("")
    out += _undrawn_metrics(ctx)
    if ctx.probe_totals:
        out += ["| probed target | calls | processes |", "| --- | ---: | ---: |"]
        out += [f"| {md_code(t, cell=True)} | {calls} | {procs} |" for t, calls, procs in ctx.probe_totals]
        out.append("")
    if ctx.verdict and ctx.verdict.checks:
        out.append("Checks:")
        for c in ctx.verdict.checks:
            mark = "x" if c.passed else " "
            word = {"FAIL": "failed", "FLAG": "flagged", "n/a": "n/a"}.get(c.mark)
            flag = "" if word is None else f" **({word}; {md_text(c.meaning)})**" if c.meaning else f" **({word})**"
            out.append(f"- [{mark}] {md_text(c.name)}{flag}: {md_text(c.detail)}")
        out.append("")
    evidence = [r for r in ctx.runs if r.in_evidence]
    out.append(f"Runs: {len(ctx.runs)} in all, {len(evidence)} in the evidence"
               + (f" (execution {evidence[0].execution_id})" if evidence and evidence[0].execution_id is not None
                  else "") + ".")
    out += [""] + _review_lines(ctx)
    return "\n".join(out).rstrip() + "\n"


def _undrawn_metrics(ctx: HypothesisContext) -> list[str]:
    """What the predicted and guarded metrics measure, for those the table by arm does not show (no runs yet)."""
    drawn = {c.metric for c in ctx.charts}
    named = [p.metric for p in ctx.predictions if p.metric] + [m for _, m, _ in ctx.guards]
    lines = [f"- {md_code(m)}: {md_text(ctx.metric_descriptions[m])}" for m in dict.fromkeys(named)
             if m not in drawn and ctx.metric_descriptions.get(m)]
    return ["Metrics:"] + lines + [""] if lines else []


def _review_lines(ctx: HypothesisContext) -> list[str]:
    """Review state and history, for a pull-request description."""
    out = [f"Review: **{ctx.review_state}**" + (f" ({ctx.review_note})" if ctx.review_note else "")]
    for r in ctx.reviews:
        saw = f" on verdict {md_text(r.verdict_seen)} (evidence {md_code(r.evidence)})" if r.verdict_seen else ""
        stale = (" — self-approved" if r.self_approved else "") + (" — stale" if r.stale else "")
        out.append(f"- {md_text(r.author)}: {md_text(r.decision)}{saw}{stale}, {r.created_at}: "
                   f"{md_text(r.body)}")
    for e in ctx.executions:
        runs = ", ".join(r.text for r in e.runs) + (f" … ({e.n_runs} in all)" if e.n_runs > len(e.runs) else "")
        found = f": {md_text(e.aa_outcome)}" if e.aa_outcome else ""
        out.append(f"- execution {e.id} ({md_text(e.mode)}, {e.status}){found}; runs {runs or 'none'}; by "
                   f"{md_text(e.user)} on {md_text(e.host)} at {md_code(e.revision)}")
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


def board_markdown(store: Store, registry: Registry, left_out: tuple[LeftOut, ...] = ()) -> str:
    """Markdown table of every hypothesis with its status, key number and date; under it, each entry of
    hypotheses.yaml left out for a problem of its own (`left_out`), with its problems."""
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
            review = (c.review or "–") + (f" ({c.review_note})" if c.review_note else "")
            status = c.status + (f" ({c.status_note})" if c.status_note else "")
            out.append(f"| {md_code(c.id, cell=True)} | {md_text(status)} | {md_text(c.key_number)} | "
                       f"{md_text(c.date or '–')} | {md_text(review)} |")
    if left_out:
        out += ["", "Left out (a problem of its own; every problem: `wb hypothesis validate`):", ""]
        for e in left_out:
            name = "an entry without an id" if e.id is None else md_code(e.id) + (f" {md_text(e.named.strip())}"
                                                                                    if e.named else "")
            out.append(f"- {name}: " + "; ".join(md_text(p) for p in e.problems))
    return "\n".join(out) + "\n"
