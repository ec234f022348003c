"""Secrets no file declared, masked by their shape (workbench.secret_shapes) wherever wb stores or shows a text:
a review, a run's kept output, its error, a config diff; ordinary content (hashes, UUIDs, digests, counts) stays."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest
from runner_kit import edit_profile, store_rows
from typer.testing import CliRunner

from workbench import secrets
from workbench.cli.main import app

HF = "hf_abcdefghijklmnopqrstuvwxyz0123"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dGhpc2lzYXNpZ25hdHVyZQ"
GHP = "ghp_" + "A1b2C3d4E5" * 4
AWS = "AKIAIOSFODNN7EXAMPLE"
PW = "Pl41n-Passw0rd"
LEAKS = (HF, JWT, GHP, AWS, PW, "abcdefghijklmnopqrstuvwxyz0123", "dGhpc2lzYXNpZ25hdHVyZQ")
SHA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
UUID = "123e4567-e89b-12d3-a456-426614174000"


@pytest.fixture(autouse=True)
def _forget():
    secrets.clear()
    yield
    secrets.clear()


def _no_leak(data: bytes | str, where: object) -> None:
    data = data.encode() if isinstance(data, str) else data
    for s in LEAKS:
        assert s.encode() not in data, (s, where)


@pytest.mark.parametrize("text, masked", [
    (f"HF_TOKEN={HF}", "HF_TOKEN=<redacted>"),
    (f"export DB_PASSWORD='{PW}'", "export DB_PASSWORD='<redacted>'"),
    (f'{{"api_key": "{PW}", "n": 1}}', '{"api_key": "<redacted>", "n": 1}'),
    (f"serve --api-key {PW} --port 30000", "serve --api-key <redacted> --port 30000"),
    (f"curl -H 'Authorization: Bearer {JWT}' http://h", "curl -H 'Authorization: Bearer <redacted>' http://h"),
    ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic <redacted>"),
    (f"token {GHP} and {AWS} and sk-proj-{'x1' * 12}", "token <redacted> and <redacted> and <redacted>"),
    (f"https://h/v1?access_token={PW}&n=1", "https://h/v1?access_token=<redacted>&n=1"),
    (f"-hf_token={PW}\n+hf_token=An0ther-One", "-hf_token=<redacted>\n+hf_token=<redacted>"),
    (json.dumps({"conf": f"x=1\nHF_TOKEN={PW}\n"}), json.dumps({"conf": "x=1\nHF_TOKEN=<redacted>\n"})),
])
def test_an_undeclared_secret_is_masked_by_its_shape(text, masked):
    assert secrets.redact_text(text) == masked
    assert secrets.redact_text(masked) == masked  # masking twice changes nothing


@pytest.mark.parametrize("text", [
    f"sha256 {SHA} uuid {UUID} evidence_digest={SHA[:16]} config_hash={SHA}",
    "mismatch_bytes=1234 max_tokens=2500 bytes_per_token=256 token_ids=[1,2,3] SGLANG_TOKEN_FIX=1",
    'HF_TOKEN=$HF_TOKEN HF_TOKEN="${HF_TOKEN}" hf_token={{ hf_token }} curl -H "Authorization: Bearer $TOKEN"',
    "self.api_token = api_token; tok.pad_token = tok.eos_token; invalid_token: expired",
    'eos_token: "</s>" pad_token: "[PAD]" Bearer authentication is required',
    f"the task-{'abcdefghij' * 3} ran; git {SHA[:40]}; my_hf_{'x' * 34}",
    '{"session": 3, "outcome": "leak", "tokens": 2500, "prefix_hit_tokens": 37}',
])
def test_ordinary_content_is_left_as_it_is(text):
    assert secrets.redact_text(text) == text


def test_a_review_with_an_undeclared_token_is_masked_in_the_store_and_the_listing(toy):
    """`wb review -m` text is stored through the store's redaction hook, which masked only declared secrets: a
    pasted `HF_TOKEN=hf_…` or `Authorization: Bearer …` went into the store and `wb review list` in clear."""
    res = CliRunner().invoke(app, ["hypothesis", "run", "toy-fix", "--db", toy.db, "--replicates", "1"])
    assert res.exit_code == 0, res.output
    body = (f"reproduced with HF_TOKEN={HF}; curl -H 'Authorization: Bearer {JWT}'; key {AWS}; "
            f"config {SHA}, run {UUID}")
    res = CliRunner().invoke(app, ["review", "toy-fix", "--comment", "-m", body, "--db", toy.db])
    assert res.exit_code == 0, res.output
    (stored,) = [b for (b,) in store_rows(toy.db, "SELECT body FROM reviews")]
    assert stored == ("reproduced with HF_TOKEN=<redacted>; curl -H 'Authorization: Bearer <redacted>'; "
                      f"key <redacted>; config {SHA}, run {UUID}")
    listing = CliRunner().invoke(app, ["review", "list", "toy-fix", "--json", "--db", toy.db])
    assert listing.exit_code == 0, listing.output
    assert SHA in listing.stdout and UUID in listing.stdout
    _no_leak(listing.output, "review list")
    _no_leak(Path(toy.db).read_bytes(), "store")


def test_a_run_whose_output_and_error_print_an_undeclared_token_keeps_them_masked(toy):
    """The workload echoes an HF_TOKEN no profile declares, and a collect command fails with a password on its
    command line: the kept output, the store's copy of it and the stored error masked only declared secrets."""
    edit_profile(toy.root, 'workload: {command: "',
                 f'workload: {{command: "echo HF_TOKEN={HF} Authorization: Bearer {JWT} sha={SHA}; ')
    edit_profile(toy.root, "  wall_s: {kind: continuous}\n",
                 "  wall_s: {kind: continuous}\n  probe: {kind: count, guard: true}\n")
    edit_profile(toy.root, "      wall_s: {regex: ",
                 f'      probe: {{command: "false --db-password {PW}", parse: int}}\n      wall_s: {{regex: ')
    res = CliRunner().invoke(app, ["hypothesis", "run", "toy-fix", "--db", toy.db, "--replicates", "1"])
    assert res.exit_code == 1, res.output
    kept = [p for p in (toy.root / ".wb" / "artifacts").rglob("stdout.txt")]
    assert kept and all(f"HF_TOKEN=<redacted> Authorization: Bearer <redacted> sha={SHA}" in p.read_text()
                        for p in kept)
    blobs = [zlib.decompress(b) for (b,) in store_rows(toy.db, "SELECT data FROM artifact_blobs")]
    assert any(f"HF_TOKEN=<redacted> Authorization: Bearer <redacted> sha={SHA}".encode() in b for b in blobs)
    errors = [e for (e,) in store_rows(toy.db, "SELECT error FROM runs")]
    assert errors and all("false --db-password <redacted>" in e for e in errors), errors
    for p in (toy.root / ".wb").rglob("*"):
        if p.is_file():
            _no_leak(p.read_bytes(), p)
    for b in blobs:
        _no_leak(b, "artifact blob")
    _no_leak(Path(toy.db).read_bytes(), "store")
    _no_leak(res.output, "output")


