"""`wb runs delete`: runs recorded by mistake go, with their units, metrics, artifacts and probe counts, the
verdicts that rested on them and executions left empty, in one transaction, on DuckDB and on PostgreSQL.
Unknown ids and a missing --yes off a terminal are refused with one Error, nothing deleted."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))

from analysis_helpers import CONTROL, TREATMENT, add_execution, add_run  # noqa: E402

HID = "wedge-confound"


@pytest.fixture(params=["duckdb", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgresql":
        return request.getfixturevalue("pg_url")
    return str(tmp_path / "wb.duckdb")


@pytest.fixture(scope="module")
def _empty_duckdb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated empty DuckDB store; a test's new store starts as a copy (migrating each took ~0.2 s of CPU)."""
    from workbench.store import open_store

    path = tmp_path_factory.mktemp("template") / "empty.duckdb"
    open_store(str(path)).dispose()
    return path


@pytest.fixture(autouse=True)
def _template(_empty_duckdb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "EMPTY_DUCKDB", _empty_duckdb)


EMPTY_DUCKDB: Path | None = None


def _store(db: str) -> Any:
    """The store at `db`, held open while the caller uses it (as a wb command holds it): each session then
    reuses the open database instead of opening the file afresh. A new DuckDB store is a copy of an empty one."""
    import shutil

    from workbench.store import open_store

    if "://" not in db and not Path(db).exists() and EMPTY_DUCKDB is not None:
        shutil.copy(EMPTY_DUCKDB, db)
    return open_store(db, held=True)


def _execution_with_verdict(db: str, word: str = "falsified", shared_log: bytes | None = None) -> tuple[int, list[int]]:
    """An A/B execution of wedge-confound (2 runs per arm, each with an artifact) that ended, and its controlled
    verdict."""
    from workbench.store import records

    store = _store(db)
    try:
        ex = add_execution(store)
        store.update_execution(ex, status="done")  # ended: no runner writes into it any more
        ids = [add_run(store, execution_id=ex, arm=arm, variables=v, replicate=r, outcomes={"leak": 5, "done": 35})
               for r in (1, 2) for arm, v in (("control", CONTROL), ("treatment", TREATMENT))]
        with store.session() as s:
            for rid in ids:
                body = shared_log or f"log of run {rid}\n".encode()
                records.add_artifact(s, run_id=rid, name="decode_log", path=f"/tmp/run{rid}.log",
                                     sha256=hashlib.sha256(body).hexdigest(), size_bytes=len(body), content=body)
                records.add_probe_counts(s, run_id=rid, counts=[{"process": "decode", "pid": 1, "target": "m:f",
                                                                 "calls": 3}])
        store.add_verdict(hypothesis_id=HID, verdict=word, reasoning=word, checks=[], details={},
                          execution_id=ex, hypothesis_sha256=None, evidence_run_ids=ids)
        return ex, ids
    finally:
        store.dispose()


def _rows(db: str, run_ids: list[int]) -> dict[str, int]:
    """How many rows of each per-run table the store holds for these runs, and its blobs and verdicts."""
    from sqlalchemy import text

    store = _store(db)
    try:
        with store.connect() as conn:
            ids = ",".join(str(i) for i in run_ids)
            out = {t: conn.execute(text(f"SELECT count(*) FROM {t} WHERE {col} IN ({ids})")).scalar_one()
                   for t, col in (("runs", "id"), ("units", "run_id"), ("metrics", "run_id"),
                                  ("artifacts", "run_id"), ("probe_counts", "run_id"))}
            for t in ("artifact_blobs", "verdicts", "executions", "reviews"):
                out[t] = conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()
            return out
    finally:
        store.dispose()


def _status(cli, db: str, root: Path) -> dict[str, Any]:
    code, out, err = cli("hypothesis", "list", "--json", "--db", db, "--root", str(root))
    assert code == 0, err
    return next(i for i in json.loads(out)["items"] if i["id"] == HID)


