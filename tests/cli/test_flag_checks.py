"""Flags whose values were once taken without a word: a seed out of range, an empty --fail-on, a --set given
twice, a --db naming a folder, a file that is not DuckDB or no file at all (an in-memory DuckDB). Each must be
one `Error:` naming the flag, exit 2, with nothing run and no store written or touched."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _refused(code: int, err: str, *fragments: str) -> None:
    assert "Traceback" not in err, err
    assert code == 2, (code, err)
    assert err.startswith("Error: "), err
    for f in fragments:
        assert f in err, (f, err)


@pytest.fixture
def wb(workbench_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(workbench_dir)
    monkeypatch.setenv("WB_ROOT", str(workbench_dir))
    monkeypatch.delenv("WB_DB", raising=False)
    return workbench_dir


@pytest.mark.parametrize("seed", ["-5", "-1", "2147483648", "99999999999999999999999"])
def test_a_seed_outside_the_workload_seed_range_is_refused(wb: Path, cli, seed: str):
    code, _, err = cli("hypothesis", "run", "wedge-confound", "--seed", seed)
    _refused(code, err, "--seed", "0 to 2147483647")
    assert not (wb / "wb.duckdb").exists()


def test_isolate_refuses_a_seed_out_of_range_before_it_probes(wb: Path, cli):
    code, _, err = cli("isolate", "--experiment", "agent-repro", "--good", "hicache=off", "--bad", "hicache=on",
                       "--metric", "corruption_rate", "--region", ">= 0.05", "--seed", "-5")
    _refused(code, err, "--seed")
    assert not (wb / "wb.duckdb").exists()


def test_the_largest_seed_is_accepted_as_far_as_the_plan(wb: Path, cli):
    # 2**31 - 1 passes the seed check; the unknown hypothesis is what stops it (nothing is run).
    code, _, err = cli("hypothesis", "run", "no-such-hypothesis", "--seed", "2147483647")
    assert code == 2 and "--seed" not in err and "no-such-hypothesis" in err, err


@pytest.mark.parametrize("value", ["", ",", " , "])
def test_an_empty_fail_on_is_refused(wb: Path, cli, value: str):
    for args in (["hypothesis", "run", "wedge-confound"], ["hypothesis", "analyze", "wedge-confound"]):
        code, _, err = cli(*args, "--fail-on", value)
        _refused(code, err, "--fail-on", "names no verdict")
    assert not (wb / "wb.duckdb").exists()


@pytest.mark.parametrize("value,item", [("falsified,,", "item 2"), (",falsified", "item 1"),
                                        ("falsified, ,invalid", "item 2")])
def test_an_empty_item_in_fail_on_is_refused_naming_it(wb: Path, cli, value: str, item: str):
    """`--fail-on "falsified,,"` (a list built from an unset variable, say) was taken as `falsified`: the gate the
    script meant to add was silently dropped."""
    for args in (["hypothesis", "run", "wedge-confound"], ["hypothesis", "analyze", "wedge-confound"]):
        code, out, err = cli(*args, "--fail-on", value)
        _refused(code, err, f"Error: --fail-on {value!r}: {item} is empty\n")
        assert out == "" and len(err.splitlines()) == 2, (out, err)
    assert not (wb / "wb.duckdb").exists()


@pytest.mark.parametrize("args,flag,value,item", [
    (["kernel", "bench"], "--variants", "0,,1", "item 2"),
    (["kernel", "bench"], "--variants", ",0", "item 1"),
    (["kernel", "bench"], "--variants", "0, ,1", "item 2"),
    (["kernel", "bench"], "--variants", ",", "item 1"),
    (["hypothesis", "analyze", "wedge-confound"], "--fail-on", "falsified,,", "item 2"),
])
def test_an_empty_item_in_a_comma_list_flag_is_refused_naming_flag_and_item(wb: Path, cli, args: list[str],
                                                                           flag: str, value: str, item: str):
    """`wb kernel bench --variants "0,,1"` timed variants 0 and 1 as if the list were whole, and `--variants ","`
    timed every variant: an item left empty (a list built from an unset variable) was dropped without a word.
    Every comma-separated flag refuses it alike, before anything runs or any device is looked for."""
    code, out, err = cli(*args, flag, value)
    _refused(code, err, f"Error: {flag} {value!r}: {item} is empty\n")
    assert out == "" and len(err.splitlines()) == 2, (out, err)
    assert not (wb / "wb.duckdb").exists()


def test_a_variable_set_twice_to_different_values_is_refused_naming_both(wb: Path, cli):
    code, _, err = cli("hypothesis", "run", "wedge-confound", "--set", "causal_model=seed",
                       "--set", "causal_model=wedge")
    _refused(code, err, "--set causal_model=seed", "--set causal_model=wedge")
    assert not (wb / "wb.duckdb").exists()


def test_a_variable_set_twice_to_one_value_is_no_conflict():
    from workbench.cli._common import parse_sets

    assert parse_sets(["seed=3", " seed = 3 ", "hicache=on"]) == {"seed": "3", "hicache": "on"}


def test_db_naming_a_folder_says_it_is_a_folder(wb: Path, cli, tmp_path: Path):
    folder = tmp_path / "stores"
    folder.mkdir()
    for args in (["runs", "list"], ["import", "evidence", str(REPO / "evidence" / "seed-runs.csv")]):
        code, _, err = cli(*args, "--db", str(folder))
        _refused(code, err, f"--db {folder}", "is a folder")
        assert "backup" not in err, err
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("content", [b"# README\n\nnot a database\n" * 40, b"", b"SQLite format 3\x00" + b"x" * 200])
def test_db_naming_a_file_that_is_not_duckdb_says_so_and_leaves_it_alone(wb: Path, cli, tmp_path: Path,
                                                                         content: bytes):
    path = tmp_path / "README.md"
    path.write_bytes(content)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    for args in (["runs", "list"], ["import", "evidence", str(REPO / "evidence" / "seed-runs.csv")],
                 ["db", "upgrade"]):
        code, _, err = cli(*args, "--db", str(path))
        _refused(code, err, f"--db {path}", "not a DuckDB database file")
        assert "backup" not in err, err
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("README")) == ["README.md"]


@pytest.mark.parametrize("url", ["duckdb://", "duckdb:///:memory:", "duckdb://host/x.duckdb"])
def test_db_naming_an_in_memory_duckdb_is_refused_not_a_traceback(wb: Path, cli, url: str):
    """An in-memory store holds nothing once the command ends; `db upgrade` on one raised an AssertionError
    (each migration step opened a fresh, empty database) and reads advised that upgrade."""
    evidence = str(REPO / "evidence" / "seed-runs.csv")
    for args in (["db", "upgrade"], ["runs", "list"], ["import", "evidence", evidence]):
        code, _, err = cli(*args, "--db", url)
        _refused(code, err, f"--db {url}", "names no file", "duckdb:///PATH")
        assert "wb db upgrade" not in err, err
    assert not (wb / "wb.duckdb").exists()


def test_a_damaged_duckdb_file_still_says_restore_it(wb: Path, cli, tmp_path: Path):
    import duckdb

    path = tmp_path / "store.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (a INTEGER)")
    con.close()
    data = bytearray(path.read_bytes())
    data[4096:] = b"\xff" * (len(data) - 4096)  # the DuckDB header survives, its blocks do not
    path.write_bytes(bytes(data))
    code, _, err = cli("runs", "list", "--db", str(path))
    _refused(code, err, str(path), "not a readable DuckDB database")


# Every numeric flag of the CLI, a value of each it cannot read and one out of its range (a few more where the range
# has two ends): (command, arguments before the flag, flag, value, what is wrong, what the hint says is accepted).
# The error was worded four ways for one kind of mistake ("Invalid value for '--limit': ..." with a usage hint,
# "--limit: must be at least 1, got 0", "--replicates 0 is out of range: give 1 to 10000", "--alpha 2.0: must lie
# in (0, 1)" with no hint at all); now it is one shape: `Error: --flag VALUE: what is wrong` and a Hint with what
# the flag accepts.
HYP = ["wedge-confound"]
NUMBER_CASES = [
    ("runs list", [], "--limit", "ten", "not a whole number", "give a whole number of 1 or more"),
    ("runs list", [], "--limit", "0", "out of range", "give a whole number of 1 or more"),
    ("runs list", [], "--limit", "-1", "out of range", "leave --limit out to list every run"),
    ("hypothesis run", HYP, "--replicates", "abc", "not a whole number", "give a whole number from 1 to 10000"),
    # Its hint ended "leave --replicates out for the design's", the phrase left dangling.
    ("hypothesis run", HYP, "--replicates", "0", "out of range",
     "leave --replicates out for the number the design sets (the hypothesis's, else its experiment's)"),
    ("hypothesis run", HYP, "--replicates", "10001", "out of range", "give a whole number from 1 to 10000"),
    ("hypothesis run", HYP, "--seed", "1.5", "not a whole number", "give a whole number from 0 to 2147483647"),
    ("hypothesis run", HYP, "--seed", "-5", "out of range", "give a whole number from 0 to 2147483647"),
    ("isolate", [], "--budget", "lots", "not a number",
     "give a number above 0 (units for the whole search; inf for no limit)"),
    ("isolate", [], "--budget", "0", "out of range", "give a number above 0"),
    ("isolate", [], "--alpha", "five%", "not a number", "give a number between 0 and 1, both excluded"),
    ("isolate", [], "--alpha", "2", "out of range", "give a number between 0 and 1, both excluded"),
    ("isolate", [], "--alpha", "0", "out of range", "leave --alpha out for 0.05"),
    # Read as 0 (a float underflows), it was said as 0: the value is shown as typed.
    ("isolate", [], "--alpha", "1e-400", "out of range", "leave --alpha out for 0.05"),
    ("isolate", [], "--seed", "x", "not a whole number", "give a whole number from 0 to 2147483647"),
    ("isolate", [], "--seed", "-3", "out of range", "give a whole number from 0 to 2147483647"),
    ("kernel check", [], "--seed", "x", "not a whole number", "give a whole number from 0 to 2147483647"),
    ("kernel check", [], "--seed", "-1", "out of range", "leave --seed out for 0"),
    ("kernel bench", [], "--layers", "x", "not a whole number", "give a whole number of 1 or more"),
    ("kernel bench", [], "--layers", "0", "out of range", "give a whole number of 1 or more (layers per pool)"),
    ("sim up", ["--dir", "{dir}"], "--timeout", "soon", "not a number", "give a number above 0 (seconds; inf"),
    ("sim up", ["--dir", "{dir}"], "--timeout", "0", "out of range", "leave --timeout out to wait up to 60 s"),
    ("sim up", ["--dir", "{dir}"], "--timeout", "nan", "not a number", "give a number above 0"),
    ("sim restart", ["--dir", "{dir}"], "--timeout", "x", "not a number", "give a number above 0"),
    ("sim restart", ["--dir", "{dir}"], "--timeout", "-1", "out of range", "give a number above 0"),
    ("sim repro", ["--dir", "{dir}"], "--sessions", "x", "not a whole number", "give a whole number of 1 or more"),
    ("sim repro", ["--dir", "{dir}"], "--sessions", "0", "out of range", "give a whole number of 1 or more"),
    ("sim repro", ["--dir", "{dir}"], "--rounds", "x", "not a whole number", "give a whole number of 1 or more"),
    ("sim repro", ["--dir", "{dir}"], "--rounds", "-2", "out of range", "give a whole number of 1 or more"),
    ("sim repro", ["--dir", "{dir}"], "--ctx", "x", "not a whole number", "give a whole number of 18 or more"),
    ("sim repro", ["--dir", "{dir}"], "--ctx", "5", "out of range", "give a whole number of 18 or more"),
    ("sim repro", ["--dir", "{dir}"], "--max-tokens", "x", "not a whole number", "give a whole number of 1 or more"),
    ("sim repro", ["--dir", "{dir}"], "--max-tokens", "0", "out of range", "give a whole number of 1 or more"),
    ("sim repro", ["--dir", "{dir}"], "--timeout", "x", "not a number", "give a number above 0"),
    ("sim repro", ["--dir", "{dir}"], "--timeout", "0", "out of range", "give a number above 0"),
    ("sim bench", ["--dir", "{dir}"], "--tokens", "x", "not a whole number", "give a whole number of 1 or more"),
    ("sim bench", ["--dir", "{dir}"], "--tokens", "0", "out of range", "give a whole number of 1 or more"),
    ("sim bench", ["--dir", "{dir}"], "--concurrency", "x", "not a whole number", "give a whole number of 1 or"),
    ("sim bench", ["--dir", "{dir}", "-c", "1"], "-c", "0", "out of range", "leave -c out for 1 and 32"),
]


def test_every_numeric_flag_refuses_a_bad_value_in_one_shape(wb: Path, cli, tmp_path: Path):
    sim_dir = str(tmp_path / "sim")
    for command, before, flag, value, wrong, accepted in NUMBER_CASES:
        args = [*command.split(), *(sim_dir if a == "{dir}" else a for a in before), flag, value]
        code, out, err = cli(*args)
        named = "--concurrency" if flag == "-c" else flag
        case = (" ".join(args), code, out, err)
        assert code == 2 and out == "" and "Traceback" not in err, case
        error, hint = err.splitlines()
        assert error == f"Error: {named} {value}: {wrong}", case
        assert hint.startswith("Hint: give ") and accepted in hint, case
    code, out, err = cli("runs", "list", "--limit", "ten", "--json")
    assert code == 2 and json.loads(out)["error"]["where"] == "--limit", out
    assert not (wb / "wb.duckdb").exists() and not (tmp_path / "sim").exists()


def test_the_table_of_numeric_flags_is_every_numeric_flag_of_the_cli():
    """A numeric flag added to a command without its line in the table would be refused in typer's words."""
    import typer.main

    from workbench.cli import _numbers
    from workbench.cli.main import app

    found: set[tuple[str, str]] = set()
    stack = [([], typer.main.get_command(app))]
    while stack:
        path, command = stack.pop()
        for name, sub in getattr(command, "commands", {}).items():
            stack.append(([*path, name], sub))
        for param in command.params:
            if _numbers.numeric(param) is not None:
                found.add((" ".join(path), max(param.opts, key=len)))
    declared = {(c, f) for c, flags in _numbers.FLAGS.items() for f in flags}
    assert found == declared, (found - declared, declared - found)
    tested = {(c, "--concurrency" if f == "-c" else f) for c, _, f, *_ in NUMBER_CASES}
    assert tested == declared, declared - tested
    # A flag that takes inf (a number with no upper bound) says so: `isolate --budget inf` ran with no limit while
    # its hint said only "a number above 0".
    for command, flags in _numbers.FLAGS.items():
        for flag, what in flags.items():
            what = what() if callable(what) else what
            takes_inf = not what.whole and what.fits(float("inf"))
            assert takes_inf == ("inf" in what.hint()), (command, flag, what.hint())


