"""The runner end to end on a toy local deployment: recording, arms, secrets, diff, the serve file restored."""

from __future__ import annotations

import json
import os

import pytest

from runner_kit import edit_profile, run_hypothesis, store_rows  # noqa: E402  (tests/runner is on sys.path)


# A child of toy-fix with a typo of its own, and its child, valid itself.
BROKEN_CHILDREN = ("  - id: toy-child\n    parent: toy-fix\n    claim: c\n    experiment: toy\n"
                   "    kind: reachability\n    probe: {targets: ['m:C']}\n"
                   "    predicts: [{target: 'm:C', at_least: 1}]\n    falsifed_if: typo\n"
                   "  - id: toy-grandchild\n    parent: toy-child\n    claim: g\n    experiment: toy\n"
                   "    kind: reachability\n    probe: {targets: ['m:C']}\n"
                   "    predicts: [{target: 'm:C', at_least: 1}]\n")


def test_records_both_arms_and_restores_and_a_successful_run_records_no_error(toy, cli):
    """The plain toy run (the second half: `_records_no_error`, on the same execution: it only reads it)."""
    summary = run_hypothesis("toy-fix", db=toy.db, show_progress=False, seed=7, build_report=False)
    assert toy.conf.read_bytes() == toy.original
    assert [r["status"] for r in summary["runs"]] == ["ok"] * 4
    arms = summary["arms"]
    assert arms["control"]["totals"]["leak"] == 6 and arms["control"]["totals"]["sessions"] == 20
    assert arms["treatment"]["totals"]["leak"] == 0
    assert arms["control"]["totals"]["aborts"] == 4
    assert arms["control"]["metrics"]["wall_s"] == {"n": 2, "values": [0.05, 0.05]}
    # ABBA: the second block reverses the first.
    order = [r["arm"] for r in sorted(summary["runs"], key=lambda r: r["order_index"])]
    assert order[:2] == list(reversed(order[2:]))
    # The restore restarted the service with the original file: the last restart saw it.
    assert json.loads(toy.restarts()[-1]) == {"fix": "off", "mode": "ok"}
    rid = summary["runs"][0]["id"]
    names = {n for (n,) in store_rows(toy.db, "SELECT name FROM metrics WHERE run_id = :r", r=rid)}
    assert names == {"sessions", "leak", "done", "waiting_for_input", "wall_s"}  # no proportions, no aliases
    (fp, rendered, chash, variables) = store_rows(
        toy.db, "SELECT fingerprint_json, rendered_config, config_hash, variables_json FROM runs WHERE id = :r",
        r=rid)[0]
    assert "s3cret-value" not in fp and json.loads(fp)["uname"] == "Linux"
    assert "fix=" in rendered and len(chash) == 64
    assert json.loads(variables)["mode"] == "ok"
    arts = dict(store_rows(toy.db, "SELECT name, sha256 FROM artifacts WHERE run_id = :r", r=rid))
    assert {"stdout", "stderr", "units", "restarts"} <= set(arts)
    (diff,) = store_rows(toy.db, "SELECT config_diff_json FROM executions")[0]
    assert "-fix=off" in diff and "+fix=on" in diff
    n_units = store_rows(toy.db, "SELECT count(*) FROM units")[0][0]
    assert n_units == 40
    # Each check carries the mark `wb hypothesis show` prints beside it.
    from workbench.analysis.results import Check

    assert summary["checks"] and all(c["mark"] == Check.from_dict(c).mark(summary["verdict"])
                                     for c in summary["checks"]), summary["checks"]
    _records_no_error(toy, cli, summary)


def _records_no_error(toy, cli, summary: dict) -> None:
    """An ok run carries no error: not in the summary, `wb runs show`, its --json, nor on its report page."""
    assert [(r["status"], r["error"]) for r in summary["runs"]] == [("ok", None)] * 4
    assert store_rows(toy.db, "SELECT count(*) FROM runs WHERE error IS NOT NULL")[0][0] == 0
    rid = summary["runs"][0]["id"]
    wb = ["runs", "show", str(rid), "--db", toy.db]  # wb in process (`cli`): the console script's command tree
    code, shown, err = cli(*wb)
    assert code == 0, err
    assert "status: ok" in shown and "error" not in shown and "interrupted" not in shown
    # What its help promises: the fingerprint and the rendered config too (they were in --json alone), and the
    # units per outcome as words, not a Python dict.
    assert "fingerprint: " in shown and "uname=Linux" in shown, shown
    assert "rendered config:\n    # toy serve file\n    fix=" in shown, shown
    assert "{" not in shown.split("units: ", 1)[1].splitlines()[0], shown
    _, as_json, _ = cli(*wb, "--json")
    assert json.loads(as_json)["error"] is None
    code, _, err = cli("report", "--db", toy.db)
    assert code == 0, err
    page = (toy.root / "reports" / "runs" / f"{rid}.html").read_text(encoding="utf-8")
    assert "<h3>Error</h3>" not in page and "interrupted" not in page