ROTATE = """\
  - id: toy-rotate
    claim: The rotated password removes the leaks.
    experiment: toy
    isolates: dbpass
    arms:
      control: {dbpass: CONTROL}
      treatment: {dbpass: TREATMENT}
    hold: {mode: ok, fix: off}
    predicts:
      - {metric: corruption_rate, arm: treatment, at_most: 0.02}
"""


def test_a_config_diff_stored_before_a_secret_was_declared_is_shown_masked(toy):
    """An execution stored its arms' config diff while `dbpass` was a plain variable; declared `secret: true`
    later (its arms' values rotated since, so the old ones are known to no file), the stored diff's lines
    `-dbpass=…` / `+dbpass=…` were shown in clear by the report: the named-entry rule wanted a line start or a
    separator before the name, and a diff line starts with its `-` or `+` (on the page, after a tag). The runs'
    own rendered configs (`wb runs show`, run pages) are masked by the name as they are shown."""
    import re

    old_a, old_b = "Old-Pass-111x", "New-Pass-222y"
    edit_profile(toy.root, "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n",
                 "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n"
                 f"  dbpass: {{default: {old_a}}}\n")
    edit_profile(toy.root, "        mode={{ mode }}\n", "        mode={{ mode }}\n        dbpass={{ dbpass }}\n")
    hyp = toy.root / "hypotheses.yaml"
    hyp.write_text(hyp.read_text() + ROTATE.replace("CONTROL", old_a).replace("TREATMENT", old_b))
    res = CliRunner().invoke(app, ["hypothesis", "run", "toy-rotate", "--db", toy.db, "--replicates", "1",
                                   "--no-report"])
    assert res.exit_code == 0, res.output
    (diff,) = [d for (d,) in store_rows(toy.db, "SELECT config_diff_json FROM executions")]
    assert f"-dbpass={old_a}" in diff and f"+dbpass={old_b}" in diff  # stored as it was: no secret then

    edit_profile(toy.root, f"  dbpass: {{default: {old_a}}}\n", "  dbpass: {secret: true, default: rotated-0}\n")
    hyp.write_text(hyp.read_text().replace(old_a, "rotated-1").replace(old_b, "rotated-2"))
    # A later process knows the secrets declared now, not the old values: with the registered ones forgotten, each
    # command below (in process, as the neighbouring tests run wb) registers what the files declare now, as a new
    # process of its own would; the commands are not about a process of their own.
    secrets.clear()
    built = CliRunner().invoke(app, ["report", "--db", toy.db])
    assert built.exit_code == 0, built.output

    page = (toy.root / "reports" / "hypotheses" / "toy-rotate.html").read_text()
    diffs = "".join(re.findall(r'<pre class="diff">.*?</pre>', page, re.S))
    assert '<span class="del">-dbpass=&lt;redacted&gt;</span>' in diffs, diffs
    assert '<span class="add">+dbpass=&lt;redacted&gt;</span>' in diffs, diffs
    configs = "".join(c for p in (toy.root / "reports" / "runs").glob("*.html")
                      for c in re.findall(r'<section id="config">.*?</section>', p.read_text(), re.S))
    assert configs.count("dbpass=&lt;redacted&gt;") == 2, configs
    for text in (diffs, configs):
        assert old_a not in text and old_b not in text
    # Nor anywhere else on the site: a run page's variables table, the confound report, the runs listing and the
    # hypothesis page's arms show the stored values cell by cell, where no `dbpass=` names them.
    for p in (toy.root / "reports").rglob("*"):
        if p.is_file():
            assert old_a.encode() not in p.read_bytes() and old_b.encode() not in p.read_bytes(), p
    show = CliRunner().invoke(app, ["runs", "show", "1", "--json", "--db", toy.db])
    assert show.exit_code == 0, show.output
    assert "dbpass=<redacted>" in json.loads(show.stdout)["rendered_config"]
    assert old_a not in show.stdout and old_b not in show.stdout
    listing = CliRunner().invoke(app, ["runs", "list", "--db", toy.db])
    assert listing.exit_code == 0, listing.output
    assert "dbpass=<redacted>" in listing.stdout and old_a not in listing.stdout and old_b not in listing.stdout
    bundle = toy.root / "rotate.wbz"
    exported = CliRunner().invoke(app, ["bundle", "export", "toy-rotate", "-o", str(bundle), "--db", toy.db])
    assert exported.exit_code == 0, exported.output
    import gzip

    content = gzip.decompress(bundle.read_bytes())  # a bundle is gzip-compressed JSON
    assert old_a.encode() not in content and old_b.encode() not in content
    # The runs' logs (artifacts, kept zlib-compressed in the store) printed the password in passing; stored in
    # clear then, they travelled in clear inside the bundle's blobs, where no text search of it looks.
    import base64
    import zlib

    stored = b"".join(zlib.decompress(d) for (d,) in store_rows(toy.db, "SELECT data FROM artifact_blobs"))
    assert old_a.encode() in stored and old_b.encode() in stored  # the store itself is as it was
    doc = json.loads(content)
    blobs = {b["sha256"]: zlib.decompress(base64.b64decode(b["data"])) for b in doc["store"]["artifact_blobs"]}
    assert blobs and all(old_a.encode() not in b and old_b.encode() not in b for b in blobs.values())
    assert sum(b"connected to the config store (<redacted>)" in b for b in blobs.values()) >= 1, blobs
    import hashlib

    for a in doc["store"]["artifacts"]:  # each artifact names the blob it travels with, by that blob's own hash
        assert a["sha256"] in blobs and hashlib.sha256(blobs[a["sha256"]]).hexdigest() == a["sha256"], a
        assert a["size_bytes"] == len(blobs[a["sha256"]]), a
    fresh = toy.root / "fresh.duckdb"
    imported = CliRunner().invoke(app, ["bundle", "import", str(bundle), "--db", str(fresh)])
    assert imported.exit_code == 0, imported.output
    shown = CliRunner().invoke(app, ["runs", "show", "1", "--db", str(fresh)])
    assert shown.exit_code == 0 and "artifact" in shown.stdout, shown.output
