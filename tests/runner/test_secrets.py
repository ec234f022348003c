"""Secrets are never stored or shown: a secret variable's value, the profile's env values and credentials
inside URLs appear nowhere in the DuckDB file, the report folder or the printed summary."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from runner_kit import edit_profile, store_rows
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
    # One replicate: where a secret may land does not depend on how many runs wrote it.
    res = CliRunner().invoke(app, ["hypothesis", "run", "toy-fix", "--db", toy.db, "--json", "--report",
                                   "--replicates", "1", "--set", f"db_password={PASSWORD}"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["report"]
    for text in (res.output,):
        assert PASSWORD not in text and URL_PASSWORD not in text and "s3cret-value" not in text
    store_bytes = Path(toy.db).read_bytes()
    for s in (PASSWORD, URL_PASSWORD, "s3cret-value", "changeme"):
        assert s.encode() not in store_bytes, s
    assert any(f'"password": "{PASSWORD}"' in line for line in toy.restarts())  # the target got the real value
    report = Path(summary["report"]).parent
    while report.name and not (report / "index.html").exists():
        report = report.parent
    assert _files(report)
    for f in _files(report):
        data = f.read_bytes()
        for s in (PASSWORD, URL_PASSWORD, "s3cret-value"):
            assert s.encode() not in data, (s, f)


def test_a_secret_quoted_for_a_shell_is_masked_where_a_failed_command_is_quoted(toy):
    """A command line quotes each value for the shell: a secret holding a quote stands there as `'it'"'"'s…'`,
    which a failed command's error quotes into the store and the output; that form is masked as well."""
    odd = "it's&a\"S3cret<é>"
    edit_profile(toy.root, "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n",
                 "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n"
                 "  db_password: {secret: true, default: changeme}\n")
    edit_profile(toy.root, "  wall_s: {kind: continuous}\n",
                 "  wall_s: {kind: continuous}\n  probe: {kind: count, guard: true}\n")  # a guard: its failure counts
    edit_profile(toy.root, "      wall_s: {regex: ",
                 '      probe: {command: "false {{ db_password }}", parse: int}\n      wall_s: {regex: ')
    res = CliRunner().invoke(app, ["hypothesis", "run", "toy-fix", "--db", toy.db, "--replicates", "1",
                                   "--set", f"db_password={odd}"])
    assert res.exit_code == 1, res.output
    errors = [e for (e,) in store_rows(toy.db, "SELECT error FROM runs")]
    assert errors and all(f"`false {secrets.MASK}` exited 1" in e for e in errors), errors
    assert "S3cret" not in res.output and not [e for e in errors if "S3cret" in e]


def test_url_credentials_and_named_entries_are_redacted():
    secrets.register(values=["tok_12345678"], names=["db_password"])
    assert secrets.redact_text("postgresql://u:pw@h/db") == "postgresql://u:<redacted>@h/db"
    assert secrets.redact_text("x tok_12345678 y") == "x <redacted> y"
    assert secrets.redact_text('{"db_password": "ab"}') == '{"db_password": "<redacted>"}'
    assert secrets.redact_text("db_password=ab\nmode=ok") == "db_password=<redacted>\nmode=ok"
    assert secrets.redact({"db_password": "ab", "n": [1, "tok_12345678"]}) == \
        {"db_password": "<redacted>", "n": [1, "<redacted>"]}


