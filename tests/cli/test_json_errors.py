"""`--json` when a command fails: one envelope on stdout with "ok": false and the error (message, hint, where,
exit code), the human `Error:` line still on stderr, the exit code unchanged (README "Output for scripts")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from test_json_and_globals import _leaf_commands

WB = str(Path(sys.executable).with_name("wb"))

# One bad input for each command that takes --json: (arguments, exit code, what `where` names or None).
# ROOT, DB and TMP are filled in by the test; a command added without a line here fails the test below.
BAD = {
    "schema": (["schema", "--bogus"], 2, "--bogus"),
    "confounds": (["confounds", "--hypothesis", "nope"], 2, "ROOT/hypotheses.yaml"),
    "review": (["review", "nope", "--approve", "-m", "x"], 2, "ROOT/hypotheses.yaml"),
    "report": (["report", "--format", "bogus"], 2, "--format"),
    "lineage": (["lineage", "--format", "xml"], 2, "--format"),
    "isolate": (["isolate", "--experiment", "nope", "--good", "a=1", "--bad", "a=2", "--metric", "m",
                 "--region", ">= 0.1"], 2, "--experiment"),
    "hypothesis list": (["hypothesis", "list", "--format", "xml"], 2, "--format"),
    "hypothesis show": (["hypothesis", "show", "nope"], 2, "ROOT/hypotheses.yaml"),
    "hypothesis validate": (["hypothesis", "validate"], 2, "ROOT/hypotheses.yaml:LINE"),  # a broken file
    "hypothesis analyze": (["hypothesis", "analyze", "nope"], 2, "ROOT/hypotheses.yaml"),
    "hypothesis run": (["hypothesis", "run", "wedge-confound", "--fail-on", "nope"], 2, "--fail-on"),
    "runs list": (["runs", "list", "--limit", "abc"], 2, "--limit"),
    "runs show": (["runs", "show", "999"], 2, None),
    "runs delete": (["runs", "delete", "999", "--yes", "--db", "TMP/none.duckdb"], 2, "--db"),
    "db upgrade": (["db", "upgrade", "--db", "TMP/no/such/x.duckdb"], 2, "--db"),
    "db current": (["db", "current", "--db", "TMP/none.duckdb"], 2, "--db"),
    "import evidence": (["import", "evidence", "TMP/none.csv"], 2, "TMP/none.csv"),
    "sim up": (["sim", "up", "--dir", "TMP/sim", "--set", "bad"], 2, "--set"),
    "sim down": (["sim", "down", "--dir", "TMP/file"], 2, "--dir"),
    "sim restart": (["sim", "restart", "--dir", "TMP/file"], 2, "--dir"),
    "sim status": (["sim", "status", "--dir", "TMP/file"], 2, "--dir"),
    "sim repro": (["sim", "repro", "--dir", "TMP/sim", "--sessions", "0"], 2, None),
    "sim bench": (["sim", "bench", "--dir", "TMP/sim", "--concurrency", "0"], 2, "--concurrency"),
    "sim journal": (["sim", "journal", "--dir", "TMP/sim", "--unit", "bogus"], 2, "--unit"),
    "kernel check": (["kernel", "check", "--impl", "bogus"], 2, "--impl"),
    "kernel bench": (["kernel", "bench", "--layers", "0"], 2, "--layers"),
    "bundle export": (["bundle", "export", "nope", "--out", "TMP/b.wbz"], 2, "ROOT/hypotheses.yaml"),
    "bundle import": (["bundle", "import", "TMP/none.wbz"], 2, "TMP/none.wbz"),
    "bundle show": (["bundle", "show", "TMP/none.wbz"], 2, "TMP/none.wbz"),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real DuckDB store holding the seed's evidence (built once: the commands below only read it)."""
    from workbench.cli.main import app
    from typer.testing import CliRunner

    home = tmp_path_factory.mktemp("json-errors")
    repo = Path(__file__).resolve().parents[2]
    db = home / "wb.duckdb"
    res = CliRunner().invoke(app, ["import", "evidence", str(repo / "evidence" / "seed-runs.csv"), "--db", str(db),
                                   "--root", str(repo)], catch_exceptions=False)
    assert res.exit_code == 0, res.stderr
    return db


def _fill(args: list[str], root: Path, tmp: Path) -> list[str]:
    return [a.replace("ROOT", str(root)).replace("TMP", str(tmp)) for a in args]


def _error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.startswith("Error: ")]
    assert len(lines) == 1, stderr
    return lines[0].removeprefix("Error: ")


