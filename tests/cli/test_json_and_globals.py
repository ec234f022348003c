"""The JSON envelope's promises, held for every command (README "Output for scripts and CI"), and the workbench
options accepted before the subcommand (`wb --root DIR --db FILE runs list`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer

from workbench.cli.main import app


def _leaf_commands() -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []

    def walk(cmd: object, path: list[str]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, path + [name])
        else:
            out.append((" ".join(path), cmd))

    walk(typer.main.get_command(app), [])
    return out


@pytest.mark.parametrize("name,cmd", _leaf_commands(), ids=[n for n, _ in _leaf_commands()])
def test_every_command_takes_json(name: str, cmd) -> None:
    opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
    assert "--json" in opts, f"wb {name} has no --json"


@pytest.fixture(scope="module")
def _seeded_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workbench with the seed's evidence imported and wedge-confound analyzed into store.duckdb, built once per
    module (19 tests each imported and analyzed it anew); each test gets a copy (see `seeded`)."""
    import shutil

    from typer.testing import CliRunner

    repo = Path(__file__).resolve().parents[2]
    root = tmp_path_factory.mktemp("seeded") / "wbroot"
    root.mkdir()
    shutil.copy(repo / "hypotheses.yaml", root / "hypotheses.yaml")
    shutil.copytree(repo / "experiments", root / "experiments")
    db = str(root / "store.duckdb")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("WB_DB", raising=False)
        mp.delenv("WB_ROOT", raising=False)
        mp.chdir(root.parent)
        for args in (["import", "evidence", str(repo / "evidence" / "seed-runs.csv")],
                     ["hypothesis", "analyze", "wedge-confound"]):
            done = CliRunner().invoke(app, [*args, "--db", db, "--root", str(root)], catch_exceptions=False)
            assert done.exit_code == 0, done.stderr
    return root