def test_the_profile_env_is_rendered_for_each_run_with_its_own_arm(toy):
    """`env` is rendered with the variables like every other template: each run's commands see its own arm's
    value (a service switched by an environment variable ran the first arm's value in both arms)."""
    from runner_kit import edit_profile

    edit_profile(toy.root, 'env: {SERVICE_API_TOKEN: "s3cret-value"}',
                 'env: {SERVICE_API_TOKEN: "s3cret-value", FIX_ENV: "fix={{ fix }}"}')
    edit_profile(toy.root, 'restart {{ state }}"]',
                 'restart {{ state }}", "echo \\"$FIX_ENV\\" >> {{ state }}/env.log"]')
    summary = run_hypothesis("toy-fix", db=toy.db, seed=7, replicates=1)
    assert [r["status"] for r in summary["runs"]] == ["ok", "ok"]
    order = [r["arm"] for r in sorted(summary["runs"], key=lambda r: r["order_index"])]
    want = {"control": "fix=off", "treatment": "fix=on"}
    seen = (toy.state / "env.log").read_text().splitlines()
    assert seen[:2] == [want[a] for a in order]           # each run its own arm's value; the restore's after
    fps = {r["arm"]: json.loads(store_rows(toy.db, "SELECT fingerprint_json FROM runs WHERE id = :r", r=r["id"])[0][0])
           for r in summary["runs"]}
    # The fingerprint records it apart from the environment compared between arms: no confound is flagged.
    assert {a: fp["arm_env"] for a, fp in fps.items()} == {a: {"FIX_ENV": v} for a, v in want.items()}
    assert {a: fp["env"] for a, fp in fps.items()} == {a: {"SERVICE_API_TOKEN": "<redacted>"} for a in want}
    checks = {c["name"]: c for c in summary["checks"]}
    assert checks["fingerprint"]["passed"] is True, checks["fingerprint"]
    assert toy.conf.read_bytes() == toy.original


def test_a_file_already_at_the_temporary_name_is_never_written_through(toy):
    """Something at .serve.conf.wb-tmp before the run (a link someone planted there, or a leftover of a killed
    write): wb writes a fresh file of its own, so the link's target is untouched and serve.conf stays a file
    (the arm went through the link into its target, and the link was renamed over serve.conf)."""
    victim = toy.state / "victim.txt"
    victim.write_text("not wb's\n")
    (toy.state / ".serve.conf.wb-tmp").symlink_to(victim)
    # Here too, a child with a typo of its own: it stopped the run of every hypothesis; it now stops its lineage
    # alone, and the site is not rebuilt from a registry that lacks it.
    hyp = toy.root / "hypotheses.yaml"
    hyp.write_text(hyp.read_text() + BROKEN_CHILDREN)
    summary = run_hypothesis("toy-fix", db=toy.db, show_progress=False, replicates=1, build_report=True)
    assert [r["status"] for r in summary["runs"]] == ["ok", "ok"]
    assert summary["report_note"].startswith(f"not rebuilt: {hyp} has a problem in 'toy-child'"), summary
    assert not (toy.root / "reports").exists()
    assert victim.read_text() == "not wb's\n"
    assert not toy.conf.is_symlink() and toy.conf.read_bytes() == toy.original
    assert not (toy.state / ".serve.conf.wb-tmp").is_symlink() and not (toy.state / ".serve.conf.wb-tmp").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving the serve file another owner needs root")
def test_restore_keeps_the_serve_files_owner_group_and_mode(toy):
    """Run as root, wb writes each arm and the original back into a file the service's own user owns: the file
    keeps that owner, group and mode (it came back root:root, unreadable to a service reading it as its user)."""
    os.chown(toy.conf, 65534, 65534)
    os.chmod(toy.conf, 0o640)
    summary = run_hypothesis("toy-fix", db=toy.db, show_progress=False, replicates=1, build_report=False)
    assert [r["status"] for r in summary["runs"]] == ["ok", "ok"]
    st = toy.conf.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (65534, 65534, 0o640)
    assert toy.conf.read_bytes() == toy.original


