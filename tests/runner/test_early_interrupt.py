"""A Ctrl-C in the first moments of `wb hypothesis run` (its modules imported, its flags parsed, the registry read)
says what the README documents: nothing was run or recorded, the target was not touched; with --json the interrupted
envelope. It printed a bare "Interrupted." (or a traceback, or nothing) there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

NOT_STARTED = ("Error: interrupted before the first run: nothing was run or recorded, and the target was not "
               "touched\n")


def _interrupt() -> None:
    raise KeyboardInterrupt  # what Python raises for a SIGINT in the main thread


def _untouched(toy) -> None:
    assert not Path(toy.db).exists()
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == []


def test_ctrl_c_while_the_registry_is_read_says_nothing_was_run(toy, cli, monkeypatch) -> None:
    import workbench.registry
    import workbench.registry.validate

    # `hypothesis run` reads the registry with its broken entries set apart (validate.load_apart), other commands
    # through workbench.registry: a stop in either read.
    for module in (workbench.registry, workbench.registry.validate):
        monkeypatch.setattr(module, "load_registry", lambda *a, **k: _interrupt())
    code, out, err = cli("hypothesis", "run", "toy-fix", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert (code, out, err) == (130, "", NOT_STARTED)
    code, out, err = cli("hypothesis", "run", "toy-fix", "--json", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 130 and err == NOT_STARTED
    doc = json.loads(out)
    assert doc["ok"] is False and doc["command"] == "hypothesis run"
    assert doc["status"] == "interrupted" and doc["resume"] is None
    assert doc["error"]["kind"] == "RunInterrupted" and doc["error"]["exit_code"] == 130
    assert doc["error"]["message"].startswith("interrupted before the first run: nothing was run or recorded")
    _untouched(toy)


def test_ctrl_c_while_the_flags_are_parsed_says_nothing_was_run(toy, cli, monkeypatch) -> None:
    from workbench.cli._common import WbGroup

    monkeypatch.setattr(WbGroup, "parse_args", lambda self, ctx, args: _interrupt())
    code, out, err = cli("hypothesis", "run", "toy-fix", "--json", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 130 and err == NOT_STARTED
    doc = json.loads(out)
    assert doc["status"] == "interrupted" and doc["resume"] is None and doc["ok"] is False
    _untouched(toy)


RESUME_NOT_STARTED = ("Error: interrupted before the resume started: nothing was run or recorded, and any "
                      "interrupted execution is as it was, its recorded runs kept\n")


def test_ctrl_c_before_a_resume_parsed_its_flags_says_how_to_continue(toy, cli, monkeypatch) -> None:
    """The hint is the resume command wb's own stop gives (`resume_command_at`): no --json, the store's absolute
    path for a relative --db, the flags given before the command as its own."""
    from workbench.cli._common import WbGroup

    monkeypatch.setattr(WbGroup, "parse_args", lambda self, ctx, args: _interrupt())
    monkeypatch.chdir(toy.root)
    code, _, err = cli("hypothesis", "run", "toy-fix", "--resume", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert (code, err) == (130, RESUME_NOT_STARTED + f"Hint: continue with: wb hypothesis run toy-fix --resume "
                                                     f"--db {toy.db} --root {toy.root.resolve()}\n")
    code, out, err = cli("--db", "rel.duckdb", "hypothesis", "run", "--seed", "7", "toy-fix", "--json", "--resume",
                         env={"WB_ROOT": str(toy.root)})
    resume = f"wb hypothesis run toy-fix --resume --db {toy.root.resolve() / 'rel.duckdb'} --root {toy.root.resolve()}"
    assert (code, err) == (130, RESUME_NOT_STARTED + f"Hint: continue with: {resume}\n")
    assert json.loads(out)["resume"] == resume


def test_ctrl_c_before_a_resume_never_shows_the_stores_password(toy, cli, monkeypatch) -> None:
    """A --db whose URL carries a password is given with the mask in the password's place, and the hint says to
    put the store's password there; the password itself is never shown (it printed the command line as typed, the
    password in clear, and --json in it). This pinned the --db left out of the command on purpose: pasted as it
    was, that command read the default store, and nothing said so; pasted unchanged, this one is refused by the
    store's server, not run against another store."""
    from workbench.cli._common import WbGroup

    monkeypatch.setattr(WbGroup, "parse_args", lambda self, ctx, args: _interrupt())
    monkeypatch.chdir(toy.root)
    code, out, err = cli("hypothesis", "run", "toy-fix", "--resume", "--json", "--db",
                         "postgresql://alice:s3cret@db.invalid/wb", env={"WB_ROOT": str(toy.root)})
    resume = (f"wb hypothesis run toy-fix --resume --db 'postgresql+psycopg://alice:<redacted>@db.invalid/wb' "
              f"--root {toy.root.resolve()}")
    assert (code, err) == (130, RESUME_NOT_STARTED + "Hint: continue with, the store's password put in place of "
                                                     f"<redacted> in --db: {resume}\n")
    doc = json.loads(out)
    assert doc["resume"] == resume and "s3cret" not in out, doc


