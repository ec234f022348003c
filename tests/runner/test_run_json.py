"""`wb hypothesis run --json` when the execution does not end well: the one envelope on stdout carries what was
recorded, "ok": false and the error; the `Error:` line stays on stderr and the exit code is unchanged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

WB = str(Path(sys.executable).with_name("wb"))


def test_failed_runs_give_the_result_with_ok_false_and_the_error(toy, cli) -> None:
    code, out, err = cli("hypothesis", "run", "toy-fix", "--set", "mode=fail", "--replicates", "1", "--seed", "3",
                         "--json", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 1, err
    doc = json.loads(out)
    assert doc["ok"] is False and doc["command"] == "hypothesis run"
    assert doc["execution_id"] == 1 and doc["seed"] == 3
    assert [r["status"] for r in doc["runs"]] == ["failed", "failed"]
    # the runs by their ids, and a command to paste at the end, not `wb runs show ID` to fill in
    message = ("2 of 2 planned runs did not finish ok, runs 1 and 2 (see their errors above); the first's whole "
               "record: wb runs show 1")
    assert doc["error"] == {"message": message, "hint": None, "where": None, "exit_code": 1, "kind": "RunFailure"}
    assert f"Error: {message}" in err


def _hang_second_run(toy) -> Path:
    """The toy's second workload announces itself (the marker returned) and waits to be stopped, bounded."""
    from runner_kit import edit_profile

    edit_profile(toy.root, 'units_path }}", timeout_s: 3}', 'units_path }}", timeout_s: 600}')
    toy_py = toy.state / "toy.py"
    marker = toy.state / "second-run-waiting"
    toy_py.write_text(toy_py.read_text().replace(
        '        mode = c.get("mode", "ok")\n',
        '        mode = c.get("mode", "ok")\n'
        '        count = state / "work-count"\n'
        '        n = int(count.read_text()) + 1 if count.exists() else 1\n'
        '        count.write_text(str(n))\n'
        '        if n == 2:\n'
        f'            Path({str(marker)!r}).write_text("waiting")\n'
        '            time.sleep(300)\n'))
    return marker


def _interrupt_at_second_run(toy, tmp_path: Path, *flags: str) -> tuple[int, str, str, str]:
    """`wb hypothesis run toy-fix` with stdout and stderr in files (no terminal), SIGINT while its second run
    works: (exit code, stdout, stderr as it stood before the signal, stderr at the end)."""
    marker = _hang_second_run(toy)
    out, err = tmp_path / "out", tmp_path / "err"
    env = {**os.environ, "WB_ROOT": str(toy.root)}
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen([WB, "hypothesis", "run", "toy-fix", "--replicates", "1", "--seed", "5",
                                 "--db", toy.db, *flags], stdout=o, stderr=e, env=env, cwd=toy.root)
        try:
            t0 = time.monotonic()
            while not marker.exists():
                assert proc.poll() is None, err.read_text()[-2000:]
                assert time.monotonic() - t0 < 240, "the second run never started"
                time.sleep(0.1)
            before = err.read_text()
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=240)
        finally:
            if proc.poll() is None:
                proc.kill()
    return code, out.read_text(), before, err.read_text()


def test_an_interrupted_run_with_json_prints_an_envelope_with_its_status_and_resume_command(toy, tmp_path) -> None:
    code, out, _, err = _interrupt_at_second_run(toy, tmp_path, "--json")
    assert code == 130, err[-2000:]
    doc = json.loads(out)
    assert (doc["ok"], doc["status"], doc["execution_id"], doc["seed"]) == (False, "interrupted", 1, 5), doc
    assert doc["resume"] == f"wb hypothesis run toy-fix --resume --db {toy.db} --root {toy.root.resolve()}"
    assert sorted(r["status"] for r in doc["runs"]) == ["interrupted", "ok"]
    assert sum(a["runs_ok"] for a in doc["arms"].values()) == 1
    assert doc["error"]["exit_code"] == 130 and doc["error"]["hint"] == f"continue with: {doc['resume']}"
    assert doc["error"]["message"].startswith("interrupted after 1 of 2 runs ok")