def test_an_https_health_url_is_verified_with_the_profiles_ca_file(toy, tmp_path):
    """A health URL over https whose certificate an internal CA signed: the profile's target names the CA's
    file (ca_file) and the runs pass their health stage; the server is asked for its own name."""
    from runner_kit import edit_profile
    from tls_kit import https_health_server

    tls = https_health_server(tmp_path)
    try:
        edit_profile(toy.root, "    target: {kind: local}", f"    target: {{kind: local, ca_file: {tls.ca_file}}}")
        _health_over_https_runs_ok(toy, tls)
    finally:
        tls.close()


def _health_over_https_runs_ok(toy, tls) -> None:
    """The toy's health URL on the https server `tls` (named as localhost): both runs ok, every poll seen there
    under that name, the config restored."""
    from runner_kit import edit_profile

    edit_profile(toy.root, '"http://127.0.0.1:{{ port }}/health"', f'"https://localhost:{tls.port}/health"')
    s = run_hypothesis("toy-fix", db=toy.db, replicates=1, build_report=False)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"], [r["error"] for r in s["runs"]]
    assert tls.hosts_seen and set(tls.hosts_seen) == {f"localhost:{tls.port}"}
    assert toy.conf.read_bytes() == toy.original


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "SSL_CERT_DIR"])
def test_an_https_health_url_is_verified_with_ssl_cert_file_or_dir_when_no_ca_file(toy, tmp_path, monkeypatch,
                                                                                   variable):
    """No ca_file in the profile, the private CA named by the standard SSL_CERT_FILE or SSL_CERT_DIR (as curl,
    requests and OpenSSL read them): every health poll was checked against certifi's public CAs alone, so each
    run failed its health stage. They are honoured when the profile names no ca_file."""
    import subprocess

    from tls_kit import https_health_server

    tls = https_health_server(tmp_path)
    try:
        if variable == "SSL_CERT_FILE":
            monkeypatch.setenv("SSL_CERT_FILE", str(tls.ca_file))
        else:  # a folder as c_rehash leaves it: the CA under its subject hash
            certs = tmp_path / "certs"
            certs.mkdir()
            digest = subprocess.run(["openssl", "x509", "-hash", "-noout", "-in", str(tls.ca_file)],
                                    capture_output=True, text=True, check=True).stdout.strip()
            (certs / f"{digest}.0").write_bytes(tls.ca_file.read_bytes())
            monkeypatch.setenv("SSL_CERT_DIR", str(certs))
        _health_over_https_runs_ok(toy, tls)
    finally:
        tls.close()


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "SSL_CERT_DIR"])
def test_a_missing_ssl_cert_file_or_dir_is_named_before_touching_anything(toy, tmp_path, monkeypatch, variable):
    """SSL_CERT_FILE or SSL_CERT_DIR naming nothing is an error naming the variable, before the target is touched."""
    from runner_kit import edit_profile
    from workbench.errors import TargetError

    monkeypatch.setenv(variable, str(tmp_path / "nowhere"))
    edit_profile(toy.root, '"http://127.0.0.1:{{ port }}/health"', '"https://localhost:9/health"')
    with pytest.raises(TargetError) as ei:
        run_hypothesis("toy-fix", db=toy.db, replicates=1, build_report=False)
    assert f"{variable}={tmp_path / 'nowhere'}" in ei.value.message and "does not exist" in ei.value.message
    assert toy.restarts() == [] and toy.conf.read_bytes() == toy.original


@pytest.mark.parametrize("content", [None, "not a certificate\n"])
def test_an_unusable_ca_file_is_named_before_touching_anything(toy, tmp_path, content):
    """A ca_file that is missing or holds no certificate is named before the serve file is changed or the
    service restarted (left to the first poll, every health stage would fail with a TLS error)."""
    from runner_kit import edit_profile
    from workbench.errors import TargetError

    path = tmp_path / "ca.pem"
    if content is not None:
        path.write_text(content)
    edit_profile(toy.root, "    target: {kind: local}", f"    target: {{kind: local, ca_file: {path}}}")
    with pytest.raises(TargetError) as ei:
        run_hypothesis("toy-fix", db=toy.db, replicates=1, build_report=False)
    assert f"ca_file {path}" in ei.value.message
    assert ("does not exist" in ei.value.message) == (content is None)
    assert toy.restarts() == [] and toy.conf.read_bytes() == toy.original