def test_another_command_interrupted_early_is_still_plainly_interrupted(toy, cli, monkeypatch) -> None:
    from workbench.cli._common import WbGroup

    monkeypatch.setattr(WbGroup, "parse_args", lambda self, ctx, args: _interrupt())
    code, out, err = cli("runs", "list", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert (code, err) == (130, "Interrupted.\n")


def _importing(then: str, *, fail: bool = False) -> str:
    """A script whose first import of `workbench.cli.run_cmd` (by `workbench.cli.main`) gets a SIGINT, or fails."""
    act = "raise ImportError('no run_cmd')" if fail else "os.kill(os.getpid(), signal.SIGINT)"
    return ("import os, signal, sys\n"
            "class Finder:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'workbench.cli.run_cmd':\n"
            "            sys.meta_path.remove(self)\n"
            f"            {act}\n"
            "        return None\n"
            "sys.meta_path.insert(0, Finder())\n" + then)


def test_ctrl_c_while_wb_is_imported_says_nothing_was_run(toy) -> None:
    """A real process: the SIGINT arrives while the `wb` console script imports the commands (it raised inside the
    import, a traceback before any boundary ran)."""
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["wb"] == "workbench.cli.console:main"
    script = _importing(f"sys.argv = ['wb', 'hypothesis', 'run', 'toy-fix', '--json', '--db', {toy.db!r}]\n"
                        "from workbench.cli.console import main\n"
                        "main()\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "WB_ROOT": str(toy.root)}, cwd=toy.root)
    assert (proc.returncode, proc.stderr) == (130, NOT_STARTED), proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["status"] == "interrupted" and doc["resume"] is None and doc["ok"] is False
    _untouched(toy)


def test_a_program_importing_the_cli_keeps_its_ctrl_c() -> None:
    """Only the `wb` console script holds a Ctrl-C while the commands are imported: a program importing the CLI (a
    test with typer's CliRunner, a script) gets its KeyboardInterrupt there, not at its next, unrelated, call."""
    script = _importing("try:\n"
                        "    from workbench.cli.main import app\n"
                        "    print('imported')\n"
                        "except KeyboardInterrupt:\n"
                        "    print('interrupted', signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
                        "    from workbench.cli.main import app\n"
                        "from typer.testing import CliRunner\n"
                        "print(CliRunner().invoke(app, ['--version']).exit_code)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "interrupted True\n0\n"), proc.stderr[-2000:]


@pytest.mark.parametrize("then", ["from workbench.cli.main import main\n",
                                  "from workbench.cli.console import main\nmain()\n"])
def test_a_failed_import_leaves_ctrl_c_as_it_was(then) -> None:
    """An import of the commands that fails leaves Python's own Ctrl-C handler in place, not the one holding it."""
    script = _importing(f"try:\n    {then.replace(chr(10), chr(10) + '    ').rstrip()}\nexcept ImportError:\n"
                        "    print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n", fail=True)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "True\n"), proc.stderr[-2000:]


def test_a_ctrl_c_after_the_runs_does_not_claim_nothing_ran(toy, cli, monkeypatch) -> None:
    """The first moments end when the execution opens: a Ctrl-C while the site is rebuilt after the runs is no stop
    "before the first run"."""
    from workbench.app import Workbench

    monkeypatch.setattr(Workbench, "_site", lambda self, store: _interrupt())
    code, _, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--report", "--db", toy.db,
                       env={"WB_ROOT": str(toy.root)})
    assert code == 130 and "before the first run" not in err, err
    assert err.endswith("Interrupted.\n"), err


@pytest.mark.parametrize("argv, runs", [
    (["hypothesis", "run", "h"], True), (["--root", "hypothesis", "--db", "x", "hypothesis", "run", "h"], True),
    (["--root=r", "hypothesis", "run"], True), (["hypothesis", "show", "run"], False), (["runs", "list"], False),
    (["--", "hypothesis", "run"], False)])
def test_which_command_lines_run_an_execution(argv, runs) -> None:
    from workbench.cli._startup import runs_an_execution

    assert runs_an_execution(argv) is runs