def test_deleting_one_run_removes_its_rows_and_the_verdict_resting_on_it(cli, db: str, workbench_dir: Path):
    first, _ = _execution_with_verdict(db, "supported")
    second, ids = _execution_with_verdict(db, "falsified")
    common = ("--db", db, "--root", str(workbench_dir))
    assert cli("review", HID, "--approve", "-m", "seen", "--as", "ada", *common)[0] == 0
    assert _status(cli, db, workbench_dir)["status"] == "falsified"
    before = _rows(db, ids)
    code, out, err = cli("runs", "delete", str(ids[0]), "--yes", "--json", *common)
    assert code == 0, err
    d = json.loads(out)
    assert (d["wb"], d["command"]) == (1, "runs delete")
    assert [r["id"] for r in d["deleted"]] == [ids[0]]
    assert [(v["verdict"], v["execution_id"]) for v in d["verdicts_deleted"]] == [("falsified", second)]
    assert d["executions_deleted"] == [] and d["artifact_contents_deleted"] == 1
    assert d["status_changes"] == {HID: {"before": "falsified", "after": "supported"}}
    after = _rows(db, ids)
    assert {t: before[t] - after[t] for t in before} == {
        "runs": 1, "units": 40, "metrics": before["metrics"] // 4, "artifacts": 1, "probe_counts": 1,
        "artifact_blobs": 1, "verdicts": 1, "executions": 0, "reviews": 0}
    # The status no longer rests on the removed verdict: the earlier execution's verdict holds it, and the
    # approval given on the removed one is stale.
    row = _status(cli, db, workbench_dir)
    assert (row["status"], row["status_basis"]) == ("supported", "controlled")
    code, out, _ = cli("review", "list", HID, "--json", *common)
    assert json.loads(out)["items"][0]["state"] == "stale"
    code, _, err = cli("runs", "show", str(ids[0]), *common)
    assert code == 2 and f"no run {ids[0]}" in err
    assert first != second


def test_deleting_every_run_of_an_execution_removes_it_and_keeps_shared_contents(cli, db: str, workbench_dir: Path):
    shared = b"the same log in every run\n"
    _, others = _execution_with_verdict(db, shared_log=shared)
    ex, ids = _execution_with_verdict(db, shared_log=shared)  # the newer: its verdict holds the status
    code, out, err = cli("runs", "delete", *map(str, ids), "--yes", "--db", db, "--root", str(workbench_dir))
    assert code == 0, err
    assert f"deleted execution {ex} (no run left)" in out
    assert f"status of {HID}: falsified, now from another verdict" in out
    assert "artifact content" not in out  # the other execution's runs still refer to it
    after = _rows(db, ids + others)
    assert (after["runs"], after["artifact_blobs"], after["executions"], after["verdicts"]) == (4, 1, 1, 1)


def test_unknown_ids_are_refused_naming_them_and_nothing_is_deleted(cli, db: str, workbench_dir: Path):
    _, ids = _execution_with_verdict(db)
    before = _rows(db, ids)
    code, out, err = cli("runs", "delete", str(ids[0]), "9999", "9998", "--yes", "--db", db)
    assert code == 2 and out == "", (code, out)
    assert err.startswith("Error: no runs 9998, 9999 in the store") and "Traceback" not in err, err
    assert _rows(db, ids) == before


def test_without_yes_and_no_terminal_it_asks_for_yes_and_deletes_nothing(cli, db: str, workbench_dir: Path):
    _, ids = _execution_with_verdict(db)
    before = _rows(db, ids)
    code, _, err = cli("runs", "delete", str(ids[0]), "--db", db)
    assert code == 2 and err.startswith("Error: ") and "--yes" in err, err
    assert _rows(db, ids) == before