def test_runs_list_limit_is_the_last_n_runs_and_at_least_one(wb: Path, cli, seed_csv: Path):
    """--limit 0 listed every run and --limit -1 every run but the first (a slice from the end), as if N ran;
    then --limit 0 printed only the header, as if the store held no run. Below 1 is bad input."""
    code, _, err = cli("import", "evidence", str(seed_csv))
    assert code == 0, err
    ids = lambda out: [line.split(",")[0] for line in out.splitlines()[1:]]  # noqa: E731
    code, out, err = cli("runs", "list", "--format", "csv", "--limit", "2")
    assert code == 0 and ids(out) == ["5", "6"], (code, out, err)
    before = hashlib.sha256((wb / "wb.duckdb").read_bytes()).hexdigest()
    for n in ("0", "-1"):
        code, out, err = cli("runs", "list", "--format", "csv", "--limit", n)
        _refused(code, err, f"Error: --limit {n}: out of range\n", "Hint: ")
        assert out == "" and len(err.splitlines()) == 2, (out, err)
    code, out, err = cli("runs", "list", "--json", "--limit", "0")
    assert code == 2 and json.loads(out)["error"]["where"] == "--limit", out
    assert hashlib.sha256((wb / "wb.duckdb").read_bytes()).hexdigest() == before


