"""What `wb hypothesis run` says about the runs and the target once it ends: an arm none of whose runs began is "0 of
1, none began" (it read "runs ok 0/0"), an interrupted run's reason is not the status again, a stop before any run
says the target was not touched (and touches it not: no restart), and every execution ends with one line saying
what the restore did (--json: "restore")."""

from __future__ import annotations

import json
import os

import workbench.runner.execute as execute_mod


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
    assert sorted(arms.values()) == ["runs ok 0 of 1, none began", "runs ok 0/1"], out
    first = next(arm for arm, text in arms.items() if text == "runs ok 0/1")
    assert f"  run 1 ({first} r0) interrupted during its workload stage\n" in out, out
    assert "Error: interrupted after 0 of 2 run(s) ok; the target was restored" in err, err
    assert f"restored: {toy.conf} put back byte for byte, restarted (1 command)" in err, err
    assert toy.conf.read_bytes() == toy.original


def test_a_stop_before_any_run_leaves_the_target_alone_and_says_it_was_not_touched(toy, cli, monkeypatch) -> None:
    """Stopped once the target was locked and its config snapshotted, before the first run: nothing was written,
    so nothing is put back and the service is not restarted; it said "the target was restored"."""
    take = execute_mod.take_target

    async def taken_then_stopped(*args, **kwargs):
        import asyncio
        import signal

        got = await take(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.sleep(5)  # the handler cancels this task before the sleep ends
        return got

    monkeypatch.setattr(execute_mod, "take_target", taken_then_stopped)
    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--db", toy.db,
                         env={"WB_ROOT": str(toy.root)})
    assert code == 130, err
    assert "order: no run began  (0 of 2 planned)" in out, out
    assert out.count("runs ok 0 of 1, none began") == 2, out
    assert "Error: interrupted after 0 of 2 run(s) ok; the target was not touched\n" in err, err
    assert "the target was not touched (no run began): nothing to restore\n" in err, err
    assert toy.restarts() == [] and toy.conf.read_bytes() == toy.original


def test_a_finished_run_says_what_the_restore_did(toy, cli) -> None:
    code, out, err = cli("hypothesis", "run", "toy-fix", "--replicates", "1", "--json", "--db", toy.db,
                         env={"WB_ROOT": str(toy.root)})
    assert code == 0, err
    line = f"restored: {toy.conf} put back byte for byte, restarted (1 command), healthy"
    assert err.splitlines()[-1] == line, err
    assert json.loads(out)["restore"] == line
    assert toy.conf.read_bytes() == toy.original and len(toy.restarts()) == 3
