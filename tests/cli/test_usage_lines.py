"""Every command's usage line in the form users read elsewhere: `RUN_ID...`, `[FILE]...`, `ID`, never typer's
braces (`{RUN_ID}...`) or a metavar's dots doubled (`{HYPOTHESIS...}...`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from terminal_kit import in_a_terminal

WB = str(Path(sys.executable).with_name("wb"))

# The usage line of each command that takes arguments, as the plain help (off a terminal) prints it.
EXPECTED = {
    "runs delete": "wb runs delete [OPTIONS] RUN_ID...",
    "runs show": "wb runs show [OPTIONS] RUN_ID",
    "bundle export": "wb bundle export [OPTIONS] HYPOTHESIS...",
    "bundle import": "wb bundle import [OPTIONS] FILE",
    "hypothesis validate": "wb hypothesis validate [OPTIONS] [FILE]...",
    "hypothesis show": "wb hypothesis show [OPTIONS] ID",
    "hypothesis analyze": "wb hypothesis analyze [OPTIONS] ID",
    "hypothesis run": "wb hypothesis run [OPTIONS] ID",
    "import evidence": "wb import evidence [OPTIONS] FILE.csv",
    "review": "wb review [OPTIONS] [HYPOTHESIS | list [HYPOTHESIS]]",
}


def _commands() -> list[tuple[str, object]]:
    """Every command and group of the real app, by the words typed after `wb`."""
    import typer

    from workbench.cli.main import app

    root = typer.main.get_command(app)
    found, todo = [], [("", root)]
    while todo:
        path, cmd = todo.pop()
        found.append((path, cmd))
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            todo.append(((path + " " + name).strip(), sub))
    return found


def _usage(cli, words: str) -> str:
    code, out, err = cli(*words.split(), "--help")
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if x.startswith("Usage: ")]
    return line[len("Usage: "):].replace("main ", "wb ", 1).replace("root ", "wb ", 1)


def _cli():
    from typer.testing import CliRunner

    from workbench.cli.main import app

    runner = CliRunner()

    def invoke(*args: str):
        res = runner.invoke(app, list(args), prog_name="wb", catch_exceptions=False)
        return res.exit_code, res.stdout, res.stderr

    return invoke


def test_every_usage_line_is_free_of_typer_braces_and_doubled_dots():
    cli = _cli()
    seen = {}
    for words, cmd in _commands():
        line = _usage(cli, words)
        seen[words] = line
        assert not re.search(r"[{}]|\.\.\.\.|\.\.\.[\]}]\.\.\.|\[\[", line), (words, line)
        for param in getattr(cmd, "params", []):
            # A variadic argument ends in dots, unless its metavar spells out its own grammar (`wb review`).
            if param.param_type_name == "argument" and param.nargs != 1 and " " not in (param.metavar or ""):
                assert line.endswith("..."), (words, line)
    for words, line in EXPECTED.items():
        assert seen[words] == line, (words, seen[words])


def test_the_console_script_prints_the_usage_line_users_expect():
    res = subprocess.run([WB, "runs", "delete", "--help"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("Usage: wb runs delete [OPTIONS] RUN_ID...\n"), res.stdout[:200]
    missing = subprocess.run([WB, "runs", "delete"], capture_output=True, text=True, timeout=120)
    # A mistake the parser finds is one Error: line, as wb's own are, with the usage in the hint after it (it was
    # click's usage block, a "Try ..." line and a blank line, then the error).
    assert missing.returncode == 2 and missing.stderr.splitlines() == [
        "Error: Missing argument 'RUN_ID'.",
        "Hint: usage: wb runs delete [OPTIONS] RUN_ID...  (wb runs delete --help lists the options)"], missing.stderr
    typo = subprocess.run([WB, "hypothesis", "run", "x", "--replicate", "1"], capture_output=True, text=True,
                          timeout=120)
    assert typo.returncode == 2 and typo.stdout == "", typo
    # Only options of a close name are offered (click also offered --report: "--rep" alike, dashes counted).
    assert typo.stderr.splitlines()[0] == "Error: No such option: --replicate (Possible options: --replicates)"
    assert len(typo.stderr.splitlines()) == 2 and "Traceback" not in typo.stderr


@pytest.mark.parametrize("words,usage", [("runs delete", "wb runs delete [OPTIONS] RUN_ID..."),
                                         ("hypothesis validate", "wb hypothesis validate [OPTIONS] [FILE]...")])
def test_a_terminal_gets_the_same_usage_in_rich_help(words: str, usage: str):
    """At a terminal the help is rich's rendering, a path of its own through typer."""
    raw = in_a_terminal([*words.split(), "--help"],
                        {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"})
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw.decode())
    assert f"Usage: {usage}" in text, text[:400]


def test_every_option_shows_what_its_value_is_not_a_python_type():
    """typer wrote an option's value as its Python type: `--db <str>`, `--set <list[str]>`, `--seed <int>`."""
    cli = _cli()
    shown: dict[str, str] = {}
    for words, cmd in _commands():
        code, out, err = cli(*words.split(), "--help")
        assert code == 0, err
        assert not re.search(r"<(str|int|float|path|bool|list\[)", out), (words, out)
        for param in getattr(cmd, "params", []):
            if param.param_type_name != "option" or getattr(param, "is_flag", False) or param.hidden:
                continue
            assert re.fullmatch(r"[A-Z][A-Z_]*(=[A-Z]+)?", param.metavar or ""), (words, param.opts, param.metavar)
            shown[param.opts[-1]] = param.metavar
    assert {k: shown[k] for k in ("--db", "--root", "--set", "--seed", "--limit")} == {
        "--db": "STORE", "--root": "DIR", "--set": "VAR=VALUE", "--seed": "N", "--limit": "N"}


# A help text may open with a literal value the option takes ("var=value of ...", "table, json, ..."); any
# other opens with a capital, as every command's and group's description does.
_LITERAL_START = re.compile(r"(var=value|table, json|decode or|auto \(|html \()")


def test_every_option_has_a_help_text_that_opens_like_the_others():
    for words, cmd in _commands():
        for param in getattr(cmd, "params", []):
            if param.param_type_name != "option" or param.hidden:
                continue
            text = (param.help or "").strip()
            assert text, (words, param.opts)
            assert text[0].isupper() or _LITERAL_START.match(text), (words, param.opts, text)


def test_the_value_names_say_what_each_option_takes():
    wanted = {
        "isolate": {"--pair": "FILE"},
        "sim repro": {"--sessions": "N", "--rounds": "N", "--ctx": "TOKENS", "--max-tokens": "N",
                      "--jsonl": "FILE", "--timeout": "SECONDS", "--tag": "TEXT"},
        "sim bench": {"--concurrency": "N"},
        "sim journal": {"--since": "TIME"},
    }
    commands = dict(_commands())
    for words, options in wanted.items():
        shown = {p.opts[0]: p.metavar for p in commands[words].params if p.param_type_name == "option"}
        assert {o: shown[o] for o in options} == options, words
    from workbench.cli._common import JsonOption

    shared = JsonOption.__metadata__[0].help
    for words, cmd in commands.items():
        if words.startswith("sim "):
            (json_,) = [p for p in cmd.params if "--json" in p.opts]
            assert json_.help == shared, (words, json_.help)


def test_an_option_given_without_its_value_gets_the_usage_hint_as_every_usage_error_does():
    """`--as` at the end of the line was click's one line ("requires an argument") with no Hint, where every
    other mistake the parser finds has one: each command's options that take a value, given none."""
    import json

    cli = _cli()
    tried = 0
    for words, cmd in _commands():
        for param in getattr(cmd, "params", []):
            opts = [o for o in getattr(param, "opts", []) if o.startswith("--")]
            if param.param_type_name != "option" or param.is_flag or param.count or not opts:
                continue
            code, out, err = cli(*words.split(), opts[0])
            lines = err.splitlines()
            assert code == 2 and out == "" and len(lines) == 2, (words, opts[0], err)
            assert lines[0] == f"Error: Option '{opts[0]}' requires an argument.", (words, err)
            assert lines[1] == f"Hint: usage: {_usage(cli, words)}  ({('wb ' + words).strip()} --help lists the " \
                               "options)", (words, err)
            tried += 1
    assert tried > 40
    code, out, err = cli("review", "wedge-confound", "--approve", "-m", "x", "--json", "--as")
    e = json.loads(out)["error"]
    assert code == 2 and e["where"] == "--as" and e["hint"].startswith("usage: wb review "), e


def test_the_root_help_lists_the_commands_in_the_order_of_the_work(cli):
    # `schema` came first (it was registered first), so the list read as random.
    code, out, _ = cli("--help")
    assert code == 0, out
    listed = [ln.split()[0] for ln in out.split("Commands:", 1)[1].splitlines() if ln.startswith("  ") and ln.split()]
    assert listed[:3] == ["hypothesis", "runs", "report"] and listed[-1] == "schema", listed
    assert sorted(listed) == sorted(["hypothesis", "runs", "report", "confounds", "isolate", "review", "lineage",
                                     "bundle", "import", "sim", "kernel", "db", "schema"]), listed
