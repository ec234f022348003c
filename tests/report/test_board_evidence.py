"""The board's key number and run count come from the evidence a status rests on (imported runs pooled by
`wb hypothesis analyze` included), and the Markdown and the HTML take status and figure from one rule,
also after `wb runs delete` removed the runs a verdict rested on."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "analysis"))

from analysis_helpers import CONTROL, TREATMENT, add_execution, add_run  # noqa: E402

HID = "wedge-confound"
SEED_KEY = "corruption_rate (treatment): 14/80 = 17.5%"


@pytest.fixture
def wb(tmp_path: Path, cli, monkeypatch) -> dict[str, Any]:
    """A workbench with the shipped hypotheses and experiments and an empty store; `wb(...)` runs the CLI on it."""
    root = tmp_path / "wbroot"
    root.mkdir()
    shutil.copy(REPO / "hypotheses.yaml", root / "hypotheses.yaml")
    shutil.copytree(REPO / "experiments", root / "experiments")
    monkeypatch.setenv("WB_ROOT", str(root))
    monkeypatch.setenv("WB_DB", str(tmp_path / "wb.duckdb"))

    def run(*args: str) -> str:
        code, out, err = cli(*args)
        assert code == 0, err
        return out

    return {"root": root, "db": str(tmp_path / "wb.duckdb"), "run": run, "site": tmp_path / "site"}


def _md_board(wb: dict[str, Any]) -> dict[str, list[str]]:
    """`wb report --format md`: hypothesis id -> [status, key number, date, review]."""
    rows = {}
    for line in wb["run"]("report", "--format", "md").splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows[cells[0].strip("`")] = cells[1:]
    return rows


def _html_board(wb: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The built site's board: hypothesis id -> {status, key, runs}, and the hypothesis page's status badge."""
    if wb["site"].exists():
        shutil.rmtree(wb["site"])
    wb["run"]("report", "--out", str(wb["site"]))
    html = (wb["site"] / "index.html").read_text()
    cards = {}
    for card in re.findall(r'<article class="card (\w+)">(.*?)</article>', html, re.S):
        hid = re.search(r'href="hypotheses/([^"]+)\.html"', card[1]).group(1)
        cards[hid] = {"status": card[0], "key": re.search(r'<p class="key">([^<]*)</p>', card[1]).group(1),
                      "runs": re.search(r"<span>(\d+) runs?</span>", card[1]).group(1)}
    page = (wb["site"] / "hypotheses" / f"{HID}.html").read_text()
    cards[HID]["page"] = re.search(r'<h1>[^<]*<span class="badge (\w+)">', page).group(1)
    return cards


_IMPORTED: dict[str, bytes] = {}  # the store after the import and the analysis below, made once


def _import_and_analyze(wb: dict[str, Any]) -> None:
    """The seed evidence imported and wedge-confound analyzed into the (new) store. The same two commands on the
    same shipped files give the same store (it names no path of its workbench), so they run once per module and
    each test gets a copy of the store's file."""
    db = Path(wb["db"])
    assert not db.exists()
    if _IMPORTED:
        db.write_bytes(_IMPORTED["file"])
        return
    wb["run"]("import", "evidence", str(REPO / "evidence" / "seed-runs.csv"))
    wb["run"]("hypothesis", "analyze", HID)
    assert not Path(f"{db}.wal").exists() and not (wb["root"] / ".wb").exists()  # the store's file is all of it
    _IMPORTED["file"] = db.read_bytes()


def test_pooled_verdict_over_imported_runs_gives_the_card_its_number_and_runs(wb):
    _import_and_analyze(wb)
    md = _md_board(wb)
    html = _html_board(wb)
    assert md[HID][0].startswith("falsified") and html[HID]["status"] == "falsified"
    assert md[HID][1] == SEED_KEY, md[HID]
    assert html[HID]["key"] == SEED_KEY
    # the three imported runs the pooled verdict rests on (two control, one treatment)
    assert html[HID]["runs"] == "3"


def test_key_number_reads_the_stored_verdict_when_no_fresh_analysis_is_at_hand(wb):
    from workbench.registry import load_registry
    from workbench.report import hypothesis_page, pages
    from workbench.report.site import gather
    from workbench.store import open_store

    _import_and_analyze(wb)
    registry = load_registry(wb["root"])
    store = open_store(wb["db"], read_only=True)
    try:
        data, _, _, _ = gather(store, registry, [], confounds=False)
    finally:
        store.dispose()
    assert pages.key_number(registry.hypothesis(HID), registry, data, None) == SEED_KEY
    runs, _ = hypothesis_page.evidence_runs(data, HID)
    assert sorted(r["label"] for r in runs) == ["post-bf16-hicache-postfix", "pre-ab-bf16", "pre-bf16-hicache"]


