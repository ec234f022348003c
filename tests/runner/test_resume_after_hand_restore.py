"""A runner killed outright leaves its lock and the original it saved; the refusal of the next run says "put the
original back by hand and remove the lock". A `--resume` after that must not put that saved original back over
a config someone wrote since: it refuses, changing nothing, and says how to go on either way."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time

from workbench.runner.targets.base import config_lock_file

NEW_BASELINE = b"# the operator's config after the killed run was cleaned up by hand\nmode = tuned\n"


def _killed_mid_run(toy) -> None:
    """`wb hypothesis run toy-fix` killed with SIGKILL once it has restarted the target with an arm's config."""
    env = dict(os.environ, PYTHONPATH=str(toy.root), WB_ROOT=str(toy.root))
    proc = subprocess.Popen([sys.executable, "-m", "workbench.cli.main", "hypothesis", "run", "toy-fix",
                             "--db", toy.db, "--replicates", "1"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300  # far beyond an arm's first restart on a loaded machine
    while time.monotonic() < deadline and len(toy.restarts()) < 1 and proc.poll() is None:
        time.sleep(0.02)
    assert len(toy.restarts()) >= 1, "the runner never restarted the target"
    proc.kill()
    proc.wait(10)
    assert toy.conf.read_bytes() != toy.original


def _resume(toy, cli) -> tuple[int, str]:
    """`wb hypothesis run toy-fix --resume` in process (`cli`: the command tree and error boundary of the console
    script, without its imports); the killed runner was a process of its own."""
    code, _, err = cli("hypothesis", "run", "toy-fix", "--resume", "--db", toy.db)
    return code, err


def _hint_line(err: str, starts: str) -> str:
    return next(line.strip() for line in err.splitlines() if line.strip().startswith(starts))


def test_a_resume_does_not_put_the_saved_original_over_a_config_written_since(toy, cli):
    _killed_mid_run(toy)
    lock = config_lock_file(str(toy.conf))
    # The operator does what the refusal of a new run says: the original back by hand, the lock removed; then
    # they change the service's config, which is what it runs with from now on.
    toy.conf.write_bytes(toy.original)
    os.unlink(lock)
    toy.conf.write_bytes(NEW_BASELINE)
    code, err = _resume(toy, cli)
    assert code == 2, err
    # Before the refusal, the resume may have stopped what the killed runner left running (its restart or workload,
    # still alive or not by then as the machine's load has it): one line each, never another error.
    lines = err.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Error: "))
    assert all(line.startswith("stopped process group ") for line in lines[:at]), err
    assert lines[at].startswith(f"Error: the config {toy.conf} on local is not the original execution 1 of "
                                "toy-fix"), err
    assert "written since" in err and "Traceback" not in err, err
    assert toy.conf.read_bytes() == NEW_BASELINE  # nothing written, nothing restarted
    assert not os.path.exists(lock)
    # The hint's way on when the config as it is now is the one to keep: the saved original is dropped, and the
    # resume takes the config afresh and leaves it so.
    subprocess.run(_hint_line(err, "rm -f "), shell=True, check=True)
    code, err = _resume(toy, cli)
    assert code == 0, err
    assert toy.conf.read_bytes() == NEW_BASELINE


def test_a_resume_after_the_lock_alone_was_removed_is_refused_until_the_original_is_back(toy, cli):
    """Removed without putting the original back: the config is what the killed run wrote, which a resume must not
    take for the original, nor can it tell it from a config chosen since. It refuses; the hint's copy puts the
    saved original back, and the resume then ends with it."""
    _killed_mid_run(toy)
    left = toy.conf.read_bytes()
    os.unlink(config_lock_file(str(toy.conf)))
    code, err = _resume(toy, cli)
    assert code == 2 and "written since" in err, err
    assert toy.conf.read_bytes() == left
    copy = _hint_line(err, "cp ")
    assert shlex.split(copy)[-1] == str(toy.conf)
    subprocess.run(copy, shell=True, check=True)
    code, err = _resume(toy, cli)
    assert code == 0, err
    assert toy.conf.read_bytes() == toy.original


def test_a_run_refused_after_a_kill_where_the_config_was_no_file_says_to_remove_it(toy, cli):
    """The config did not exist before the killed run: its original is no file. The refusal of the next run must
    not name a saved copy that does not exist (following it failed with `cp: cannot stat`); it says to remove the
    file, and that way on works."""
    toy.conf.unlink()
    _killed_mid_run(toy)
    assert toy.conf.exists()
    new_run = ["hypothesis", "run", "toy-fix", "--db", toy.db, "--replicates", "1"]
    code, _, err = cli(*new_run)
    assert code == 2, err
    assert "original-" not in err and "there was no such file before" in err, err
    rm = _hint_line(err, "rm -f ")
    assert shlex.split(rm) == ["rm", "-f", str(toy.conf)], rm
    # The hint asked to remove the lock too, with no command for it, its path run into "; the config with:". The
    # removal alone is enough (the next run finds the original in place and takes the lock over): it asks no more.
    lock = config_lock_file(str(toy.conf))
    assert lock not in err and "takes the lock over" in err, err
    subprocess.run(rm, shell=True, check=True)
    # The next run takes the target (the toy service cannot restart without a config file, so its closing restart
    # fails, loudly: not wb's concern here) and leaves the config as it was: no file.
    _, _, err = cli(*new_run)
    assert "was left by" not in err and "2 of 2 runs ok" in err, err
    assert not toy.conf.exists()


def _sigterm_first(real):
    """`real` (an async step of taking the target), preceded by a SIGTERM to this process that the runner's loop has
    taken in (`state.stopping`) before the step goes on."""
    import asyncio
    import signal

    async def stopped(state, *args):
        signal.raise_signal(signal.SIGTERM)
        while not state.stopping:
            await asyncio.sleep(0)
        return await real(state, *args)

    return stopped


def test_a_resume_stopped_while_it_takes_the_target_restores_it_or_says_it_did_not(toy, cli, monkeypatch):
    """A `--resume` stopped before its first run said "the target was restored" (a resume is never "untouched"),
    though no restore ran. Stopped before it held the target, it says the target was not restored and how to restore
    it; the same where a second stop abandoned the taking, naming the lock it may have left. Stopped while it took it
    (the lock held, the original loaded), it gave the lock up with the killed run's config in place, which made the
    next resume refuse ("written since"); the stop now waits for the snapshot, says so, and the restore runs."""
    import workbench.runner.execute as execute_mod
    import workbench.runner.takeover as takeover_mod
    from runner_kit import stopped_twice

    _killed_mid_run(toy)
    left, lock = toy.conf.read_bytes(), config_lock_file(str(toy.conf))
    folders, originals = takeover_mod.check_config_folders, takeover_mod.check_saved_originals
    monkeypatch.setattr(takeover_mod, "check_config_folders", _sigterm_first(folders))
    code, err = _resume(toy, cli)
    assert code == 143, err
    assert "; the target was not restored: the stop came before this runner had taken it" in err, err
    assert "Hint: restore it by continuing: wb hypothesis run toy-fix --resume --db " in err, err
    assert toy.conf.read_bytes() == left and os.path.exists(lock)  # as the killed runner left it
    monkeypatch.setattr(takeover_mod, "check_config_folders", folders)
    # Stopped again while it takes the target (a hung read of the saved original, say): the taking is abandoned, as
    # a kill leaves it, and the stop says what may still be there.
    monkeypatch.setattr(execute_mod, "ABANDON_GRACE_S", 0.0)
    monkeypatch.setattr(takeover_mod, "check_saved_originals", stopped_twice(originals))
    code, err = _resume(toy, cli)
    assert code == 143, err
    said = next(line for line in err.splitlines() if line.startswith("Error: "))
    assert "the target was not restored: taking it was abandoned" in said, said
    assert "it may still hold the config the stopped execution's runner left" in said, said
    assert f"its lock {lock} on local may still be held by this execution" in said, said
    assert "Hint: restore it by continuing: wb hypothesis run toy-fix --resume --db " in err, err
    assert toy.conf.read_bytes() == left and os.path.exists(lock)
    # Stopped while it takes the target: it says that the taking goes on and the restore follows (a stop there said
    # nothing until the restore: the user saw no sign that it was heard), then restores.
    monkeypatch.setattr(takeover_mod, "check_saved_originals", _sigterm_first(originals))
    code, err = _resume(toy, cli)
    assert code == 143, err
    said = [line for line in err.splitlines() if line.startswith("taking the target")]
    assert said == ["taking the target first (its lock, what the stopped runner left, the saved original); the "
                    "restore follows"], err
    assert "; the target was restored\n" in err and f"restored: {toy.conf} put back byte for byte" in err, err
    assert toy.conf.read_bytes() == toy.original and not os.path.exists(lock)


def test_a_stop_while_a_new_execution_takes_the_target_says_it_then_stops(toy, cli, monkeypatch):
    """A stop while a new execution takes the target (as while a resume takes it: the test above): its taking goes
    on, then it stops with the target untouched."""
    import workbench.runner.takeover as takeover_mod

    monkeypatch.setattr(takeover_mod, "take_snapshots", _sigterm_first_of(takeover_mod.take_snapshots))
    code, _, err = cli("hypothesis", "run", "toy-fix", "--db", toy.db)
    assert code == 143, err
    assert [line for line in err.splitlines() if line.startswith("taking the target")] == [
        "taking the target first (its lock, the saved original); then wb stops"], err
    assert "the target was not touched" in err and toy.conf.read_bytes() == toy.original and toy.restarts() == []


def _sigterm_first_of(real):
    """`_sigterm_first` for `take_snapshots(target, ...)`, which is not handed the loop's state."""
    import asyncio
    import signal

    async def stopped(*args, **kw):
        signal.raise_signal(signal.SIGTERM)
        for _ in range(1000):  # the loop's handler runs at one of these turns of the loop
            await asyncio.sleep(0)
        return await real(*args, **kw)

    return stopped


def test_a_dead_holders_put_back_gives_each_command_whole_on_its_own_line(tmp_path):
    """At 60 columns the hint read "or remove the config it wrote, which did not exist before, and /PATH/.serve.sh.
    wb-target.lock; the config with: rm -f /PATH/serve.sh": the lock's removal asked for with no command, its path
    run into the prose. Each way on gives every command it needs, each whole and ending its line, in order: with a
    saved original, putting it back is all; with none, the lock's removal."""
    from workbench.runner.restore import Snapshot
    from workbench.runner.takeover import _put_back_by_hand
    from workbench.runner.targets.local import LocalTarget
    from workbench.wrapping import wrap

    conf, lock = tmp_path / "a folder" / "serve.sh", str(tmp_path / "a folder" / ".serve.sh.wb-target.lock")
    copy = tmp_path / "original-x"
    for snap, commands in ((Snapshot("local", str(conf), None, 0o644, copy), [shlex.join(["rm", "-f", str(conf)])]),
                           (Snapshot("local", str(conf), b"x=1\n", 0o644, copy),
                            [shlex.join(["cp", str(copy), str(conf)])]),
                           (None, [shlex.join(["rm", "-f", lock])])):
        hint = _put_back_by_hand(LocalTarget(), "local", snap, lock)
        lines = [line for part in hint.splitlines() for line in wrap(part, 60)]
        assert [line.strip() for line in lines if line.strip().startswith(("rm ", "cp "))] == commands, lines
        assert lock not in hint.replace(commands[-1], ""), hint  # a path only in a command
