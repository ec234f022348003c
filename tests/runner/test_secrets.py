"""Secrets are never stored or shown: a secret variable's value, the profile's env values and credentials
inside URLs appear nowhere in the DuckDB file, the report folder or the printed summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from runner_kit import edit_profile
from typer.testing import CliRunner

from workbench import secrets
from workbench.cli.main import app

PASSWORD = "Sup3rS3cretXYZ"
URL_PASSWORD = "hunter2pass"


@pytest.fixture(autouse=True)
def _forget():
    secrets.clear()
    yield
    secrets.clear()


def _files(folder: Path):
    return [p for p in folder.rglob("*") if p.is_file()]


def test_secret_values_are_nowhere_in_the_store_the_report_or_the_output(toy):
    edit_profile(toy.root, "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n",
                 "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n"
                 "  db_password: {secret: true, default: changeme}\n"
                 f"  mirror: {{default: 'https://bob:{URL_PASSWORD}@mirror.example/simple'}}\n")
    edit_profile(toy.root, "        mode={{ mode }}\n",
                 "        mode={{ mode }}\n        password={{ db_password }}\n        mirror={{ mirror }}\n")
    res = CliRunner().invoke(app, ["hypothesis", "run", "toy-fix", "--db", toy.db, "--json", "--report",
                                   "--set", f"db_password={PASSWORD}"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["report"]
    for text in (res.output,):
        assert PASSWORD not in text and URL_PASSWORD not in text and "s3cret-value" not in text
    store_bytes = Path(toy.db).read_bytes()
    for s in (PASSWORD, URL_PASSWORD, "s3cret-value", "changeme"):
        assert s.encode() not in store_bytes, s
    report = Path(summary["report"]).parent
    while report.name and not (report / "index.html").exists():
        report = report.parent
    assert _files(report)
    for f in _files(report):
        data = f.read_bytes()
        for s in (PASSWORD, URL_PASSWORD, "s3cret-value"):
            assert s.encode() not in data, (s, f)


def test_url_credentials_and_named_entries_are_redacted():
    secrets.register(values=["tok_12345678"], names=["db_password"])
    assert secrets.redact_text("postgresql://u:pw@h/db") == "postgresql://u:<redacted>@h/db"
    assert secrets.redact_text("x tok_12345678 y") == "x <redacted> y"
    assert secrets.redact_text('{"db_password": "ab"}') == '{"db_password": "<redacted>"}'
    assert secrets.redact_text("db_password=ab\nmode=ok") == "db_password=<redacted>\nmode=ok"
    assert secrets.redact({"db_password": "ab", "n": [1, "tok_12345678"]}) == \
        {"db_password": "<redacted>", "n": [1, "<redacted>"]}
