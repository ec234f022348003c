"""A template's syntax error is told where the broken tag starts, and the rest of the template is still checked
for unknown names (Jinja stops at its first error)."""

from __future__ import annotations

from pathlib import Path

from registry_kit import edit as _edit
from registry_kit import line_of as _line
from registry_kit import validate_errors as _errors

EXP = "experiments/agent-repro.yaml"
J2 = "experiments/templates/serve_dsv4_prefill.sh.j2"


def test_an_unclosed_expression_in_a_block_template_hides_no_unknown_name_below_it(workbench_dir: Path, cli):
    # Jinja noticed the unclosed `{{ hicache` on the next line and stopped there: the error named the line after
    # it, and `{{ sed }}` further down was told only once the syntax was fixed.
    exp = _edit(workbench_dir, ("hicache={{ hicache }}", "hicache={{ hicache"), ("seed={{ seed }}", "seed={{ sed }}"),
                file=EXP)
    errors = _errors(cli, workbench_dir)
    assert len(errors) == 2, errors
    assert errors[0].startswith(f"Error: {exp}:{_line(exp, 'hicache={{ hicache')} "), errors
    assert "template syntax error" in errors[0], errors
    assert errors[1].startswith(f"Error: {exp}:{_line(exp, 'seed={{ sed }}')} ") and "unknown name sed" in errors[1]


def test_an_unclosed_expression_in_a_folded_command_is_told_at_its_own_line(workbench_dir: Path, cli):
    # A folded command reads as one line: the syntax error was told at the `command: >-` key, and the name
    # mistyped on the block's next line not at all.
    exp = _edit(workbench_dir, ("--dir {{ sim_dir }} --sessions", "--dir {{ sim_dir --sessions"),
                ("--jsonl {{ units_path }}", "--jsonl {{ units_pth }}"), file=EXP)
    errors = _errors(cli, workbench_dir)
    assert len(errors) == 2, errors
    assert errors[0].startswith(f"Error: {exp}:{_line(exp, '{{ sim_dir --sessions')} "), errors
    assert "(field profiles.sim.workload.command)" in errors[0] and "template syntax error" in errors[0], errors
    assert errors[1].startswith(f"Error: {exp}:{_line(exp, 'units_pth')} ") and "unknown name units_pth" in errors[1]


def test_an_unclosed_expression_in_a_template_file_is_told_where_it_opens(workbench_dir: Path, cli):
    j2 = _edit(workbench_dir, ("INDEX_K_DTYPE={{ index_k_dtype }}", "INDEX_K_DTYPE={{ index_k_dtype"),
               ("{{ prefill_port }}", "{{ prefill_portx }}"), file=J2)
    errors = _errors(cli, workbench_dir)
    assert len(errors) == 2, errors
    assert errors[0].startswith(f"Error: {j2}:{_line(j2, '{{ index_k_dtype')} "), errors
    assert errors[1].startswith(f"Error: {j2}:{_line(j2, 'prefill_portx')} ") and "prefill_portx" in errors[1]


def test_a_block_left_open_is_told_at_its_tag_and_hides_no_unknown_name(workbench_dir: Path, cli):
    # `{% if %}` without its endif was told at the template's last line, and nothing else in the file.
    j2 = _edit(workbench_dir, ("{%- endif %}\n", ""), ("{{ prefill_port }}", "{{ prefill_portx }}"), file=J2)
    errors = _errors(cli, workbench_dir)
    assert len(errors) == 2, errors
    assert errors[0].startswith(f"Error: {j2}:{_line(j2, 'prefill_portx')} ") and "prefill_portx" in errors[0]
    assert errors[1].startswith(f"Error: {j2}:{_line(j2, '{%- if hicache')} ") and "'if'" in errors[1], errors