def test_at_a_terminal_it_shows_what_goes_and_asks(cli, workbench_dir: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch):
    from typer.testing import CliRunner

    from workbench.cli import runs
    from workbench.cli.main import app

    db = str(tmp_path / "wb.duckdb")
    ex, ids = _execution_with_verdict(db)
    monkeypatch.setattr(runs, "_interactive", lambda: True)  # CliRunner's stdin is no terminal
    args = ["runs", "delete", str(ids[1]), "--db", db, "--root", str(workbench_dir)]
    no = CliRunner().invoke(app, args, input="n\n")
    assert no.exit_code == 0 and no.stdout == "Nothing deleted.\n"
    assert f"would delete run {ids[1]} (execution {ex}, {HID}, ok)" in no.stderr
    assert f"would delete verdict 1 of {HID} (falsified, execution {ex})" in no.stderr
    assert _rows(db, ids)["runs"] == 4
    # On a terminal of 50 columns the lines before the question wrap between words (they ran on, as piped).
    monkeypatch.setattr("workbench.cli._common.stderr_is_tty", lambda: True)
    narrow = CliRunner().invoke(app, args, input="n\n", env={"COLUMNS": "50"})
    assert narrow.stderr.split() == no.stderr.split() and narrow.stderr.count("\n") > no.stderr.count("\n"), narrow
    assert all(len(line) <= 50 for line in narrow.stderr.splitlines()[:-1]), narrow.stderr
    yes = CliRunner().invoke(app, args, input="y\n")
    assert yes.exit_code == 0, yes.stderr
    assert f"deleted run {ids[1]}" in yes.stdout and _rows(db, ids)["runs"] == 3


def test_a_pooled_verdict_resting_on_an_imported_run_goes_with_it(cli, db: str, workbench_dir: Path, seed_csv: Path):
    common = ("--db", db, "--root", str(workbench_dir))
    code, out, err = cli("import", "evidence", str(seed_csv), "--json", *common)
    assert code == 0, err
    imported = {r["label"]: r["id"] for r in json.loads(out)["imported"]}
    assert cli("hypothesis", "analyze", HID, *common)[0] == 0
    assert _status(cli, db, workbench_dir)["status_basis"] == "exploratory"
    code, out, err = cli("runs", "delete", str(imported["post-bf16-hicache-postfix"]), "--yes", *common)
    assert code == 0, err
    assert "(falsified, pooled): it rests on a deleted run" in out and f"status of {HID}: falsified -> open" in out
    assert _status(cli, db, workbench_dir)["status_basis"] == "declared"


def test_an_isolate_search_verdict_naming_a_probe_execution_goes_with_its_runs(cli, workbench_dir: Path,
                                                                               tmp_path: Path):
    # A search's verdict rests on its probes' executions, named only inside its details (no evidence digest).
    db = str(tmp_path / "wb.duckdb")
    ex, ids = _execution_with_verdict(db)
    store = _store(db)
    try:
        search = store.add_verdict(hypothesis_id="iso-abc", verdict="supported", reasoning="found", checks=[],
                                   details={"kind": "isolate-search", "probes": [
                                       {"index": 0, "result": {"details": {"execution_id": ex}}}]},
                                   execution_id=None, hypothesis_sha256=None)
        other = store.add_verdict(hypothesis_id="iso-def", verdict="supported", reasoning="found", checks=[],
                                  details={"kind": "isolate-search", "probes": [
                                      {"index": 0, "result": {"details": {"execution_id": ex + 100}}}]},
                                  execution_id=None, hypothesis_sha256=None)
    finally:
        store.dispose()
    code, out, err = cli("runs", "delete", str(ids[0]), "--yes", "--json", "--db", db)
    assert code == 0, err
    gone = {v["id"] for v in json.loads(out)["verdicts_deleted"]}
    assert search in gone and other not in gone


def test_a_run_of_an_execution_still_running_is_refused(cli, workbench_dir: Path, tmp_path: Path):
    # A runner writes a run's end into its row: deleting the row under it would crash the runner.
    db = str(tmp_path / "wb.duckdb")
    store = _store(db)
    try:
        ex = add_execution(store)  # an execution opens as "running"
        done = add_run(store, execution_id=ex, arm="control", variables=CONTROL, outcomes={"done": 40})
        live = add_run(store, execution_id=ex, arm="treatment", variables=TREATMENT, outcomes=None, status="running")
    finally:
        store.dispose()
    code, _, err = cli("runs", "delete", str(done), str(live), "--yes", "--db", db)
    assert code == 2 and err.startswith(f"Error: run {live} is running in execution {ex}"), err
    assert _rows(db, [done, live])["runs"] == 2
    code, _, err = cli("runs", "delete", str(done), "--yes", "--db", db)  # a finished run of it may go
    assert code == 0, err