@pytest.fixture
def seeded(_seeded_once: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A private copy of the seeded workbench and its store (a test may write to it), found by the flags only."""
    import shutil

    workbench_dir = tmp_path / "wbroot"
    shutil.copytree(_seeded_once, workbench_dir)
    monkeypatch.delenv("WB_DB", raising=False)
    monkeypatch.delenv("WB_ROOT", raising=False)
    monkeypatch.chdir(workbench_dir.parent)  # not inside the workbench: only the flags find it
    return {"root": str(workbench_dir), "db": str(workbench_dir / "store.duckdb")}


def test_lineage_json_lists_its_rows_under_items_as_every_listing(seeded, cli) -> None:
    for flags in (["--json"], ["--format", "json"]):
        code, out, err = cli("lineage", *flags, "--db", seeded["db"], "--root", seeded["root"])
        assert code == 0, err
        doc = json.loads(out)
        assert doc["wb"] == 1 and doc["command"] == "lineage"
        ids = [n["id"] for n in doc["items"]]
        assert ids[0] == "hicache-bf16-race" and "wedge-confound" in ids
        assert {n["id"]: n["status"] for n in doc["items"]}["wedge-confound"] == "falsified"
        assert doc["nodes"] == doc["items"]  # the name wb: 1 first shipped, kept while wb is 1
        assert {"kind": "parent", "parent": "hicache-bf16-race", "child": "wedge-confound"} in doc["edges"]


def test_review_list_names_its_command_in_the_envelope(seeded, cli) -> None:
    code, _, err = cli("review", "wedge-confound", "--approve", "-m", "reproduced", "--as", "ana",
                       "--db", seeded["db"], "--root", seeded["root"])
    assert code == 0, err
    for flags in (["--json"], ["--format", "json"]):
        code, out, err = cli("review", "list", *flags, "--db", seeded["db"], "--root", seeded["root"])
        assert code == 0, err
        doc = json.loads(out)
        assert doc["command"] == "review list", doc["command"]
        assert [st["hypothesis_id"] for st in doc["items"] if st["reviews"]] == ["wedge-confound"]
    code, out, err = cli("review", "wedge-confound", "--comment", "-m", "noted", "--json",
                         "--db", seeded["db"], "--root", seeded["root"])
    assert code == 0 and json.loads(out)["command"] == "review", err


def test_schema_takes_json_and_stays_plain_without_it(seeded, cli) -> None:
    code, out, err = cli("schema", "--json", "--root", seeded["root"])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["wb"] == 1 and doc["command"] == "schema"
    assert doc["hypotheses.yaml"]["type"] == "object" and "experiments/*.yaml" in doc
    code, out, err = cli("schema", "--root", seeded["root"])
    plain = json.loads(out)
    assert "wb" not in plain and plain["hypotheses.yaml"] == doc["hypotheses.yaml"]


def test_root_and_db_before_the_subcommand(seeded, cli) -> None:
    code, out, err = cli("--root", seeded["root"], "--db", seeded["db"], "runs", "list", "--json")
    assert code == 0, err
    assert any(r["label"] == "post-bf16-hicache-postfix" for r in json.loads(out)["items"])
    code, out, err = cli("--root", seeded["root"], "--db", seeded["db"], "hypothesis", "show", "wedge-confound",
                         "--json")
    assert code == 0 and json.loads(out)["status"] == "falsified", err


def test_a_flag_after_the_subcommand_wins_over_one_before_and_both_over_the_environment(seeded, cli,
                                                                                       tmp_path: Path) -> None:
    other = str(tmp_path / "other.duckdb")
    # After the subcommand: its own --db is the one used (the global one names a store that does not exist).
    code, out, err = cli("--db", other, "runs", "list", "--json", "--db", seeded["db"], "--root", seeded["root"])
    assert code == 0 and json.loads(out)["items"], err
    # Before the subcommand, over $WB_DB: the flag is used, and reading a store that is not there is bad input.
    code, _, err = cli("--db", other, "--root", seeded["root"], "runs", "list", env={"WB_DB": seeded["db"]})
    assert code == 2 and "no store at" in err and "other.duckdb" in err, err
    assert not Path(other).exists()


def test_global_flags_are_refused_where_no_workbench_is_read(cli) -> None:
    code, _, err = cli("--db", "x.duckdb", "kernel", "check", "--quick")
    assert code == 2 and err.startswith("Error: ") and "--db" in err and "kernel check" in err, err


def test_the_default_store_is_the_workbench_folders_not_the_current_folders(
        workbench_dir: Path, seed_csv: Path, cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --db, the store is wb.duckdb in the workbench folder: found upward from a subfolder, or named by
    --root / $WB_ROOT from anywhere. It used to be wb.duckdb in the current folder: from experiments/ every
    hypothesis looked "open", and `--root` from another folder created and filled a second store there."""
    monkeypatch.delenv("WB_DB", raising=False)
    monkeypatch.delenv("WB_ROOT", raising=False)
    monkeypatch.chdir(workbench_dir)
    code, _, err = cli("import", "evidence", str(seed_csv))
    assert code == 0, err
    code, _, err = cli("hypothesis", "analyze", "wedge-confound")
    assert code == 0, err
    assert (workbench_dir / "wb.duckdb").is_file()
    code, out, err = cli("runs", "list", "--json")
    assert code == 0, err
    runs = json.loads(out)["items"]
    assert runs

    def status_from_here() -> str:
        code, out, err = cli("hypothesis", "list", "--json")
        assert code == 0, err
        return {h["id"]: h["status"] for h in json.loads(out)["items"]}["wedge-confound"]

    monkeypatch.chdir(workbench_dir / "experiments")
    assert status_from_here() == "falsified"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("WB_ROOT", str(workbench_dir))
    assert status_from_here() == "falsified"
    monkeypatch.delenv("WB_ROOT")
    code, out, err = cli("--root", str(workbench_dir), "runs", "list", "--json")
    assert code == 0, err
    assert json.loads(out)["items"] == runs
    assert not (elsewhere / "wb.duckdb").exists()
    # A relative --db is read from the current folder, as any path on a command line.
    code, _, err = cli("import", "evidence", str(seed_csv), "--root", str(workbench_dir), "--db", "wb.duckdb")
    assert code == 0, err
    assert (elsewhere / "wb.duckdb").is_file()


@pytest.mark.parametrize("listing", [["hypothesis", "list"], ["runs", "list"], ["confounds"], ["lineage"],
                                     ["review", "list"]], ids=lambda a: " ".join(a))
@pytest.mark.parametrize("fmt", ["csv", "tsv", "table"])
def test_json_with_another_format_is_refused_by_every_listing(seeded, cli, listing: list[str], fmt: str) -> None:
    # Only `review list` refused it; the others printed JSON where the script asked for csv too.
    code, out, err = cli(*listing, "--json", "--format", fmt, "--db", seeded["db"], "--root", seeded["root"])
    assert code == 2, (code, out, err)
    # --json was asked for: stdout is its envelope of the error, no listing in either format.
    doc = json.loads(out)
    assert (doc["ok"], doc["error"]["where"], "items" in doc) == (False, "--format", False), doc
    assert err.startswith(f"Error: --json and --format {fmt}: give one") and "Traceback" not in err, err
    code, out, err = cli(*listing, "--json", "--format", "JSON", "--db", seeded["db"], "--root", seeded["root"])
    assert code == 0 and json.loads(out)["wb"] == 1, (code, err)


def test_a_claim_with_a_tab_or_a_line_break_keeps_one_row_a_line(workbench_dir: Path, cli) -> None:
    """A claim written as a YAML literal block (or with a tab) split a TSV row over two lines and added a field
    (csv quoting, which `cut -f` and awk do not read), and the piped lineage tree over two lines."""
    path = workbench_dir / "hypotheses.yaml"
    text = path.read_text(encoding="utf-8")
    old = "    claim: The HiCache+bf16 corruption is a side effect of the NIXL abort wedge."
    assert old in text
    path.write_text(text.replace(old, '    claim: "a side effect\\tof the wedge,\\nsaid \\"twice\\""'),
                    encoding="utf-8")
    root = ["--root", str(workbench_dir)]
    code, out, err = cli("lineage", "--format", "tsv", *root)
    assert code == 0, err
    rows = out.splitlines()
    assert len(rows) == 9 and {len(r.split("\t")) for r in rows} == {5}, out
    assert 'wedge-confound\thicache-bf16-race\t1\topen\ta side effect of the wedge, said "twice"' in rows, out
    code, out, err = cli("lineage", *root)
    assert code == 0 and len(out.splitlines()) == 8, out
    assert '├─ wedge-confound  [open]  a side effect of the wedge, said "twice"' in out.splitlines(), out
