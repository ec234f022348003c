"""A workbench whose own wb.duckdb does not exist yet (a fresh checkout, before any run) reads as an empty store:
every reading command says what it says on an empty one, and none creates the file. A store a flag or $WB_DB
names that is not there is a mistyped path, and stays an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

READS = [
    ["runs", "list"],
    ["runs", "list", "--json"],
    ["runs", "list", "--format", "tsv"],
    ["runs", "list", "--hypothesis", "wedge-confound"],
    ["runs", "show", "1"],
    ["runs", "delete", "1"],
    ["confounds"],
    ["confounds", "--json"],
    ["report", "--format", "md"],
    ["report", "--format", "md", "--hypothesis", "wedge-confound"],
]


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory) -> Path:
    """A store with the schema and no rows (made once: the reads below only read it)."""
    from workbench.store import upgrade

    path = tmp_path_factory.mktemp("empty") / "empty.duckdb"
    upgrade(str(path))
    return path


def _files(folder: Path) -> set[Path]:
    return {p.relative_to(folder) for p in folder.rglob("*")}


@pytest.mark.parametrize("args", READS, ids=[" ".join(a) for a in READS])
def test_a_read_of_the_missing_default_store_reads_as_an_empty_store(args, workbench_dir: Path, empty_store: Path,
                                                                     cli, monkeypatch):
    monkeypatch.delenv("WB_DB", raising=False)
    before = _files(workbench_dir)
    missing = cli(*args, "--root", str(workbench_dir))
    assert _files(workbench_dir) == before, "a read must not create the store (or anything beside it)"
    empty = cli(*args, "--root", str(workbench_dir), "--db", str(empty_store))
    assert missing == empty, (missing, empty)
    code, out, err = missing
    if args[:2] in (["runs", "show"], ["runs", "delete"]):
        assert code == 2 and err.startswith("Error: no run 1 in the store\n"), err
    else:
        assert code == 0 and "no store at" not in err, err


def test_the_listings_say_no_runs_in_their_usual_shape(workbench_dir: Path, cli, monkeypatch):
    monkeypatch.delenv("WB_DB", raising=False)
    root = ["--root", str(workbench_dir)]
    assert cli("runs", "list", *root) == (0, "No runs recorded yet.\n", "")
    assert cli("runs", "list", "--hypothesis", "wedge-confound", *root) == (
        0, "No runs of wedge-confound recorded yet.\n", "")
    code, out, _ = cli("runs", "list", "--json", *root)
    assert code == 0 and json.loads(out)["items"] == []
    header = "id\tlabel\thypothesis\tarm\tstatus\texperiment\n"  # a column per variable and metric: none without runs
    assert cli("runs", "list", "--format", "tsv", *root) == (0, header, "")
    assert cli("confounds", *root) == (0, "No runs with a recorded outcome to scan.\n", "")
    assert not (workbench_dir / "wb.duckdb").exists()


def test_the_report_is_built_from_the_yaml_with_every_hypothesis_open(workbench_dir: Path, cli, monkeypatch):
    monkeypatch.delenv("WB_DB", raising=False)
    code, out, err = cli("report", "--root", str(workbench_dir))
    assert code == 0, err
    site = workbench_dir / "reports"
    assert (site / "index.html").is_file() and (site / "hypotheses" / "wedge-confound.html").is_file()
    code, out, err = cli("report", "--format", "md", "--root", str(workbench_dir))
    rows = [line for line in out.splitlines() if line.startswith("| `")]
    assert code == 0 and len(rows) == 8 and all("| open |" in r for r in rows), out
    assert not (workbench_dir / "wb.duckdb").exists() and not (workbench_dir / "wb.duckdb.wal").exists()


# A named store that is missing is not "no evidence" nor "nothing to resume": the path is wrong.
NAMED = READS[:1] + READS[4:7] + READS[8:9] + [["hypothesis", "analyze", "wedge-confound"],
                                               ["hypothesis", "analyze", "wedge-confound", "--no-record"],
                                               ["hypothesis", "run", "wedge-confound", "--resume"],
                                               ["hypothesis", "list"], ["lineage"]]


@pytest.mark.parametrize("args", NAMED, ids=lambda a: " ".join(a))
def test_a_named_store_that_is_missing_stays_an_error(args, workbench_dir: Path, tmp_path: Path, cli, monkeypatch):
    monkeypatch.delenv("WB_DB", raising=False)
    typo = tmp_path / "typo" / "wb.duckdb"
    code, _, err = cli(*args, "--root", str(workbench_dir), "--db", str(typo))
    assert code == 2 and err.startswith(f"Error: no store at {typo} (--db)\n"), err
    code, _, err = cli(*args, "--root", str(workbench_dir), env={"WB_DB": str(typo)})
    assert code == 2 and err.startswith(f"Error: no store at {typo} ($WB_DB)\n"), err
    assert not typo.parent.exists() and not (workbench_dir / "wb.duckdb").exists()


def test_the_workbench_store_named_by_its_path_reads_as_the_default(workbench_dir: Path, cli, monkeypatch):
    """--db spelling out the workbench's own wb.duckdb (as scripts do) is that store, not a mistyped path."""
    monkeypatch.delenv("WB_DB", raising=False)
    own = workbench_dir / "wb.duckdb"
    assert cli("runs", "list", "--root", str(workbench_dir), "--db", str(own)) == (0, "No runs recorded yet.\n", "")
    code, _, err = cli("hypothesis", "analyze", "wedge-confound", "--root", str(workbench_dir), "--db", str(own))
    assert code == 2 and err.startswith("Error: no runs of wedge-confound to analyze"), err
    assert not own.exists()