def test_deleting_every_finished_run_of_an_execution_still_running_keeps_the_execution(cli, workbench_dir: Path,
                                                                                       tmp_path: Path):
    # Its runner still writes its later runs and its end into the execution's row: deleting the execution as
    # "left with no run" made that runner fail at its end with a KeyError traceback, its summary unwritten.
    db = str(tmp_path / "wb.duckdb")
    store = _store(db)
    try:
        ex = add_execution(store)  # an execution opens as "running"
        done = add_run(store, execution_id=ex, arm="control", variables=CONTROL, outcomes={"done": 40})
    finally:
        store.dispose()
    code, out, err = cli("runs", "delete", str(done), "--yes", "--db", db)
    assert code == 0, err
    assert "deleted execution" not in out, out
    assert (_rows(db, [done])["runs"], _rows(db, [done])["executions"]) == (0, 1)


def _resumed_execution_with_verdict(db: str, workbench_dir: Path) -> tuple[int, int, list[int], int]:
    """An execution whose first control run was interrupted and redone by --resume (the rows the runner
    leaves: the interrupted attempt, then the redone run of the same replicate), and the verdict the real
    analysis gives on it. Returns (execution, the interrupted attempt, the evidence runs, the verdict)."""
    from workbench.analysis.stored import analyze_stored, record_verdict
    from workbench.registry import load_registry

    store = _store(db)
    try:
        ex = add_execution(store)
        attempt = add_run(store, execution_id=ex, arm="control", variables=CONTROL, replicate=1,
                          outcomes={"leak": 2}, status="interrupted")
        ids = [add_run(store, execution_id=ex, arm=arm, variables=v, replicate=r, outcomes={"leak": 5, "done": 35})
               for r in (1, 2) for arm, v in (("control", CONTROL), ("treatment", TREATMENT))]
        analysis = analyze_stored(store, load_registry(workbench_dir), HID, execution_id=ex)
        assert attempt not in analysis.run_ids and set(ids) <= set(analysis.run_ids)
        return ex, attempt, ids, record_verdict(store, analysis, execution_id=ex)
    finally:
        store.dispose()


def test_deleting_a_redone_interrupted_attempt_keeps_the_verdict_it_did_not_rest_on(cli, db: str,
                                                                                    workbench_dir: Path):
    # The attempt is history: the verdict's evidence is the execution's runs less it. Once the rule was
    # "any run of the execution", and deleting the leftover row took the verdict (and the status) with it.
    # Rows built through the store's API (on DuckDB and PostgreSQL), the verdict by the real analysis; a real
    # runner killed and resumed: tests/runner/test_deleted_counts.py.
    ex, attempt, ids, verdict = _resumed_execution_with_verdict(db, workbench_dir)
    common = ("--db", db, "--root", str(workbench_dir))
    before = _status(cli, db, workbench_dir)
    code, out, err = cli("runs", "delete", str(attempt), "--yes", "--json", *common)
    assert code == 0, err
    d = json.loads(out)
    assert [r["id"] for r in d["deleted"]] == [attempt]
    assert d["verdicts_deleted"] == [] and d["status_changes"] == {}, d
    assert _rows(db, ids)["verdicts"] == 1 and _status(cli, db, workbench_dir) == before
    code, out, err = cli("runs", "delete", str(ids[2]), "--yes", "--json", *common)  # a run it did read
    assert code == 0, err
    assert [v["id"] for v in json.loads(out)["verdicts_deleted"]] == [verdict]
    assert ex


