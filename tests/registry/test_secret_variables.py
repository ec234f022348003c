"""A `secret: true` variable's value, as hypotheses.yaml and the experiment file write it (a default, a held value,
an arm's value), is never shown by a command that runs nothing: `hypothesis show` and `list`, their JSON, the
report site and its Markdown, and a bundle put `<redacted>` in its place."""

from __future__ import annotations

import contextlib
import gzip
import html
import json
from pathlib import Path

import pytest

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


def _invoke(root: Path, *args: str) -> tuple[int, str, str]:
    """`wb ARGS` in process, from `root`, as a process of its own would start it: no secret registered before
    it (what an earlier command registered would mask a value this one failed to), no WB_ROOT or WB_DB.
    Its exit code, stdout and stderr. (Each was a process of its own: 16 of them, a tenth of a minute of CPU.)"""
    from typer.testing import CliRunner

    from workbench import secrets
    from workbench.cli.main import app

    secrets.clear()
    try:
        with contextlib.chdir(root):
            done = CliRunner().invoke(app, list(args), env={"WB_ROOT": None, "WB_DB": None},
                                      catch_exceptions=False)
    finally:
        secrets.clear()
    return done.exit_code, done.stdout, done.stderr


def wb(root: Path, *args: str) -> str:
    """`wb ARGS --root ROOT` (see `_invoke`); its stdout and stderr, asserting exit 0."""
    code, out, err = _invoke(root, *args, "--root", str(root))
    assert code == 0, (args, out[-3000:], err[-3000:])
    return out + err


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
    code, _, stderr = _invoke(root, "hypothesis", "list", "--root", str(root))
    assert code == 2, stderr
    assert stderr.startswith("Error:") and "Traceback" not in stderr, stderr
    assert "keyed.yaml:6" in stderr and "db_password" in stderr and "<redacted>" in stderr, stderr
    for value in ("DefaultPw9876", "AllowedPw1111", "AllowedPw2222", "98769876"):
        assert value not in stderr, stderr


def test_an_invalid_set_value_of_a_secret_variable_is_reported_without_it(root: Path):
    exp = root / "experiments" / "keyed.yaml"
    exp.write_text(EXPERIMENT.replace(f"{{secret: true, default: {DEFAULT}}}",
                                      f"{{secret: true, type: int, default: '1234'}}", 1))
    code, _, stderr = _invoke(root, "hypothesis", "run", "fix-held", "--set", "db_password=SetPw5555", "--root",
                              str(root), "--db", str(root / "wb.duckdb"))
    assert code == 2, stderr
    assert stderr.startswith("Error:") and "--set" in stderr and "db_password" in stderr, stderr
    assert "SetPw5555" not in stderr, stderr
