"""A `secret: true` variable's value, as hypotheses.yaml and the experiment file write it (a default, a held value,
an arm's value), is never shown by a command that runs nothing: `hypothesis show` and `list`, their JSON, the
report site and its Markdown, and a bundle put `<redacted>` in its place."""

from __future__ import annotations

import gzip
import html
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

WB = [sys.executable, "-m", "workbench.cli.main"]

DEFAULT = "DefaultPw9876"  # the experiment's default of a secret variable
HELD = "Held&Key\"55'<55>"  # a hypothesis holds a secret variable at this value; HTML, JSON and shells escape it
ARMS = ("ArmKeyAAAA1", "ArmKeyBBBB2")  # a hypothesis isolates a secret variable: its arms' values
SECRETS = (DEFAULT, HELD, *ARMS)

EXPERIMENT = """\
format: 1
id: keyed
version: 1
variables:
  fix: {values: [on, off], default: off}
  db_password: {secret: true, default: DEFAULT}
  api_key: {secret: true}
unit: {name: session, outcome_field: outcome, outcomes: [done, leak], completed: [done, leak]}
metrics:
  sessions: {kind: count, units: {}}
  leak: {kind: count, units: {outcome: leak}}
  leak_rate: {kind: proportion, numerator: leak, denominator: sessions}
default_profile: local
profiles:
  local:
    target: {kind: local}
    config:
      path: "{{ run_dir }}/serve.conf"
      template: |
        fix={{ fix }}
        password={{ db_password }}
        key={{ api_key }}
    workload: {command: "true"}
    units: {path: "{{ units_path }}"}
""".replace("DEFAULT", DEFAULT)

HYPOTHESES = f"""\
format: 1
hypotheses:
  - id: fix-held
    claim: The fix removes the leaks.
    experiment: keyed
    isolates: fix
    arms:
      control: {{fix: off}}
      treatment: {{fix: on}}
    hold: {{api_key: {json.dumps(HELD)}}}
    predicts:
      - {{metric: leak_rate, arm: treatment, at_most: 0.02}}
  - id: key-isolated
    claim: The key decides the leaks.
    experiment: keyed
    isolates: api_key
    arms:
      control: {{api_key: {ARMS[0]}}}
      treatment: {{api_key: {ARMS[1]}}}
    predicts:
      - {{metric: leak_rate, arm: treatment, at_most: 0.02}}
"""
IDS = ("fix-held", "key-isolated")


def wb(root: Path, *args: str) -> str:
    """`wb ARGS` in a process of its own (nothing registered before it starts); its stdout and stderr."""
    env = {k: v for k, v in os.environ.items() if k not in ("WB_ROOT", "WB_DB")}
    done = subprocess.run([*WB, *args, "--root", str(root)], capture_output=True, text=True, env=env, cwd=root,
                          timeout=300)
    assert done.returncode == 0, (args, done.stdout[-3000:], done.stderr[-3000:])
    return done.stdout + done.stderr


def assert_hidden(text: str, where: str) -> None:
    """No secret in `text`, as written nor as JSON or HTML escape it."""
    escaped = [html.escape(s, False) for s in SECRETS]  # as jinja writes it (&#34;, &#39;) and as html.escape does
    forms = {form: s for s, e in zip(SECRETS, escaped)
             for form in (s, json.dumps(s)[1:-1], html.escape(s), e.replace('"', "&#34;").replace("'", "&#39;"))}
    shown = sorted({s for form, s in forms.items() if form in text})
    assert not shown, f"{where} shows {shown}"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "bench"
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "keyed.yaml").write_text(EXPERIMENT)
    (root / "hypotheses.yaml").write_text(HYPOTHESES)
    return root