def test_dry_run_lists_what_would_go_with_the_status_change_and_deletes_nothing(cli, db: str, workbench_dir: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch):
    first, _ = _execution_with_verdict(db, "supported")
    second, ids = _execution_with_verdict(db, "falsified")
    common = ("--db", db, "--root", str(workbench_dir))
    before = _rows(db, ids)
    code, out, err = cli("runs", "delete", str(ids[0]), "--dry-run", *common)  # no --yes, no terminal needed
    assert code == 0, err
    assert f"would delete run {ids[0]} (execution {second}, {HID}, ok)" in out
    assert f"would delete verdict 2 of {HID} (falsified, execution {second}): it rests on a deleted run" in out
    assert f"status of {HID} would be: falsified -> supported" in out
    assert "nothing deleted (--dry-run)" in out.lower()
    assert _rows(db, ids) == before
    # On a terminal each line wraps between words at its width (they ran to 96 characters); piped, one line each.
    piped = out
    with monkeypatch.context() as m:
        m.setattr("workbench.cli._common.is_tty", lambda: True)
        code, out, err = cli("runs", "delete", str(ids[0]), "--dry-run", *common, env={"COLUMNS": "50"})
    assert code == 0 and out.split() == piped.split() and len(out.splitlines()) > len(piped.splitlines()), out
    assert all(len(line) <= 50 for line in out.splitlines()), out
    code, out, err = cli("runs", "delete", *map(str, ids), "--dry-run", "--json", *common)
    assert code == 0, err
    d = json.loads(out)
    assert (d["command"], d["dry_run"]) == ("runs delete", True)
    assert [r["id"] for r in d["deleted"]] == ids and d["executions_deleted"] == [second]
    assert [v["verdict"] for v in d["verdicts_deleted"]] == ["falsified"]
    assert d["status_changes"] == {HID: {"before": "falsified", "after": "supported"}}
    assert _rows(db, ids) == before and first != second
    code, out, err = cli("runs", "delete", str(ids[0]), "--yes", "--json", *common)  # what it said would happen
    assert json.loads(out)["status_changes"] == {HID: {"before": "falsified", "after": "supported"}}


def test_a_run_id_that_is_no_run_id_is_one_error_naming_it(cli, workbench_dir: Path, tmp_path: Path):
    db = str(tmp_path / "wb.duckdb")
    for args, shown in ((["--", "-1"], "-1"), (["abc"], "abc"), (["0"], "0"), (["3", "1.5"], "1.5")):
        code, out, err = cli("runs", "delete", *args, "--yes", "--db", db)
        assert code == 2 and out == "", (args, code, out)
        assert err.startswith(f"Error: RUN_ID {shown}: not a run id") and err.count("Error") == 1, err
        assert "Traceback" not in err and "Usage" not in err, err
    assert not Path(db).exists()
    code, out, _ = cli("runs", "delete", "--help")
    # Not typer's braces ({RUN_ID}...): tests/cli/test_usage_lines.py checks every command's usage line.
    assert "runs delete [OPTIONS] RUN_ID...\n" in out and "{RUN_ID" not in out, out


def test_a_negative_run_id_reaches_the_run_ids_own_check(cli, workbench_dir: Path, tmp_path: Path):
    """`wb runs show -1` said `Error: No such option: -1`: the parser took the negative number for a flag. It is a
    value given for RUN_ID, refused as one that is no run id, with or without `--` before it."""
    db = str(tmp_path / "wb.duckdb")
    for args, shown in ((["runs", "show", "-1"], "-1"), (["runs", "show", "-1", "--json"], "-1"),
                        (["runs", "delete", "-1", "--yes"], "-1"), (["runs", "delete", "3", "-2.5", "--yes"], "-2.5")):
        code, out, err = cli(*args, "--db", db)
        assert code == 2, (args, code, err)
        assert err.startswith(f"Error: RUN_ID {shown}: not a run id") and "No such option" not in err, (args, err)
    code, out, err = cli("runs", "show", "-x", "--db", db)  # a flag wb does not have is still one
    assert code == 2 and "No such option: -x" in err, err
    assert not Path(db).exists()