def test_a_profile_env_value_is_checked_as_the_template_it_is(workbench_dir: Path, cli):
    # `env` values are rendered at the start of a run, but validate never read them: `{{ hicache` passed as ok and
    # `wb hypothesis run` stopped with "template: template error: unexpected end of template", naming no file,
    # line or field; a built-in (not among the values an env value is filled with) passed too.
    exp = _edit(workbench_dir, ("    target: {kind: sim}\n",
                                '    target: {kind: sim}\n    env:\n      SIM_TAG: "{{ hicache"\n'
                                '      SIM_RUN: "r{{ run_id }}"\n      SIM_PORT: "{{ prefill_port }}-{{ seed }}"\n'),
                file=EXP)
    errors = _errors(cli, workbench_dir)
    assert len(errors) == 2, errors
    assert errors[0].startswith(f"Error: {exp}:{_line(exp, 'SIM_TAG')} ") and "template syntax error" in errors[0]
    assert "(field profiles.sim.env.SIM_TAG)" in errors[0], errors
    assert errors[1].startswith(f"Error: {exp}:{_line(exp, 'SIM_RUN')} ") and "unknown name run_id" in errors[1]
    code, _, err = cli("hypothesis", "run", "wedge-confound", "--root", str(workbench_dir), "--replicates", "1",
                       "--db", str(workbench_dir / "wb.duckdb"))
    assert code == 2 and "Traceback" not in err, err
    assert f"Error: {exp}:{_line(exp, 'SIM_TAG')} " in err and "template syntax error" in err, err


def test_a_name_set_and_used_inside_an_if_is_not_unknown(workbench_dir: Path, cli):
    # Jinja's meta counts `tag` undeclared here though the template renders: validate told "unknown name tag" and
    # the experiment did not load. A name used before anything sets it is still told.
    added = '{% if hicache == "on" %}{% set tag = "hc" %}tag={{ tag }}{% endif %}{{ later }}{% set later = 1 %}'
    exp = _edit(workbench_dir, ("seed={{ seed }}", added + "\n        seed={{ seed }}"), file=EXP)
    errors = _errors(cli, workbench_dir)
    assert len(errors) == 1 and errors[0].startswith(f"Error: {exp}:{_line(exp, '{% set tag')} "), errors
    assert "unknown name later" in errors[0], errors


def test_a_name_in_a_folded_command_is_told_at_the_line_whose_tag_uses_it(workbench_dir: Path, cli):
    # The line was found by a pattern that read a string as a use (`{{ "units_pth" ~ "" }}`, a line early) and
    # stopped at a `}}` inside a string (`{{ "a}}" ~ units_pth }}` was not found: told at the `command:` key).
    cases = (('{{ "units_pth" ~ "" }}', "{{ units_pth }}"), ('{{ "}}" ~ 80 }}', '{{ "a}}" ~ units_pth }}'))
    for first, second in cases:
        exp = _edit(workbench_dir, ("--sessions 80 --rounds", f"--sessions {first} --rounds"),
                    ("--jsonl {{ units_path }}", f"--jsonl {second}"), file=EXP)
        errors = _errors(cli, workbench_dir)
        assert len(errors) == 1 and "unknown name units_pth" in errors[0], errors
        assert errors[0].startswith(f"Error: {exp}:{_line(exp, '--jsonl')} "), (first, second, errors)
        _edit(workbench_dir, (f"--sessions {first} --rounds", "--sessions 80 --rounds"),
              (f"--jsonl {second}", "--jsonl {{ units_path }}"), file=EXP)


def test_a_template_file_that_is_not_utf8_text_is_one_error(workbench_dir: Path, cli):
    # Only an OSError was caught: a .j2 file saved in another encoding gave a UnicodeDecodeError traceback.
    (workbench_dir / J2).write_bytes(b"\xff\xfeINDEX={{ index_k_dtype }}\n")
    exp = workbench_dir / EXP
    errors = _errors(cli, workbench_dir)
    assert len(errors) == 1 and errors[0].startswith(f"Error: {exp}:{_line(exp, 'template_file:')} "), errors
    assert "cannot be read: not UTF-8 text" in errors[0], errors


def test_a_name_in_a_double_quoted_value_with_escaped_newlines_is_told_at_its_own_line(workbench_dir: Path, cli):
    # A `\n` escape makes the value's text several lines though the source holds it on one: it was located as a
    # block value is (its key's line + 1 + the template's line), two lines below the key, in the next entry.
    cases = ('"{{ wb }} --version\\necho {{ sim_dr }}"',  # on one line: the key's
             '"{{ wb }} --version\\n\n        echo {{ sim_dr }}"')  # over two: the line using it
    for value in cases:
        exp = _edit(workbench_dir, ('wb_version: "{{ wb }} --version"', f"wb_version: {value}"), file=EXP)
        errors = _errors(cli, workbench_dir)
        assert len(errors) == 1 and "unknown name sim_dr" in errors[0], errors
        assert errors[0].startswith(f"Error: {exp}:{_line(exp, 'sim_dr')} "), (value, errors)
        _edit(workbench_dir, (f"wb_version: {value}", 'wb_version: "{{ wb }} --version"'), file=EXP)