@pytest.mark.parametrize("args", [["hypothesis", "list", "--root", ""], ["runs", "list", "--root", ""],
                                  ["hypothesis", "validate", "--root", ""], ["--root", "", "confounds"],
                                  ["import", "evidence", "{csv}", "--root", ""]], ids=" ".join)
def test_an_empty_root_is_refused_as_an_empty_db_is(wb: Path, cli, args: list[str], seed_csv: Path):
    """`--root "$UNSET"` fell back to the workbench found from the current folder, so a script whose variable was
    empty read, and wrote to, another workbench than the one it named."""
    code, out, err = cli(*[str(seed_csv) if a == "{csv}" else a for a in args])
    _refused(code, err, "--root is empty")
    assert out == "" and not (wb / "wb.duckdb").exists()


@pytest.mark.parametrize("args", [["import", "evidence", "/dev/zero"], ["hypothesis", "validate", "/dev/zero"]],
                         ids=" ".join)
def test_a_file_without_end_is_refused_once_it_is_too_large(wb: Path, args: list[str]):
    """A file was read whole before its size was checked: /dev/zero (or a mistyped multi-GB log) took memory until
    the process was killed."""
    import resource
    import subprocess
    import sys

    def cap() -> None:  # what the unbounded read would exhaust, held small so it fails fast instead
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    res = subprocess.run([sys.executable, "-m", "workbench.cli.main", *args], cwd=wb, capture_output=True, text=True,
                         timeout=120, preexec_fn=cap)
    _refused(res.returncode, res.stderr, "/dev/zero", "too large")
    assert not (wb / "wb.duckdb").exists()


@pytest.mark.parametrize("value,said", [("4294967296", "is above the largest allowed value 4294967295"),
                                        ("-1", "is below the smallest allowed value 0")])
def test_a_bound_of_a_variable_is_written_whole(wb: Path, cli, value: str, said: str):
    # It was written as 4.29497e+09: a user could not tell the largest value allowed.
    code, _, err = cli("hypothesis", "run", "wedge-confound", "--set", f"seed={value}")
    _refused(code, err, "--set seed", said)
    assert not (wb / "wb.duckdb").exists()


def test_a_numeric_flag_is_checked_whatever_name_the_program_was_started_by(wb: Path):
    """The table was looked up by the command path less its first word: started as `python -m workbench.cli`
    (a name of several words), `runs list` was looked up as `-m workbench.cli runs list`, no flag was checked,
    and `--limit 0` listed nothing as if the store held no run."""
    from typer.testing import CliRunner

    from workbench.cli.main import app

    result = CliRunner().invoke(app, ["runs", "list", "--limit", "0"], prog_name="python -m workbench.cli")
    assert result.exit_code == 2 and result.stderr.startswith("Error: --limit 0: out of range"), result.stderr