def test_declining_at_the_prompt_deletes_nothing_and_exits_0(workbench_dir: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch):
    from typer.testing import CliRunner

    from workbench.cli import runs
    from workbench.cli.main import app

    db = str(tmp_path / "wb.duckdb")
    _execution_with_verdict(db, "supported")
    ex, ids = _execution_with_verdict(db, "falsified")
    monkeypatch.setattr(runs, "_interactive", lambda: True)
    args = ["runs", "delete", str(ids[1]), "--db", db, "--root", str(workbench_dir)]
    no = CliRunner().invoke(app, args, input="n\n")
    assert no.exit_code == 0, no.stderr
    assert no.stdout == "Nothing deleted.\n", no.stdout
    assert f"status of {HID} would be: falsified -> supported" in no.stderr  # shown before the question
    assert no.stderr.index("would be") < no.stderr.index("Delete 1 run?")
    assert _rows(db, ids)["runs"] == 4
    no = CliRunner().invoke(app, args + ["--json"], input="")  # end of input: declined too
    assert no.exit_code == 0 and json.loads(no.stdout)["deleted"] == [], no.stdout
    yes = CliRunner().invoke(app, args + ["--json"], input="y\n")
    assert yes.exit_code == 0, yes.stderr
    d = json.loads(yes.stdout)  # the whole of stdout: the prompt stays on stderr
    assert yes.stdout.startswith("{") and [r["id"] for r in d["deleted"]] == [ids[1]], yes.stdout
    assert "Delete 1 run? [y/N]: " in yes.stderr and ex


def test_import_replace_says_which_run_id_replaced_which_and_removes_the_verdict_that_rested_on_it(
        cli, db: str, workbench_dir: Path, seed_csv: Path, tmp_path: Path):
    # The replacing row is stored as a new run (new id and uuid: a note or a review naming the old run must
    # not silently describe other numbers); the output says so, in words and in --json.
    # Correcting a transcription with --replace swaps the stored run for a new one: a pooled verdict computed
    # from the old numbers must not stay the status (it once did, resting on a run the store no longer held).
    # (The verdict's part was test_import_replace_removes_the_verdict_that_rested_on_the_replaced_row, DuckDB
    # only, on the same import, replace and replace back.)
    common = ("--db", db, "--root", str(workbench_dir))
    code, out, err = cli("import", "evidence", str(seed_csv), "--json", *common)
    assert code == 0, err
    label = "post-bf16-hicache-postfix"
    old = {r["label"]: r["id"] for r in json.loads(out)["imported"]}[label]
    assert cli("hypothesis", "analyze", HID, *common)[0] == 0
    assert _status(cli, db, workbench_dir)["status"] == "falsified"
    fixed = tmp_path / "seed-fixed.csv"
    fixed.write_text(seed_csv.read_text().replace(",80,4,300,2500,200,14,40,3,23,0,",
                                                  ",80,4,300,2500,200,1,40,16,23,0,"))
    code, out, err = cli("import", "evidence", str(fixed), "--replace", "--json", *common)
    assert code == 0, err
    d = json.loads(out)
    new = {r["label"]: r["id"] for r in d["imported"]}[label]
    assert new != old and d["replaced_runs"] == [{"label": label, "run": old, "by": new}], d
    assert d["replaced"] == [label]
    assert [(v["hypothesis_id"], v["verdict"]) for v in d["verdicts_deleted"]] == [(HID, "falsified")]
    row = _status(cli, db, workbench_dir)
    assert (row["status"], row["status_basis"]) == ("open", "declared"), row
    code, out, err = cli("runs", "list", "--json", *common)
    assert {r["label"]: r["id"] for r in json.loads(out)["items"]}[label] == new
    assert cli("hypothesis", "analyze", HID, *common)[0] == 0
    code, out, err = cli("import", "evidence", str(seed_csv), "--replace", *common)  # and back, said in words
    assert code == 0, err
    assert "replaced 1" in out and f"deleted verdict 2 of {HID} (" in out and "it rests on a replaced run" in out
    code, rows, _ = cli("runs", "list", "--json", *common)
    again = {r["label"]: r["id"] for r in json.loads(rows)["items"]}[label]
    assert f"run {new} ({label}) replaced by run {again}" in out, out
