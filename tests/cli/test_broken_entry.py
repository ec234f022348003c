"""One entry of hypotheses.yaml with a problem of its own: the read-only commands go on with the others."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner
from workbench.wrapping import wrap

REPO = Path(__file__).resolve().parents[2]
BROKEN, ASKED = "hicache-bf16-race", "wedge-confound"  # the root, broken; a child of it, intact


@pytest.fixture(scope="module")
def broken_root(tmp_path_factory) -> Path:
    """The shipped workbench with the seed's runs imported, then the root entry given a mistyped field (its name
    markup, so that a page shows it escaped): one store import for every case."""
    from workbench.cli.main import app

    root = tmp_path_factory.mktemp("broken") / "wb"
    root.mkdir()
    shutil.copytree(REPO / "experiments", root / "experiments")
    shutil.copy(REPO / "hypotheses.yaml", root / "hypotheses.yaml")
    done = CliRunner().invoke(app, ["import", "evidence", str(REPO / "evidence" / "seed-runs.csv"), "--root",
                                    str(root)], catch_exceptions=False)
    assert done.exit_code == 0, done.stderr
    hyp = root / "hypotheses.yaml"
    text = hyp.read_text()
    assert text.count("    falsified_if: Corruption is the same") == 1
    hyp.write_text(text.replace("    falsified_if: Corruption is the same", "    falsifed<b>: Corruption is the same"))
    return root


# (the command for the intact entry, the same for the broken one: None where the command takes no id)
COMMANDS = {
    "hypothesis list": (["hypothesis", "list"], None),
    "hypothesis show": (["hypothesis", "show", ASKED], ["hypothesis", "show", BROKEN]),
    "hypothesis analyze": (["hypothesis", "analyze", ASKED, "--no-record"],
                           ["hypothesis", "analyze", BROKEN, "--no-record"]),
    "lineage": (["lineage"], None),
    "confounds": (["confounds", "--hypothesis", ASKED], ["confounds", "--hypothesis", BROKEN]),
    "report": (["report", "--out", "{out}"], ["report", "--hypothesis", BROKEN, "--out", "{out}"]),
    "report md": (["report", "--format", "md"], ["report", "--format", "md", "--hypothesis", BROKEN]),
    "review list": (["review", "list", ASKED], ["review", "list", BROKEN]),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_broken_entry_is_left_out_and_said_and_asked_for_is_bad_input(name, broken_root, tmp_path, cli):
    """Each stopped on the whole file (exit 2) when any one entry had a problem; `list` and `run` already went on
    without it. Now the others are read (exit 0), the broken one told on stderr as `list` tells it, under "broken"
    in --json; asking for it by id is bad input naming its file:line; a child of it names its parent left out.
    `list` itself listed the others but told the entry as its error (exit 2, under "error" in --json): it now
    tells it as they do."""
    good, bad = COMMANDS[name]
    hyp = broken_root / "hypotheses.yaml"
    line = next(i for i, t in enumerate(hyp.read_text().splitlines(), 1) if t.startswith("    falsifed<b>"))
    said = f"{hyp}:{line} (hypothesis {BROKEN}, field falsifed<b>): unknown field"
    out_dir = tmp_path / "site"
    as_json = name not in ("lineage", "report md")  # those two: their text; the others' JSON, stdout all of it
    args = [a.format(out=out_dir) for a in good] + ["--root", str(broken_root)] + ["--json"] * as_json
    code, out, err = cli(*args)
    assert code == 0 and "Traceback" not in err, (code, out, err)
    if as_json:  # the result on stdout, the broken entry in its field
        doc = json.loads(out)
        assert doc["ok"] is True and [b["id"] for b in doc["broken"]] == [BROKEN], doc
        assert doc["broken"][0]["problems"][0]["where"] == f"{hyp}:{line}", doc["broken"]
        if name == "hypothesis list":  # it alone said them under "error" and exited 2, the entries read or not
            assert "error" not in doc and BROKEN not in [i["id"] for i in doc["items"]], doc
            assert ASKED in [i["id"] for i in doc["items"]], doc
    assert f"Warning: {said}" in err and "Error:" not in err, err
    summary = (f"1 problem found; left out: the entry '{BROKEN}'; `wb hypothesis validate` checks every file and "
               "lists what it finds")
    assert summary in err, err
    for width in (80, 60):  # a command in it was written out and ended its line: ')' alone on the next one
        assert not any(line.lstrip().startswith(")") for line in wrap(summary, width)), wrap(summary, width)
    if name == "lineage":
        assert f"{ASKED}  [" in out and f"(its parent {BROKEN} is left out)" in out, out
    if name == "report":
        page = (out_dir / "index.html").read_text()
        assert f"child of {BROKEN} (left out)" in page and "falsifed&lt;b&gt;" in page and "<b>" not in page
        lineage = (out_dir / "lineage.html").read_text()
        assert f'The parent of <a href="hypotheses/{ASKED}.html">{ASKED}</a>, {BROKEN}, is left out' in lineage
        assert not (out_dir / "hypotheses" / f"{BROKEN}.html").exists()
        assert (out_dir / "hypotheses" / f"{ASKED}.html").is_file()
    if name == "report md":
        assert f"`{BROKEN}`: {hyp}:{line}" in out, out
    if name == "hypothesis show":  # the broken entry's id mistyped: it is still the id meant
        code, _, err = cli("hypothesis", "show", "hicache-bf16-rase", "--root", str(broken_root))
        assert code == 2 and f"Hint: did you mean '{BROKEN}' (left out: its entry has a problem of its own)? (known " \
            f"ids: {ASKED}," in err, err
        assert f"left out for a problem of its own: {BROKEN})" in err, err
    if bad is None:
        return
    code, out, err = cli(*[a.format(out=out_dir / "bad") for a in bad], "--root", str(broken_root))
    assert code == 2 and "Traceback" not in err and out == "", (code, out, err)
    assert err.startswith(f"Error: {said}") and "Warning:" not in err, err
    assert not (out_dir / "bad").exists()


def test_the_tree_on_a_narrow_terminal_wraps_the_note_of_a_parent_left_out(broken_root, monkeypatch, cli):
    """'(its parent X is left out)' was part of the line's head, which is never broken: at 60 columns the child's
    first line ran on to 80. The note now wraps with the claim, as prose; piped, the line is as it was."""
    code, piped, _ = cli("lineage", "--root", str(broken_root))
    assert code == 0
    monkeypatch.setattr("workbench.cli.report.is_tty", lambda: True)
    monkeypatch.setenv("COLUMNS", "60")
    code, out, err = cli("lineage", "--root", str(broken_root))
    assert code == 0, err
    assert all(len(line) <= 60 for line in out.splitlines()), out
    assert f"(its parent {BROKEN} is left out)" in " ".join(out.replace("│", " ").split()), out
    child = next(line for line in piped.splitlines() if line.startswith(f"{ASKED}  ["))
    assert f"{ASKED}  [open]  (its parent {BROKEN} is left out)  " in child, child


def test_the_lineage_json_has_no_edge_to_an_entry_left_out(broken_root, cli):
    """`wb lineage --json` listed the children of the entry left out as roots (depth 0) under "items", yet its
    "edges" still joined them to that entry, a node the document does not hold (a graph built from it fails on
    it); the site's graph and the tree drew no such edge. The edges join the items alone; "broken" names the
    entry left out."""
    code, out, err = cli("lineage", "--json", "--root", str(broken_root))
    assert code == 0, err
    doc = json.loads(out)
    ids = {n["id"] for n in doc["items"]}
    assert BROKEN not in ids and [b["id"] for b in doc["broken"]] == [BROKEN]
    ends = [(e["parent"], e["child"]) if e["kind"] == "parent" else (e["hypothesis"], e["tested_by"])
            for e in doc["edges"]]
    assert ends and all(a in ids and b in ids for a, b in ends), doc["edges"]
    assert next(n for n in doc["items"] if n["id"] == ASKED)["depth"] == 0


def test_two_entries_of_one_id_both_left_out_are_told_apart_by_their_lines(workbench_dir, cli):
    """The first entry of an id with a mistyped field, a second entry giving that id again: both are left out, and
    the summary read "left out: the entries 'wedge-confound', 'wedge-confound'", the id twice with nothing to tell
    them apart. Each is named by its line where another entry gives its id."""
    path = workbench_dir / "hypotheses.yaml"
    text = path.read_text()
    typo = "    falsified_if: Corruption persists in the treatment arm with zero aborts.\n"
    text = text.replace(typo, typo.replace("falsified_if", "falsifed_if")).replace(
        "  - id: dead-code-hicache-off\n", f"  - id: {ASKED}\n")
    path.write_text(text)
    lines = text.splitlines()
    first, second = lines.index("    falsifed_if: Corruption persists in the treatment arm with zero aborts.") + 1, \
        [i for i, t in enumerate(lines, 1) if t == f"  - id: {ASKED}"][1]
    code, _, err = cli("lineage", "--root", str(workbench_dir))
    assert code == 0, err
    assert f"left out: the entries '{ASKED}' at line {first}, '{ASKED}' at line {second}; `wb" in err, err
    code, out, _ = cli("report", "--format", "md", "--root", str(workbench_dir))
    assert code == 0 and f"- `{ASKED}` at line {first}: " in out and f"- `{ASKED}` at line {second}: " in out, out


def test_show_says_a_parent_and_a_test_left_out(workbench_dir, cli):
    """`hypothesis show` of a child of the entry left out, and of the hypothesis whose assumption it tests, named it
    as any other ("parent: wedge-confound", "(tested by wedge-confound)"), where the tree, the board and the pages
    say it is left out: the one view that did not."""
    path = workbench_dir / "hypotheses.yaml"
    typo = "    falsified_if: Corruption persists in the treatment arm with zero aborts.\n"
    path.write_text(path.read_text().replace(typo, typo.replace("falsified_if", "falsifed_if")))
    code, out, err = cli("hypothesis", "show", "pool-configurator-overcommit", "--root", str(workbench_dir))
    assert code == 0 and f"left out: the entry 'wedge-confound'" in err, err
    assert f"parent: wedge-confound (left out: its entry has a problem of its own)\n" in out, out
    code, out, _ = cli("hypothesis", "show", "hicache-bf16-race", "--root", str(workbench_dir))
    assert code == 0 and f"(tested by wedge-confound, left out: its entry has a problem of its own)\n" in out, out


def test_a_child_of_an_entry_left_out_is_not_offered_a_run_it_would_be_refused(workbench_dir, cli):
    """With its parent's entry broken, `hypothesis analyze` and `show` of a child said "to run it: wb hypothesis run
    pool-configurator-overcommit", which is refused (its parent is broken). They now say it is not run until the
    parent's entry is fixed; a hypothesis whose lineage is whole is still offered its run."""
    path = workbench_dir / "hypotheses.yaml"
    typo = "    falsified_if: Corruption persists in the treatment arm with zero aborts.\n"
    path.write_text(path.read_text().replace(typo, typo.replace("falsified_if", "falsifed_if")))
    child = "pool-configurator-overcommit"
    why = "it is not run until the entry of its parent 'wedge-confound' is fixed (`wb hypothesis validate` lists its"
    code, _, err = cli("hypothesis", "analyze", child, "--root", str(workbench_dir))
    assert code == 2 and f"Hint: {why}" in " ".join(err.split()), err
    assert f"wb hypothesis run {child}" not in err, err
    code, out, err = cli("hypothesis", "show", child, "--root", str(workbench_dir))
    assert code == 0 and f"verdict: none yet; {why}" in " ".join(out.split()), out
    assert f"wb hypothesis run {child}" not in out, out
    code, _, err = cli("hypothesis", "analyze", "dead-code-hicache-off", "--root", str(workbench_dir))
    assert code == 2 and "Hint: to run it: wb hypothesis run dead-code-hicache-off" in err, err


