"""Bash's `${#arr[@]}` (a length) holds `{#`, which Jinja reads as the start of a comment: refused where it is
written, with the way to write it, in every kind of template (a folded command, a `|` block, a template file)."""

from __future__ import annotations

from pathlib import Path

from registry_kit import edit as _edit
from registry_kit import line_of as _line
from registry_kit import validate_errors as _errors

from workbench.registry.template_scan import scan
from workbench.runner.render import render_command, render_text

EXP = "experiments/agent-repro.yaml"
J2 = "experiments/templates/serve_dsv4_prefill.sh.j2"
RAW = "{% raw %}${#arr[@]}{% endraw %}"


def _told_as_bash(error: str, written: str) -> bool:
    return "bash's" in error and "Jinja comment" in error and "{% raw %}" + written + "{% endraw %}" in error \
        and "Missing end of comment" not in error


def test_a_bash_length_in_a_folded_command_is_told_as_bash_and_hides_no_name_below_it(workbench_dir: Path, cli):
    # With no `#}` after it, validate told "template syntax error: Missing end of comment tag" (no word of bash)
    # and nothing of the rest of the command: the mistyped name on the next line was not told.
    exp = _edit(workbench_dir, ("--sessions 80 --rounds", "--sessions ${#arr[@]} --rounds"),
                ("--jsonl {{ units_path }}", "--jsonl {{ units_pth }}"), file=EXP)
    errors = _errors(cli, workbench_dir)
    assert len(errors) == 2, errors
    assert errors[0].startswith(f"Error: {exp}:{_line(exp, '${#arr')} "), errors
    assert "(field profiles.sim.workload.command)" in errors[0] and _told_as_bash(errors[0], "${#arr[@]}"), errors
    assert errors[1].startswith(f"Error: {exp}:{_line(exp, 'units_pth')} ") and "unknown name units_pth" in errors[1]


def test_a_bash_length_in_a_template_file_is_refused_though_a_later_comment_end_hides_it(workbench_dir: Path, cli):
    # A `#}` further down closed the "comment": Jinja dropped every line between, validate said ok and the script
    # was uploaded without them.
    j2 = _edit(workbench_dir, ("set -euo pipefail\n", "set -euo pipefail\nargs=(a b)\necho ${#args[@]}\n"),
               ("  --trust-remote-code", "  --trust-remote-code  # done #}"), file=J2)
    errors = _errors(cli, workbench_dir)
    assert len(errors) == 1 and errors[0].startswith(f"Error: {j2}:{_line(j2, '${#args')} "), errors
    assert _told_as_bash(errors[0], "${#args[@]}"), errors
    code, _, err = cli("hypothesis", "show", "wedge-confound", "--root", str(workbench_dir))  # the loader too
    assert code == 2 and "Traceback" not in err and f"Error: {j2}:{_line(j2, '${#args')} " in err, err


def test_a_bash_length_in_a_block_template_is_told_at_its_line(workbench_dir: Path, cli):
    exp = _edit(workbench_dir, ("seed={{ seed }}\n", "seed={{ seed }}\n        n=${#seed}\n        {# a note #}\n"),
                file=EXP)
    errors = _errors(cli, workbench_dir)
    assert len(errors) == 1 and errors[0].startswith(f"Error: {exp}:{_line(exp, 'n=${#seed}')} "), errors
    assert "(field profiles.sim.config.template)" in errors[0] and _told_as_bash(errors[0], "${#seed}"), errors


def test_a_jinja_comment_and_a_bash_length_written_raw_still_pass(workbench_dir: Path, cli):
    _edit(workbench_dir, ("--sessions 80 --rounds", "--sessions 80 {# eighty #} --rounds"),
          ("seed={{ seed }}\n", "seed={{ seed }}\n        {# a note #} n=" + RAW + "\n"), file=EXP)
    _edit(workbench_dir, ("set -euo pipefail\n", "set -euo pipefail\n{# a note #}\necho " + RAW + "\n"), file=J2)
    code, out, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 0 and "Error" not in err, (out, err)
    # What the error tells to write renders as bash's length, in a command (values quoted) and in a config alike.
    assert render_command("echo " + RAW + " {{ x }}", {"x": "a b"}) == "echo ${#arr[@]} 'a b'"
    assert render_text("n=" + RAW, {}) == "n=${#arr[@]}"


def test_a_dollar_brace_hash_inside_a_string_or_a_raw_block_is_no_comment() -> None:
    for text in ('{{ "${#x}" ~ y }}', "{% raw %}${#x}{% endraw %}{{ y }}", "{# ${#x} #}{{ y }}", "$ {# c #}{{ y }}"):
        got = scan(text)
        assert got.error is None and got.names == {"y": 1}, (text, got)
    got = scan("a\nb ${#x} {{ y }}\n{{ z }} #}\n")
    assert got.error_line == 2 and got.names == {"y": 2, "z": 3}, got
