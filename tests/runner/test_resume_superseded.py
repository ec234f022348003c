"""`--resume` when the stopped executions are older than a finished one: the refusal names them and why."""

from __future__ import annotations

import pytest
from runner_kit import run_hypothesis, sigterm_at_workload

from workbench.runner.execute import RunInterrupted


def test_resume_names_the_interrupted_executions_a_finished_one_superseded(toy, cli) -> None:
    with pytest.raises(RunInterrupted):
        run_hypothesis("toy-fix", db=toy.db, seed=7, replicates=1, fault=sigterm_at_workload(2))
    with pytest.raises(RunInterrupted):
        run_hypothesis("toy-fix", db=toy.db, seed=8, replicates=1, fault=sigterm_at_workload(1))
    assert [r["status"] for r in run_hypothesis("toy-fix", db=toy.db, seed=9, replicates=1)["runs"]] == ["ok"] * 2
    code, out, err = cli("hypothesis", "run", "toy-fix", "--resume", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 2 and out == "", (code, err)
    assert err.splitlines()[0] == (
        "Error: no execution of 'toy-fix' to resume: execution 1 (interrupted, superseded by execution 3), "
        "2 (interrupted, superseded by execution 3) stopped, but a later execution finished, and --resume "
        "continues only a stopped execution no finished one followed"), err
    assert "Hint: the finished execution's verdict stands" in err and "wb hypothesis run toy-fix" in err
    # Their stored status still says how they ended.
    code, out, err = cli("runs", "list", "--db", toy.db, "--format", "tsv", env={"WB_ROOT": str(toy.root)})
    assert code == 0 and "interrupted" in out, err


def test_with_no_stopped_execution_the_message_stays_short(toy, cli) -> None:
    run_hypothesis("toy-fix", db=toy.db, seed=9, replicates=1)
    code, _, err = cli("hypothesis", "run", "toy-fix", "--resume", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 2 and err.startswith("Error: no interrupted execution of 'toy-fix' to resume\n"), err
