"""What `wb hypothesis run` says about the runs and the target once it ends: an arm none of whose runs began is "runs
ok 0/0 (0 of 1 planned began)", in the shape of the other arms' "runs ok 0/1" (it read "runs ok 0/0" alone, then "runs
ok 0 of 1, none began" beside "0/1"), an interrupted run's reason is not the status again, a stop before any run
says the target was not touched (and touches it not: no restart), and every execution ends with one line saying
what the restore did (--json: "restore")."""

from __future__ import annotations

import json
import os

import pytest


def _first_run_interrupts(toy) -> None:
    """Each run's workload sends this process the SIGINT a Ctrl-C would: the first run is stopped in its workload."""
    from runner_kit import edit_profile

    edit_profile(toy.root, 'workload: {command: "', f'workload: {{command: "kill -INT {os.getpid()}; sleep 5; ')


def test_an_arm_whose_run_never_began_says_so_and_the_reason_is_not_the_status_again(toy, cli) -> None:
    _first_run_interrupts(toy)
    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--seed", "5", "--db", toy.db,
                         env={"WB_ROOT": str(toy.root)})
    assert code == 130, err
    arms = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines() if "runs ok" in line}
    assert sorted(arms.values()) == ["runs ok 0/0 (0 of 1 planned began)", "runs ok 0/1"], out
    first = next(arm for arm, text in arms.items() if text == "runs ok 0/1")
    assert f"  run 1 ({first} r0) interrupted during its workload stage\n" in out, out
    # Said once: the summary that follows an interrupt lists the run; the progress on stderr did too.
    assert (out + err).count("run 1 (") == 1, (out, err)
    assert "Error: interrupted after 0 of 2 runs ok; the target was restored" in err, err
    assert f"restored: {toy.conf} put back byte for byte, restarted (1 command)" in err, err
    assert toy.conf.read_bytes() == toy.original


def _stopped_once_the_target_is_taken(monkeypatch) -> None:
    """The next run is stopped (the SIGINT a Ctrl-C sends) in the target's setup, the first step after it locked the
    target and snapshotted its config, before its first run. (Stopped inside `take_target`, it never returns the
    lock and the snapshots: nothing would be restored or released whatever the runner decides.)"""
    from workbench.runner.targets.local import LocalTarget

    async def stopped(self, serve_file, env):
        import asyncio
        import signal

        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.sleep(5)  # the handler cancels this task before the sleep ends
        return {}

    monkeypatch.setattr(LocalTarget, "setup", stopped)


def test_a_stop_before_any_run_leaves_the_target_alone_and_says_it_was_not_touched(toy, cli, monkeypatch) -> None:
    """Stopped once the target was locked and its config snapshotted, before the first run: nothing was written,
    so nothing is put back and the service is not restarted; it said "the target was restored"."""
    _stopped_once_the_target_is_taken(monkeypatch)
    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--db", toy.db,
                         env={"WB_ROOT": str(toy.root)})
    assert code == 130, err
    assert "order: no run began  (0 of 2 planned)" in out, out
    assert out.count("runs ok 0/0 (0 of 1 planned began)") == 2, out
    assert "Error: interrupted after 0 of 2 runs ok; the target was not touched\n" in err, err
    assert "the target was not touched (no run began): nothing to restore\n" in err, err
    assert toy.restarts() == [] and toy.conf.read_bytes() == toy.original


def test_a_sequential_arm_that_never_began_does_not_give_the_budget_as_planned(toy, cli, monkeypatch) -> None:
    """A sequential plan is a budget, not the runs meant to be made: an arm none of whose runs began read "runs ok
    0 of 3, none began", the budget given as if planned: it reads "runs ok 0/0 (none began)"."""
    _stopped_once_the_target_is_taken(monkeypatch)
    code, out, err = cli("hypothesis", "run", "toy-fix", "--sequential", "--replicates", "3", "--db", toy.db,
                         env={"WB_ROOT": str(toy.root)})
    assert code == 130, err
    arms = [line for line in out.splitlines() if "runs ok" in line]
    assert len(arms) == 2 and all(line.split(None, 1)[1] == "runs ok 0/0 (none began)" for line in arms), out
    # The order line gave the budget as planned too ("(0 of 6 planned)"); it says what the progress line says.
    assert "order: no run began  (at most 6 planned)\n" in out, out


def test_an_execution_whose_runs_were_all_deleted_does_not_say_none_began(toy, cli, monkeypatch) -> None:
    """Every run ended, then was deleted while the execution still ran (`wb runs delete`): the order line read "no
    run began  (0 of 2 planned; 2 deleted after they ended)", as if nothing ran. It says none is kept, and why."""
    import workbench.runner.execute as execute_mod

    real = execute_mod._loop

    def loop_then_delete(state, target):
        out = real(state, target)
        gone = state.store.delete_runs([r.id for r in state.store.runs(execution_id=state.execution_id)])
        assert len(gone.runs) == 2, gone
        return out

    monkeypatch.setattr(execute_mod, "_loop", loop_then_delete)
    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--db", toy.db,
                         env={"WB_ROOT": str(toy.root)})
    assert "order: no run kept  (2 of 2 planned ended; 2 deleted after they ended)\n" in out, out
    assert "0 of 2" not in out and "began" not in out, out


def test_a_stop_before_any_run_after_taking_over_a_failed_restores_lock_still_restarts(toy, cli, monkeypatch) -> None:
    """A restore put the original back but its restart failed (RESTORE INCOMPLETE, the lock left marked): the
    service may still run an arm's config. The next run takes the lock over (the config is the original) and is
    stopped before its first run: it skipped the restart as if the target was untouched, and deleted the lock
    with its mark. It restores as before: the service is restarted on the original."""
    from runner_kit import edit_profile, run_hypothesis

    from workbench.errors import RestoreFailed

    fails = toy.state / "restart-fails"  # while it exists, a restart on the original config fails
    edit_profile(toy.root, 'restart: ["{{ python }} ',
                 'restart: ["test ! -e {{ state }}/restart-fails || ! grep -q operator {{ state }}/serve.conf && '
                 '{{ python }} ')
    fails.touch()
    with pytest.raises(RestoreFailed) as ei:
        run_hypothesis("toy-fix", db=toy.db, replicates=1)
    assert ei.value.message.startswith("RESTORE INCOMPLETE"), ei.value.message
    fails.unlink()
    restarts = len(toy.restarts())
    _stopped_once_the_target_is_taken(monkeypatch)
    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--db", toy.db,
                         env={"WB_ROOT": str(toy.root)})
    assert code == 130, err
    assert "taking over the lock of" in err, err
    assert "not touched" not in err, err
    assert f"restored: {toy.conf} put back byte for byte, restarted (1 command)" in err, err
    assert len(toy.restarts()) == restarts + 1 and toy.conf.read_bytes() == toy.original


def test_a_finished_run_says_what_the_restore_did(toy, cli) -> None:
    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--json", "--db", toy.db,
                         env={"WB_ROOT": str(toy.root)})
    assert code == 0, err
    line = f"restored: {toy.conf} put back byte for byte, restarted (1 command), healthy"
    assert err.splitlines()[-1] == line, err
    assert json.loads(out)["restore"] == line
    assert toy.conf.read_bytes() == toy.original and len(toy.restarts()) == 3
