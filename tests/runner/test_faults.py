"""Bad input and faults on the toy local deployment: every path leaves the serve file byte-identical."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.errors import BadInput, RunFailure
from runner_kit import run_hypothesis  # noqa: E402  (tests/runner is on sys.path)
from workbench.runner.execute import RunInterrupted
from workbench.store import open_store

from runner_kit import edit_profile, stopped_twice, store_rows  # noqa: E402  (tests/runner is on sys.path)


def _run(toy, **kw):
    kw.setdefault("show_progress", False)
    kw.setdefault("build_report", False)
    return run_hypothesis("toy-fix", db=toy.db, **kw)


def _runs(toy):
    with open_store(toy.db, read_only=True, held=True) as store:  # held: the check and the read share one open
        return store.runs()


def test_health_never_green_fails_runs_and_restores(toy):
    """A deployment that never turns healthy in any arm failed all the planned runs one by one, each after the full
    health wait. Once the first run of each arm has failed before its workload (and none got that far), the
    execution stops, failed, naming the first failure; the rest of the plan is not spent and the target is
    restored."""
    with pytest.raises(RunFailure) as ei:
        _run(toy, sets={"mode": "unhealthy"}, replicates=2)
    runs = sorted(_runs(toy), key=lambda r: r.id)
    assert [r.status for r in runs] == ["failed", "failed"]  # of 4 planned
    assert all("health never green after 4 attempts" in r.error for r in runs)
    msg = ei.value.message
    assert msg.startswith("stopped after 2 of 4 planned runs: the first run of each of its 2 arms failed before its "
                          "workload and no run got that far, so the rest would fail the same way; "
                          f"run {runs[0].id} ({runs[0].arm} r0) failed during its health stage: health never green "
                          "after 4 attempts"), msg
    assert f"wb runs show {runs[0].id}" in ei.value.hint, ei.value.hint
    assert store_rows(toy.db, "SELECT status FROM executions") == [("failed",)]
    assert toy.conf.read_bytes() == toy.original
    assert len(toy.restarts()) == 3  # one per run, and the restore's
    # The error names the restart it waited on and where that restart's output is kept.
    run = {"id": runs[0].id, "error": runs[0].error}
    assert "following restart[0] `" in run["error"] and "toy.py restart " in run["error"], run["error"]
    assert run["error"].endswith(f"run {run['id']}'s artifact restart.txt, listed by: wb runs show {run['id']}"), \
        run["error"]
    with open_store(toy.db, read_only=True) as store:
        kept = {a.name: a for a in store.run(run["id"]).artifacts}
    assert "restart" in kept, sorted(kept)
    text = Path(kept["restart"].path).read_text(encoding="utf-8")
    assert "toy restarted with mode=unhealthy" in text and "restart[0]" in text and "exit 0" in text


def test_an_arm_that_breaks_the_service_while_the_other_works_runs_its_whole_plan(toy):
    """The treatment's config keeps the service from turning healthy while the control's does not: evidence about
    the arm, not a broken deployment. Every planned run is made, as before."""
    edit_profile(toy.root, "mode={{ mode }}", "mode={{ 'unhealthy' if fix == 'on' else mode }}")
    s = _run(toy, replicates=2)
    by_arm = {arm: sorted(r["status"] for r in s["runs"] if r["arm"] == arm) for arm in ("control", "treatment")}
    assert by_arm == {"control": ["ok", "ok"], "treatment": ["failed", "failed"]}, by_arm
    assert toy.conf.read_bytes() == toy.original


def test_a_restart_that_brings_nothing_up_says_so_in_the_first_failure(toy):
    """A restart that exits 0 but starts nothing (a profile's restart that never starts the service): each run
    failed "health never green ... (URL -> no answer) following restart[0] `...`", leaving the user to open
    restart.txt to learn how the restart ended. The failure says it plainly, with the restart's exit and output."""
    edit_profile(toy.root, 'restart: ["{{ python }} ', 'restart: ["echo no unit named serve >&2; true", "true; #')
    edit_profile(toy.root, 'health: {urls: ["http://127.0.0.1:{{ port }}/health"], attempts: 4',
                 'health: {urls: ["http://127.0.0.1:1/health"], attempts: 2')
    s = _run(toy, replicates=1)
    err = s["runs"][0]["error"]
    assert "nothing answered: the restart did not bring the service up" in err, err
    assert "restart[0] `echo no unit named serve >&2; true` (exited 0: no unit named serve)" in err, err
    assert "restart[1] `true; #" in err and "(exited 0, printing nothing)" in err, err
    assert toy.conf.read_bytes() == toy.original


def test_workload_timeout_kills_and_restores(toy):
    t0 = time.monotonic()
    s = _run(toy, sets={"mode": "slow"}, replicates=1)
    assert time.monotonic() - t0 < 25  # the workload sleeps 30 s; its timeout is 3 s
    assert all("workload timed out after 3 s" in r["error"] for r in s["runs"])
    out = subprocess.run(["pgrep", "-f", f"{toy.state}/toy.py work"], capture_output=True, text=True)
    assert out.stdout.strip() == ""  # killed, not orphaned
    assert toy.conf.read_bytes() == toy.original


def test_extractor_matching_nothing_is_invalid_with_excerpt(toy):
    # wall_s becomes a predicted metric: one nothing reads would fail soft (tests/examples).
    hyp = toy.root / "hypotheses.yaml"
    hyp.write_text(hyp.read_text().replace(
        "    requires:\n", "      - {metric: wall_s, arm: treatment, at_most: 100}\n    requires:\n", 1))
    s = _run(toy, sets={"mode": "noextract"}, replicates=1)
    assert {r["status"] for r in s["runs"]} == {"invalid"}
    err = s["runs"][0]["error"]
    assert "matched nothing" in err and "nothing useful here" in err
    assert toy.conf.read_bytes() == toy.original


def test_unknown_template_name_is_bad_input_before_the_target(toy):
    edit_profile(toy.root, "mode={{ mode }}", "mode={{ mode }}\n        x={{ nosuch }}")
    with pytest.raises(BadInput) as ei:
        _run(toy)
    assert "nosuch" in ei.value.message
    assert toy.restarts() == [] and toy.conf.read_bytes() == toy.original
    assert not os.path.exists(toy.db)


def test_config_check_rejection_is_bad_input_before_the_target(toy):
    edit_profile(toy.root, "mode={{ mode }}", "mode={{ mode }}\n        if then (")
    with pytest.raises(BadInput) as ei:
        _run(toy)
    assert "bash -n" in ei.value.message
    assert toy.restarts() == [] and toy.conf.read_bytes() == toy.original


def test_bad_set_is_bad_input(toy):
    with pytest.raises(BadInput):
        _run(toy, sets={"nosuch": "1"})
    with pytest.raises(BadInput):
        _run(toy, sets={"fix": "on"})  # the isolated variable
    with pytest.raises(BadInput):
        _run(toy, target="nosuch")
    assert toy.restarts() == []


STAGES = ["render", "check", "apply", "restart", "health", "workload", "collect"]


class Bug(Exception):
    """An error wb does not know: it must reach the caller unchanged, with its traceback."""


def raise_at(stage: str):
    async def fault(st, pr):
        if st == stage:
            raise Bug(f"bug at stage {stage}")
    return fault


def sigterm_at(stage: str):
    async def fault(st, pr):
        if st == stage:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(5)  # the handler cancels this task before the sleep ends
    return fault


@pytest.mark.parametrize("stage", STAGES)
def test_exception_at_every_stage_restores_and_keeps_its_traceback(toy, stage):
    with pytest.raises(Bug) as ei:
        _run(toy, replicates=1, fault=raise_at(stage))
    assert ei.traceback[-1].name == "fault"  # raised where it happened, not re-wrapped
    assert toy.conf.read_bytes() == toy.original
    assert _runs(toy)[0].status == "failed"
    with open_store(toy.db, read_only=True) as store:
        (ex,) = store.executions()
    assert ex.status == "failed" and f"Bug: bug at stage {stage}" in (ex.error or "")


@pytest.mark.parametrize("stage", STAGES)
def test_sigterm_at_every_stage_restores_and_resumes(toy, stage):
    with pytest.raises(RunInterrupted) as ei:
        _run(toy, replicates=1, seed=3, fault=sigterm_at(stage))
    assert "--resume" in (ei.value.hint or "")
    assert toy.conf.read_bytes() == toy.original
    runs = _runs(toy)
    assert [r.status for r in runs] == ["interrupted"]
    s = _run(toy, resume=True)
    assert toy.conf.read_bytes() == toy.original
    assert [r["status"] for r in s["runs"]] == ["interrupted", "ok", "ok"]
    assert sorted(r["order_index"] for r in s["runs"] if r["status"] == "ok") == [0, 1]


def test_failed_restore_is_loud_with_the_exact_manual_commands(toy):
    """The config path turns into a folder mid-run: the restore cannot write, and says how to do it by hand."""
    import shutil

    async def fault(stage, pr):
        if stage == "collect":
            toy.conf.unlink()
            toy.conf.mkdir()

    from workbench.errors import RestoreFailed

    with pytest.raises(RestoreFailed) as ei:
        _run(toy, replicates=1, fault=fault)
    assert "RESTORE FAILED" in ei.value.message and str(toy.conf) in ei.value.message
    hint = ei.value.hint or ""
    copy_line = next(line for line in hint.splitlines() if line.strip().startswith("cp "))
    assert "toy.py restart" in hint
    # The printed command really restores the original once the obstacle is gone.
    shutil.rmtree(toy.conf)
    subprocess.run(copy_line.strip(), shell=True, check=True)
    assert toy.conf.read_bytes() == toy.original


def test_after_a_failed_restore_the_next_run_says_so_and_waits_for_the_original(toy):
    """The restore failed and the config still held an arm's: the lock was released, so the next run took that
    arm's config for the original and 'restored' it after every run from then on; a lock left otherwise said
    the runner 'died before restoring it', though it had run its restore and said why it failed. The lock is now
    left marked: the next run is refused naming the failed restore and the copy that puts the original back,
    and once that is done the run after takes the target over."""
    import shutil

    from typer.testing import CliRunner

    from workbench.cli.main import app
    from workbench.errors import RestoreFailed

    async def fault(stage, pr):
        if stage == "collect" and not toy.conf.is_dir():
            toy.conf.unlink()
            toy.conf.mkdir()

    with pytest.raises(RestoreFailed):
        _run(toy, replicates=1, fault=fault)
    shutil.rmtree(toy.conf)
    toy.conf.write_text("fix=on\nmode=ok\n")  # an arm's config, as a failed restore may leave it
    restarts = len(toy.restarts())
    res = CliRunner().invoke(app, ["hypothesis", "run", "toy-fix", "--db", toy.db, "--replicates", "1"])
    assert res.exit_code == 2, res.output
    assert "whose restore failed" in res.output and "died" not in res.output, res.output
    assert toy.conf.read_text() == "fix=on\nmode=ok\n" and len(toy.restarts()) == restarts  # untouched
    hint = res.output[res.output.index("Hint: "):]
    copy = next(line.strip() for line in hint.splitlines() if line.strip().startswith("cp "))  # a line of its own
    subprocess.run(copy, shell=True, check=True)
    s = _run(toy, replicates=1)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"]
    assert toy.conf.read_bytes() == toy.original


def test_the_printed_restore_commands_carry_the_profiles_env_and_reference_secrets_by_name(toy):
    """The restart wb runs in a restore gets the profile's env; the printed one had none of it, and a secret in a
    command (a secret variable) was printed masked, a bare <redacted> that the shell read as a redirection. The
    printed commands now pass the env, a secret as a reference ("$SERVICE_API_TOKEN", "$db_password") to a
    variable the hint asks the user to set, so pasted as they are they restore the target."""
    import shutil

    from workbench import secrets
    from workbench.errors import RestoreFailed

    password = "pw with 'quote' & $sign"
    (toy.state / "token").write_text("s3cret-value")
    (toy.state / "pw").write_text(password)
    edit_profile(toy.root, "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n",
                 "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n"
                 "  db_password: {secret: true, default: changeme}\n")
    edit_profile(toy.root, 'env: {SERVICE_API_TOKEN: "s3cret-value"}',
                 'env: {SERVICE_API_TOKEN: "s3cret-value", TOY_LEVEL: "two words; it\'s"}')
    edit_profile(toy.root, 'restart: ["{{ python }} ',
                 'restart: [\'test "$SERVICE_API_TOKEN" = "$(cat {{ state }}/token)" && test "$TOY_LEVEL" = '
                 '"two words; it\'\'s" && test {{ db_password }} = "$(cat {{ state }}/pw)" && {{ python }} ')
    edit_profile(toy.root, 'toy.py restart {{ state }}"]', "toy.py restart {{ state }}']")

    async def fault(stage, pr):
        if stage == "collect" and not toy.conf.is_dir():
            toy.conf.unlink()
            toy.conf.mkdir()

    with pytest.raises(RestoreFailed) as ei:
        _run(toy, replicates=1, fault=fault, sets={"db_password": password})
    hint = ei.value.hint or ""
    assert "s3cret-value" not in hint and password not in hint and secrets.MASK not in hint, hint
    assert secrets.redact_text(hint) == hint, hint  # printed through the CLI's redaction unchanged
    first, *commands = hint.strip().splitlines()
    assert "SERVICE_API_TOKEN" in first and "db_password" in first, first
    shutil.rmtree(toy.conf)
    restarts = len(toy.restarts())
    env = {**os.environ, "SERVICE_API_TOKEN": "s3cret-value", "db_password": password}
    env.pop("TOY_LEVEL", None)
    for line in commands:
        subprocess.run(line, shell=True, check=True, env=env, executable="/bin/bash")
    assert toy.conf.read_bytes() == toy.original
    assert len(toy.restarts()) == restarts + 1


def test_a_restart_that_fails_after_the_original_is_back_says_the_file_is_back(toy):
    """The restore wrote the original back and read it back; then the restart failed (a port still taken,
    with a traceback). It used to say "RESTORE FAILED ... may still hold an arm's config ... (the original
    config was put back first)", and the traceback's lines became the hint."""
    from runner_kit import edit_profile

    from workbench.errors import RestoreFailed

    edit_profile(toy.root, 'restart: ["{{ python }} ', 'restart: ["grep -q operator {{ state }}/serve.conf && '
                 "{ printf \\\"Traceback (most recent call last):\\\\n"
                 "  self.server_bind()\\\\nOSError: in use\\\\n\\\" >&2; "
                 'exit 1; }; {{ python }} ')
    with pytest.raises(RestoreFailed) as ei:
        _run(toy, replicates=1)
    assert toy.conf.read_bytes() == toy.original
    message, hint = ei.value.message, ei.value.hint or ""
    assert "\n" not in message, message
    assert message.startswith("RESTORE INCOMPLETE") and "holds the original config again" in message, message
    assert "may still hold" not in message and "OSError: in use" in message, message
    lines = hint.splitlines()  # printed as "Hint: restart ...", not "Hint:   restart ..."
    assert lines[0].startswith("restart the service by hand now") and lines[0].endswith(":"), hint
    # The original is back: only the restart is left to do (a copy of it listed too read as if the file was not).
    assert len(lines) == 2 and "toy.py restart" in lines[1], hint
    assert not any(line.startswith("cp ") for line in lines), hint


def test_a_signal_does_not_wait_out_the_health_check_after_the_restore(toy):
    """After SIGTERM the config is written back and the service restarted; the runner then used to poll the
    health URL for its whole budget (here 400 x 0.25 s) before exiting, long past a supervisor's SIGKILL."""
    from runner_kit import edit_profile

    edit_profile(toy.root, 'health: {urls: ["http://127.0.0.1:{{ port }}/health"], attempts: 4, interval_s: 0.05',
                 'health: {urls: ["http://127.0.0.1:1/health"], attempts: 400, interval_s: 0.25')
    env = dict(os.environ, WB_ROOT=str(toy.root))
    proc = subprocess.Popen([sys.executable, "-m", "workbench.cli.main", "hypothesis", "run", "toy-fix",
                             "--db", toy.db, "--replicates", "1"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not toy.restarts():
        time.sleep(0.02)
    time.sleep(0.5)  # inside the first run's health wait
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)  # the health budget alone is 100 s
    assert proc.returncode == 143, err[-1500:]
    assert toy.conf.read_bytes() == toy.original
    assert "not waiting for" in err and "health" in err, err[-1500:]
    # A signal through the CLI exits 128 + it (a Ctrl-C's 130: test_run_json's interrupted run), restored, and says
    # how to resume: the hint names the store (it named none: run as printed it read the default store, with
    # nothing to resume in it).
    assert "--resume" in err and "Traceback" not in err, err[-1500:]
    hint = next(line for line in err.splitlines() if line.startswith("Hint: continue with: "))
    assert f"--db {toy.db}" in hint, hint


def test_a_stop_signal_during_the_restore_does_not_cut_it_short(toy, monkeypatch):
    """Every run ended and the restore began; a SIGTERM then cancelled the loop's task inside the restore: the last
    arm's config stayed in the file, the service was never restarted on the original, and the stop said "the target
    was restored". The restore now runs to its end (not waiting for health, as after any stop), then the stop is
    told: exit 143, the original back, restarted once more."""
    import workbench.runner.execute as execute_mod

    real = execute_mod._restore

    async def signalled_first(state, *args):
        signal.raise_signal(signal.SIGTERM)
        while not state.stopping:  # until the loop's handler has taken it
            await asyncio.sleep(0)
        await real(state, *args)

    monkeypatch.setattr(execute_mod, "_restore", signalled_first)
    with pytest.raises(RunInterrupted) as ei:
        _run(toy, replicates=1)
    assert toy.conf.read_bytes() == toy.original
    assert len(toy.restarts()) == 3  # one per run, and the restore's
    assert ei.value.exit_code == 143 and "the target was restored" in ei.value.message, ei.value.message


def test_a_bad_units_file_is_shown_under_its_own_name(toy):
    """What is shown under the error is the units file's line, labelled with its path, not "output excerpt"."""
    (toy.state / "bad-units.jsonl").write_text('{"session": 0, "outcome": "done"}\nsession 1: done\n')
    edit_profile(toy.root, 'units: {path: "{{ units_path }}"}', 'units: {path: "{{ state }}/bad-units.jsonl"}')
    s = _run(toy, replicates=1)
    assert {r["status"] for r in s["runs"]} == {"invalid"}
    err = s["runs"][0]["error"]
    assert f"units file {toy.state}/bad-units.jsonl line 2 is not JSON" in err, err
    assert f"\n--- units file {toy.state}/bad-units.jsonl, line 2 ---\nsession 1: done" in err, err
    assert "output excerpt" not in err
    assert toy.conf.read_bytes() == toy.original


def test_ctrl_c_while_the_verdict_is_recorded_waits_for_it(toy, monkeypatch):
    """A Ctrl-C in the moment between the last run and the verdict ended wb with "Interrupted." and no verdict
    (the status stayed open). The signal is held while the verdict is recorded, then delivered."""
    import workbench.analysis.stored as stored

    real = stored.analyze_stored

    def ctrl_c_then_analyze(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # arrives now; delivered when the verdict is recorded
        time.sleep(0.2)
        return real(*args, **kwargs)

    monkeypatch.setattr(stored, "analyze_stored", ctrl_c_then_analyze)
    with pytest.raises(KeyboardInterrupt):
        _run(toy, replicates=1)
    with open_store(toy.db, read_only=True) as store:
        assert [v.hypothesis_id for v in store.verdicts()] == ["toy-fix"]
    assert toy.conf.read_bytes() == toy.original


def test_ctrl_c_between_isolate_probes_says_how_to_resume(toy, monkeypatch):
    """A Ctrl-C between two probes of `wb isolate` (or one reaching a query of the store) printed
    "Interrupted." or a traceback, and no command to resume the search."""
    from typer.testing import CliRunner

    from workbench.cli.main import app
    from workbench.isolate.adapter import RunnerOracle

    search = ["isolate", "--experiment", "toy", "--good", "fix=on", "--bad", "fix=off", "--metric", "corruption_rate",
              "--region", ">= 0.1", "--seed", "4", "--db", toy.db]
    real = RunnerOracle._look

    def interrupted(self, *args, **kwargs):
        raise RuntimeError("Query interrupted")  # what DuckDB raises when Ctrl-C reaches one of its queries

    monkeypatch.setattr(RunnerOracle, "_look", interrupted)
    res = CliRunner().invoke(app, search)
    assert res.exit_code == 130, res.output
    assert "Error: the search was interrupted" in res.stderr and "Traceback" not in res.output
    assert "--resume" in res.stderr.split("Hint:", 1)[1] and f"--db {toy.db}" in res.stderr
    assert toy.conf.read_bytes() == toy.original
    monkeypatch.setattr(RunnerOracle, "_look", real)
    res = CliRunner().invoke(app, [*search, "--resume", "--json"])
    assert res.exit_code == 0, res.output
    import json

    assert json.loads(res.stdout)["result"]["minimal"] == ["fix"]


@pytest.mark.parametrize("old, new, field", [
    ("http://127.0.0.1:{{ port }}/health", "http://127.0.0.1:9{{ port }}9/health", "health.urls"),
    ("    units: {path:",
     '    verify: {url: "127.0.0.1:{{ port }}/config", contains: ["fix={{ fix }}"]}\n    units: {path:',
     "verify.url"),
])
def test_a_health_or_verify_url_that_cannot_be_asked_is_bad_input_at_its_line(toy, cli, old, new, field):
    """A port out of range (a typo such as :118080) was found only at the target: the run failed in its restart
    stage with "ValueError: Port out of range 0-65535" and the restore's health wait ended in a traceback."""
    edit_profile(toy.root, old, new)
    code, _, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--db", toy.db)
    assert code == 2, err
    assert "Traceback" not in err
    line = next(x for x in err.splitlines() if x.startswith("Error:"))
    assert f"toy.yaml:" in line and f"(field profiles.local.{field}" in line, line
    assert toy.restarts() == [] and toy.conf.read_bytes() == toy.original
    assert not os.path.exists(toy.db)


def test_a_restore_that_hangs_is_abandoned_by_stopping_it_again_and_a_resume_restores(toy, monkeypatch):
    """Since a stop no longer cuts the restore short, nothing did: a restore that hung (a restart that never
    returns) could only be ended by SIGKILL. A second stop during the restore now abandons it, as a kill would
    leave it: the lock and the saved original are kept, the stop says the target was not restored and how to
    restore it, and that resume does."""
    import workbench.runner.execute as execute_mod
    from workbench.runner.targets.base import config_lock_file

    real = execute_mod._restore
    monkeypatch.setattr(execute_mod, "ABANDON_GRACE_S", 0.0)  # the restore is "hung" from its first moment

    async def hangs(state, *args):
        signal.raise_signal(signal.SIGTERM)  # the first stop: the restore goes on
        while not state.stopping:
            await asyncio.sleep(0)
        signal.raise_signal(signal.SIGTERM)  # the second: it is abandoned
        await asyncio.sleep(20)  # the restore's hang, cut short by the abandonment
        await real(state, *args)

    monkeypatch.setattr(execute_mod, "_restore", hangs)
    with pytest.raises(RunInterrupted) as ei:
        _run(toy, replicates=1)
    msg = ei.value.message
    assert ei.value.exit_code == 143 and "the target was not restored: its restore was abandoned" in msg, msg
    assert "continuing: wb hypothesis run toy-fix --resume" in ei.value.hint, ei.value.hint
    assert toy.conf.read_bytes() != toy.original and os.path.exists(config_lock_file(str(toy.conf)))
    assert store_rows(toy.db, "SELECT status, error FROM executions") == [
        ("interrupted", "interrupted; the restore was abandoned: the target may still hold an arm's config")]
    monkeypatch.setattr(execute_mod, "_restore", real)
    _run(toy, resume=True)
    assert toy.conf.read_bytes() == toy.original and not os.path.exists(config_lock_file(str(toy.conf)))


def test_a_host_that_never_comes_up_does_not_stop_another_host_that_does(toy):
    """Hosts run their blocks side by side. One host's block failed its health check in both arms while the other
    host's first run was still in its workload, and the execution stopped as if the deployment came up nowhere,
    cutting the working host's run short. That host's runs are now waited for: its runs are made, the broken
    host's fail, and the execution ends as any with failed runs."""
    from workbench.runner.outcome import StageFailed

    _two_hosts(toy)

    async def fault(stage, pr):
        if pr.host == "h1" and stage == "health":
            raise StageFailed("failed", "health never green (h1 is broken)")
        if pr.host == "h2" and stage == "workload":
            while sum(getattr(t.get_coro(), "__name__", "") == "_run_block" for t in asyncio.all_tasks()) > 1:
                await asyncio.sleep(0.01)  # until h1's block has ended

    s = _run(toy, replicates=2, seed=9, fault=fault)
    by_host = {h: sorted(r["status"] for r in s["runs"] if r["host"] == h) for h in ("h1", "h2")}
    assert by_host == {"h1": ["failed", "failed"], "h2": ["ok", "ok"]}, by_host
    for h in ("h1", "h2"):
        assert (toy.state / h / "serve.conf").read_bytes() == f"# {h}'s own file\nfix=off\nmode=ok\n".encode()


def test_a_deployment_that_comes_up_on_no_host_stops_once_every_host_failed_every_arm(toy):
    """The stop of a deployment that comes up nowhere still holds with several hosts, once each has failed each arm."""
    from workbench.runner.outcome import StageFailed

    _two_hosts(toy)

    async def fault(stage, pr):
        if stage == "health":
            raise StageFailed("failed", f"health never green ({pr.host} is broken)")

    with pytest.raises(RunFailure) as ei:
        _run(toy, replicates=4, seed=9, fault=fault)
    assert ei.value.message.startswith("stopped after 4 of 8 planned runs: the first run of each of its 2 arms on "
                                       "each of its 2 hosts failed before its workload"), ei.value.message
    assert sorted(r.host for r in _runs(toy)) == ["h1", "h1", "h2", "h2"]


def _two_hosts(toy) -> None:
    """The toy on two local hosts, h1 and h2, each with its own config file and state."""
    edit_profile(toy.root, "target: {kind: local}", "target: {kind: local, hosts: [h1, h2]}")
    edit_profile(toy.root, 'path: "{{ state }}/serve.conf"', 'path: "{{ state }}/{{ host }}/serve.conf"')
    edit_profile(toy.root, "TOY restart {{ state }}".replace("TOY", str(toy.state / "toy.py")),
                 f"{toy.state / 'toy.py'} restart {{{{ state }}}}/{{{{ host }}}}")
    edit_profile(toy.root, "TOY work {{ state }}".replace("TOY", str(toy.state / "toy.py")),
                 f"{toy.state / 'toy.py'} work {{{{ state }}}}/{{{{ host }}}}")
    edit_profile(toy.root, 'command: "cat {{ state }}/aborts.txt"', 'command: "cat {{ state }}/{{ host }}/aborts.txt"')
    for h in ("h1", "h2"):
        (toy.state / h).mkdir()
        (toy.state / h / "serve.conf").write_bytes(f"# {h}'s own file\nfix=off\nmode=ok\n".encode())


def test_a_teardown_abandoned_after_the_restore_keeps_the_saved_original_its_lock_needs(toy, monkeypatch):
    """Abandoned in the teardown (the restore done, the lock kept as a kill leaves it), the runner still removed
    the saved original, which is what lets a later run take that lock over: the next run was refused ("its saved
    original is not in ..."). The saved original now stays with the lock, and the next run takes the lock over."""
    import workbench.runner.execute as execute_mod
    from workbench.runner.targets.base import config_lock_file

    real = execute_mod._teardown
    monkeypatch.setattr(execute_mod, "ABANDON_GRACE_S", 0.0)  # the teardown is "hung" from its first moment

    async def hangs(state, *args):
        for _ in range(2):  # a stop, then the one that abandons
            signal.raise_signal(signal.SIGTERM)
            while not state.stopping:
                await asyncio.sleep(0)
        await asyncio.sleep(20)  # the teardown's hang, cut short by the abandonment
        await real(state, *args)

    monkeypatch.setattr(execute_mod, "_teardown", hangs)
    with pytest.raises(RunInterrupted) as ei:
        _run(toy, replicates=1)
    assert "its restore was abandoned" in ei.value.message, ei.value.message
    assert os.path.exists(config_lock_file(str(toy.conf)))
    assert list((toy.root / ".wb" / "artifacts").glob("execution-*/snapshot.json")), "the saved original is gone"
    lock = config_lock_file(str(toy.conf))
    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()
    held = json.loads(Path(lock).read_text())
    Path(lock).write_text(json.dumps({**held, "pid": gone.pid, "pid_start": None}) + "\n")  # its runner ended
    monkeypatch.setattr(execute_mod, "_teardown", real)
    s = _run(toy, replicates=1)
    assert [r["status"] for r in s["runs"]] == ["ok", "ok"]
    assert toy.conf.read_bytes() == toy.original and not os.path.exists(config_lock_file(str(toy.conf)))


def test_a_second_stop_while_the_target_is_taken_abandons_the_taking(toy, monkeypatch):
    """A stop does not cut taking the target short (its lock, the saved original); one that hung there (a lock or a
    config read over ssh that never returns) ignored every later stop as well: only SIGKILL ended it. A second stop
    now abandons the taking, as a kill would leave it: the config unchanged, the lock maybe left, and the stop says
    so, how to free the lock, and records the execution interrupted; the resume it names then runs."""
    import workbench.runner.execute as execute_mod
    import workbench.runner.takeover as takeover_mod
    from workbench.runner.targets.base import config_lock_file

    monkeypatch.setattr(execute_mod, "ABANDON_GRACE_S", 0.0)

    async def hang(*args, **kw):
        await asyncio.sleep(5)  # cut short by the abandonment; without it the taking went on past this
        raise AssertionError("the taking was not abandoned")

    real = takeover_mod.take_snapshots
    monkeypatch.setattr(takeover_mod, "take_snapshots", stopped_twice(hang))
    with pytest.raises(RunInterrupted) as ei:
        _run(toy, replicates=1)
    msg, hint, lock = ei.value.message, ei.value.hint or "", config_lock_file(str(toy.conf))
    assert ei.value.exit_code == 143, msg
    assert msg.startswith("interrupted after 0 of 2 runs") and "taking it was abandoned" in msg, msg
    assert "its config was not changed" in msg and f"its lock {lock} on local may still be held" in msg, msg
    assert "continue with: wb hypothesis run toy-fix --resume" in hint and f"remove {lock} on local" in hint, hint
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == [] and os.path.exists(lock)
    [(status, error)] = store_rows(toy.db, "SELECT status, error FROM executions")
    assert status == "interrupted" and "taking the target was abandoned" in error, error
    monkeypatch.setattr(takeover_mod, "take_snapshots", real)
    assert [r["status"] for r in _run(toy, resume=True)["runs"]] == ["ok", "ok"]
    assert toy.conf.read_bytes() == toy.original and not os.path.exists(lock)


def test_a_double_stop_as_the_restore_begins_does_not_abandon_it(toy, monkeypatch, capfd):
    """Two stops at once as the restore began (a key's bounce, an impatient double Ctrl-C) abandoned it, leaving the
    last arm's config in place. A stop abandons the restore only once it has run `ABANDON_GRACE_S`; before that it
    is told that the restore goes on, and it does."""
    import workbench.runner.execute as execute_mod

    monkeypatch.setattr(execute_mod, "ABANDON_GRACE_S", 600.0)  # far beyond this restore on a loaded machine
    monkeypatch.setattr(execute_mod, "_restore", stopped_twice(execute_mod._restore))
    with pytest.raises(RunInterrupted) as ei:
        _run(toy, replicates=1, show_progress=True)
    assert ei.value.exit_code == 143 and "the target was restored" in ei.value.message, ei.value.message
    assert toy.conf.read_bytes() == toy.original and len(toy.restarts()) == 3  # one per run, and the restore's
    said = [line for line in capfd.readouterr().err.splitlines() if "restor" in line]
    told = [re.fullmatch(r"still restoring the target: stop again in (\d+\.\d) s or later to abandon the restore "
                         r"\(the target may then keep an arm's config\)", line) for line in said]
    assert [0 < float(m[1]) <= 600 for m in told if m] == [True, True], said  # when a stop will abandon it
    assert not any("abandoning" in line for line in said), said


class _FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _handler(clock: _FakeClock):
    """The loop's stop handler (`_OnStop`) with no task, a state that records what it says, and `clock`."""
    from types import SimpleNamespace

    from workbench.runner.execute import _OnStop

    said: list[str] = []
    state = SimpleNamespace(stopping=False, abandoned=None, untouched=True, resumed=False,
                            progress=SimpleNamespace(log=said.append))
    return _OnStop(state, None, clock=clock), state, said


@pytest.mark.parametrize("phase", ["winding down", "taking"])
def test_a_stop_before_the_grace_is_told_when_one_abandons_and_one_then_does(phase):
    """A stop as the restore ran was told "stop again to abandon the restore"; one 0.7 s later printed the same line
    and did not abandon (a second stop abandons only once the phase has run `ABANDON_GRACE_S`). The line now says
    in how long a stop abandons it, and a stop at that time does."""
    from workbench.runner.execute import ABANDON_GRACE_S

    clock = _FakeClock()
    on_stop, state, said = _handler(clock)
    on_stop.enter(phase)
    what = "restoring the target" if phase == "winding down" else "taking the target"
    clock.now += 0.5
    on_stop(signal.SIGINT)
    clock.now += 0.7
    on_stop(signal.SIGINT)
    wait = ABANDON_GRACE_S - 1.2
    assert said[-1].startswith(f"still {what}: stop again in {wait:.1f} s or later to abandon "), said
    assert state.abandoned is None
    clock.now += wait
    on_stop(signal.SIGINT)
    assert state.abandoned == ("restore" if phase == "winding down" else "taking"), said
    assert said[-1].startswith("abandoning the "), said


def test_a_stop_once_the_grace_has_run_is_told_plainly_that_the_next_abandons():
    clock = _FakeClock()
    on_stop, state, said = _handler(clock)
    on_stop.enter("winding down")
    clock.now += 10
    on_stop(signal.SIGINT)
    assert said == ["still restoring the target: stop again to abandon the restore (the target may then keep an "
                    "arm's config)"], said
    on_stop(signal.SIGINT)
    assert state.abandoned == "restore", said


def test_a_restore_failed_on_one_host_and_abandoned_on_another_says_both(toy, monkeypatch):
    """h1's restore failed (its commands to restore it by hand said), then h2's hung and a second stop abandoned it:
    the stop said only that the restore was abandoned, and h1's failure and its commands were lost to the user and
    to the record. Each now reaches both, the commands whole."""
    import workbench.runner.execute as execute_mod
    from workbench.errors import RestoreFailed

    _two_hosts(toy)
    monkeypatch.setattr(execute_mod, "ABANDON_GRACE_S", 0.0)

    async def hang(*args, **kw):
        await asyncio.sleep(5)  # cut short by the abandonment
        raise AssertionError("the restore was not abandoned")

    hangs = stopped_twice(hang)

    async def restore_host(target, snap, *args, **kw):
        if snap.host == "h1":
            raise RestoreFailed("RESTORE FAILED on h1: the disk is full", hint="restore it by hand now:\ncp A B")
        await hangs()

    monkeypatch.setattr(execute_mod, "restore_host", restore_host)
    with pytest.raises(RunInterrupted) as ei:
        _run(toy, replicates=1, seed=9)
    msg, hint = ei.value.message, ei.value.hint or ""
    assert ei.value.exit_code == 143 and "the target was not restored: its restore was abandoned" in msg, msg
    assert "RESTORE FAILED on h1: the disk is full\n  restore it by hand now:\ncp A B\n" in hint, hint
    assert "restore it by continuing: wb hypothesis run toy-fix --resume" in hint, hint
    [(status, error)] = store_rows(toy.db, "SELECT status, error FROM executions")
    assert status == "interrupted", status
    abandoned = "interrupted; the restore was abandoned: the target may still hold an arm's config\n"
    assert error.startswith(abandoned), error
    assert error.endswith("RESTORE FAILED on h1: the disk is full\n  restore it by hand now:\ncp A B"), error


def test_two_hosts_whose_restores_both_fail_are_told_each_with_its_own_hint(tmp_path, capsys, monkeypatch):
    """Both hosts' restores failed (none abandoned): the error was the first host's message with every line after
    it for a hint, so h2's "RESTORE FAILED" line and its commands read as part of h1's `Hint:`. Each failure is now
    its own `Error:` line with its own `Hint:` (the commands that restore that host), in --json too, and the record
    keeps both blocks."""
    from workbench.cli._common import _report
    from workbench.cli._envelope import error_of
    from workbench.errors import RestoreFailed
    from workbench.runner.restore import Snapshot, restore_host, restores_failed
    from workbench.runner.targets.local import LocalTarget

    target, failures = LocalTarget(["h1", "h2"]), []
    for host in ("h1", "h2"):
        (tmp_path / host).write_text("a file where the config's folder should be\n")
        snap = Snapshot(host, str(tmp_path / host / "serve.conf"), b"fix=off\n", 0o644, tmp_path / f"{host}.orig")
        with pytest.raises(RestoreFailed) as ei:
            asyncio.run(restore_host(target, snap, [f"echo restart {host}"], env=None, restart_timeout=5))
        failures.append(ei.value)
    error = restores_failed(failures)
    error.hint = "the search resumes with: wb isolate --resume"  # a caller's own, as `wb isolate` adds it
    _report(error)
    err = capsys.readouterr().err
    assert err.endswith("\nHint: the search resumes with: wb isolate --resume\n") and err.count("resumes") == 1, err
    blocks = err.rsplit("\nHint: the search", 1)[0].split("Error: ")[1:]
    assert len(blocks) == 2, err
    for host, block in zip(("h1", "h2"), blocks):
        message, hint = block.split("\nHint: ")
        assert message.startswith(f"RESTORE FAILED on {host}: {tmp_path / host / 'serve.conf'} may still hold"), err
        assert hint.startswith("restore it by hand now:\n") and f"{host}.orig" in hint, err
        assert f"echo restart {host}" in hint and "RESTORE FAILED" not in hint, err
    assert [p["message"].split(":")[0] for p in error_of(error, 1)["problems"]] == [
        "RESTORE FAILED on h1", "RESTORE FAILED on h2"]
    assert error.record().count("RESTORE FAILED") == 2 and error.record().startswith("RESTORE FAILED on h1"), error
    import workbench.cli._common as common

    monkeypatch.setattr(common, "_stderr_width", lambda: 80)  # stderr an 80-column terminal
    _report(error)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith(("Error:", "Hint:"))] == ["Error", "Hint"] * 2 + \
        ["Hint"], lines
    # Prose between words at 80 columns (a path longer than a line runs on); the commands to paste kept whole.
    assert all(len(line) <= 80 or " " not in line.strip() or line.startswith(("cp ", "echo "))
               for line in lines), lines
    assert any(line.startswith("  ") for line in lines), lines


def test_a_pdsim_that_would_not_stop_is_said_with_the_restore_and_recorded(tmp_path, monkeypatch):
    """wb started pdsim for the execution and its `wb sim down` failed: only a progress warning said so, and the
    record read as if the deployment had been stopped. It is now a note of what the end left (`State.left`): on the
    restore line and in the execution's recorded error (`_close` writes `left`). The stop fails as a real command
    does: `wb sim down` in the place of a shell command that exits 1."""
    import workbench.runner.execute as execute_mod
    import workbench.runner.targets.sim as sim_mod
    from workbench.runner.progress import RunProgress

    monkeypatch.setattr(sim_mod, "wb_command", lambda: "echo 'the pdsim servers did not exit' >&2; exit 1; :")
    target = sim_mod.SimTarget(sim_dir=tmp_path / "sim", options={})
    target.started_here = True  # as `setup` leaves it when it started pdsim
    state = execute_mod.State(prepared=None, store=None, execution_id=1, plan=None, done=set(), exec_dir=tmp_path,
                              artifacts_root=tmp_path, progress=RunProgress(0, enabled=False, title="t"))
    state.restore_notes.append("…/serve.sh removed (it did not exist before)")
    asyncio.run(execute_mod._teardown(state, target))
    [left] = state.left
    assert left.startswith("pdsim was NOT stopped (`echo 'the pdsim servers did not exit' >&2; exit 1; : sim down "
                           f"--dir {tmp_path / 'sim'}` failed: the pdsim servers did not exit): it may still be "
                           "running, though it was down before the execution"), left
    assert execute_mod._restore_line(state) == f"restored: …/serve.sh removed (it did not exist before); {left}"
