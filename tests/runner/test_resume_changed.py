"""`--resume` refuses an execution whose hypothesis or experiment changed since it was interrupted: one
execution must not mix two definitions. Prose may change."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from workbench.errors import BadInput
from workbench.runner.execute import RunInterrupted
from runner_kit import edit_profile, run_hypothesis, store_rows  # noqa: E402  (tests/runner is on sys.path)


async def _sigterm_at_second_workload(stage, pr, seen={"n": 0}):  # noqa: B006  (reset per test below)
    if stage == "workload":
        seen["n"] += 1
        if seen["n"] == 2:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(5)


def _interrupted(toy) -> None:
    _sigterm_at_second_workload.__defaults__[0]["n"] = 0
    with pytest.raises(RunInterrupted):
        run_hypothesis("toy-fix", db=toy.db, replicates=1, seed=3, fault=_sigterm_at_second_workload)
    assert toy.conf.read_bytes() == toy.original


def _edit_hypotheses(toy, old: str, new: str) -> None:
    p = toy.root / "hypotheses.yaml"
    text = p.read_text()
    assert old in text, old
    p.write_text(text.replace(old, new))


def _counts(toy) -> tuple[int, int]:
    return store_rows(toy.db, "SELECT count(*) FROM runs")[0][0], len(toy.restarts())


def test_resume_after_a_changed_definition_is_refused_until_it_is_undone_and_a_changed_claim_goes_on(toy, cli):
    """Each change is refused in turn, changing nothing, on one interrupted execution (a refusal leaves it as it
    was: asserted after each), then resumed once the definition is back, with only its prose changed."""
    _interrupted(toy)
    # A changed hold, through the CLI (in process, `cli`: the console script's command tree and error boundary).
    _edit_hypotheses(toy, "hold: {mode: ok}", "hold: {mode: slow}")
    before = _counts(toy)
    code, _, err = cli("hypothesis", "run", "toy-fix", "--resume", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 2, err
    assert err.startswith("Error: --resume: execution 1 of 'toy-fix' was started with another definition") and \
        "Traceback" not in err, err
    assert "arm control: mode 'ok' -> 'slow'" in err and "hypothesis hold.mode 'ok' -> 'slow'" in err, err
    assert "the rendered config of arm treatment" in err and "Nothing was run" in err, err
    assert _counts(toy) == before and toy.conf.read_bytes() == toy.original
    (status,) = store_rows(toy.db, "SELECT status FROM executions")[0]
    assert status == "interrupted"  # still resumable once the edit is undone
    _edit_hypotheses(toy, "hold: {mode: slow}", "hold: {mode: ok}")
    # A changed prediction, then a changed template.
    _edit_hypotheses(toy, "at_most: 0.02", "at_most: 0.05")
    with pytest.raises(BadInput) as ei:
        run_hypothesis("toy-fix", db=toy.db, resume=True)
    assert "hypothesis predicts[0].at_most 0.02 -> 0.05" in ei.value.message
    _edit_hypotheses(toy, "at_most: 0.05", "at_most: 0.02")
    edit_profile(toy.root, "# toy serve file", "# toy serve file, edited")
    with pytest.raises(BadInput) as ei:
        run_hypothesis("toy-fix", db=toy.db, resume=True)
    msg = ei.value.message
    assert "the rendered config of arm control" in msg and "experiment profiles.local.config.template changed" in msg
    assert _counts(toy) == before and toy.conf.read_bytes() == toy.original
    edit_profile(toy.root, "# toy serve file, edited", "# toy serve file")
    # A changed claim (prose) goes on.
    _edit_hypotheses(toy, "claim: The fix removes the leaks.", "claim: The fix removes every leak.")
    s = run_hypothesis("toy-fix", db=toy.db, resume=True)
    assert sorted(r["order_index"] for r in s["runs"] if r["status"] == "ok") == [0, 1]


FLAGS = [
    ({"target": "elsewhere"}, "--target elsewhere"),
    ({"replicates": 4}, "--replicates 4"),
    ({"seed": 4}, "--seed 4"),
    ({"sequential": True}, "--sequential"),
    ({"aa": True}, "--aa"),
]


def test_resume_refuses_a_flag_that_would_change_the_execution_and_accepts_those_it_was_started_with(toy, capfd):
    # The interrupted execution goes on with its own profile, plan and mode: a flag asking for another one
    # was once dropped without a word (resumed on the recorded profile, with the recorded replicates). Each flag is
    # refused in turn on one interrupted execution (a refusal changes nothing: asserted after each).
    _interrupted(toy)
    before = _counts(toy)
    for flags, named in FLAGS:
        with pytest.raises(BadInput) as ei:
            run_hypothesis("toy-fix", db=toy.db, resume=True, **flags)
        assert ei.value.message.startswith(f"{named}: --resume continues execution 1"), (named, ei.value.message)
        assert _counts(toy) == before and toy.conf.read_bytes() == toy.original
    # The flags it was started with are accepted; an execution started here says nothing of other hosts.
    capfd.readouterr()
    s = run_hypothesis("toy-fix", db=toy.db, resume=True, target="local", replicates=1, seed=3, show_progress=True)
    assert sorted(r["order_index"] for r in s["runs"] if r["status"] == "ok") == [0, 1]
    assert "could not be checked" not in capfd.readouterr().err


def test_resume_of_an_execution_started_on_another_host_warns_that_its_runner_was_not_checked(toy, capfd):
    # The runner note names the machine that ran the execution: from here its pid says nothing, so the
    # resume goes on (that runner may be long dead) but says plainly what it could not check.
    import json

    _interrupted(toy)
    (note,) = (toy.root / ".wb" / "artifacts").glob("execution-*/runner.json")
    holder = json.loads(note.read_text())
    note.write_text(json.dumps({**holder, "host": "gpu-box-7", "pid": 4242}))
    capfd.readouterr()
    s = run_hypothesis("toy-fix", db=toy.db, resume=True, show_progress=True)
    assert [r["status"] for r in s["runs"]].count("ok") == 2
    err = " ".join(capfd.readouterr().err.split())
    assert ("warning: execution 1 of toy-fix was started by a runner on gpu-box-7 (pid 4242, since "
            f"{holder['since']}); whether it still runs could not be checked from here") in err, err
    assert toy.conf.read_bytes() == toy.original


def test_resume_of_an_execution_started_with_a_secret_set_asks_for_it_again(toy):
    # The store keeps a secret --set masked, so a resume rendered "<redacted>" into the config and was refused
    # as "changed since: the rendered config": an execution started with a secret --set could never go on.
    edit_profile(toy.root, "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n",
                 "  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}\n"
                 "  db_password: {secret: true, default: changeme-please}\n")
    edit_profile(toy.root, "        mode={{ mode }}\n", "        mode={{ mode }}\n        password={{ db_password }}\n")
    _sigterm_at_second_workload.__defaults__[0]["n"] = 0
    with pytest.raises(RunInterrupted):
        run_hypothesis("toy-fix", db=toy.db, replicates=1, seed=3, sets={"db_password": "s3cr3t-given"},
                       fault=_sigterm_at_second_workload)
    before = _counts(toy)
    with pytest.raises(BadInput) as ei:  # not stored, so not guessed: asked for, by name, never shown
        run_hypothesis("toy-fix", db=toy.db, resume=True)
    msg = ei.value.message + (ei.value.hint or "")
    assert "db_password" in msg and "--set db_password=" in msg and "s3cr3t-given" not in msg, msg
    with pytest.raises(BadInput) as ei:  # another value renders another config: refused, value not shown
        run_hypothesis("toy-fix", db=toy.db, resume=True, sets={"db_password": "another-value"})
    assert "the rendered config of arm" in ei.value.message and "another-value" not in ei.value.message
    assert _counts(toy) == before and toy.conf.read_bytes() == toy.original
    s = run_hypothesis("toy-fix", db=toy.db, resume=True, sets={"db_password": "s3cr3t-given"})
    assert sorted(r["order_index"] for r in s["runs"] if r["status"] == "ok") == [0, 1]
    assert toy.conf.read_bytes() == toy.original
    assert not store_rows(toy.db, "SELECT id FROM runs WHERE CAST(variables_json AS VARCHAR) LIKE '%s3cr3t%'")
