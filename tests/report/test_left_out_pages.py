"""The site built while an entry of hypotheses.yaml is left out for a problem of its own: the pages that still name
that hypothesis (its runs, an assumption it tests) say it is left out, not that it is gone or undecided."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))
from analysis_helpers import CONTROL, add_execution, add_run  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
LEFT_OUT = "wedge-confound"  # tests an assumption of hicache-bf16-race


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, int]:
    """The shipped workbench with one stored run of wedge-confound, whose entry then gets a mistyped field; the site
    built from it (the run's id beside it): one build for every case."""
    import shutil

    from typer.testing import CliRunner

    from workbench.cli.main import app
    from workbench.store import open_store

    workbench_dir = tmp_path_factory.mktemp("left-out") / "wb"
    workbench_dir.mkdir()
    shutil.copy(REPO / "hypotheses.yaml", workbench_dir / "hypotheses.yaml")
    shutil.copytree(REPO / "experiments", workbench_dir / "experiments")

    with open_store(str(workbench_dir / "wb.duckdb")) as store:
        ex = add_execution(store, hypothesis_id=LEFT_OUT)
        run = add_run(store, execution_id=ex, arm="control", variables=CONTROL, hypothesis_id=LEFT_OUT,
                      outcomes={"leak": 14, "done": 66}, extra={"waiting_for_input": 0})
    hyp = workbench_dir / "hypotheses.yaml"
    text = hyp.read_text()
    typo = "    falsified_if: Corruption persists in the treatment arm with zero aborts.\n"
    assert text.count(typo) == 1
    hyp.write_text(text.replace(typo, typo.replace("falsified_if", "falsifed_if")))
    out = workbench_dir / "site"
    done = CliRunner().invoke(app, ["report", "--out", str(out), "--root", str(workbench_dir)])
    assert done.exit_code == 0 and f"left out: the entry '{LEFT_OUT}'" in done.stderr, (done.exit_code, done.stderr)
    return out, run


def test_a_left_out_hypothesis_runs_are_not_said_to_be_of_one_not_in_the_file(site):
    """Its run page read "wedge-confound (not in hypotheses.yaml)" and the runs list titled it so: the entry is in
    the file, left out of the site for a problem of its own."""
    out, run = site
    page = (out / "runs" / f"{run}.html").read_text()
    assert f"<dt>hypothesis</dt><dd>{LEFT_OUT} (left out: its entry in hypotheses.yaml has a problem of its own)</dd>" \
        in page, page
    assert "not in hypotheses.yaml" not in page
    listing = (out / "runs.html").read_text()
    assert (f'<span class="muted" title="left out: its entry in hypotheses.yaml has a problem of its own">{LEFT_OUT}'
            f'</span>') in listing, listing
    assert "not in hypotheses.yaml" not in listing


def test_an_assumption_tested_by_a_left_out_hypothesis_is_not_said_undecided(site):
    """"tested by wedge-confound (left out) — that claim is open (not decided yet)": the status of an entry that
    was not read is not known (the store may hold its verdict); the page said it was open."""
    out, _ = site
    page = (out / "hypotheses" / "hicache-bf16-race.html").read_text()
    line = next(ln for ln in page.splitlines() if f"tested by {LEFT_OUT}" in ln)
    assert "that claim is" not in line and "open" not in line, line
    assert (f"tested by {LEFT_OUT} (left out: its entry in hypotheses.yaml has a problem of its own, so its "
            f"claim and status are not read)") in line, line


def test_a_second_entry_of_an_id_left_out_is_named_by_its_line_beside_the_first_kept(workbench_dir: Path, cli):
    """An id given twice, its second entry with a mistyped field: the first entry is whole and on the board, its
    page built. The board's and the Markdown's list of entries left out named the second by its id alone
    ("Left out of this site: ... wedge-confound"), as if the hypothesis were gone; the warning names it by its
    line (da5026a), and so do they now."""
    path = workbench_dir / "hypotheses.yaml"
    text = path.read_text().replace("  - id: dead-code-hicache-off\n", f"  - id: {LEFT_OUT}\n    falsifed_if: x\n")
    path.write_text(text)
    at = text.splitlines().index("    falsifed_if: x")  # the second entry's id line, 1-based
    code, out, err = cli("report", "--format", "md", "--root", str(workbench_dir))
    assert code == 0 and f"left out: the entry '{LEFT_OUT}' at line {at}" in err, err
    assert f"- `{LEFT_OUT}` at line {at} (the first entry of that id is kept): " in out, out
    site = workbench_dir / "site"
    code, _, err = cli("report", "--out", str(site), "--root", str(workbench_dir))
    assert code == 0, err
    board = (site / "index.html").read_text()
    assert f"<li><strong>{LEFT_OUT}</strong> at line {at} (the first entry of that id is kept)<br>" in board, board
    assert (site / "hypotheses" / f"{LEFT_OUT}.html").is_file()