def test_hypothesis_show_and_list_put_the_mask_in_place_of_a_secret_value(root: Path):
    held = wb(root, "hypothesis", "show", "fix-held")
    assert_hidden(held, "hypothesis show fix-held")
    assert "  arm control: fix=off, db_password=<redacted>, api_key=<redacted>" in held, held
    isolated = wb(root, "hypothesis", "show", "key-isolated")
    assert_hidden(isolated, "hypothesis show key-isolated")
    assert "  arm treatment: fix=off, db_password=<redacted>, api_key=<redacted>" in isolated, isolated
    for hid in IDS:
        shown = wb(root, "hypothesis", "show", hid, "--json")
        assert_hidden(shown, f"hypothesis show {hid} --json")
        assert '"api_key": "<redacted>"' in shown
    assert_hidden(wb(root, "hypothesis", "list", "--json"), "hypothesis list --json")


def test_the_report_site_and_its_markdown_show_no_secret_value(root: Path, tmp_path: Path):
    wb(root, "db", "upgrade")
    site = tmp_path / "site"
    wb(root, "report", "--out", str(site))
    pages = [p for p in site.rglob("*") if p.is_file()]
    assert any(p.name == "key-isolated.html" for p in pages)
    for page in pages:
        assert_hidden(page.read_text(encoding="utf-8", errors="replace"), str(page.relative_to(site)))
    assert "&lt;redacted&gt;" in (site / "hypotheses" / "fix-held.html").read_text(encoding="utf-8")
    for hid in IDS:
        assert_hidden(wb(root, "report", "--format", "md", "--hypothesis", hid), f"report --format md {hid}")


def test_a_bundle_keeps_no_secret_value_and_imports_back_without_a_conflict(root: Path, tmp_path: Path):
    wb(root, "db", "upgrade")
    bundle = tmp_path / "keys.wbundle"
    out = wb(root, "bundle", "export", *IDS, "-o", str(bundle))
    assert_hidden(out, "bundle export")
    assert_hidden(gzip.decompress(bundle.read_bytes()).decode("utf-8"), "the bundle file")
    # The same hypotheses, read back: the redacted values mean the same test as the file's own (into the store
    # it came from, which holds every row already).
    assert "nothing new in" in wb(root, "bundle", "import", str(bundle))


@pytest.mark.parametrize("spec", [
    "{secret: true, values: [AllowedPw1111, AllowedPw2222], default: DefaultPw9876}",   # not one of the values
    "{secret: true, type: int, default: DefaultPw9876}",                                 # not an integer
    "{secret: true, type: int, max: 10, default: '98769876'}",                           # above its max
])
def test_an_invalid_secret_default_is_reported_without_its_value(root: Path, spec: str):
    """The spec of a secret variable is checked before its values can be registered for redaction: the
    error named the value (and the allowed values, as secret as it) in the clear."""
    exp = root / "experiments" / "keyed.yaml"
    exp.write_text(EXPERIMENT.replace(f"{{secret: true, default: {DEFAULT}}}", spec, 1))
    env = {k: v for k, v in os.environ.items() if k not in ("WB_ROOT", "WB_DB")}
    done = subprocess.run([*WB, "hypothesis", "list", "--root", str(root)], capture_output=True, text=True, env=env,
                          cwd=root, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("Error:") and "Traceback" not in done.stderr, done.stderr
    assert "keyed.yaml:6" in done.stderr and "db_password" in done.stderr and "<redacted>" in done.stderr, done.stderr
    for value in ("DefaultPw9876", "AllowedPw1111", "AllowedPw2222", "98769876"):
        assert value not in done.stderr, done.stderr


def test_an_invalid_set_value_of_a_secret_variable_is_reported_without_it(root: Path):
    env = {k: v for k, v in os.environ.items() if k not in ("WB_ROOT", "WB_DB")}
    exp = root / "experiments" / "keyed.yaml"
    exp.write_text(EXPERIMENT.replace(f"{{secret: true, default: {DEFAULT}}}",
                                      f"{{secret: true, type: int, default: '1234'}}", 1))
    done = subprocess.run([*WB, "hypothesis", "run", "fix-held", "--set", "db_password=SetPw5555", "--root",
                           str(root), "--db", str(root / "wb.duckdb")], capture_output=True, text=True, env=env,
                          cwd=root, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("Error:") and "--set" in done.stderr and "db_password" in done.stderr, done.stderr
    assert "SetPw5555" not in done.stderr, done.stderr