def _md_header_status(wb: dict[str, Any]) -> str:
    head = wb["run"]("report", "--format", "md", "--hypothesis", HID).splitlines()[0]
    return re.fullmatch(rf"### `{HID}` — (\w+).*", head).group(1)


def _agree(wb: dict[str, Any]) -> dict[str, Any]:
    """Markdown board, Markdown header and HTML (board card and page badge) must agree on status and figure."""
    md, html = _md_board(wb), _html_board(wb)
    status = md[HID][0].split(" (")[0]
    assert status == html[HID]["status"] == html[HID]["page"] == _md_header_status(wb)
    assert md[HID][1] == html[HID]["key"]
    return {"status": status, "key": md[HID][1]}


def test_after_deleting_a_controlled_verdicts_run_markdown_and_html_agree(wb):
    from workbench.store import open_store

    store = open_store(wb["db"])
    try:
        ex = add_execution(store)
        for r in (1, 2):
            for arm, v in (("control", CONTROL), ("treatment", TREATMENT)):
                add_run(store, execution_id=ex, arm=arm, variables=v, replicate=r, outcomes={"leak": 5, "done": 35})
    finally:
        store.dispose()
    wb["run"]("hypothesis", "analyze", HID)
    assert _agree(wb)["status"] == "inconclusive"
    wb["run"]("runs", "delete", "1", "--yes")
    now = _agree(wb)
    assert now["status"] == "open"  # the verdict went with its run: the status rule falls back to the declared one
    page = (wb["site"] / "hypotheses" / f"{HID}.html").read_text()
    verdict = page[page.index('<section id="verdict">'):]
    verdict = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", verdict[:verdict.index("<h3>")]))
    # as the Markdown says it: the page's verdict box is no verdict beside the 'open' badge
    assert re.search(r"No verdict holds the status; re-analysing the stored runs now gives \w+ \(computed now, not "
                     r"stored\)", verdict), verdict
    md = wb["run"]("report", "--format", "md", "--hypothesis", HID)
    assert "**Verdict:" not in md  # what the remaining runs give now is no verdict
    assert "computed now, not stored" in md


def test_after_deleting_an_imported_run_markdown_and_html_agree(wb):
    _import_and_analyze(wb)
    assert _agree(wb) == {"status": "falsified", "key": SEED_KEY}
    wb["run"]("runs", "delete", "6", "--yes")
    assert _agree(wb)["status"] == "open"


def test_pooled_verdict_page_shows_the_imported_runs_it_rests_on(wb):
    _import_and_analyze(wb)
    _html_board(wb)
    page = (wb["site"] / "hypotheses" / f"{HID}.html").read_text()
    runs = page[page.index('<section id="runs">'):]
    runs = runs[:runs.index("</section>")]
    rows = re.findall(r'<tr><td><a href="\.\./runs/(\d+)\.html">.*?<td>(✓?)</td></tr>', runs)
    labels = {"pre-bf16-hicache": 2, "pre-ab-bf16": 5, "post-bf16-hicache-postfix": 6}  # the import's order
    assert sorted((int(i), mark) for i, mark in rows) == [(i, "✓") for i in sorted(labels.values())], runs
    assert 'data-metric="corruption_rate"' in page  # its chart, drawn from the runs the verdict rests on
    # the Markdown lists no runs: it counts them (it said "3 shown", of a table only the page has)
    md = wb["run"]("report", "--format", "md", "--hypothesis", HID)
    assert "Runs: 3 in all, 3 in the evidence." in md and " shown" not in md, md


def test_lineage_and_runs_table_name_the_arm_the_analysis_put_each_imported_run_in(wb):
    _import_and_analyze(wb)
    _html_board(wb)
    lineage = (wb["site"] / "lineage.html").read_text()
    rests = lineage[lineage.index('<table class="rests">'):]
    row = next(r for r in rests.split("<tr>") if f'href="hypotheses/{HID}.html"' in r)
    arms = dict(re.findall(r"<div>(\w+): (.*?)</div>", row))
    assert sorted(arms) == ["control", "treatment"], row
    assert re.findall(r">(\d+)</a>", arms["control"]) == ["2", "5"]
    assert re.findall(r">(\d+)</a>", arms["treatment"]) == ["6"]
    page = (wb["site"] / "hypotheses" / f"{HID}.html").read_text()
    rows = dict(re.findall(r'<tr><td><a href="\.\./runs/(\d+)\.html">\d+</a></td>'  # then the label, the execution
                           r'<td>[^<]*</td><td>[^<]*</td><td>(\w*)</td>', page))
    assert rows == {"2": "control", "5": "control", "6": "treatment"}, rows