def _break(root: Path, hid: str) -> None:
    """Give `hid`'s entry an unknown field, its first line after the id."""
    path = root / "hypotheses.yaml"
    text = path.read_text()
    assert text.count(f"  - id: {hid}\n") == 1
    path.write_text(text.replace(f"  - id: {hid}\n", f"  - id: {hid}\n    bogus_field: 1\n"))


def test_a_review_and_a_bundle_of_an_intact_entry_go_on_without_another_broken_one(workbench_dir, cli, tmp_path):
    """With only live-hostpool-control broken, `wb review wedge-confound` and `wb bundle export wedge-confound` exited
    2 printing that entry's `Error:` alone, no summary, no word of why another hypothesis was refused. A review
    records only of its own hypothesis, and a bundle carries the definitions of the entries it names: both go on,
    the broken entry told as a warning (as `hypothesis list` tells it); the broken entry itself is still refused."""
    _break(workbench_dir, "live-hostpool-control")
    root = ["--root", str(workbench_dir)]
    summary = "1 problem found; left out: the entry 'live-hostpool-control'"
    code, out, err = cli("review", "wedge-confound", "--comment", "-m", "ok", "--as", "ada", *root)
    assert code == 0 and "recorded for wedge-confound" in out, (out, err)
    assert "Warning: " in err and summary in err and "Error:" not in err, err
    bundle = tmp_path / "w.wbundle"
    code, out, err = cli("bundle", "export", "wedge-confound", "-o", str(bundle), *root)
    assert code == 0 and bundle.is_file() and "1 review" in out, (out, err)
    assert summary in err and "Error:" not in err, err
    code, out, err = cli("review", "live-hostpool-control", "--comment", "-m", "ok", "--as", "ada", *root)
    assert code == 2 and err.startswith("Error: ") and "bogus_field" in err and "Warning:" not in err, err


