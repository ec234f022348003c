"""User text in report.md (`wb report --format md`) renders as literal text: no link, emphasis, code span,
heading, quote, list or raw HTML made of it, wherever it lands. Checked by rendering with a CommonMark
parser with GFM tables (markdown-it-py), as a pull request or an issue would show it."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

import synth

HOSTILE = "# see [here](javascript:alert(1)) **bold** `code` _it_ ~~gone~~ <b>x</b> | y &amp; \\ end"
TAGS_FROM_TEXT = ("<a ", "<strong>bold", "<em>it", "<code>code", "<s>", "<del>", "<b>", "<h1", "href=")


def _render(md: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(md)


def _text(rendered: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", rendered))


@pytest.mark.parametrize("text", ["# h", "> q", "- li", "+ li", "* li", "1. ol", "2) ol", "===", "---", "***",
                                  "    indented", "<div>", "[a]: http://x", "![i](x.png)", "a*b*c", "x _y_ z",
                                  "__init__", "a\\*b", "&lt;", "&#60;", "`a`", "~~s~~", "a | b", "<http://x>", "!",
                                  "<!-- c -->", "<?php", "</p>", "x <= 0.02 and y >= 1", "a & b"])
def test_one_escape_keeps_any_text_literal(text: str) -> None:
    from workbench.report.markdown import md_text

    rendered = _render(md_text(text))
    assert rendered == f"<p>{html.escape(text.strip(), quote=False)}</p>\n", (md_text(text), rendered)


def test_comparisons_and_ampersands_stay_as_written() -> None:
    from workbench.report.markdown import md_text

    # the status marks quote regions ("<= 0.02"): readable in the raw Markdown, literal when rendered
    assert md_text("corruption_rate (treatment) <= 0.02 & aborts >= 1") == \
        "corruption_rate (treatment) <= 0.02 & aborts >= 1"


@pytest.mark.parametrize("text", ["a`b", "``", "a|b", "` x `", "plain"])
def test_code_spans_keep_any_text_literal_in_and_out_of_tables(text: str) -> None:
    from workbench.report.markdown import md_code

    assert _render(md_code(text)) == f"<p><code>{html.escape(text, quote=False)}</code></p>\n"
    table = _render(f"| h |\n| --- |\n| {md_code(text, cell=True)} |\n")
    assert f"<td><code>{html.escape(text, quote=False)}</code></td>" in table, table


@pytest.fixture
def hostile_md(tmp_path: Path) -> tuple[str, str]:
    """(hypothesis summary, board) of a workbench whose claim, metric description, verdict reasoning and
    check, and review author and body all hold HOSTILE."""
    from workbench.registry import load_registry
    from workbench.report.markdown import board_markdown, hypothesis_markdown
    from workbench.store import open_store, records

    root = synth.copy_workbench(tmp_path / "wb")
    hyp = root / "hypotheses.yaml"
    text = hyp.read_text(encoding="utf-8")
    claim = "claim: The HiCache+bf16 corruption is a side effect of the NIXL abort wedge."
    assert claim in text
    hyp.write_text(text.replace(claim, f"claim: {json.dumps(HOSTILE)}"), encoding="utf-8")
    exp = root / "experiments" / "agent-repro.yaml"
    text = exp.read_text(encoding="utf-8")
    assert "description: leak / sessions}" in text
    exp.write_text(text.replace("description: leak / sessions}", f"description: {json.dumps(HOSTILE)}}}"),
                   encoding="utf-8")
    reg = load_registry(root)
    store = open_store(str(tmp_path / "wb.duckdb"))
    try:
        with store.session() as s:
            ids = synth.add_ab_execution(s, reg, "wedge-confound", art_dir=tmp_path / "logs", replicates=1, seed=2,
                                         leak_rate={"control": 0.1, "treatment": 0.1}, verdict="falsified",
                                         reasoning=HOSTILE)
            records.add_review(s, hypothesis_id="wedge-confound", author=HOSTILE, body=HOSTILE, decision="comment",
                               verdict_id=ids["verdict_id"])
        return hypothesis_markdown(store, reg, "wedge-confound"), board_markdown(store, reg)
    finally:
        store.dispose()


def test_user_text_lands_literally_everywhere_in_report_md(hostile_md: tuple[str, str]) -> None:
    summary, board = hostile_md
    rendered = _render(summary)
    for tag in TAGS_FROM_TEXT:
        assert tag not in rendered, (tag, rendered)
    literal = " ".join(HOSTILE.split())
    # the claim (a quote), the description (the table by arm), the reasoning, the review's author and body
    assert _text(rendered).count(literal) >= 5, _text(rendered)
    assert "<h1" not in rendered and rendered.count("<blockquote>") == 1
    board_html = _render(board)
    for tag in TAGS_FROM_TEXT:
        assert tag not in board_html, (tag, board_html)
    assert "wedge-confound" in _text(board_html)


MARKUP = "\"'><script>alert(1)</script><img src=x onerror=alert(2)></script><!--"


def test_user_text_never_makes_markup_anywhere_in_the_site(tmp_path: Path) -> None:
    """The same places in the HTML site (text, title= attributes, the chart specs' JSON inside <script>):
    every page parses to the elements wb writes and nothing else."""
    from html.parser import HTMLParser

    from workbench.registry import load_registry
    from workbench.report import build_site
    from workbench.store import open_store, records

    root = synth.copy_workbench(tmp_path / "wb")
    claim = "claim: The HiCache+bf16 corruption is a side effect of the NIXL abort wedge."
    for path, old in ((root / "hypotheses.yaml", claim),
                      (root / "experiments" / "agent-repro.yaml", "description: leak / sessions}")):
        text = path.read_text(encoding="utf-8")
        assert old in text
        key = old.split(":")[0]
        path.write_text(text.replace(old, f"{key}: {json.dumps(MARKUP)}" + ("}" if old.endswith("}") else "")),
                        encoding="utf-8")
    reg = load_registry(root)
    store = open_store(str(tmp_path / "wb.duckdb"))
    try:
        with store.session() as s:
            ids = synth.add_ab_execution(s, reg, "wedge-confound", art_dir=root / ".wb" / "artifacts" / "m",
                                         replicates=1, verdict="falsified", reasoning=MARKUP)
            records.add_review(s, hypothesis_id="wedge-confound", author=MARKUP, body=MARKUP,
                               verdict_id=ids["verdict_id"])
        result = build_site(store, reg, tmp_path / "site")
    finally:
        store.dispose()

    class Elements(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.bad: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            names = {k for k, _ in attrs}
            if tag == "img" or any(k.startswith("on") for k in names):
                self.bad.append(f"<{tag} {attrs}>")
            if tag == "script" and not (dict(attrs).get("src", "").endswith((".js",))
                                        or dict(attrs).get("type") == "application/json"):
                self.bad.append(f"<script {attrs}>")

        def handle_comment(self, data: str) -> None:
            self.bad.append(f"<!--{data[:40]}")

    pages = [Path(result["index"]), Path(result["hypotheses"]["wedge-confound"]), Path(result["runs_list"]),
             Path(result["confounds"]), Path(result["lineage"])] + [Path(p) for p in result["runs"].values()]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        parser = Elements()
        parser.feed(text)
        assert not parser.bad, (page.name, parser.bad)
        assert "<script>alert" not in text
    hyp = Path(result["hypotheses"]["wedge-confound"]).read_text(encoding="utf-8")
    assert hyp.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 3  # claim, reasoning, review, description