def test_markdown_marks_a_check_that_could_not_be_made_n_a(wb):
    """A check the data could not make is n/a in the Markdown as in the CLI and the HTML (it was a bare unchecked
    box, read as a failed check)."""
    from workbench.store import open_store

    store = open_store(wb["db"])
    try:
        ex = add_execution(store)
        for r in (1, 2):  # no control run: the isolation check cannot be made
            add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, replicate=r,
                    outcomes={"leak": 5, "done": 35})
    finally:
        store.dispose()
    assert "[n/a] isolation: only arm treatment has runs" in wb["run"]("hypothesis", "analyze", HID)
    md = wb["run"]("report", "--format", "md", "--hypothesis", HID)
    assert re.search(r"^- \[ \] isolation \*\*\(n/a; [^)]+\)\*\*: only arm treatment has runs\b", md, re.M), md
    assert re.search(r"^- \[ \] guard: aborts \(treatment\) == 0 \*\*\(n/a; makes the verdict inconclusive\)\*\*",
                     md, re.M), md
    assert re.search(r"^- \[x\] fingerprint: ", md, re.M)
    html = _html_board(wb)
    assert html[HID]["status"] == "inconclusive"
    page = (wb["site"] / "hypotheses" / f"{HID}.html").read_text()
    assert re.search(r'<td class="mark">n/a</td><td>isolation</td>', page)


def test_an_imported_runs_page_names_its_experiment_without_an_empty_version(wb):
    """Imported evidence records no experiment version: its run page says the experiment, not 'agent-repro v'."""
    _import_and_analyze(wb)
    _html_board(wb)
    page = (wb["site"] / "runs" / "1.html").read_text()
    assert "<dt>experiment</dt><dd>agent-repro</dd>" in page
    assert "<dt>source</dt><dd>import</dd>" in page


def test_who_ran_what_names_the_executions_set_values(wb):
    """An execution run with `--set causal_model=wedge` was listed as a plain "fixed" one in "Who ran what" (HTML
    and Markdown): its runs measured another world than the hypothesis's own config."""
    from workbench.store import open_store

    store = open_store(wb["db"])
    try:
        for overrides in (None, {"causal_model": "wedge"}):
            ex = add_execution(store, overrides=overrides)
            extra = overrides or {}
            for arm, values in (("control", CONTROL), ("treatment", TREATMENT)):
                add_run(store, execution_id=ex, arm=arm, variables=values | extra, replicate=1,
                        outcomes={"leak": 1, "done": 79})
    finally:
        store.dispose()
    wb["run"]("report", "--out", str(wb["site"]))
    page = (wb["site"] / "hypotheses" / f"{HID}.html").read_text()
    table = re.search(r'<table class="executions">(.*?)</table>', page, re.S).group(1)
    rows = re.findall(r"<tr><td>(\d+)</td><td>([^<]*)</td>", table)
    assert rows == [("1", "fixed"), ("2", "fixed, --set causal_model=wedge")], rows
    md = wb["run"]("report", "--format", "md", "--hypothesis", HID)
    assert "- execution 2 (fixed, --set causal_model=wedge, " in md and "- execution 1 (fixed, " in md, md


def test_who_ran_what_marks_a_smoke_execution(wb):
    """An execution of fewer replicates than the design plans (`--replicates 1`) was listed as a plain "fixed" one in
    "Who ran what", though its verdict is a smoke run's, as `--set` is marked there."""
    from workbench.analysis import analyze_stored
    from workbench.analysis.stored import record_verdict
    from workbench.registry import load_registry
    from workbench.store import open_store

    store = open_store(wb["db"])
    try:
        ex = add_execution(store)
        for arm, values in (("control", CONTROL), ("treatment", TREATMENT)):
            add_run(store, execution_id=ex, arm=arm, variables=values, replicate=1, outcomes={"leak": 1, "done": 79})
        record_verdict(store, analyze_stored(store, load_registry(wb["root"]), HID, execution_id=ex), execution_id=ex)
    finally:
        store.dispose()
    wb["run"]("report", "--out", str(wb["site"]))
    page = (wb["site"] / "hypotheses" / f"{HID}.html").read_text()
    table = re.search(r'<table class="executions">(.*?)</table>', page, re.S).group(1)
    rows = re.findall(r"<tr><td>(\d+)</td><td>([^<]*)</td>", table)
    assert rows == [("1", "fixed, --replicates 1 (smoke: 1 of 3 planned replicates)")], rows
    md = wb["run"]("report", "--format", "md", "--hypothesis", HID)
    assert "- execution 1 (fixed, --replicates 1 (smoke: 1 of 3 planned replicates), " in md, md


def test_a_card_whose_first_run_is_under_way_does_not_say_no_runs_yet(wb):
    """During a first run the board's card read "no runs yet" beside "1 run"."""
    from workbench.store import open_store

    store = open_store(wb["db"])
    try:
        ex = add_execution(store)
        add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=1, outcomes=None, status="running")
    finally:
        store.dispose()
    card = _html_board(wb)[HID]
    assert card["runs"] == "1" and card["key"] == "no run ended ok yet", card