def test_a_bundle_of_an_entry_whose_parent_is_broken_is_refused_saying_why(workbench_dir, cli, tmp_path):
    """A bundle's entry is read as a run reads it, with its lineage: a child of a broken entry is refused, and the
    summary says that the parent's problem stops it (its problem told once, as the error, not again as a warning)."""
    _break(workbench_dir, "wedge-confound")
    code, out, err = cli("bundle", "export", "pool-configurator-overcommit", "-o", str(tmp_path / "p.wbundle"),
                         "--root", str(workbench_dir))
    assert code == 2 and out == "" and not (tmp_path / "p.wbundle").exists(), (out, err)
    assert ("1 problem found; hypothesis 'pool-configurator-overcommit' is not exported until it is fixed: its "
            "parent 'wedge-confound' has it") in " ".join(err.split()), err
    assert err.count("Error:") == 1 and err.count("unknown field") == 1 and "Warning:" not in err, err


def test_confounds_write_says_why_another_entry_stops_it(workbench_dir, cli):
    """`wb confounds --write` with one entry broken printed its `Error:` alone. It appends to hypotheses.yaml, so it
    still needs every entry whole, and now says so; without --write it reads the others."""
    _break(workbench_dir, "live-hostpool-control")
    code, out, err = cli("confounds", "--write", "--root", str(workbench_dir))
    assert code == 2 and out == "" and err.startswith("Error: ") and "Warning:" not in err, err
    assert ("1 problem found; --write appends its drafts to hypotheses.yaml, so it needs every entry whole "
            "('live-hostpool-control' is not): fix it first; without --write, `wb confounds` scans the runs and "
            "reads the other entries") in " ".join(err.split()), err
    code, _, err = cli("confounds", "--root", str(workbench_dir))
    assert code == 0 and "left out: the entry 'live-hostpool-control'" in err, err