def test_the_arms_of_the_result_leave_out_a_per_replicate_variable(toy, cli) -> None:
    """A per-replicate variable (a workload seed) is drawn for every replicate; the result's arms gave it as its
    default ("wseed": "7"), a value no run used. They leave it out, as `hypothesis show` does; each run has its own."""
    from runner_kit import edit_profile, store_rows

    edit_profile(toy.root, "  mode: {values:",
                 "  wseed: {type: int, default: \"7\", per_replicate: true}\n  mode: {values:")
    edit_profile(toy.root, 'workload: {command: "', 'workload: {command: "echo seed={{ wseed }}; ')
    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--seed", "3", "--json",
                         "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 0, err
    doc = json.loads(out)
    assert all("wseed" not in arm["variables"] for arm in doc["arms"].values()), doc["arms"]
    assert doc["arms"]["control"]["variables"]["fix"] == "off"
    used = [json.loads(v)["wseed"] for (v,) in store_rows(toy.db, "SELECT variables_json FROM runs")]
    assert len(used) == 2 and "7" not in used, used


def test_ctrl_c_before_the_first_run_says_the_target_was_not_touched(toy, tmp_path) -> None:
    """Ctrl-C while the run was still being prepared (its config's local check working) printed only
    "Interrupted.": the user could not tell whether the target had been touched. It says nothing ran, nothing was
    recorded and the target is as it was."""
    from runner_kit import edit_profile

    marker = tmp_path / "checking"
    edit_profile(toy.root, 'check: "bash -n {{ file }}"', f'check: "touch {marker} && sleep 60"')
    code, _, text = _interrupt_the_check(toy, tmp_path, marker)
    assert code == 130, text[-2000:]
    assert text.startswith("Error: interrupted before the first run: nothing was run or recorded, and the target "
                           "was not touched\n"), text
    assert "Traceback" not in text and not Path(toy.db).exists()
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == []


def _interrupt_the_check(toy, tmp_path: Path, marker: Path, *flags: str) -> tuple[int, str, str]:
    """`wb hypothesis run toy-fix FLAGS`, SIGINT once its config check has written `marker`: (exit code, stdout,
    stderr)."""
    out, err = tmp_path / "out", tmp_path / "err"
    marker.unlink(missing_ok=True)
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen([WB, "hypothesis", "run", "toy-fix", "--db", toy.db, *flags], stdout=o, stderr=e,
                                env={**os.environ, "WB_ROOT": str(toy.root)}, cwd=toy.root)
        try:
            t0 = time.monotonic()
            while not marker.exists():
                assert proc.poll() is None, err.read_text()[-2000:]
                assert time.monotonic() - t0 < 120, "the config check never started"
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    return code, out.read_text(), err.read_text()


def test_an_interrupted_run_prints_what_it_recorded_and_ctrl_c_while_its_resume_is_prepared_keeps_it(toy,
                                                                                                   tmp_path) -> None:
    """An execution interrupted in its second run prints what it recorded and a line per ended run (off a terminal,
    the first run's line was there while the second one worked, not only at the end).

    A Ctrl-C while a --resume of it was still prepared (its config's check working) said "nothing was run or recorded,
    and the target was not touched", with no hint: the store holds the interrupted execution's runs, it is still
    resumable, and a runner killed earlier may have left its config on the target. It says the resume was not
    started, the execution is as it was, and how to continue it; --json gives the interrupted envelope."""
    from runner_kit import edit_profile, store_rows

    gate, marker = tmp_path / "gate", tmp_path / "checking"
    edit_profile(toy.root, 'check: "bash -n {{ file }}"',
                 f'check: "bash -n {{{{ file }}}} && if [ -e {gate} ]; then touch {marker}; sleep 60; fi"')
    # The check's edit changes nothing before the gate exists: the execution runs and is interrupted as any.
    code, out, before_signal, err = _interrupt_at_second_run(toy, tmp_path)
    assert code == 130, err[-2000:]
    assert "[1/2] run 1 control r0 on local: ok (" in before_signal, before_signal
    assert "Error: interrupted after 1 of 2 runs ok; the target was restored" in err
    assert out.startswith("toy-fix on local (profile local), execution 1, mode fixed, seed 5\n"), out
    assert "  control      runs ok 1/1  sessions=10  leak=3" in out and "  treatment    runs ok 0/1" in out, out
    assert "run 2 (treatment r0) interrupted during its workload stage" in out, out
    assert "verdict: none (interrupted before the planned runs were made)" in out, out
    assert "Traceback" not in err
    assert toy.conf.read_bytes() == toy.original
    hint = next(line for line in err.splitlines() if line.startswith("Hint: continue with: "))  # the store named
    assert "--resume" in hint and f"--db {toy.db}" in hint, hint
    before = store_rows(toy.db, "SELECT id, status, ended_at, error FROM executions")
    assert [r[1] for r in before] == ["interrupted"], before
    gate.write_text("")
    resume = f"wb hypothesis run toy-fix --resume --db {toy.db} --root {toy.root.resolve()}"
    code, out, err = _interrupt_the_check(toy, tmp_path, marker, "--resume")
    assert code == 130, err
    assert err == ("Error: interrupted before the resume started: nothing was run or recorded, and any interrupted "
                   f"execution is as it was, its recorded runs kept\nHint: continue with: {resume}\n"), err
    assert out == ""
    code, out, err = _interrupt_the_check(toy, tmp_path, marker, "--resume", "--json")
    assert code == 130, err
    doc = json.loads(out)
    assert (doc["ok"], doc["status"], doc["resume"]) == (False, "interrupted", resume), doc
    assert doc["error"]["hint"] == f"continue with: {resume}" and doc["error"]["exit_code"] == 130, doc
    assert doc["error"]["message"].startswith("interrupted before the resume started"), doc
    assert store_rows(toy.db, "SELECT id, status, ended_at, error FROM executions") == before
    assert len(store_rows(toy.db, "SELECT id FROM runs")) == 2