def test_an_execution_that_stops_before_any_run_says_no_run_ended(toy, tmp_path, capfd):
    """Stopped by a failure before its first run (here a ca_file that is not there), the summary read 'toy-fix on
    local: 0 of 2 run(s) ok; the runs took 0.0 s of real time', as if two runs had been tried and failed. (An ssh
    host refused before anything changed, an unknown host key or a closed port, prints no summary line at all:
    exit 2, tests/runner/test_ssh.py.)"""
    from workbench.errors import TargetError

    edit_profile(toy.root, "    target: {kind: local}", f"    target: {{kind: local, ca_file: {tmp_path / 'ca.pem'}}}")
    with pytest.raises(TargetError):
        run_hypothesis("toy-fix", db=toy.db, replicates=1, show_progress=True)
    err = " ".join(capfd.readouterr().err.split())
    assert "toy-fix on local: no run ended (2 planned); it stopped after " in err, err
    assert "runs ok" not in err and "the runs took" not in err, err


def test_a_site_that_cannot_be_rebuilt_after_the_runs_says_they_are_recorded(toy, cli):
    """`wb hypothesis run --report` whose site cannot be written (reports is a file): the runs and the verdict
    were recorded, but the command ended in the site's error alone, with no summary, as if nothing had run."""
    (toy.root / "reports").write_text("not a folder\n")
    code, out, err = cli("hypothesis", "run", "toy-fix", "--db", toy.db, "--replicates", "1", "--report")
    assert code == 1, (out, err)
    assert "verdict:" in out and "report: not rebuilt" in out
    assert "Error: the site was not rebuilt: the site folder " in err and "runs and the verdict are recorded" in err
    assert "--out" not in err.split("(the runs")[0]  # no --out was given
    assert "Traceback" not in err
    assert len(store_rows(toy.db, "SELECT id FROM runs")) == 2
    assert toy.conf.read_bytes() == toy.original


def test_a_verify_mismatch_names_the_arm_it_happened_in(toy):
    """The verify step reads back `fix=on` whatever was written: the control arm's run is invalid, and its error
    names the control arm (it said "treatment not applied" in every arm)."""
    edit_profile(toy.root, "    units: {path:", '    verify: {command: "echo fix=on", contains: ["fix={{ fix }}"]}\n'
                                                "    units: {path:")
    summary = run_hypothesis("toy-fix", db=toy.db, show_progress=False, replicates=1, build_report=False)
    by_arm = {r["arm"]: r for r in summary["runs"]}
    assert by_arm["treatment"]["status"] == "ok" and by_arm["control"]["status"] == "invalid", summary["runs"]
    error = by_arm["control"]["error"]
    assert "arm control not applied: verify `echo fix=on` does not show 'fix=off'" in error, error
    assert "treatment" not in error, error


def test_a_config_check_that_fails_silently_says_how_it_ended(toy, cli):
    """A `config.check` that prints nothing (`grep -q`) ended the Error line at "rejected the rendered config: "
    with nothing after it; it now gives the check's exit status and that it printed nothing."""
    edit_profile(toy.root, 'check: "bash -n {{ file }}"', 'check: "grep -q nosuch {{ file }}"')
    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--db", toy.db)
    assert code == 2, err
    line = next(x for x in err.splitlines() if x.startswith("Error:"))
    assert line.endswith("rejected the rendered config: exited 1, printing nothing"), line
    assert "toy.yaml:" in line and "(field profiles.local.config.check)" in line, line  # where it is written
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == []


def test_a_workload_that_fails_silently_says_it_printed_nothing(toy):
    """The run's error ended at "workload exited 1: " for a workload that printed nothing."""
    edit_profile(toy.root, '    workload: {command: "', '    workload: {command: "exit 1; ')
    summary = run_hypothesis("toy-fix", db=toy.db, show_progress=False, replicates=1, build_report=False)
    assert {r["error"] for r in summary["runs"]} == {"[workload] workload exited 1, printing nothing"}, summary["runs"]