def test_a_plain_env_value_is_not_a_secret(toy):
    """Only env entries named like a secret (…TOKEN, …KEY, …PASSWORD) are masked. A plain one (a log level)
    whose value is also a variable's value used to be masked everywhere: the run recorded `level=<redacted>`,
    the isolation check failed on it and the verdict came out invalid."""
    edit_profile(toy.root, "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n",
                 "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n"
                 "  level: {values: [info, debug], default: info}\n")
    edit_profile(toy.root, "        mode={{ mode }}\n", "        mode={{ mode }}\n        level={{ level }}\n")
    edit_profile(toy.root, '    env: {SERVICE_API_TOKEN: "s3cret-value"}\n',
                 '    env: {SERVICE_API_TOKEN: "s3cret-value", TOY_LOG_LEVEL: "info"}\n')
    res = CliRunner().invoke(app, ["hypothesis", "run", "toy-fix", "--db", toy.db, "--json", "--seed", "7",
                                   "--replicates", "1"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["verdict"] == "inconclusive", summary.get("reasoning")  # 10 units decide nothing; not invalid
    assert secrets.MASK not in res.stdout
    assert b"s3cret-value" not in Path(toy.db).read_bytes()
    levels = {json.loads(v)["level"] for (v,) in store_rows(toy.db, "SELECT variables_json FROM runs")}
    assert levels == {"info"}, levels
    assert secrets.redact_text("TOY_LOG_LEVEL=info; SERVICE_API_TOKEN=s3cret-value") == \
        f"TOY_LOG_LEVEL=info; SERVICE_API_TOKEN={secrets.MASK}"


def test_env_names_that_look_secret():
    assert [n for n in ("HF_TOKEN", "OPENAI_API_KEY", "db_password", "AWS_SECRET_ACCESS_KEY", "LOG_LEVEL",
                        "KEYWORDS_OFF", "MONKEY", "GITHUB_PAT", "apiKey") if secrets.looks_secret(n)] == \
        ["HF_TOKEN", "OPENAI_API_KEY", "db_password", "AWS_SECRET_ACCESS_KEY", "GITHUB_PAT", "apiKey"]


def test_a_secret_variable_left_at_its_default_does_not_make_the_verdict_invalid(toy):
    """The runs record a secret variable's value masked; the isolation check compared that with the value the
    arm sets (the real default) and called every such execution invalid."""
    edit_profile(toy.root, "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n",
                 "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n"
                 "  db_password: {secret: true, default: dflt-pass-777}\n")
    edit_profile(toy.root, "        mode={{ mode }}\n", "        mode={{ mode }}\n        password={{ db_password }}\n")
    res = CliRunner().invoke(app, ["hypothesis", "run", "toy-fix", "--db", toy.db, "--json", "--replicates", "1"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    checks = {c["name"]: c for c in summary["checks"]}
    assert checks["isolation"]["passed"] is True, checks["isolation"]
    assert summary["verdict"] != "invalid", summary["reasoning"]
    assert any('"password": "dflt-pass-777"' in line for line in toy.restarts())  # the target got the real value
    assert b"dflt-pass-777" not in Path(toy.db).read_bytes() and "dflt-pass-777" not in res.output


def test_a_named_entry_is_masked_without_breaking_the_json_or_the_template_around_it():
    """The key=value rule took everything up to the next space: inside JSON it ate the closing quote (the
    stored or printed JSON no longer parsed), and in a template it masked `{{` (a secret's template line
    then read as changed on --resume). After an escaped newline in JSON text it missed the value."""
    secrets.register(values=["a-long-secret-value"], names=["dbpw"])
    text = json.dumps({"cmd": "run with dbpw=abc", "y": 1, "conf": "mode=x\ndbpw=xyz\n"})
    out = secrets.redact_text(text)
    assert json.loads(out) == {"cmd": "run with dbpw=<redacted>", "y": 1, "conf": "mode=x\ndbpw=<redacted>\n"}
    assert secrets.redact_text("mode=x\ndbpw={{ dbpw }}\n") == "mode=x\ndbpw={{ dbpw }}\n"
    assert secrets.redact_text("run with dbpw=abc now") == "run with dbpw=<redacted> now"
    # An object and the stored text of it compare alike.
    obj = {"t": "mode=x\ndbpw={{ dbpw }}\n", "c": "run dbpw=abc"}
    assert json.loads(secrets.redact_text(json.dumps(obj))) == secrets.redact(obj)


def test_resume_after_an_interruption_with_a_secret_in_a_template_line(toy):
    """A template line `db_password={{ db_password }}` read as changed on --resume (the check masked the
    current template and not the stored one alike), so an interrupted execution could not be resumed."""
    from runner_kit import run_hypothesis, sigterm_at_workload
    from workbench.runner.execute import RunInterrupted

    edit_profile(toy.root, "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n",
                 "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n"
                 "  db_password: {secret: true, default: dflt-pass-777}\n")
    # Also a line named otherwise (the resume of such an experiment was refused once as "variables.db_password
    # changed": the comparison masked the secret's whole variable spec, not its values).
    edit_profile(toy.root, "        mode={{ mode }}\n",
                 "        mode={{ mode }}\n        db_password={{ db_password }}\n        password={{ db_password }}\n")
    with pytest.raises(RunInterrupted):
        run_hypothesis("toy-fix", db=toy.db, replicates=1, fault=sigterm_at_workload(2))
    assert toy.conf.read_bytes() == toy.original
    s = run_hypothesis("toy-fix", db=toy.db, resume=True)
    assert [r["status"] for r in s["runs"]].count("ok") == 2
    assert toy.conf.read_bytes() == toy.original
    assert b"dflt-pass-777" not in Path(toy.db).read_bytes()


def test_a_secret_the_workload_prints_is_masked_in_the_kept_output_the_store_and_a_later_report(toy):
    """The runner kept the workload's output as written: the artifact files, the store's (compressed) copy of
    them and a report built later by another process (which knows no --set value) showed the secret."""
    import zlib

    edit_profile(toy.root, "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n",
                 "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n"
                 "  db_password: {secret: true, default: changeme}\n")
    edit_profile(toy.root, 'workload: {command: "',
                 'workload: {command: "echo leak {{ db_password }} $SERVICE_API_TOKEN; ')
    res = CliRunner().invoke(app, ["hypothesis", "run", "toy-fix", "--db", toy.db, "--json", "--replicates", "1",
                                   "--set", f"db_password={PASSWORD}"])
    assert res.exit_code == 0, res.output
    kept = [p for p in _files(toy.root / ".wb" / "artifacts") if p.name == "stdout.txt"]
    assert kept and all("leak <redacted> <redacted>" in p.read_text() for p in kept)
    blobs = [zlib.decompress(b) for (b,) in store_rows(toy.db, "SELECT data FROM artifact_blobs")]
    assert any(b"leak <redacted> <redacted>" in b for b in blobs)
    for data in [p.read_bytes() for p in _files(toy.root / ".wb")] + blobs:
        assert PASSWORD.encode() not in data and b"s3cret-value" not in data
    # A later process knows the registry's secrets, not the --set value: with the registered ones forgotten, the
    # report (in process, as the run above) registers what the files declare, as a process of its own would.
    secrets.clear()
    built = CliRunner().invoke(app, ["report", "--db", toy.db])
    assert built.exit_code == 0, built.output
    for f in _files(toy.root / "reports"):
        assert PASSWORD.encode() not in f.read_bytes(), f


def test_a_masked_override_reads_whole_in_the_markdown(toy):
    """The Markdown escapes the mask of a secret --set value as it escapes any '<' ('&lt;redacted>'); the printed
    output then masked that again, eating the colon after it and putting back a bare '<redacted>', which a pull
    request's renderer drops as a tag ('under --set db_password= supported')."""
    edit_profile(toy.root, "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n",
                 "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n"
                 "  db_password: {secret: true, default: changeme}\n")
    res = CliRunner().invoke(app, ["hypothesis", "run", "toy-fix", "--db", toy.db, "--no-report", "--replicates", "1",
                                   "--set", f"db_password={PASSWORD}"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["report", "--format", "md", "--hypothesis", "toy-fix", "--db", toy.db])
    assert res.exit_code == 0, res.output
    assert PASSWORD not in res.output
    assert "under --set db_password=&lt;redacted>: " in res.output, res.output


def test_a_token_written_into_a_config_template_is_masked_in_the_store_the_bundle_and_the_report(toy, tmp_path):
    """The registry knows the secrets its files declare (profile env, secret variables); a token written into the
    config template itself (a serve script's `hf_token: hf_…`, `--api-key sk-…`) was stored in the run's rendered
    config and the execution's config diff as it was, and went into every bundle and run page. Its value is masked
    by its name; the isolated variable's lines still differ, so the config check holds."""
    edit_profile(toy.root, "        mode={{ mode }}\n",
                 "        mode={{ mode }}\n        hf_token: hf_InTheTemplate42\n"
                 "        # serve --api-key sk-InTheTemplate42 --port {{ port }}\n")
    res = CliRunner().invoke(app, ["hypothesis", "run", "toy-fix", "--db", toy.db, "--replicates", "1", "--json",
                                   "--report"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    configs = [c for (c,) in store_rows(toy.db, "SELECT rendered_config FROM runs")]
    assert len(configs) == 2 and all(f"hf_token: {secrets.MASK}\n" in c and f"--api-key {secrets.MASK} --port" in c
                                     for c in configs), configs
    assert sorted(c.split("\n")[1] for c in configs) == ["fix=off", "fix=on"]
    assert b"InTheTemplate42" not in Path(toy.db).read_bytes()
    checks = {c["name"]: c for c in summary["checks"]}
    assert checks["config"]["passed"] is True and "fix=off" in checks["config"]["detail"], checks["config"]
    bundle = tmp_path / "toy.wbundle"
    res = CliRunner().invoke(app, ["bundle", "export", "toy-fix", "--db", toy.db, "-o", str(bundle)])
    assert res.exit_code == 0, res.output
    assert b"InTheTemplate42" not in gzip.decompress(bundle.read_bytes())
    pages = [p for p in _files(toy.root / "reports") if p.suffix == ".html"]
    assert any("Rendered config" in p.read_text() for p in pages)
    assert not [p for p in pages if "InTheTemplate42" in p.read_text()]


def test_a_named_entry_with_a_quoted_value_is_masked_whole():
    """`dbpw="abc def"` or `dbpw='abc'` (a serve script's export, a log line): the value began with the quote,
    where the rule stopped, so the text came out as `dbpw=<redacted>"abc def"`, the secret shown beside its mask.
    The quotes stay (a JSON text holding the line stays JSON); a reference to a variable stays as it is."""
    secrets.register(values=[], names=["dbpw"])
    assert secrets.redact_text('export dbpw="abc def"; x=1') == 'export dbpw="<redacted>"; x=1'
    assert secrets.redact_text("export dbpw='abc def' x=1") == "export dbpw='<redacted>' x=1"
    assert secrets.redact_text('dbpw="a \\" b" next') == 'dbpw="<redacted>" next'
    obj = {"conf": 'export dbpw="abc"\nmode=x\n', "cmd": "run dbpw='s3' now"}
    out = secrets.redact_text(json.dumps(obj))
    assert json.loads(out) == {"conf": 'export dbpw="<redacted>"\nmode=x\n', "cmd": "run dbpw='<redacted>' now"}
    assert secrets.redact_text('dbpw="$dbpw" and dbpw="{{ dbpw }}"') == 'dbpw="$dbpw" and dbpw="{{ dbpw }}"'
    assert secrets.redact_text('dbpw="abc def') == 'dbpw=<redacted> def'  # a quote never closed: the word


def test_a_secret_in_a_units_record_is_masked_in_the_store(toy):
    """The units go in as one bulk insert, past the flush hook that masks every text the ORM writes: a workload
    that echoed a secret into its per-unit JSON had it stored as it came."""
    edit_profile(toy.root, "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n",
                 "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n"
                 "  db_password: {secret: true, default: changeme}\n")
    edit_profile(toy.root, "        mode={{ mode }}\n", "        mode={{ mode }}\n        password={{ db_password }}\n")
    script = toy.state / "toy.py"
    text = script.read_text()
    assert '"rounds": 4}' in text
    script.write_text(text.replace('"rounds": 4}', '"rounds": 4, "seen": "pw " + c.get("password", "")}'))
    res = CliRunner().invoke(app, ["hypothesis", "run", "toy-fix", "--db", toy.db, "--replicates", "1",
                                   "--set", f"db_password={PASSWORD}"])
    assert res.exit_code == 0, res.output
    seen = {s for (s,) in store_rows(toy.db, "SELECT DISTINCT json_extract_string(data_json, '$.seen') FROM units")}
    assert seen == {"pw <redacted>"}, seen
    assert PASSWORD.encode() not in Path(toy.db).read_bytes()


@pytest.mark.parametrize("name", ["password", "sslpassword", "oauth_client_secret"])
def test_each_libpq_secret_parameter_is_masked_alike_everywhere(name):
    """libpq reads a secret from three connection parameters (`password`, `sslpassword`, PostgreSQL 18's
    `oauth_client_secret`), in a URL's query or a conninfo string. The texts wb shows masked `password=` and
    `sslpassword=` only when the value was six characters or more (a short `?sslpassword=abc` was shown), and a
    store URL carrying `oauth_client_secret=` counted as holding no password: its resume command gave it in
    clear. One list (`secrets.LIBPQ_SECRETS`) now serves the text masking and the store's checks."""
    from workbench.store.engine import _redact, url_has_password

    assert name in secrets.LIBPQ_SECRETS
    url = f"postgresql://wb@db.example/wb?sslmode=require&{name}=ab1&application_name=x"
    assert secrets.redact_text(url) == (
        f"postgresql://wb@db.example/wb?sslmode=require&{name}=<redacted>&application_name=x")
    assert secrets.redact_text(f"host=db.example {name}=ab1 user=wb") == f"host=db.example {name}=<redacted> user=wb"
    assert secrets.redact_text(f"{name}='a b1' user=wb") == f"{name}='<redacted>' user=wb"
    assert url_has_password(url) and url_has_password(url.replace(name, name.upper()))
    assert "ab1" not in _redact(url) and "db.example" in _redact(url), _redact(url)
    assert not url_has_password("postgresql://wb@db.example/wb?sslmode=require&passfile=/p")
    assert secrets.redact_text(f"{name}= and {name}=<redacted>") == f"{name}= and {name}=<redacted>"