def test_every_json_command_has_a_bad_input_here() -> None:
    takes_json = {name for name, cmd in _leaf_commands()
                  if "--json" in {o for p in cmd.params for o in getattr(p, "opts", [])}}
    assert takes_json == set(BAD), sorted(takes_json ^ set(BAD))


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_with_json_prints_an_envelope_with_the_error(name, store, workbench_dir, tmp_path, cli,
                                                              monkeypatch) -> None:
    monkeypatch.setenv("WB_ROOT", str(workbench_dir))
    monkeypatch.setenv("WB_DB", str(store))
    (tmp_path / "file").write_text("not a folder\n")
    if name == "hypothesis validate":
        with (workbench_dir / "hypotheses.yaml").open("a") as f:
            f.write("- id: [\n")
    args, code, where = BAD[name]
    got, out, err = cli(*_fill(args, workbench_dir, tmp_path), "--json")
    assert got == code, (got, out, err)
    doc = json.loads(out)  # the whole of stdout is one JSON document
    assert (doc["wb"], doc["command"], doc["ok"]) == (1, name, False), doc
    e = doc["error"]
    assert e["exit_code"] == code and e["message"] == _error_line(err), (e, err)
    if name == "hypothesis validate":  # every problem found (here one, after which nothing is checked), then how many
        assert [p["message"] for p in e["problems"]] == [e["message"]] and e["stopped"] is True, e
        assert err.splitlines()[-1].startswith("1 problem found; a file that cannot be read or parsed"), err
        err = err[:err.rstrip("\n").rfind("\n") + 1]
    if "Hint: " in err:
        assert err.split("Hint: ", 1)[1].rstrip("\n") == e["hint"]
    if where == "ROOT/hypotheses.yaml:LINE":
        assert e["where"].startswith(str(workbench_dir / "hypotheses.yaml") + ":"), e
    elif where is not None:
        assert e["where"] == _fill([where], workbench_dir, tmp_path)[0], e
    assert "Traceback" not in err


@pytest.mark.parametrize("args, where", [
    (["hypothesis", "run", "wedge-confound", "--set", "nope=1"], "--set"),
    (["hypothesis", "run", "wedge-confound", "--target", "nope"], "--target"),
    (["review", "wedge-confound", "--comment", "-m", "x", "--evidence", "zz"], "--evidence"),
    (["import", "evidence", "TMP/bad.csv"], "TMP/bad.csv:2"),
    (["runs", "delete", "1"], "--yes"),  # off a terminal, nothing to ask on: the flag it needs
])
def test_where_names_the_flag_or_the_line_the_message_names(args, where, store, workbench_dir, tmp_path, cli) -> None:
    """An error whose message starts with the flag or the file:line at fault carries it in `where` too, so a
    script need not parse the message (nothing here is run: each is refused before anything starts)."""
    (tmp_path / "bad.csv").write_text("run_id,nixl_abort_fix,sessions\nx1,maybe,80\n")
    code, out, err = cli(*_fill(args, workbench_dir, tmp_path), "--json", "--db", str(store), "--root",
                         str(workbench_dir))
    e = json.loads(out)["error"]
    assert code == 2 and e["where"] == _fill([where], workbench_dir, tmp_path)[0], (e, err)


def test_a_success_says_ok_and_carries_no_error(store, workbench_dir, cli) -> None:
    code, out, err = cli("runs", "list", "--json", "--db", str(store), "--root", str(workbench_dir))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["ok"] is True and "error" not in doc and doc["items"]


def test_a_verdict_in_fail_on_prints_the_verdict_with_ok_false(store, workbench_dir, tmp_path, cli) -> None:
    """Exit 3: the result is there (the verdict), "ok" is false as for every exit but 0, and the error says why."""
    import shutil

    db = tmp_path / "copy.duckdb"
    shutil.copy(store, db)
    code, out, err = cli("hypothesis", "analyze", "wedge-confound", "--fail-on", "falsified", "--json",
                         "--db", str(db), "--root", str(workbench_dir))
    assert code == 3, err
    doc = json.loads(out)
    assert doc["verdict"] == "falsified" and doc["ok"] is False
    assert doc["error"]["exit_code"] == 3 and doc["error"]["where"] == "--fail-on"
    assert doc["error"]["message"] == "verdict falsified is in --fail-on (falsified)"


def test_a_bug_keeps_its_traceback_and_the_envelope_says_so(store, workbench_dir, cli, monkeypatch) -> None:
    from workbench.app import Workbench

    def broken(self, *a, **k):
        raise TypeError("made up")

    monkeypatch.setattr(Workbench, "hypotheses", broken)
    from typer.testing import CliRunner

    from workbench.cli.main import app

    res = CliRunner().invoke(app, ["hypothesis", "list", "--json", "--db", str(store), "--root", str(workbench_dir)])
    assert isinstance(res.exception, TypeError)  # not turned into a clean error: a bug shows as one
    doc = json.loads(res.stdout)
    assert doc["ok"] is False and doc["error"]["kind"] == "bug" and "TypeError: made up" in doc["error"]["message"]