def test_ctrl_c_before_the_first_run_with_json_gives_the_interrupted_envelope(toy, tmp_path) -> None:
    """With --json, a Ctrl-C before the first run gave an error whose hint was "" and no status: the envelope has
    the keys an interrupted run's has, "status": "interrupted", "resume": null (nothing to resume), hint null."""
    from runner_kit import edit_profile

    marker = tmp_path / "checking"
    edit_profile(toy.root, 'check: "bash -n {{ file }}"', f'check: "touch {marker} && sleep 60"')
    code, out, err = _interrupt_the_check(toy, tmp_path, marker, "--json")
    assert code == 130, err
    doc = json.loads(out)
    assert (doc["ok"], doc["status"], doc["resume"]) == (False, "interrupted", None), doc
    assert doc["error"]["hint"] is None and doc["error"]["exit_code"] == 130, doc
    assert not Path(toy.db).exists()


def _ctrl_c_once_opened(monkeypatch) -> None:
    """A Ctrl-C that lands the moment the execution's row is written (the window before the loop takes the stop
    signals over)."""
    import workbench.runner.execute as execute_mod

    real = execute_mod._open_execution

    def opened_then_ctrl_c(*args, **kwargs):
        out = real(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)
        return out

    monkeypatch.setattr(execute_mod, "_open_execution", opened_then_ctrl_c)


def test_ctrl_c_once_the_execution_is_opened_records_it_interrupted(toy, cli, monkeypatch) -> None:
    """A Ctrl-C just after the execution's row was written left it "running" for good (and a resume's had its
    error wiped): the row ends interrupted, as a later stop leaves it, with the command that continues it; a
    resume stopped there keeps the error the execution had."""
    from runner_kit import store_rows

    _ctrl_c_once_opened(monkeypatch)
    monkeypatch.chdir(toy.root)
    env = {"WB_ROOT": str(toy.root)}
    code, out, err = cli("hypothesis", "run", "toy-fix", "--json", "--db", toy.db, env=env)
    assert code == 130, err
    rows = store_rows(toy.db, "SELECT id, status, ended_at IS NULL, error FROM executions")
    assert [r[:3] for r in rows] == [(1, "interrupted", False)] and rows[0][3], rows
    resume = f"wb hypothesis run toy-fix --resume --db {toy.db} --root {toy.root.resolve()}"
    doc = json.loads(out)
    assert (doc["ok"], doc["status"], doc["resume"]) == (False, "interrupted", resume), doc
    assert doc["error"]["hint"] == f"continue with: {resume}", doc
    code, out, err = cli("hypothesis", "run", "toy-fix", "--resume", "--db", toy.db, env=env)
    assert code == 130, err
    assert f"Hint: continue with: {resume}" in err, err
    assert store_rows(toy.db, "SELECT id, status, ended_at IS NULL, error FROM executions") == rows
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == []


