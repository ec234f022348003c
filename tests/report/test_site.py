"""The built site as files: self-contained, escaped, every link inside the folder, numbers where they belong."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import synth
from workbench.errors import BadInput

PAGE_LIMIT = 200 * 1024


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []
        self.specs: list[str] = []
        self._in_spec = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("href", "src"):
            if a.get(key) is not None:
                self.refs.append((tag, key, a[key] or ""))
        self._in_spec = tag == "script" and "chart-spec" in (a.get("class") or "")

    def handle_data(self, data: str) -> None:
        if self._in_spec:
            self.specs.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_spec = False


def _parse(path: Path) -> _Refs:
    p = _Refs()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def _html_files(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*.html") if "artifacts" not in p.parts)


def test_build_returns_every_page(site: dict[str, Any], seeded: dict[str, Any]) -> None:
    ids = {h.id for h in seeded["registry"].hypotheses}
    assert set(site["hypotheses"]) == ids
    assert Path(site["index"]).name == "index.html"
    for key in ("index", "lineage", "confounds", "runs_list"):
        assert Path(site[key]).is_file()
    assert len(site["runs"]) == 10 and all(Path(p).is_file() for p in site["runs"].values())
    bundle = site["out"] / "assets" / "vega-bundle.js"
    assert bundle.stat().st_size > 500_000  # the one copy of the chart runtime
    assert sum(1 for p in site["out"].rglob("*.js") if p.stat().st_size > 100_000) == 1


def test_every_reference_stays_inside_the_site(site: dict[str, Any]) -> None:
    out = site["out"]
    checked = 0
    for page in _html_files(out):
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"cdn\.|jsdelivr|unpkg", text), page
        for tag, key, ref in _parse(page).refs:
            assert not re.match(r"^[a-z]+:", ref), f"{page.name}: {tag} {key}={ref} leaves the site"
            target = (page.parent / ref.split("#")[0]).resolve()
            assert target.is_relative_to(out.resolve()), f"{page.name}: {ref} points outside"
            assert target.exists(), f"{page.name}: {ref} does not resolve"
            checked += 1
    assert checked > 100


def test_pages_stay_under_200_kb(site: dict[str, Any]) -> None:
    for page in _html_files(site["out"]):
        assert page.stat().st_size <= PAGE_LIMIT, page


def test_log_lines_are_escaped(site: dict[str, Any], seeded: dict[str, Any]) -> None:
    run_id = seeded["ids"]["wedge"]["run_ids"][0]
    text = Path(site["runs"][run_id]).read_text(encoding="utf-8")
    assert synth.XSS_LINE not in text
    assert html.escape(synth.XSS_LINE, quote=False) in text
    review = Path(site["hypotheses"]["wedge-confound"]).read_text(encoding="utf-8")
    assert synth.XSS_LINE not in review and "Agree: the wedge is not it." in review


def test_large_log_is_cut_with_a_link_to_the_whole_file(site: dict[str, Any], seeded: dict[str, Any]) -> None:
    run_id = seeded["ids"]["big"]["run_ids"][0]
    page = Path(site["runs"][run_id])
    text = page.read_text(encoding="utf-8")
    assert "bytes not shown" in text and "LAST LINE OF THE LOG" in text
    assert page.stat().st_size < 40_000
    links = [ref for _, key, ref in _parse(page).refs if "artifacts/" in ref]
    assert links, "no link to the full log"
    full = (page.parent / links[0]).resolve()
    assert full.stat().st_size > 200_000
    assert full.read_text(encoding="utf-8").endswith("LAST LINE OF THE LOG\n")


def test_secrets_in_fingerprints_stay_redacted(site: dict[str, Any], seeded: dict[str, Any]) -> None:
    text = Path(site["runs"][seeded["ids"]["wedge"]["run_ids"][0]]).read_text(encoding="utf-8")
    assert "s3cret" not in text and "API_TOKEN" in text


def test_probe_counts_per_process_and_target(site: dict[str, Any], seeded: dict[str, Any]) -> None:
    page = Path(site["hypotheses"]["dead-code-dsaindexerpoolhost"]).read_text(encoding="utf-8")
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", page.split('id="probes"')[1].split("</section>")[0], re.S)
    cells = [re.sub(r"<[^>]+>", " ", r).split() for r in rows]
    assert ["run", "9", "workbench.sim.hicache:DSAIndexerPoolHost", "prefill", "1000", "0", "yes"] in cells
    assert ["run", "10", "workbench.sim.hicache:DeepSeekV4PagedHostPool", "decode", "2001", "3", "yes"] in cells
    assert "<strong>0</strong> calls in 4 processes" in page
    run_page = Path(site["runs"][seeded["ids"]["probe"][0]]).read_text(encoding="utf-8")
    assert run_page.count("workbench.sim.hicache:DSAIndexerPoolHost") == 2 and "prefill" in run_page


def test_hypothesis_page_shows_verdict_checks_arms_and_diff(site: dict[str, Any]) -> None:
    text = Path(site["hypotheses"]["wedge-confound"]).read_text(encoding="utf-8")
    assert "lies entirely above the predicted region" in text
    # A failed check under a verdict that stands says so (the stored check predates recorded effects).
    assert re.search(r'<tr class="flag"><td class="mark">FLAG</td><td>attrition</td><td>[^<]*</td>'
                     r'<td>does not change the verdict: falsified stands</td>', text)
    assert text.count('<td class="mark">pass</td>') == 3
    assert '<span class="del">-nixl_abort_fix=off</span>' in text
    assert '<span class="add">+nixl_abort_fix=on</span>' in text
    assert "tested by" not in text.split('id="assumptions"')[1].split("</section>")[0]
    race = Path(site["hypotheses"]["hicache-bf16-race"]).read_text(encoding="utf-8")
    assert ('tested by <a href="wedge-confound.html">wedge-confound</a>, which claims “The HiCache+bf16 corruption '
            'is a side effect of the NIXL abort wedge.” — that claim is <span class="badge falsified">') in race


def test_chart_specs_are_valid_vega_lite_with_intervals(site: dict[str, Any]) -> None:
    from workbench.report.charts import validate_spec

    specs = [json.loads(s) for s in _parse(Path(site["hypotheses"]["wedge-confound"])).specs]
    assert len(specs) >= 5
    by_title = {s["title"]: s for s in specs}
    rate = by_title["corruption_rate"]
    est = {row["arm"]: row for row in rate["datasets"]["est"]}
    assert set(est) == {"control", "treatment"}
    for row in est.values():
        assert row["lo"] <= row["estimate"] <= row["hi"] and row["hi"] > row["lo"]
    band = rate["datasets"]["bands"]
    assert band and band[0]["arm"] == "treatment" and band[0]["hi"] == 0.02
    assert by_title["aborts"]["datasets"]["lines"][0]["kind"] == "required"
    for s in specs:
        validate_spec(s)


def test_board_lists_hypotheses_by_status(site: dict[str, Any]) -> None:
    text = Path(site["index"]).read_text(encoding="utf-8")
    falsified = text.split('class="column status-falsified"')[1].split("</section>")[0]
    assert "wedge-confound" in falsified and "dead-code-dsaindexerpoolhost" in falsified
    opened = text.split('class="column status-open"')[1].split("</section>")[0]
    assert "token-granular-geometry" in opened and "no runs yet" in opened
    assert "corruption_rate (treatment):" in falsified


def test_lineage_page_links_every_node_and_what_verdicts_rest_on(site: dict[str, Any], seeded: dict[str, Any]) -> None:
    text = Path(site["lineage"]).read_text(encoding="utf-8")
    for h in seeded["registry"].hypotheses:
        assert f'<a href="hypotheses/{h.id}.html" class="node' in text
    assert text.count('<path class="edge"') == sum(1 for h in seeded["registry"].hypotheses if h.parent)
    assert text.count('<path class="tested"') == sum(1 for h in seeded["registry"].hypotheses
                                                    for a in h.assumptions if a.tested_by)
    rests = text.split('class="rests"')[1]
    assert "git_commit=abc1234" in rests and "agent-repro v1" in rests
    for rid in seeded["ids"]["wedge"]["run_ids"]:
        assert f'href="runs/{rid}.html"' in rests


def test_confound_report_lists_findings(site: dict[str, Any]) -> None:
    text = Path(site["confounds"]).read_text(encoding="utf-8")
    assert 'class="finding' in text and "corruption_rate" in text


def test_hypothesis_page_shows_the_stored_verdict_and_per_arm_numbers(site: dict[str, Any]) -> None:
    # The site built once from the seeded store (it built the same site again from the same store, read only).
    text = Path(site["hypotheses"]["wedge-confound"]).read_text(encoding="utf-8")
    assert "lies entirely above the predicted region" in text  # the stored verdict
    assert "Wilson 95%" in text and "/160 = " in text  # per-arm numbers of the analysis


def test_rebuild_replaces_its_own_site_and_refuses_a_foreign_folder(seeded: dict[str, Any], tmp_path: Path) -> None:
    from workbench.report import build_site
    from workbench.store import open_store

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    store = open_store(str(seeded["db"]), read_only=True)
    try:
        with pytest.raises(BadInput):
            build_site(store, seeded["registry"], foreign)
        out = tmp_path / "site"
        build_site(store, seeded["registry"], out)
        stale = out / "hypotheses" / "gone.html"
        manifest = json.loads((out / ".wb-site.json").read_text())
        manifest["files"].append("hypotheses/gone.html")
        (out / ".wb-site.json").write_text(json.dumps(manifest))
        stale.write_text("old")
        build_site(store, seeded["registry"], out)
        assert not stale.exists() and (out / "index.html").is_file()
        assert (foreign / "notes.txt").read_text() == "mine"
    finally:
        store.dispose()


def test_a_deleted_runs_artifacts_leave_the_site_with_its_page(seeded: dict[str, Any], tmp_path: Path) -> None:
    """A run deleted from the store takes its copied logs out of the site too, not only its page."""
    import shutil

    from workbench.app import Workbench
    from workbench.report import build_site
    from workbench.settings import Settings
    from workbench.store import open_store

    db = tmp_path / "wb.duckdb"
    shutil.copy(seeded["db"], db)
    out = tmp_path / "site"
    gone = seeded["ids"]["big"]["run_ids"][0]
    with open_store(str(db), read_only=True) as store:
        build_site(store, seeded["registry"], out)
    assert list((out / "artifacts" / str(gone)).iterdir())
    Workbench.open(Settings(db=str(db), root=seeded["root"])).delete_runs([gone])
    with open_store(str(db), read_only=True) as store:
        build_site(store, seeded["registry"], out)
    assert not (out / "runs" / f"{gone}.html").exists()
    assert not (out / "artifacts" / str(gone)).exists()
    files = json.loads((out / ".wb-site.json").read_text())["files"]
    assert not [f for f in files if f.startswith(f"artifacts/{gone}/")]
    assert all((out / f).is_file() for f in files)


def test_a_run_of_a_hypothesis_without_a_page_names_it(seeded: dict[str, Any], tmp_path: Path) -> None:
    """A wb isolate probe's run (its generated hypothesis is not in hypotheses.yaml) is named on the runs list
    and its run page as `wb runs list` names it, without a link to a page the site does not have."""
    import shutil

    from workbench.report import build_site
    from workbench.store import open_store, records

    db = tmp_path / "wb.duckdb"
    shutil.copy(seeded["db"], db)
    with open_store(str(db)) as store, store.session() as session:
        rid = records.create_run(session, experiment_id="agent-repro", variables={"hicache": "on"},
                                 hypothesis_id="iso-0123456789-p0", arm="probe", status="ok").id
    with open_store(str(db), read_only=True) as store:
        result = build_site(store, seeded["registry"], tmp_path / "site")
    row = re.search(rf'<tr><td><a href="runs/{rid}.html">{rid}</a></td><td>(.*?)</td>',
                    Path(result["runs_list"]).read_text(encoding="utf-8"))
    assert row and "iso-0123456789-p0" in row.group(1) and "href" not in row.group(1)
    page = Path(result["runs"][rid]).read_text(encoding="utf-8")
    assert re.search(r"<dt>hypothesis</dt><dd>iso-0123456789-p0 \(not in hypotheses.yaml\)</dd>", page)
    assert "hypotheses/iso-0123456789-p0.html" not in page


def test_the_runs_page_names_imported_runs_by_their_labels(seed_site: Path, cli) -> None:
    """Imported evidence has no hypothesis and no arm: its rows on runs.html were a bare id, where `wb runs list`
    names each by the label it was imported with (post-bf16-hicache-postfix)."""
    import csv
    import io

    code, out, err = cli("runs", "list", "--format", "tsv")
    assert code == 0, err
    labels = {r["id"]: r["label"] for r in csv.DictReader(io.StringIO(out), delimiter="\t")}
    assert labels["6"] == "post-bf16-hicache-postfix", labels
    page = (seed_site / "runs.html").read_text(encoding="utf-8")
    head = re.findall(r"<th[^>]*>([^<]*)</th>", page[page.index("<thead>"):page.index("</thead>")])
    assert head[:2] == ["run", "label"], head
    shown = {rid: html.unescape(label) for rid, label in
             re.findall(r'<tr><td><a href="runs/(\d+)\.html">\d+</a></td><td>([^<]*)</td>', page)}
    assert shown == labels, shown


def test_a_hypothesis_page_names_its_imported_runs_by_their_labels(seed_site: Path, cli) -> None:
    """wedge-confound's analysis pools the imported evidence, whose runs have a label but no hypothesis: its page's
    runs table gave each a bare id, where runs.html and `wb runs list` name it by its label."""
    import csv
    import io

    code, out, err = cli("runs", "list", "--format", "tsv")
    assert code == 0, err
    labels = {r["id"]: r["label"] for r in csv.DictReader(io.StringIO(out), delimiter="\t")}
    page = (seed_site / "hypotheses" / "wedge-confound.html").read_text(encoding="utf-8")
    runs = page[page.index('<section id="runs">'):]
    runs = runs[:runs.index("</table>")]
    head = re.findall(r"<th[^>]*>([^<]*)</th>", runs[runs.index("<thead>"):runs.index("</thead>")])
    assert head[:2] == ["run", "label"], head
    shown = {rid: html.unescape(label) for rid, label in
             re.findall(r'<tr><td><a href="\.\./runs/(\d+)\.html">\d+</a></td><td>([^<]*)</td>', runs)}
    assert shown and shown == {rid: labels[rid] for rid in shown}, shown


def test_a_build_stopped_by_ctrl_c_leaves_the_previous_site_whole(seeded: dict[str, Any], tmp_path: Path,
                                                                   cache_home: Path) -> None:
    """Ctrl-C as the first file of a new build lands: the site folder is the previous build, file for file (pages
    were written in place one by one, so a stop left a board saying 'no verdict' beside a hypothesis page
    still saying 'falsified', and pages of deleted runs)."""
    import os
    import shutil
    import signal
    import subprocess
    import sys
    import time

    from workbench.app import Workbench
    from workbench.report import build_site
    from workbench.settings import Settings
    from workbench.store import open_store

    db = tmp_path / "wb.duckdb"
    shutil.copy(seeded["db"], db)
    out = tmp_path / "site"
    with open_store(str(db), read_only=True) as store:
        build_site(store, seeded["registry"], out)
    Workbench.open(Settings(db=str(db), root=seeded["root"])).delete_runs(seeded["ids"]["wedge"]["run_ids"][:1])

    def snapshot() -> dict[str, tuple[int, bytes]]:
        return {str(p.relative_to(out)): (p.stat().st_mtime_ns, p.read_bytes()) if p.is_file() else (0, b"")
                for p in out.rglob("*")}

    before = snapshot()
    # The build holds still once its first file has landed (wb's own writer, then a marker and a wait), so the
    # signal arrives there however loaded the machine is (polling for the file raced a build that could finish
    # between two polls).
    landed = tmp_path / "first-file-landed"
    child = ("import pathlib, sys, time\nfrom workbench.report import site\nwrite, mark = site._write, sys.argv[1]\n"
             "def held(path, text):\n    write(path, text)\n    pathlib.Path(mark).touch()\n    time.sleep(300)\n"
             "site._write = held\nsys.argv = ['wb'] + sys.argv[2:]\nfrom workbench.cli.main import main\nmain()\n")
    proc = subprocess.Popen([sys.executable, "-c", child, str(landed), "report", "--db", str(db), "--root",
                             str(seeded["root"]), "--out", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "XDG_CACHE_HOME": str(cache_home)})
    try:
        deadline = time.monotonic() + 240
        while proc.poll() is None and not landed.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert landed.exists() and proc.poll() is None, proc.returncode
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:  # a failing run leaves no build behind, held in its wait
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert snapshot() == before


@pytest.mark.parametrize("manifest", ["[]", '{"files": [1, null, "runs/1.html"]}', '{"files": "index.html"}', "null"])
def test_a_damaged_site_manifest_is_read_as_no_previous_build(seeded: dict[str, Any], tmp_path: Path,
                                                             manifest: str) -> None:
    """A manifest of another shape (hand-edited, another tool's) is taken as no list of files, as an unreadable
    one is: the site is rebuilt, not stopped by a traceback (AttributeError, TypeError)."""
    from workbench.report import build_site
    from workbench.store import open_store

    out = tmp_path / "site"
    with open_store(str(seeded["db"]), read_only=True) as store:
        build_site(store, seeded["registry"], out)
        (out / ".wb-site.json").write_text(manifest)
        build_site(store, seeded["registry"], out)
    files = json.loads((out / ".wb-site.json").read_text())["files"]
    assert "index.html" in files and all((out / f).is_file() for f in files)


def test_a_fingerprint_entry_named_like_a_secret_is_masked_on_the_pages(seeded: dict[str, Any], tmp_path: Path) -> None:
    """wb's own writer masks a fingerprint entry named like a secret (HF_TOKEN) as it records a run; a row that
    came another way (a bundle another tool or an older wb wrote) still holds the value, and no page shows it."""
    import gzip

    from workbench.app import Workbench
    from workbench.report import build_site
    from workbench.settings import Settings
    from workbench.store import open_store

    bundle = tmp_path / "wedge.wbb"
    Workbench.open(Settings(db=str(seeded["db"]), root=seeded["root"])).bundle_export(["wedge-confound"], bundle)
    doc = json.loads(gzip.decompress(bundle.read_bytes()))
    for run in doc["store"]["runs"]:
        run["fingerprint_json"] = json.dumps({**json.loads(run["fingerprint_json"] or "{}"),
                                              "HF_TOKEN": "hf_NotForAnyPage", "db_password": "pw-NotForAnyPage"})
    bundle.write_bytes(gzip.compress(json.dumps(doc).encode()))
    db = tmp_path / "wb.duckdb"
    Workbench.open(Settings(db=str(db), root=seeded["root"])).bundle_import(bundle)
    with open_store(str(db), read_only=True) as store:
        result = build_site(store, seeded["registry"], tmp_path / "site")
    page = Path(next(iter(result["runs"].values()))).read_text(encoding="utf-8")
    assert "HF_TOKEN" in page and "db_password" in page
    assert not [p for p in (tmp_path / "site").rglob("*") if p.is_file() and "NotForAnyPage" in p.read_text()]


def test_lineage_layout_is_readable_at_50_hypotheses(tmp_path: Path) -> None:
    from workbench.registry import load_registry
    from workbench.report import lineage

    reg = load_registry(synth.write_many_hypotheses(tmp_path / "wb", 50))
    graph = lineage.layout([lineage.LineageInput(h.id, h.parent, "open") for h in reg.hypotheses])
    assert len(graph.nodes) == 50 and len(graph.edges) == 49
    boxes = [(n.x, n.y, n.x + n.w, n.y + n.h) for n in graph.nodes]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], "nodes overlap"
    pos = {n.id: n for n in graph.nodes}
    for h in reg.hypotheses:
        if h.parent:
            assert pos[h.id].depth == pos[h.parent].depth + 1 and pos[h.id].x > pos[h.parent].x
    assert all(n.w >= 200 and n.h >= 30 for n in graph.nodes)  # labels at a readable size, not shrunk to fit
    assert graph.height <= 50 * lineage.ROW_H + 2 * lineage.PAD


def test_lineage_layout_survives_a_parent_cycle() -> None:
    from workbench.report import lineage

    graph = lineage.layout([lineage.LineageInput("a", "b", "open"), lineage.LineageInput("b", "a", "open"),
                            lineage.LineageInput("c", None, "supported")])
    assert {n.id for n in graph.nodes} == {"a", "b", "c"}


def test_confound_report_shows_the_separating_experiment(tmp_path: Path) -> None:
    """Pre-fix shape of the seed: every corrupt run also wedged, so the scan flags aborts and proposes a split; the
    proposal toggles the variable that separates the runs (nixl_abort_fix) and names the hypothesis that toggles it.
    (A proposal used to name any hypothesis guarding aborts, one toggling another variable too.)"""
    from workbench.registry import load_registry
    from workbench.report import build_site
    from workbench.store import open_store

    reg = load_registry(synth.copy_workbench(tmp_path / "wb"))
    store = open_store(str(tmp_path / "wb.duckdb"))
    try:
        with store.session() as s:
            synth.add_ab_execution(s, reg, "wedge-confound", art_dir=tmp_path / "logs", replicates=3, seed=1,
                                   leak_rate={"control": 0.15, "treatment": 0.0}, aborts={"control": 70})
        result = build_site(store, reg, tmp_path / "site")
    finally:
        store.dispose()
    text = Path(result["confounds"]).read_text(encoding="utf-8")
    first = text.split('<article class="finding')[1]
    assert first.startswith(" flagged") and "aborts" in first.split("</h2>")[0]
    assert "Proposed separating experiment" in first and "are confounded in these runs" in first
    assert '<td>with aborts (= waiting_for_input)</td><td class="num">3</td><td class="num">0</td>' in first
    assert "Toggle nixl_abort_fix (off -&gt; on)" in first, first
    assert 'Registered as <a href="hypotheses/wedge-confound.html">' in first, first


def test_check_effects_recorded_by_analysis_are_worded(seeded: dict[str, Any]) -> None:
    from workbench.report.hypothesis_page import _verdict_view

    stored = {"verdict": "inconclusive", "reasoning": "", "created_at": "2026-11-30", "execution_id": 1,
              "checks": [{"name": "attrition", "passed": False, "detail": "control: all lost",
                          "effect": "inconclusive"},
                         {"name": "drift", "passed": False, "detail": "replicates differ", "effect": "none"},
                         {"name": "isolation", "passed": True, "detail": "ok", "effect": "none"}]}
    view, _ = _verdict_view(stored, None)
    assert [(c.mark, c.meaning) for c in view.checks] == [
        ("FAIL", "makes the verdict inconclusive"), ("FLAG", "does not change the verdict: inconclusive stands"),
        ("pass", "")]
    assert view.checks_summary == ("1 of 3 checks passed; 1 check changed the verdict (attrition); "
                                   "1 flagged a problem that does not change it (drift).")


def test_a_guard_without_a_separating_variable_prints_no_nulls(tmp_path: Path) -> None:
    """The scan's proposal when no recorded variable removes the guard: toggle and registered_as are None."""
    from workbench.report import pages, site as site_mod
    from workbench.report.context import Page

    finding = {"kind": "guard", "factor": "aborts", "outcome": "corruption_rate", "experiment": "agent-repro",
               "flagged": True, "message": "In every run with leak where aborts was recorded, aborts also occurred.",
               "table": {"outcome_with_guard": 4, "no_outcome_with_guard": 0, "outcome_without_guard": 0,
                         "no_outcome_without_guard": 0, "runs": ["run 1", "run 2"]},
               "p": None, "effect": {"risk_difference": None, "odds_ratio": None},
               "proposal": {"toggle": None, "hold": {"hicache": "on"}, "registered_as": None,
                            "text": "No recorded variable is known to remove aborts: add one that does."}}
    variable = {"kind": "variable", "factor": "hicache", "outcome": "corruption_rate", "flagged": True,
                "message": "hicache=off: 0/1 runs", "table": {"values": {"off": {"runs": 1, "runs_with_outcome": 0,
                                                                                 "units_k": None, "units_n": None}}},
                "proposal": None}
    ctx = pages.confounds([finding, variable], "", set(), {1, 2}, Page("Confounds", "", "confounds", "now"))
    text = site_mod._env().get_template("confounds.html.j2").render(ctx=ctx)
    assert not re.search(r"\bnull\b|\bNone\b", text)
    guard, var = text.split('<article class="finding')[1:]
    assert "<h3>No recorded variable separates them yet</h3>" in guard and "<th>hold</th><td>hicache=on</td>" in guard
    assert "toggle" not in guard and "Registered as" not in guard
    assert "an A/B hypothesis that isolates it" in var and '<td class="num">—</td>' in var