def test_the_console_script_prints_the_envelope_for_a_parser_error_and_a_wb_error(store, workbench_dir) -> None:
    for args, message in ((["runs", "list", "--limit", "abc"], "--limit abc: not a whole number"),
                          (["hypothesis", "show", "nope"], "no hypothesis 'nope'")):
        proc = subprocess.run([WB, *args, "--json", "--db", str(store), "--root", str(workbench_dir)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["ok"] is False and message in doc["error"]["message"] and message in proc.stderr


def test_without_json_stdout_stays_empty(store, workbench_dir, cli) -> None:
    code, out, err = cli("hypothesis", "show", "nope", "--db", str(store), "--root", str(workbench_dir))
    assert code == 2 and out == "" and err.startswith("Error: no hypothesis 'nope'")


@pytest.mark.parametrize("db", ["TMP/no/such/x.duckdb", "TMP", "sqlite:///TMP/x.db", "postgresql://127.0.0.1:1/x"],
                         ids=["missing-folder", "a-folder", "sqlite", "no-server"])
@pytest.mark.parametrize("args", [["runs", "list"], ["import", "evidence", "ROOT/evidence/seed-runs.csv"]],
                         ids=["read", "write"])
def test_a_bad_store_is_named_by_where_its_value_came_from(db, args, tmp_path, cli, monkeypatch) -> None:
    """A store from $WB_DB that will not open is reported as $WB_DB, in the Error and in `where` (it was
    reported as --db, a flag the command line did not hold); the same value given with --db is --db."""
    repo = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("WB_ROOT", str(repo))
    value = _fill([db], repo, tmp_path)[0]
    monkeypatch.setenv("WB_DB", value)
    code, out, err = cli(*_fill(args, repo, tmp_path), "--json")
    e = json.loads(out)["error"]
    assert code in (1, 2) and e["where"] == "$WB_DB", (e, err)
    assert "$WB_DB" in _error_line(err) and "--db" not in err, err
    monkeypatch.delenv("WB_DB")
    code, out, err = cli(*_fill(args, repo, tmp_path), "--json", "--db", value)
    e = json.loads(out)["error"]
    assert code in (1, 2) and e["where"] == "--db", (e, err)
    assert "$WB_DB" not in err, err
    assert not (tmp_path / "no").exists() and not (tmp_path / "x.db").exists()


UNREACHABLE = "postgresql://ada:s3cret@127.0.0.1:1/wb"  # port 1: no server listens, the connection is refused


@pytest.mark.parametrize("args", [["runs", "list"], ["hypothesis", "run", "wedge-confound", "--replicates", "1"],
                                  ["report"], ["review", "list"], ["bundle", "export", "wedge-confound", "--out",
                                                                   "TMP/b.wbz"]],
                         ids=["runs-list", "hypothesis-run", "report", "review-list", "bundle-export"])
def test_a_store_server_that_cannot_be_reached_is_a_failure_while_running(args, workbench_dir, tmp_path, cli,
                                                                          monkeypatch) -> None:
    """Every command reports an unreachable PostgreSQL store alike (README: exit 1, a failure while running, as
    the environment's fault; a URL the server refuses is bad input): one Error line naming the store without its
    password and where the URL came from, a hint about the server, the same in --json, and nothing written."""
    name = " ".join(args[:2]) if args[0] in ("runs", "hypothesis", "review", "bundle") else args[0]
    for source in ("--db", "$WB_DB"):
        if source == "$WB_DB":
            monkeypatch.setenv("WB_DB", UNREACHABLE)
            given = []
        else:
            monkeypatch.delenv("WB_DB", raising=False)
            given = ["--db", UNREACHABLE]
        code, out, err = cli(*_fill(args, workbench_dir, tmp_path), "--root", str(workbench_dir), *given, "--json")
        assert code == 1 and "Traceback" not in err, (source, code, err)
        line = _error_line(err)
        assert "127.0.0.1:1/wb" in line and f"({source})" in line and "s3cret" not in out + err, line
        # The URL as the user typed it, not with the driver wb adds to reach the server (postgresql+psycopg://).
        assert "the store postgresql://" in line, line
        e = json.loads(out)["error"]
        assert json.loads(out)["command"] == name, out
        assert (e["message"], e["exit_code"], e["where"], e["kind"]) == (line, 1, source, "StoreError"), e
        assert "server" in e["hint"] and source in e["hint"], e
    assert sorted(p.name for p in workbench_dir.iterdir()) == ["experiments", "hypotheses.yaml"]
    assert not list(tmp_path.glob("*.wbz"))