@pytest.fixture
def guarded_stop_signals():
    """SIGTERM and SIGHUP that reach the process's own handler fail the test instead of ending the test process
    (their default): what wb leaves to the default is the failure here."""
    def reached(signum, _frame):
        raise AssertionError(f"{signal.Signals(signum).name} reached the process's own handler")

    before = {sig: signal.signal(sig, reached) for sig in (signal.SIGTERM, signal.SIGHUP)}
    yield reached
    for sig, handler in before.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("where", ["_open_execution", "note_runner"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_once_the_execution_is_opened_records_it_interrupted(toy, cli, monkeypatch, sig, where,
                                                                              guarded_stop_signals) -> None:
    """SIGTERM or SIGHUP the moment the execution's row was written (held while it was written, or just after)
    went to its default handler, which ended the process and left the row "running". It is told as a Ctrl-C there
    is: the row ends interrupted, the target untouched, the command that continues it said, exit 128 + signal."""
    import workbench.runner.execute as execute_mod
    from runner_kit import store_rows

    real = getattr(execute_mod, where)

    def then_signalled(*args, **kwargs):
        out = real(*args, **kwargs)
        signal.raise_signal(sig)
        return out

    monkeypatch.setattr(execute_mod, where, then_signalled)
    monkeypatch.chdir(toy.root)
    code, out, err = cli("hypothesis", "run", "toy-fix", "--json", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 128 + sig, err
    rows = store_rows(toy.db, "SELECT id, status, ended_at IS NULL, error FROM executions")
    assert [r[:3] for r in rows] == [(1, "interrupted", False)] and rows[0][3], rows
    resume = f"wb hypothesis run toy-fix --resume --db {toy.db} --root {toy.root.resolve()}"
    assert err == ("Error: interrupted before the first run of execution 1: no run was started, and the target was "
                   f"not touched\nHint: continue with: {resume}\n"), err
    doc = json.loads(out)
    assert (doc["ok"], doc["status"], doc["resume"]) == (False, "interrupted", resume), doc
    assert doc["error"]["exit_code"] == 128 + sig, doc
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == []
    assert signal.getsignal(sig) is guarded_stop_signals  # the caller's own handler is back


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stop_before_the_loop_takes_the_signals_says_the_target_was_not_touched(toy, cli, monkeypatch, sig,
                                                                                  guarded_stop_signals) -> None:
    """SIGTERM or SIGHUP after the execution was opened but before the run loop took the stop signals over (the
    loop starting) ended it before the loop's teardown said what it left: "the target was restored" of a target
    nothing touched, and the row's error "StopSignal: SIGTERM" (a Ctrl-C's "KeyboardInterrupt: "). Each stop says
    the target was not touched, as a Ctrl-C the loop caught does, and is recorded "interrupted"."""
    import workbench.runner.execute as execute_mod
    from runner_kit import store_rows

    real = execute_mod._main

    async def signalled_first(state, target):
        signal.raise_signal(sig)
        return await real(state, target)

    monkeypatch.setattr(execute_mod, "_main", signalled_first)
    monkeypatch.chdir(toy.root)
    code, _, err = cli("hypothesis", "run", "toy-fix", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 128 + sig, err
    assert ("the target was not touched (no run began): nothing to restore\n"
            "Error: interrupted after 0 of 4 runs ok; the target was not touched\n") in err, err
    assert store_rows(toy.db, "SELECT status, error FROM executions") == [("interrupted", "interrupted")]
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stop_between_the_opening_and_the_loop_records_the_execution_interrupted(toy, cli, monkeypatch, sig,
                                                                                   guarded_stop_signals) -> None:
    """A stop after the execution's opening ended and before the loop's own handling of a stop began escaped both:
    the command ended with the execution's row left "running". It is told as one during the opening is."""
    import workbench.runner.execute as execute_mod
    from runner_kit import store_rows

    real = execute_mod._loop

    def signalled_first(state, target):
        signal.raise_signal(sig)
        return real(state, target)

    monkeypatch.setattr(execute_mod, "_loop", signalled_first)
    monkeypatch.chdir(toy.root)
    code, _, err = cli("hypothesis", "run", "toy-fix", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 128 + sig, err
    assert "Error: interrupted before the first run of execution 1: no run was started, and the target was not " \
           "touched\n" in err, err
    assert [r[0] for r in store_rows(toy.db, "SELECT status FROM executions")] == ["interrupted"]
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_after_the_loop_gave_the_signals_back_waits_for_the_executions_record(toy, cli, monkeypatch, sig,
                                                                                    guarded_stop_signals) -> None:
    """The loop, giving the stop signals back, left each at its default (asyncio's remove_signal_handler) until the
    execution's end was recorded: a SIGTERM there ended the process, a Ctrl-C gave "Interrupted.", both with the
    row "running" though every run had ended and the target was restored. It is held until the record is written,
    then reaches the handler it would have reached: the caller's own for SIGTERM, KeyboardInterrupt for Ctrl-C."""
    import workbench.runner.execute as execute_mod
    from runner_kit import store_rows

    real, found, reached = execute_mod._restore_line, [], []

    def signalled_then(state):
        found.append(signal.getsignal(sig))
        if found[0] not in (signal.SIG_DFL, signal.SIG_IGN, None):  # the default would end the test process
            signal.raise_signal(sig)
        return real(state)

    monkeypatch.setattr(execute_mod, "_restore_line", signalled_then)
    monkeypatch.chdir(toy.root)
    signal.signal(signal.SIGTERM, lambda signum, _frame: reached.append(signum))  # the fixture puts its own back
    code, _, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--db", toy.db,
                       env={"WB_ROOT": str(toy.root)})
    assert found[0] not in (signal.SIG_DFL, signal.SIG_IGN, None), found
    assert store_rows(toy.db, "SELECT status, ended_at IS NULL FROM executions") == [("done", False)]
    assert (code, reached) == ((130, []) if sig == signal.SIGINT else (0, [signal.SIGTERM])), err
    assert toy.conf.read_bytes() == toy.original
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_while_the_event_loop_is_made_says_only_that_it_was_interrupted(toy, cli, monkeypatch, sig,
                                                                               guarded_stop_signals) -> None:
    """A stop landing while asyncio made the run loop's event loop (after `_main`'s coroutine was made, before the
    loop ran it) ended with Python's internals on stderr: "RuntimeWarning: coroutine '_main' was never awaited"
    and, from the half-made loop's `__del__`, "AttributeError: '_UnixSelectorEventLoop' object has no attribute
    '_signal_handlers'". The loop is made whole first; the stop then says what a stop before the loop says."""
    import asyncio.selector_events
    import gc
    import warnings

    import workbench.runner.execute as execute_mod
    from runner_kit import store_rows

    real_open, opened, unraisable = execute_mod._open_execution, [], []
    real_pipe = asyncio.selector_events.BaseSelectorEventLoop._make_self_pipe

    def open_execution(*args, **kwargs):
        out = real_open(*args, **kwargs)
        opened.append(True)
        return out

    def pipe_then_signalled(self):
        real_pipe(self)
        if opened and len(opened) == 1:  # the first event loop made once the execution is opened: the run loop's
            opened.append(True)
            signal.raise_signal(sig)

    monkeypatch.setattr(execute_mod, "_open_execution", open_execution)
    monkeypatch.setattr(asyncio.selector_events.BaseSelectorEventLoop, "_make_self_pipe", pipe_then_signalled)
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    monkeypatch.chdir(toy.root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = cli("hypothesis", "run", "toy-fix", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
        gc.collect()
    assert len(opened) == 2, "the stop was not injected"
    assert code == 128 + sig, err
    assert err.endswith("Error: interrupted after 0 of 4 runs ok; the target was not touched\n"
                        f"Hint: continue with: wb hypothesis run toy-fix --resume --db {toy.db} "
                        f"--root {toy.root.resolve()}\n"), err
    assert [f"{u.exc_type.__name__}: {u.exc_value}" for u in unraisable] == []
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []
    assert store_rows(toy.db, "SELECT status, error FROM executions") == [("interrupted", "interrupted")]
    assert toy.conf.read_bytes() == toy.original and toy.restarts() == []