@pytest.mark.parametrize("args", READS, ids=[" ".join(a) for a in READS])
def test_a_root_that_is_no_workbench_is_an_error_not_an_empty_store(args, tmp_path: Path, cli, monkeypatch):
    """Only a workbench's own wb.duckdb may be missing. --root (or $WB_ROOT) naming a mistyped folder read as a
    workbench with nothing recorded: `wb runs list --root /typo` said "No runs recorded yet." and exited 0."""
    monkeypatch.delenv("WB_DB", raising=False)
    monkeypatch.delenv("WB_ROOT", raising=False)
    typo = tmp_path / "typo"
    code, _, err = cli(*args, "--root", str(typo))
    assert code == 2 and err.startswith(f"Error: no hypotheses.yaml in {typo} (the workbench folder --root names)"), err
    code, _, err = cli(*args, env={"WB_ROOT": str(typo)})
    assert code == 2 and f"(the workbench folder $WB_ROOT names)" in err.splitlines()[0], err
    assert not typo.exists()
    # Nor is a current folder with no workbench in or above it (wb run from the wrong place).
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, _, err = cli(*args)
    assert code == 2 and err.startswith(f"Error: no hypotheses.yaml in {elsewhere} or any folder above it"), err
    # There, --db spelling out ./wb.duckdb names a file that is not there, as any other --db does (a command that
    # needs the workbench's hypotheses may say that first).
    code, _, err = cli(*args, "--db", "wb.duckdb")
    missing = f"Error: no store at {elsewhere / 'wb.duckdb'} (--db)"
    assert code == 2 and (err.startswith(missing) or args[0] != "runs" and "no hypotheses.yaml in" in err), err
    assert list(elsewhere.iterdir()) == []


def test_the_api_refuses_a_root_that_is_no_workbench(tmp_path: Path, monkeypatch):
    from workbench import api
    from workbench.errors import WbError

    monkeypatch.delenv("WB_DB", raising=False)
    monkeypatch.delenv("WB_ROOT", raising=False)
    for read in (api.runs, api.units, api.verdicts):
        with pytest.raises(WbError) as caught:
            read(root=str(tmp_path / "typo"))
        assert caught.value.where == "root=" and "hypotheses.yaml" in caught.value.message


def test_runs_of_an_id_from_a_store_read_outside_any_workbench_still_list(empty_store: Path, tmp_path: Path, cli,
                                                                         monkeypatch):
    """`runs list --hypothesis ID` refuses an id the workbench does not define; read from a folder with no workbench
    (--db names the store), there is no registry to ask, and the listing says there are no runs of it (it ended in
    'no hypotheses.yaml in DIR or any folder above it', naming neither --hypothesis nor the store)."""
    monkeypatch.delenv("WB_ROOT", raising=False)
    monkeypatch.delenv("WB_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    listed = cli("runs", "list", "--db", str(empty_store), "--hypothesis", "foo")
    assert listed == (0, "No runs of foo recorded yet.\n", ""), listed


def test_runs_of_an_id_in_a_workbench_whose_hypotheses_file_is_broken_name_the_file(workbench_dir: Path, cli,
                                                                                    monkeypatch):
    """Where a workbench is found but its hypotheses.yaml does not load, whether the id is a typo cannot be told:
    the file's error is the answer. It said 'No runs of ID recorded yet.' and exited 0, a mistyped id and a
    broken file alike passing as a hypothesis with no runs."""
    monkeypatch.delenv("WB_ROOT", raising=False)
    monkeypatch.delenv("WB_DB", raising=False)
    path = workbench_dir / "hypotheses.yaml"
    path.write_text(path.read_text().replace("format: 1\n", "format: 1\nhypotheeses: []\n", 1))
    code, out, err = cli("runs", "list", "--root", str(workbench_dir), "--hypothesis", "wedge-confnd")
    assert code == 2, (out, err)
    assert err.startswith(f"Error: {path}:") and "unknown field 'hypotheeses'" in err, err
    assert not (workbench_dir / "wb.duckdb").exists()