def test_a_config_path_that_is_no_file_yet_is_warned_about(toy, capfd):
    """A mistyped config.path (the service reads another file) was written and removed without a word: every arm
    then measured the unchanged service. The run goes on (a config may be new), with a warning naming the path."""
    edit_profile(toy.root, 'path: "{{ state }}/serve.conf"', 'path: "{{ state }}/serve.cnof"')
    run_hypothesis("toy-fix", db=toy.db, show_progress=True, replicates=1, build_report=False)
    err = " ".join(capfd.readouterr().err.split())
    mistyped = toy.conf.with_name("serve.cnof")
    assert f"warning: local: config.path {mistyped} does not exist:" in err, err
    assert not mistyped.exists() and toy.conf.read_bytes() == toy.original


@pytest.mark.parametrize("path,why", [("{{ state }}/nosuch/serve.conf", "its folder {folder} does not exist"),
                                      ("{{ state }}", "it is a folder, not a file")], ids=["no-folder", "a-folder"])
def test_a_config_path_in_no_folder_or_naming_a_folder_is_refused_before_the_target_is_touched(toy, path, why):
    """config.path in a folder that does not exist: the lock's mkdir -p made the folder, each arm's config went
    into it, and the folder stayed after the restore (a target left changed); config.path naming a folder failed
    every run (exit 1, '0 of 2 run(s) ok') with an error that named neither config.path nor its line."""
    from workbench.errors import WbError

    edit_profile(toy.root, 'path: "{{ state }}/serve.conf"', f'path: "{path}"')
    before = sorted(p.name for p in toy.conf.parent.iterdir())
    with pytest.raises(WbError) as caught:
        run_hypothesis("toy-fix", db=toy.db, replicates=1)
    err = caught.value
    folder = toy.conf.parent / "nosuch"
    assert err.exit_code == 2 and type(err).__name__ == "TargetRefused", (type(err), err.message)
    assert why.format(folder=folder) in err.message and "toy.yaml:" in (err.where or ""), (err.message, err.where)
    assert sorted(p.name for p in toy.conf.parent.iterdir()) == before and not folder.exists()
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == []
    assert store_rows(toy.db, "SELECT count(*) FROM runs")[0][0] == 0
    assert store_rows(toy.db, "SELECT status FROM executions") == [("refused",)]  # on record, as the README says


def test_an_entry_with_a_problem_stops_only_its_own_lineage(toy, cli):
    """A typo in one hypothesis stopped `hypothesis list` and the run of any other (exit 2). The list now shows the
    entries without problems and warns of the broken one's, as show and lineage do (exit 0; it exited 2, the
    problem under "error" in --json, while they said it under "broken"); a hypothesis whose lineage holds the
    broken entry is refused before anything is written (the run of another: test_a_file_already_at_the_...)."""
    hyp = toy.root / "hypotheses.yaml"
    hyp.write_text(hyp.read_text() + BROKEN_CHILDREN)
    code, out, err = cli("hypothesis", "list", "--db", toy.db)
    assert code == 0 and "Traceback" not in err and "Error:" not in err, (code, out, err)
    assert [ln.split()[0] for ln in out.splitlines()[1:]] == ["toy-fix", "toy-grandchild"], out
    assert f"Warning: {hyp}:" in err and "(hypothesis toy-child, field falsifed_if): unknown field" in err, err
    code, out, _ = cli("hypothesis", "list", "--db", toy.db, "--json")
    listed = json.loads(out)
    assert code == 0 and listed["ok"] is True and [b["id"] for b in listed["broken"]] == ["toy-child"], out
    assert [i["id"] for i in listed["items"]] == ["toy-fix", "toy-grandchild"], out
    code, out, err = cli("hypothesis", "run", "toy-grandchild", "--db", toy.db)
    assert code == 2 and "(hypothesis toy-child, field falsifed_if)" in err and out == "", (code, out, err)
    # The parent's problem is told as what refuses the run, its hint kept.
    assert "Hint: did you mean 'falsified_if'?" in err, err
    assert err.endswith("1 problem found; hypothesis 'toy-grandchild' is not run until it is fixed: its parent "
                        "'toy-child' has it\n"), err
    hyp.write_text(hyp.read_text() + "  - id: toy-great\n    parent: toy-grandchild\n    claim: g\n"
                   "    experiment: toy\n    kind: reachability\n    probe: {targets: ['m:C']}\n"
                   "    predicts: [{target: 'm:C', at_least: 1}]\n")
    code, out, err = cli("hypothesis", "run", "toy-great", "--db", toy.db)
    assert code == 2 and err.endswith("1 problem found; hypothesis 'toy-great' is not run until it is fixed: "
                                      "'toy-child', an ancestor (parent of 'toy-grandchild'), has it\n"), err
    assert not os.path.exists(toy.db)
