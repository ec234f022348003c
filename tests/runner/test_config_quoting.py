"""Rendered config values are quoted for the file's syntax: a value can never add a line or a command."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from runner_kit import edit_profile

from workbench.errors import BadInput
from runner_kit import run_hypothesis  # noqa: E402  (tests/runner is on sys.path)
from workbench.runner.quoting import render_config
from workbench.runner.render import render_command, render_text

EVIL = "x; touch PWNED #"


def test_bash_value_is_one_word_and_runs_nothing(tmp_path):
    text = render_config("#!/bin/bash\nNOTE={{ note }}\necho \"$NOTE\"\n", {"note": EVIL + " $(touch PWNED2)"}, "bash")
    script = tmp_path / "s.sh"
    script.write_text(text)
    out = subprocess.run(["bash", str(script)], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == EVIL + " $(touch PWNED2)"
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "PWNED2").exists()


@pytest.mark.parametrize("fmt", ["bash", "env", "ini"])
def test_a_newline_is_refused_in_line_based_formats(fmt):
    with pytest.raises(BadInput, match="control character"):
        render_config("a={{ v }}\n", {"v": "ok\nrm -rf /"}, fmt)


def test_yaml_and_json_escape_instead_of_adding_keys():
    v = "x\nadmin: true\n\"}"
    y = yaml.safe_load(render_config("note: {{ v }}\nport: {{ p }}\n", {"v": v, "p": 8080}, "yaml"))
    assert y == {"note": v, "port": 8080}
    j = json.loads(render_config('{"note": {{ v }}, "n": {{ n }}}', {"v": v, "n": 3}, "json"))
    assert j == {"note": v, "n": 3}


def test_ini_refuses_what_would_start_a_section_or_comment():
    with pytest.raises(BadInput):
        render_config("[s]\nk = {{ v }}\n", {"v": "a]\n[admin"}, "ini")
    with pytest.raises(BadInput):
        render_config("[s]\nk = {{ v }}\n", {"v": "a ; b"}, "ini")


def _with_note(toy):
    edit_profile(toy.root, "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n",
                 "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n  note: {default: hello}\n")
    edit_profile(toy.root, "        mode={{ mode }}\n", "        mode={{ mode }}\n        note={{ note }}\n")
    edit_profile(toy.root, '      check: "bash -n {{ file }}"\n',
                 '      check: "bash -n {{ file }}"\n      format: bash\n')


def test_free_text_with_a_newline_is_refused_before_the_target(toy):
    _with_note(toy)
    with pytest.raises(BadInput, match="control character"):
        run_hypothesis("toy-fix", db=toy.db, sets={"note": "a\ntouch PWNED"}, show_progress=False,
                       build_report=False)
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == []


def test_shell_metacharacters_land_quoted_in_a_bash_config(toy):
    _with_note(toy)
    run_hypothesis("toy-fix", db=toy.db, sets={"note": EVIL}, replicates=1, show_progress=False,
                   build_report=False)
    from sqlalchemy import text

    from workbench.store import open_store

    store = open_store(toy.db, read_only=True)
    try:
        with store.connect() as conn:
            rendered = conn.execute(text("SELECT rendered_config FROM runs LIMIT 1")).scalar()
    finally:
        store.dispose()
    assert f"note='{EVIL}'" in rendered
    subprocess.run(["bash", "-c", rendered], cwd=toy.state, check=True)
    assert not (toy.state / "PWNED").exists()


@pytest.mark.parametrize("render", [lambda t: render_text(t, {}, where="config.path"),
                                    lambda t: render_command(t, {}, where="config.path"),
                                    lambda t: render_config(t, {}, "bash", where="config.path")])
def test_a_template_syntax_error_is_told_at_the_line_validate_tells(render):
    # The renderers told Jinja's message alone ("template error: TemplateSyntaxError: expected token 'end of print
    # statement', got 'b'"): no line, where validate tells the line the unclosed `{{ x` starts on (2; Jinja's is 3).
    with pytest.raises(BadInput) as caught:
        render("a\n{{ x\nb\n{{ y }}\n")
    assert str(caught.value) == "config.path: line 2 of the template: template syntax error: " \
                                "expected token 'end of print statement', got 'b'", str(caught.value)
